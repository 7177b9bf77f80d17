"""The finding model and the facts a scan works from (see the package docstring)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubegc_cli.core.plan import Result
from kubegc_cli.core.pods import is_static_pod_uid
from kubegc_cli.core.residue import NOTHING
from kubegc_cli.node.host.mounts import MountTable


@dataclass(slots=True)
class Finding:
    """One leftover. Satisfies the plan `Action` protocol, so `residue clean` runs findings
    through the same plan/confirm/act machinery as the gc commands.

    `type` is one of `TYPES`; `target` the object: a host path (directories, files, netns,
    cgroups) or an ID (sandbox, container, image, shim PID as `pid:<n>`). `evidence` says why it
    is residue. `bytes` is what it holds on disk (allocated blocks; None when not measured or
    not applicable). `safe` marks what `residue clean` may act on; `unsafe_reason` says why not
    (a mount below it, processes inside, no pod source, left to another command). `action` is
    the exact action cleaning takes on a safe finding, in words an operator can repeat (`rm -r
    ... (one filesystem, no symlinks followed)`, `umount + unlink`, `rmdir`); cleaning takes
    none on an unsafe one, so `clean_action` (what is shown) is then `NOTHING`. `manual` is
    what an operator could run by hand instead ("" when kubegc has nothing to suggest): the
    command that owns the object (`kubegc gc all`, `kubegc gc images`), the check and `kill`
    for a shim, the mounts to release first. `details` holds type-specific facts for JSON
    (network name, IP, pod UID, mount points below, process count, ...).
    """

    type: str
    target: str
    evidence: str
    bytes: int | None
    safe: bool
    action: str
    unsafe_reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)
    manual: str = ""
    result: Result = Result.PLANNED
    error: str = ""
    bytes_freed: int = 0
    log_note: str = ""

    kind = "finding"

    @property
    def id(self) -> str:
        return self.target

    @property
    def rule(self) -> str:
        return self.type

    @property
    def reason(self) -> str:
        return self.evidence if self.safe else f"{self.evidence}; not safe: {self.unsafe_reason}"

    @property
    def planned_bytes(self) -> int:
        return self.bytes or 0

    @property
    def clean_action(self) -> str:
        """What `residue clean` does with it: `action` when safe, else `NOTHING`."""
        return self.action if self.safe else NOTHING

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "finding",
            "type": self.type,
            "id": self.target,
            "evidence": self.evidence,
            "bytes": self.bytes,
            "safe_to_clean": self.safe,
            "unsafe_reason": self.unsafe_reason or None,
            "action": self.clean_action,
            "manual_action": self.manual or None,
            "details": dict(self.details),
            "result": self.result.value,
            "error": self.error or None,
            "bytes_freed": self.bytes_freed,
        }


@dataclass(frozen=True, slots=True)
class ScanContext:
    """The facts every host scanner works from. Paths are host paths (joined under
    `host_root` to read them).

    `pods_known` is False when no pod source could be read: then nothing whose residue-ness
    depends on "the pod is gone" may be marked safe. `pod_uids` are the UIDs the pod source
    lists (pods that still exist); `runtime_pod_uids` the pod UIDs of every sandbox and
    container the runtime has, in any state; `sandbox_ids`/`container_ids` every ID the
    runtime knows, `notready_sandbox_ids` those of its sandboxes that are not READY (they hold
    no live pod network, but the runtime still has them); `sandbox_netns` the network
    namespace paths the runtime's sandboxes use (from verbose PodSandboxStatus; empty when
    the runtime does not say). `runtime_known` is
    False when the runtime could not be listed: then nothing that depends on "the runtime does
    not know it" may be marked safe. `mounts` is this process's mount table (local paths, as
    `on_host` gives them), read at scan time; cleaning reads it again before each removal.
    A table that could not be read (`mounts.known` False) makes no directory safe.
    """

    host_root: Path
    root_dir: str = "/var/lib/kubelet"
    pod_logs_dir: str = "/var/log/pods"
    container_logs_dir: str = "/var/log/containers"
    cni_dir: str = "/var/lib/cni"
    netns_dirs: tuple[str, ...] = ("/run/netns", "/var/run/netns")
    pods_known: bool = False
    pod_uids: frozenset[str] = frozenset()
    runtime_known: bool = False
    runtime_pod_uids: frozenset[str] = frozenset()
    sandbox_ids: frozenset[str] = frozenset()
    notready_sandbox_ids: frozenset[str] = frozenset()
    container_ids: frozenset[str] = frozenset()
    sandbox_netns: frozenset[str] = frozenset()
    mounts: MountTable = field(default_factory=lambda: MountTable(frozenset()))

    def pod_is_gone(self, uid: str) -> bool:
        """Neither the pod source nor the runtime knows pod `uid` (False unless both were read,
        and for a static pod's UID no mirror pod names: `is_static_pod_uid`)."""
        return (
            self.pods_known
            and self.runtime_known
            and uid not in self.pod_uids
            and uid not in self.runtime_pod_uids
            and not is_static_pod_uid(uid)
        )
