"""The kubelet's pod log garbage collection, as a pure planner.

Source of the rules: kubelet `kuberuntime_gc.go` (`evictPodLogsDirectories`) and `legacy.go`,
in short:

- Pod log directories are only touched when a pod source is known (the kubelet's
  `allSourcesReady`). A directory goes when its pod (UID = last `_` field of the name) is gone
  from the pod source. kubegc adds: never one whose UID is not spelled as pod UIDs are (a
  dashed UUID, or 32 hex characters for a static pod; `not-a-pod-uid`), never while the runtime
  still has a container of that pod (its logs are in use), never a directory with a mount
  point at or below it, nor any while the mount table cannot be read, nor one below which a
  path gave no answer within `--timeout` when it was sized (a hung mount; all reported,
  `mount-point`).
- Dangling legacy symlinks in `/var/log/containers` are judged without a pod source: a name
  that does not parse goes; a container the runtime no longer has goes; an EXITED container's
  link goes; any other state keeps it (log rotation briefly leaves a running container's link
  dangling).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from kubegc_cli.core.model import Container, ContainerState
from kubegc_cli.core.plan import LogAction, Plan, Result
from kubegc_cli.core.podlogs import NOT_A_POD, LegacyLink, PodLogDir, is_pod_uid
from kubegc_cli.core.pods import PodInventory
from kubegc_cli.policy.scope import Scope

RULE_DELETED = "deleted-pod"
RULE_UNPARSABLE = "unparsable-link"
RULE_CONTAINER_GONE = "container-gone"
RULE_CONTAINER_EXITED = "container-exited"
KEEP_HAS_CONTAINERS = "has-containers"
KEEP_MOUNT = "mount-point"
KEEP_NOT_EXITED = "container-not-exited"
KEEP_NOT_A_POD = "not-a-pod-uid"
KEEP_ALIVE = "pod-alive"
ALIVE_REASON = (
    "gone from the pod source (or evicted, or being deleted) but alive on this node "
    "(a running container or a READY sandbox)"
)


def link_state(container_id: str, containers: Iterable[Container]) -> str:
    """What the runtime says about an ID prefix: the state value, "" if unknown, "none" if
    the prefix is ambiguous (then the link is kept)."""
    matches = [c for c in containers if c.id.startswith(container_id)]
    if not matches:
        return ""
    if len(matches) > 1:
        return "none"
    return matches[0].state.value


def plan_logs(
    dirs: Iterable[PodLogDir],
    links: Iterable[LegacyLink],
    containers: Iterable[Container],
    pods: PodInventory,
    now: int,
    *,
    pod_logs_dir: str,
    container_logs_dir: str,
    scope: Scope | None = None,
) -> Plan[LogAction]:
    """Plan pod log directory and legacy symlink removal. Paths in actions are host paths.

    `containers` are those that will still exist (a combined run passes what the container
    stage leaves). `now` is nanoseconds since the epoch (reported only). `scope` narrows what
    is acted on by the namespace and pod names in the directory and link names. `links` are
    the dangling legacy links, and those into a pod log directory (`LegacyLink.into`): such a
    link is planned only when this plan removes its directory (it dangles once that is gone,
    and is removed after it), so that a second run finds nothing more.
    """
    scope = scope or Scope()
    dirs = list(dirs)
    live_uids = {c.pod_uid for c in containers if c.pod_uid}
    plan: Plan[LogAction] = Plan(
        kind="LogGCPlan",
        policy={
            "pod_logs_dir": pod_logs_dir,
            "container_logs_dir": container_logs_dir,
            "pod_source": pods.source,
        },
        now=now,
    )
    for d in dirs:
        alive = pods.alive_though_disowned(d.uid)  # (kept, and shown as such)
        if not alive and not pods.is_deleted(d.uid):
            continue
        parts = d.name.split("_")
        ns, pod = (parts[0], parts[1]) if len(parts) >= 3 else ("", "")
        if not scope.everything and not scope.selects_pod(ns, pod, d.uid):
            continue
        host = os.path.join(pod_logs_dir, d.name)
        if alive:
            rule, why, result = KEEP_ALIVE, ALIVE_REASON, True
        elif not is_pod_uid(d.uid):  # the kubelet would remove it; kubegc never guesses
            rule, why, result = KEEP_NOT_A_POD, NOT_A_POD, True
        elif d.uid in live_uids:
            rule, why, result = KEEP_HAS_CONTAINERS, "the runtime still has its containers", True
        elif d.mount:
            rule, why, result = KEEP_MOUNT, f"mount point at or below it: {d.mount}", True
        elif d.mounts_unknown:
            rule, why, result = KEEP_MOUNT, d.mounts_unknown, True
        elif d.stalled:  # removing it would hang there too
            hung = host + d.stalled[len(d.path) :] if d.stalled.startswith(d.path) else d.stalled
            why = f"no answer from {hung} within --timeout (a hung mount?); size partial"
            rule, result = KEEP_MOUNT, True
        else:
            rule, why, result = RULE_DELETED, pods.deletion_reason(d.uid), False
        action = LogAction("pod-log-dir", host, d.path, d.uid, rule, why, d.bytes,
                           changed_ns=d.changed_ns)  # fmt: skip
        if result:
            action.result = Result.KEPT
            plan.kept.append(action)
        else:
            plan.actions.append(action)
    going = {a.path for a in plan.actions}  # pod log dirs this plan removes
    for link in links:
        if link.into and link.into not in going:
            continue  # a link into a directory that stays: not garbage
        parts = link.name.split("_")
        pod, ns = (parts[0], parts[1]) if len(parts) >= 3 else ("", "")
        if not scope.everything and not scope.selects_pod(ns, pod, ""):
            continue
        host = os.path.join(container_logs_dir, link.name)
        if not link.container_id:
            rule, why, keep = RULE_UNPARSABLE, "no container ID in the name", False
        elif link.state == "":
            rule, why, keep = RULE_CONTAINER_GONE, "the runtime has no such container", False
        elif link.state == ContainerState.EXITED.value:
            rule, why, keep = RULE_CONTAINER_EXITED, "its container has exited", False
        else:
            rule, why, keep = KEEP_NOT_EXITED, f"container is {link.state}", True
        if link.into and not keep:
            why += f"; its log is in {link.into}, removed first"
        action = LogAction("log-symlink", host, link.path, "", rule, why)
        if keep:
            action.result = Result.KEPT
            plan.kept.append(action)
        else:
            plan.actions.append(action)
    alive_kept = sum(1 for k in plan.kept if k.rule == KEEP_ALIVE)
    if alive_kept:
        plan.notes.append(
            f"{alive_kept} pod log directory(ies) kept: their pods are {ALIVE_REASON} "
            "(just now? a stale or partial pod source?)."
        )
    unknown = next((d.mounts_unknown for d in dirs if d.mounts_unknown), "")
    if unknown:
        plan.notes.append(f"No pod log directory is removed: {unknown}.")
    if not pods.known:
        plan.notes.append(
            "No pod source: pod log directories are left alone (give --pods-file or a kubeconfig "
            "for the API); only "
            "dangling /var/log/containers links are judged."
        )
    return plan
