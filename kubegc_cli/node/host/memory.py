"""The kubelet's memory and PID eviction signals, read from the host's files.

- `memory.available` (`node_memory`): MemTotal − working set of the **root** memory cgroup.
- `allocatableMemory.available` (`allocatable_memory`): node allocatable (or the kubepods
  cgroup's own limit) − working set of the kubepods cgroup.
- `pid.available` (`pid_available`): min(pid_max, threads-max) − running tasks.

All figures are bytes (memory) or counts (PIDs). Everything is read under `host_root`; any file
needed that cannot be read or parsed raises `SignalUnavailable` (exit 3) naming the file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kubegc_cli.core.errors import BadInput, SignalUnavailable
from kubegc_cli.node.host.cgroups import CgroupLayout, read_cgroup_memory, read_int, read_text
from kubegc_cli.node.host.logs import on_host

MEMINFO = "/proc/meminfo"
PID_MAX = "/proc/sys/kernel/pid_max"
THREADS_MAX = "/proc/sys/kernel/threads-max"
LOADAVG = "/proc/loadavg"

ACTIVE_FILE_SHARE = 10
"""Percent of capacity above which active page cache is large enough to matter (see
`NodeMemory.active_file_drags_available`)."""


def read_meminfo(host_root: Path) -> dict[str, int]:
    """`/proc/meminfo` as a dict: name → bytes (`kB` values × 1024; values without a unit,
    such as `HugePages_Total`, as they are).

    Raises `SignalUnavailable` naming the file when it cannot be read or a line is not
    `Name: value [kB]`.
    """
    local = on_host(host_root, MEMINFO)
    out: dict[str, int] = {}
    for number, line in enumerate(read_text(local).splitlines(), start=1):
        if not line.strip():
            continue
        name, colon, rest = line.partition(":")
        parts = rest.split()
        if (
            not colon
            or not name.strip()
            or not 1 <= len(parts) <= 2
            or not parts[0].isdigit()
            or (len(parts) == 2 and parts[1] != "kB")
        ):
            raise SignalUnavailable(
                f"cannot parse {local}: line {number} is not 'Name: value [kB]': {line[:60]!r}"
            )
        out[name.strip()] = int(parts[0]) * (1024 if len(parts) == 2 else 1)
    return out


def _mem_total(host_root: Path, meminfo: dict[str, int]) -> int:
    if "MemTotal" not in meminfo:
        raise SignalUnavailable(f"cannot parse {on_host(host_root, MEMINFO)}: no MemTotal line")
    return meminfo["MemTotal"]


@dataclass(frozen=True, slots=True)
class NodeMemory:
    """The node's `memory.available` signal and what it is made of, in bytes.

    `capacity` = MemTotal. `usage`, `active_file`, `inactive_file` are the root memory
    cgroup's. `working_set` = max(0, usage − inactive_file) (cAdvisor). `available` =
    capacity − working_set: the kubelet's `memory.available` (the summary's node
    AvailableBytes; its capacity is AvailableBytes + WorkingSetBytes = MemTotal).
    `mem_available` is the kernel's MemAvailable (what `free` shows as available), None when the
    kernel does not report it; it is for comparison only, the kubelet does not use it.
    `cgroup_version` is 1 or 2. `sources` maps each figure's name to the host file read.
    """

    capacity: int
    usage: int
    active_file: int
    inactive_file: int
    working_set: int
    available: int
    mem_available: int | None
    cgroup_version: int
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def active_file_drags_available(self) -> bool:
        """Whether active page cache is what holds `memory.available` down (kubernetes
        issue #43916: the working set counts `active_file`, which the kernel can reclaim).

        True when both hold:

        1. `active_file` is more than 10% of capacity, and
        2. `memory.available` is below MemAvailable by more than half of `active_file`, i.e.
           the kernel counts most of that cache as available while the kubelet counts it as
           used.

        False when MemAvailable is unknown. The usual remedy is equal memory requests and
        limits for the I/O-heavy containers.
        """
        if self.mem_available is None:
            return False
        large = self.active_file * 100 > self.capacity * ACTIVE_FILE_SHARE
        gap = self.mem_available - self.available
        return large and 2 * gap > self.active_file


def node_memory(host_root: Path, layout: CgroupLayout) -> NodeMemory:
    """The kubelet's node-level `memory.available` (bytes).

    capacity = MemTotal × 1024 from /proc/meminfo (cAdvisor's machine capacity, the root
    cgroup's limit). Root memory cgroup: v1 usage = `memory.usage_in_bytes`, inactive =
    `total_inactive_file`; v2 usage = `anon + file` of the root `memory.stat` (the root has no
    `memory.current`), inactive = `inactive_file`. working set = max(0, usage − inactive);
    available = capacity − working set, not clamped (negative only if the working set exceeds
    MemTotal).

    Raises `SignalUnavailable` naming the file that cannot be read or parsed.
    """
    meminfo = read_meminfo(host_root)
    capacity = _mem_total(host_root, meminfo)
    mem = read_cgroup_memory(host_root, layout, layout.memory_root, root=True)
    root = layout.memory_root.rstrip("/")
    stat = f"{root}/memory.stat"
    usage_source = f"{root}/memory.usage_in_bytes" if layout.version == 1 else stat
    working_set = mem.working_set
    return NodeMemory(
        capacity=capacity,
        usage=mem.usage,
        active_file=mem.active_file,
        inactive_file=mem.inactive_file,
        working_set=working_set,
        available=capacity - working_set,
        mem_available=meminfo.get("MemAvailable"),
        cgroup_version=layout.version,
        sources={
            "capacity": MEMINFO,
            "usage": usage_source,
            "inactive_file": stat,
            "active_file": stat,
            "mem_available": MEMINFO,
        },
    )


@dataclass(frozen=True, slots=True)
class AllocatableMemory:
    """The kubelet's `allocatableMemory.available` for the kubepods cgroup, in bytes.

    `cgroup` is the kubepods cgroup's host path. `allocatable` is the figure used as its
    capacity: node allocatable when given (`allocatable_source` "given"), else the cgroup's own
    memory limit ("cgroup limit"). `cgroup_limit` is that limit (None = unlimited). `usage`,
    `active_file`, `inactive_file` are the cgroup's; `working_set` = max(0, usage −
    inactive_file). `available` = allocatable − working_set, **not clamped**: a negative value
    says by how much the pods' working set exceeds allocatable (the kubelet computes this in
    unsigned arithmetic, where such a value would wrap around instead).
    """

    cgroup: str
    allocatable: int
    allocatable_source: str
    cgroup_limit: int | None
    usage: int
    active_file: int
    inactive_file: int
    working_set: int
    available: int


def allocatable_memory(
    host_root: Path, layout: CgroupLayout, allocatable: int | None
) -> AllocatableMemory | None:
    """`allocatableMemory.available` of the kubepods cgroup: limit − working set (bytes),
    the summary's "pods" system container AvailableBytes.

    The limit is `allocatable` (bytes; the Node's allocatable memory or `--allocatable`) when
    given, else the kubepods cgroup's own memory limit (v1 `memory.limit_in_bytes`, v2
    `memory.max`). Returns None when there is no kubepods cgroup, or when it has no limit and
    none is given. Raises `BadInput` when `allocatable` is not positive, `SignalUnavailable`
    naming the file when the kubepods cgroup cannot be read or parsed.
    """
    if allocatable is not None and allocatable <= 0:
        raise BadInput(f"allocatable memory must be positive, got {allocatable}")
    if layout.pods_cgroup is None:
        return None
    mem = read_cgroup_memory(host_root, layout, layout.pods_cgroup)
    if allocatable is not None:
        limit, source = allocatable, "given"
    elif mem.limit is not None:
        limit, source = mem.limit, "cgroup limit"
    else:
        return None
    working_set = mem.working_set
    return AllocatableMemory(
        cgroup=layout.pods_cgroup,
        allocatable=limit,
        allocatable_source=source,
        cgroup_limit=mem.limit,
        usage=mem.usage,
        active_file=mem.active_file,
        inactive_file=mem.inactive_file,
        working_set=working_set,
        available=limit - working_set,
    )


@dataclass(frozen=True, slots=True)
class PidSample:
    """The kubelet's `pid.available`: `max_pid` = min(pid_max, threads-max) (its capacity),
    `running` = tasks on the system (the number after `/` in /proc/loadavg's 4th field),
    `available` = max_pid − running."""

    max_pid: int
    running: int
    available: int


def pid_available(host_root: Path) -> PidSample:
    """The kubelet's `pid.available` from `/proc/sys/kernel/pid_max`,
    `/proc/sys/kernel/threads-max` and `/proc/loadavg` (its pidlimit stats).

    Raises `SignalUnavailable` naming the file that cannot be read or parsed.
    """
    max_pid = min(read_int(on_host(host_root, PID_MAX)), read_int(on_host(host_root, THREADS_MAX)))
    local = on_host(host_root, LOADAVG)
    fields = read_text(local).split()
    tasks = fields[3].split("/") if len(fields) >= 4 else []
    if len(tasks) != 2 or not tasks[1].isdigit():
        raise SignalUnavailable(f"cannot parse {local}: no 'running/total' 4th field")
    running = int(tasks[1])
    return PidSample(max_pid=max_pid, running=running, available=max_pid - running)
