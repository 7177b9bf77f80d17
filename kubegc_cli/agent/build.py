"""`kubegc agent`'s cycle with its Kubernetes parts: the node's `NodeGCReport`, the apply
slots (Leases) and the circuit breaker, all through one API client opened as every kubegc
command opens one (`--kubeconfig`, `KUBECONFIG`, `~/.kube/config`, the in-cluster account).

Without credentials the agent still runs: it reports on stderr and `/metrics` only, and in
apply mode takes no slot (apply slots are Leases: no API, no apply; the report says so).

While an apply runs the slot is renewed every third of its lease duration from a thread of
its own (`KeptSlots`), so a plan that takes longer than the lease never lets another node
take the slot: an agent that dies stops renewing, and its slot expires by its duration. A
failed renewal is retried until shortly before the Lease would expire; only then is the slot
lost and the apply stops starting removals.

Each agent process holds slots under an identity of its own (`slot_identity`: the pod or node
name and a random suffix): an agent restarted does not take its old slot back but waits, as
any other node does, for it to expire (the lease duration, 60 s by default).
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kubegc_cli.agent.cycle import Agent, Slots
from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.commands.edges import Ui
from kubegc_cli.core.errors import KubegcError
from kubegc_cli.core.fleet import LastApply, NodeReport
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.fleet.leases import ApplySlots
from kubegc_cli.node.fleet.reports import list_reports, read_report, write_report
from kubegc_cli.node.pods.api import ApiSource, find_credentials, node_name, open_api
from kubegc_cli.policy.fleet import breaker


class KeptSlots:
    """`Slots` that keep the slot held while it is: `make()` gives the slots in force (made
    again at each `acquire`, so a re-read policy's slot count, namespace and lease duration
    apply from the next apply); after `acquire` returns a name, a daemon thread renews it
    every `lease_seconds() / 3` seconds until `release`.

    A renewal that fails (the API down, a timeout) is retried every `retry` seconds until the
    Lease's own record would expire: the last successful renewal (timed as the request was
    sent) plus the lease duration, less `margin(lease)` — only then is the slot lost. A
    renewal that finds the slot taken by another holder loses it at once. `renew(name)` is
    the thread's verdict (True while held) and never calls the API, so the cycle and the
    thread never race to write the Lease. `warn` is told each failed renewal (one line).
    `clock` (seconds, monotonic) and `wait(seconds)` (True when `release` began) are
    injectable for tests."""

    def __init__(
        self,
        make: Any,
        lease_seconds: Any,
        warn: Any,
        *,
        retry: float = 2.0,
        clock: Any = time.monotonic,
        wait: Any = None,
    ) -> None:
        self._make, self._lease_of, self._warn = make, lease_seconds, warn
        self._retry, self._clock = retry, clock
        self._slots: Slots | None = None
        self._lease = 60.0
        self._stop = threading.Event()
        self._wait = wait if wait is not None else self._stop.wait
        self._thread: threading.Thread | None = None
        self._held = False
        self._until = 0.0  # (clock) when the slot counts as lost without a renewal

    @staticmethod
    def margin(lease: float) -> float:
        """How long before the Lease's record expires the slot is given up: a sixth of the
        lease duration, at least a second."""
        return max(lease / 6, 1.0)

    def acquire(self) -> str | None:
        if self._thread is not None and self._thread.is_alive():
            # The last slot's renewal is still stuck in a request (release's join timed
            # out): no new slot until it ends, or it would renew under the new one's state.
            self._warn("apply slot: the last slot's renewal has not ended; no slot taken")
            return None
        self._slots, self._lease = self._make(), float(self._lease_of())
        sent = self._clock()
        name = self._slots.acquire()
        if name is not None:
            self._until = sent + self._lease - self.margin(self._lease)
            self._held = True
            self._stop.clear()
            self._thread = threading.Thread(
                target=self.keep, args=(name,), name="kubegc-apply-slot", daemon=True
            )
            self._thread.start()
        return name

    def keep(self, name: str) -> None:
        """The renewal loop (the thread's body) until `release`, or the slot is lost."""
        assert self._slots is not None
        every = max(self._lease / 3, 1.0)
        delay = every
        while True:
            if self._wait(max(0.0, min(delay, self._until - self._clock()))):
                return
            if self._clock() >= self._until:
                self._warn(f"apply slot {name}: not renewed before its lease ran out: lost")
                self._held = False
                return
            sent = self._clock()
            try:
                held = self._slots.renew(name)
            except KubegcError as exc:
                self._warn(f"apply slot {name}: {exc}; retrying")
                delay = self._retry
                continue
            if not held:
                self._warn(f"apply slot {name}: held by another: lost")
                self._held = False
                return
            self._until = sent + self._lease - self.margin(self._lease)
            delay = every

    def renew(self, name: str) -> bool:
        return self._held and self._clock() < self._until

    def release(self, name: str) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._lease + 30)
        self._held = False
        if self._slots is not None:
            self._slots.release(name)


def slot_identity(node: str, env: Mapping[str, str], token: str | None = None) -> str:
    """The apply slot holder identity of this agent process: `POD_NAME` (when set, else the
    node name), `/`, 8 random hex digits (`token`). Two agents on one node (the DaemonSet's
    and a `kubectl exec ... agent --once`) hold distinct slots and never release each other's;
    an agent restarted is a new holder and waits for its old slot to expire (lease duration)."""
    prefix = env.get("POD_NAME") or node
    return f"{prefix}/{token if token is not None else secrets.token_hex(4)}"


def previous_last_apply(read: Callable[[], NodeReport | None]) -> LastApply | None:
    """The last apply of the node's report as it stands (`read()`), for an agent just
    started to carry over (the breaker counts the failed ones); None when there is none or it
    cannot be read (the API down: the agent starts without it)."""
    try:
        found = read()
    except KubegcError:
        return None
    return found.last_apply if found is not None else None


def build_agent(s: Settings, options: AgentOptions, ui: Ui) -> Agent:
    """The `Agent` `kubegc agent` runs: with the API when credentials are found (its report
    written, the last apply of the report already there carried over, apply slots as Leases
    held as `slot_identity`, the breaker over every node's report), else without.
    Raises `BadInput` for a kubeconfig that cannot be used."""
    found = find_credentials(s.kubeconfig, s.env)
    if found is None:
        ui.warn(
            "no Kubernetes credentials (--kubeconfig, KUBECONFIG, ~/.kube/config or the "
            "in-cluster account): no NodeGCReport is written and no apply slot can be held"
        )
        return Agent(s, options, ui)
    node = node_name(s.node_name)
    core, _host = open_api(ApiSource(found, s.context, node))
    api_client = core.api_client
    timeout = s.timeout
    agent: Agent  # made below; the closures read its options in force
    identity = slot_identity(node, s.env)

    def write(report: NodeReport) -> None:
        write_report(api_client, report, timeout=timeout)

    def fleet_breaker() -> str:
        o = agent.options
        reports = list_reports(api_client, timeout=timeout)
        return breaker(
            reports, time.time(), window=o.breaker_window, max_failed_percent=o.max_failed_percent
        )

    def leases() -> ApplySlots:
        o = agent.options
        return ApplySlots(
            api_client, o.lease_namespace, identity, o.apply_slots,
            lease_seconds=o.lease_seconds, timeout=timeout,
        )  # fmt: skip

    slots = KeptSlots(leases, lambda: agent.options.lease_seconds, ui.warn)
    last = previous_last_apply(lambda: read_report(api_client, node, timeout=timeout))
    agent = Agent(s, options, ui, write_report=write, slots=slots, breaker=fleet_breaker,
                  last_apply=last)  # fmt: skip
    return agent
