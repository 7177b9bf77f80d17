"""`kubegc memory available` end to end over fixture host trees (numbers worked out by hand)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from queue import Empty, Queue
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
    source = doc["cgroup"].pop("driver_source")
    assert source.startswith("guessed from the cgroup tree (no CRI runtime socket")  # -r
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


def v1_cgroupfs_node_with_pods(root: Path) -> str:
    """MemTotal 4,194,304 kB = 4 GiB; root usage 3.5 GiB, inactive 0 → memory.available
    512 MiB. kubepods: usage 1400 MiB, limit 3 GiB → allocatable available 1672 MiB.
    Pods: A burstable ws 1000 MiB, B besteffort ws 300 MiB, C guaranteed ws 100 MiB.
    Returns the host path of B's cgroup."""
    mib = 1 << 20
    write_mountinfo(root, MOUNTINFO_V1)
    write_meminfo(root, 4 * 1024 * 1024, mem_available_kb=2 * 1024 * 1024)
    write_v1_cgroup(root, V1_ROOT, usage=3584 * mib, inactive_file=0)
    pods = f"{V1_ROOT}/kubepods"
    write_v1_cgroup(root, pods, usage=1400 * mib, inactive_file=0, limit=3072 * mib)
    for uid, qos, ws in ((UID_A, "burstable", 1000), (UID_B, "besteffort", 300),
                         (UID_C, "guaranteed", 100)):  # fmt: skip
        write_v1_cgroup(root, pod_cgroup_path(pods, "cgroupfs", qos, uid), usage=ws * mib,
                        inactive_file=0, pids=[1, 2])  # fmt: skip
    return pod_cgroup_path(pods, "cgroupfs", "besteffort", UID_B)


def _drop_stat_line(path: Path, key: str) -> None:
    kept = [line for line in path.read_text().splitlines() if line.split()[0] != key]
    path.write_text("\n".join(kept) + "\n")


@pytest.mark.parametrize(
    ("files", "stat_line", "why"),
    [
        (["cgroup.procs"], None, "cgroup.procs: No such file"),
        (["memory.stat", "memory.usage_in_bytes"], None, "memory.stat: No such file"),
        ([], "total_active_file", "memory.stat: no total_active_file line"),
    ],
)
def test_one_unreadable_pod_cgroup_is_that_pod_alone_without_stats(
    tmp_path: Path, files: list[str], stat_line: str | None, why: str
) -> None:
    """Pod B's cgroup cannot be read whole: the node figures, the allocatable figures and the
    other pods are as always; B is listed without stats, and a note names it and the file."""
    root = tmp_path / "host"
    b_cgroup = v1_cgroupfs_node_with_pods(root)
    local = root / b_cgroup.lstrip("/")
    for name in files:
        (local / name).unlink()
    if stat_line:
        _drop_stat_line(local / "memory.stat", stat_line)
    pods = pods_and_node(tmp_path, None)
    code, out, err = memory(root, "--pods-file", str(pods), "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["memory.available"]["available"] == 512 << 20
    assert doc["allocatableMemory.available"]["available"] == 1672 << 20
    assert [(p["uid"], p["working_set"]) for p in doc["pods"]] == [
        (UID_A, 1000 << 20),
        (UID_C, 100 << 20),
    ]
    assert doc["pod_count"] == 2
    [b] = doc["pods_without_stats"]
    assert (b["uid"], b["namespace"], b["name"], b["qos"], b["cgroup"]) == (
        UID_B, "shop", "batch-7", "besteffort", b_cgroup,
    )  # fmt: skip
    assert f"{b_cgroup}/{why}" in b["reason"]
    [note] = [n for n in doc["notes"] if UID_B in n]
    assert note.startswith(f"pod shop/batch-7 ({UID_B}) has no stats: ") and why in note
    code, table, err = memory(root, "--pods-file", str(pods))
    assert code == 0, err
    assert "memory.available  512Mi" in table and "allocatableMemory.available  1.6Gi" in table
    assert "cart-1" in table and f"note: pod shop/batch-7 ({UID_B}) has no stats" in table


def test_a_pod_cgroup_removed_while_read_is_said(tmp_path: Path) -> None:
    """The pod directory is there when listed but its files are gone (the pod was removed):
    reported as removed, the command still succeeds."""
    root = tmp_path / "host"
    b_cgroup = v1_cgroupfs_node_with_pods(root)
    local = root / b_cgroup.lstrip("/")
    for f in local.iterdir():
        f.unlink()
    code, out, err = memory(root, "-o", "json")
    assert code == 0, err
    [b] = json.loads(out)["pods_without_stats"]
    assert b["uid"] == UID_B and b["name"] == "" and "memory.stat: No such file" in b["reason"]
    assert any(n.startswith(f"pod uid {UID_B} has no stats") for n in json.loads(out)["notes"])


def test_an_unreadable_root_cgroup_is_still_exit_3(tmp_path: Path) -> None:
    root = tmp_path / "host"
    v1_cgroupfs_node_with_pods(root)
    (root / V1_ROOT.lstrip("/") / "memory.usage_in_bytes").unlink()
    code, out, err = memory(root, "-o", "json")
    assert code == 3 and out == "" and f"{V1_ROOT}/memory.usage_in_bytes" in err


@pytest.mark.parametrize(
    ("stop", "code", "said"), [(signal.SIGINT, 0, ""), (signal.SIGTERM, 143, "terminated")]
)
def test_watch_into_a_pipe_prints_plain_frames_as_they_come(
    tmp_path: Path, stop: signal.Signals, code: int, said: str
) -> None:
    """`--watch` with stdout a pipe: each sample is written (and flushed) at once as a plain
    frame, 200 columns wide, so a long pod row is whole; Ctrl-C ends it with exit 0, a
    SIGTERM (a supervisor's stop) with 143 as every kubegc command."""
    root = tmp_path / "host"
    v2_systemd_node(root)
    long_name = "checkout-frontend-" + "x" * 50
    items = [{"kind": "Pod", "metadata": {"uid": UID_A, "namespace": "storefront-production",
                                          "name": long_name}, "status": {}}]  # fmt: skip
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "List", "items": items}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), *NO_RUNTIME,
         "--pods-file", str(pods), "memory", "available", "--watch", "0.2s"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={"PATH": "/usr/bin:/bin", "HOME": "/"},
    )  # fmt: skip
    out = proc.stdout
    assert out is not None
    queue: Queue[str] = Queue()

    def read() -> None:
        for line in out:
            queue.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        lines: list[str] = []
        while sum(line.startswith("sample at ") for line in lines) < 3:
            try:
                lines.append(queue.get(timeout=20))
            except Empty:
                pytest.fail(f"no frame while the watch runs; got {lines!r}")
        assert proc.poll() is None  # frames arrive while it runs, not at the end
    finally:
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    assert err == (f"kubegc: error: {said}\n" if said else "")  # one line, no empty one
    frames = "".join(lines).split("sample at ")[1:]
    assert len(frames) >= 2
    for frame in frames[:2]:
        assert frame.count("memory.available  4.4Gi") == 1
        [row] = [line for line in frame.splitlines() if long_name in line]
        assert row.rstrip().endswith(UID_A)  # not cut at 80 columns
        assert "\x1b" not in frame  # plain text: no cursor movement, no colour


def test_a_watch_into_a_pipe_its_reader_closes_exits_141(tmp_path: Path) -> None:
    """`--watch | head -3`: once `head` has its lines, the watch ends as a process killed by
    SIGPIPE would, 141, and says nothing (click on its own would make it a silent 1)."""
    root = tmp_path / "host"
    v2_systemd_node(root)
    kubegc = [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), *NO_RUNTIME,
              "--pod-source", "none", "memory", "available", "--watch", "0.1s"]  # fmt: skip
    proc = subprocess.Popen(kubegc, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = proc.stdout
    assert out is not None
    first = out.readline()
    out.close()  # the reader goes away
    _, err = proc.communicate(timeout=60)
    assert first.startswith(b"sample at ")
    assert proc.returncode == 141 and err == b"", err
