"""kubegc and the node's own kubelet: `/pods` as the pod source and `/configz` as the kubelet
configuration, against a real kubelet (``localkubelet.py``) registered with the real API
server, which checks every caller's token (TokenReview) and right (SubjectAccessReview)
against the manifests' RBAC. The agent's identity (kube-system/kubegc-agent, granted
`get nodes/pods, nodes/configz`) is let through; kubegc-prune (allowed to list pods through
the API, not granted the kubelet's subresources) is refused with 403, and kubegc then lists
the node's pods through the API and reads the kubelet's config file instead."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import KUBELET_NODE, ControlPlane
from tests.node.localkubelet import LocalKubelet, machine_state
from tests.node.localnode import LocalNode


@pytest.fixture(scope="module")
def kubelet_pod(
    kubelet: LocalKubelet, control_plane: ControlPlane, admin: Any, deployed: list[str]
) -> Iterator[str]:
    """A pod bound to the kubelet's node that the kubelet admits nowhere (a nodeSelector its
    node lacks: it rejects the pod, which never runs), once the kubelet holds it; its uid."""
    from kubernetes import client

    core = client.CoreV1Api(admin)
    ns = f"kubelet-pods-{int(time.time() * 1000) % 100000}"
    core.create_namespace({"metadata": {"name": ns}})
    pod = core.create_namespaced_pod(ns, {
        "metadata": {"name": "held"},
        "spec": {"nodeName": KUBELET_NODE, "nodeSelector": {"kubegc.test/never": "true"},
                 "containers": [{"name": "c", "image": "kubegc.test/absent:1",
                                 "imagePullPolicy": "Never"}]},
    })  # fmt: skip
    uid = pod.metadata.uid
    deadline = time.monotonic() + 60
    token = control_plane.tokens["admin"]
    while uid not in pod_uids(kubelet.get("/pods", token)[1]):
        assert time.monotonic() < deadline, "the kubelet did not take the pod in 60 s"
        time.sleep(0.5)
    yield uid
    core.delete_namespace(ns)


def pod_uids(body: bytes) -> set[str]:
    doc = json.loads(body)
    return {p["metadata"]["uid"] for p in doc.get("items") or []}


def kubegc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubegc_cli", *args],
        capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_the_kubelet_lets_the_agent_read_pods_and_configz_and_refuses_others(
    kubelet: LocalKubelet, control_plane: ControlPlane, kubelet_pod: str
) -> None:
    agent = control_plane.tokens["kubegc-agent"]
    status, body = kubelet.get("/pods", agent)
    assert status == 200, body[:300]
    assert kubelet_pod in pod_uids(body)
    status, body = kubelet.get("/configz", agent)
    assert status == 200, body[:300]
    config = json.loads(body)["kubeletconfig"]
    assert config["port"] == kubelet.port and config["authorization"]["mode"] == "Webhook"
    for identity in ("kubegc-prune", "nobody"):
        for path in ("/pods", "/configz"):
            status, body = kubelet.get(path, control_plane.tokens[identity])
            assert status == 403, (identity, path, status, body[:300])
    status, _ = kubelet.get("/pods", "not-a-token")
    assert status == 401
    # The kubelet asked the API server, as itself, about each caller.
    asked = {
        e["objectRef"]["resource"]
        for e in control_plane.requests("kubelet")
        if e["verb"] == "create" and e["objectRef"]["resource"] in
        ("tokenreviews", "subjectaccessreviews")
    }  # fmt: skip
    assert asked == {"tokenreviews", "subjectaccessreviews"}


def plan_pod_source(res: subprocess.CompletedProcess[str]) -> str:
    assert res.returncode == 0, res.stderr
    return str(json.loads(res.stdout)["policy"]["pod_source"])


def gc_args(
    cp: ControlPlane, identity: str, kubelet: LocalKubelet, node: LocalNode, tmp_path: Path
) -> list[str]:
    """Global options of a `gc` dry run as `identity`, on the kubelet's node, with its URL."""
    kubeconfig = cp.kubeconfig(identity, tmp_path / f"{identity}.kubeconfig")
    return ["-r", node.endpoint, "--kubeconfig", str(kubeconfig), "--node-name", KUBELET_NODE,
            "--kubelet-url", kubelet.url, "--kubelet-config", str(node.kubelet_config),
            "--state-dir", str(tmp_path / "state"), "--lock-timeout", "2m",
            "-o", "json"]  # fmt: skip


def test_pods_come_from_the_kubelet_without_an_api_list(
    kubelet: LocalKubelet, control_plane: ControlPlane, kubelet_pod: str, node: LocalNode,
    tmp_path: Path,
) -> None:  # fmt: skip
    common = gc_args(control_plane, "kubegc-agent", kubelet, node, tmp_path)
    mark = len(control_plane.requests("kubegc-agent"))
    for extra in (["--pod-source", "kubelet"], []):  # explicit, and preferred by default
        res = kubegc(*common, *extra, "-v", "gc", "containers", "--dry-run")
        assert plan_pod_source(res) == f"kubelet:{kubelet.url} node {KUBELET_NODE}"
        assert f"pod source: kubelet {kubelet.url}/pods" in res.stderr
    lists = [e for e in control_plane.requests("kubegc-agent")[mark:]
             if e["objectRef"].get("resource") == "pods"]  # fmt: skip
    assert lists == []


def test_a_refused_kubelet_falls_back_to_the_api_list(
    kubelet: LocalKubelet, control_plane: ControlPlane, kubelet_pod: str, node: LocalNode,
    tmp_path: Path,
) -> None:  # fmt: skip
    common = gc_args(control_plane, "kubegc-prune", kubelet, node, tmp_path)
    res = kubegc(*common, "gc", "containers", "--dry-run")
    assert plan_pod_source(res) == f"api:{control_plane.url} node {KUBELET_NODE}"
    assert f"kubelet {kubelet.url}/pods: 403 Forbidden" in res.stderr
    assert "listing the node's pods through the API instead" in res.stderr
    res = kubegc(*common, "--pod-source", "kubelet", "gc", "containers", "--dry-run")
    assert res.returncode == 3, res.stderr
    assert res.stderr.count("\n") == 1 and "403 Forbidden" in res.stderr


def config_sources(res: subprocess.CompletedProcess[str]) -> dict[str, tuple[Any, str]]:
    assert res.returncode == 0, res.stderr
    return {r["key"]: (r["value"], r["source"]) for r in json.loads(res.stdout)["values"]}


def test_the_effective_config_comes_from_configz_and_a_refusal_falls_back_to_the_file(
    kubelet: LocalKubelet, control_plane: ControlPlane, tmp_path: Path, deployed: list[str],
) -> None:  # fmt: skip
    host = tmp_path / "host"
    (host / "var/lib/kubelet").mkdir(parents=True)
    (host / "var/lib/kubelet/config.yaml").write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        "imageGCHighThresholdPercent: 77\nimageGCLowThresholdPercent: 55\n"
    )
    for identity, high, source in (
        ("kubegc-agent", 100, "kubelet /configz"),
        ("kubegc-prune", 77, f"kubelet config {host}/var/lib/kubelet/config.yaml"),
    ):
        kubeconfig = control_plane.kubeconfig(identity, tmp_path / f"{identity}.kubeconfig")
        res = kubegc("--host-root", str(host), "--kubeconfig", str(kubeconfig),
                     "--node-name", KUBELET_NODE, "--kubelet-url", kubelet.url, "-o", "json",
                     "config", "view", "gc", "images")  # fmt: skip
        values = config_sources(res)
        assert values["gc.images.image-gc-high-threshold"] == (high, source), (identity, values)
        refused = f"kubelet {kubelet.url}/configz: 403 Forbidden"
        assert (refused in res.stderr) == (identity == "kubegc-prune"), res.stderr


def test_evict_check_takes_the_thresholds_from_configz(
    kubelet: LocalKubelet, control_plane: ControlPlane, node: LocalNode, tmp_path: Path,
    deployed: list[str],
) -> None:  # fmt: skip
    def check(identity: str) -> str:
        kubeconfig = control_plane.kubeconfig(identity, tmp_path / f"{identity}.kubeconfig")
        res = kubegc("-r", node.endpoint, "--kubeconfig", str(kubeconfig), "--node-name",
                     KUBELET_NODE, "--kubelet-url", kubelet.url, "--pod-source", "none",
                     "--state-dir", str(tmp_path / "state"), "-v", "-o", "json",
                     "evict", "check", "--root-dir", str(tmp_path))  # fmt: skip
        assert res.returncode in (0, 5), res.stderr  # 5: a threshold met
        return res.stderr

    assert f"kubelet config: kubelet /configz ({kubelet.url})" in check("kubegc-agent")
    refused = check("kubegc-prune")
    assert f"kubelet {kubelet.url}/configz: 403 Forbidden" in refused
    assert "reading the kubelet's command line and config file instead" in refused
    assert "kubelet config: kubelet /configz" not in refused


def test_the_agent_reads_its_pods_from_the_kubelet(
    kubelet: LocalKubelet, control_plane: ControlPlane, kubelet_pod: str, node: LocalNode,
    tmp_path: Path, admin: Any,
) -> None:  # fmt: skip
    """The DaemonSet's agent cycle with `--kubelet-url`: its pods from `/pods`, its config from
    `/configz`, as its report says; the API server sees no pod list from it, only the report's
    requests."""
    from kubernetes import client

    from kubegc_cli.core.fleet import GROUP, PLURAL, VERSION
    from tests.node.test_agent_api_cost import MAX_REQUESTS, agent_args

    kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "agent.kubeconfig")
    (tmp_path / "kubelet").mkdir()
    mark = len(control_plane.requests("kubegc-agent"))
    res = kubegc("-r", node.endpoint, "--state-dir", str(tmp_path / "state"),
                 "--kubeconfig", str(kubeconfig), "--node-name", KUBELET_NODE,
                 "--kubelet-url", kubelet.url, "-v", *agent_args(), "--once",
                 "--root-dir", str(tmp_path / "kubelet"))  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert f"pod source: kubelet {kubelet.url}/pods, node {KUBELET_NODE}" in res.stderr
    made = control_plane.requests("kubegc-agent")[mark:]
    seen = [(e["verb"], e["objectRef"].get("resource")) for e in made]
    assert ("list", "pods") not in seen, seen
    assert len(made) <= MAX_REQUESTS + 1, seen  # + 1: the first write creates the report
    report = client.CustomObjectsApi(admin).get_cluster_custom_object(
        GROUP, VERSION, PLURAL, KUBELET_NODE
    )
    assert report["status"]["podSource"] == "kubelet"
    assert report["status"]["kubeletConfig"] == "kubelet /configz"


def test_the_kubelet_changes_no_sysctl_and_writes_no_fixed_host_path(
    kubelet: LocalKubelet, kubelet_pod: str
) -> None:
    """Once it has registered and taken a pod, the machine's kernel settings and the paths a
    kubelet writes whatever its --root-dir are as they were before it started."""
    assert machine_state() == kubelet.before


def test_the_kubelet_also_accepts_nodes_proxy(
    kubelet: LocalKubelet, control_plane: ControlPlane, admin: Any
) -> None:
    """Fine-grained kubelet authorization falls back to `nodes/proxy` (which rbac.yaml does not
    grant, as it also allows exec): granted only that, an identity reads /pods and /configz."""
    from kubernetes import client

    rbac = client.RbacAuthorizationV1Api(admin)
    name = "kubegc-test-nodes-proxy"
    rbac.create_cluster_role({"metadata": {"name": name}, "rules": [
        {"apiGroups": [""], "resources": ["nodes/proxy"], "verbs": ["get"]}]})  # fmt: skip
    rbac.create_cluster_role_binding({
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": "kubegc-test-nobody"}],
    })  # fmt: skip
    try:
        token = control_plane.tokens["nobody"]
        deadline = time.monotonic() + 20  # the RBAC cache takes the binding, the kubelet asks again
        while (codes := [kubelet.get(p, token)[0] for p in ("/pods", "/configz")]) != [200, 200]:
            assert time.monotonic() < deadline, codes
            time.sleep(0.2)
    finally:
        rbac.delete_cluster_role_binding(name)
        rbac.delete_cluster_role(name)
    deadline = time.monotonic() + 20
    while kubelet.get("/pods", token)[0] != 403:  # and "nobody" is granted nothing again
        assert time.monotonic() < deadline
        time.sleep(0.2)
