"""The kubelet's container garbage collection, as a pure planner.

Source of the rules: kubelet `kuberuntime_gc.go` (`evictContainers`, `evictableContainers`,
`enforceMaxContainersPerEvictUnit`). In short:

1. Candidates: every container not RUNNING (EXITED, CREATED and UNKNOWN alike) created at or
   before `now - MinAge`. Age counts from creation, not exit.
2. Candidates are grouped into evict units, keyed by (pod UID label, CRI metadata name), newest
   first.
3. If the pod source is known (`allSourcesReady`): units of deleted pods — and with
   `include_terminated_pods` (the kubelet's `evictNonDeletedPods`) units of pods in phase
   Succeeded/Failed — lose every candidate and drop out of the counting below.
4. MaxPerPodContainer (if >= 0): each unit keeps its newest N.
5. MaxContainers (if >= 0) and more candidates than that remain: every unit is cut to
   `max(1, MaxContainers // units)` (units emptied in step 4 still count), then, if still too
   many, the oldest overall go until MaxContainers remain.

kubegc adds one safety rule on top (off with `match_kubelet`): the newest dead container of an
evict unit whose pod is not known to be gone is never removed by steps 4–5. It is the record
that stops the kubelet from running a finished init container again.

Ties between equal creation times are broken by attempt, then ID (the kubelet's sort is
unstable, so any order is faithful; this one is deterministic).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any

from kubegc_cli.core.gcpause import cyclic_gc_paused
from kubegc_cli.core.model import (
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    ContainerState,
)
from kubegc_cli.core.plan import MAY_START, ContainerAction, Plan, Result, attach_layers
from kubegc_cli.core.pods import PodInventory
from kubegc_cli.core.units import NS_PER_SECOND, format_bytes, format_duration, format_go_duration
from kubegc_cli.policy.scope import Scope

EvictUnit = tuple[str, str]

RULE_DELETED = "deleted-pod"
RULE_TERMINATED = "terminated-pod"
RULE_PER_UNIT = "max-per-pod-container"
RULE_SHARE = "max-containers-share"
RULE_GLOBAL = "max-containers"
KEEP_MIN_AGE = "min-age"
KEEP_WITHIN = "within-limits"
KEEP_GUARD = "guard-newest-record"
KEEP_OLDER_THAN = "older-than"
KEEP_MAY_START = "may-start"
LIMIT_RULES = frozenset({RULE_PER_UNIT, RULE_SHARE, RULE_GLOBAL})
KEEP_RULES = frozenset({KEEP_MIN_AGE, KEEP_WITHIN, KEEP_GUARD, KEEP_OLDER_THAN, KEEP_MAY_START})
#: Why `apply` skips the newest dead container of a terminated pod that still exists.
TERMINATED_GUARD_REASON = (
    "the newest record of a pod that still exists (terminated, not deleted); apply "
    "--include-terminated-pods or --match-kubelet removes it"
)
GUARD_REASON = (
    "newest record of a live pod's container; the kubelet needs it (--match-kubelet removes it)"
)


@dataclass(frozen=True, slots=True)
class ContainerGCPolicy:
    """The kubelet's ContainerGCPolicy plus kubegc's options.

    `min_age` seconds (`--minimum-container-ttl-duration`, default 0 = no age limit);
    `max_per_pod_container` (`--maximum-dead-containers-per-container`, default 1, negative =
    unlimited); `max_containers` (`--maximum-dead-containers`, default -1 = unlimited).
    """

    min_age: float = 0.0
    max_per_pod_container: int = 1
    max_containers: int = -1
    match_kubelet: bool = False
    include_terminated_pods: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "minimum_container_ttl_duration": format_go_duration(self.min_age),
            "maximum_dead_containers_per_container": self.max_per_pod_container,
            "maximum_dead_containers": self.max_containers,
            "match_kubelet": self.match_kubelet,
            "include_terminated_pods": self.include_terminated_pods,
        }


# Newest first (reversed): creation time, then attempt, then ID.
_newest_first_key = attrgetter("created_at", "attempt", "id")


class _Unit:
    """One evict unit while it is planned: its dead containers newest first, and where the
    rules cut that list (indices into `members`).

    `members[:young]` are younger than MinAge (a prefix, being newest); of the candidates after
    them, `[young:within]` stay within the limits, `[within:share]` go to MaxContainers
    node-wide, `[share:per]` to the unit's share of MaxContainers, `[per:]` to
    MaxPerPodContainer. `released` is (rule, reason) when the pod is deleted (or terminated,
    if asked): then every candidate goes. `prefix` is its place in the table
    (`_table_prefix`).
    """

    __slots__ = ("members", "per", "prefix", "released", "share", "within", "young")

    def __init__(self, first: Container) -> None:
        self.members = [first]
        self.prefix = _table_prefix(first)  # (read now, while its labels are in the cache)
        self.young = 0
        self.released: tuple[str, str] | None = None
        self.per = self.share = self.within = 0


def _evict_units(containers: Iterable[Container], cutoff: int) -> list[_Unit]:
    """The dead containers grouped into evict units (pod UID label, CRI metadata name), each
    newest first with its MinAge prefix counted (created after `cutoff`, nanoseconds)."""
    running = ContainerState.RUNNING
    by_key: dict[EvictUnit, _Unit] = {}
    get = by_key.get
    for c in containers:
        if c.state is running:
            continue
        key = (c.labels.get(LABEL_POD_UID, ""), c.name)
        unit = get(key)
        if unit is None:
            by_key[key] = _Unit(c)
        else:
            unit.members.append(c)
    for unit in by_key.values():
        members = unit.members
        if len(members) > 1:
            members.sort(key=_newest_first_key, reverse=True)
        unit.per = unit.share = unit.within = len(members)
        if members[0].created_at > cutoff:  # (rare: a unit with a container under MinAge)
            for c in members:
                if c.created_at <= cutoff:
                    break
                unit.young += 1
    return list(by_key.values())


def _apply_limits(units: list[_Unit], policy: ContainerGCPolicy) -> int:
    """Set each live unit's cuts for MaxPerPodContainer, then MaxContainers (an equal share
    per unit, at least 1, then the oldest overall): kubelet `evictContainers`. Returns the
    share (0 when MaxContainers did not cut)."""
    live = [u for u in units if u.released is None and u.young < len(u.members)]
    if policy.max_per_pod_container >= 0:
        n = policy.max_per_pod_container
        for u in live:
            u.per = u.share = u.within = min(len(u.members), u.young + n)
    limit = policy.max_containers
    if limit < 0 or sum(u.per - u.young for u in live) <= limit:
        return 0
    # (units emptied by MaxPerPodContainer still count in the share, as in the kubelet)
    share = max(1, limit // len(live))
    for u in live:
        u.share = u.within = min(u.per, u.young + share)
    rest = [c for u in live for c in u.members[u.young : u.share]]
    if len(rest) <= limit:
        return share
    if limit == 0:
        for u in live:
            u.within = u.young
        return share
    rest.sort(key=_newest_first_key, reverse=True)
    last_kept = _newest_first_key(rest[limit - 1])
    for u in live:
        within = u.young
        while within < u.share and _newest_first_key(u.members[within]) >= last_kept:
            within += 1
        u.within = within
    return share


class _Reasons:
    """The reason texts of one plan's rules (made once per plan, shared by its actions)."""

    __slots__ = ("guard", "node_wide", "per_unit", "share")

    def __init__(self, policy: ContainerGCPolicy, share: int) -> None:
        self.guard = not policy.match_kubelet
        n, limit = policy.max_per_pod_container, policy.max_containers
        self.per_unit = f"beyond the newest {n} of its evict unit (MaxPerPodContainer)"
        self.share = f"beyond its evict unit's share {share} of MaxContainers {limit}"
        self.node_wide = f"oldest beyond MaxContainers {limit} node-wide"


WITHIN_REASON = "within MaxPerPodContainer/MaxContainers"
_Segment = tuple[int, int, str, str]  # members[start:end], rule, reason ("" for MinAge)


def _segments(u: _Unit, reasons: _Reasons) -> list[_Segment]:
    """What becomes of each of a unit's dead containers, as runs of `u.members` (newest
    first) sharing a rule: (start, end, rule, reason). A run is kept when its rule is a
    `KEEP_*` one; removed otherwise."""
    n, young = len(u.members), u.young
    out: list[_Segment] = []
    if young:
        out.append((0, young, KEEP_MIN_AGE, ""))
    if young == n:
        return out
    if u.released is not None:
        out.append((young, n, *u.released))
        return out
    start = young
    if u.within > young:
        out.append((young, u.within, KEEP_WITHIN, WITHIN_REASON))
        start = u.within
    elif reasons.guard and young == 0:
        # kubegc's guard: the newest dead container of a live pod's evict unit stays.
        out.append((0, 1, KEEP_GUARD, GUARD_REASON))
        start = 1
    for end, rule, why in (
        (u.share, RULE_GLOBAL, reasons.node_wide),
        (u.per, RULE_SHARE, reasons.share),
        (n, RULE_PER_UNIT, reasons.per_unit),
    ):
        if end > start:
            out.append((start, end, rule, why))
            start = end
    return out


_Run = tuple[bool, str, str]  # (kept, rule, reason): one object per plan for each pair


def _shape(
    u: _Unit, reasons: _Reasons, runs: dict[tuple[str, str], _Run]
) -> list[tuple[slice, _Run]]:
    """`_segments(u)` oldest first, as (slice of `u.members`, run) pairs. Units with the same
    counts and cuts share one shape (`plan_containers` keeps them by those numbers)."""
    out = []
    for start, end, rule, why in reversed(_segments(u, reasons)):
        run = runs.get((rule, why))
        if run is None:
            run = runs[(rule, why)] = (rule in KEEP_RULES, rule, why)
        out.append((slice(end - 1, start - 1 if start else None, -1), run))
    return out


class _Runs:
    """The containers of one of a plan's lists (removals or kept), in table order, with where
    each run of one rule and reason starts."""

    __slots__ = ("containers", "last", "starts")

    def __init__(self) -> None:
        self.containers: list[Container] = []
        self.starts: list[tuple[int, _Run]] = []
        self.last: _Run | None = None

    def add(self, cs: list[Container], run: _Run) -> None:
        if run is not self.last:
            self.starts.append((len(self.containers), run))
            self.last = run
        self.containers += cs

    def each(self) -> Iterator[tuple[list[Container], _Run]]:
        """Each run: its containers and (kept, rule, reason)."""
        cs, starts = self.containers, self.starts
        for i, (start, run) in enumerate(starts):
            end = starts[i + 1][0] if i + 1 < len(starts) else len(cs)
            yield cs[start:end], run


class _Emitter:
    """Appends a plan's actions and kept entries, applying the scope (`-n`, `--pod`, `-l`,
    `--older-than`) to each."""

    def __init__(
        self,
        plan: Plan[ContainerAction],
        scope: Scope,
        now: int,
        min_age: float,
        may_start: frozenset[str] = frozenset(),
    ):
        self.plan = plan
        self.may_start = may_start
        self.now = now
        self.selects = None if scope.everything else scope.selects
        self.older_ns = None if scope.older_than is None else int(scope.older_than * NS_PER_SECOND)
        self.older_why = f"newer than --older-than {format_go_duration(scope.older_than or 0)}"
        self.min_age = format_go_duration(min_age)

    def run(self, cs: Sequence[Container], rule: str, why: str) -> None:
        """Add containers `cs` (in table order) decided by `rule` for reason `why`."""
        plan, selects, kept = self.plan, self.selects, Result.KEPT
        if rule == KEEP_MIN_AGE:
            now, min_age = self.now, self.min_age
            for c in cs:
                if selects is None or selects(c):
                    age = format_duration((now - c.created_at) / NS_PER_SECOND)
                    why = f"created {age} ago, younger than MinAge {min_age}"
                    plan.kept.append(ContainerAction(c, rule, why, kept))
        elif rule in KEEP_RULES:
            if selects is None:
                plan.kept.extend([ContainerAction(c, rule, why, kept) for c in cs])
            else:
                plan.kept.extend([ContainerAction(c, rule, why, kept) for c in cs if selects(c)])
        elif selects is None and self.older_ns is None and not self.may_start:
            unknown, planned = ContainerState.UNKNOWN, Result.PLANNED
            # (positional arguments: container, rule, reason, result, error, stop_first)
            plan.actions.extend(
                [ContainerAction(c, rule, why, planned, "", c.state is unknown) for c in cs]
            )
        else:
            for c in cs:
                self._one_removal(c, rule, why)

    def _one_removal(self, c: Container, rule: str, why: str) -> None:
        plan, older_ns = self.plan, self.older_ns
        if self.selects is not None and not self.selects(c):
            plan.out_of_scope += 1
        elif c.id in self.may_start:
            plan.kept.append(ContainerAction(c, KEEP_MAY_START, MAY_START, Result.KEPT))
        elif older_ns is not None and self.now - (c.finished_at or c.created_at) < older_ns:
            plan.kept.append(ContainerAction(c, KEEP_OLDER_THAN, self.older_why, Result.KEPT))
        else:
            stop_first = c.state is ContainerState.UNKNOWN
            plan.actions.append(ContainerAction(c, rule, why, Result.PLANNED, "", stop_first))


@cyclic_gc_paused
def plan_containers(
    containers: Iterable[Container],
    policy: ContainerGCPolicy,
    pods: PodInventory,
    now: int,
    scope: Scope | None = None,
    *,
    ready_sandboxes: Collection[str] = frozenset(),
    layers: Mapping[str, tuple[int | None, int | None]] | None = None,
) -> Plan[ContainerAction]:
    """Plan the kubelet's container GC for one node.

    `containers` are every container the runtime lists (any state); `now` is nanoseconds since
    the epoch. Returns a `Plan` of kind `ContainerGCPlan` whose `actions` are the removals and
    whose `kept` lists every dead container left, with why; both in table order (pod
    namespace, pod name, container name, then oldest first: creation time, attempt).

    `ready_sandboxes`: the IDs of the READY sandboxes. A CREATED container in one, which the
    limits would remove, is kept instead (`may-start`): the kubelet may be about to start it,
    and CRI's RemoveContainer removes a running container by force (kubegc's rule; it counts
    toward the limits as the dead container it is).

    `layers`: the writable layers the runtime reports (CRI `ListContainerStats`, ID →
    (bytes, inodes)), given to every removal and kept container (`core.plan.attach_layers`)
    so that each one's `expected_bytes` and the notes count what removing it frees on disk
    (`core.sizes.container_bytes`); None: not read (layers unknown, counted 0).
    """
    scope = scope or Scope()
    cutoff = now - int(policy.min_age * NS_PER_SECOND)
    containers_seen = containers if isinstance(containers, list) else list(containers)
    created = ContainerState.CREATED
    may_start = (
        frozenset(
            c.id
            for c in containers_seen
            if c.state is created and c.pod_sandbox_id in ready_sandboxes
        )
        if ready_sandboxes
        else frozenset()
    )
    units = _evict_units(containers_seen, cutoff)

    # Step 1: deleted (and, if asked, terminated) pods lose every candidate.
    if pods.known:
        for u in units:
            if u.young == len(u.members):
                continue
            uid = u.members[0].labels.get(LABEL_POD_UID, "")
            if pods.is_deleted(uid):
                u.released = (RULE_DELETED, pods.deletion_reason(uid))
            elif policy.include_terminated_pods and pods.is_terminated(uid):
                u.released = (
                    RULE_TERMINATED,
                    f"pod is {pods.phase(uid)} (--include-terminated-pods)",
                )
    # Steps 2 and 3: MaxPerPodContainer, then MaxContainers.
    share = _apply_limits(units, policy)

    plan: Plan[ContainerAction] = Plan(
        kind="ContainerGCPlan",
        policy={**policy.to_dict(), "scope": scope.to_dict(), "pod_source": pods.source},
        now=now,
    )
    reasons = _Reasons(policy, share)
    out = _Emitter(plan, scope, now, policy.min_age, may_start)
    # Removals and kept entries are collected apart, each list in table order, unless
    # --older-than or may-start may turn a removal into a kept entry: then in one list, so
    # that entry takes its place in table order among the kept.
    kept = _Runs()
    removed = kept if out.older_ns is not None or may_start else _Runs()
    shapes: dict[tuple[Any, ...], list[tuple[slice, _Run]]] = {}
    runs: dict[tuple[str, str], _Run] = {}
    for group in _in_table_order(units):
        if len(group) == 1:
            u = group[0]
            key = (len(u.members), u.young, u.within, u.share, u.per, u.released)
            shape = shapes.get(key)
            if shape is None:
                shape = _shape(u, reasons, runs)
                if u.released is None:  # (a released unit's reason names its pod)
                    shapes[key] = shape
            members = u.members
            for cut, run in shape:
                (kept if run[0] else removed).add(members[cut], run)
        else:  # one container of pods recreated under the same name: merged, oldest first
            entries = [
                (c, run)
                for u in group
                for cut, run in _shape(u, reasons, runs)
                for c in u.members[cut]
            ]
            entries.sort(key=lambda e: _newest_first_key(e[0]))
            for c, run in entries:
                (kept if run[0] else removed).add([c], run)
    for taken in (removed, kept) if removed is not kept else (kept,):
        for cs, (_, rule, why) in taken.each():
            out.run(cs, rule, why)

    if layers is not None:
        attach_layers([*plan.actions, *plan.kept], layers)
        if zero := sum(1 for a in plan.actions if a.layer_bytes == 0):
            plan.notes.append(
                f"{zero} container(s) to remove report a writable layer of 0 bytes: the runtime "
                "may not have measured them yet (containerd does every 10 s after a container "
                "exits), so the bytes expected may be low"
            )
    plan.notes.extend(_notes(plan, policy, pods))
    plan.notes.extend(_unmatched_scope(containers_seen, scope))
    plan.notes.extend(_alive_but_disowned(containers_seen, pods))
    return plan


def _newest_dead_by_unit(
    containers: Iterable[Container], exclude: set[EvictUnit] | frozenset[EvictUnit] = frozenset()
) -> dict[EvictUnit, Container]:
    newest: dict[EvictUnit, Container] = {}
    for c in containers:
        if c.state is ContainerState.RUNNING:
            continue
        key = (c.labels.get(LABEL_POD_UID, ""), c.name)
        if key in exclude:
            continue
        best = newest.get(key)
        if best is None or _newest_first_key(c) > _newest_first_key(best):
            newest[key] = c
    return newest


def recheck_guard(
    plan: Plan[ContainerAction],
    fresh: Iterable[Container],
    policy: ContainerGCPolicy,
    also: Collection[str] = frozenset(),
) -> None:
    """Re-apply kubegc's guard to a fresh container list right before acting.

    If a unit's kept record vanished since the plan (the kubelet removed it, say), the newest
    remaining dead container of that unit is now its record: a planned limit-rule removal of it
    is marked `skipped`. Removals of deleted or terminated pods are not affected, except those
    whose IDs are in `also` (`apply`: a terminated pod that still exists, without
    `--include-terminated-pods`), which the guard holds as it holds the limit rules'.
    """
    if policy.match_kubelet:
        return
    guarded = [a for a in plan.actions if a.rule in LIMIT_RULES or a.id in also]
    limited = {
        (a.container.pod_uid, a.container.name): a for a in guarded if a.result is Result.PLANNED
    }
    if not limited:
        return
    by_id = {a.id: a for a in guarded}
    for key, c in _newest_dead_by_unit(fresh).items():
        if key in limited and c.id in by_id:
            a = by_id[c.id]
            a.result = Result.SKIPPED
            a.error = (
                TERMINATED_GUARD_REASON
                if a.id in also
                else "now the newest record of its evict unit (the kept one is gone)"
            )


_prefix_of = attrgetter("prefix")
_table_names = itemgetter(LABEL_POD_NAMESPACE, LABEL_POD_NAME, LABEL_CONTAINER_NAME)


def _table_prefix(c: Container) -> str:
    """Pod namespace, pod name and container name of `c` as one sortable string."""
    labels = c.labels
    try:
        return "\0".join(_table_names(labels))  # (a kubelet container has all three)
    except KeyError:
        names = (
            labels.get(LABEL_POD_NAMESPACE, ""),
            labels.get(LABEL_POD_NAME, ""),
            labels.get(LABEL_CONTAINER_NAME) or c.name,
        )
        return "\0".join(names)


def _in_table_order(units: list[_Unit]) -> Iterator[list[_Unit]]:
    """`units` in table order (pod namespace, pod name, container name), yielded in groups:
    units that share all three (a pod recreated under the same name) come as one group.

    The names were read once per unit (`_Unit.prefix`, from its first container listed: the
    attempts of one container carry the same labels); units are sorted by them as one string
    (faster than tuples).
    """
    group: list[_Unit] = []
    last = None
    for u in sorted(units, key=_prefix_of):
        if u.prefix != last:
            if group:
                yield group
            group, last = [], u.prefix
        group.append(u)
    if group:
        yield group


def _alive_but_disowned(containers: list[Container], pods: PodInventory) -> list[str]:
    """A pod the source disowns (gone from it, evicted, or being deleted) that is alive here
    (`PodInventory.alive`): kept as existing; maybe a stale or partial pod source."""
    if not pods.alive:
        return []
    shown = {
        (c.pod_namespace, c.pod_name) for c in containers if pods.alive_though_disowned(c.pod_uid)
    }
    return [
        f"Pod {ns}/{name} is gone from the pod source (or evicted, or being deleted) but is "
        "alive on this node (a running container or a READY sandbox): its containers are "
        "treated as a live pod's (just now? a stale or partial pod source?)."
        for ns, name in sorted(shown)
    ]


def _unmatched_scope(containers: list[Container], scope: Scope) -> list[str]:
    """Notes for -n/--pod values that match no container at all (a typo looks like no garbage)."""
    notes: list[str] = []
    if not (scope.namespaces or scope.pods):
        return notes
    namespaces = {c.pod_namespace for c in containers}
    for ns in sorted(scope.namespaces - namespaces):
        notes.append(f"No container on this node is in namespace {ns!r} (-n).")
    if scope.pods:
        known: set[str] = set()
        for c in containers:
            known.update((c.pod_name, f"{c.pod_namespace}/{c.pod_name}", c.pod_uid))
        for pod in sorted(scope.pods - known):
            notes.append(f"No container on this node belongs to pod {pod!r} (--pod).")
    return notes


def _notes(plan: Plan[ContainerAction], policy: ContainerGCPolicy, pods: PodInventory) -> list[str]:
    notes: list[str] = []
    if not pods.known:
        notes.append(
            "No pod source: no pod is treated as deleted (give --pods-file to remove "
            "the containers of deleted pods)."
        )
    by_rule: dict[str, int] = {}
    for k in plan.kept:
        by_rule[k.rule] = by_rule.get(k.rule, 0) + 1
    if by_rule.get(KEEP_MIN_AGE):
        notes.append(
            f"{by_rule[KEEP_MIN_AGE]} dead container(s) kept: younger than MinAge "
            f"(--minimum-container-ttl-duration {format_go_duration(policy.min_age)})."
        )
    if by_rule.get(KEEP_WITHIN):
        notes.append(
            f"{by_rule[KEEP_WITHIN]} dead container(s) kept within the limits "
            f"(MaxPerPodContainer {policy.max_per_pod_container}, "
            f"MaxContainers {policy.max_containers})."
        )
    if by_rule.get(KEEP_GUARD):
        notes.append(
            f"{by_rule[KEEP_GUARD]} dead container(s) kept as the newest record of a live pod's "
            "container (--match-kubelet removes them as the kubelet would)."
        )
    if by_rule.get(KEEP_OLDER_THAN):
        notes.append(f"{by_rule[KEEP_OLDER_THAN]} dead container(s) kept: newer than --older-than.")
    if by_rule.get(KEEP_MAY_START):
        notes.append(
            f"{by_rule[KEEP_MAY_START]} CREATED container(s) kept: their sandbox is READY, and "
            "the kubelet may be about to start them."
        )
    if plan.out_of_scope:
        notes.append(f"{plan.out_of_scope} removal(s) outside the selected namespaces/pods left.")
    if hint := terminated_pods_hint(plan.kept, policy, pods):
        notes.append(hint)
    return notes


#: The kept rules `--include-terminated-pods` would change for a terminated pod's containers
#: (it releases the whole evict unit; MinAge, --older-than and may-start still hold).
_RELEASED_BY_TERMINATED = frozenset({KEEP_WITHIN, KEEP_GUARD})


def terminated_pods_hint(
    kept: Sequence[ContainerAction], policy: ContainerGCPolicy, pods: PodInventory
) -> str:
    """The note on dead containers kept only because their pod object still exists ("" for
    none): pods the source lists in phase Succeeded/Failed (`PodInventory.is_terminated`, not
    deleted) whose containers the limits keep (`within-limits`, kubegc's guard). The kubelet
    removes a pod's containers once the pod is deleted (`kuberuntime_gc.go`: only
    `evictNonDeletedPods`, which eviction sets, takes terminated pods too); the note counts
    them and their pods, adds up what removing them would free on disk (`planned_bytes`: logs
    and writable layers, `core.sizes.container_bytes`; `at least` when a log or a layer was
    not measured) and
    says what would change it: deleting the pods, or `--include-terminated-pods`. Nothing
    without a pod source, or with `--include-terminated-pods` given."""
    if not pods.known or policy.include_terminated_pods:
        return ""
    held = [
        k
        for k in kept
        if k.rule in _RELEASED_BY_TERMINATED
        and pods.is_terminated(uid := k.container.pod_uid)
        and not pods.is_deleted(uid)
    ]
    if not held:
        return ""
    uids = {k.container.pod_uid for k in held}
    unknown = sum(1 for k in held if k.container.log_bytes is None or k.layer_bytes is None)
    if unknown == len(held) and not any(k.planned_bytes for k in held):
        logs = "their logs and writable layers not measured"
    else:
        at_least = "at least " if unknown else ""
        total = format_bytes(sum(k.planned_bytes for k in held))
        logs = f"{at_least}{total} on disk (logs and writable layers)"
    phases = sorted({pods.phase(u) for u in uids})
    return (
        f"{len(held)} dead container(s) of {len(uids)} terminated pod(s) ({', '.join(phases)}) "
        f"kept, {logs}: the pods still exist in the pod source ({pods.source}), and the "
        "kubelet removes a pod's containers once the pod is deleted; deleting those pods "
        "(kubectl delete pod, or their owner's TTL or history limit) frees them, or "
        "--include-terminated-pods treats terminated pods as gone now."
    )
