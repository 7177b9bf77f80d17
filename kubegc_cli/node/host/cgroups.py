"""The host's cgroup memory hierarchy as the kubelet (through cAdvisor) reads it.

Everything is read under `host_root`, the host's `/` as this process sees it. Paths in the
returned objects are host paths (`/sys/fs/cgroup/...`); error messages name the file actually
opened. Any file needed that cannot be read or parsed raises `SignalUnavailable` (exit 3),
except in pod cgroups: `read_pod_cgroups` reports a pod it cannot read and reads the others.

Rules (kubelet and cAdvisor on Linux):

- working set = usage − inactive_file, clamped at 0 (cAdvisor's libcontainer handler);
  cgroup v1 reads the hierarchical `total_inactive_file`, v2 `inactive_file`.
- The v2 root cgroup has no `memory.current`; its usage is `anon + file` of the root
  `memory.stat` (runc's root-cgroup emulation, which cAdvisor and the kubelet use).
- A limit above 2**62 bytes counts as no limit (the kubelet's `isMemoryUnlimited`).
- Pod cgroups sit under the kubepods cgroup: Guaranteed pods directly, Burstable and
  BestEffort pods one level down, named per cgroup driver (cgroupfs or systemd).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from kubegc_cli.core.errors import SignalUnavailable
from kubegc_cli.node.host.logs import on_host
from kubegc_cli.node.host.mounts import parse_mount_filesystems

CGROUP_MOUNT = "/sys/fs/cgroup"
"""Where cgroup v2 (the unified hierarchy) is mounted on a v2 host."""

MOUNTINFO_SOURCES = ("/proc/1/mountinfo", "/proc/self/mountinfo")
"""Host files read for the mount table, in order: the host init's mount namespace first."""

UNLIMITED = 2**62
"""A cgroup memory limit at or above this many bytes means "no limit" (v1 reports
PAGE_COUNTER_MAX rounded to pages, about 2**63)."""


def read_text(local: str) -> str:
    """The text of the host file at local path `local`. Raises `SignalUnavailable` naming the
    file and the reason when it cannot be read."""
    try:
        with open(local, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as exc:
        raise SignalUnavailable(f"cannot read {local}: {exc.strerror or exc}") from None


def _parse_count(local: str, text: str) -> int:
    value = text.strip()
    if not value.isdigit():
        raise SignalUnavailable(
            f"cannot parse {local}: expected a non-negative integer, got {value[:40]!r}"
        )
    return int(value)


def read_int(local: str) -> int:
    """The single non-negative integer in the file at local path `local` (a cgroup or
    /proc value). Raises `SignalUnavailable` naming the file when it cannot be read or holds
    anything else."""
    return _parse_count(local, read_text(local))


def read_flat_keyed(local: str) -> dict[str, int]:
    """A `key value` per line file (cgroup `memory.stat`) at local path `local`, as a dict of
    integers. Raises `SignalUnavailable` naming the file and line on any other line."""
    out: dict[str, int] = {}
    for number, line in enumerate(read_text(local).splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 2 or not parts[1].isdigit():
            raise SignalUnavailable(
                f"cannot parse {local}: line {number} is not 'key value': {line[:60]!r}"
            )
        out[parts[0]] = int(parts[1])
    return out


def _need(stat: dict[str, int], key: str, local: str) -> int:
    if key not in stat:
        raise SignalUnavailable(f"cannot parse {local}: no {key} line")
    return stat[key]


# --- layout ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CgroupLayout:
    """Where the host keeps its memory cgroups.

    `version` is 1 or 2. `memory_root` is the host path of the memory hierarchy's root
    (`/sys/fs/cgroup` on v2, the v1 memory controller's mount point such as
    `/sys/fs/cgroup/memory`). `driver` is the kubelet's cgroup driver as seen from the tree:
    "systemd" when `kubepods.slice` exists under the root, "cgroupfs" when `kubepods` does,
    "" when neither. `pods_cgroup` is the host path of that kubepods cgroup, or None.
    `driver_source` says where the driver came from: the cgroup tree (a guess), or the
    runtime's `RuntimeConfig` (`with_driver`).
    """

    version: int
    memory_root: str
    driver: str
    pods_cgroup: str | None
    driver_source: str = "guessed from the cgroup tree"


def _memory_hierarchy(mounts: list[tuple[str, str, str]]) -> tuple[int, str] | None:
    """(version, mount point) of the memory hierarchy in a mount table, or None.

    A v1 `cgroup` mount carrying the `memory` controller wins over cgroup2: on a hybrid host
    (cgroup2 at /sys/fs/cgroup/unified) the memory controller lives in v1, and cAdvisor reads it
    there. Otherwise a `cgroup2` mount at /sys/fs/cgroup means v2.
    """
    v2 = False
    for point, fstype, options in mounts:
        if fstype == "cgroup" and "memory" in options.split(","):
            return 1, point
        if fstype == "cgroup2" and point == CGROUP_MOUNT:
            v2 = True
    return (2, CGROUP_MOUNT) if v2 else None


#: The kubepods cgroup's name under each cgroup driver.
KUBEPODS = {"systemd": "kubepods.slice", "cgroupfs": "kubepods"}


def with_driver(host_root: Path, layout: CgroupLayout, driver: str, source: str) -> CgroupLayout:
    """`layout` with the cgroup driver a runtime reported (`driver`: "systemd" or
    "cgroupfs"; `source` says who): the kubepods cgroup is that driver's (`KUBEPODS`) when
    it exists under the memory root, else None."""
    name = KUBEPODS[driver]
    path = f"{layout.memory_root.rstrip('/')}/{name}"
    found = path if os.path.isdir(on_host(host_root, path)) else None
    return CgroupLayout(layout.version, layout.memory_root, driver, found, source)


def detect_layout(host_root: Path) -> CgroupLayout:
    """The host's cgroup version, memory hierarchy, cgroup driver and kubepods cgroup.

    Reads `<host_root>/proc/1/mountinfo` (the host init's mount namespace) and, when that
    cannot be read or shows no cgroup memory hierarchy, `<host_root>/proc/self/mountinfo`.
    A v1 `cgroup` mount with the `memory` super option gives v1 at that mount point (also on
    hybrid hosts); else a `cgroup2` mount at /sys/fs/cgroup gives v2. The driver comes from
    which kubepods cgroup exists under the memory root (`kubepods.slice` first).

    Raises `SignalUnavailable` when neither file shows a memory hierarchy (naming both files
    and why) or when the hierarchy's root is not a directory under `host_root`.
    """
    problems: list[str] = []
    found: tuple[int, str] | None = None
    for source in MOUNTINFO_SOURCES:
        local = on_host(host_root, source)
        try:
            text = read_text(local)
        except SignalUnavailable as exc:
            problems.append(str(exc))
            continue
        found = _memory_hierarchy(parse_mount_filesystems(text))
        if found is not None:
            break
        problems.append(f"{local} shows no cgroup memory hierarchy")
    if found is None:
        raise SignalUnavailable("no cgroup memory hierarchy found: " + "; ".join(problems))
    version, memory_root = found
    local_root = on_host(host_root, memory_root)
    if not os.path.isdir(local_root):
        raise SignalUnavailable(f"cannot read cgroup hierarchy {local_root}: not a directory")
    driver, pods_cgroup = "", None
    for name, candidate in (("kubepods.slice", "systemd"), ("kubepods", "cgroupfs")):
        if os.path.isdir(os.path.join(local_root, name)):
            driver, pods_cgroup = candidate, f"{memory_root.rstrip('/')}/{name}"
            break
    return CgroupLayout(
        version=version, memory_root=memory_root, driver=driver, pods_cgroup=pods_cgroup
    )


def cgroup_mounts_visible(host_root: Path) -> bool:
    """Whether a mount table under `host_root` (the host init's, else this process's) lists
    any cgroup filesystem: when not, finding no pod cgroup means nothing."""
    for source in MOUNTINFO_SOURCES:
        try:
            text = read_text(on_host(host_root, source))
        except SignalUnavailable:
            continue
        if any(fs in ("cgroup", "cgroup2") for _, fs, _ in parse_mount_filesystems(text)):
            return True
    return False


def cgroup_hierarchies(host_root: Path) -> list[CgroupLayout]:
    """Every mounted cgroup hierarchy under /sys/fs/cgroup that holds a kubepods cgroup, one
    layout per (hierarchy, kubepods cgroup), sorted by `pods_cgroup`.

    On cgroup v2 that is the unified hierarchy; on v1 every controller's hierarchy (memory,
    cpu, pids, `name=systemd`, ...) and on a hybrid host also the unified one, since the
    kubelet creates a pod's cgroup in each. `memory_root` here holds the hierarchy's mount
    point (whatever its controllers). Both `kubepods.slice` (systemd driver) and `kubepods`
    (cgroupfs) are returned when both exist. Mount tables are read as `detect_layout` reads
    them (the host init's first); none readable, or no cgroup mounts, gives [].
    """
    points: dict[str, int] = {}
    for source in MOUNTINFO_SOURCES:
        try:
            text = read_text(on_host(host_root, source))
        except SignalUnavailable:
            continue
        for point, fstype, _options in parse_mount_filesystems(text):
            if fstype not in ("cgroup", "cgroup2"):
                continue
            if point != CGROUP_MOUNT and not point.startswith(CGROUP_MOUNT + "/"):
                continue
            points.setdefault(point, 1 if fstype == "cgroup" else 2)
        if points:
            break
    out: list[CgroupLayout] = []
    for point, version in points.items():
        local_root = on_host(host_root, point)
        for name, driver in (("kubepods.slice", "systemd"), ("kubepods", "cgroupfs")):
            if os.path.isdir(os.path.join(local_root, name)):
                out.append(
                    CgroupLayout(
                        version=version,
                        memory_root=point,
                        driver=driver,
                        pods_cgroup=f"{point.rstrip('/')}/{name}",
                    )
                )
    out.sort(key=lambda layout: layout.pods_cgroup or "")
    return out


# --- one cgroup's memory ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CgroupMemory:
    """Memory figures of one cgroup, in bytes.

    `path` is the cgroup's host path; `usage` its charged memory; `inactive_file` and
    `active_file` its page cache on the inactive and active LRU lists (hierarchical: the cgroup
    and its descendants); `limit` its memory limit, None when unlimited (v2 "max", v1 value
    >= 2**62, or the root cgroup).
    """

    path: str
    usage: int
    inactive_file: int
    active_file: int
    limit: int | None

    @property
    def working_set(self) -> int:
        """usage − inactive_file, never below 0: cAdvisor's working set, which the kubelet's
        memory signals and pod ranking use."""
        return max(0, self.usage - self.inactive_file)


def read_cgroup_memory(
    host_root: Path, layout: CgroupLayout, path: str, *, root: bool = False
) -> CgroupMemory:
    """The memory figures of the cgroup at host path `path` (bytes).

    cgroup v1: usage = `memory.usage_in_bytes`; inactive/active = `total_inactive_file` /
    `total_active_file` of `memory.stat`; limit = `memory.limit_in_bytes`.
    cgroup v2: usage = `memory.current`; inactive/active = `inactive_file` / `active_file` of
    `memory.stat`; limit = `memory.max`.
    With `root=True` (the hierarchy's root cgroup) the limit is None, as the root has none of
    its own (cAdvisor gives it the machine's capacity), and on v2 the usage is `anon + file`
    of the root `memory.stat`, since the root has no `memory.current` (runc's emulation).

    Raises `SignalUnavailable` naming the file that is missing, unreadable or garbled.
    """
    local = on_host(host_root, path)
    stat_file = os.path.join(local, "memory.stat")
    stat = read_flat_keyed(stat_file)
    limit: int | None
    if layout.version == 1:
        inactive = _need(stat, "total_inactive_file", stat_file)
        active = _need(stat, "total_active_file", stat_file)
        usage = read_int(os.path.join(local, "memory.usage_in_bytes"))
        limit = None if root else read_int(os.path.join(local, "memory.limit_in_bytes"))
    else:
        inactive = _need(stat, "inactive_file", stat_file)
        active = _need(stat, "active_file", stat_file)
        if root:
            usage = _need(stat, "anon", stat_file) + _need(stat, "file", stat_file)
            limit = None
        else:
            usage = read_int(os.path.join(local, "memory.current"))
            limit = _read_v2_max(os.path.join(local, "memory.max"))
    if limit is not None and limit >= UNLIMITED:
        limit = None
    return CgroupMemory(
        path=path, usage=usage, inactive_file=inactive, active_file=active, limit=limit
    )


def _read_v2_max(local: str) -> int | None:
    text = read_text(local)
    return None if text.strip() == "max" else _parse_count(local, text)


# --- pod cgroups -----------------------------------------------------------------------------


class PodCgroupRef(NamedTuple):
    """One pod cgroup found under kubepods: pod UID (with dashes), QoS class, host path."""

    uid: str
    qos: str
    path: str


# (QoS directory under kubepods, QoS class, pod directory prefix, suffix) per cgroup driver.
_POD_DIRS: dict[str, tuple[tuple[str, str, str, str], ...]] = {
    "cgroupfs": (
        ("", "guaranteed", "pod", ""),
        ("burstable", "burstable", "pod", ""),
        ("besteffort", "besteffort", "pod", ""),
    ),
    "systemd": (
        ("", "guaranteed", "kubepods-pod", ".slice"),
        ("kubepods-burstable.slice", "burstable", "kubepods-burstable-pod", ".slice"),
        ("kubepods-besteffort.slice", "besteffort", "kubepods-besteffort-pod", ".slice"),
    ),
}


def _subdirs(local: str) -> list[os.DirEntry[str]] | None:
    """The subdirectories of a cgroup directory; None when it is gone."""
    try:
        with os.scandir(local) as it:
            return [e for e in it if e.is_dir(follow_symlinks=False)]
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise SignalUnavailable(f"cannot list {local}: {exc.strerror or exc}") from None


def find_pod_cgroups(host_root: Path, layout: CgroupLayout) -> list[PodCgroupRef]:
    """Every pod cgroup directory under the kubepods cgroup, sorted by UID, without reading
    any file in it.

    cgroupfs driver: `kubepods/pod<uid>` (Guaranteed), `kubepods/burstable/pod<uid>`,
    `kubepods/besteffort/pod<uid>`. systemd driver: `kubepods.slice/kubepods-pod<uid>.slice`,
    `kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice`, and the same
    with `besteffort`, where the UID's dashes are written as underscores. Empty when there is no
    kubepods cgroup. A QoS directory that is absent holds no pods. Raises `SignalUnavailable`
    when a directory exists but cannot be listed.
    """
    if layout.pods_cgroup is None or layout.driver not in _POD_DIRS:
        return []
    found: list[PodCgroupRef] = []
    for qos_dir, qos, prefix, suffix in _POD_DIRS[layout.driver]:
        host_dir = f"{layout.pods_cgroup}/{qos_dir}" if qos_dir else layout.pods_cgroup
        entries = _subdirs(on_host(host_root, host_dir))
        for entry in entries or ():
            name = entry.name
            if not name.startswith(prefix) or not name.endswith(suffix):
                continue
            uid = name[len(prefix) : len(name) - len(suffix)]
            if not uid:
                continue
            if layout.driver == "systemd":
                uid = uid.replace("_", "-")
            found.append(PodCgroupRef(uid=uid, qos=qos, path=f"{host_dir}/{name}"))
    found.sort(key=lambda ref: (ref.uid, ref.path))
    return found


def _procs(local: str) -> set[int]:
    text = read_text(local)
    pids: set[int] = set()
    for line in text.split():
        if not line.isdigit():
            raise SignalUnavailable(f"cannot parse {local}: not a PID: {line[:40]!r}")
        pids.add(int(line))
    return pids


def count_processes(host_root: Path, path: str) -> int:
    """The number of PIDs in `cgroup.procs` of the cgroup at host path `path` and of all its
    descendants (the kubelet's per-pod process count for `pid.available` ranking).

    Raises `SignalUnavailable` when the cgroup's own `cgroup.procs` cannot be read; a
    descendant that disappears while it is walked is skipped.
    """
    top = on_host(host_root, path)
    total = len(_procs(os.path.join(top, "cgroup.procs")))
    stack = [e.path for e in _subdirs(top) or ()]
    while stack:
        local = stack.pop()
        try:
            total += len(_procs(os.path.join(local, "cgroup.procs")))
        except SignalUnavailable:
            if os.path.isdir(local):
                raise
            continue
        stack.extend(e.path for e in _subdirs(local) or ())
    return total


@dataclass(frozen=True, slots=True)
class PodCgroup:
    """One pod's cgroup: `uid` (with dashes), `qos` ("guaranteed", "burstable",
    "besteffort"), `path` (host path), its `memory` figures (bytes) and `processes` (PIDs in
    the pod cgroup and its descendants)."""

    uid: str
    qos: str
    path: str
    memory: CgroupMemory
    processes: int


@dataclass(frozen=True, slots=True)
class UnreadablePodCgroup:
    """A pod cgroup found under kubepods whose figures could not be read: `uid` (with dashes),
    `qos`, `path` (host path) and `reason`, one line naming the file and why (missing,
    unreadable, garbled, or the cgroup removed while it was read)."""

    uid: str
    qos: str
    path: str
    reason: str


@dataclass(slots=True)
class PodCgroupScan:
    """Every pod cgroup under kubepods: `pods` read whole (sorted by UID), `unreadable` those
    found whose files could not be read (sorted by UID), and `unlisted`, one line per cgroup
    directory (kubepods or a QoS class) that exists but could not be listed, whose pods are
    then not found at all."""

    pods: list[PodCgroup] = field(default_factory=list)
    unreadable: list[UnreadablePodCgroup] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)


def read_pod_cgroups(host_root: Path, layout: CgroupLayout) -> PodCgroupScan:
    """The memory figures (bytes) and process counts of every pod cgroup (see
    `find_pod_cgroups` for the layouts walked), without failing on any one pod.

    Pod cgroups come and go with the pods: a pod cgroup that cannot be read whole — removed
    while it is read, a file missing, unreadable or garbled, a `memory.stat` line missing — is
    listed in `unreadable` with the reason, and the other pods are read as usual. Such a pod
    has no stats, as a pod missing from the kubelet's summary (its eviction ranking puts it
    first). When the kubepods or a QoS directory cannot be listed, `unlisted` says so and no
    pod is found. Raises nothing: every failure is in the result.
    """
    scan = PodCgroupScan()
    try:
        refs = find_pod_cgroups(host_root, layout)
    except SignalUnavailable as exc:
        scan.unlisted.append(str(exc))
        return scan
    for ref in refs:
        try:
            memory = read_cgroup_memory(host_root, layout, ref.path)
            processes = count_processes(host_root, ref.path)
        except SignalUnavailable as exc:
            gone = not os.path.isdir(on_host(host_root, ref.path))
            reason = f"{ref.path} was removed while it was read" if gone else str(exc)
            scan.unreadable.append(UnreadablePodCgroup(ref.uid, ref.qos, ref.path, reason))
            continue
        scan.pods.append(
            PodCgroup(uid=ref.uid, qos=ref.qos, path=ref.path, memory=memory, processes=processes)
        )
    return scan
