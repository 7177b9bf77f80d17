"""`kubegc memory available` end to end over fixture host trees (numbers worked out by hand)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.unit.hostfixtures import (
    MOUNTINFO_V1,
    MOUNTINFO_V2,
    V1_ROOT,
    V2_ROOT,
    pod_cgroup_path,
    write_meminfo,
    write_mountinfo,
    write_v1_cgroup,
    write_v2_cgroup,
    write_v2_root,
)

UID_A = "aaaaaaaa-0000-0000-0000-000000000001"
UID_B = "bbbbbbbb-0000-0000-0000-000000000002"
UID_C = "cccccccc-0000-0000-0000-000000000003"
NO_RUNTIME = ["-r", "unix:///nonexistent/kubegc-test.sock"]


def v2_systemd_node(root: Path) -> None:
    """MemTotal 8,000,000 kB = 8,192,000,000 B. Root: anon 3e9 + file 2e9 = usage 5e9,
    inactive_file 1.5e9 → working set 3.5e9 → memory.available 4,692,000,000.
    kubepods.slice: current 2e9, inactive 5e8 → working set 1.5e9, memory.max 6e9.
    Pods: A burstable ws 1.2e9−2e8 = 1e9; B besteffort ws 3e8; C guaranteed ws 7e8−6e8 = 1e8."""
    write_mountinfo(root, MOUNTINFO_V2)
    write_meminfo(root, 8_000_000, mem_available_kb=6_000_000)
    write_v2_root(root, anon=3_000_000_000, file=2_000_000_000, inactive_file=1_500_000_000,
                  active_file=400_000_000)  # fmt: skip
    pods = f"{V2_ROOT}/kubepods.slice"
    write_v2_cgroup(root, pods, current=2_000_000_000, inactive_file=500_000_000,
                    max_="6000000000")  # fmt: skip
    for uid, qos, cur, inactive in (
        (UID_A, "burstable", 1_200_000_000, 200_000_000),
        (UID_B, "besteffort", 300_000_000, 0),
        (UID_C, "guaranteed", 700_000_000, 600_000_000),
    ):
        write_v2_cgroup(root, pod_cgroup_path(pods, "systemd", qos, uid), current=cur,
                        inactive_file=inactive)  # fmt: skip


def pods_and_node(tmp_path: Path, allocatable: str | None) -> Path:
    items: list[dict[str, Any]] = [
        {"kind": "Pod", "metadata": {"uid": u, "namespace": "shop", "name": n}, "status": {}}
        for u, n in ((UID_A, "cart-1"), (UID_B, "batch-7"))
    ]
    if allocatable is not None:
        items.append({"kind": "Node", "metadata": {"name": "node-1"},
                      "status": {"allocatable": {"memory": allocatable}}})  # fmt: skip
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"kind": "List", "items": items}))
    return path


def memory(root: Path, *args: str) -> tuple[int, str, str]:
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), *NO_RUNTIME,
         "memory", "available", *args],
        capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/"},
    )  # fmt: skip
    return res.returncode, res.stdout, res.stderr


def test_v2_systemd_node_allocatable_and_top_pods(tmp_path: Path) -> None:
    root = tmp_path / "host"
    v2_systemd_node(root)
    pods = pods_and_node(tmp_path, "5Gi")
    code, out, err = memory(root, "--pods-file", str(pods), "--node-name", "node-1", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    node = doc["memory.available"]
    assert node["capacity"] == 8_192_000_000
    assert node["usage"] == 5_000_000_000 and node["working_set"] == 3_500_000_000
    assert node["available"] == 4_692_000_000
    assert node["mem_available"] == 6_144_000_000
    alloc = doc["allocatableMemory.available"]
    assert alloc["allocatable"] == 5 * 1024**3 and alloc["working_set"] == 1_500_000_000
    assert alloc["available"] == 5 * 1024**3 - 1_500_000_000
    assert alloc["cgroup_limit"] == 6_000_000_000
    assert doc["cgroup"] == {"version": 2, "driver": "systemd", "memory_root": "/sys/fs/cgroup",
                             "pods_cgroup": "/sys/fs/cgroup/kubepods.slice"}  # fmt: skip
    assert [(p["uid"], p["name"], p["qos"], p["working_set"]) for p in doc["pods"]] == [
        (UID_A, "cart-1", "burstable", 1_000_000_000),
        (UID_B, "batch-7", "besteffort", 300_000_000),
        (UID_C, "", "guaranteed", 100_000_000),  # not in the pod source, runtime unreachable
    ]
    assert alloc["allocatable_source"].startswith("Node node-1 status.allocatable (file:")


def test_allocatable_falls_back_to_the_cgroup_limit_and_top_limits(tmp_path: Path) -> None:
    root = tmp_path / "host"
    v2_systemd_node(root)
    code, out, err = memory(root, "--top", "1", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    alloc = doc["allocatableMemory.available"]
    assert alloc["allocatable_source"] == "cgroup limit"
    assert alloc["available"] == 6_000_000_000 - 1_500_000_000
    assert [p["uid"] for p in doc["pods"]] == [UID_A] and doc["pod_count"] == 3
    code, out, err = memory(root, "--allocatable", "1Gi", "-o", "json")
    assert code == 0, err
    alloc = json.loads(out)["allocatableMemory.available"]
    assert alloc["available"] == 1024**3 - 1_500_000_000  # over allocatable: negative, noted
    assert any("exceeds allocatable" in n for n in json.loads(out)["notes"])


def test_case_1_v1_cgroupfs_and_the_page_cache_note(tmp_path: Path) -> None:
    """Issue case 1 through the command: MemTotal 16,384,000 kB, usage 9e9, inactive 1e9 →
    working set 8e9, memory.available 16,777,216,000 − 8e9 = 8,777,216,000. active_file 3e9
    (18% of capacity) while MemAvailable is 12,000,000 kB = 12,288,000,000: the gap 3.51e9 is
    more than half of active_file, so the #43916 note is shown."""
    root = tmp_path / "host"
    write_mountinfo(root, MOUNTINFO_V1)
    write_meminfo(root, 16_384_000, mem_available_kb=12_000_000)
    write_v1_cgroup(root, V1_ROOT, usage=9_000_000_000, inactive_file=1_000_000_000,
                    active_file=3_000_000_000)  # fmt: skip
    code, out, err = memory(root, "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["memory.available"]["working_set"] == 8_000_000_000
    assert doc["memory.available"]["available"] == 8_777_216_000
    assert doc["memory.available"]["active_file_drags_available"] is True
    assert doc["allocatableMemory.available"] is None and doc["pods"] == []
    code, table, err = memory(root)
    assert code == 0, err
    assert "8.2Gi" in table and "kubernetes#43916" in table and "no kubepods cgroup" in table


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--allocatable", "lots"], "'lots'"),
        (["--allocatable", "0"], "'0'"),
        (["--watch", "-o", "json"], "--watch"),
        (["--watch", "1x"], "'1x'"),
        (["--top", "-1"], "-1"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    root = tmp_path / "host"
    v2_systemd_node(root)
    code, out, err = memory(root, *args)
    assert code == 2, (out, err)
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_unreadable_host_files_are_exit_3(tmp_path: Path) -> None:
    root = tmp_path / "host"
    v2_systemd_node(root)
    (root / "proc" / "meminfo").unlink()
    code, _, err = memory(root)
    assert code == 3 and "/proc/meminfo" in err and err.count("\n") == 1
