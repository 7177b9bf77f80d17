"""The kubelet's sandbox GC rules (evictSandboxes) as table-driven planner tests."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from kubegc_cli.core.model import Container, Sandbox, SandboxState
from kubegc_cli.core.pods import NO_POD_SOURCE, PodInfo, PodInventory, inventory_of
from kubegc_cli.policy.sandboxes import plan_sandboxes
from tests.unit.factories import NOW, S, ctr


def sb(sid: str, uid: str, age_s: float, state: str = "NOTREADY", attempt: int = 0) -> Sandbox:
    return Sandbox(
        id=sid,
        name=f"pod-{uid}",
        namespace="default",
        uid=uid,
        attempt=attempt,
        state=SandboxState(state),
        created_at=NOW - int(age_s * S),
    )


def in_sandbox(cid: str, sandbox_id: str, state: str = "EXITED") -> Container:
    c = ctr(cid, state=state)
    return Container(**{**{f: getattr(c, f) for f in c.__slots__}, "pod_sandbox_id": sandbox_id})


def pods(*uids: str, phase: str = "Running") -> PodInventory:
    return inventory_of(PodInfo(u, "default", f"pod-{u}", phase) for u in uids)


@dataclass
class Case:
    name: str
    sandboxes: list[Sandbox]
    removed: set[str]
    containers: list[Container] = field(default_factory=list)
    inventory: PodInventory = NO_POD_SOURCE
    include_terminated: bool = False
    kept: dict[str, str] = field(default_factory=dict)


CASES = [
    Case(
        "pod A exists: older NOTREADY sandboxes go, the READY newest stays",
        [sb("s1", "A", 300), sb("s2", "A", 200), sb("s3", "A", 100, "READY", attempt=2)],
        {"s1", "s2"},
        inventory=pods("A"),
        kept={"s3": "ready"},
    ),
    Case(
        "pod B exists, no containers: the newest sandbox stays even when dead",
        [sb("s1", "B", 300), sb("s2", "B", 200, attempt=1)],
        {"s1"},
        inventory=pods("B"),
        kept={"s2": "newest-of-pod"},
    ),
    Case(
        "pod C deleted: a sandbox holding an exited container stays, the empty one goes",
        [sb("s1", "C", 300), sb("s2", "C", 200, attempt=1)],
        {"s2"},
        containers=[in_sandbox("c1", "s1")],
        inventory=pods("other"),
        kept={"s1": "has-containers"},
    ),
    Case(
        "pod C deleted and its container removed first: both go",
        [sb("s1", "C", 300), sb("s2", "C", 200, attempt=1)],
        {"s1", "s2"},
        inventory=pods("other"),
    ),
    Case(
        "a single sandbox of an existing pod is never removed",
        [sb("s1", "D", 3000)],
        set(),
        inventory=pods("D"),
    ),
    Case(
        "no pod source: only older sandboxes go, deleted or not",
        [sb("s1", "E", 300), sb("s2", "E", 200, attempt=1)],
        {"s1"},
    ),
    Case(
        "a deleted pod's READY sandbox is never removed",
        [sb("s1", "F", 300, "READY")],
        set(),
        inventory=pods("other"),
    ),
    Case(
        "terminated pods lose their newest only with --include-terminated-pods",
        [sb("s1", "G", 300), sb("s2", "G", 200, attempt=1)],
        {"s1", "s2"},
        inventory=pods("G", phase="Succeeded"),
        include_terminated=True,
    ),
    Case(
        "a sandbox created seconds ago, not READY yet, is the newest: kept",
        [sb("s1", "H", 3000), sb("s2", "H", 1, attempt=1)],
        {"s1"},
        inventory=pods("H"),
        kept={"s2": "newest-of-pod"},
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_sandbox_gc_rules(case: Case) -> None:
    plan = plan_sandboxes(
        case.sandboxes,
        case.containers,
        case.inventory,
        NOW,
        include_terminated_pods=case.include_terminated,
    )
    assert {a.id for a in plan.actions} == case.removed
    kept = {k.id: k.rule for k in plan.kept}
    for sid, rule in case.kept.items():
        assert kept[sid] == rule
    assert {a.id for a in plan.actions} | set(kept) == {s.id for s in case.sandboxes}


def test_sandbox_action_json_shape() -> None:
    plan = plan_sandboxes([sb("s1", "B", 300), sb("s2", "B", 200)], [], pods("B"), NOW)
    doc = plan.to_dict()
    assert doc["kind"] == "SandboxGCPlan"
    (a,) = doc["actions"]
    assert a["kind"] == "sandbox" and a["id"] == "s1"
    for key in ("pod_uid", "pod_namespace", "pod_name", "attempt", "state", "created_at",
                "container_count", "reason", "result"):  # fmt: skip
        assert key in a
