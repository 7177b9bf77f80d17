"""What the kubelet and the runtime leave behind: findings, the facts a scan works from.

A finding names one leftover object (a directory, a network namespace, an IPAM reservation, a
cgroup, a process, a runtime object), why kubegc considers it residue (`evidence`), the bytes
it holds on disk, whether `kubegc residue clean` may remove it (`safe`) and, when not, why
(`unsafe_reason`), and the exact action cleaning takes (`action`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubegc_cli.core.plan import Result

# Finding types (JSON `type`), in report order.
POD_DIR = "orphaned-pod-dir"
POD_LOG_DIR = "orphaned-pod-log-dir"
LOG_LINK = "dangling-log-link"
LOG_OVER_SIZE = "log-over-size"
LOGS_OVER_BUDGET = "logs-over-budget"
ROTATED_PAST_COUNT = "rotated-log-past-count"
ROTATED_UNCOMPRESSED = "uncompressed-rotated-log"
ROTATION_LEFTOVER = "log-rotation-leftover"
EARLIER_INSTANCE_LOG = "earlier-instance-log"
STALE_LOG_LINK = "stale-log-link"
DEAD_SANDBOX = "dead-sandbox"
DEAD_CONTAINER = "dead-container"
NETNS = "leaked-netns"
CNI_IP = "leaked-cni-ip"
POD_CGROUP = "orphaned-pod-cgroup"
SHIM = "leaked-shim"
OVERSIZED_LIST = "oversized-runtime-list"
UNUSED_IMAGE = "unused-image"

#: The findings of container log rotation (`policy.logrotation`): what the kubelet's log
#: rotation leaves behind or has not done yet, judged by the effective containerLogMaxSize
#: and containerLogMaxFiles.
LOG_ROTATION_TYPES = (
    LOG_OVER_SIZE,
    LOGS_OVER_BUDGET,
    ROTATED_PAST_COUNT,
    ROTATED_UNCOMPRESSED,
    ROTATION_LEFTOVER,
    EARLIER_INSTANCE_LOG,
    STALE_LOG_LINK,
)


TYPES = (
    POD_DIR,
    POD_LOG_DIR,
    LOG_LINK,
    *LOG_ROTATION_TYPES,
    DEAD_SANDBOX,
    DEAD_CONTAINER,
    NETNS,
    CNI_IP,
    POD_CGROUP,
    SHIM,
    OVERSIZED_LIST,
    UNUSED_IMAGE,
)


def known_id(recorded: str, known: Iterable[str]) -> bool:
    """`recorded` names one of the `known` IDs: equal, or one a prefix of the other when the
    shorter has at least 12 characters (runtimes accept ID prefixes; an unsure match counts
    as known)."""
    if not recorded:
        return False
    for k in known:
        if k == recorded:
            return True
        short, long_ = (k, recorded) if len(k) < len(recorded) else (recorded, k)
        if len(short) >= 12 and long_.startswith(short):
            return True
    return False


#: What `residue clean` does with a finding that is not safe.
NOTHING = "nothing"


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
    (network name, IP, pod UID, mount points below, process count, ...). `log_note` (JSON
    `note`) says what acting did besides removing: where a rotated log went.
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
    changed_ns: int = 0  # a directory's latest change below it when sized (0: not measured)

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
        """What cleaning it frees: its `bytes`, but none for a live log cleaning rotates
        (`LOG_OVER_SIZE`: the bytes move to the rotated file)."""
        return 0 if self.type == LOG_OVER_SIZE else self.bytes or 0

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
            "expected_bytes": self.planned_bytes,
            "safe_to_clean": self.safe,
            "unsafe_reason": self.unsafe_reason or None,
            "action": self.clean_action,
            "manual_action": self.manual or None,
            "details": dict(self.details),
            "result": self.result.value,
            "error": self.error or None,
            "bytes_freed": self.bytes_freed,
            "note": self.log_note or None,
        }
