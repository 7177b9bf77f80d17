"""Scope: which pods a run may act on (`-n`, `--exclude-namespace`, `--pod`, `-l`,
`--older-than`).

Scope narrows a node-wide plan; it never changes what a policy selects.

The label selector (`-l`) is matched against a pod's labels as the runtime knows them: the
kubelet copies a pod's labels onto its CRI sandbox (`ListPodSandbox` labels), next to its own
`io.kubernetes.pod.name/namespace/uid` (which are not pod labels and are left out here). A
container is matched through its sandbox (`pod_sandbox_id`); a sandbox by its own labels; a
pod known only by UID (a log directory) through the newest sandbox of that UID. Whatever
cannot be tied to a kubelet-made sandbox — its sandbox is gone, or carries no
`io.kubernetes.pod.uid` label — matches no selector: narrowing never widens what is removed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from kubegc_cli.core.model import (
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    Sandbox,
)
from kubegc_cli.core.units import format_go_duration

if TYPE_CHECKING:
    from kubegc_cli.core.selector import Selector  # imported by whoever parses a `-l`

#: Labels the kubelet adds to a sandbox besides the pod's own.
KUBELET_SANDBOX_LABELS = frozenset({LABEL_POD_NAME, LABEL_POD_NAMESPACE, LABEL_POD_UID})

_NONE: Mapping[str, Mapping[str, str]] = MappingProxyType({})


def pod_labels(sandbox: Sandbox) -> Mapping[str, str] | None:
    """The pod's labels as the kubelet copied them onto `sandbox` (without the kubelet's own
    `io.kubernetes.pod.*`), or None when the sandbox carries no `io.kubernetes.pod.uid` label
    (not made by the kubelet: its pod's labels are unknown)."""
    if not sandbox.labels.get(LABEL_POD_UID):
        return None
    return {k: v for k, v in sandbox.labels.items() if k not in KUBELET_SANDBOX_LABELS}


@dataclass(frozen=True, slots=True)
class Scope:
    """Which containers a run may act on. Empty sets mean "all".

    Scope narrows the kubelet's node-wide plan; it never changes what the policy selects.
    `pods` matches a pod name, `namespace/name` or UID. `older_than` seconds: only containers
    that finished (or, never started, were created) at least that long ago. `selector` (`-l`):
    only pods whose labels it matches; the labels come from the runtime's sandboxes, given
    with `with_sandboxes` — until then (or for a pod without a known sandbox) nothing matches.
    """

    namespaces: frozenset[str] = field(default_factory=frozenset)
    exclude_namespaces: frozenset[str] = field(default_factory=frozenset)
    pods: frozenset[str] = field(default_factory=frozenset)
    older_than: float | None = None
    selector: Selector | None = None
    #: Pod labels by sandbox ID, and by pod UID (from the pod's newest sandbox).
    by_sandbox: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: _NONE, compare=False, repr=False
    )
    by_uid: Mapping[str, Mapping[str, str]] = field(
        default_factory=lambda: _NONE, compare=False, repr=False
    )

    @property
    def everything(self) -> bool:
        """No namespace, pod or label filter given."""
        return not (self.namespaces or self.exclude_namespaces or self.pods or self.selector)

    def with_sandboxes(self, sandboxes: Iterable[Sandbox]) -> Scope:
        """This scope with the pod labels of `sandboxes` (the runtime's `ListPodSandbox`) to
        match `selector` against. Without a selector, this scope itself."""
        if self.selector is None:
            return self
        by_sandbox: dict[str, Mapping[str, str]] = {}
        newest: dict[str, tuple[tuple[int, int, str], Mapping[str, str]]] = {}
        for s in sandboxes:
            labels = pod_labels(s)
            if labels is None:
                continue
            by_sandbox[s.id] = labels
            order = (s.created_at, s.attempt, s.id)
            if s.uid and (s.uid not in newest or newest[s.uid][0] < order):
                newest[s.uid] = (order, labels)
        by_uid = {uid: labels for uid, (_, labels) in newest.items()}
        return replace(
            self, by_sandbox=MappingProxyType(by_sandbox), by_uid=MappingProxyType(by_uid)
        )

    def _labels_match(self, labels: Mapping[str, str] | None) -> bool:
        """The selector's verdict on a pod's labels (None: unknown, no match); no selector:
        True."""
        if self.selector is None:
            return True
        return labels is not None and self.selector.matches(labels)

    def selects(self, c: Container) -> bool:
        """Namespace, pod and label filters (not `older_than`, which `plan_containers`
        reports). Labels are those of the container's sandbox (`pod_sandbox_id`)."""
        if self.everything:
            return True
        return self._names_match(c.pod_namespace, c.pod_name, c.pod_uid) and self._labels_match(
            self.by_sandbox.get(c.pod_sandbox_id)
        )

    def selects_sandbox(self, s: Sandbox) -> bool:
        """Namespace, pod and label filters for a sandbox (labels: its own)."""
        if self.everything:
            return True
        labels = pod_labels(s) if self.selector is not None else None
        return self._names_match(s.namespace, s.name, s.uid) and self._labels_match(labels)

    def selects_pod(self, namespace: str, name: str, uid: str) -> bool:
        """Whether the namespace, pod and label filters let this pod through (labels: those
        of the newest sandbox of `uid`; an empty `uid` matches no selector)."""
        return self._names_match(namespace, name, uid) and self._labels_match(
            self.by_uid.get(uid) if uid else None
        )

    def _names_match(self, namespace: str, name: str, uid: str) -> bool:
        if self.namespaces and namespace not in self.namespaces:
            return False
        if namespace in self.exclude_namespaces:
            return False
        return not self.pods or bool({name, f"{namespace}/{name}", uid} & self.pods)

    def to_dict(self) -> dict[str, Any]:
        """The scope as shown in a plan's `policy.scope`: sorted lists, `older_than` as a Go
        duration, `selector` in canonical text (None when not given)."""
        return {
            "namespaces": sorted(self.namespaces),
            "exclude_namespaces": sorted(self.exclude_namespaces),
            "pods": sorted(self.pods),
            "selector": None if self.selector is None else str(self.selector),
            "older_than": None if self.older_than is None else format_go_duration(self.older_than),
        }
