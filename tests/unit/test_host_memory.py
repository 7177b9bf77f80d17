"""Memory and PID eviction signals read from host trees: cgroup layout detection, root and
kubepods working sets, pod cgroups of both drivers, /proc/meminfo and the PID figures."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegc_cli.core.errors import BadInput, SignalUnavailable
from kubegc_cli.node.host import cgroups
from kubegc_cli.node.host.cgroups import (
    CgroupLayout,
    CgroupMemory,
    PodCgroupScan,
    detect_layout,
    find_pod_cgroups,
    read_cgroup_memory,
    read_pod_cgroups,
)
from kubegc_cli.node.host.memory import (
    NodeMemory,
    allocatable_memory,
    node_memory,
    pid_available,
    read_meminfo,
)
from kubegc_cli.node.host.mounts import parse_mount_filesystems
from tests.unit.hostfixtures import (
    MOUNTINFO_HYBRID,
    MOUNTINFO_NO_CGROUP,
    MOUNTINFO_V1,
    MOUNTINFO_V2,
    V1_NO_LIMIT,
    V1_ROOT,
    V2_ROOT,
    mountinfo_line,
    pod_cgroup_path,
    put,
    write_meminfo,
    write_mountinfo,
    write_pid_files,
    write_v1_cgroup,
    write_v2_cgroup,
    write_v2_root,
)

GUARANTEED = "0f3c1a2b-4d5e-6f70-8192-a3b4c5d6e7f8"
BURSTABLE = "1a2b3c4d-0000-4000-8000-000000000001"
BESTEFFORT = "2b3c4d5e-0000-4000-8000-000000000002"
STATIC = "6f1c2d3e4b5a69788796a5b4c3d2e1f0"  # a static pod's UID is a hash without dashes


# --- trees -----------------------------------------------------------------------------------


def v1_cgroupfs_node(root: Path) -> None:
    """Case (1): cgroup v1, cgroupfs driver.

    MemTotal 16,384,000 kB → capacity 16,384,000 × 1024 = 16,777,216,000 bytes.
    Root: usage 9,000,000,000 − total_inactive_file 1,000,000,000 = working set 8,000,000,000;
    memory.available = 16,777,216,000 − 8,000,000,000 = 8,777,216,000.
    kubepods: limit 12,000,000,000; usage 6,000,000,000 − inactive 500,000,000 = 5,500,000,000;
    allocatable available = 12,000,000,000 − 5,500,000,000 = 6,500,000,000.
    """
    write_mountinfo(root, MOUNTINFO_V1)
    write_meminfo(root, 16_384_000, mem_available_kb=14_000_000)
    write_v1_cgroup(
        root, V1_ROOT, usage=9_000_000_000, inactive_file=1_000_000_000, active_file=3_000_000_000
    )
    write_v1_cgroup(
        root,
        f"{V1_ROOT}/kubepods",
        usage=6_000_000_000,
        inactive_file=500_000_000,
        active_file=700_000_000,
        limit=12_000_000_000,
    )


def v2_systemd_node(root: Path) -> None:
    """Case (2): cgroup v2, systemd driver, one pod of each QoS class.

    MemTotal 8,000,000 kB → capacity 8,192,000,000.
    Root (no memory.current): usage = anon 3,000,000,000 + file 2,500,000,000 = 5,500,000,000;
    working set = 5,500,000,000 − inactive_file 1,200,000,000 = 4,300,000,000;
    memory.available = 8,192,000,000 − 4,300,000,000 = 3,892,000,000.
    kubepods.slice: memory.current 4,000,000,000 − inactive_file 500,000,000 = working set
    3,500,000,000; memory.max 6,000,000,000 → allocatable available 2,500,000,000.
    """
    write_mountinfo(root, MOUNTINFO_V2)
    write_meminfo(root, 8_000_000, mem_available_kb=6_000_000)
    write_v2_root(
        root,
        anon=3_000_000_000,
        file=2_500_000_000,
        inactive_file=1_200_000_000,
        active_file=800_000_000,
    )
    pods = f"{V2_ROOT}/kubepods.slice"
    write_v2_cgroup(
        root,
        pods,
        current=4_000_000_000,
        inactive_file=500_000_000,
        active_file=300_000_000,
        max_="6000000000",
    )
    for qos in ("burstable", "besteffort"):
        write_v2_cgroup(root, f"{pods}/kubepods-{qos}.slice", current=0, inactive_file=0)
    write_v2_cgroup(
        root,
        pod_cgroup_path(pods, "systemd", "guaranteed", GUARANTEED),
        current=2_000_000_000,
        inactive_file=100_000_000,
        max_="2147483648",
        pids=[101],
    )
    write_v2_cgroup(
        root,
        pod_cgroup_path(pods, "systemd", "burstable", BURSTABLE),
        current=1_500_000_000,
        inactive_file=2_000_000_000,  # more inactive cache than usage: working set 0
    )
    write_v2_cgroup(
        root,
        pod_cgroup_path(pods, "systemd", "besteffort", BESTEFFORT),
        current=300_000_000,
        inactive_file=0,
    )


# --- (1) and (2): the signals, exact ---------------------------------------------------------


def test_v1_cgroupfs_memory_available_exact(tmp_path: Path) -> None:
    v1_cgroupfs_node(tmp_path)
    layout = detect_layout(tmp_path)
    assert layout == CgroupLayout(1, V1_ROOT, "cgroupfs", f"{V1_ROOT}/kubepods")

    node = node_memory(tmp_path, layout)
    assert node.capacity == 16_777_216_000
    assert node.usage == 9_000_000_000
    assert node.inactive_file == 1_000_000_000  # total_inactive_file, not the local line
    assert node.active_file == 3_000_000_000
    assert node.working_set == 8_000_000_000
    assert node.available == 8_777_216_000
    assert node.mem_available == 14_000_000 * 1024
    assert node.cgroup_version == 1
    assert node.sources["usage"] == "/sys/fs/cgroup/memory/memory.usage_in_bytes"
    assert node.sources["inactive_file"] == "/sys/fs/cgroup/memory/memory.stat"
    assert node.sources["capacity"] == "/proc/meminfo"
    # active_file 3,000,000,000 > 10% of capacity (1,677,721,600); MemAvailable
    # 14,336,000,000 − available 8,777,216,000 = 5,558,784,000, more than half of active_file.
    assert node.active_file_drags_available

    alloc = allocatable_memory(tmp_path, layout, None)
    assert alloc is not None
    assert alloc.cgroup == f"{V1_ROOT}/kubepods"
    assert (alloc.allocatable, alloc.allocatable_source) == (12_000_000_000, "cgroup limit")
    assert alloc.working_set == 5_500_000_000
    assert alloc.available == 6_500_000_000


def test_v2_systemd_node_memory_uses_root_anon_plus_file(tmp_path: Path) -> None:
    v2_systemd_node(tmp_path)
    layout = detect_layout(tmp_path)
    assert layout == CgroupLayout(2, V2_ROOT, "systemd", f"{V2_ROOT}/kubepods.slice")
    assert not (tmp_path / "sys/fs/cgroup/memory.current").exists()

    node = node_memory(tmp_path, layout)
    assert (node.capacity, node.usage, node.working_set) == (
        8_192_000_000,
        5_500_000_000,
        4_300_000_000,
    )
    assert node.available == 3_892_000_000
    assert node.sources["usage"] == "/sys/fs/cgroup/memory.stat"
    # active_file 800,000,000 < 10% of 8,192,000,000: no page-cache note.
    assert not node.active_file_drags_available


@pytest.mark.parametrize(
    ("given_allocatable", "limit", "source", "available"),
    [
        # memory.max 6,000,000,000 − working set 3,500,000,000
        (None, 6_000_000_000, "cgroup limit", 2_500_000_000),
        # a given allocatable wins over the cgroup's limit: 5,000,000,000 − 3,500,000,000
        (5_000_000_000, 5_000_000_000, "given", 1_500_000_000),
        # not clamped: 3,000,000,000 − 3,500,000,000
        (3_000_000_000, 3_000_000_000, "given", -500_000_000),
    ],
)
def test_v2_systemd_allocatable_available(
    tmp_path: Path, given_allocatable: int | None, limit: int, source: str, available: int
) -> None:
    v2_systemd_node(tmp_path)
    alloc = allocatable_memory(tmp_path, detect_layout(tmp_path), given_allocatable)
    assert alloc is not None
    assert alloc.cgroup == "/sys/fs/cgroup/kubepods.slice"
    assert (alloc.allocatable, alloc.allocatable_source) == (limit, source)
    assert alloc.cgroup_limit == 6_000_000_000
    assert (alloc.usage, alloc.inactive_file, alloc.active_file) == (
        4_000_000_000,
        500_000_000,
        300_000_000,
    )
    assert alloc.working_set == 3_500_000_000
    assert alloc.available == available
    assert alloc.available + alloc.working_set == alloc.allocatable


def test_v2_systemd_pods_of_each_qos(tmp_path: Path) -> None:
    v2_systemd_node(tmp_path)
    pods = read_pod_cgroups(tmp_path, detect_layout(tmp_path)).pods
    got = [(p.uid, p.qos, p.memory.working_set, p.memory.limit, p.processes) for p in pods]
    assert got == [
        # 2,000,000,000 − 100,000,000; memory.max 2 GiB
        (GUARANTEED, "guaranteed", 1_900_000_000, 2_147_483_648, 1),
        # 1,500,000,000 − 2,000,000,000 clamps at 0; memory.max "max"
        (BURSTABLE, "burstable", 0, None, 0),
        (BESTEFFORT, "besteffort", 300_000_000, None, 0),
    ]
    assert pods[0].path == (
        "/sys/fs/cgroup/kubepods.slice/kubepods-pod0f3c1a2b_4d5e_6f70_8192_a3b4c5d6e7f8.slice"
    )


@pytest.mark.parametrize(
    ("allocatable", "kubepods_max", "expected"),
    [(None, "max", None), (4_000_000_000, "max", 500_000_000)],
)
def test_allocatable_without_a_limit(
    tmp_path: Path, allocatable: int | None, kubepods_max: str, expected: int | None
) -> None:
    # kubepods: 3,600,000,000 − 100,000,000 = working set 3,500,000,000, no limit of its own.
    write_mountinfo(tmp_path, MOUNTINFO_V2)
    write_v2_cgroup(
        tmp_path,
        f"{V2_ROOT}/kubepods",
        current=3_600_000_000,
        inactive_file=100_000_000,
        max_=kubepods_max,
    )
    alloc = allocatable_memory(tmp_path, detect_layout(tmp_path), allocatable)
    assert (alloc.available if alloc else None) == expected


def test_allocatable_without_kubepods_is_none(tmp_path: Path) -> None:
    write_mountinfo(tmp_path, MOUNTINFO_V2)
    write_v2_root(tmp_path, anon=1, file=1, inactive_file=0)
    layout = detect_layout(tmp_path)
    assert (layout.driver, layout.pods_cgroup) == ("", None)
    assert allocatable_memory(tmp_path, layout, 1_000_000) is None
    assert read_pod_cgroups(tmp_path, layout) == PodCgroupScan()


def test_allocatable_must_be_positive(tmp_path: Path) -> None:
    v2_systemd_node(tmp_path)
    with pytest.raises(BadInput, match="must be positive"):
        allocatable_memory(tmp_path, detect_layout(tmp_path), 0)


# --- (3) pod walks of the other two driver/version pairs -------------------------------------


def _pod_tree(root: Path, version: int, driver: str) -> tuple[CgroupLayout, str]:
    if version == 1:
        write_mountinfo(root, MOUNTINFO_V1)
        base, write = V1_ROOT, _v1_small
    else:
        write_mountinfo(root, MOUNTINFO_V2)
        base, write = V2_ROOT, _v2_small
    pods = f"{base}/{'kubepods.slice' if driver == 'systemd' else 'kubepods'}"
    write(root, pods, [])
    if driver == "systemd":
        qos_dirs = ["kubepods-burstable.slice", "kubepods-besteffort.slice"]
        # look-alikes that are not pods: an empty UID, a plain file with a pod-like name
        write(root, f"{pods}/kubepods-burstable.slice/kubepods-burstable-pod.slice", [])
        put(root, f"{pods}/kubepods-podnotadir.slice", "")
    else:
        qos_dirs = ["burstable", "besteffort"]
        write(root, f"{pods}/pod", [])
        put(root, f"{pods}/burstable/podnotadir", "")
    for q in qos_dirs:
        write(root, f"{pods}/{q}", [])
    # Guaranteed pod: the pod cgroup holds no process itself; two containers do, and one
    # v1-style cgroup.procs repeats a PID (counted once): 0 + 2 + 1 + 1 (nested) = 4.
    g = pod_cgroup_path(pods, driver, "guaranteed", GUARANTEED)
    write(root, g, [])
    write(root, f"{g}/ctr-a", [10, 11, 11])
    write(root, f"{g}/ctr-b", [12])
    write(root, f"{g}/ctr-b/inner", [13])
    write(root, pod_cgroup_path(pods, driver, "guaranteed", STATIC), [20])
    write(root, pod_cgroup_path(pods, driver, "burstable", BURSTABLE), [30, 31])
    write(root, pod_cgroup_path(pods, driver, "besteffort", BESTEFFORT), [])
    layout = detect_layout(root)
    assert layout.driver == driver
    return layout, pods


def _v1_small(root: Path, path: str, pids: list[int]) -> None:
    write_v1_cgroup(root, path, usage=1000, inactive_file=100, limit=V1_NO_LIMIT, pids=pids)


def _v2_small(root: Path, path: str, pids: list[int]) -> None:
    write_v2_cgroup(root, path, current=1000, inactive_file=100, pids=pids)


@pytest.mark.parametrize(("version", "driver"), [(1, "systemd"), (2, "cgroupfs"), (1, "cgroupfs")])
def test_pod_walk_finds_every_pod(tmp_path: Path, version: int, driver: str) -> None:
    layout, pods = _pod_tree(tmp_path, version, driver)
    scan = read_pod_cgroups(tmp_path, layout)
    assert (scan.unreadable, scan.unlisted) == ([], [])
    found = scan.pods
    assert [(p.uid, p.qos, p.processes) for p in found] == [
        (GUARANTEED, "guaranteed", 4),
        (BURSTABLE, "burstable", 2),
        (BESTEFFORT, "besteffort", 0),
        (STATIC, "guaranteed", 1),
    ]
    assert [p.path for p in found] == [
        pod_cgroup_path(pods, driver, q, u)
        for u, q in [
            (GUARANTEED, "guaranteed"),
            (BURSTABLE, "burstable"),
            (BESTEFFORT, "besteffort"),
            (STATIC, "guaranteed"),
        ]
    ]
    assert all(p.memory.working_set == 900 and p.memory.limit is None for p in found)


def test_pod_vanishing_while_read_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layout, pods = _pod_tree(tmp_path, 2, "cgroupfs")
    victim = pod_cgroup_path(pods, "cgroupfs", "burstable", BURSTABLE)
    real = cgroups.read_cgroup_memory

    def remove_then_read(
        host_root: Path, lay: CgroupLayout, path: str, *, root: bool = False
    ) -> CgroupMemory:
        if path == victim:  # the pod is removed between the listing and the read
            shutil.rmtree(tmp_path / victim.lstrip("/"))
        return real(host_root, lay, path, root=root)

    monkeypatch.setattr(cgroups, "read_cgroup_memory", remove_then_read)
    scan = read_pod_cgroups(tmp_path, layout)
    assert [p.uid for p in scan.pods] == [GUARANTEED, BESTEFFORT, STATIC]
    assert [(u.uid, u.qos, u.path) for u in scan.unreadable] == [(BURSTABLE, "burstable", victim)]
    assert scan.unreadable[0].reason == f"{victim} was removed while it was read"


@pytest.mark.parametrize(
    ("version", "mutate", "why"),
    [
        (1, ["cgroup.procs"], "cgroup.procs: No such file"),
        (1, ["memory.stat", "memory.usage_in_bytes"], "memory.stat: No such file"),
        (1, ["memory.usage_in_bytes"], "memory.usage_in_bytes: No such file"),
        (1, "total_active_file", "memory.stat: no total_active_file line"),
        (1, "total_inactive_file", "memory.stat: no total_inactive_file line"),
        (2, ["memory.current"], "memory.current: No such file"),
        (2, "inactive_file", "memory.stat: no inactive_file line"),
    ],
)
def test_one_unreadable_pod_cgroup_leaves_the_others(
    tmp_path: Path, version: int, mutate: list[str] | str, why: str
) -> None:
    """A pod cgroup with a file or a memory.stat line missing is that pod alone, unreadable,
    with the file and why; every other pod is read as usual."""
    layout, pods = _pod_tree(tmp_path, version, "cgroupfs")
    victim = pod_cgroup_path(pods, "cgroupfs", "burstable", BURSTABLE)
    local = tmp_path / victim.lstrip("/")
    if isinstance(mutate, list):
        for name in mutate:
            (local / name).unlink()
    else:
        stat = local / "memory.stat"
        kept = [line for line in stat.read_text().splitlines() if line.split()[0] != mutate]
        stat.write_text("\n".join(kept) + "\n")
    scan = read_pod_cgroups(tmp_path, layout)
    assert [p.uid for p in scan.pods] == [GUARANTEED, BESTEFFORT, STATIC]
    assert all(p.memory.working_set == 900 for p in scan.pods)
    [bad] = scan.unreadable
    assert (bad.uid, bad.qos, bad.path) == (BURSTABLE, "burstable", victim)
    assert f"{victim}/{why}" in bad.reason and str(tmp_path) in bad.reason
    assert scan.unlisted == []


def test_an_unreadable_process_count_makes_the_pod_unreadable(tmp_path: Path) -> None:
    layout, pods = _pod_tree(tmp_path, 2, "systemd")
    victim = pod_cgroup_path(pods, "systemd", "guaranteed", GUARANTEED)
    put(tmp_path, f"{victim}/ctr-a/cgroup.procs", "101\nabc\n")  # a container's, garbled
    scan = read_pod_cgroups(tmp_path, layout)
    assert [p.uid for p in scan.pods] == [BURSTABLE, BESTEFFORT, STATIC]
    [bad] = scan.unreadable
    assert bad.uid == GUARANTEED and "ctr-a/cgroup.procs: not a PID: 'abc'" in bad.reason


def test_a_qos_directory_that_cannot_be_listed_is_said(tmp_path: Path) -> None:
    layout, pods = _pod_tree(tmp_path, 1, "cgroupfs")
    qos = tmp_path / f"{pods}/burstable".lstrip("/")
    shutil.rmtree(qos)
    qos.symlink_to(qos)  # a symlink loop: listing fails (ELOOP), as root too
    scan = read_pod_cgroups(tmp_path, layout)
    assert scan.pods == [] and scan.unreadable == []
    [why] = scan.unlisted
    assert f"cannot list {qos}" in why


def test_find_pod_cgroups_reads_no_file(tmp_path: Path) -> None:
    layout, _ = _pod_tree(tmp_path, 1, "systemd")
    for ref in find_pod_cgroups(tmp_path, layout):  # no memory files needed for the listing
        for name in os.listdir(tmp_path / ref.path.lstrip("/")):
            if name.startswith("memory."):
                os.unlink(tmp_path / ref.path.lstrip("/") / name)
    refs = find_pod_cgroups(tmp_path, layout)
    assert [(r.uid, r.qos) for r in refs] == [
        (GUARANTEED, "guaranteed"),
        (BURSTABLE, "burstable"),
        (BESTEFFORT, "besteffort"),
        (STATIC, "guaranteed"),
    ]


# --- (4) clamp, (5) limits -------------------------------------------------------------------


@pytest.mark.parametrize("version", [1, 2])
def test_working_set_clamps_at_zero(tmp_path: Path, version: int) -> None:
    # usage 2,000,000,000 < inactive 3,000,000,000 → working set 0, available = capacity
    # = 4,000,000 kB × 1024 = 4,096,000,000.
    write_meminfo(tmp_path, 4_000_000)
    if version == 1:
        write_mountinfo(tmp_path, MOUNTINFO_V1)
        write_v1_cgroup(tmp_path, V1_ROOT, usage=2_000_000_000, inactive_file=3_000_000_000)
    else:
        write_mountinfo(tmp_path, MOUNTINFO_V2)
        write_v2_root(tmp_path, anon=500_000_000, file=1_500_000_000, inactive_file=3_000_000_000)
    node = node_memory(tmp_path, detect_layout(tmp_path))
    assert node.usage == 2_000_000_000
    assert node.working_set == 0
    assert node.available == node.capacity == 4_096_000_000


@pytest.mark.parametrize(
    ("v1_limit", "expected"),
    [
        (V1_NO_LIMIT, None),  # what an unlimited v1 cgroup reports
        (2**62, None),
        (2**62 - 4096, 2**62 - 4096),
        (6_000_000_000, 6_000_000_000),
    ],
)
def test_v1_limit(tmp_path: Path, v1_limit: int, expected: int | None) -> None:
    write_mountinfo(tmp_path, MOUNTINFO_V1)
    write_v1_cgroup(tmp_path, f"{V1_ROOT}/x", usage=10, inactive_file=1, limit=v1_limit)
    assert read_cgroup_memory(tmp_path, detect_layout(tmp_path), f"{V1_ROOT}/x").limit == expected


@pytest.mark.parametrize(
    ("v2_max", "expected"), [("max", None), ("6000000000", 6_000_000_000), ("0", 0)]
)
def test_v2_limit(tmp_path: Path, v2_max: str, expected: int | None) -> None:
    write_mountinfo(tmp_path, MOUNTINFO_V2)
    write_v2_cgroup(tmp_path, f"{V2_ROOT}/x", current=10, inactive_file=1, max_=v2_max)
    assert read_cgroup_memory(tmp_path, detect_layout(tmp_path), f"{V2_ROOT}/x").limit == expected


def test_root_flag_ignores_any_limit_file(tmp_path: Path) -> None:
    write_mountinfo(tmp_path, MOUNTINFO_V1)
    write_v1_cgroup(tmp_path, V1_ROOT, usage=10, inactive_file=1, limit=4096)
    layout = detect_layout(tmp_path)
    assert read_cgroup_memory(tmp_path, layout, V1_ROOT, root=True).limit is None
    assert read_cgroup_memory(tmp_path, layout, V1_ROOT).limit == 4096


# --- (6) layout detection --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pid1", "self_", "version", "memory_root"),
    [
        (MOUNTINFO_V1, None, 1, V1_ROOT),
        (MOUNTINFO_V2, None, 2, V2_ROOT),
        # cgroup2 at /sys/fs/cgroup/unified listed before the v1 memory controller: v1 wins
        (MOUNTINFO_HYBRID, None, 1, V1_ROOT),
        # /proc/1/mountinfo unreadable (absent): /proc/self/mountinfo is used
        (None, MOUNTINFO_V2, 2, V2_ROOT),
        # /proc/1/mountinfo shows no cgroup at all: /proc/self/mountinfo is used
        (MOUNTINFO_NO_CGROUP, MOUNTINFO_V1, 1, V1_ROOT),
        # /proc/1 wins when both show one
        (MOUNTINFO_V2, MOUNTINFO_V1, 2, V2_ROOT),
    ],
)
def test_detect_layout(
    tmp_path: Path, pid1: str | None, self_: str | None, version: int, memory_root: str
) -> None:
    if pid1 is not None:
        write_mountinfo(tmp_path, pid1, "1")
    if self_ is not None:
        write_mountinfo(tmp_path, self_, "self")
    (tmp_path / memory_root.lstrip("/")).mkdir(parents=True, exist_ok=True)
    layout = detect_layout(tmp_path)
    assert (layout.version, layout.memory_root) == (version, memory_root)
    assert (layout.driver, layout.pods_cgroup) == ("", None)


def test_v2_cgroup_mounted_elsewhere_only_is_not_a_hierarchy(tmp_path: Path) -> None:
    write_mountinfo(tmp_path, mountinfo_line(31, "/sys/fs/cgroup/unified", "cgroup2", "rw"))
    with pytest.raises(SignalUnavailable, match="no cgroup memory hierarchy"):
        detect_layout(tmp_path)


def test_systemd_driver_wins_when_both_kubepods_exist(tmp_path: Path) -> None:
    write_mountinfo(tmp_path, MOUNTINFO_V2)
    (tmp_path / "sys/fs/cgroup/kubepods").mkdir(parents=True)
    (tmp_path / "sys/fs/cgroup/kubepods.slice").mkdir()
    layout = detect_layout(tmp_path)
    assert (layout.driver, layout.pods_cgroup) == ("systemd", "/sys/fs/cgroup/kubepods.slice")


def test_mount_filesystems_unescape_and_skip_short_lines() -> None:
    text = "\n".join(
        [
            r"40 31 0:37 / /mnt/with\040space rw,relatime shared:1 master:2 - cgroup cg rw,memory",
            "41 31 0:38 / /no/separator rw cgroup2 cgroup2 rw",
            "42 31 0:39 / /short rw - cgroup2",
        ]
    )
    assert parse_mount_filesystems(text) == [("/mnt/with space", "cgroup", "rw,memory")]


# --- (7) unreadable or garbled sources -------------------------------------------------------


def _layout(root: Path) -> CgroupLayout:
    return detect_layout(root)


Mutate = Callable[[Path], None]
Call = Callable[[Path], object]

_NODE: Call = lambda r: node_memory(r, _layout(r))  # noqa: E731
_ALLOC: Call = lambda r: allocatable_memory(r, _layout(r), None)  # noqa: E731
_PIDS: Call = pid_available


def _rm(host_path: str) -> Mutate:
    return lambda r: (r / host_path.lstrip("/")).unlink()


def _write(host_path: str, text: str) -> Mutate:
    def mutate(root: Path) -> None:
        put(root, host_path, text)

    return mutate


@pytest.mark.parametrize(
    ("node", "mutate", "call", "file", "why"),
    [
        ("v1", _rm("/proc/meminfo"), _NODE, "/proc/meminfo", "No such file"),
        ("v1", _write("/proc/meminfo", "MemTotal: lots kB\n"), _NODE, "/proc/meminfo", "line 1"),
        ("v1", _write("/proc/meminfo", "MemTotal 1024 kB\n"), _NODE, "/proc/meminfo", "line 1"),
        ("v1", _write("/proc/meminfo", "MemTotal: 1 MB\n"), _NODE, "/proc/meminfo", "line 1"),
        ("v1", _write("/proc/meminfo", "MemFree: 1 kB\n"), _NODE, "/proc/meminfo", "no MemTotal"),
        (
            "v1",
            _write(f"{V1_ROOT}/memory.stat", "total_active_file 1\n"),
            _NODE,
            f"{V1_ROOT}/memory.stat",
            "no total_inactive_file line",
        ),
        (
            "v1",
            _write(f"{V1_ROOT}/memory.usage_in_bytes", "n/a\n"),
            _NODE,
            f"{V1_ROOT}/memory.usage_in_bytes",
            "non-negative integer",
        ),
        (
            "v1",
            _rm(f"{V1_ROOT}/kubepods/memory.limit_in_bytes"),
            _ALLOC,
            f"{V1_ROOT}/kubepods/memory.limit_in_bytes",
            "No such file",
        ),
        (
            "v2",
            _write(f"{V2_ROOT}/memory.stat", "file 1\ninactive_file 0\nactive_file 0\n"),
            _NODE,
            f"{V2_ROOT}/memory.stat",
            "no anon line",
        ),
        (
            "v2",
            _write(f"{V2_ROOT}/memory.stat", "anon 1\ninactive_file twelve\n"),
            _NODE,
            f"{V2_ROOT}/memory.stat",
            "line 2",
        ),
        (
            "v2",
            _write(f"{V2_ROOT}/kubepods.slice/memory.max", "lots\n"),
            _ALLOC,
            f"{V2_ROOT}/kubepods.slice/memory.max",
            "non-negative integer",
        ),
        (
            "v2",
            _rm(f"{V2_ROOT}/kubepods.slice/memory.current"),
            _ALLOC,
            f"{V2_ROOT}/kubepods.slice/memory.current",
            "No such file",
        ),
        ("v2", _rm("/proc/sys/kernel/pid_max"), _PIDS, "/proc/sys/kernel/pid_max", "No such"),
        (
            "v2",
            _write("/proc/sys/kernel/threads-max", "-1\n"),
            _PIDS,
            "/proc/sys/kernel/threads-max",
            "non-negative integer",
        ),
        ("v2", _write("/proc/loadavg", "0.1 0.2 0.3\n"), _PIDS, "/proc/loadavg", "4th field"),
        ("v2", _write("/proc/loadavg", "0.1 0.2 0.3 3/x 9\n"), _PIDS, "/proc/loadavg", "4th"),
        ("v2", _rm("/proc/1/mountinfo"), _NODE, "/proc/self/mountinfo", "No such file"),
        ("v2", _rm("/proc/1/mountinfo"), _NODE, "/proc/1/mountinfo", "No such file"),
        ("v2", _write("/proc/1/mountinfo", "garbage\n"), _NODE, "/proc/1/mountinfo", "shows no"),
        ("v2", _rm(f"{V2_ROOT}/memory.stat"), _NODE, f"{V2_ROOT}/memory.stat", "No such file"),
    ],
)
def test_unreadable_source_names_the_file(
    tmp_path: Path, node: str, mutate: Mutate, call: Call, file: str, why: str
) -> None:
    (v1_cgroupfs_node if node == "v1" else v2_systemd_node)(tmp_path)
    write_pid_files(tmp_path, pid_max=32768, threads_max=100_000, loadavg="0 0 0 1/100 5")
    mutate(tmp_path)
    with pytest.raises(SignalUnavailable) as info:
        call(tmp_path)
    message = str(info.value)
    assert "\n" not in message
    assert str(tmp_path) in message  # the file actually opened, under the host root
    assert file in message and why in message
    assert info.value.exit_code == 3


def test_memory_root_missing_under_host_root(tmp_path: Path) -> None:
    write_mountinfo(tmp_path, MOUNTINFO_V1)
    with pytest.raises(SignalUnavailable, match=r"sys/fs/cgroup/memory: not a directory"):
        detect_layout(tmp_path)


def test_read_meminfo_units(tmp_path: Path) -> None:
    write_meminfo(tmp_path, 16_384_000, mem_available_kb=1000)
    info = read_meminfo(tmp_path)
    assert info["MemTotal"] == 16_777_216_000
    assert info["MemAvailable"] == 1_024_000
    assert info["Active(file)"] == 204_800 * 1024
    assert info["HugePages_Total"] == 7  # no unit: as is
    assert info["Hugepagesize"] == 2048 * 1024


# --- the page-cache note ---------------------------------------------------------------------


def _node(active_file: int, available: int, mem_available: int | None) -> NodeMemory:
    capacity = 10_000_000_000
    return NodeMemory(
        capacity=capacity,
        usage=capacity - available,
        active_file=active_file,
        inactive_file=0,
        working_set=capacity - available,
        available=available,
        mem_available=mem_available,
        cgroup_version=2,
    )


@pytest.mark.parametrize(
    ("active_file", "available", "mem_available", "drags"),
    [
        # 20% active; gap 5e9 − 3e9 = 2e9 > half of 2e9
        (2_000_000_000, 3_000_000_000, 5_000_000_000, True),
        # 20% active; gap 5e9 − 4.5e9 = 0.5e9 < half of 2e9
        (2_000_000_000, 4_500_000_000, 5_000_000_000, False),
        # gap exactly half of active_file (1e9): not more than half
        (2_000_000_000, 4_000_000_000, 5_000_000_000, False),
        # exactly 10% active is not "more than 10%", whatever the gap
        (1_000_000_000, 1_000_000_000, 9_000_000_000, False),
        (1_000_000_001, 1_000_000_000, 9_000_000_000, True),
        # MemAvailable unknown: no comparison, no note
        (5_000_000_000, 1_000_000_000, None, False),
    ],
)
def test_active_file_note(
    active_file: int, available: int, mem_available: int | None, drags: bool
) -> None:
    assert _node(active_file, available, mem_available).active_file_drags_available is drags


# --- (8) PIDs --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pid_max", "threads_max", "loadavg", "max_pid", "running", "available"),
    [
        # threads-max is the smaller: 126,000 − 1,204 = 124,796
        (4_194_304, 126_000, "0.52 0.58 0.59 3/1204 98765", 126_000, 1204, 124_796),
        # pid_max is the smaller: 32,768 − 182 = 32,586
        (32_768, 192_729, "1.38 1.09 1.17 3/182 1186", 32_768, 182, 32_586),
    ],
)
def test_pid_available(
    tmp_path: Path,
    pid_max: int,
    threads_max: int,
    loadavg: str,
    max_pid: int,
    running: int,
    available: int,
) -> None:
    write_pid_files(tmp_path, pid_max=pid_max, threads_max=threads_max, loadavg=loadavg)
    sample = pid_available(tmp_path)
    assert (sample.max_pid, sample.running, sample.available) == (max_pid, running, available)


# --- (9) this machine ------------------------------------------------------------------------


def _has_cgroup_mount(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            mounts = parse_mount_filesystems(f.read())
    except OSError:
        return False
    return any(fstype in ("cgroup", "cgroup2") for _, fstype, _ in mounts)


def test_this_machine() -> None:
    if not any(_has_cgroup_mount(p) for p in ("/proc/1/mountinfo", "/proc/self/mountinfo")):
        pytest.skip("neither /proc/1/mountinfo nor /proc/self/mountinfo shows a cgroup mount")
    host = Path("/")
    layout = detect_layout(host)
    assert layout.version in (1, 2)
    assert os.path.isdir(layout.memory_root)
    with open("/proc/meminfo", encoding="utf-8") as f:
        mem_total_kb = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    node = node_memory(host, layout)
    assert node.capacity == mem_total_kb * 1024
    assert node.available == node.capacity - node.working_set
    assert 0 <= node.working_set <= node.capacity
    assert node.working_set == max(0, node.usage - node.inactive_file)
    pods = read_pod_cgroups(host, layout).pods
    assert [p.uid for p in pods] == sorted(p.uid for p in pods)

    sample = pid_available(host)
    with open("/proc/sys/kernel/pid_max", encoding="utf-8") as f:
        pid_max = int(f.read())
    with open("/proc/sys/kernel/threads-max", encoding="utf-8") as f:
        threads_max = int(f.read())
    assert sample.max_pid == min(pid_max, threads_max)
    assert 1 <= sample.running < sample.max_pid
    assert sample.available == sample.max_pid - sample.running


# --- property --------------------------------------------------------------------------------

_BYTES = st.integers(min_value=0, max_value=2**50)


@settings(max_examples=60, deadline=None)
@given(
    version=st.sampled_from([1, 2]),
    mem_total_kb=st.integers(min_value=1, max_value=2**40),
    anon=_BYTES,
    file=_BYTES,
    inactive=_BYTES,
    active=_BYTES,
)
def test_working_set_never_negative_and_adds_up(
    version: int, mem_total_kb: int, anon: int, file: int, inactive: int, active: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        write_meminfo(root, mem_total_kb)
        if version == 1:
            write_mountinfo(root, MOUNTINFO_V1)
            write_v1_cgroup(
                root, V1_ROOT, usage=anon + file, inactive_file=inactive, active_file=active
            )
        else:
            write_mountinfo(root, MOUNTINFO_V2)
            write_v2_root(root, anon=anon, file=file, inactive_file=inactive, active_file=active)
        node = node_memory(root, detect_layout(root))
    assert node.capacity == mem_total_kb * 1024
    assert node.working_set >= 0
    assert node.working_set == max(0, anon + file - inactive)
    assert node.available + node.working_set == node.capacity
    assert node.active_file == active


@pytest.mark.parametrize(
    ("driver", "pods_cgroup"),
    [("systemd", "/sys/fs/cgroup/kubepods.slice"), ("cgroupfs", None)],
)
def test_the_runtimes_cgroup_driver_replaces_the_guess(
    tmp_path: Path, driver: str, pods_cgroup: str | None
) -> None:
    """The runtime's RuntimeConfig answer is the driver (KEP-4033: the kubelet takes the
    runtime's); its kubepods cgroup is that driver's, None when that one does not exist."""
    from kubegc_cli.commands.memory import runtime_cgroup_driver
    from kubegc_cli.core.settings import Settings
    from tests.unit.memorycri import MemoryCri, use_runtime

    v2_systemd_node(tmp_path)
    guessed = cgroups.detect_layout(tmp_path)
    assert (guessed.driver, guessed.driver_source) == ("systemd", "guessed from the cgroup tree")
    ui = mock.Mock()
    with use_runtime(MemoryCri({}, {}, cgroup_driver=driver)):
        layout = runtime_cgroup_driver(Settings(host_root=tmp_path), ui, guessed)
    assert (layout.driver, layout.pods_cgroup) == (driver, pods_cgroup)
    assert layout.driver_source == "the runtime (RuntimeConfig)"
    with use_runtime(MemoryCri({}, {})):  # Unimplemented: the guess stays, and says why
        layout = runtime_cgroup_driver(Settings(host_root=tmp_path), ui, guessed)
    assert (layout.driver, layout.pods_cgroup) == ("systemd", guessed.pods_cgroup)
    assert layout.driver_source == (
        "guessed from the cgroup tree (the runtime does not answer RuntimeConfig)"
    )
