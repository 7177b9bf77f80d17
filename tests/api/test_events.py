"""`--events` against a real kube-apiserver: the Event kubegc posts is accepted as the API
server validates it and is found on the Node it names; the rate limit holds; an identity RBAC
does not let create events gets one warning; `evict prune` and `evict check` record theirs from
the command line. The faults (an API that stops answering, a refusal with a 500) stay on the
stand-in in tests/unit/test_events.py."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.cli.main import main
from kubegc_cli.core.plan import Result
from kubegc_cli.core.settings import Settings
from kubegc_cli.report.events import INTERVAL_SECONDS, STATE_FILE, record_events
from tests.controlplane import ControlPlane
from tests.unit.hostfixtures import (
    MOUNTINFO_V1,
    V1_ROOT,
    write_meminfo,
    write_mountinfo,
    write_pid_files,
    write_v1_cgroup,
)
from tests.unit.test_events import T, container, plan_of

MiB = 1 << 20

GC_DONE = plan_of([container(0, Result.REMOVED, 10)])


def node_events(admin: Any, node: str) -> list[Any]:
    from kubernetes import client

    found = client.CoreV1Api(admin).list_namespaced_event(
        "default", field_selector=f"involvedObject.kind=Node,involvedObject.name={node}"
    )
    return sorted(found.items, key=lambda e: e.metadata.creation_timestamp)


def settings(kubeconfig: Path, tmp_path: Path, node: str) -> Settings:
    return Settings(kubeconfig=str(kubeconfig), node_name=node.upper(),
                    state_dir=tmp_path / "state", timeout=10, env={})  # fmt: skip


def test_the_event_is_accepted_and_found_on_the_node(
    control_plane: ControlPlane, admin: Any, node_name: str, tmp_path: Path
) -> None:
    warnings: list[str] = []
    s = settings(control_plane.kubeconfig("admin"), tmp_path, node_name)
    posted = record_events(s, "gc all", GC_DONE, 0, warn=warnings.append, now=T)
    assert warnings == [] and [e.reason for e in posted] == ["ContainerGCSucceeded"]
    [ev] = node_events(admin, node_name)  # the node name lower-cased, as the kubelet's
    assert ev.reason == "ContainerGCSucceeded" and ev.type == "Normal"
    assert ev.involved_object.kind == "Node" and ev.source.host == node_name


def test_at_most_one_event_per_reason_per_interval(
    control_plane: ControlPlane, admin: Any, node_name: str, tmp_path: Path
) -> None:
    s = settings(control_plane.kubeconfig("admin"), tmp_path, node_name)
    for at in (T, T + 60, T + INTERVAL_SECONDS - 1):
        record_events(s, "gc all", GC_DONE, 0, warn=pytest.fail, now=at)
    assert len(node_events(admin, node_name)) == 1
    failed = plan_of([container(0, Result.FAILED, error="boom")])
    record_events(s, "gc all", failed, 1, warn=pytest.fail, now=T + 61)  # another reason
    record_events(s, "gc all", GC_DONE, 0, warn=pytest.fail, now=T + INTERVAL_SECONDS + 1)
    assert sorted(e.reason for e in node_events(admin, node_name)) == [
        "ContainerGCFailed", "ContainerGCSucceeded", "ContainerGCSucceeded"]  # fmt: skip
    state = json.loads((tmp_path / "state" / STATE_FILE).read_text())
    assert state["last_posted"] == {f"{node_name}/ContainerGCSucceeded": T + INTERVAL_SECONDS + 1,
                                    f"{node_name}/ContainerGCFailed": T + 61}  # fmt: skip


def test_a_refused_event_is_a_warning_and_is_not_remembered(
    control_plane: ControlPlane, admin: Any, node_name: str, tmp_path: Path
) -> None:
    warnings: list[str] = []
    s = settings(control_plane.kubeconfig("nobody"), tmp_path, node_name)
    assert record_events(s, "gc all", GC_DONE, 0, warn=warnings.append, now=T) == []
    assert warnings == [
        f"event ContainerGCSucceeded on node {node_name} not recorded: 403 Forbidden: kubegc "
        "needs permission to create events in namespace default"
    ]
    assert node_events(admin, node_name) == []
    allowed = settings(control_plane.kubeconfig("admin"), tmp_path, node_name)
    assert len(record_events(allowed, "gc all", GC_DONE, 0, warn=pytest.fail, now=T + 1)) == 1
    assert len(node_events(admin, node_name)) == 1


def test_an_unusable_state_dir_posts_without_the_rate_limit(
    control_plane: ControlPlane, admin: Any, node_name: str, tmp_path: Path
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    warnings: list[str] = []
    s = Settings(kubeconfig=str(control_plane.kubeconfig("admin")), node_name=node_name,
                 state_dir=blocker, timeout=10, env={})  # fmt: skip
    assert len(record_events(s, "gc all", GC_DONE, 0, warn=warnings.append, now=T)) == 1
    assert len(warnings) == 1 and "posting without the rate limit" in warnings[0]
    assert [e.reason for e in node_events(admin, node_name)] == ["ContainerGCSucceeded"]


# --- the command line -----------------------------------------------------------------------


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_cli_evict_prune_records_evicted_pods_pruned(
    control_plane: ControlPlane, admin: Any, node_name: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from kubernetes import client

    from tests.api.test_evict_prune import make_pod

    core = client.CoreV1Api(admin)
    ns = f"t-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    make_pod(core, ns, "web-1", node_name)
    make_pod(core, ns, "web-2", node_name)
    base = ["--kubeconfig", str(control_plane.kubeconfig("admin")), "--node-name", node_name,
            "--state-dir", str(tmp_path / "state"), "--events"]  # fmt: skip
    code, _, err = run([*base, "evict", "prune", "--yes", "-o", "json"], capsys)
    assert code == 0 and err == ""
    [ev] = node_events(admin, node_name)
    assert (ev.reason, ev.message) == ("EvictedPodsPruned", "deleted 2 Evicted pod(s) on "
                                       "this node")  # fmt: skip


def test_cli_evict_check_records_eviction_threshold_met(
    control_plane: ControlPlane, admin: Any, node_name: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    host = tmp_path / "host"
    write_mountinfo(host, MOUNTINFO_V1)
    write_meminfo(host, 1_048_576, mem_available_kb=900 * 1024)
    write_v1_cgroup(host, V1_ROOT, usage=134 * MiB, inactive_file=10 * MiB)  # 900Mi available
    write_pid_files(host, pid_max=32768, threads_max=100_000, loadavg="0.1 0.2 0.3 2/1000 42")
    (host / "var/lib/kubelet").mkdir(parents=True)
    code, _, err = run(
        ["--host-root", str(host), "-r", "unix:///nonexistent/kubegc.sock",
         "--kubeconfig", str(control_plane.kubeconfig("admin")), "--node-name", node_name,
         "--state-dir", str(tmp_path / "state"), "--events",
         "evict", "check", "--eviction-hard", "memory.available<1Gi", "-o", "json"], capsys,
    )  # fmt: skip
    assert code == 5, err
    [ev] = node_events(admin, node_name)
    assert ev.reason == "EvictionThresholdMet" and ev.type == "Warning"
    assert ev.message.startswith("thresholds met: memory.available<1Gi (hard, MemoryPressure)")
    assert ev.involved_object.name == node_name
