"""The kubelet's sandbox garbage collection, as a pure planner.

Source of the rules: kubelet `kuberuntime_gc.go` (`evictSandboxes`, `evictPodSandbox`),
in short:

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

from kubegc_cli.core.model import Container, Sandbox, SandboxState
from kubegc_cli.core.plan import Plan, Result, SandboxAction
from kubegc_cli.core.pods import PodInventory
from kubegc_cli.policy.scope import Scope

RULE_DELETED = "deleted-pod"
RULE_TERMINATED = "terminated-pod"
RULE_OLDER = "older-sandbox"
KEEP_READY = "ready"
KEEP_HAS_CONTAINERS = "has-containers"
KEEP_NEWEST = "newest-of-pod"


def _newest_first(s: Sandbox) -> tuple[int, int, str]:
    return (s.created_at, s.attempt, s.id)


def plan_sandboxes(
    sandboxes: Iterable[Sandbox],
    containers: Iterable[Container],
    pods: PodInventory,
    now: int,
    *,
    include_terminated_pods: bool = False,
    scope: Scope | None = None,
) -> Plan[SandboxAction]:
    """Plan the kubelet's sandbox GC.

    `containers` are the containers that will still exist (for `gc sandboxes` alone: every
    container listed; in a combined run: those the container stage leaves). `now` is
    nanoseconds since the epoch (only reported; sandbox GC has no age rule). `scope` narrows
    what is acted on (namespace, pod and label filters; labels are the sandbox's own), never
    what the rules select: the removals it leaves out are counted in `out_of_scope`.
    """
    scope = scope or Scope()
    in_use: dict[str, int] = {}
    for c in containers:
        in_use[c.pod_sandbox_id] = in_use.get(c.pod_sandbox_id, 0) + 1
    by_pod: dict[str, list[Sandbox]] = {}
    for s in sandboxes:
        by_pod.setdefault(s.uid, []).append(s)

    plan: Plan[SandboxAction] = Plan(
        kind="SandboxGCPlan",
        policy={
            "include_terminated_pods": include_terminated_pods,
            "scope": scope.to_dict(),
            "pod_source": pods.source,
        },
        now=now,
    )
    for uid, members in by_pod.items():
        members.sort(key=_newest_first, reverse=True)
        if pods.is_deleted(uid):
            remove_newest, rule, why = True, RULE_DELETED, pods.deletion_reason(uid)
        elif include_terminated_pods and pods.is_terminated(uid):
            remove_newest, rule = True, RULE_TERMINATED
            why = f"pod is {pods.phase(uid)} (--include-terminated-pods)"
        else:
            remove_newest, rule, why = False, RULE_OLDER, "an older sandbox of a pod that exists"
        for i, s in enumerate(members):
            count = in_use.get(s.id, 0)
            if not scope.selects_sandbox(s):
                removable = s.state is not SandboxState.READY and not count
                if removable and (i > 0 or remove_newest):
                    plan.out_of_scope += 1
                continue
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
    if plan.out_of_scope:
        plan.notes.append(
            f"{plan.out_of_scope} removal(s) outside the selected namespaces/pods/labels left."
        )
    if not pods.known:
        plan.notes.append(
            "No pod source: no pod is treated as deleted; only older sandboxes of each pod go."
        )
    return plan
