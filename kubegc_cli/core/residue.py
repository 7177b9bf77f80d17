"""What the kubelet and the runtime leave behind: findings, the facts a scan works from.

A finding names one leftover object (a directory, a network namespace, an IPAM reservation, a
cgroup, a process, a runtime object), why kubegc considers it residue (`evidence`), the bytes
it holds on disk, whether `kubegc residue clean` may remove it (`safe`) and, when not, why
(`unsafe_reason`), and the exact action cleaning takes (`action`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubegc_cli.core.residue_model import Finding as Finding
    from kubegc_cli.core.residue_model import ScanContext as ScanContext

# Finding types (JSON `type`), in report order.
POD_DIR = "orphaned-pod-dir"
POD_LOG_DIR = "orphaned-pod-log-dir"
LOG_LINK = "dangling-log-link"
DEAD_SANDBOX = "dead-sandbox"
DEAD_CONTAINER = "dead-container"
NETNS = "leaked-netns"
CNI_IP = "leaked-cni-ip"
POD_CGROUP = "orphaned-pod-cgroup"
SHIM = "leaked-shim"
OVERSIZED_LIST = "oversized-runtime-list"
UNUSED_IMAGE = "unused-image"

TYPES = (
    POD_DIR,
    POD_LOG_DIR,
    LOG_LINK,
    DEAD_SANDBOX,
    DEAD_CONTAINER,
    NETNS,
    CNI_IP,
    POD_CGROUP,
    SHIM,
    OVERSIZED_LIST,
    UNUSED_IMAGE,
)

#: What `residue clean` does with a finding that is not safe.
NOTHING = "nothing"


def __getattr__(name: str) -> Any:
    """`Finding` and `ScanContext` load on first use, so that the command line can read the
    finding types without importing the plan machinery."""
    if name in ("Finding", "ScanContext"):
        from kubegc_cli.core import residue_model as model

        return getattr(model, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
