"""Writers of small host trees (/proc, /sys/fs/cgroup) under a test directory.

Every function takes the tree's root (what kubegc gets as `--host-root`) and host paths.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pytest

V1_ROOT = "/sys/fs/cgroup/memory"
V2_ROOT = "/sys/fs/cgroup"
V1_NO_LIMIT = 9_223_372_036_854_771_712  # what v1 memory.limit_in_bytes says when unlimited


def put(root: Path, host_path: str, text: str) -> Path:
    """Write `text` to `host_path` under `root`, creating directories."""
    local = root / host_path.lstrip("/")
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(text, encoding="utf-8")
    return local


def mountinfo_line(mount_id: int, point: str, fstype: str, super_options: str) -> str:
    """One mountinfo line (proc(5)) with one optional field."""
    return (
        f"{mount_id} 23 0:{mount_id} / {point} rw,nosuid,nodev,noexec,relatime shared:{mount_id}"
        f" - {fstype} {fstype} {super_options}"
    )


_COMMON = [
    mountinfo_line(22, "/", "ext4", "rw,errors=remount-ro"),
    mountinfo_line(23, "/proc", "proc", "rw"),
    mountinfo_line(24, "/sys", "sysfs", "rw"),
]

MOUNTINFO_V2 = "\n".join(
    [
        *_COMMON,
        mountinfo_line(30, "/sys/fs/cgroup", "cgroup2", "rw,nsdelegate,memory_recursiveprot"),
    ]
)

MOUNTINFO_V1 = "\n".join(
    [
        *_COMMON,
        mountinfo_line(30, "/sys/fs/cgroup", "tmpfs", "ro,mode=755"),
        mountinfo_line(31, "/sys/fs/cgroup/systemd", "cgroup", "rw,xattr,name=systemd"),
        mountinfo_line(32, "/sys/fs/cgroup/cpu,cpuacct", "cgroup", "rw,cpu,cpuacct"),
        mountinfo_line(33, "/sys/fs/cgroup/memory", "cgroup", "rw,memory"),
        mountinfo_line(34, "/sys/fs/cgroup/pids", "cgroup", "rw,pids"),
    ]
)

# Hybrid: v1 controllers plus the unified hierarchy at /sys/fs/cgroup/unified, listed first.
MOUNTINFO_HYBRID = "\n".join(
    [
        *_COMMON,
        mountinfo_line(30, "/sys/fs/cgroup", "tmpfs", "ro,mode=755"),
        mountinfo_line(31, "/sys/fs/cgroup/unified", "cgroup2", "rw,nsdelegate"),
        mountinfo_line(32, "/sys/fs/cgroup/systemd", "cgroup", "rw,xattr,name=systemd"),
        mountinfo_line(33, "/sys/fs/cgroup/memory", "cgroup", "rw,memory"),
    ]
)

MOUNTINFO_NO_CGROUP = "\n".join(_COMMON)


def write_mountinfo(root: Path, text: str, pid: str = "1") -> None:
    """`/proc/<pid>/mountinfo` (`pid` "1" or "self")."""
    put(root, f"/proc/{pid}/mountinfo", text + "\n")


def write_meminfo(root: Path, mem_total_kb: int, mem_available_kb: int | None = None) -> None:
    """A /proc/meminfo with MemTotal (and MemAvailable), a few other lines, one without a
    unit."""
    lines = [f"MemTotal:       {mem_total_kb} kB", "MemFree:          102400 kB"]
    if mem_available_kb is not None:
        lines.append(f"MemAvailable:   {mem_available_kb} kB")
    lines += [
        "Active(file):     204800 kB",
        "HugePages_Total:       7",
        "Hugepagesize:       2048 kB",
    ]
    put(root, "/proc/meminfo", "\n".join(lines) + "\n")


def write_procs(root: Path, path: str, pids: Iterable[int]) -> None:
    put(root, f"{path}/cgroup.procs", "".join(f"{p}\n" for p in pids))


def write_v1_cgroup(
    root: Path,
    path: str,
    *,
    usage: int,
    inactive_file: int,
    active_file: int = 0,
    limit: int = V1_NO_LIMIT,
    pids: Iterable[int] = (),
) -> None:
    """A v1 memory cgroup: usage_in_bytes, limit_in_bytes, memory.stat with both the local
    and the hierarchical (`total_`) lines (the local ones deliberately different), cgroup.procs."""
    put(root, f"{path}/memory.usage_in_bytes", f"{usage}\n")
    put(root, f"{path}/memory.limit_in_bytes", f"{limit}\n")
    stat = {
        "cache": 4096,
        "rss": 8192,
        "inactive_file": 1,
        "active_file": 2,
        "hierarchical_memory_limit": limit,
        "total_cache": inactive_file + active_file,
        "total_rss": usage,
        "total_inactive_file": inactive_file,
        "total_active_file": active_file,
    }
    put(root, f"{path}/memory.stat", "".join(f"{k} {v}\n" for k, v in stat.items()))
    write_procs(root, path, pids)


def write_v2_cgroup(
    root: Path,
    path: str,
    *,
    current: int,
    inactive_file: int,
    active_file: int = 0,
    max_: str = "max",
    pids: Iterable[int] = (),
) -> None:
    """A v2 non-root cgroup: memory.current, memory.max, memory.stat, cgroup.procs."""
    put(root, f"{path}/memory.current", f"{current}\n")
    put(root, f"{path}/memory.max", f"{max_}\n")
    stat = {
        "anon": 1,  # deliberately not what memory.current says: non-root usage is memory.current
        "file": 2,
        "kernel": 4096,
        "inactive_anon": 0,
        "active_anon": 1,
        "inactive_file": inactive_file,
        "active_file": active_file,
        "unevictable": 0,
    }
    put(root, f"{path}/memory.stat", "".join(f"{k} {v}\n" for k, v in stat.items()))
    write_procs(root, path, pids)


def write_v2_root(
    root: Path, *, anon: int, file: int, inactive_file: int, active_file: int = 0
) -> None:
    """The v2 root cgroup: memory.stat only (no memory.current, no memory.max)."""
    stat = {
        "anon": anon,
        "file": file,
        "kernel": 123_456,  # not part of the root usage
        "sock": 0,
        "shmem": 4096,
        "inactive_anon": 0,
        "active_anon": anon,
        "inactive_file": inactive_file,
        "active_file": active_file,
        "workingset_refault_file": 0,
    }
    put(root, f"{V2_ROOT}/memory.stat", "".join(f"{k} {v}\n" for k, v in stat.items()))
    put(root, f"{V2_ROOT}/cgroup.procs", "1\n")


def pod_cgroup_path(pods_cgroup: str, driver: str, qos: str, uid: str) -> str:
    """The host path the kubelet gives a pod's cgroup."""
    if driver == "cgroupfs":
        parent = pods_cgroup if qos == "guaranteed" else f"{pods_cgroup}/{qos}"
        return f"{parent}/pod{uid}"
    escaped = uid.replace("-", "_")
    if qos == "guaranteed":
        return f"{pods_cgroup}/kubepods-pod{escaped}.slice"
    return f"{pods_cgroup}/kubepods-{qos}.slice/kubepods-{qos}-pod{escaped}.slice"


def write_pid_files(root: Path, *, pid_max: int, threads_max: int, loadavg: str) -> None:
    put(root, "/proc/sys/kernel/pid_max", f"{pid_max}\n")
    put(root, "/proc/sys/kernel/threads-max", f"{threads_max}\n")
    put(root, "/proc/loadavg", loadavg + "\n")


def pod_dirs_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let pod directories made a moment ago count as settled (no setup grace period), for
    tests about everything else; the grace period has tests of its own."""
    from kubegc_cli.node.host import residue as host

    monkeypatch.setattr(host, "POD_DIR_GRACE_SECONDS", 0)
