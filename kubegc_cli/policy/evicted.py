"""Which Failed pods are Evicted shells that `evict prune` deletes, and which it keeps.

When the kubelet evicts a pod it sets `status.phase` Failed and `status.reason` Evicted. Only
such pods are planned (checked here, so a server that ignores the field selector changes
nothing), in the node, namespace and labels asked for; with an age limit, pods evicted more
recently (or at an unknown time) are kept, each with its reason. The eviction time is the
DisruptionTarget condition's lastTransitionTime, else the Ready condition's, else
`status.startTime`. Pure: the pods and the time are given.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.plan import PodAction, Result
from kubegc_cli.core.selector import Selector
from kubegc_cli.core.units import (
    NS_PER_SECOND,
    format_duration,
    format_go_duration,
    rfc3339_to_ns,
)

# Rules: why a pod is deleted, or why an evicted pod is kept.
RULE_EVICTED = "evicted"
RULE_TOO_RECENT = "too-recent"
RULE_TIME_UNKNOWN = "eviction-time-unknown"
RULE_BEING_DELETED = "being-deleted"
RULE_NO_IDENTITY = "no-identity"


@dataclass(frozen=True, slots=True)
class PruneOptions:
    """What `evict prune` looks at.

    `node` is the node whose pods are pruned (`pods.api.node_name()`), ignored when
    `all_nodes`; `namespace` None means every namespace; `older_than` is in seconds: only pods
    evicted at least that long ago are deleted (0 = no age limit); `selector` (`-l`, None =
    any labels): only pods whose labels it matches.
    """

    all_nodes: bool = False
    node: str = ""
    namespace: str | None = None
    older_than: float = 0.0
    selector: Selector | None = None

    def validate(self) -> None:
        """Raises `BadInput` for a negative age or a missing node."""
        if self.older_than < 0:
            raise BadInput("--older-than must not be negative")
        if not self.all_nodes and not self.node:
            raise BadInput("evict prune needs a node name (--node-name) or --all-nodes")
        if self.namespace == "":
            raise BadInput("invalid value for --namespace: empty name")

    def to_dict(self) -> dict[str, Any]:
        return {
            "all_nodes": self.all_nodes,
            "node": None if self.all_nodes else self.node,
            "namespace": self.namespace,
            "older_than": format_go_duration(self.older_than),
            "selector": None if self.selector is None else str(self.selector),
        }

    def field_selector(self) -> str:
        """`status.phase=Failed`, plus `spec.nodeName=<node>` unless all nodes."""
        return "status.phase=Failed" + ("" if self.all_nodes else f",spec.nodeName={self.node}")

    def describe(self) -> str:
        where = "all nodes" if self.all_nodes else f"node {self.node}"
        where += f", namespace {self.namespace}" if self.namespace else ""
        return where + (f", labels {self.selector}" if self.selector is not None else "")


def _time(value: Any) -> int:
    """RFC 3339 text from the API → ns since the epoch; 0 when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return 0
    try:
        return rfc3339_to_ns(value)
    except BadInput:
        return 0


def eviction_time(status: Mapping[str, Any]) -> int:
    """When the pod was evicted, ns since the epoch (0 = unknown): the DisruptionTarget
    condition's lastTransitionTime, else the Ready condition's, else `status.startTime`."""
    conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    for kind in ("DisruptionTarget", "Ready"):
        for c in conditions:
            if c.get("type") == kind and (at := _time(c.get("lastTransitionTime"))):
                return at
    return _time(status.get("startTime"))


def _owner(meta: Mapping[str, Any]) -> tuple[str, str]:
    """(kind, name) of the controller owner reference, else the first one, else ("", "")."""
    refs = [r for r in meta.get("ownerReferences") or () if isinstance(r, Mapping)]
    ref = next((r for r in refs if r.get("controller")), refs[0] if refs else None)
    return (str(ref.get("kind", "")), str(ref.get("name", ""))) if ref else ("", "")


def _part(item: Any, key: str) -> Mapping[str, Any]:
    """`item[key]` when it is an object, else an empty one (the API's answer is not trusted)."""
    value = item.get(key) if isinstance(item, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _labels(meta: Mapping[str, Any]) -> dict[str, str]:
    """`metadata.labels` of an API answer, keeping only string keys and values."""
    labels = meta.get("labels")
    if not isinstance(labels, Mapping):
        return {}
    return {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}


def _in_scope(item: Any, opts: PruneOptions) -> bool:
    """Phase Failed, on the node, in the namespace and with the labels asked for (checked
    here too, so a server that ignores the field or label selector changes nothing)."""
    meta = _part(item, "metadata")
    return (
        _part(item, "status").get("phase") == "Failed"
        and (opts.all_nodes or _part(item, "spec").get("nodeName") == opts.node)
        and (opts.namespace is None or meta.get("namespace") == opts.namespace)
        and (opts.selector is None or opts.selector.matches(_labels(meta)))
    )


def _is_evicted(item: Any, opts: PruneOptions) -> bool:
    """In scope and `status.reason` Evicted."""
    return _in_scope(item, opts) and _part(item, "status").get("reason") == "Evicted"


def pod_action(item: Mapping[str, Any], opts: PruneOptions, now: int) -> PodAction:
    """A planned deletion of one evicted pod, or a kept one with the rule that keeps it."""
    meta, spec, status = (_part(item, k) for k in ("metadata", "spec", "status"))
    at = eviction_time(status)
    kind, owner = _owner(meta)
    age = format_duration((now - at) / NS_PER_SECOND) if at else ""
    a = PodAction(
        namespace=str(meta.get("namespace", "")),
        name=str(meta.get("name", "")),
        uid=str(meta.get("uid") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        node=str(spec.get("nodeName") or ""),
        owner_kind=kind,
        owner_name=owner,
        evicted_at=at,
        message=str(status.get("message") or ""),
        rule=RULE_EVICTED,
        reason=f"Evicted {age} ago" if at else "Evicted (time unknown)",
    )
    limit = format_go_duration(opts.older_than)
    if not a.uid or not a.resource_version:
        a.rule, a.reason = RULE_NO_IDENTITY, "the API gave no uid/resourceVersion to delete it by"
    elif meta.get("deletionTimestamp"):
        a.rule, a.reason = RULE_BEING_DELETED, "already being deleted (deletionTimestamp set)"
    elif opts.older_than and not at:
        a.rule, a.reason = RULE_TIME_UNKNOWN, f"eviction time unknown; --older-than {limit}"
    elif opts.older_than and now - at < opts.older_than * NS_PER_SECOND:
        a.rule, a.reason = RULE_TOO_RECENT, f"evicted {age} ago, less than --older-than {limit}"
    if a.rule != RULE_EVICTED:
        a.result = Result.KEPT
    return a


def plan_evicted(
    items: list[Any], opts: PruneOptions, now: int
) -> tuple[list[PodAction], list[PodAction], int]:
    """The Failed pods `items` (raw API objects) judged at `now` (ns since the epoch):
    (planned deletions, kept, Failed pods that were not evicted), both lists sorted by
    (namespace, name)."""
    evicted = [pod_action(i, opts, now) for i in items if _is_evicted(i, opts)]
    evicted.sort(key=lambda a: (a.namespace, a.name))
    planned = [a for a in evicted if a.result is Result.PLANNED]
    kept = [a for a in evicted if a.result is Result.KEPT]
    others = sum(1 for i in items if _in_scope(i, opts) and not _is_evicted(i, opts))
    return planned, kept, others
