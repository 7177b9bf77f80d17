"""The eviction signals as the kubelet observes them, read from the node.

memory.available and allocatableMemory.available from the root and kubepods memory cgroups
and /proc/meminfo (`node.host.memory`); nodefs, imagefs and containerfs from statvfs of the
kubelet root and of the image filesystem the runtime names (`node.imagefs`); pid.available
from /proc. And what the kubelet's ranking weighs per pod on disk: its logs and local volumes
(`local_disk_usage`) and its containers' writable layers (`writable_layers_by_pod`).
Nothing here judges a threshold: that is `policy.eviction`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.podlogs import pod_uid_from_dir
from kubegc_cli.core.signals import Observation
from kubegc_cli.node.host.bounded import listdir
from kubegc_cli.node.host.cgroups import CgroupLayout, detect_layout
from kubegc_cli.node.host.du import tree_usage
from kubegc_cli.node.host.fs import FsStats, fs_stats
from kubegc_cli.node.host.logs import on_host
from kubegc_cli.node.host.memory import allocatable_memory, node_memory, pid_available
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.imagefs import FsLayout, layout_of

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient

DISK_FAMILIES = ("nodefs", "imagefs", "containerfs")

#: The runtime's (image, container) filesystem mountpoints (`imagefs.runtime_filesystems`).
Filesystems = Callable[[], tuple[list[str], list[str]]]


def families(signals: Iterable[str]) -> set[str]:
    """The signal families (`memory`, `nodefs`, ...) the `signals` need observed; containerfs
    needs nodefs and imagefs too (it is a copy of one of them unless split)."""
    fams = {sig.split(".", 1)[0] for sig in signals}
    if "containerfs" in fams:
        fams |= {"nodefs", "imagefs"}
    return fams


def observe_signals(
    host: Path,
    signals: set[str],
    *,
    root_dir: str,
    allocatable: int | None,
    filesystems: Filesystems,
) -> tuple[dict[str, Observation], dict[str, str], FsLayout]:
    """Observe `signals` (the signals of the thresholds in force) on the host at `host`:
    (observations by signal, unread signal → why, the filesystem layout). `root_dir` is the
    kubelet root (host path), `allocatable` (bytes) replaces the kubepods cgroup limit,
    `filesystems` names the runtime's filesystems (asked only when a disk signal is needed).
    Every failure to read is recorded, never raised: the report says which signals are
    unknown."""
    obs: dict[str, Observation] = {}
    unread: dict[str, str] = {}
    fams = families(signals)
    fs = FsLayout(nodefs=root_dir)

    if signals & {"memory.available", "allocatableMemory.available"}:
        # Each memory signal is read on its own: the root cgroup (memory.available) and the
        # kubepods cgroup (allocatableMemory.available) fail independently.
        try:
            layout: CgroupLayout | None = detect_layout(host)
        except RuntimeUnavailable as exc:
            layout = None
            unread["memory.available"] = unread["allocatableMemory.available"] = str(exc)
        if layout is not None:
            try:
                node = node_memory(host, layout)
                obs["memory.available"] = Observation(
                    "memory.available", node.available, node.available + node.working_set,
                    f"MemTotal − working set of the root memory cgroup (v{layout.version})",
                )  # fmt: skip
            except RuntimeUnavailable as exc:
                unread["memory.available"] = str(exc)
            try:
                alloc = allocatable_memory(host, layout, allocatable)
            except RuntimeUnavailable as exc:
                unread["allocatableMemory.available"] = str(exc)
            else:
                if alloc is not None:
                    obs["allocatableMemory.available"] = Observation(
                        "allocatableMemory.available", alloc.available,
                        alloc.available + alloc.working_set,
                        f"{alloc.allocatable_source} − working set of {alloc.cgroup}",
                    )  # fmt: skip
                # else: no kubepods cgroup with a limit: the signal does not exist on this
                # host (not an unreadable one); its thresholds are not met, as the kubelet
                # skips them

    def disk(family: str, path: str) -> None:
        try:
            st = fs_stats(host, path)
        except RuntimeUnavailable as exc:
            unread[f"{family}.available"] = unread[f"{family}.inodesFree"] = str(exc)
            return
        seen, missing = disk_observations(family, st, path)
        obs.update(seen)
        unread.update(missing)

    if fams & set(DISK_FAMILIES):
        disk("nodefs", root_dir)
    if fams & set(DISK_FAMILIES):  # the layout decides what containerfs and reclaim mean
        try:
            images, containers = filesystems()
            fs = layout_of(host, root_dir, images, containers)
        except (RuntimeUnavailable, BadInput) as exc:
            why = f"image filesystem unknown ({exc})"
            for fam in ("imagefs", "containerfs"):
                unread[f"{fam}.available"] = unread[f"{fam}.inodesFree"] = why
        else:
            disk("imagefs", fs.imagefs)
            if fs.split:
                disk("containerfs", fs.containerfs)
            else:
                obs.update(containerfs_copies(obs, fs))
    if "pid.available" in signals:
        try:
            p = pid_available(host)
            obs["pid.available"] = Observation(
                "pid.available", p.available, p.max_pid,
                "min(pid_max, threads-max) − tasks in /proc/loadavg",
            )  # fmt: skip
        except RuntimeUnavailable as exc:
            unread["pid.available"] = str(exc)
    return obs, unread, fs


def disk_observations(
    family: str, st: FsStats, path: str
) -> tuple[dict[str, Observation], dict[str, str]]:
    """The `<family>.available` and `<family>.inodesFree` observations (signal →
    `Observation`) of one filesystem's `FsStats` `st`, statvfs'd at the host path `path`:
    available = bavail, inodes free = files free, each against its capacity; and the signals
    that cannot be observed (signal → why: a filesystem reporting no inodes)."""
    obs: dict[str, Observation] = {
        f"{family}.available": Observation(
            f"{family}.available", st.available, st.capacity, f"statvfs {path} (bavail)"
        )
    }
    if st.inodes > 0:
        obs[f"{family}.inodesFree"] = Observation(
            f"{family}.inodesFree", st.inodes_free, st.inodes, f"statvfs {path} (files)"
        )
        return obs, {}
    return obs, {f"{family}.inodesFree": f"statvfs {path} reports no inodes"}


def containerfs_copies(obs: Mapping[str, Observation], fs: FsLayout) -> dict[str, Observation]:
    """The `containerfs.*` observations when writable layers share a filesystem with nodefs
    or imagefs (not split): copies of the imagefs ones with a dedicated imagefs, else of the
    nodefs ones (signal → `Observation`; absent when the base was not observed)."""
    base = "imagefs" if fs.dedicated_imagefs else "nodefs"
    out: dict[str, Observation] = {}
    for kind in ("available", "inodesFree"):
        o = obs.get(f"{base}.{kind}")
        if o is not None:
            out[f"containerfs.{kind}"] = replace(o, signal=f"containerfs.{kind}")
    return out


LOCAL_VOLUME_PLUGINS = (
    "kubernetes.io~empty-dir",
    "kubernetes.io~configmap",
    "kubernetes.io~git-repo",
)


def local_disk_usage(
    host_root: Path, pod_logs_dir: str, root_dir: str, uids: set[str]
) -> dict[str, tuple[int, int]]:
    """Pod UID → (bytes, inodes) of its container logs (`podLogsDir`) and local ephemeral
    volumes (emptyDir on disk, configMap, gitRepo under the kubelet root); mounted volumes
    (memory-backed emptyDir) are not entered. Paths are host paths read under `host_root`."""
    mounts = MountTable.read()
    usage: dict[str, list[int]] = {u: [0, 0] for u in uids}
    logs_root = on_host(host_root, pod_logs_dir)
    try:
        entries = listdir(logs_root)  # (bounded: a hung mount never stops the check)
    except OSError:
        entries = []
    for e in entries:
        uid = pod_uid_from_dir(e.name)
        if uid in usage and e.is_dir(follow_symlinks=False):
            t = tree_usage(e.path, mounts)
            usage[uid][0] += t.bytes
            usage[uid][1] += t.inodes
    for uid in uids:
        volumes = on_host(host_root, f"{root_dir}/pods/{uid}/volumes")
        for plugin in LOCAL_VOLUME_PLUGINS:
            try:
                vols = listdir(os.path.join(volumes, plugin))
            except OSError:
                continue
            for v in vols:
                if v.is_dir(follow_symlinks=False):
                    t = tree_usage(v.path, mounts)
                    usage[uid][0] += t.bytes
                    usage[uid][1] += t.inodes
    return {u: (b, i) for u, (b, i) in usage.items()}


def writable_layers_by_pod(client: CriClient, uids: set[str]) -> dict[str, tuple[int, int]]:
    """Pod UID → (bytes, inodes) of its containers' writable layers (CRI ContainerStats), for
    the pods in `uids`. Raises `RuntimeUnavailable` when the runtime cannot be read."""
    out: dict[str, list[int]] = {}
    owner = {c.id: c.pod_uid for c in client.list_containers()}
    layers = client.writable_layers()
    for cid, (b, i) in layers.items():
        uid = owner.get(cid, "")
        if uid in uids:
            acc = out.setdefault(uid, [0, 0])
            acc[0] += b or 0
            acc[1] += i or 0
    return {u: (b, i) for u, (b, i) in out.items()}
