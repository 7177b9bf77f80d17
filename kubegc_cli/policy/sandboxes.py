"""The kubelet's sandbox garbage collection, as a pure planner.

Source of the rules: kubelet `kuberuntime_gc.go` (`evictSandboxes`, `evictPodSandbox`),
described in KUBELET-SEMANTICS §b:

- A sandbox is *active* if it is READY or if any container the runtime still has (in any
  state, an exited one too) belongs to it. Active sandboxes are never removed.
- Sandboxes are grouped by pod UID (sandbox metadata). For a pod whose content may be removed
  (deleted; with `include_terminated_pods` also Succeeded/Failed), every inactive sandbox goes.
  For any other pod the newest sandbox is always kept, even when inactive, and the older
  inactive ones go.
- There is no MinAge and no allSourcesReady gate: without a pod source no pod is deleted, so
  only the older inactive sandboxes of each pod go.

Ties between equal creation times are broken by attempt, then ID.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubegc_cli.model import API_VERSION, Container, Sandbox, SandboxState
from kubegc_cli.plan import Result
from kubegc_cli.pods import PodInventory
from kubegc_cli.units import ns_to_rfc3339

RULE_DELETED = "deleted-pod"
RULE_TERMINATED = "terminated-pod"
RULE_OLDER = "older-sandbox"
KEEP_READY = "ready"
KEEP_HAS_CONTAINERS = "has-containers"
KEEP_NEWEST = "newest-of-pod"


@dataclass(slots=True)
class SandboxAction:
    """Remove one pod sandbox (StopPodSandbox, then RemovePodSandbox), or why it stays.

    `container_count` is how many containers the runtime lists in it at planning time.
    """

    sandbox: Sandbox
    rule: str
    reason: str
    container_count: int = 0
    result: Result = Result.PLANNED
    error: str = ""
    bytes_freed: int = 0
    log_note: str = ""

    kind = "sandbox"

    @property
    def id(self) -> str:
        return self.sandbox.id

    @property
    def planned_bytes(self) -> int:
        return 0

    def to_dict(self) -> dict[str, Any]:
        s = self.sandbox
        return {
            "kind": self.kind,
            "id": s.id,
            "pod_uid": s.uid,
            "pod_namespace": s.namespace,
            "pod_name": s.name,
            "attempt": s.attempt,
            "state": s.state.value,
            "created_at": ns_to_rfc3339(s.created_at),
            "container_count": self.container_count,
            "rule": self.rule,
            "reason": self.reason,
            "result": self.result.value,
            "error": self.error,
        }


@dataclass(slots=True)
class SandboxPlan:
    """The sandbox GC plan: removals in `actions`, deliberately kept sandboxes in `kept`."""

    policy: dict[str, Any]
    now: int
    actions: list[SandboxAction] = field(default_factory=list)
    kept: list[SandboxAction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    dry_run: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "SandboxGCPlan",
            "apiVersion": API_VERSION,
            "now": ns_to_rfc3339(self.now),
            "dry_run": self.dry_run,
            "policy": self.policy,
            "actions": [a.to_dict() for a in self.actions],
            "kept": [k.to_dict() for k in self.kept],
            "notes": list(self.notes),
        }


def _newest_first(s: Sandbox) -> tuple[int, int, str]:
    return (s.created_at, s.attempt, s.id)


def plan_sandboxes(
    sandboxes: Iterable[Sandbox],
    containers: Iterable[Container],
    pods: PodInventory,
    now: int,
    *,
    include_terminated_pods: bool = False,
) -> SandboxPlan:
    """Plan the kubelet's sandbox GC.

    `containers` are the containers that will still exist (for `gc sandboxes` alone: every
    container listed; in a combined run: those the container stage leaves). `now` is
    nanoseconds since the epoch (only reported; sandbox GC has no age rule).
    """
    in_use: dict[str, int] = {}
    for c in containers:
        in_use[c.pod_sandbox_id] = in_use.get(c.pod_sandbox_id, 0) + 1
    by_pod: dict[str, list[Sandbox]] = {}
    for s in sandboxes:
        by_pod.setdefault(s.uid, []).append(s)

    plan = SandboxPlan(
        policy={"include_terminated_pods": include_terminated_pods, "pod_source": pods.source},
        now=now,
    )
    for uid, members in by_pod.items():
        members.sort(key=_newest_first, reverse=True)
        if pods.is_deleted(uid):
            remove_newest, rule, why = True, RULE_DELETED, f"pod {uid} is not in the pod source"
        elif include_terminated_pods and pods.is_terminated(uid):
            remove_newest, rule = True, RULE_TERMINATED
            why = f"pod is {pods.phase(uid)} (--include-terminated-pods)"
        else:
            remove_newest, rule, why = False, RULE_OLDER, "an older sandbox of a pod that exists"
        for i, s in enumerate(members):
            count = in_use.get(s.id, 0)
            if s.state is SandboxState.READY:
                plan.kept.append(SandboxAction(s, KEEP_READY, "READY", count, Result.KEPT))
            elif count:
                plan.kept.append(
                    SandboxAction(
                        s,
                        KEEP_HAS_CONTAINERS,
                        f"{count} container(s) still in it",
                        count,
                        Result.KEPT,
                    )
                )
            elif i == 0 and not remove_newest:
                plan.kept.append(
                    SandboxAction(
                        s, KEEP_NEWEST, "newest sandbox of a pod that exists", count, Result.KEPT
                    )
                )
            else:
                plan.actions.append(SandboxAction(s, rule, why, count))
    key = lambda a: (a.sandbox.namespace, a.sandbox.name, a.sandbox.created_at)  # noqa: E731
    plan.actions.sort(key=key)
    plan.kept.sort(key=key)
    if not pods.known:
        plan.notes.append(
            "No pod source: no pod is treated as deleted; only older sandboxes of each pod go."
        )
    return plan
