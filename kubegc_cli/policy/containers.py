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

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from kubegc_cli.gcpause import cyclic_gc_paused
from kubegc_cli.model import (
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    ContainerState,
)
from kubegc_cli.plan import ContainerAction, Plan, Result
from kubegc_cli.pods import PodInventory
from kubegc_cli.policy.scope import Scope
from kubegc_cli.units import NS_PER_SECOND, format_duration, format_go_duration

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
LIMIT_RULES = frozenset({RULE_PER_UNIT, RULE_SHARE, RULE_GLOBAL})
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


def _newest_first_key(c: Container) -> tuple[int, int, str]:
    return (c.created_at, c.attempt, c.id)


@cyclic_gc_paused
def plan_containers(
    containers: Iterable[Container],
    policy: ContainerGCPolicy,
    pods: PodInventory,
    now: int,
    scope: Scope | None = None,
) -> Plan[ContainerAction]:
    """Plan the kubelet's container GC for one node.

    `containers` are every container the runtime lists (any state); `now` is nanoseconds since
    the epoch. Returns a `Plan` of kind `ContainerGCPlan` whose `actions` are the removals and
    whose `kept` lists every dead container left, with why; both in table order (pod
    namespace, pod name, container name, attempt, creation time).
    """
    scope = scope or Scope()
    min_age_ns = int(policy.min_age * NS_PER_SECOND)
    cutoff = now - min_age_ns

    containers_seen = list(containers)
    running = ContainerState.RUNNING
    dead = [c for c in containers_seen if c.state is not running]
    # Container ID → (container, rule, reason).
    removed: dict[str, tuple[Container, str, str]] = {}
    kept: dict[str, tuple[Container, str, str]] = {}

    units: dict[EvictUnit, list[Container]] = {}
    every_unit: dict[EvictUnit, list[Container]] = {}  # every dead container, for the output
    young_units: set[EvictUnit] = set()
    for c in dead:
        key = (c.labels.get(LABEL_POD_UID, ""), c.name)
        everyone = every_unit.get(key)
        if everyone is None:
            every_unit[key] = [c]
        else:
            everyone.append(c)
        if c.created_at > cutoff:
            kept[c.id] = (
                c,
                KEEP_MIN_AGE,
                f"created {format_duration((now - c.created_at) / NS_PER_SECOND)} ago, "
                f"younger than MinAge {format_go_duration(policy.min_age)}",
            )
            young_units.add(key)
            continue
        members = units.get(key)
        if members is None:
            units[key] = [c]
        else:
            members.append(c)
    for members in units.values():
        if len(members) > 1:
            members.sort(key=_newest_first_key, reverse=True)
    # The newest dead container of each unit, for kubegc's guard. A unit with a container
    # younger than MinAge has that one as its newest (created after every candidate), and
    # it is kept anyway.
    newest = {key: members[0] for key, members in units.items() if key not in young_units}

    # Step 1: deleted (and, if asked, terminated) pods lose every candidate.
    released: set[EvictUnit] = set()
    if pods.known:
        for key in list(units):
            uid = key[0]
            if pods.is_deleted(uid):
                rule, why = RULE_DELETED, pods.deletion_reason(uid)
            elif policy.include_terminated_pods and pods.is_terminated(uid):
                rule, why = RULE_TERMINATED, f"pod is {pods.phase(uid)} (--include-terminated-pods)"
            else:
                continue
            for c in units.pop(key):
                removed[c.id] = (c, rule, why)
            released.add(key)

    def cut_units(limit: int, rule: str, why: str) -> None:
        for key, members in units.items():
            if len(members) > limit:
                for c in members[limit:]:
                    removed[c.id] = (c, rule, why)
                units[key] = members[:limit]

    # Step 2: MaxPerPodContainer.
    if policy.max_per_pod_container >= 0:
        n = policy.max_per_pod_container
        cut_units(n, RULE_PER_UNIT, f"beyond the newest {n} of its evict unit (MaxPerPodContainer)")

    # Step 3: MaxContainers, first an equal share per unit, then oldest overall.
    if policy.max_containers >= 0:
        limit = policy.max_containers
        total = sum(len(m) for m in units.values())
        if total > limit:
            share = max(1, limit // len(units))
            cut_units(
                share,
                RULE_SHARE,
                f"beyond its evict unit's share {share} of MaxContainers {limit}",
            )
            rest = [c for m in units.values() for c in m]
            if len(rest) > limit:
                rest.sort(key=_newest_first_key, reverse=True)
                why = f"oldest beyond MaxContainers {limit} node-wide"
                for c in rest[limit:]:
                    removed[c.id] = (c, RULE_GLOBAL, why)

    within = "within MaxPerPodContainer/MaxContainers"
    for members in units.values():
        for c in members:
            if c.id not in removed:
                kept[c.id] = (c, KEEP_WITHIN, within)

    # kubegc's guard: the newest dead container of a live pod's evict unit stays.
    if not policy.match_kubelet:
        for key, c in newest.items():
            if key not in released and c.id in removed:
                del removed[c.id]
                kept[c.id] = (c, KEEP_GUARD, GUARD_REASON)

    units.clear()  # (decided: only `removed` and `kept` are read from here on)
    newest.clear()
    plan: Plan[ContainerAction] = Plan(
        kind="ContainerGCPlan",
        policy={**policy.to_dict(), "scope": scope.to_dict(), "pod_source": pods.source},
        now=now,
    )
    selects = None if scope.everything else scope.selects
    older_ns = None if scope.older_than is None else int(scope.older_than * NS_PER_SECOND)
    unknown, planned, kept_result = ContainerState.UNKNOWN, Result.PLANNED, Result.KEPT
    actions, kept_actions = plan.actions, plan.kept
    older_why = f"newer than --older-than {format_go_duration(scope.older_than or 0)}"
    # Every dead container is in `removed` or in `kept`; walk them in table order.
    for members in _in_table_order(every_unit):
        for c in members:
            entry = removed.pop(c.id, None)  # (popped: each decision is read once)
            if entry is None:
                decided = kept.pop(c.id, None)
                if decided is None:
                    continue  # an ID listed twice: shown once (a runtime lists each once)
                _, rule, why = decided
                if selects is None or selects(c):
                    kept_actions.append(ContainerAction(c, rule, why, kept_result))
                continue
            _, rule, why = entry
            if selects is not None and not selects(c):
                plan.out_of_scope += 1
            elif older_ns is not None and now - (c.finished_at or c.created_at) < older_ns:
                kept_actions.append(ContainerAction(c, KEEP_OLDER_THAN, older_why, kept_result))
            else:
                # (positional arguments: container, rule, reason, result, error, stop_first)
                actions.append(ContainerAction(c, rule, why, planned, "", c.state is unknown))

    plan.notes.extend(_notes(plan, policy, pods))
    plan.notes.extend(_unmatched_scope(containers_seen, scope))
    plan.notes.extend(_deleted_but_running(containers_seen, pods))
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
    plan: Plan[ContainerAction], fresh: Iterable[Container], policy: ContainerGCPolicy
) -> None:
    """Re-apply kubegc's guard to a fresh container list right before acting.

    If a unit's kept record vanished since the plan (the kubelet removed it, say), the newest
    remaining dead container of that unit is now its record: a planned limit-rule removal of it
    is marked `skipped`. Removals of deleted or terminated pods are not affected.
    """
    if policy.match_kubelet:
        return
    limited = {
        (a.container.pod_uid, a.container.name): a
        for a in plan.actions
        if a.rule in LIMIT_RULES and a.result is Result.PLANNED
    }
    if not limited:
        return
    by_id = {a.id: a for a in plan.actions if a.rule in LIMIT_RULES}
    for key, c in _newest_dead_by_unit(fresh).items():
        if key in limited and c.id in by_id:
            a = by_id[c.id]
            a.result = Result.SKIPPED
            a.error = "now the newest record of its evict unit (the kept one is gone)"


def _in_table_order(units: dict[EvictUnit, list[Container]]) -> Iterator[list[Container]]:
    """The containers of `units` in table order: pod namespace, pod name, container name, then
    attempt and creation time; yielded as runs of containers.

    The label part is read once per unit (from its first container: the attempts of one
    container carry the same labels) and units are sorted by it as one string (faster than
    tuples); units that share it (a pod recreated under the same name) are merged.
    """
    groups: dict[str, list[EvictUnit]] = {}
    for key, members in units.items():
        first = members[0]
        labels = first.labels
        prefix = "\0".join(
            (
                labels.get(LABEL_POD_NAMESPACE, ""),
                labels.get(LABEL_POD_NAME, ""),
                labels.get(LABEL_CONTAINER_NAME) or first.name,
            )
        )
        group = groups.get(prefix)
        if group is None:
            groups[prefix] = [key]
        else:
            group.append(key)
    for prefix in sorted(groups):
        keys = groups[prefix]
        members = units[keys[0]] if len(keys) == 1 else [c for k in keys for c in units[k]]
        if len(members) > 1:
            members = sorted(members, key=_attempt_order)
        yield members


def _attempt_order(c: Container) -> tuple[int, int, str]:
    return (c.attempt, c.created_at, c.id)


def _deleted_but_running(containers: list[Container], pods: PodInventory) -> list[str]:
    """A pod the source calls deleted that still runs containers here: maybe a stale pods file."""
    if not pods.known:
        return []  # no pod is deleted without a source
    running = {
        (c.pod_namespace, c.pod_name)
        for c in containers
        if c.state is ContainerState.RUNNING and pods.is_deleted(c.pod_uid)
    }
    return [
        f"Pod {ns}/{name} counts as deleted (gone from the pod source, evicted, or being "
        "deleted) but still runs containers on this node (just now? a stale pod source?)."
        for ns, name in sorted(running)
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
    if plan.out_of_scope:
        notes.append(f"{plan.out_of_scope} removal(s) outside the selected namespaces/pods left.")
    return notes
