"""`kubegc agent` whole: the real command, a real containerd (tests/node/localnode.py) and the
real control plane (tests/controlplane.py), as the agent's ServiceAccount of
deploy/kubernetes/rbac.yaml. What one cycle writes to the API server is read back from the
server's audit log, so the per-cycle cost docs/FLEET.md computes for a fleet is held to what
the agent really asks."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.api.test_rbac import APPLY_MODE, may
from tests.controlplane import ControlPlane, free_port
from tests.node.localnode import LocalNode, pod_list

AGENT = "kubegc-agent"
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def make_node(admin: Any, name: str) -> str:
    """A Node object `name` in the API (no kubelet behind it); its uid."""
    from kubernetes import client

    node = client.CoreV1Api(admin).create_node({"metadata": {"name": name}})
    return str(node.metadata.uid)


def agent_argv(
    node: LocalNode, tmp_path: Path, kubeconfig: Path, node_name: str, pods: Path, *args: str
) -> list[str]:
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir(exist_ok=True)
    return [
        sys.executable, "-m", "kubegc_cli",
        "-r", node.endpoint, "--kubelet-config", str(node.kubelet_config),
        "--state-dir", str(tmp_path / "state"), "--pods-file", str(pods), "--lock-timeout", "2m",
        "--kubeconfig", str(kubeconfig), "--node-name", node_name,
        "agent", "--root-dir", str(kubelet), *args,
    ]  # fmt: skip


def writes(cp: ControlPlane, since: int) -> Counter[tuple[str, str]]:
    """The agent's writes after its first `since` requests: (verb, resource[/subresource])."""
    got: Counter[tuple[str, str]] = Counter()
    for e in cp.requests(AGENT)[since:]:
        ref = e.get("objectRef", {})
        what = ref.get("resource", "") + (
            f"/{ref['subresource']}" if ref.get("subresource") else ""
        )
        if e["verb"] in WRITES:
            got[(e["verb"], what)] += 1
    return got


def ok_cycles(port: int) -> float:
    """`kubegc_agent_cycles_total{result="ok"}` from the agent's /metrics (0 before it serves)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return 0.0
    for line in text.splitlines():
        if line.startswith('kubegc_agent_cycles_total{result="ok"}'):
            return float(line.split()[-1])
    return 0.0


def refused(cp: ControlPlane, since: int) -> list[str]:
    return [
        f"{e['verb']} {e.get('requestURI')}"
        for e in cp.requests(AGENT)[since:]
        if e.get("responseStatus", {}).get("code", 200) >= 400
        and not (e["verb"] == "get" and e["responseStatus"]["code"] == 404)  # not there yet
    ]


@pytest.fixture
def apply_mode_rbac(control_plane: ControlPlane, admin: Any, deployed: list[str]) -> Iterator[None]:
    """deploy/kubernetes-apply-mode's RBAC (the breaker's list of every report) in force for
    the test, removed after: apply mode runs with what its overlay grants."""
    from kubernetes import client, config, utils

    docs = [d for d in yaml.safe_load_all((APPLY_MODE / "rbac-breaker.yaml").read_text()) if d]
    for doc in docs:
        utils.create_from_dict(admin, doc)
    agent = config.new_client_from_config(str(control_plane.kubeconfig(AGENT)))
    try:
        deadline = time.monotonic() + 10
        while not may(agent, "list", "nodegcreports", group="kubegc.io"):  # authorizer cache
            assert time.monotonic() < deadline, "the breaker's binding never took effect"
            time.sleep(0.2)
        yield
    finally:
        rbac = client.RbacAuthorizationV1Api(admin)
        rbac.delete_cluster_role_binding("kubegc-agent-breaker")
        rbac.delete_cluster_role("kubegc-agent-breaker")


def test_one_apply_cycle_removes_reports_and_releases_its_slot(
    node: LocalNode, ns: str, tmp_path: Path, control_plane: ControlPlane, admin: Any,
    apply_mode_rbac: None, node_name: str,
) -> None:  # fmt: skip
    from kubernetes import client

    uid = make_node(admin, node_name)
    p = node.run_pod("p", namespace=ns)
    node.add_container(p, "init", attempt=0)
    init1 = node.add_container(p, "init", attempt=1)
    app = node.add_container(p, "app", state="running")
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps(pod_list([p])))
    kubeconfig = control_plane.kubeconfig(AGENT, tmp_path / "kubeconfig")
    lease_ns = "kubegc"  # the default
    before = len(control_plane.requests(AGENT))

    res = subprocess.run(
        agent_argv(node, tmp_path, kubeconfig, node_name, pods, "--once", "--mode", "apply",
                   "-n", ns, "--apply-slots", "1", "--checks", "df,gc"),
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert node.container_ids(namespace=ns) == {init1, app}
    assert refused(control_plane, before) == []

    objects = client.CustomObjectsApi(admin)
    report = objects.get_cluster_custom_object("kubegc.io", "v1alpha1", "nodegcreports", node_name)
    assert report["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": node_name, "uid": uid}
    ]
    status = report["status"]
    assert status["mode"] == "apply" and status["error"] == "" and status["paused"] == ""
    last = status["lastApply"]
    assert last["plans"] == ["gc all"] and last["removed"] == 1 and last["failures"] == 0
    assert {c["name"] for c in status["categories"]} >= {"logs", "writable-layers", "images"}
    # the slot was taken, then given back: free for the next node at once
    lease = client.CoordinationV1Api(admin).read_namespaced_lease("kubegc-apply-0", lease_ns)
    assert not lease.spec.holder_identity
    # one cycle: the report created and its status written once; the slot created (or taken
    # over) and released; nothing else written
    got = writes(control_plane, before)
    assert got[("create", "nodegcreports")] <= 1
    assert got[("update", "nodegcreports/status")] == 1
    assert 1 <= got[("create", "leases")] + got[("update", "leases")] <= 3
    assert set(got) <= {
        ("create", "nodegcreports"), ("update", "nodegcreports/status"),
        ("update", "nodegcreports"), ("create", "leases"), ("update", "leases"),
    }, got  # fmt: skip


def test_a_running_agent_writes_its_report_once_while_nothing_changes(
    node: LocalNode, ns: str, tmp_path: Path, control_plane: ControlPlane, admin: Any,
    deployed: list[str], node_name: str,
) -> None:  # fmt: skip
    """Report mode, three cycles two seconds apart on a node where nothing changes: one report
    write (create + status), no Lease, no removal; SIGTERM ends it with exit 0."""
    make_node(admin, node_name)
    p = node.run_pod("p", namespace=ns)
    kept = node.add_container(p, "init", attempt=0)
    node.add_container(p, "init", attempt=1)
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps(pod_list([p])))
    kubeconfig = control_plane.kubeconfig(AGENT, tmp_path / "kubeconfig")
    before = len(control_plane.requests(AGENT))
    port = free_port()
    proc = subprocess.Popen(
        agent_argv(node, tmp_path, kubeconfig, node_name, pods, "--interval", "2s",
                   "--listen", f"127.0.0.1:{port}", "-n", ns, "--checks", "gc"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        cycles = 0.0
        while time.monotonic() < deadline and cycles < 3:
            time.sleep(0.5)
            assert proc.poll() is None, proc.communicate()
            cycles = ok_cycles(port)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert cycles >= 3, err
    assert kept in node.container_ids(namespace=ns)  # report mode removes nothing
    got = writes(control_plane, before)
    assert got == Counter(
        {("create", "nodegcreports"): 1, ("update", "nodegcreports/status"): 1}
    ), (
        got,
        err,
    )
    assert refused(control_plane, before) == []


def test_sigterm_mid_apply_stops_removing_gives_the_slot_back_and_reports_it(
    node: LocalNode, ns: str, tmp_path: Path, control_plane: ControlPlane, admin: Any,
    apply_mode_rbac: None, node_name: str,
) -> None:  # fmt: skip
    """The DaemonSet form in apply mode (no --once), SIGTERM while its gc plan's removals are
    in flight — 150 dead containers of a deleted pod, one at a time: it exits 0 (a pod's
    normal end), its slot is free at once, its report says the apply was interrupted and
    counts exactly the containers that are gone, and none is removed after it has exited."""
    from kubernetes import client

    make_node(admin, node_name)
    live = node.run_pod("live", namespace=ns)
    gone = node.run_pod("gone", namespace=ns)
    dead = {node.add_container(gone, f"c{i}", state="created", symlink=False) for i in range(150)}
    node.stop_pod(gone)  # deleted from the API: its sandbox stopped, its containers left
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps(pod_list([live])))
    kubeconfig = control_plane.kubeconfig(AGENT, tmp_path / "kubeconfig")
    before = len(control_plane.requests(AGENT))
    proc = subprocess.Popen(
        agent_argv(node, tmp_path, kubeconfig, node_name, pods, "--interval", "2s",
                   "--mode", "apply", "--apply-slots", "1", "--concurrency", "1", "-n", ns,
                   "--checks", "gc", "--listen", f"127.0.0.1:{free_port()}"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while len(dead & node.container_ids(namespace=ns)) == len(dead):  # the first removal
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no removal within 120 s"
            time.sleep(0.02)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    left = dead & node.container_ids(namespace=ns)
    assert 0 < len(left) < len(dead), (len(left), err)  # stopped mid-apply
    time.sleep(1)
    assert dead & node.container_ids(namespace=ns) == left  # nothing removed after the exit

    lease = client.CoordinationV1Api(admin).read_namespaced_lease("kubegc-apply-0", "kubegc")
    assert not lease.spec.holder_identity  # given back, not left to expire
    report = client.CustomObjectsApi(admin).get_cluster_custom_object(
        "kubegc.io", "v1alpha1", "nodegcreports", node_name
    )
    last = report["status"]["lastApply"]
    assert "interrupted by SIGTERM" in last["error"], last
    assert last["removed"] == len(dead) - len(left), (last, len(left))
    assert refused(control_plane, before) == []


def test_report_mode_plans_the_whole_plan_and_says_nothing_of_the_caps(
    node: LocalNode, ns: str, tmp_path: Path, control_plane: ControlPlane, admin: Any,
    deployed: list[str], node_name: str,
) -> None:  # fmt: skip
    """The caps bound what an apply removes; a report cycle's dry run plans everything (3
    dead containers of a deleted pod under --max-delete 1), removes nothing and logs no
    "held back" line, cycle after cycle."""
    make_node(admin, node_name)
    live = node.run_pod("live", namespace=ns)
    gone = node.run_pod("gone", namespace=ns)
    dead = {node.add_container(gone, f"c{i}", state="created", symlink=False) for i in range(3)}
    node.stop_pod(gone)
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps(pod_list([live])))
    kubeconfig = control_plane.kubeconfig(AGENT, tmp_path / "kubeconfig")
    res = subprocess.run(
        agent_argv(node, tmp_path, kubeconfig, node_name, pods, "--once", "-n", ns,
                   "--max-delete", "1", "--checks", "gc"),
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "held back" not in res.stderr, res.stderr
    assert dead <= node.container_ids(namespace=ns)
