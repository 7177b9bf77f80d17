"""kubegc and the node's own kubelet: `/pods` as the pod source and `/configz` as the kubelet
configuration, against a real kubelet (``localkubelet.py``) registered with the real API
server, which checks every caller's token (TokenReview) and right (SubjectAccessReview)
against the manifests' RBAC. The agent's identity (kube-system/kubegc-agent, granted
`get nodes/pods, nodes/configz`) is let through; kubegc-prune (allowed to list pods through
the API, not granted the kubelet's subresources) is refused with 403, and kubegc then lists
the node's pods through the API and reads the kubelet's config file instead."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.fleet import GROUP, PLURAL, VERSION
from tests.api.test_events import node_events
from tests.api.test_rbac import calls, find
from tests.conftest import kustomization_docs
from tests.controlplane import KUBELET_NODE, ControlPlane
from tests.node.localkubelet import LocalKubelet, machine_state
from tests.node.localnode import LocalNode
from tests.unit.test_deploy import host_tree

#: docs/FLEET.md, "Requests per agent cycle": at most 6 requests, 1 of them a write; the
#: first write ever creates the report as well (one more request, one more write).
MAX_REQUESTS, MAX_WRITES = 6, 1
WRITES = {"create", "update", "patch", "delete"}


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
            *kubelet.flags, "--kubelet-config", str(node.kubelet_config),
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
        ("kubegc-agent", 100, "kubelet /configz: imageGCHighThresholdPercent"),
        (
            "kubegc-prune",
            77,
            f"kubelet config {host}/var/lib/kubelet/config.yaml: imageGCHighThresholdPercent",
        ),
    ):
        kubeconfig = control_plane.kubeconfig(identity, tmp_path / f"{identity}.kubeconfig")
        res = kubegc("--host-root", str(host), "--kubeconfig", str(kubeconfig),
                     "--node-name", KUBELET_NODE, *kubelet.flags, "-o", "json",
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
                     KUBELET_NODE, *kubelet.flags, "--pod-source", "none",
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

    kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "agent.kubeconfig")
    (tmp_path / "kubelet").mkdir()
    mark = len(control_plane.requests("kubegc-agent"))
    res = kubegc("-r", node.endpoint, "--state-dir", str(tmp_path / "state"),
                 "--kubeconfig", str(kubeconfig), "--node-name", KUBELET_NODE,
                 *kubelet.flags, "-v", *agent_args(), "--once",
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


# --- the DaemonSet's own command line -------------------------------------------------------


def agent_args() -> list[str]:
    """The agent's own arguments in the DaemonSet (`agent --mode=report ...`)."""
    [c] = find(kustomization_docs(), "DaemonSet", "kubegc-agent")["spec"]["template"]["spec"][
        "containers"
    ]
    args: list[str] = c["args"]
    return args[args.index("agent") :]


def daemonset_globals(tmp_path: Path, host: Path, kubelet: LocalKubelet) -> list[str]:
    """The global options of the DaemonSet's command line, made to run here: /host → `host`,
    the policy ConfigMap's file, the state dir and the kubelet's pki/kubelet.crt (a copy of
    the kubelet's) → tmp_path, $(NODE_NAME) → the kubelet's node, $(NODE_IP):10250 → the
    kubelet's address. The ServiceAccount's ca.crt is absent, as the cluster CA signed no
    certificate of this kubelet."""
    docs = kustomization_docs()
    [c] = find(docs, "DaemonSet", "kubegc-agent")["spec"]["template"]["spec"]["containers"]
    policy = tmp_path / "config.yaml"
    policy.write_text(find(docs, "ConfigMap", "kubegc-policy")["data"]["config.yaml"])
    (tmp_path / "pki").mkdir()
    (tmp_path / "pki/kubelet.crt").write_bytes(kubelet.ca.read_bytes())
    args = c["args"][1 : c["args"].index("agent")]
    sa_ca = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
    local = {"--config=/etc/kubegc/policy/config.yaml": f"--config={policy}",
             "--host-root=/host": f"--host-root={host}",
             "--state-dir=/var/lib/kubegc": f"--state-dir={tmp_path / 'state'}",
             "--node-name=$(NODE_NAME)": f"--node-name={KUBELET_NODE}",
             "--kubelet-url=https://$(NODE_IP):10250": f"--kubelet-url={kubelet.url}",
             "--kubelet-server-name=$(NODE_NAME)": f"--kubelet-server-name={KUBELET_NODE}",
             "--kubelet-ca=/host/var/lib/kubelet/pki/kubelet.crt":
                 f"--kubelet-ca={tmp_path / 'pki/kubelet.crt'}",
             f"--kubelet-ca={sa_ca}": f"--kubelet-ca={tmp_path}{sa_ca}"}  # fmt: skip
    assert set(local) | {"--events"} == set(args), args  # every option is accounted for
    return [local.get(a, a) for a in args]


def run_kubegc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kubegc_cli", *args], capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)  # fmt: skip


def test_commands_run_by_hand_in_the_agent_pod_are_allowed(
    kubelet: LocalKubelet, control_plane: ControlPlane, kubelet_pod: str, admin: Any,
    deployed: list[str], tmp_path: Path,
) -> None:  # fmt: skip
    """`memory available` and `evict check` with the DaemonSet's own options and the agent's
    identity: the node's pods from its kubelet (its self-signed certificate verified), and
    the API server's audit log shows exactly their calls (its Node, the Event in default),
    each answered 2xx — no pod list."""
    kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "agent.kubeconfig")
    host = host_tree(tmp_path / "host")
    here = ["--kubeconfig", str(kubeconfig), *daemonset_globals(tmp_path, host, kubelet)]
    mark = len(control_plane.requests("kubegc-agent"))
    res = run_kubegc(*here, "-v", "memory", "available")
    assert res.returncode == 0, res.stderr
    assert f"pod source: kubelet {kubelet.url}/pods" in res.stderr, res.stderr
    made = calls(control_plane, "kubegc-agent", mark)
    assert ("list", "pods") not in {(r["verb"], r["resource"]) for r in made}, made
    assert all(200 <= r["code"] < 300 for r in made), made
    mark += len(made)
    res = run_kubegc(*here, "-v", "evict", "check")
    assert res.returncode == 5, res.stderr  # memory.available is below its threshold: met
    assert "403" not in res.stderr and "forbidden" not in res.stderr.lower(), res.stderr
    assert f"kubelet config: kubelet /configz ({kubelet.url})" in res.stderr
    assert "EvictionThresholdMet" in [e.reason for e in node_events(admin, KUBELET_NODE)]
    made = calls(control_plane, "kubegc-agent", mark)
    assert ("list", "pods") not in {(r["verb"], r["resource"]) for r in made}, made
    assert ("create", "events", "default", 201) in {
        (r["verb"], r["resource"], r["namespace"], r["code"]) for r in made}  # fmt: skip
    assert all(200 <= r["code"] < 300 for r in made), made


def test_one_daemonset_cycle_costs_what_the_arithmetic_says(
    kubelet: LocalKubelet, control_plane: ControlPlane, kubelet_pod: str, node: LocalNode,
    admin: Any, deployed: list[str], tmp_path: Path,
) -> None:  # fmt: skip
    """Two `kubegc agent --once` cycles with the DaemonSet's whole command line (report mode),
    as its ServiceAccount, against the real kubelet and API server: the API server's audit log
    shows no more requests and writes than docs/FLEET.md's arithmetic assumes, none refused,
    no pod list and no Lease; the report says where its pods and config came from. The host
    is this machine's (the test node's containerd state is here), its kubelet root a new
    directory."""
    from kubernetes import client

    kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "agent.kubeconfig")
    here = ["--kubeconfig", str(kubeconfig), "-r", node.endpoint,
            *daemonset_globals(tmp_path, Path("/"), kubelet)]  # fmt: skip
    (tmp_path / "kubelet").mkdir()
    with contextlib.suppress(client.ApiException):  # an earlier test's report: made anew
        client.CustomObjectsApi(admin).delete_cluster_custom_object(GROUP, VERSION, PLURAL,
                                                                    KUBELET_NODE)  # fmt: skip

    def cycle() -> list[dict[str, Any]]:
        mark = len(control_plane.requests("kubegc-agent"))
        res = run_kubegc(*here, *agent_args(), "--once", "--root-dir", str(tmp_path / "kubelet"))
        assert res.returncode == 0, res.stderr
        return control_plane.requests("kubegc-agent")[mark:]

    first, second = cycle(), cycle()
    for made, extra in ((first, 1), (second, 0)):  # the first write creates the report
        seen = [(e["verb"], e["objectRef"].get("resource"), e["responseStatus"]["code"])
                for e in made]  # fmt: skip
        assert all(code < 400 or code == 404 for _, _, code in seen), seen  # none refused
        assert len(made) <= MAX_REQUESTS + extra, seen
        assert sum(verb in WRITES for verb, _, _ in seen) <= MAX_WRITES + extra, seen
        assert not any(resource in ("leases", "pods") for _, resource, _ in seen), seen
    report = client.CustomObjectsApi(admin).get_cluster_custom_object(
        GROUP, VERSION, PLURAL, KUBELET_NODE
    )
    status = report["status"]
    assert (status["mode"], status["podSource"], status["kubeletConfig"]) == (
        "report", "kubelet", "kubelet /configz")  # fmt: skip


def test_a_kubelet_and_an_api_that_both_refuse_leave_no_pod_source(
    kubelet: LocalKubelet, control_plane: ControlPlane, node: LocalNode, tmp_path: Path,
) -> None:  # fmt: skip
    """A kubelet that refuses `/pods` (before 1.33 it asks for nodes/proxy) and an API that
    refuses the pod list: the run says both and goes on without a pod source, so no pod
    counts as deleted."""
    res = kubegc(*gc_args(control_plane, "nobody", kubelet, node, tmp_path), "gc", "containers",
                 "--dry-run")  # fmt: skip
    assert plan_pod_source(res) == "none"
    lines = res.stderr.splitlines()
    assert f"kubelet {kubelet.url}/pods: 403 Forbidden" in lines[0], lines
    assert "listing the node's pods through the API instead" in lines[0], lines
    assert "403 Forbidden: kubegc needs permission to list pods" in lines[1], lines
    assert "going on without a pod source (no pod is treated as deleted)" in lines[1], lines
