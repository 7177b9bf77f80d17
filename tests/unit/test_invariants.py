"""The safety rules as properties over generated node states (hypothesis).

Every planner in `kubegc_cli.policy` (containers, sandboxes, logs, images) is run on random
nodes — containers in every state, sandboxes READY or not, images in use, pinned or
protected, pod sources known or not — and the rules that must never bend are checked:

- never planned: a running container, a READY sandbox, a sandbox any container points at, an
  image used by any container, a pinned or protected (sandbox) image, the newest dead
  container of a live pod's evict unit (guard on), anything that depends on "pod deleted"
  when there is no pod source;
- the node-wide and per-unit limits hold after the plan;
- idempotence: planning again on the state the plan leaves plans nothing more;
- a dry run plans exactly what `--yes` then carries out, when nothing changed in between
  (`commands.gc.gc_containers` and `gc_sandboxes` against an in-memory runtime, with the
  real executors).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.model import (
    Container,
    ContainerState,
    Image,
    ImageRecord,
    Sandbox,
    SandboxState,
)
from kubegc_cli.core.plan import Plan, Result
from kubegc_cli.core.podlogs import LegacyLink, PodLogDir, container_id_from_link
from kubegc_cli.core.pods import NO_POD_SOURCE, PodInfo, PodInventory, inventory_of
from kubegc_cli.policy.containers import (
    KEEP_GUARD,
    KEEP_MIN_AGE,
    KEEP_OLDER_THAN,
    KEEP_RULES,
    ContainerGCPolicy,
    Scope,
    plan_containers,
)
from kubegc_cli.policy.images import ImageGCPolicy, plan_images
from kubegc_cli.policy.logs import link_state, plan_logs
from kubegc_cli.policy.sandboxes import plan_sandboxes
from tests.unit.factories import NOW, S, ctr
from tests.unit.memorycri import MemoryCri, use_runtime

POD_UIDS = ("u0", "u1", "u2", "u3", "u4", "")
NAMES = ("app", "init", "side")
IMAGE_IDS = tuple(f"sha256:{i:064x}" for i in range(8))
POD_RULES = frozenset({"deleted-pod", "terminated-pod"})


@dataclass(frozen=True)
class NodeState:
    """A generated node: what the runtime lists, and what the pod source says."""

    containers: tuple[Container, ...]
    sandboxes: tuple[Sandbox, ...]
    images: tuple[Image, ...]
    pods: PodInventory


def _ns_of(uid: str) -> str:
    return f"ns-{uid}" if uid else "default"


@st.composite
def sandboxes_st(draw: st.DrawFn) -> list[Sandbox]:
    """0–3 sandboxes per pod, READY or not, of any age."""
    out: list[Sandbox] = []
    for uid in POD_UIDS:
        if not uid:
            continue
        for attempt in range(draw(st.integers(0, 3))):
            out.append(
                Sandbox(
                    id=f"sb-{uid}-{attempt}",
                    name=f"pod-{uid}",
                    namespace=_ns_of(uid),
                    uid=uid,
                    attempt=attempt,
                    state=draw(st.sampled_from(SandboxState)),
                    created_at=NOW - draw(st.integers(1, 5000)) * S,
                )
            )
    return out


@st.composite
def containers_st(draw: st.DrawFn, sandboxes: list[Sandbox]) -> list[Container]:
    """Kubelet-labelled containers in every state; each points at one of its pod's sandboxes
    (or at one the runtime does not list) and uses an image by ID or by reference."""
    out: list[Container] = []
    # The pods of some UIDs are "shared/web-0", one pod deleted and recreated under the same
    # name (each time another UID): in the table their units' containers come together.
    reused = draw(st.sets(st.sampled_from([u for u in POD_UIDS if u]), max_size=3))
    for i in range(draw(st.integers(0, 30))):
        uid = draw(st.sampled_from(POD_UIDS))
        own = [s.id for s in sandboxes if s.uid == uid] or [f"sb-{uid}-missing"]
        image = draw(st.sampled_from(IMAGE_IDS))
        by_ref = draw(st.booleans())
        c = ctr(
            f"ctr{i:05d}",
            uid=uid,
            name=draw(st.sampled_from(NAMES)),
            attempt=draw(st.integers(0, 5)),
            state=draw(st.sampled_from(["EXITED", "CREATED", "UNKNOWN", "RUNNING"])),
            age_s=draw(st.integers(1, 10_000)),
            ns="shared" if uid in reused else _ns_of(uid),
            pod="web-0" if uid in reused else None,
            log_bytes=draw(st.sampled_from([None, 0, 10, 1000])),
        )
        out.append(
            replace(
                c,
                pod_sandbox_id=draw(st.sampled_from(own)),
                image_id="" if by_ref else image,
                image_ref=image if by_ref else "",
            )
        )
    return out


@st.composite
def inventories(draw: st.DrawFn) -> PodInventory:
    """No pod source, or one that lists some pods (any phase, some evicted or being deleted)."""
    if not draw(st.booleans()):
        return NO_POD_SOURCE
    pods = []
    for uid in POD_UIDS:
        if uid and draw(st.booleans()):
            pods.append(
                PodInfo(
                    uid=uid,
                    namespace=_ns_of(uid),
                    name=f"pod-{uid}",
                    phase=draw(st.sampled_from(["Running", "Pending", "Succeeded", "Failed", ""])),
                    content_removable=draw(st.booleans()),
                )
            )
    return inventory_of(pods, source="generated")


@st.composite
def node_states(draw: st.DrawFn) -> NodeState:
    """A whole node: sandboxes, containers pointing into them, images, and a pod source."""
    sandboxes = draw(sandboxes_st())
    containers = draw(containers_st(sandboxes))
    images = tuple(
        Image(
            id=iid,
            repo_tags=(f"registry.example/img{i}:v1",),
            size=draw(st.integers(0, 5000)),
            pinned=draw(st.booleans()),
        )
        for i, iid in enumerate(IMAGE_IDS)
        if draw(st.integers(0, 3))  # about a quarter of the images are absent
    )
    return NodeState(tuple(containers), tuple(sandboxes), images, draw(inventories()))


CONTAINER_POLICIES = st.builds(
    ContainerGCPolicy,
    min_age=st.sampled_from([0.0, 60.0, 3600.0]),
    max_per_pod_container=st.integers(-1, 3),
    max_containers=st.integers(-1, 12),
    match_kubelet=st.booleans(),
    include_terminated_pods=st.booleans(),
)


def _newest_key(c: Container) -> tuple[int, int, str]:
    return (c.created_at, c.attempt, c.id)


def _released(pods: PodInventory, uid: str, include_terminated: bool) -> bool:
    """The pod source says this pod's content may go (so its unit has no guard)."""
    return pods.is_deleted(uid) or (include_terminated and pods.is_terminated(uid))


def _alive_marked(node: NodeState) -> PodInventory:
    """The node's pod source with its pods alive here marked, as `against_runtime` marks them
    (without its refusal of a source that cannot be this node's, to keep every state)."""
    if not node.pods.known:
        return node.pods
    alive = {c.pod_uid for c in node.containers if c.state is ContainerState.RUNNING}
    alive |= {s.uid for s in node.sandboxes if s.state is SandboxState.READY}
    return replace(node.pods, alive=frozenset(alive - {""}))


def _alive_pods_not_released(plan: Plan[Any], pods: PodInventory) -> None:
    """No action takes a pod alive on the node as deleted or terminated."""
    for a in plan.actions:
        if a.rule in POD_RULES:
            uid = a.container.pod_uid if hasattr(a, "container") else a.sandbox.uid
            assert uid not in pods.alive, f"{a.id} of a pod alive here planned as {a.rule}"


def _ids(actions: Iterable[Any]) -> set[str]:
    return {a.id for a in actions}


# ---- containers ----


@settings(max_examples=200, deadline=None)
@given(node_states(), CONTAINER_POLICIES)
def test_container_plan_never_takes_what_must_stay(
    node: NodeState, policy: ContainerGCPolicy
) -> None:
    ready = frozenset(s.id for s in node.sandboxes if s.state is SandboxState.READY)
    plan = plan_containers(node.containers, policy, _alive_marked(node), NOW, ready_sandboxes=ready)
    _alive_pods_not_released(plan, _alive_marked(node))
    by_id = {c.id: c for c in node.containers}
    planned = _ids(plan.actions)
    may_start = {
        c.id
        for c in node.containers
        if c.state is ContainerState.CREATED and c.pod_sandbox_id in ready
    }
    assert not planned & may_start, "a CREATED container in a READY sandbox was planned"
    dead = {c.id for c in node.containers if c.state is not ContainerState.RUNNING}
    assert planned <= dead, "a running container was planned"
    assert not planned & _ids(plan.kept) and planned | _ids(plan.kept) == dead
    min_age_ns = int(policy.min_age * S)
    assert all(NOW - by_id[i].created_at >= min_age_ns for i in planned)
    if not node.pods.known:
        assert not {a.rule for a in plan.actions} & POD_RULES
    # The guard: every live pod's evict unit keeps its newest dead container.
    if not policy.match_kubelet:
        newest: dict[tuple[str, str], Container] = {}
        for c in node.containers:
            if c.id not in dead or _released(node.pods, c.pod_uid, policy.include_terminated_pods):
                continue
            unit = (c.pod_uid, c.name)
            if unit not in newest or _newest_key(c) > _newest_key(newest[unit]):
                newest[unit] = c
        assert not planned & _ids(newest.values()), "a live pod's newest record was planned"


@settings(max_examples=200, deadline=None)
@given(node_states(), CONTAINER_POLICIES)
def test_container_limits_hold_after_the_plan(node: NodeState, policy: ContainerGCPolicy) -> None:
    """What stays of the candidates obeys MaxPerPodContainer and MaxContainers; the only
    excess is the guard's records, at most one per unit, each its unit's newest."""
    plan = plan_containers(node.containers, policy, node.pods, NOW)
    kubelet = plan_containers(node.containers, replace(policy, match_kubelet=True), node.pods, NOW)
    guarded = {k.id for k in plan.kept if k.rule == KEEP_GUARD}
    # The guard only takes removals back; everything else is the kubelet's plan.
    assert _ids(plan.actions) == _ids(kubelet.actions) - guarded
    assert not guarded or not policy.match_kubelet
    assert {a.id: a.rule for a in plan.actions} == {
        a.id: a.rule for a in kubelet.actions if a.id not in guarded
    }
    candidates = [
        k.container for k in plan.kept if k.rule not in (KEEP_MIN_AGE, KEEP_GUARD)
    ]  # dead, old enough, not removed and not held only by the guard
    per_unit: dict[tuple[str, str], list[Container]] = {}
    for c in candidates:
        per_unit.setdefault((c.pod_uid, c.name), []).append(c)
    if policy.max_per_pod_container >= 0:
        assert all(len(m) <= policy.max_per_pod_container for m in per_unit.values())
    if policy.max_containers >= 0:
        assert len(candidates) <= policy.max_containers
    guard_units: dict[tuple[str, str], int] = {}
    for k in plan.kept:
        if k.rule == KEEP_GUARD:
            unit = (k.container.pod_uid, k.container.name)
            guard_units[unit] = guard_units.get(unit, 0) + 1
            same_unit = [
                c
                for c in node.containers
                if (c.pod_uid, c.name) == unit and c.state is not ContainerState.RUNNING
            ]
            assert k.container == max(same_unit, key=_newest_key)
    assert all(n == 1 for n in guard_units.values())


def _rules_read_plainly(
    containers: Iterable[Container], policy: ContainerGCPolicy, pods: PodInventory
) -> dict[str, str]:
    """Container ID → rule of every dead container, decided one container at a time straight
    from the kubelet's steps (KUBELET-SEMANTICS §a) plus kubegc's guard: the reference the
    planner's index arithmetic is held to."""
    rule: dict[str, str] = {}
    units: dict[tuple[str, str], list[Container]] = {}
    for c in containers:
        if c.state is ContainerState.RUNNING:
            continue
        if NOW - c.created_at < int(policy.min_age * S):
            rule[c.id] = KEEP_MIN_AGE
        else:
            units.setdefault((c.pod_uid, c.name), []).append(c)
    for members in units.values():
        members.sort(key=_newest_key, reverse=True)
    young_units = {(c.pod_uid, c.name) for c in containers if rule.get(c.id) == KEEP_MIN_AGE}
    newest = {u: m[0] for u, m in units.items() if u not in young_units}
    released = set()
    for unit in list(units):
        if pods.known and pods.is_deleted(unit[0]):
            why = "deleted-pod"
        elif pods.known and policy.include_terminated_pods and pods.is_terminated(unit[0]):
            why = "terminated-pod"
        else:
            continue
        released.add(unit)
        for c in units.pop(unit):
            rule[c.id] = why
    if policy.max_per_pod_container >= 0:
        for unit, members in units.items():
            for c in members[policy.max_per_pod_container :]:
                rule[c.id] = "max-per-pod-container"
            units[unit] = members[: policy.max_per_pod_container]
    if policy.max_containers >= 0 and sum(map(len, units.values())) > policy.max_containers:
        share = max(1, policy.max_containers // len(units))
        for unit, members in units.items():
            for c in members[share:]:
                rule[c.id] = "max-containers-share"
            units[unit] = members[:share]
        rest = sorted((c for m in units.values() for c in m), key=_newest_key, reverse=True)
        for c in rest[policy.max_containers :]:
            rule[c.id] = "max-containers"
    for members in units.values():
        for c in members:
            rule.setdefault(c.id, "within-limits")
    if not policy.match_kubelet:
        for unit, c in newest.items():
            if unit not in released and rule[c.id] != "within-limits":
                rule[c.id] = KEEP_GUARD
    return rule


@settings(max_examples=300, deadline=None)
@given(node_states(), CONTAINER_POLICIES, st.none() | st.sampled_from([60.0, 3600.0]))
def test_container_plan_is_the_rules_read_plainly(
    node: NodeState, policy: ContainerGCPolicy, older: float | None
) -> None:
    """Every dead container gets the rule a one-at-a-time reading of the kubelet's steps gives
    it (with `--older-than`, a removal of a container finished more recently is kept for
    that), and the plan lists them in table order (namespace, pod, container, then oldest
    first)."""
    plan = plan_containers(node.containers, policy, node.pods, NOW, Scope(older_than=older))
    got = {a.id: a.rule for a in (*plan.actions, *plan.kept)}
    expected = _rules_read_plainly(node.containers, policy, node.pods)
    if older is not None:
        for c in node.containers:
            recent = NOW - (c.finished_at or c.created_at) < int(older * S)
            if recent and expected.get(c.id) not in (None, *KEEP_RULES):
                expected[c.id] = KEEP_OLDER_THAN
    assert got == expected
    for entries in (plan.actions, plan.kept):
        order = [
            (c.pod_namespace, c.pod_name, c.container_name, c.created_at, c.attempt, c.id)
            for c in (a.container for a in entries)
        ]
        assert order == sorted(order)


def _left(containers: Iterable[Container], plan: Plan[Any]) -> list[Container]:
    gone = _ids(plan.actions)
    return [c for c in containers if c.id not in gone]


@settings(max_examples=200, deadline=None)
@given(node_states(), CONTAINER_POLICIES)
def test_container_plan_is_idempotent(node: NodeState, policy: ContainerGCPolicy) -> None:
    first = plan_containers(node.containers, policy, node.pods, NOW)
    left = _left(node.containers, first)
    second = plan_containers(left, policy, node.pods, NOW)
    assert second.actions == [], [a.to_dict() for a in second.actions]
    assert _ids(second.kept) == _ids(first.kept)


@settings(max_examples=200, deadline=None)
@given(
    node_states(),
    CONTAINER_POLICIES,
    st.frozensets(st.sampled_from([_ns_of(u) for u in POD_UIDS]), max_size=2),
)
def test_scope_only_narrows(
    node: NodeState, policy: ContainerGCPolicy, nss: frozenset[str]
) -> None:
    """-n never adds a removal and never changes why one is made."""
    whole = {a.id: a.rule for a in plan_containers(node.containers, policy, node.pods, NOW).actions}
    scoped = plan_containers(node.containers, policy, node.pods, NOW, Scope(namespaces=nss))
    assert all(whole.get(a.id) == a.rule for a in scoped.actions)
    if nss:
        assert all(a.container.pod_namespace in nss for a in scoped.actions)
        assert len(scoped.actions) + scoped.out_of_scope == len(whole)


# ---- sandboxes ----


def _check_sandbox_plan(
    plan: Plan[Any],
    sandboxes: Iterable[Sandbox],
    containers: Iterable[Container],
    pods: PodInventory,
    include_terminated: bool,
) -> None:
    """The sandbox rules that never bend, for `plan` made from these inputs."""
    planned = _ids(plan.actions)
    referenced = {c.pod_sandbox_id for c in containers}
    sbx = list(sandboxes)
    for s in sbx:
        if s.id in planned:
            assert s.state is not SandboxState.READY, "a READY sandbox was planned"
            assert s.id not in referenced, "a sandbox a container points at was planned"
    if not pods.known:
        assert not {a.rule for a in plan.actions} & POD_RULES
    # Of a pod that is not gone, the newest sandbox always stays.
    newest: dict[str, Sandbox] = {}
    for s in sbx:
        if s.uid not in newest or (s.created_at, s.attempt, s.id) > (
            newest[s.uid].created_at,
            newest[s.uid].attempt,
            newest[s.uid].id,
        ):
            newest[s.uid] = s
    for uid, s in newest.items():
        if not _released(pods, uid, include_terminated):
            assert s.id not in planned, "the newest sandbox of a live pod was planned"


@settings(max_examples=200, deadline=None)
@given(node_states(), st.booleans())
def test_sandbox_plan_rules_and_idempotence(node: NodeState, include_terminated: bool) -> None:
    plan = plan_sandboxes(
        node.sandboxes, node.containers, node.pods, NOW, include_terminated_pods=include_terminated
    )
    _check_sandbox_plan(plan, node.sandboxes, node.containers, node.pods, include_terminated)
    marked = _alive_marked(node)
    _alive_pods_not_released(
        plan_sandboxes(
            node.sandboxes, node.containers, marked, NOW, include_terminated_pods=include_terminated
        ),
        marked,
    )
    left = [s for s in node.sandboxes if s.id not in _ids(plan.actions)]
    again = plan_sandboxes(
        left, node.containers, node.pods, NOW, include_terminated_pods=include_terminated
    )
    assert again.actions == []


@settings(max_examples=300, deadline=None)
@given(node_states(), CONTAINER_POLICIES)
def test_containers_then_sandboxes_as_gc_all_plans_them(
    node: NodeState, policy: ContainerGCPolicy
) -> None:
    """`gc all` plans sandboxes on the containers the first stage leaves: no sandbox a
    remaining container points at goes, and a second pass over what is left finds nothing."""
    it = policy.include_terminated_pods
    pc = plan_containers(node.containers, policy, node.pods, NOW)
    left = _left(node.containers, pc)
    ps = plan_sandboxes(node.sandboxes, left, node.pods, NOW, include_terminated_pods=it)
    _check_sandbox_plan(ps, node.sandboxes, left, node.pods, it)
    sandboxes_left = [s for s in node.sandboxes if s.id not in _ids(ps.actions)]
    assert plan_containers(left, policy, node.pods, NOW).actions == []
    again = plan_sandboxes(sandboxes_left, left, node.pods, NOW, include_terminated_pods=it)
    assert again.actions == []


# ---- logs ----


@st.composite
def log_inputs(draw: st.DrawFn, node: NodeState) -> tuple[list[PodLogDir], list[LegacyLink]]:
    """Pod log directories of known and unknown pods (some with a mount below), and dangling
    legacy links naming a container that exists, one that does not, an ambiguous ID prefix,
    or no ID at all — as `kubegc_cli.commands.gc` builds them."""
    dirs = []
    for uid in (*POD_UIDS[:-1], "u-gone"):
        if draw(st.booleans()):
            name = f"{_ns_of(uid)}_pod-{uid}_{uid}"
            dirs.append(
                PodLogDir(
                    name=name,
                    path=f"/host/var/log/pods/{name}",
                    uid=uid,
                    bytes=draw(st.integers(0, 10_000)),
                    is_symlink=False,
                    mount=draw(st.sampled_from(["", f"/var/log/pods/{name}/vol"])),
                )
            )
    links = []
    ids = [c.id for c in node.containers]
    for j in range(draw(st.integers(0, 6))):
        cid = draw(
            st.one_of(
                st.sampled_from(ids) if ids else st.just("0123456789ab"),
                st.just("ctr000"),  # a prefix of many IDs: ambiguous
                st.just("deadbeefcafe"),  # a container the runtime never had
                st.just(""),  # no ID in the name
            )
        )
        name = f"pod_{'ns'}_c{j}-{cid}.log" if cid else f"garbage{j}.log"
        parsed = container_id_from_link(name)
        links.append(
            LegacyLink(
                name,
                f"/host/var/log/containers/{name}",
                parsed,
                link_state(parsed, node.containers) if parsed else "",
            )
        )
    return dirs, links


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_log_plan_rules_and_idempotence(data: st.DataObject) -> None:
    node = data.draw(node_states())
    dirs, links = data.draw(log_inputs(node))

    def plan(d: list[PodLogDir], lk: list[LegacyLink]) -> Plan[Any]:
        return plan_logs(
            d, lk, node.containers, node.pods, NOW,
            pod_logs_dir="/var/log/pods", container_logs_dir="/var/log/containers",
        )  # fmt: skip

    first = plan(dirs, links)
    live_uids = {c.pod_uid for c in node.containers}
    for a in first.actions:
        if a.kind == "pod-log-dir":
            assert node.pods.known, "a pod log directory went without a pod source"
            assert node.pods.is_deleted(a.pod_uid)
            assert a.pod_uid not in live_uids, "the log directory of a pod with containers"
            d = next(d for d in dirs if d.path == a.local_path)
            assert not d.mount, "a directory with a mount point below it"
        else:
            link = next(lk for lk in links if lk.path == a.local_path)
            matches = [c for c in node.containers if link.container_id
                       and c.id.startswith(link.container_id)]  # fmt: skip
            if len(matches) == 1:
                assert matches[0].state is ContainerState.EXITED, "a live container's link"
            assert len(matches) <= 1, "a link whose ID prefix is ambiguous"
    gone = {a.local_path for a in first.actions}
    second = plan(
        [d for d in dirs if d.path not in gone], [lk for lk in links if lk.path not in gone]
    )
    assert second.actions == []


# ---- images ----


@st.composite
def image_policies(draw: st.DrawFn) -> ImageGCPolicy:
    """Valid image GC policies (as `ImageGCPolicy.validate` accepts them)."""
    high = draw(st.integers(1, 100))
    low = draw(st.integers(0, high - 1))
    min_age = float(draw(st.sampled_from([0, 60, 120, 3600])))
    max_age = float(draw(st.sampled_from([0, min_age + 60, min_age + 7200])))
    keep = tuple(draw(st.lists(st.sampled_from(["registry.example/img1:*", "*img6*"]), max_size=1)))
    policy = ImageGCPolicy(high, low, min_age, max_age, draw(st.booleans()), keep)
    policy.validate()
    return policy


@st.composite
def image_records(draw: st.DrawFn) -> dict[str, ImageRecord]:
    records = {}
    for iid in IMAGE_IDS:
        if draw(st.booleans()):
            first = NOW - draw(st.integers(0, 20_000)) * S
            last = draw(st.sampled_from([0, first, NOW - draw(st.integers(0, 20_000)) * S]))
            records[iid] = ImageRecord(first, max(last, 0))
    return records


@settings(max_examples=200, deadline=None)
@given(
    node_states(),
    image_policies(),
    image_records(),
    st.integers(1, 10_000).map(lambda n: n * 100),  # capacity, whole hundreds of bytes
    st.integers(0, 100),
    st.frozensets(st.sampled_from(IMAGE_IDS), max_size=2),
    st.integers(0, 30_000),
)
def test_image_plan_rules_and_idempotence(
    node: NodeState,
    policy: ImageGCPolicy,
    records: dict[str, ImageRecord],
    capacity: int,
    available_pct: int,
    protected: frozenset[str],
    collecting_for_s: int,
) -> None:
    import fnmatch

    available = capacity * available_pct // 100
    began = NOW - collecting_for_s * S

    def plan(images: Iterable[Image], recs: Mapping[str, ImageRecord], avail: int) -> Any:
        return plan_images(
            images, node.containers, recs, policy, NOW, began=began,
            capacity=capacity, available=avail, protected=protected,
        )  # fmt: skip

    first = plan(node.images, records, available)
    in_use = {c.image_id or c.image_ref for c in node.containers}  # exited ones too
    for d in first.remove:
        img = d.image
        assert img.id not in in_use, "an image used by a container was planned"
        assert not img.pinned and img.id not in protected
        assert not any(fnmatch.fnmatchcase(t, p) for t in img.repo_tags for p in policy.keep)
        if d.rule == "max-age":
            assert NOW - d.record.last_used > policy.max_age * S
        else:
            assert NOW - d.record.first_detected >= policy.min_age * S
    # Idempotence: the images gone, their bytes back on the filesystem, the records kept.
    removed = {d.image.id for d in first.remove}
    freed = sum(d.image.size for d in first.remove)
    records_left = {i: r for i, r in first.records.items() if i not in removed}
    second = plan(
        [i for i in node.images if i.id not in removed],
        records_left,
        min(capacity, available + freed),
    )
    assert second.remove == [], [d.to_dict() for d in second.remove]


# ---- dry run == --yes, through the app and the real executors ----


class QuietUi:
    """A `Ui` that records warnings and never asks."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def info(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def show_plan(self, plan: Any) -> None:
        pass

    def interactive(self) -> bool:
        return False

    def confirm(self, question: str) -> bool:
        return False


def _settings(tmp: Path, pods: PodInventory) -> Any:
    from kubegc_cli.core.settings import Settings

    pods_file = None
    if pods.known:
        pods_file = tmp / "pods.json"
        items = [
            {"kind": "Pod", "metadata": {"uid": p.uid, "name": p.name, "namespace": p.namespace},
             "status": {"phase": p.phase, **({"reason": "Evicted"} if p.content_removable else {})}}
            for p in pods.pods.values()
        ]  # fmt: skip
        pods_file.write_text(json.dumps({"kind": "PodList", "items": items}))
    return Settings(
        runtime_endpoint="unix:///memory.sock", host_root=tmp, state_dir=tmp / "state",
        pod_source="file" if pods_file else "none", pods_file=pods_file, now=NOW, env={},
    )  # fmt: skip


def _comparable(plan: Plan[Any]) -> list[tuple[str, str, str, str]]:
    return [(a.kind, a.id, a.rule, a.reason) for a in plan.actions]


# Each command with something to remove, whatever hypothesis draws: an unused image, a dead
# container beyond MaxPerPodContainer, an older NOTREADY sandbox of a pod.
_ACTING_NODE = NodeState(
    containers=(
        ctr("old", attempt=0, age_s=900),
        ctr("new", attempt=1, age_s=600),
        replace(ctr("run", attempt=2, age_s=300, state="RUNNING"), pod_sandbox_id="sb-2"),
    ),
    sandboxes=(
        Sandbox("sb-1", "pod-uid-p", "default", "uid-p", 0, SandboxState.NOTREADY, NOW - 1000 * S),
        Sandbox("sb-2", "pod-uid-p", "default", "uid-p", 1, SandboxState.READY, NOW - 400 * S),
    ),
    images=(Image(id=IMAGE_IDS[0], repo_tags=("registry.example/unused:v1",), size=10),),
    pods=NO_POD_SOURCE,
)


@settings(max_examples=80, deadline=None)
@given(node_states(), CONTAINER_POLICIES, st.sampled_from(["containers", "sandboxes", "images"]))
@example(_ACTING_NODE, ContainerGCPolicy(), "containers")
@example(_ACTING_NODE, ContainerGCPolicy(), "sandboxes")
@example(_ACTING_NODE, ContainerGCPolicy(), "images")
def test_dry_run_plan_is_the_executed_plan(
    node: NodeState, policy: ContainerGCPolicy, command: str
) -> None:
    from kubegc_cli.commands import gc as app
    from kubegc_cli.node.state import read_history

    def run(act: Any, cri: MemoryCri, s: Any) -> Plan[Any]:
        from kubegc_cli.node.state import release_run_lock

        try:
            with use_runtime(cri):
                if command == "containers":
                    return app.gc_containers(s, policy, Scope(), act, QuietUi())
                if command == "images":  # (every unused image past MinAge 0: no usage read)
                    images = ImageGCPolicy(min_age=0, prune_unused=True)
                    return app.gc_images(s, images, act, QuietUi())
                return app.gc_sandboxes(s, policy.include_terminated_pods, Scope(), act, QuietUi())
        finally:
            release_run_lock()  # as the command line does after every command

    def fresh() -> MemoryCri:
        return MemoryCri(
            {c.id: c for c in node.containers},
            {s.id: s for s in node.sandboxes},
            images={i.id: i for i in node.images},
        )

    pods = node.pods
    running = sorted({c.pod_uid for c in node.containers if c.state is ContainerState.RUNNING})
    if pods.known and running and not set(running) & set(pods.pods):
        # Mostly plan with a pod source that covers the node (one that does not is refused,
        # checked in the other examples); the app reads it from a PodList file.
        uid = running[0]
        pods = inventory_of([*pods.pods.values(), PodInfo(uid, _ns_of(uid), f"pod-{uid}")])
    with tempfile.TemporaryDirectory() as tmp:
        s = _settings(Path(tmp), pods)
        dry_cri, wet_cri = fresh(), fresh()
        try:
            dry = run(app.ActOptions(dry_run=True), dry_cri, s)
        except BadInput:  # --include-terminated-pods without a source, or a source that
            try:  # lists none of the running pods: refused alike, nothing removed
                run(app.ActOptions(yes=True), wet_cri, s)
            except BadInput:
                assert dry_cri.removed == wet_cri.removed == []
                event("refused before planning")
                return
            raise AssertionError("--yes acted where the dry run was refused") from None
        wet = run(app.ActOptions(yes=True), wet_cri, s)
        event(f"{command}: acted" if wet.actions else f"{command}: nothing to do")
        assert dry_cri.removed == [] and dry.dry_run and not wet.dry_run
        assert _comparable(dry) == _comparable(wet)
        assert [(k.id, k.rule) for k in dry.kept] == [(k.id, k.rule) for k in wet.kept]
        assert all(a.result is Result.REMOVED for a in wet.actions), [
            (a.id, a.result, a.error) for a in wet.actions
        ]
        assert sorted(wet_cri.removed) == sorted(a.id for a in dry.actions)
        history = read_history(s.state_dir, 5)
        if wet.actions:  # a row per action, in the order the actions completed
            assert sorted((a["id"], a["result"]) for a in history[0]["actions"]) == sorted(
                (a.id, "removed") for a in wet.actions
            )
        else:
            assert history == []  # nothing to do: no run, no lock, no audit rows


@dataclass
class _IncompleteCri(MemoryCri):
    """`MemoryCri` whose `fail_on`-th inventory call (an unfiltered ListContainers,
    ListPodSandbox, the statuses `--older-than` reads) fails as an unreachable runtime's
    would; `calls` counts them (0 for `fail_on`: never fail). Calls after the first removal
    are not counted: by then the inventory has been read."""

    fail_on: int = 0
    calls: int = 0

    def _inventory_call(self, what: str) -> None:
        if self.removed:
            return
        self.calls += 1
        if self.calls == self.fail_on:
            raise RuntimeUnavailable(f"{what} on unix:///memory.sock failed: UNAVAILABLE")

    def list_containers(
        self,
        sandbox_id: str = "",
        labels: Mapping[str, str] | None = None,
        *,
        annotations: bool = True,
    ) -> list[Container]:
        if not sandbox_id and not labels:
            self._inventory_call("ListContainers")
        return super().list_containers(sandbox_id, labels, annotations=annotations)

    def list_sandboxes(self, labels: Mapping[str, str] | None = None) -> list[Sandbox]:
        if not labels:
            self._inventory_call("ListPodSandbox")
        return super().list_sandboxes(labels)

    def container_statuses(self, ids: Iterable[str]) -> Any:
        self._inventory_call("ContainerStatus")
        return super().container_statuses(ids)


@settings(max_examples=100, deadline=None)
@given(
    node_states(),
    CONTAINER_POLICIES,
    st.sampled_from(["containers", "sandboxes"]),
    st.none() | st.just(60.0),
)
def test_nothing_is_removed_from_an_incomplete_inventory(
    node: NodeState, policy: ContainerGCPolicy, command: str, older: float | None
) -> None:
    """Whichever inventory call fails — the lists, the statuses `--older-than` reads, the
    re-list right before acting — a `--yes` run stops with `RuntimeUnavailable` (exit 3) and
    removes nothing: a partial inventory is never planned on."""
    from kubegc_cli.commands import gc as app
    from kubegc_cli.node.state import release_run_lock

    policy = replace(policy, include_terminated_pods=False)
    scope = Scope(older_than=older)

    def run(cri: MemoryCri, s: Any) -> Plan[Any]:
        try:
            with use_runtime(cri):
                act = app.ActOptions(yes=True)
                if command == "containers":
                    return app.gc_containers(s, policy, scope, act, QuietUi())
                return app.gc_sandboxes(s, False, scope, act, QuietUi())
        finally:
            release_run_lock()

    def runtime(fail_on: int) -> _IncompleteCri:
        return _IncompleteCri(
            {c.id: c for c in node.containers}, {s.id: s for s in node.sandboxes}, fail_on=fail_on
        )

    with tempfile.TemporaryDirectory() as tmp:
        s = _settings(Path(tmp), NO_POD_SOURCE)
        counting = runtime(0)
        run(counting, s)  # every inventory call a whole run makes before its first removal
        for fail_on in range(1, counting.calls + 1):  # each of them failing in turn
            failing = runtime(fail_on)
            try:
                plan = run(failing, s)
            except RuntimeUnavailable:
                pass
            else:  # (a last-moment re-check that failed: the run reports what it did not do)
                assert plan.runtime_lost, f"inventory call {fail_on} failed, and the run went on"
                assert all(a.result is not Result.REMOVED for a in plan.actions)
            assert failing.removed == [], f"inventory call {fail_on} failed"
        event(f"{counting.calls} calls; the whole run removed {len(counting.removed)}")
