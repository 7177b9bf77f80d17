"""`kubegc evict check` end to end over fixture host trees (numbers worked out by hand)."""

from __future__ import annotations

import json
import os
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
    put,
    write_meminfo,
    write_mountinfo,
    write_pid_files,
    write_v1_cgroup,
    write_v2_cgroup,
    write_v2_root,
)

MiB = 1 << 20
NO_RUNTIME = ["-r", "unix:///nonexistent/kubegc-test.sock"]
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/"}  # no kubeconfig: no API pod source


def check(root: Path, *args: str) -> tuple[int, str, str]:
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), *NO_RUNTIME,
         "evict", "check", "--root-dir", "/var/lib/kubelet", *args],
        capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip
    return res.returncode, res.stdout, res.stderr


def v1_node(root: Path, *, available_mib: int) -> None:
    """MemTotal 1,048,576 kB = 1 GiB; usage − total_inactive_file = 1024 − available_mib MiB,
    so memory.available is exactly `available_mib` MiB."""
    write_mountinfo(root, MOUNTINFO_V1)
    write_meminfo(root, 1_048_576, mem_available_kb=available_mib * 1024)
    ws = (1024 - available_mib) * MiB
    write_v1_cgroup(root, V1_ROOT, usage=ws + 10 * MiB, inactive_file=10 * MiB)
    write_pid_files(root, pid_max=32768, threads_max=100_000, loadavg="0.1 0.2 0.3 2/1000 42")
    (root / "var/lib/kubelet").mkdir(parents=True, exist_ok=True)


def by_signal(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["signal"]: t for t in doc["thresholds"]}


def test_case_6_memory_threshold_met_names_memory_pressure(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    code, out, err = check(tmp_path, "--eviction-hard", "memory.available<1Gi", "-o", "json")
    assert code == 5, err
    doc = json.loads(out)
    mem = by_signal(doc)["memory.available"]
    assert mem["observed"] == 900 * MiB and mem["threshold_quantity"] == 1024 * MiB
    assert mem["met"] is True and mem["hard"] is True and mem["margin"] == -124 * MiB
    assert doc["met"] == [
        {"signal": "memory.available", "hard": True, "condition": "MemoryPressure"}
    ]
    assert doc["conditions"] == ["MemoryPressure"] and doc["exit_code"] == 5
    code, table, err = check(tmp_path, "--eviction-hard", "memory.available<1Gi")
    assert code == 5 and "MemoryPressure" in table and "MET" in table


def test_a_met_soft_threshold_says_the_check_is_one_shot(tmp_path: Path) -> None:
    """One observation cannot wait for a grace period: the note says what the kubelet does;
    a met hard threshold alone gets no such note."""
    v1_node(tmp_path, available_mib=900)
    soft = ["--eviction-soft", "memory.available<1Gi", "--eviction-soft-grace-period",
            "memory.available=1m30s"]  # fmt: skip
    code, out, err = check(tmp_path, "--eviction-hard", "", *soft, "-o", "json")
    assert code == 5, err
    (note,) = [n for n in json.loads(out)["notes"] if "grace period" in n]
    assert note.startswith("memory.available<1Gi met on this one observation")
    assert "minimum reclaim" in note
    code, out, err = check(tmp_path, "--eviction-hard", "memory.available<1Gi", "-o", "json")
    assert code == 5 and not [n for n in json.loads(out)["notes"] if "one observation" in n]


def test_case_2_listed_thresholds_only_and_the_dropped_defaults_said(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    code, out, err = check(
        tmp_path, "--eviction-hard", "memory.available<100Mi,nodefs.available<10%", "-o", "json"
    )
    doc = json.loads(out)
    configured = {t["signal"]: t for t in doc["thresholds"] if t["source"] == "--eviction-hard"}
    assert set(configured) == {"memory.available", "nodefs.available"}
    assert configured["memory.available"]["threshold_quantity"] == 104_857_600
    assert configured["nodefs.available"]["threshold"] == "10%"
    st = os.statvfs(tmp_path / "var/lib/kubelet")
    nodefs = configured["nodefs.available"]
    # bavail, not bfree (reserved blocks count as used); others write to this filesystem too
    assert abs(nodefs["observed"] - st.f_bavail * st.f_frsize) < 256 * MiB
    assert nodefs["capacity"] == st.f_blocks * st.f_frsize
    # 10% as float32 (0.100000001490116...) of the capacity, truncated, as the kubelet does
    assert nodefs["threshold_quantity"] == int(st.f_blocks * st.f_frsize * 0.10000000149011612)
    signals = {t["signal"] for t in doc["thresholds"]}
    assert not signals & {"imagefs.available", "imagefs.inodesFree", "nodefs.inodesFree"}
    assert any("imagefs.available<15%" in n and "not in force" in n for n in doc["notes"])
    # the runtime is unreachable: the image filesystem (and so the layout) is unknown
    assert code == 3, err


@pytest.mark.parametrize(
    ("flag", "value", "needle"),
    [
        ("--eviction-hard", "memory.available<0", "'0'"),
        ("--eviction-hard", "memory.available>100Mi", "memory.available>100Mi"),
        ("--eviction-hard", "swap.available<1Gi", "swap.available"),
        ("--eviction-hard", "memory.available<=1Gi", "=1Gi"),
        ("--eviction-soft", "memory.available<1Gi", "grace period"),
        ("--eviction-minimum-reclaim", "memory.available=0%", "0%"),
        ("--eviction-soft-grace-period", "memory.available=-1m", "-1m"),
        ("--allocatable", "much", "much"),
        ("--root-dir", "var/lib/kubelet", "var/lib/kubelet"),
    ],
)
def test_cases_3_4_bad_input_is_one_line_exit_2(
    tmp_path: Path, flag: str, value: str, needle: str
) -> None:
    v1_node(tmp_path, available_mib=900)
    code, out, err = check(tmp_path, flag, value)
    assert code == 2, (out, err)
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err
    assert out == ""


def test_case_5_hundred_percent_disables_the_threshold(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    code, out, err = check(
        tmp_path, "--eviction-hard", "nodefs.available<100%,memory.available<1Mi", "-o", "json"
    )
    doc = json.loads(out)
    assert {"signal": "nodefs.available", "threshold": "100%", "source": "--eviction-hard"} in doc[
        "disabled"
    ]
    assert "nodefs.available" not in by_signal(doc)
    assert code == 0, err  # memory is fine; nothing disk-related is configured
    code, table, err = check(
        tmp_path, "--eviction-hard", "nodefs.available<100%,memory.available<1Mi"
    )
    row = next(line for line in table.splitlines() if line.startswith("nodefs.available"))
    assert "disabled" in row and "100%" in row and code == 0, err


def test_kubelet_config_file_and_flags_precedence(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    config = (
        "kind: KubeletConfiguration\nevictionHard:\n  memory.available: 950Mi\n"
        "evictionSoft:\n  pid.available: 50%\nevictionSoftGracePeriod:\n  pid.available: 30s\n"
    )
    put(tmp_path, "/var/lib/kubelet/config.yaml", config)
    code, out, err = check(tmp_path, "-o", "json")
    doc = json.loads(out)
    mem = by_signal(doc)["memory.available"]
    assert mem["threshold"] == "950Mi" and mem["met"] is True
    assert mem["source"].endswith("config.yaml: evictionHard")
    pid = by_signal(doc)["pid.available"]
    # pid.available: min(32768, 100000) − 1000 tasks = 31768, threshold 50% of 32768 = 16384
    assert pid["observed"] == 31_768 and pid["capacity"] == 32_768 and not pid["met"]
    assert pid["hard"] is False and pid["grace_period_seconds"] == 30
    assert code == 5, err
    code, out, _ = check(tmp_path, "--eviction-hard", "memory.available<800Mi", "-o", "json")
    assert by_signal(json.loads(out))["memory.available"]["threshold"] == "800Mi"
    assert code == 0  # the flag wins over the file; 900Mi > 800Mi; evictionSoft still from it


def v2_node_with_pods(root: Path) -> None:
    """MemTotal 4 GiB; root anon+file 3.5 GiB, inactive 0 → memory.available 512 MiB.
    Pods (working sets): A 1,000 MiB, B 300 MiB, C 100 MiB; D has no cgroup (no stats)."""
    write_mountinfo(root, MOUNTINFO_V2)
    write_meminfo(root, 4 * 1024 * 1024)
    write_v2_root(root, anon=3 * 1024 * MiB, file=512 * MiB, inactive_file=0)
    pods = f"{V2_ROOT}/kubepods.slice"
    write_v2_cgroup(root, pods, current=1400 * MiB, inactive_file=0, max_=str(3 * 1024 * MiB))
    for uid, qos, ws in (("a", "burstable", 1000), ("b", "besteffort", 300),
                         ("c", "guaranteed", 100)):  # fmt: skip
        write_v2_cgroup(root, pod_cgroup_path(pods, "systemd", qos, f"{uid}-uid"),
                        current=ws * MiB, inactive_file=0)  # fmt: skip
    (root / "var/lib/kubelet").mkdir(parents=True, exist_ok=True)


def pod(uid: str, name: str, *, request: str | None, priority: int = 0) -> dict[str, Any]:
    resources = {"requests": {"memory": request}} if request else {}
    return {
        "kind": "Pod",
        "metadata": {"uid": uid, "namespace": "ns", "name": name},
        "spec": {"nodeName": "node-1", "priority": priority,
                 "containers": [{"name": "c", "resources": resources}]},
        "status": {"phase": "Running"},
    }  # fmt: skip


def test_ranking_of_the_pods_the_kubelet_would_evict_first(tmp_path: Path) -> None:
    """memory.available 512 MiB < 1 GiB: met. The kubelet's memory ranking: pods without stats
    first (D, critical: flagged, skipped); then those over their request (A: 1000 > 500 MiB,
    B: 300 > 0) by priority (equal) then by usage − request (A 500 MiB before B 300 MiB); then
    C (100 MiB under its 1 GiB request). E is Succeeded: not an active pod."""
    v2_node_with_pods(tmp_path)
    items = [
        pod("a-uid", "a", request="500Mi"),
        pod("b-uid", "b", request=None),
        pod("c-uid", "c", request="1Gi"),
        pod("d-uid", "d", request=None, priority=2_000_000_000),
        {**pod("e-uid", "e", request=None), "status": {"phase": "Succeeded"}},
    ]
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "PodList", "items": items}))
    args = ["--eviction-hard", "memory.available<1Gi", "--pods-file", str(pods),
            "--node-name", "node-1"]  # fmt: skip
    code, out, err = check(tmp_path, *args, "-o", "json")
    assert code == 5, err
    doc = json.loads(out)
    ranked = doc["ranking"]["memory.available"]
    assert [r["name"] for r in ranked] == ["d", "a", "b", "c"]
    assert ranked[0]["skipped"] is True and "critical" in ranked[0]["note"]
    assert [r["exceeds"] for r in ranked[1:]] == [True, True, False]
    assert ranked[1]["usage"] == 1000 * MiB and ranked[1]["request"] == 500 * MiB
    assert ranked[1]["excess"] == 500 * MiB
    allocatable = by_signal(doc)["allocatableMemory.available"]
    # kubepods limit 3 GiB − working set 1400 MiB = 1672 MiB: above 1 GiB, not met
    assert allocatable["observed"] == 1672 * MiB and allocatable["met"] is False
    code, out, err = check(tmp_path, *args[:-1], "node-2", "-o", "json")
    doc = json.loads(out)
    assert code == 5 and doc["ranking"]["memory.available"] == []
    assert any("bound to node-1 are not ranked: this node is node-2" in n for n in doc["notes"])
    code, out, err = check(tmp_path, *args, "--top", "2")
    assert code == 5 and "Pods the kubelet would evict first for memory.available" in out


def test_a_pod_resized_in_place_is_ranked_by_its_allocation_and_marked(tmp_path: Path) -> None:
    """A asks 2 GiB in its spec but the kubelet has allocated 500 MiB (a resize pending,
    kubelet allocation: the eviction manager ranks allocated pods): 1,000 MiB used is over
    its allocated request, so it goes before B — by the spec it would not exceed at all."""
    v2_node_with_pods(tmp_path)
    a = pod("a-uid", "a", request="2Gi")
    pending = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}
    allocation = {"name": "c", "allocatedResources": {"memory": "500Mi"}}
    a["status"] = {"phase": "Running", "conditions": [pending], "containerStatuses": [allocation]}
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "PodList", "items": [a, pod("b-uid", "b", request=None)]}))
    args = ["--eviction-hard", "memory.available<1Gi", "--pods-file", str(pods),
            "--node-name", "node-1"]  # fmt: skip
    code, out, err = check(tmp_path, *args, "-o", "json")
    assert code == 5, err  # a threshold met
    ranked = json.loads(out)["ranking"]["memory.available"]
    assert [r["name"] for r in ranked] == ["a", "b"]
    assert ranked[0]["request"] == 500 * MiB and ranked[0]["exceeds"] is True
    assert ranked[0]["resize"].startswith("PodResizePending: ranked by the allocated requests")
    assert "c: memory 500Mi allocated, 2Gi in the spec" in ranked[0]["note"]
    assert ranked[1]["resize"] == ""
    code, out, err = check(tmp_path, *args, "--top", "2")
    assert code == 5 and "PodResizePending" in out, out


@pytest.mark.parametrize(
    ("kubelet_version", "flag", "qos"),
    [
        ("v1.36.0", None, "Burstable"),  # kubernetes/kubernetes#137150: {} is ignored
        ("v1.35.2", None, "BestEffort"),  # before: a present {} decided, with nothing set
        ("v1.36.0", "v1.35.0", "BestEffort"),  # --kubelet-version wins over the Node
    ],
)
def test_the_qos_class_follows_the_kubelet_version_found(
    tmp_path: Path, kubelet_version: str, flag: str | None, qos: str
) -> None:
    """A pod with an empty pod-level section (`spec.resources: {}`), no `status.qosClass`,
    and one container with memory request = limit = 100Mi: its QoS class is the one the
    kubelet version `evict check` finds (the Node of the pod source) computes."""
    v2_node_with_pods(tmp_path)
    a = pod("a-uid", "a", request="100Mi")
    a["spec"]["resources"] = {}
    a["spec"]["containers"][0]["resources"]["limits"] = {"memory": "100Mi"}
    node = {"kind": "Node", "metadata": {"name": "node-1"},
            "status": {"nodeInfo": {"kubeletVersion": kubelet_version}}}  # fmt: skip
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "List", "items": [node, a]}))
    args = ["--eviction-hard", "memory.available<1Gi", "--pods-file", str(pods),
            "--node-name", "node-1", *(["--kubelet-version", flag] if flag else [])]  # fmt: skip
    code, out, err = check(tmp_path, *args, "-o", "json")
    assert code == 5, err
    (ranked,) = json.loads(out)["ranking"]["memory.available"]
    assert ranked["qos"] == qos


def test_unreadable_memory_is_exit_3_when_nothing_is_met(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    (tmp_path / "proc/meminfo").unlink()
    code, out, _ = check(tmp_path, "--eviction-hard", "memory.available<1Mi", "-o", "json")
    doc = json.loads(out)
    assert code == 3 and doc["exit_code"] == 3
    assert "/proc/meminfo" in doc["unread"]["memory.available"]


@pytest.mark.parametrize("available_mib", [900, 2000])  # met, and not met
def test_a_named_pod_source_that_cannot_be_read_is_exit_2_either_way(
    tmp_path: Path, available_mib: int
) -> None:
    v1_node(tmp_path, available_mib=available_mib)
    garbage = tmp_path / "garbage.yaml"
    garbage.write_text("garbage{{{\n")
    for args in (["--pods-file", str(tmp_path / "missing.json")], ["--kubeconfig", str(garbage)]):
        code, out, err = check(tmp_path, "--eviction-hard", "memory.available<1Gi", *args)
        assert code == 2 and out == "" and err.count("\n") == 1, (args, err)


def v1_node_with_pods(root: Path) -> str:
    """cgroup v1, cgroupfs: memory.available 512 MiB (MemTotal 4 GiB, root working set
    3.5 GiB); kubepods limit 3 GiB − working set 1400 MiB = 1672 MiB. Pods (working sets, two
    processes each): a 1000 MiB, b 300 MiB, c 100 MiB. Returns the host path of b's cgroup."""
    write_mountinfo(root, MOUNTINFO_V1)
    write_meminfo(root, 4 * 1024 * 1024)
    write_v1_cgroup(root, V1_ROOT, usage=3584 * MiB, inactive_file=0)
    pods = f"{V1_ROOT}/kubepods"
    write_v1_cgroup(root, pods, usage=1400 * MiB, inactive_file=0, limit=3 * 1024 * MiB)
    for uid, qos, ws in (("a", "burstable", 1000), ("b", "besteffort", 300),
                         ("c", "guaranteed", 100)):  # fmt: skip
        write_v1_cgroup(root, pod_cgroup_path(pods, "cgroupfs", qos, f"{uid}-uid"),
                        usage=ws * MiB, inactive_file=0, pids=[1, 2])  # fmt: skip
    write_pid_files(root, pid_max=1000, threads_max=100_000, loadavg="0.1 0.2 0.3 2/990 42")
    (root / "var/lib/kubelet").mkdir(parents=True, exist_ok=True)
    return pod_cgroup_path(pods, "cgroupfs", "besteffort", "b-uid")


@pytest.mark.parametrize(
    ("files", "stat_line", "why"),
    [
        (["cgroup.procs"], None, "cgroup.procs: No such file"),
        (["memory.stat", "memory.usage_in_bytes"], None, "memory.stat: No such file"),
        ([], "total_active_file", "memory.stat: no total_active_file line"),
    ],
)
def test_a_pod_whose_cgroup_cannot_be_read_alone_has_no_stats(
    tmp_path: Path, files: list[str], stat_line: str | None, why: str
) -> None:
    """b's cgroup cannot be read whole: b alone has no stats and ranks first (as a pod missing
    from the kubelet's summary), a and c rank by their working sets / processes; a note names
    b and the file. memory.available 512 MiB < 1 GiB, pid.available 10 < 20: both met."""
    b_cgroup = v1_node_with_pods(tmp_path)
    local = tmp_path / b_cgroup.lstrip("/")
    for name in files:
        (local / name).unlink()
    if stat_line:
        stat = local / "memory.stat"
        kept = [x for x in stat.read_text().splitlines() if x.split()[0] != stat_line]
        stat.write_text("\n".join(kept) + "\n")
    pods = tmp_path / "pods.json"
    items = [pod(f"{u}-uid", u, request=None) for u in "abc"]
    pods.write_text(json.dumps({"kind": "PodList", "items": items}))
    args = ["--eviction-hard", "memory.available<1Gi,pid.available<20", "--pods-file", str(pods)]
    code, out, err = check(tmp_path, *args, "--node-name", "node-1", "-o", "json")
    assert code == 5, err
    doc = json.loads(out)
    for signal, usage in (("memory.available", 1000 * MiB), ("pid.available", 2)):
        ranked = doc["ranking"][signal]
        assert [r["name"] for r in ranked] == ["b", "a", "c"], signal
        assert ranked[0]["usage"] is None and "no stats" in ranked[0]["note"]
        assert ranked[1]["usage"] == usage and ranked[1]["note"] == ""
        assert ranked[2]["usage"] is not None and ranked[2]["note"] == ""
    [note] = [n for n in doc["notes"] if "b-uid" in n]
    assert note.startswith("pod ns/b (b-uid) has no stats: ") and f"{b_cgroup}/{why}" in note
    assert by_signal(doc)["memory.available"]["observed"] == 512 * MiB


def test_allocatable_memory_is_observed_when_the_root_cgroup_is_unreadable(
    tmp_path: Path,
) -> None:
    """The root memory cgroup cannot be read: memory.available is unknown, but
    allocatableMemory.available (kubepods limit 3 GiB − working set 1400 MiB = 1672 MiB) does
    not depend on it and is observed: not met under 1 GiB (exit 3: memory.available unknown),
    met under 2 GiB (exit 1)."""
    v1_node_with_pods(tmp_path)
    (tmp_path / V1_ROOT.lstrip("/") / "memory.usage_in_bytes").unlink()
    code, out, _ = check(tmp_path, "--eviction-hard", "memory.available<1Gi", "-o", "json")
    doc = json.loads(out)
    assert code == 3 and list(doc["unread"]) == ["memory.available"]
    assert f"{V1_ROOT}/memory.usage_in_bytes" in doc["unread"]["memory.available"]
    thresholds = by_signal(doc)
    assert thresholds["memory.available"]["observed"] is None
    alloc = thresholds["allocatableMemory.available"]
    assert alloc["observed"] == 1672 * MiB and alloc["met"] is False
    code, out, _ = check(tmp_path, "--eviction-hard", "memory.available<2Gi", "-o", "json")
    doc = json.loads(out)
    assert code == 5 and doc["met"] == [
        {"signal": "allocatableMemory.available", "hard": True, "condition": "MemoryPressure"}
    ]
    code, table, _ = check(tmp_path, "--eviction-hard", "memory.available<1Gi")
    [row] = [x for x in table.splitlines() if x.startswith("allocatableMemory.available")]
    assert "unknown" not in row and "1.6Gi" in row


def test_a_pods_cgroup_that_cannot_be_read_leaves_memory_available(tmp_path: Path) -> None:
    v1_node_with_pods(tmp_path)
    (tmp_path / V1_ROOT.lstrip("/") / "kubepods/memory.stat").unlink()
    code, out, _ = check(tmp_path, "--eviction-hard", "memory.available<1Gi", "-o", "json")
    doc = json.loads(out)
    assert code == 5 and list(doc["unread"]) == ["allocatableMemory.available"]
    assert by_signal(doc)["memory.available"]["observed"] == 512 * MiB


@pytest.mark.parametrize(("unread", "code"), [(False, 5), (True, 3)])
def test_the_yaml_document_is_the_json_one(tmp_path: Path, unread: bool, code: int) -> None:
    """`-o yaml` writes the same document as `-o json`, `exit_code` a plain number in both."""
    import yaml

    v1_node(tmp_path, available_mib=900)
    if unread:
        (tmp_path / "proc/meminfo").unlink()
    args = ("--eviction-hard", "memory.available<1Gi" if not unread else "memory.available<1Mi")
    got, out, err = check(tmp_path, *args, "-o", "yaml")
    assert got == code and "Traceback" not in err, err
    doc = yaml.safe_load(out)
    assert doc["exit_code"] == code and type(doc["exit_code"]) is int
    _, as_json, _ = check(tmp_path, *args, "-o", "json")
    assert doc.keys() == json.loads(as_json).keys()


def test_a_threshold_at_or_above_the_capacity_is_warned_of(tmp_path: Path) -> None:
    """memory.available<2Gi on a 1 GiB node is met whatever runs there: a note says so and
    where the threshold came from; a threshold below the capacity gets no such note."""
    v1_node(tmp_path, available_mib=900)
    code, out, err = check(tmp_path, "--eviction-hard", "memory.available<2Gi", "-o", "json")
    assert code == 5, err
    notes = json.loads(out)["notes"]
    assert (
        "memory.available<2Gi is met whenever anything is used: 2147483648 is not below the "
        "capacity, 1073741824; source: --eviction-hard" in notes
    ), notes
    code, out, err = check(tmp_path, "--eviction-hard", "memory.available<100Mi", "-o", "json")
    assert code == 0, err
    assert not any("whenever anything is used" in n for n in json.loads(out)["notes"])


def test_a_kubelet_root_that_is_not_there_names_the_flag_to_give(tmp_path: Path) -> None:
    """The disk signals cannot be read where the kubelet root is not: a note says so and
    which flag to give (and the running kubelet's own --root-dir, when it shows one)."""
    v1_node(tmp_path, available_mib=900)
    (tmp_path / "var/lib/kubelet").rmdir()
    code, out, err = check(tmp_path, "--eviction-hard", "nodefs.available<10%", "-o", "json")
    notes = json.loads(out)["notes"]
    assert code == 3, err  # the one threshold's signal could not be read
    [hint] = [n for n in notes if n.startswith("the kubelet root /var/lib/kubelet is not there")]
    assert "give --root-dir" in hint, notes


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [
        ("--eviction-hard", "nodefs.available<100%,memory.available<1Mi",
         "nodefs.available<100% is no threshold: the kubelet drops 0% and 100% ones, so it is "
         "never met whatever is used; give a percentage between them (nodefs.available<10%) or "
         "a quantity; source: --eviction-hard"),
        ("--eviction-hard", "memory.available<0%,pid.available<1%",
         "memory.available<0% is no threshold: the kubelet drops 0% and 100% ones"),
    ],
)  # fmt: skip
def test_a_zero_or_hundred_percent_threshold_is_warned_of_with_what_would_make_it_one(
    tmp_path: Path, flag: str, value: str, said: str
) -> None:
    """0% and 100% are dropped by the kubelet (`parseThresholdStatement`): never met. A note
    says so, and what a threshold would be; other thresholds get no such note."""
    v1_node(tmp_path, available_mib=900)
    code, out, err = check(tmp_path, flag, value, "-o", "json")
    assert code == 0, err  # nothing met: a dropped threshold is not met
    notes = json.loads(out)["notes"]
    assert [n for n in notes if "is no threshold" in n] == [
        n for n in notes if n.startswith(said)
    ] and any(n.startswith(said) for n in notes), notes
    _, table, _ = check(tmp_path, flag, value)
    assert "is no threshold" in table


def test_a_soft_zero_percent_threshold_is_warned_of_too(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    code, out, err = check(tmp_path, "--eviction-hard", "memory.available<1Mi", "--eviction-soft",
                           "memory.available<0%", "-o", "json")  # fmt: skip
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert any(n.startswith("memory.available<0% is no threshold") and
               n.endswith("source: --eviction-soft") for n in notes), notes  # fmt: skip
