"""`kubegc agent`'s kept apply slot (`agent.build.KeptSlots`): the renewal thread's timing
with an injected clock and sleeper — renewals every third of the lease, a failed renewal
retried until shortly before the Lease would expire, a slot taken by another lost at once,
and the cycle's `renew` answered without a call. tests/api/test_leases.py runs it against a
real API server."""

from __future__ import annotations

import re
from typing import Any
from unittest import mock

from kubegc_cli.agent.build import KeptSlots, previous_last_apply, slot_identity
from kubegc_cli.core.fleet import LastApply
from kubegc_cli.node.pods.api import ApiUnavailable


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, seconds: float) -> bool:
        self.waits.append(round(seconds, 3))
        self.now += seconds
        return len(self.waits) > 50  # a runaway loop ends the test


class Leases:
    """Stands in for `ApplySlots`: each renewal's answer in turn (True, False, or an
    exception), every call recorded with the clock's time."""

    def __init__(self, clock: Clock, answers: list[Any]) -> None:
        self.clock, self.answers = clock, list(answers)
        self.renewed: list[float] = []

    def acquire(self) -> str | None:
        return "kubegc-apply-0"

    def renew(self, name: str) -> bool:
        self.renewed.append(self.clock.now)
        answer = self.answers.pop(0) if self.answers else True
        if isinstance(answer, Exception):
            raise answer
        return bool(answer)

    def release(self, name: str) -> None:
        pass


def kept(clock: Clock, leases: Leases, warned: list[str]) -> KeptSlots:
    k = KeptSlots(lambda: leases, lambda: 60, warned.append, retry=2.0, clock=clock,
                  wait=clock.wait)  # fmt: skip
    k._slots, k._lease = leases, 60.0  # as `acquire` leaves it, without the thread
    k._held, k._until = True, clock.now + 60 - KeptSlots.margin(60)
    return k


def test_failed_renewals_are_retried_until_shortly_before_the_lease_expires() -> None:
    clock = Clock()
    down = ApiUnavailable("Kubernetes API: unreachable")
    leases = Leases(clock, [True] + [down] * 100)
    warned: list[str] = []
    k = kept(clock, leases, warned)
    k.keep("kubegc-apply-0")
    # renewed at 20 s; then failures every 2 s, the slot kept until 20 + 60 - 10 = 70 s
    assert leases.renewed[:3] == [1020.0, 1040.0, 1042.0]
    assert max(leases.renewed) < 1070.0 and len(leases.renewed) > 10
    assert clock.now == 1070.0 and not k.renew("kubegc-apply-0")
    assert "lost" in warned[-1]


def test_one_failed_renewal_does_not_lose_the_slot() -> None:
    clock = Clock()
    down = ApiUnavailable("Kubernetes API: unreachable")
    leases = Leases(clock, [down, True, False])
    k = kept(clock, leases, [])
    k.keep("kubegc-apply-0")
    assert leases.renewed == [1020.0, 1022.0, 1042.0]  # retried after 2 s, then every 20 s


def test_the_slot_taken_by_another_is_lost_at_once() -> None:
    clock = Clock()
    leases = Leases(clock, [False])
    k = kept(clock, leases, [])
    assert k.renew("kubegc-apply-0")
    k.keep("kubegc-apply-0")
    assert leases.renewed == [1020.0] and not k.renew("kubegc-apply-0")


def test_no_slot_is_taken_while_the_last_ones_renewal_is_still_stuck() -> None:
    """A renewal stuck in a request outlives `release`'s join: the next `acquire` takes no
    slot (and makes no new slots object) until that thread has ended, so the stuck thread
    never renews under the new slot's state."""
    import threading

    clock = Clock()
    leases = Leases(clock, [])
    made: list[Leases] = []
    warned: list[str] = []
    k = KeptSlots(lambda: made.append(leases) or leases, lambda: 60, warned.append,
                  clock=clock, wait=clock.wait)  # fmt: skip
    stuck = threading.Event()
    k._thread = threading.Thread(target=stuck.wait, daemon=True)
    k._thread.start()
    try:
        assert k.acquire() is None and made == []
        assert "has not ended" in warned[-1]
    finally:
        stuck.set()
        k._thread.join()
    with mock.patch("threading.Thread.start"):  # the renewal loop itself is tested above
        assert k.acquire() == "kubegc-apply-0" and made == [leases]


def test_the_cycles_renew_never_calls_the_api() -> None:
    clock = Clock()
    leases = Leases(clock, [])
    k = kept(clock, leases, [])
    assert k.renew("kubegc-apply-0") and leases.renewed == []
    clock.now += 60  # no renewal reached the API since: the record is about to expire
    assert not k.renew("kubegc-apply-0")


def test_each_agent_process_holds_slots_under_an_identity_of_its_own() -> None:
    assert slot_identity("node-1", {}, "0a1b2c3d") == "node-1/0a1b2c3d"
    assert slot_identity("node-1", {"POD_NAME": "kubegc-agent-x7"}, "00ff00ff") == (
        "kubegc-agent-x7/00ff00ff"
    )
    one, two = slot_identity("node-1", {}), slot_identity("node-1", {})
    assert one != two and re.fullmatch(r"node-1/[0-9a-f]{8}", one)


FAILED_APPLY = LastApply("2026-12-05T03:00:00Z", ("gc all",), 3, 0, 2, "gc all: runtime gone")


def test_an_agent_started_again_carries_the_reports_last_apply_over() -> None:
    report = mock.Mock(last_apply=FAILED_APPLY)
    assert previous_last_apply(lambda: report) == FAILED_APPLY
    assert previous_last_apply(lambda: None) is None

    def down() -> None:
        raise ApiUnavailable("Kubernetes API: unreachable")

    assert previous_last_apply(down) is None  # the API down: started without it, quietly
