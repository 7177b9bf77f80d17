"""Apply slots as `coordination.k8s.io/v1` Leases against a real kube-apiserver: contention,
expiry and takeover, renew and release, the records as the API server keeps them."""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from kubegc_cli.core.fleet import lease_name
from kubegc_cli.node.fleet.leases import ApplySlots, micro_time
from kubegc_cli.node.pods.api import ApiUnavailable
from tests.controlplane import ControlPlane


@pytest.fixture
def namespace(admin: Any) -> Iterator[str]:
    """A namespace of this test's own: the slots' Lease names are the same in every test."""
    from kubernetes import client

    name = f"slots-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(admin)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)


def lease(admin: Any, namespace: str, name: str) -> Any:
    """The Lease as the API server holds it (the typed client object)."""
    from kubernetes import client

    return client.CoordinationV1Api(admin).read_namespaced_lease(name, namespace)


def slots(admin: Any, ns: str, who: str, n: int = 1, **kw: Any) -> ApplySlots:
    return ApplySlots(admin, ns, who, n, rng=random.Random(who), **kw)


def test_one_slot_two_agents_one_gets_it(admin: Any, namespace: str) -> None:
    a, b = slots(admin, namespace, "agent-a"), slots(admin, namespace, "agent-b")
    assert a.acquire() == "kubegc-apply-0"
    assert b.acquire() is None
    got = lease(admin, namespace, "kubegc-apply-0")
    assert got.spec.holder_identity == "agent-a"
    assert got.spec.lease_duration_seconds == 60 and got.spec.lease_transitions == 0
    assert got.metadata.labels == {"app.kubernetes.io/managed-by": "kubegc"}
    age = datetime.now(UTC) - got.spec.renew_time
    assert abs(age.total_seconds()) < 5 and got.spec.acquire_time == got.spec.renew_time
    # the holder asking again keeps its slot: renewed, not taken over
    assert a.acquire() == "kubegc-apply-0"
    assert lease(admin, namespace, "kubegc-apply-0").spec.lease_transitions == 0


def test_two_slots_two_agents_both_get_one(admin: Any, namespace: str) -> None:
    a, b = slots(admin, namespace, "agent-a", 2), slots(admin, namespace, "agent-b", 2)
    c = slots(admin, namespace, "agent-c", 2)
    got = {a.acquire(), b.acquire()}
    assert got == {"kubegc-apply-0", "kubegc-apply-1"}
    assert c.acquire() is None
    holders = {lease(admin, namespace, n).spec.holder_identity for n in got if n}
    assert holders == {"agent-a", "agent-b"}


def test_a_holder_that_stops_renewing_loses_the_slot(admin: Any, namespace: str) -> None:
    a = slots(admin, namespace, "agent-a", lease_seconds=1)
    b = slots(admin, namespace, "agent-b", lease_seconds=1)
    assert a.acquire() == "kubegc-apply-0"
    assert b.acquire() is None
    time.sleep(1.2)
    assert b.acquire() == "kubegc-apply-0"
    got = lease(admin, namespace, "kubegc-apply-0")
    assert got.spec.holder_identity == "agent-b" and got.spec.lease_transitions == 1
    assert a.renew("kubegc-apply-0") is False  # taken over: no longer a's to renew
    assert lease(admin, namespace, "kubegc-apply-0").spec.holder_identity == "agent-b"


def test_a_renewing_holder_keeps_its_slot(admin: Any, namespace: str) -> None:
    a = slots(admin, namespace, "agent-a", lease_seconds=2)
    b = slots(admin, namespace, "agent-b", lease_seconds=2)
    name = a.acquire()
    assert name is not None
    first = lease(admin, namespace, name).spec
    for _ in range(3):
        time.sleep(0.8)
        assert a.renew(name) is True
        assert b.acquire() is None
    after = lease(admin, namespace, name).spec
    assert after.renew_time > first.renew_time and after.acquire_time == first.acquire_time
    assert after.lease_transitions == 0 and after.holder_identity == "agent-a"


def test_renew_by_a_non_holder_is_false(admin: Any, namespace: str) -> None:
    a, b = slots(admin, namespace, "agent-a"), slots(admin, namespace, "agent-b")
    assert b.renew("kubegc-apply-0") is False  # no Lease yet
    assert a.acquire() == "kubegc-apply-0"
    rv = lease(admin, namespace, "kubegc-apply-0").metadata.resource_version
    assert b.renew("kubegc-apply-0") is False
    assert lease(admin, namespace, "kubegc-apply-0").metadata.resource_version == rv


def test_release_frees_the_slot(admin: Any, namespace: str) -> None:
    a, b = slots(admin, namespace, "agent-a"), slots(admin, namespace, "agent-b")
    assert a.acquire() == "kubegc-apply-0"
    a.release("kubegc-apply-0")
    got = lease(admin, namespace, "kubegc-apply-0").spec
    assert got.holder_identity is None and got.lease_duration_seconds == 1
    assert got.lease_transitions == 0
    assert b.acquire() == "kubegc-apply-0"  # at once: no holder, no wait
    got = lease(admin, namespace, "kubegc-apply-0").spec
    assert got.holder_identity == "agent-b" and got.lease_transitions == 1
    assert got.lease_duration_seconds == 60


def test_release_of_a_slot_taken_over_leaves_it_alone(admin: Any, namespace: str) -> None:
    a = slots(admin, namespace, "agent-a", lease_seconds=1)
    b = slots(admin, namespace, "agent-b", lease_seconds=1)
    assert a.acquire() == "kubegc-apply-0"
    time.sleep(1.2)
    assert b.acquire() == "kubegc-apply-0"
    rv = lease(admin, namespace, "kubegc-apply-0").metadata.resource_version
    a.release("kubegc-apply-0")
    got = lease(admin, namespace, "kubegc-apply-0")
    assert got.metadata.resource_version == rv and got.spec.holder_identity == "agent-b"
    a.release("kubegc-apply-9")  # no such Lease: nothing to do


def test_an_agent_restarted_under_its_name_takes_its_own_slot_back(
    admin: Any, namespace: str
) -> None:
    """A new process with the same identity renews the record (client-go's IsLeader path)."""
    assert slots(admin, namespace, "agent-a").acquire() == "kubegc-apply-0"
    first = lease(admin, namespace, "kubegc-apply-0").spec
    assert slots(admin, namespace, "agent-a").acquire() == "kubegc-apply-0"
    again = lease(admin, namespace, "kubegc-apply-0").spec
    assert again.lease_transitions == 0 and again.acquire_time == first.acquire_time


def test_the_loser_of_a_race_does_not_acquire(admin: Any, namespace: str) -> None:
    """Two agents read the same free record; the second write carries a stale
    resourceVersion and is refused (409): only one holds the slot. The interleaving is
    injected by a stand-in for b's read that lets c acquire right after it."""
    a = slots(admin, namespace, "agent-a", lease_seconds=1)
    assert a.acquire() == "kubegc-apply-0"
    time.sleep(1.2)  # expired: free for anyone

    c = slots(admin, namespace, "agent-c", lease_seconds=1)
    b = slots(admin, namespace, "agent-b", lease_seconds=1)
    real_get = b._get

    def get_then_c_writes(name: str) -> Any:
        read = real_get(name)
        assert c.acquire() == name  # c writes between b's read and b's write
        return read

    b._get = get_then_c_writes  # type: ignore[method-assign]
    assert b.acquire() is None
    got = lease(admin, namespace, "kubegc-apply-0").spec
    assert got.holder_identity == "agent-c" and got.lease_transitions == 1


def test_slots_are_tried_in_a_random_order(admin: Any, namespace: str) -> None:
    """Agents with different random orders spread over the slots: with 8 slots, 8 agents'
    first choices are not all slot 0."""
    firsts = set()
    for i in range(8):
        s = ApplySlots(admin, namespace, f"agent-{i}", 8, rng=random.Random(i))
        got = s.acquire()
        assert got is not None
        firsts.add(got)
        s.release(got)
    assert len(firsts) > 2


def test_microtimes_with_whole_seconds_are_accepted(admin: Any, namespace: str) -> None:
    """A MicroTime on a whole second is written 1 µs later: the client would drop a zero
    fraction, and the API server refuses a MicroTime without one."""
    whole = float(int(time.time()))
    a = slots(admin, namespace, "agent-a", clock=lambda: whole)
    assert a.acquire() == "kubegc-apply-0"
    got = lease(admin, namespace, "kubegc-apply-0").spec.renew_time
    assert got.timestamp() == pytest.approx(whole + 1e-6) and got.microsecond == 1
    assert micro_time(0) == "1970-01-01T00:00:00.000001Z"
    assert micro_time(0.25) == "1970-01-01T00:00:00.250000Z"


@pytest.mark.parametrize(
    ("renewed", "duration"),
    [(datetime(9999, 12, 31, 23, 59, 59, 1, UTC), 60), (None, 2147483647)],
    ids=["renewed-in-the-year-9999", "held-for-68-years"],
)
def test_a_squatted_slot_is_free_within_two_of_our_lease_durations(
    admin: Any, namespace: str, renewed: datetime | None, duration: int
) -> None:
    from kubernetes import client

    now = time.time()
    spec = {"holderIdentity": "squatter", "leaseDurationSeconds": duration,
            "renewTime": renewed or datetime.fromtimestamp(now - 2.5, UTC)}  # fmt: skip
    body = {"metadata": {"name": lease_name(0)}, "spec": spec}
    client.CoordinationV1Api(admin).create_namespaced_lease(namespace, body)
    # a record the API server keeps as written, which without the clamp no agent would take
    got = lease(admin, namespace, lease_name(0))
    assert got.spec.holder_identity == "squatter"
    assert got.spec.lease_duration_seconds == duration
    a = slots(admin, namespace, "agent-a", lease_seconds=2)
    assert a.acquire() == lease_name(0)
    assert lease(admin, namespace, lease_name(0)).spec.holder_identity == "agent-a"


def test_an_api_refusal_is_one_line(admin: Any) -> None:
    a = slots(admin, "no-such-namespace-" + uuid.uuid4().hex[:6], "agent-a")
    with pytest.raises(ApiUnavailable) as err:
        a.acquire()
    msg = str(err.value)
    assert "\n" not in msg and "creating lease no-such-namespace-" in msg and "404" in msg


def test_an_unreachable_api_is_one_line() -> None:
    from kubernetes import client

    cfg = client.Configuration()
    cfg.host = "https://127.0.0.1:1"
    cfg.retries = 0
    a = ApplySlots(client.ApiClient(cfg), "kubegc", "agent-a", 1, timeout=2)
    with pytest.raises(ApiUnavailable) as err:
        a.acquire()
    msg = str(err.value)
    assert "\n" not in msg and "unreachable" in msg and lease_name(0) in msg


def test_an_identity_without_lease_rights_is_told_which(
    control_plane: ControlPlane, namespace: str
) -> None:
    from kubernetes import config

    nobody = config.new_client_from_config(str(control_plane.kubeconfig("nobody")))
    with pytest.raises(ApiUnavailable) as err:
        ApplySlots(nobody, namespace, "agent-a", 1).acquire()
    msg = str(err.value)
    assert "\n" not in msg and "403 Forbidden" in msg
    assert f"get, create and update leases in namespace {namespace}" in msg


def test_a_kept_slot_stays_held_while_the_cycle_asks_and_another_waits(
    admin: Any, namespace: str
) -> None:
    """`agent.build.KeptSlots`: the thread renews every third of the lease; the cycle's
    `renew` (asked before every removal) is the thread's verdict, never a write racing it."""
    from kubegc_cli.agent.build import KeptSlots

    warned: list[str] = []
    kept = KeptSlots(lambda: slots(admin, namespace, "agent-a", lease_seconds=3), lambda: 3,
                     warned.append)  # fmt: skip
    other = slots(admin, namespace, "agent-b", lease_seconds=3)
    name = kept.acquire()
    assert name == "kubegc-apply-0"
    try:
        end = time.monotonic() + 5  # longer than the lease: only the renewals keep it
        while time.monotonic() < end:
            assert kept.renew(name), warned
            time.sleep(0.01)
        assert other.acquire() is None
        assert lease(admin, namespace, name).spec.holder_identity == "agent-a"
    finally:
        kept.release(name)
    assert warned == [] and other.acquire() == name
