"""Desired state: which pods the API server still has, from a pod source.

The kubelet removes a deleted pod's containers once every pod source has been seen
(`allSourcesReady`) and the pod is gone (`ShouldPodContentBeRemoved`); with
`evictNonDeletedPods` also when it has terminated (`ShouldPodRuntimeBeRemoved`). kubegc has no
pod workers, so it asks a pod source instead:

- `none` (the default when nothing else is configured): kubegc knows nothing about pods, so no
  pod is ever treated as deleted or terminated (`PodInventory.known` is False).
- `file`: a PodList as printed by `kubectl get pods -o json` (for example with
  `--field-selector spec.nodeName=NODE`); a pod UID not in the list is deleted.
- `api`: the same list read from the Kubernetes API (`kubegc_cli.node.pods.api`).

In every source, an evicted pod and a pod being deleted whose containers have all stopped
count as deleted too (the kubelet's ShouldPodContentBeRemoved).

Static pods (from the kubelet's manifest directory or URL) are not in the API: the kubelet
gives each a UID of 32 hex characters (a hash of the manifest) and publishes a mirror pod,
whose own UID is another, with the annotation `kubernetes.io/config.mirror` set to the static
pod's UID. A static pod's UID is never treated as deleted: kubegc cannot see the kubelet's
manifests, and a missing mirror pod does not mean a removed manifest (the API server may be
down, the mirror pod not yet made).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import parse_json, read_text
from kubegc_cli.core.model import Container, ContainerState, Sandbox, SandboxState
from kubegc_cli.core.units import rfc3339_to_ns

TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})
_STATIC_POD_UID = re.compile(r"[0-9a-f]{32}")


def is_static_pod_uid(uid: str) -> bool:
    """`uid` is spelled as the kubelet spells a static pod's UID: 32 lower-case hex characters
    (the manifest's hash; kubelet `applyDefaults`). Pods from the API have dashed UUIDs."""
    return _STATIC_POD_UID.fullmatch(uid) is not None


@dataclass(frozen=True, slots=True)
class PodInfo:
    """One desired pod: identity and `status.phase` ("" when the source did not say).

    `content_removable` marks a pod that still exists but whose content may go, as the
    kubelet's ShouldPodContentBeRemoved says: evicted (`status.reason` Evicted), or being
    deleted (`metadata.deletionTimestamp`) with every container stopped.
    """

    uid: str
    namespace: str
    name: str
    phase: str = ""
    content_removable: bool = False
    raw: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class PodInventory:
    """What a pod source says about the node's pods.

    `known` False means no source was consulted: nothing may be treated as deleted.
    `source` is a short human description (`none`, `file:/path`). `nodes` holds the decoded
    Node objects the source also carried, by name (`kubectl get pods,nodes -o json`).
    `alive` holds the UIDs of the pods alive on this node (a RUNNING container or a READY
    sandbox), as `against_runtime` found them: such a pod is never treated as deleted,
    whatever the source says (the kubelet's pod workers know a pod until it has terminated:
    ShouldPodRuntimeBeRemoved and ShouldPodContentBeRemoved are false before that).
    """

    known: bool
    pods: Mapping[str, PodInfo] = field(default_factory=dict)
    source: str = "none"
    nodes: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    alive: frozenset[str] = frozenset()

    def is_deleted(self, uid: str) -> bool:
        """The pod's content may be removed (the kubelet's ShouldPodContentBeRemoved): it is
        not alive on this node (`alive`) and the source disowns it (`disowns`).

        Containers without a pod UID label (`uid == ""`) are never treated as deleted: kubegc
        cannot know whose they are.
        """
        return uid not in self.alive and self.disowns(uid)

    def disowns(self, uid: str) -> bool:
        """The pod source alone says the pod's content may go: the pod is gone from it (and
        `uid` is no static pod's), evicted, or deleted with every container stopped. Whether
        the pod is alive on this node is not asked (see `is_deleted`)."""
        if not self.known or uid == "":
            return False
        pod = self.pods.get(uid)
        if pod is None:
            return not is_static_pod_uid(uid)
        return pod.content_removable

    def alive_though_disowned(self, uid: str) -> bool:
        """The source disowns the pod but it is alive on this node: kept, and worth a note
        (a stale or partial pod source)."""
        return uid in self.alive and self.disowns(uid)

    def may_exist(self, uid: str) -> bool:
        """The pod may still exist as far as kubegc can tell: no source was read, the source
        lists it, it is alive on this node (`alive`), or `uid` is a static pod's UID
        (`is_static_pod_uid`), which no pod source can speak for."""
        return not self.known or uid in self.pods or uid in self.alive or is_static_pod_uid(uid)

    def deletion_reason(self, uid: str) -> str:
        """Why `is_deleted(uid)` holds, in words ("" when it does not)."""
        if not self.is_deleted(uid):
            return ""
        pod = self.pods.get(uid)
        if pod is None:
            return f"pod {uid} is not in the pod source ({self.source})"
        return (
            f"pod {pod.namespace}/{pod.name} was evicted or is deleted with all containers stopped"
        )

    def is_terminated(self, uid: str) -> bool:
        """Deleted, or still in the API in phase Succeeded/Failed (ShouldPodRuntimeBeRemoved);
        never while alive on this node (`alive`): the kubelet has not finished terminating it."""
        if uid in self.alive:
            return False
        if self.is_deleted(uid):
            return True
        pod = self.pods.get(uid)
        return self.known and pod is not None and pod.phase in TERMINAL_PHASES

    def phase(self, uid: str) -> str:
        pod = self.pods.get(uid)
        return pod.phase if pod else ""


NO_POD_SOURCE = PodInventory(known=False, source="none")


def against_runtime(
    pods: PodInventory,
    containers: Iterable[Container],
    sandboxes: Iterable[Sandbox] = (),
    *,
    consequence: str = "nothing removed",
) -> PodInventory:
    """`pods` with the pods alive on this node marked (`PodInventory.alive`: a RUNNING
    container or a READY sandbox), after refusing a pod source that cannot be this node's:
    one that lists none of the pods alive here, or lists no pod at all while the runtime has
    pods here (any container or sandbox with a pod UID; static pods do not count: a source
    holds only their mirror pods, under other UIDs, see `is_static_pod_uid`).

    An empty list, another node's pods, or a failed `kubectl` would otherwise mark every pod
    here as deleted and take the newest records of live pods — also when nothing runs (after
    a reboot, or with every pod crash-looping); a partial or stale list (`-n`, `-l`, a pod
    scheduled since) would mark the pods it misses, which `alive` keeps. `containers`,
    `sandboxes`: what the runtime lists now (without the sandboxes, a pod alive only by its
    READY sandbox is not seen). Raises `BadInput` (nothing is removed), its message ending
    with `consequence`. Without a source (`known` False) `pods` is returned as it is.
    """
    if not pods.known:
        return pods
    alive: set[str] = set()
    present: set[str] = set()
    for c in containers:
        present.add(c.pod_uid)
        if c.state is ContainerState.RUNNING:
            alive.add(c.pod_uid)
    for sb in sandboxes:
        present.add(sb.uid)
        if sb.state is SandboxState.READY:
            alive.add(sb.uid)
    alive.discard("")
    listed = {u for u in alive if not is_static_pod_uid(u)}
    present = {u for u in present if u and not is_static_pod_uid(u)}
    if listed and not listed & pods.pods.keys():
        raise BadInput(
            f"pod source {pods.source} lists none of the {len(listed)} pod(s) alive on this "
            f"node (an empty list, another node's pods, a failed kubectl?); {consequence}"
        )
    if present and not pods.pods:
        raise BadInput(
            f"pod source {pods.source} lists no pods, but the runtime has containers or "
            f"sandboxes of {len(present)} pod(s) here (a failed kubectl, a wrong node name?); "
            f"{consequence}"
        )
    return replace(pods, alive=frozenset(alive))


def inventory_from_podlist(doc: Any, *, source: str) -> PodInventory:
    """Build a `PodInventory` from a decoded PodList (`kind` PodList, or List of Pods and
    Nodes — Nodes are kept by name for their allocatable).

    Raises `BadInput` naming `source` when the document is not a list of pods with
    `metadata.uid`, or lists one uid twice.
    """
    if not isinstance(doc, Mapping) or not isinstance(doc.get("items"), list):
        raise BadInput(f"{source}: not a PodList (expected an object with an 'items' list)")
    kind = doc.get("kind")
    if kind not in (None, "PodList", "List"):
        raise BadInput(f"{source}: expected kind PodList or List, got {kind!r}")
    pods: dict[str, PodInfo] = {}
    index: dict[str, int] = {}  # uid -> its place in items
    nodes: dict[str, Mapping[str, Any]] = {}
    for i, item in enumerate(doc["items"]):
        meta = item.get("metadata") if isinstance(item, Mapping) else None
        if kind == "List" and isinstance(meta, Mapping) and item.get("kind") == "Node":
            nodes[str(meta.get("name", ""))] = item
            continue
        if not isinstance(meta, Mapping) or not meta.get("uid"):
            raise BadInput(f"{source}: items[{i}] has no metadata.uid")
        if item.get("kind") not in (None, "Pod"):
            raise BadInput(f"{source}: items[{i}] is a {item.get('kind')}, not a Pod")
        status = {} if item.get("status") is None else item["status"]
        if not isinstance(status, Mapping):  # (read as {}, it would say "all stopped")
            raise BadInput(f"{source}: items[{i}].status {status!r} is not an object")
        for where, obj, key in (
            ("metadata", meta, "namespace"),
            ("metadata", meta, "name"),
            ("status", status, "phase"),
            ("status", status, "reason"),
        ):
            if not isinstance(obj.get(key, ""), str):
                raise BadInput(f"{source}: items[{i}].{where}.{key} {obj[key]!r} is not a string")
        for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
            if not isinstance(status.get(key) or [], list):
                raise BadInput(f"{source}: items[{i}].status.{key} is not a list")
        if not isinstance(meta["uid"], str):
            raise BadInput(f"{source}: items[{i}].metadata.uid {meta['uid']!r} is not a string")
        if meta["uid"] != meta["uid"].strip():  # (matching no pod, the pod would look deleted)
            raise BadInput(f"{source}: items[{i}].metadata.uid {meta['uid']!r} is not a UID")
        deleting = meta.get("deletionTimestamp")
        if deleting is not None:  # (it makes the pod's content removable: it must be a time)
            if not isinstance(deleting, str) or deleting != deleting.strip():
                raise BadInput(
                    f"{source}: items[{i}].metadata.deletionTimestamp {deleting!r} is not a time"
                )
            rfc3339_to_ns(deleting, what=f"{source}: items[{i}].metadata.deletionTimestamp")
        uid = meta["uid"]
        if uid in index:  # which one to believe? (one may say deleted, the other not)
            raise BadInput(
                f"{source}: items[{i}].metadata.uid {uid!r} is listed twice "
                f"(also items[{index[uid]}])"
            )
        index[uid] = i
        pods[uid] = PodInfo(
            uid=uid,
            namespace=meta.get("namespace", ""),
            name=meta.get("name", ""),
            phase=status.get("phase", ""),
            content_removable=status.get("reason") == "Evicted"
            or (deleting is not None and _all_stopped(status)),
            raw=item,
        )
    return PodInventory(known=True, pods=pods, source=source, nodes=nodes)


def _all_stopped(status: Mapping[str, Any]) -> bool:
    """No container or init container of the pod is running or waiting to (status says so)."""
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or ():
            state = cs.get("state") if isinstance(cs, Mapping) else None
            if not isinstance(state, Mapping) or "terminated" not in state:
                return False
    return True


def load_pods_file(path: Path) -> PodInventory:
    """Read a PodList JSON file (`kubectl get pods -o json`). Raises `BadInput` naming the file."""
    doc = parse_json(read_text(path, "pods file"), path, "pods file")
    return inventory_from_podlist(doc, source=f"file:{path}")


def inventory_of(pods: Iterable[PodInfo], source: str = "test") -> PodInventory:
    """A known inventory holding exactly `pods` (handy for callers building one in code)."""
    return PodInventory(known=True, pods={p.uid: p for p in pods}, source=source)
