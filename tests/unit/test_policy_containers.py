"""The kubelet's container GC rules (evictContainers) as table-driven planner tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import Container, ContainerState, Sandbox, SandboxState
from kubegc_cli.core.plan import Result
from kubegc_cli.core.pods import (
    NO_POD_SOURCE,
    PodInfo,
    PodInventory,
    against_runtime,
    inventory_from_podlist,
    inventory_of,
)
from kubegc_cli.policy.containers import (
    ContainerGCPolicy,
    Scope,
    plan_containers,
    recheck_guard,
)
from tests.unit.factories import NOW, ctr

KUBELET = ContainerGCPolicy(match_kubelet=True)


def pods(*uids: str, phase: str = "Running") -> PodInventory:
    return inventory_of(PodInfo(u, "default", f"pod-{u}", phase) for u in uids)


@dataclass
class Case:
    name: str
    containers: list[Container]
    removed: set[str]
    policy: ContainerGCPolicy = field(default_factory=ContainerGCPolicy)
    inventory: PodInventory = NO_POD_SOURCE
    scope: Scope = field(default_factory=Scope)
    rules: dict[str, str] = field(default_factory=dict)
    kept_rules: dict[str, str] = field(default_factory=dict)


CASES = [
    Case(
        "running containers are never candidates",
        [ctr("r1", state="RUNNING", age_s=9999), ctr("r2", state="RUNNING", attempt=1)],
        set(),
        policy=ContainerGCPolicy(max_per_pod_container=0, match_kubelet=True),
    ),
    Case(
        "default keeps the newest dead container per evict unit",
        [
            ctr("a0", attempt=0, age_s=300),
            ctr("a1", attempt=1, age_s=200),
            ctr("a2", attempt=2, age_s=100),
            ctr("run", attempt=3, state="RUNNING", age_s=10),
        ],
        {"a0", "a1"},
        rules={"a0": "max-per-pod-container", "a1": "max-per-pod-container"},
        kept_rules={"a2": "within-limits"},
    ),
    Case(
        "evict unit is (pod uid, container name), not the pod",
        [
            ctr("i0", name="init", attempt=0, age_s=300),
            ctr("i1", name="init", attempt=1, age_s=200),
            ctr("s0", name="side", attempt=0, age_s=250),
            ctr("q0", uid="uid-q", name="init", attempt=0, age_s=400),
        ],
        {"i0"},
    ),
    Case(
        "CREATED and UNKNOWN containers are garbage too",
        [
            ctr("c0", state="CREATED", attempt=0, age_s=300),
            ctr("u1", state="UNKNOWN", attempt=1, age_s=200),
            ctr("e2", state="EXITED", attempt=2, age_s=100),
        ],
        {"c0", "u1"},
    ),
    Case(
        "MinAge counts from creation; exactly MinAge old is a candidate",
        [
            ctr("old", attempt=0, age_s=3600),
            ctr("edge", attempt=1, age_s=3600 - 0.000000001),
            ctr("young", attempt=2, age_s=60),
        ],
        {"old"},
        policy=ContainerGCPolicy(min_age=3600, max_per_pod_container=0, match_kubelet=True),
        kept_rules={"edge": "min-age", "young": "min-age"},
    ),
    Case(
        "MinAge edge: created exactly now-MinAge is removed",
        [ctr("edge", age_s=3600), ctr("young", attempt=1, age_s=10)],
        {"edge"},
        policy=ContainerGCPolicy(min_age=3600, max_per_pod_container=0, match_kubelet=True),
    ),
    Case(
        "negative MaxPerPodContainer means unlimited",
        [ctr(f"a{i}", attempt=i, age_s=1000 - i) for i in range(5)],
        set(),
        policy=ContainerGCPolicy(max_per_pod_container=-1),
    ),
    Case(
        "MaxPerPodContainer 3 keeps the three newest",
        [ctr(f"a{i}", attempt=i, age_s=1000 - i) for i in range(5)],
        {"a0", "a1"},
        policy=ContainerGCPolicy(max_per_pod_container=3),
    ),
    Case(
        "MaxPerPodContainer 0 as the kubelet: every dead container goes",
        [ctr("a0", age_s=300), ctr("a1", attempt=1, age_s=200)],
        {"a0", "a1"},
        policy=ContainerGCPolicy(max_per_pod_container=0, match_kubelet=True),
    ),
    Case(
        "MaxPerPodContainer 0 with the guard: the newest record stays",
        [ctr("a0", age_s=300), ctr("a1", attempt=1, age_s=200)],
        {"a0"},
        policy=ContainerGCPolicy(max_per_pod_container=0),
        kept_rules={"a1": "guard-newest-record"},
    ),
    Case(
        "no pod source: no pod is deleted",
        [ctr("a0", uid="gone", age_s=300)],
        set(),
    ),
    Case(
        "deleted pod loses every dead container, newest included, running kept",
        [
            ctr("g0", uid="gone", attempt=0, age_s=300),
            ctr("g1", uid="gone", attempt=1, age_s=200),
            ctr("gr", uid="gone", name="web", state="RUNNING"),
            ctr("p0", uid="live", age_s=300),
        ],
        {"g0", "g1"},
        inventory=pods("live"),
        rules={"g0": "deleted-pod", "g1": "deleted-pod"},
    ),
    Case(
        "deleted pod: MinAge still protects young containers",
        [ctr("g0", uid="gone", age_s=7200), ctr("g1", uid="gone", attempt=1, age_s=60)],
        {"g0"},
        policy=ContainerGCPolicy(min_age=3600),
        inventory=pods("live"),
    ),
    Case(
        "terminated pods keep their records without --include-terminated-pods",
        [ctr("t0", uid="done", age_s=300), ctr("t1", uid="done", attempt=1, age_s=200)],
        {"t0"},
        inventory=pods("done", phase="Succeeded"),
    ),
    Case(
        "--include-terminated-pods removes all of a Succeeded/Failed pod",
        [ctr("t0", uid="done", age_s=300), ctr("t1", uid="done", attempt=1, age_s=200)],
        {"t0", "t1"},
        policy=ContainerGCPolicy(include_terminated_pods=True),
        inventory=pods("done", phase="Failed"),
        rules={"t0": "terminated-pod", "t1": "terminated-pod"},
    ),
    Case(
        "containers without a pod UID label are never 'deleted'",
        [ctr("x0", uid="", age_s=300)],
        set(),
        inventory=pods("live"),
    ),
    Case(
        "MaxContainers: equal share per unit first (6 // 3 = 2)",
        [ctr(f"{u}{i}", uid=u, attempt=i, age_s=1000 - i) for u in "abc" for i in range(3)],
        {"a0", "b0", "c0"},
        policy=ContainerGCPolicy(max_per_pod_container=-1, max_containers=6, match_kubelet=True),
        rules={"a0": "max-containers-share"},
    ),
    Case(
        "MaxContainers: share floored at 1, then oldest overall go",
        [
            ctr("a0", uid="a", age_s=400),
            ctr("b0", uid="b", age_s=300),
            ctr("c0", uid="c", age_s=200),
            ctr("d0", uid="d", age_s=100),
        ],
        {"a0", "b0"},
        policy=ContainerGCPolicy(max_containers=2, match_kubelet=True),
        rules={"a0": "max-containers", "b0": "max-containers"},
    ),
    Case(
        "MaxContainers with the guard keeps every live unit's last record",
        [
            ctr("a0", uid="a", age_s=400),
            ctr("b0", uid="b", age_s=300),
            ctr("b1", uid="b", attempt=1, age_s=250),
        ],
        {"b0"},
        policy=ContainerGCPolicy(max_per_pod_container=-1, max_containers=0),
        kept_rules={"a0": "guard-newest-record", "b1": "guard-newest-record"},
    ),
    Case(
        "deleted pods drop out before the MaxContainers count",
        [
            ctr("g0", uid="gone", age_s=500),
            ctr("g1", uid="gone", attempt=1, age_s=450),
            ctr("a0", uid="a", age_s=400),
            ctr("b0", uid="b", age_s=300),
        ],
        {"g0", "g1"},
        policy=ContainerGCPolicy(max_containers=2, match_kubelet=True),
        inventory=pods("a", "b"),
    ),
    Case(
        "equal creation times: higher attempt counts as newer",
        [ctr("x1", attempt=1, age_s=100), ctr("x0", attempt=0, age_s=100)],
        {"x0"},
    ),
    Case(
        "scope: only the selected namespace acts, the rest is counted",
        [
            ctr("a0", uid="a", ns="ci", age_s=300),
            ctr("a1", uid="a", ns="ci", attempt=1, age_s=200),
            ctr("b0", uid="b", ns="prod", age_s=300),
            ctr("b1", uid="b", ns="prod", attempt=1, age_s=200),
        ],
        {"a0"},
        scope=Scope(namespaces=frozenset({"ci"})),
    ),
    Case(
        "scope: --exclude-namespace and --pod",
        [
            ctr("a0", uid="a", ns="ci", pod="web", age_s=300),
            ctr("a1", uid="a", ns="ci", pod="web", attempt=1, age_s=200),
            ctr("b0", uid="b", ns="ci", pod="db", age_s=300),
            ctr("b1", uid="b", ns="ci", pod="db", attempt=1, age_s=200),
            ctr("c0", uid="c", ns="kube-system", age_s=300),
            ctr("c1", uid="c", ns="kube-system", attempt=1, age_s=200),
        ],
        {"b0"},
        scope=Scope(exclude_namespaces=frozenset({"kube-system"}), pods=frozenset({"ci/db"})),
    ),
    Case(
        "scope: --older-than uses the finish time",
        [
            ctr("a0", age_s=3000, finished_age_s=2000),
            ctr("a1", attempt=1, age_s=2500, finished_age_s=30),
            ctr("a2", attempt=2, age_s=100, finished_age_s=10),
        ],
        {"a0"},
        scope=Scope(older_than=600),
        kept_rules={"a1": "older-than", "a2": "within-limits"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_container_gc_rules(case: Case) -> None:
    plan = plan_containers(case.containers, case.policy, case.inventory, NOW, case.scope)
    assert {a.id for a in plan.actions} == case.removed
    assert all(a.result is Result.PLANNED for a in plan.actions)
    rules = {a.id: a.rule for a in plan.actions}
    for cid, rule in case.rules.items():
        assert rules[cid] == rule
    kept = {k.id: k.rule for k in plan.kept}
    for cid, rule in case.kept_rules.items():
        assert kept[cid] == rule
    assert not ({a.id for a in plan.actions} & set(kept))


def test_unknown_containers_are_stopped_first() -> None:
    plan = plan_containers(
        [ctr("u0", state="UNKNOWN", age_s=300), ctr("e1", attempt=1, age_s=200)],
        ContainerGCPolicy(),
        NO_POD_SOURCE,
        NOW,
    )
    assert [(a.id, a.stop_first) for a in plan.actions] == [("u0", True)]


def test_out_of_scope_count_and_notes() -> None:
    cs = [
        ctr("a0", uid="a", ns="ci", age_s=300),
        ctr("a1", uid="a", ns="ci", attempt=1, age_s=200),
        ctr("b0", uid="b", ns="prod", age_s=300),
        ctr("b1", uid="b", ns="prod", attempt=1, age_s=200),
    ]
    plan = plan_containers(
        cs, ContainerGCPolicy(), NO_POD_SOURCE, NOW, Scope(namespaces=frozenset({"ci"}))
    )
    assert plan.out_of_scope == 1
    assert any("outside the selected" in n for n in plan.notes)
    assert any("No pod source" in n for n in plan.notes)


def test_min_age_note_explains_an_empty_plan() -> None:
    cs = [ctr("a0", age_s=5), ctr("a1", attempt=1, age_s=3)]
    plan = plan_containers(cs, ContainerGCPolicy(min_age=3600), NO_POD_SOURCE, NOW)
    assert plan.actions == []
    assert any("younger than MinAge" in n and "1h0m0s" in n for n in plan.notes)


def test_plan_json_shape() -> None:
    plan = plan_containers(
        [ctr("a0", age_s=300, log_bytes=10), ctr("a1", attempt=1, age_s=200)],
        ContainerGCPolicy(),
        NO_POD_SOURCE,
        NOW,
    )
    doc = plan.to_dict()
    assert doc["kind"] == "ContainerGCPlan"
    assert doc["apiVersion"] == "kubegc.io/v1alpha1"
    assert doc["policy"]["maximum_dead_containers_per_container"] == 1
    assert doc["policy"]["minimum_container_ttl_duration"] == "0s"
    a = doc["actions"][0]
    for key in (
        "kind", "id", "pod_uid", "pod_namespace", "pod_name", "name",
        "attempt", "state", "created_at", "reason", "result", "error",
    ):  # fmt: skip
        assert key in a
    assert a["kind"] == "container" and a["result"] == "planned"
    assert a["created_at"].endswith("Z")
    assert doc["summary"]["bytes_planned"] == 10
    assert doc["summary"]["by_result"] == {
        "planned": 1, "removed": 0, "skipped": 0, "failed": 0, "held-back": 0,
    }  # fmt: skip
    empty = plan_containers([], ContainerGCPolicy(), NO_POD_SOURCE, NOW).to_dict()
    assert empty["actions"] == [] and empty["kept"] == []


def test_recheck_guard_skips_the_new_newest_record() -> None:
    cs = [ctr("a0", age_s=300), ctr("a1", attempt=1, age_s=200), ctr("a2", attempt=2, age_s=100)]
    plan = plan_containers(cs, ContainerGCPolicy(), NO_POD_SOURCE, NOW)
    assert {a.id for a in plan.actions} == {"a0", "a1"}
    # The kept record a2 vanished before acting: a1 is now the unit's newest record.
    recheck_guard(plan, [c for c in cs if c.id != "a2"], ContainerGCPolicy())
    result = {a.id: a.result for a in plan.actions}
    assert result == {"a0": Result.PLANNED, "a1": Result.SKIPPED}


def test_recheck_guard_leaves_deleted_pods_and_match_kubelet_alone() -> None:
    cs = [ctr("g0", uid="gone", age_s=300), ctr("g1", uid="gone", attempt=1, age_s=200)]
    plan = plan_containers(cs, ContainerGCPolicy(), pods("live"), NOW)
    recheck_guard(plan, cs, ContainerGCPolicy())
    assert all(a.result is Result.PLANNED for a in plan.actions)
    cs2 = [ctr("a0", age_s=300), ctr("a1", attempt=1, age_s=200)]
    plan2 = plan_containers(cs2, KUBELET.__class__(max_per_pod_container=0, match_kubelet=True),
                            NO_POD_SOURCE, NOW)  # fmt: skip
    recheck_guard(plan2, [cs2[0]], ContainerGCPolicy(match_kubelet=True))
    assert all(a.result is Result.PLANNED for a in plan2.actions)


# ---- properties over random node states ----

STATES = st.sampled_from(["EXITED", "CREATED", "UNKNOWN", "RUNNING"])


@st.composite
def node_states(draw: st.DrawFn) -> list[Container]:
    n = draw(st.integers(0, 40))
    out = []
    for i in range(n):
        out.append(
            ctr(
                f"c{i}",
                uid=draw(st.sampled_from(["p1", "p2", "p3", "gone", ""])),
                name=draw(st.sampled_from(["app", "init", "side"])),
                attempt=draw(st.integers(0, 5)),
                state=draw(STATES),
                age_s=draw(st.integers(1, 10_000)),
            )
        )
    return out


POLICIES = st.builds(
    ContainerGCPolicy,
    min_age=st.sampled_from([0.0, 60.0, 3600.0]),
    max_per_pod_container=st.integers(-1, 3),
    max_containers=st.integers(-1, 10),
    match_kubelet=st.booleans(),
    include_terminated_pods=st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(node_states(), POLICIES, st.booleans())
def test_invariants(cs: list[Container], policy: ContainerGCPolicy, known: bool) -> None:
    inv = pods("p1", "p2", phase="Running") if known else NO_POD_SOURCE
    plan = plan_containers(cs, policy, inv, NOW)
    removed = {a.id for a in plan.actions}
    by_id = {c.id: c for c in cs}
    # Never a running container, never a container younger than MinAge.
    for cid in removed:
        c = by_id[cid]
        assert c.state.value != "RUNNING"
        assert NOW - c.created_at >= int(policy.min_age * 1e9)
    # Every dead container is either removed or kept, never both.
    dead = {c.id for c in cs if c.state.value != "RUNNING"}
    assert removed | {k.id for k in plan.kept} == dead
    assert not removed & {k.id for k in plan.kept}
    # The guard: each live pod's evict unit keeps its newest dead container.
    if not policy.match_kubelet:
        newest: dict[tuple[str, str], Container] = {}
        for c in cs:
            if c.state.value == "RUNNING":
                continue
            if inv.is_deleted(c.pod_uid) or (
                policy.include_terminated_pods and inv.is_terminated(c.pod_uid)
            ):
                continue
            k = (c.pod_uid, c.name)
            if k not in newest or (c.created_at, c.attempt, c.id) > (
                newest[k].created_at,
                newest[k].attempt,
                newest[k].id,
            ):
                newest[k] = c
        assert not removed & {c.id for c in newest.values()}
    # As the kubelet: what stays of the candidates obeys both limits.
    if policy.match_kubelet:
        cutoff = NOW - int(policy.min_age * 1e9)
        left = [c for c in cs if c.id in dead and c.created_at <= cutoff and c.id not in removed]
        if policy.max_per_pod_container >= 0:
            per: dict[tuple[str, str], int] = {}
            for c in left:
                per[(c.pod_uid, c.name)] = per.get((c.pod_uid, c.name), 0) + 1
            assert all(v <= policy.max_per_pod_container for v in per.values())
        if policy.max_containers >= 0:
            assert len(left) <= policy.max_containers


def test_scope_that_matches_nothing_says_so() -> None:
    cs = [ctr("a0", ns="shop", pod="web"), ctr("a1", ns="shop", pod="web", attempt=1)]
    plan = plan_containers(
        cs,
        ContainerGCPolicy(),
        NO_POD_SOURCE,
        NOW,
        Scope(namespaces=frozenset({"shpo"}), pods=frozenset({"wbe", "shop/web"})),
    )
    assert plan.actions == []
    assert "No container on this node is in namespace 'shpo' (-n)." in plan.notes
    assert "No container on this node belongs to pod 'wbe' (--pod)." in plan.notes
    assert not any("shop/web" in n for n in plan.notes)


@pytest.mark.parametrize(
    ("listed", "evicted", "running", "ready", "deleted"),
    [
        # gone from the source (partial, stale: -n, -l, a pod scheduled since) but alive here
        (False, False, True, False, False),
        (False, False, False, True, False),  # alive by its READY sandbox alone (pulling)
        (True, True, True, False, False),  # evicted in the source, still being stopped
        (True, True, False, True, False),
        # nothing of it alive: the source decides
        (False, False, False, False, True),
        (True, True, False, False, True),
        (True, False, False, False, False),
    ],
)
def test_a_pod_alive_here_is_never_a_deleted_pod(
    listed: bool, evicted: bool, running: bool, ready: bool, deleted: bool
) -> None:
    """A pod with a RUNNING container or a READY sandbox has not terminated: the kubelet
    keeps its records (ShouldPodContentBeRemoved is false until then), whatever the pod
    source says. Its dead containers fall under the per-unit rules; a note names it."""
    q = "0a0a0a0a-0000-1111-2222-333344445555"
    cs = [
        ctr("p-run", uid="p", pod="p", state="RUNNING"),
        ctr("q0", uid=q, pod="q", ns="ci", age_s=300),
        ctr("q1", uid=q, pod="q", ns="ci", age_s=200, attempt=1),
    ]
    if running:
        cs.append(ctr("q-run", uid=q, pod="q", ns="ci", name="side", state="RUNNING"))
    listed_pods = [PodInfo("p", "default", "p")]
    if listed:
        listed_pods.append(PodInfo(q, "ci", "q", content_removable=evicted))
    sandboxes = [_sb(q, "READY" if ready else "NOTREADY")]
    inv = against_runtime(inventory_of(listed_pods), cs, sandboxes)
    assert inv.is_deleted(q) is deleted
    assert inv.may_exist(q) is (listed or running or ready)
    plan = plan_containers(cs, ContainerGCPolicy(), inv, NOW)
    if deleted:
        assert {a.id: a.rule for a in plan.actions} == {"q0": "deleted-pod", "q1": "deleted-pod"}
    else:  # the per-unit limit takes the older record; the newest stays
        assert {a.id: a.rule for a in plan.actions} == {"q0": "max-per-pod-container"}
    noted = [n for n in plan.notes if "ci/q" in n and "alive on this node" in n]
    assert len(noted) == (1 if (running or ready) and (evicted or not listed) else 0)


@pytest.mark.parametrize("guard", [True, False])
def test_a_created_container_in_a_ready_sandbox_is_kept(guard: bool) -> None:
    """A CREATED container the limits would remove is kept (`may-start`) while its sandbox is
    READY: the kubelet may be about to start it. In another sandbox it goes; EXITED ones go as
    the limits say; it still counts toward the limits."""
    cs = [
        ctr("c0", attempt=0, state="CREATED", age_s=500),
        ctr("e1", attempt=1, age_s=400),
        ctr("e2", attempt=2, age_s=300),
    ]
    policy = ContainerGCPolicy(max_per_pod_container=1, match_kubelet=not guard)
    ready = frozenset({"sb-uid-p"})
    plan = plan_containers(cs, policy, NO_POD_SOURCE, NOW, ready_sandboxes=ready)
    assert [a.id for a in plan.actions] == ["e1"]
    assert [(k.id, k.rule) for k in plan.kept] == [("c0", "may-start"), ("e2", "within-limits")]
    assert "READY sandbox" in plan.kept[0].reason
    assert any(n.startswith("1 CREATED container(s) kept") for n in plan.notes)
    other = plan_containers(cs, policy, NO_POD_SOURCE, NOW, ready_sandboxes=frozenset({"sb-x"}))
    assert [a.id for a in other.actions] == ["c0", "e1"]


STATIC = "4d8f0c2b9e1a7f3c5b6d8e0a1c2b3d4e"  # a static pod's UID: its manifest's hash


@pytest.mark.parametrize("mirrored", [True, False])
def test_a_static_pod_is_never_a_deleted_pod(mirrored: bool) -> None:
    """A static pod (etcd, kube-apiserver) is not in the API; its mirror pod, with another
    UID, names it in `kubernetes.io/config.mirror`. Mirrored or not (the source may lack the
    mirror pod), its newest dead record of each evict unit stays (guard), as for any pod that
    exists."""
    cs = [
        ctr("init0", uid=STATIC, pod="etcd-n1", ns="kube-system", name="init-certs", age_s=900),
        ctr("etcd0", uid=STATIC, pod="etcd-n1", ns="kube-system", name="etcd", age_s=800),
        ctr("etcd1", uid=STATIC, pod="etcd-n1", ns="kube-system", name="etcd", attempt=1,
            state="RUNNING"),
    ]  # fmt: skip
    meta = {"uid": "0b0b0b0b-1111-2222-3333-444455556666", "namespace": "kube-system",
            "name": "etcd-n1"}  # fmt: skip
    if mirrored:
        meta["annotations"] = {"kubernetes.io/config.mirror": STATIC}  # type: ignore[assignment]
    inv = inventory_from_podlist({"kind": "PodList", "items": [{"metadata": meta}]}, source="t")
    assert not inv.is_deleted(STATIC) and inv.may_exist(STATIC)
    plan = plan_containers(cs, ContainerGCPolicy(max_per_pod_container=0), inv, NOW)
    assert plan.actions == []
    assert {(a.id, a.rule) for a in plan.kept} == {
        ("init0", "guard-newest-record"), ("etcd0", "guard-newest-record"),
    }  # fmt: skip


def _sb(uid: str, state: str) -> Sandbox:
    return Sandbox(
        id=f"sb-{uid}", name="p", namespace="ns", uid=uid, attempt=0,
        state=SandboxState(state), created_at=0,
    )  # fmt: skip


API_POD = "9a1b2c3d-0000-1111-2222-333344445555"
OTHER_POD = "11111111-2222-3333-4444-555555555555"


@pytest.mark.parametrize(
    ("listed", "containers", "sandboxes", "refused"),
    [
        # nothing runs (a reboot, every pod crash-looping), an empty list: refused
        ([], [ctr("a", uid=API_POD)], [], "lists no pods"),
        ([], [], [_sb(API_POD, "NOTREADY")], "lists no pods"),
        # a READY sandbox is a pod alive here, even with every container stopped
        ([OTHER_POD], [ctr("a", uid=API_POD)], [_sb(API_POD, "READY")], "none of the 1"),
        ([OTHER_POD], [ctr("a", uid=API_POD, state="RUNNING")], [], "none of the 1"),
        # the source lists a pod alive here, or nothing of a pod is here: fine
        ([API_POD], [ctr("a", uid=API_POD, state="RUNNING")], [_sb(API_POD, "READY")], ""),
        ([OTHER_POD], [ctr("a", uid=API_POD)], [_sb(API_POD, "NOTREADY")], ""),
        ([], [], [], ""),
        ([], [ctr("a", uid="")], [], ""),  # no pod UID: no pod
        # static pods (no mirror pod needed) never make a source look wrong
        ([], [ctr("a", uid=STATIC, state="RUNNING")], [_sb(STATIC, "READY")], ""),
    ],
)
def test_a_pod_source_that_cannot_be_this_nodes_is_refused(
    listed: list[str], containers: list[Container], sandboxes: list[Sandbox], refused: str
) -> None:
    inv = inventory_of([PodInfo(u, "ns", "p") for u in listed])
    if not refused:
        here = against_runtime(inv, containers, sandboxes)
        running = {c.pod_uid for c in containers if c.state is ContainerState.RUNNING}
        ready = {sb.uid for sb in sandboxes if sb.state is SandboxState.READY}
        assert here.alive == (running | ready) - {""}
        assert here.pods == inv.pods
        return
    with pytest.raises(BadInput, match=refused):
        against_runtime(inv, containers, sandboxes)
    assert against_runtime(NO_POD_SOURCE, containers, sandboxes) is NO_POD_SOURCE  # no check


# --- the containers of terminated pods, kept while the pod object exists ---------------------


def both(*infos: PodInfo) -> PodInventory:
    return inventory_of(infos)


HINT_CASES = [
    # (name, containers, inventory, policy, expected note start or "" for none)
    ("a Succeeded pod's newest record and a Failed pod's, with their log bytes",
     [ctr("s0", uid="done", age_s=300, log_bytes=1024),
      ctr("s1", uid="done", attempt=1, age_s=200, log_bytes=2048),
      ctr("f0", uid="bad", name="job", age_s=300, log_bytes=1024)],
     both(PodInfo("done", "default", "pod-done", "Succeeded"),
          PodInfo("bad", "default", "pod-bad", "Failed")),
     ContainerGCPolicy(),
     "2 dead container(s) of 2 terminated pod(s) (Failed, Succeeded) kept, at least 3Ki on "
     "disk (logs and writable layers): the pods still exist in the pod source"),
    ("one log not measured (and no layer): at least what was",
     [ctr("s0", uid="done", age_s=300, log_bytes=1024),
      ctr("s1", uid="done", name="b", age_s=300)],
     both(PodInfo("done", "default", "pod-done", "Succeeded")),
     ContainerGCPolicy(),
     "2 dead container(s) of 1 terminated pod(s) (Succeeded) kept, at least 1Ki on disk"),
    ("none measured",
     [ctr("s0", uid="done", age_s=300)],
     both(PodInfo("done", "default", "pod-done", "Succeeded")),
     ContainerGCPolicy(),
     "1 dead container(s) of 1 terminated pod(s) (Succeeded) kept, their logs and writable "
     "layers not measured"),
    ("the kubelet's own limits (--match-kubelet) keep it within the limits: the same hint",
     [ctr("s0", uid="done", age_s=300, log_bytes=10)],
     both(PodInfo("done", "default", "pod-done", "Succeeded")),
     KUBELET,
     "1 dead container(s) of 1 terminated pod(s) (Succeeded) kept, at least 10B on disk"),
    ("--include-terminated-pods given: they go, no hint",
     [ctr("s0", uid="done", age_s=300, log_bytes=10)],
     both(PodInfo("done", "default", "pod-done", "Succeeded")),
     ContainerGCPolicy(include_terminated_pods=True), ""),
    ("a Running pod's record: no hint",
     [ctr("r0", uid="live", age_s=300, log_bytes=10)],
     both(PodInfo("live", "default", "pod-live", "Running")),
     ContainerGCPolicy(), ""),
    ("no pod source: no pod is known terminated, no hint",
     [ctr("s0", uid="done", age_s=300, log_bytes=10)], NO_POD_SOURCE, ContainerGCPolicy(), ""),
    ("kept by MinAge: --include-terminated-pods would not free it, no hint",
     [ctr("s0", uid="done", age_s=30, log_bytes=10)],
     both(PodInfo("done", "default", "pod-done", "Succeeded")),
     ContainerGCPolicy(min_age=3600), ""),
    ("a terminated pod alive on the node (a running container) has not terminated: no hint",
     [ctr("s0", uid="done", age_s=300, log_bytes=10),
      ctr("s1", uid="done", name="side", state="RUNNING")],
     both(PodInfo("done", "default", "pod-done", "Succeeded")),
     ContainerGCPolicy(), ""),
]  # fmt: skip


@pytest.mark.parametrize(
    ("containers", "inventory", "policy", "note"),
    [pytest.param(*c[1:], id=c[0]) for c in HINT_CASES],
)
def test_terminated_pods_whose_containers_stay_get_a_hint_with_their_bytes(
    containers: list[Container], inventory: PodInventory, policy: ContainerGCPolicy, note: str
) -> None:
    sandboxes: list[Sandbox] = []
    inv = against_runtime(inventory, containers, sandboxes) if inventory.known else inventory
    plan = plan_containers(containers, policy, inv, NOW)
    hints = [n for n in plan.notes if "terminated pod(s)" in n]
    if not note:
        assert hints == [], hints
        return
    [hint] = hints
    assert hint.startswith(note), hint
    assert hint.endswith(
        "deleting those pods (kubectl delete pod, or their owner's TTL or history limit) "
        "frees them, or --include-terminated-pods treats terminated pods as gone now."
    )
    again = plan_containers(
        containers, ContainerGCPolicy(include_terminated_pods=True), inv, NOW
    )  # what the hint says would change it does
    held = {k.id for k in plan.kept if k.rule in ("within-limits", "guard-newest-record")}
    assert held <= {a.id for a in again.actions}
