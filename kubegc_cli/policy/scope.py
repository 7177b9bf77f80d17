"""Scope: which pods a run may act on (`-n`, `--exclude-namespace`, `--pod`, `--older-than`).

Scope narrows a node-wide plan; it never changes what a policy selects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubegc_cli.model import Container
from kubegc_cli.units import format_go_duration


@dataclass(frozen=True, slots=True)
class Scope:
    """Which containers a run may act on. Empty sets mean "all".

    Scope narrows the kubelet's node-wide plan; it never changes what the policy selects.
    `pods` matches a pod name, `namespace/name` or UID. `older_than` seconds: only containers
    that finished (or, never started, were created) at least that long ago.
    """

    namespaces: frozenset[str] = field(default_factory=frozenset)
    exclude_namespaces: frozenset[str] = field(default_factory=frozenset)
    pods: frozenset[str] = field(default_factory=frozenset)
    older_than: float | None = None

    @property
    def everything(self) -> bool:
        """No namespace or pod filter given."""
        return not (self.namespaces or self.exclude_namespaces or self.pods)

    def selects(self, c: Container) -> bool:
        """Namespace and pod filters (not `older_than`, which `plan_containers` reports)."""
        if self.everything:
            return True
        return self.selects_pod(c.pod_namespace, c.pod_name, c.pod_uid)

    def selects_pod(self, namespace: str, name: str, uid: str) -> bool:
        """Whether the namespace and pod filters let this pod through."""
        if self.namespaces and namespace not in self.namespaces:
            return False
        if namespace in self.exclude_namespaces:
            return False
        return not self.pods or bool({name, f"{namespace}/{name}", uid} & self.pods)

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespaces": sorted(self.namespaces),
            "exclude_namespaces": sorted(self.exclude_namespaces),
            "pods": sorted(self.pods),
            "older_than": None if self.older_than is None else format_go_duration(self.older_than),
        }
