"""The facts a residue scan works from: what the pod source, the runtime and the mount table
said, gathered once and handed to every host scanner (`node.host.residue`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kubegc_cli.core.podlogs import LogOwner, LogRotation
from kubegc_cli.core.pods import is_static_pod_uid
from kubegc_cli.node.host.mounts import MountTable


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
    `log_rotation` is the kubelet's effective containerLogMaxSize / containerLogMaxFiles;
    `log_owners` maps the host path of each live log the runtime has a container for to that
    container, `log_unsure` names the container log directories where a container's log
    name cannot be told (`host.logrotation.log_owners`).
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
    log_rotation: LogRotation = field(default_factory=LogRotation)
    log_owners: Mapping[str, LogOwner] = field(default_factory=dict)
    log_unsure: frozenset[str] = frozenset()

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

    def pod_unknown(self, uid: str) -> bool:
        """A pod directory is residue when the runtime has nothing of the pod and the pod
        source (when read) does not list it."""
        if uid in self.runtime_pod_uids:
            return False
        return not (self.pods_known and uid in self.pod_uids)
