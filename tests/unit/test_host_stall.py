"""Swap and pressure stall information beside the memory signals (`node.host.stall`), over
fixture host trees, and `memory available` / `evict check` showing them — never as a signal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubegc_cli.core.errors import SignalUnavailable
from kubegc_cli.node.host.cgroups import detect_layout
from kubegc_cli.node.host.stall import (
    CGROUP_V1_NOTE,
    Stall,
    Swap,
    cgroup_swap,
    node_swap,
    parse_psi,
    stall_note,
    stalls,
    swap_note,
)
from tests.unit.hostfixtures import MOUNTINFO_V1, V1_ROOT, V2_ROOT, pod_cgroup_path, put
from tests.unit.test_memory_cli import UID_A, UID_B, UID_C, memory, v2_systemd_node

MEMORY_PSI = (
    "some avg10=1.50 avg60=0.75 avg300=0.10 total=123456\n"
    "full avg10=0.25 avg60=0.00 avg300=0.00 total=4567\n"
)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        # the kernel's format (Documentation/accounting/psi.rst): some, then full
        (MEMORY_PSI, Stall("memory", "node", 1.5, 0.75, 0.25, 0.0)),
        # cpu before Linux 5.13 has no full line
        ("some avg10=12.00 avg60=3.10 avg300=1.00 total=9\n", Stall("cpu", "node", 12.0, 3.1)),
        ("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 "
         "avg300=0.00 total=0\n", Stall("io", "node", 0.0, 0.0, 0.0, 0.0)),
    ],
)  # fmt: skip
def test_psi_is_read_as_the_kernel_writes_it(text: str, want: Stall) -> None:
    assert parse_psi("/proc/pressure/x", text, want.resource, "node") == want


@pytest.mark.parametrize(
    "text",
    ["", "full avg10=1.00 avg60=1.00 avg300=0 total=1\n", "some avg10=x avg60=1 total=1\n",
     "some avg10=101 avg60=1 avg300=0 total=1\n", "some avg60=1.0\n",
     "other avg10=1 avg60=1 avg300=1 total=1\nsome avg10=1 avg60=1 avg300=1 total=1\n"],
)  # fmt: skip
def test_a_psi_file_that_is_not_psi_is_named(text: str) -> None:
    with pytest.raises(SignalUnavailable, match="cannot parse /proc/pressure/memory"):
        parse_psi("/proc/pressure/memory", text, "memory", "node")


def psi_node(root: Path) -> None:
    """The v2 node of test_memory_cli, with swap (1 GiB of 4 GiB in use, 300 MiB of it by the
    pods: 200 MiB A, 100 MiB B) and PSI for the node and the kubepods cgroup."""
    v2_systemd_node(root)
    meminfo = root / "proc/meminfo"
    meminfo.write_text(meminfo.read_text() + "SwapTotal:       4194304 kB\n"
                       "SwapFree:        3145728 kB\n")  # fmt: skip
    pods = f"{V2_ROOT}/kubepods.slice"
    put(root, f"{pods}/memory.swap.current", f"{300 * 2**20}\n")
    put(root, f"{pod_cgroup_path(pods, 'systemd', 'burstable', UID_A)}/memory.swap.current",
        f"{200 * 2**20}\n")  # fmt: skip
    put(root, f"{pod_cgroup_path(pods, 'systemd', 'besteffort', UID_B)}/memory.swap.current",
        f"{100 * 2**20}\n")  # fmt: skip
    put(root, "/proc/pressure/memory", MEMORY_PSI)
    put(root, "/proc/pressure/cpu", "some avg10=12.00 avg60=3.10 avg300=1.00 total=9\n")
    put(root, f"{pods}/memory.pressure", "some avg10=2.00 avg60=1.00 avg300=0 total=1\n"
        "full avg10=1.00 avg60=0.50 avg300=0 total=1\n")  # fmt: skip


def test_swap_and_stalls_of_a_v2_node(tmp_path: Path) -> None:
    psi_node(tmp_path)
    layout = detect_layout(tmp_path)
    assert node_swap({"SwapTotal": 4 * 2**30, "SwapFree": 3 * 2**30}) == (4 * 2**30, 2**30)
    assert node_swap({"MemTotal": 1}) == (0, 0)
    assert cgroup_swap(tmp_path, layout, str(layout.pods_cgroup)) == 300 * 2**20
    found = stalls(tmp_path, layout)  # no /proc/pressure/io here: not listed
    assert [(s.resource, s.scope) for s in found] == [
        ("cpu", "node"), ("memory", "node"), ("memory", str(layout.pods_cgroup))]  # fmt: skip
    assert stall_note(found) == (
        "pressure stall, avg10/avg60: cpu some 12/3.1%, memory some 1.5/0.75% full 0.25/0%, "
        "kubepods memory some 2/1% full 1/0.5% (shown only: the kubelet does not evict on it)"
    )
    assert stall_note([]) == "" and swap_note(Swap(0, 0)) == ""
    assert swap_note(Swap(4 * 2**30, 2**30, 300 * 2**20)) == (
        "swap: 1Gi of 4Gi in use, 300Mi of it by pods; memory.available does not count "
        "swap (the kubelet's signal is RAM only)"
    )


def test_swap_of_a_v1_cgroup_is_memsw_less_memory(tmp_path: Path) -> None:
    put(tmp_path, "/proc/1/mountinfo", MOUNTINFO_V1 + "\n")
    (tmp_path / V1_ROOT.lstrip("/")).mkdir(parents=True)
    layout = detect_layout(tmp_path)
    pods = f"{V1_ROOT}/kubepods"
    assert cgroup_swap(tmp_path, layout, pods) is None  # swap not accounted (no memsw)
    put(tmp_path, f"{pods}/memory.usage_in_bytes", "1000\n")
    put(tmp_path, f"{pods}/memory.memsw.usage_in_bytes", "1500\n")
    assert cgroup_swap(tmp_path, layout, pods) == 500
    put(tmp_path, f"{pods}/memory.memsw.usage_in_bytes", "lots\n")
    with pytest.raises(SignalUnavailable, match=r"memory\.memsw\.usage_in_bytes"):
        cgroup_swap(tmp_path, layout, pods)
    assert stalls(tmp_path, layout) == []  # no PSI files, and no cgroup PSI on v1


def test_memory_available_shows_swap_and_stalls_and_counts_neither(tmp_path: Path) -> None:
    psi_node(tmp_path)
    code, out, err = memory(tmp_path, "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["memory.available"]["available"] == 4_692_000_000  # as without swap
    assert doc["swap"] == {"total": 4 * 2**30, "used": 2**30, "pods": 300 * 2**20}
    assert {p["uid"]: p["swap"] for p in doc["pods"]}[UID_A] == 200 * 2**20
    assert [s["resource"] for s in doc["pressure_stall"]] == ["cpu", "memory", "memory"]
    assert any(n.startswith("swap: 1Gi of 4Gi in use") for n in doc["notes"])
    assert any(n.startswith("pressure stall, avg10/avg60:") for n in doc["notes"])
    code, out, err = memory(tmp_path)
    assert code == 0 and "memory.available does not count swap" in out + err
    # each pod's swap in the table of pods, beside its working set
    [head] = [r for r in out.splitlines() if r.split()[:1] == ["POD"]]
    assert "SWAP" in head.split(), out
    [row] = [r for r in out.splitlines() if UID_A in r]
    assert "200Mi" in row.split(), out


def evict(root: Path, *args: str, pods: Path | None = None) -> tuple[int, str, str]:
    """`evict check` over the host tree `root`, its pods from `pods` (a pods file) or none."""
    source = ["--pods-file", str(pods)] if pods is not None else ["--pod-source", "none"]
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), "-r",
         "unix:///nonexistent/kubegc-test.sock", *source, "evict", "check", *args],
        capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/"},
    )  # fmt: skip
    return res.returncode, res.stdout, res.stderr


def test_evict_check_shows_them_beside_the_memory_signals(tmp_path: Path) -> None:
    psi_node(tmp_path)
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    code, out, err = evict(tmp_path, "--eviction-hard", "memory.available<100Mi", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["swap"]["used"] == 2**30 and len(doc["pressure_stall"]) == 3
    assert not any(CGROUP_V1_NOTE in n for n in doc["notes"])
    # a memory threshold met or not is decided by memory.available alone
    [row] = [r for r in doc["thresholds"] if r["signal"] == "memory.available"]
    assert row["observed"] == 4_692_000_000 and row["met"] is False


def test_a_cgroup_v1_node_is_warned_of_kubelets_from_1_35(tmp_path: Path) -> None:
    from tests.unit.hostfixtures import write_meminfo, write_v1_cgroup

    put(tmp_path, "/proc/1/mountinfo", MOUNTINFO_V1 + "\n")
    write_meminfo(tmp_path, 16_384_000)
    write_v1_cgroup(tmp_path, V1_ROOT, usage=9_000_000_000, inactive_file=1_000_000_000)
    code, out, err = memory(tmp_path, "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert CGROUP_V1_NOTE in doc["notes"] and doc["swap"]["total"] == 0
    assert "failCgroupV1: false" in CGROUP_V1_NOTE


def test_evict_check_ranks_pods_with_their_swap_beside_the_working_set(tmp_path: Path) -> None:
    """memory.available 4,692,000,000 < 5Gi: met. Each ranked pod carries its cgroup's swap
    (A 200 MiB, B 100 MiB; C's cgroup accounts none: null), and the table, on this node with
    swap, a SWAP column; the ranking itself is by working set alone."""
    psi_node(tmp_path)
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    items = [
        {
            "kind": "Pod",
            "metadata": {"uid": uid, "namespace": "shop", "name": name},
            "status": {"phase": "Running"},
        }
        for uid, name in ((UID_A, "cart-1"), (UID_B, "batch-7"), (UID_C, "web-3"))
    ]
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "PodList", "items": items}))
    args = ["--eviction-hard", "memory.available<5Gi"]
    code, out, err = evict(tmp_path, *args, "-o", "json", pods=pods)
    assert code == 5, err
    rows = json.loads(out)["ranking"]["memory.available"]
    assert {r["name"]: r["swap"] for r in rows} == {
        "cart-1": 200 * 2**20, "batch-7": 100 * 2**20, "web-3": None}  # fmt: skip
    assert [r["name"] for r in rows] == ["cart-1", "batch-7", "web-3"]  # by working set
    code, out, err = evict(tmp_path, *args, pods=pods)
    assert code == 5, err  # memory.available and its allocatableMemory.available copy
    heads = [r.split() for r in out.splitlines() if r.split()[:2] == ["#", "POD"]]
    assert len(heads) == 2 and all(h[5] == "SWAP" for h in heads), out
    cart = [r.split() for r in out.splitlines() if "shop/cart-1" in r]
    web = [r.split() for r in out.splitlines() if "shop/web-3" in r]
    assert [r[5] for r in cart] == ["200Mi"] * 2 and [r[5] for r in web] == ["-"] * 2, out


def test_evict_check_without_swap_has_no_swap_column(tmp_path: Path) -> None:
    v2_systemd_node(tmp_path)
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "PodList", "items": [
        {"kind": "Pod", "metadata": {"uid": UID_A, "namespace": "shop", "name": "cart-1"},
         "status": {"phase": "Running"}}]}))  # fmt: skip
    code, out, err = evict(tmp_path, "--eviction-hard", "memory.available<5Gi", pods=pods)
    assert code == 5, err
    heads = [r.split() for r in out.splitlines() if r.split()[:2] == ["#", "POD"]]
    assert heads and all("SWAP" not in h and "USAGE" in h for h in heads), out
