"""deploy/kubernetes applied to a real kube-apiserver (the API server validates and admits
every object of the kustomization and of the apply-mode overlay), and each ServiceAccount's
identity making, for real, every call its rules grant — a 403 fails the test — and being
refused what they must not grant.

What RBAC allows and what it cannot express, as these tests show it: the agent may list pods
across the cluster (it always asks with a `spec.nodeName` field selector, which RBAC cannot
require) and read any Node (RBAC cannot name "the node this pod runs on"); it may create a
Lease of any name in its own namespace kubegc (a create names no object to the authorizer)
but read and update only the apply slots there, and no Lease at all in kube-system.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.parse
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegc_cli.cli.main import main
from kubegc_cli.core.fleet import GROUP, PLURAL, VERSION, NodeReport, lease_name
from kubegc_cli.node.fleet.leases import ApplySlots
from kubegc_cli.node.fleet.reports import list_reports, read_report, write_report
from kubegc_cli.node.pods.api import ApiUnavailable
from tests.api.test_events import node_events
from tests.api.test_evict_prune import exists, make_pod
from tests.conftest import DEPLOY, kustomization_docs
from tests.controlplane import ControlPlane
from tests.unit.test_deploy import host_tree

APPLY_MODE = DEPLOY.parent / "kubernetes-apply-mode"
#: priority >= this makes a pod critical to the kubelet (kubelet types IsCriticalPodBasedOnPriority:
#: scheduling.SystemCriticalPriority, twice the highest user-definable priority)
SYSTEM_CRITICAL = 2_000_000_000


def find(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [doc] = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    return doc


def pod_from(workload: dict[str, Any], name: str, node: str) -> dict[str, Any]:
    """The Pod a DaemonSet or CronJob `workload` makes, bound to `node`."""
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    template = json.loads(json.dumps(spec["template"]))
    template["spec"]["nodeName"] = node
    meta = {"name": name, **template["metadata"]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}


@pytest.fixture(scope="module")
def core(admin: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(admin)


@pytest.fixture
def agent(control_plane: ControlPlane, deployed: list[str], tmp_path: Path) -> Any:
    """An ApiClient with the node agent's identity (kube-system/kubegc-agent)."""
    from kubernetes import config

    kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "agent.kubeconfig")
    return config.new_client_from_config(str(kubeconfig))


@pytest.fixture
def node(core: Any, node_name: str) -> Iterator[Any]:
    """A Node object of the test's own (no kubelet behind it)."""
    made = core.create_node({"metadata": {"name": node_name},
                             "status": {"allocatable": {"memory": "900Mi"}}})  # fmt: skip
    yield made
    core.delete_node(node_name)


def refused(call: Any, *args: Any, **kwargs: Any) -> None:
    """`call` is answered 403 Forbidden."""
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as err:
        call(*args, **kwargs)
    assert err.value.status == 403, err.value


def may(api: Any, verb: str, resource: str, *, group: str = "", sub: str = "",
        namespace: str = "", name: str = "") -> bool:  # fmt: skip
    """SelfSubjectAccessReview: may the identity of `api` do this?"""
    from kubernetes import client

    review = client.AuthorizationV1Api(api).create_self_subject_access_review({
        "spec": {"resourceAttributes": {
            "verb": verb, "group": group, "resource": resource, "subresource": sub,
            "namespace": namespace, "name": name}}})  # fmt: skip
    return bool(review.status.allowed)


# --- the manifests on the server -----------------------------------------------------------


def test_the_manifests_are_accepted(deployed: list[str]) -> None:
    assert {"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "Role",
            "ConfigMap", "DaemonSet", "CronJob"} <= set(deployed)  # fmt: skip
    assert deployed[0] == "CustomResourceDefinition"  # first: the agents write reports at once


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is needed for kustomize")
def test_the_apply_mode_overlay_builds_and_is_accepted(admin: Any, deployed: list[str]) -> None:
    """`kubectl kustomize` builds the overlay (its JSON patch's `test` operations pin what it
    changes); each object is accepted by a server-side apply dry run."""
    from kubernetes import dynamic

    out = subprocess.run(["kubectl", "kustomize", str(APPLY_MODE)],
                         capture_output=True, text=True, check=True, timeout=60).stdout  # fmt: skip
    docs = [d for d in yaml.safe_load_all(out) if d]
    ds = find(docs, "DaemonSet", "kubegc-agent")
    [c] = ds["spec"]["template"]["spec"]["containers"]
    assert "--mode=apply" in c["args"] and "--mode=report" not in c["args"]
    assert c["args"][-1] == "--apply-slots=1"
    writable = {m["mountPath"] for m in c["volumeMounts"] if not m.get("readOnly")}
    assert writable == {"/host/var/log/pods", "/host/var/log/containers", "/host/run/kubegc",
                        "/var/lib/kubegc", "/tmp"}  # fmt: skip
    dyn = dynamic.DynamicClient(admin)
    for doc in docs:
        resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        resource.server_side_apply(body=doc, namespace=doc["metadata"].get("namespace"),
                                   field_manager="kubegc-test", force_conflicts=True,
                                   dry_run="All")  # fmt: skip


def test_the_apply_mode_patch_applies_on_the_server(admin: Any, deployed: list[str]) -> None:
    """The overlay's JSON patch (RFC 6902, its `test` operations included) applied by the API
    server to the deployed DaemonSet in a dry run — no kubectl needed: the result is what
    `kubectl apply -k` would make, and it is strictly valid for every Kubernetes release the
    manifests are checked against."""
    import kubernetes_validate
    from kubernetes import client

    from tests.unit.test_deploy import K8S_VERSIONS

    ops = yaml.safe_load((APPLY_MODE / "daemonset-apply.yaml").read_text())
    apps = client.AppsV1Api(admin)
    patched = apps.patch_namespaced_daemon_set("kubegc-agent", "kube-system", ops, dry_run="All")
    doc = admin.sanitize_for_serialization(patched)
    [c] = doc["spec"]["template"]["spec"]["containers"]
    assert c["args"][c["args"].index("agent") :] == [
        "agent", "--mode=apply", "--interval=5m", "--listen=:9808", "--apply-slots=1"]  # fmt: skip
    logs = {m["mountPath"]: m.get("readOnly", False) for m in c["volumeMounts"]}
    assert logs["/host/var/log/pods"] is False and logs["/host/var/log/containers"] is False
    assert logs["/host/var/lib/kubelet"] is True
    for drop in ("status", "metadata"):
        doc.pop(drop)
    doc["metadata"] = {"name": "kubegc-agent", "namespace": "kube-system"}
    for version in K8S_VERSIONS:
        kubernetes_validate.validate(doc, version, strict=True)
    stored = apps.read_namespaced_daemon_set("kubegc-agent", "kube-system")
    assert "--mode=report" in stored.spec.template.spec.containers[0].args  # a dry run


def test_the_apply_mode_rbac_lets_the_breaker_read_every_report(
    agent: Any, admin: Any, node: Any, node_name: str
) -> None:
    """deploy/kubernetes-apply-mode/rbac-breaker.yaml applied for real (and removed after):
    list_reports, refused in report mode, now reads the reports."""
    import time

    from kubernetes import client, utils

    write_report(agent, NodeReport(node=node_name, observed_at="2026-11-29T12:00:00Z"))
    docs = [d for d in yaml.safe_load_all((APPLY_MODE / "rbac-breaker.yaml").read_text()) if d]
    for doc in docs:
        utils.create_from_dict(admin, doc)
    rbac = client.RbacAuthorizationV1Api(admin)
    try:
        deadline = time.monotonic() + 10
        while not may(agent, "list", "nodegcreports", group=GROUP):  # the authorizer's cache
            assert time.monotonic() < deadline, "the breaker's binding never took effect"
            time.sleep(0.2)
        assert node_name in {r.node for r in list_reports(agent)}
    finally:
        rbac.delete_cluster_role_binding("kubegc-agent-breaker")
        rbac.delete_cluster_role("kubegc-agent-breaker")


def test_the_agent_pod_is_critical_and_admitted_in_kube_system(
    core: Any, deployed: list[str], node_name: str
) -> None:
    """The Priority admission plugin resolves system-node-critical (above the kubelet's
    critical threshold: admitted on a node under DiskPressure); the restricted Pod Security
    level of namespace kubegc refuses the same pod (hostPath), as it should."""
    from kubernetes.client.exceptions import ApiException

    ds = find(kustomization_docs(), "DaemonSet", "kubegc-agent")
    pod = core.create_namespaced_pod("kube-system", pod_from(ds, "kubegc-agent-x", node_name),
                                     dry_run="All")  # fmt: skip
    assert pod.spec.priority_class_name == "system-node-critical"
    assert pod.spec.priority >= SYSTEM_CRITICAL
    elsewhere = pod_from(ds, "kubegc-agent-x", node_name)
    elsewhere["metadata"]["namespace"] = "kubegc"
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("kubegc", elsewhere, dry_run="All")
    assert err.value.status == 403 and "hostPath" in str(err.value.body), err.value.body


def test_the_prune_pod_meets_the_restricted_pod_security_level(
    core: Any, deployed: list[str], node_name: str
) -> None:
    cron = find(kustomization_docs(), "CronJob", "kubegc-evict-prune")
    pod = core.create_namespaced_pod("kubegc", pod_from(cron, "prune-x", node_name),
                                     dry_run="All")  # fmt: skip
    assert pod.spec.service_account_name == "kubegc-prune"


# --- the node agent's identity --------------------------------------------------------------


def test_the_agent_may_make_each_granted_call(
    agent: Any, core: Any, node: Any, node_name: str, admin: Any
) -> None:
    """Each call the agent's rules grant, made for real with its token: the pod source's
    list, the Node, its report written and read by node.fleet.reports, an apply slot taken,
    renewed and released by node.fleet.leases; the kubelet's subresources by review."""
    from kubernetes import client

    agent_core = client.CoreV1Api(agent)
    assert agent_core.read_node(node_name).metadata.uid == node.metadata.uid
    ns = f"t-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    make_pod(core, ns, "web-1", node_name, phase="Running", reason="")
    found = agent_core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName={node_name}",
                                                   limit=500)  # fmt: skip
    assert [p.metadata.name for p in found.items] == ["web-1"]

    report = NodeReport(node=node_name, observed_at="2026-11-29T12:00:00Z", reclaimable=1)
    write_report(agent, report)  # the first time: created, owned by the Node
    write_report(agent, replace(report, reclaimable=2))
    assert read_report(agent, node_name) == replace(report, reclaimable=2)
    got = client.CustomObjectsApi(admin).get_cluster_custom_object(
        GROUP, VERSION, PLURAL, node_name
    )
    assert got["metadata"]["ownerReferences"][0]["uid"] == node.metadata.uid

    slots = ApplySlots(agent, "kubegc", node_name, 10, lease_seconds=60)
    held = slots.acquire()  # any of kubegc-apply-0 … 9 that no live holder has
    assert held is not None and held.startswith("kubegc-apply-")
    assert slots.renew(held)
    slots.release(held)

    for sub in ("pods", "configz"):  # the kubelet asks the API server, as this review does
        assert may(agent, "get", "nodes", sub=sub, name=node_name), sub


def test_the_agent_is_refused_what_it_does_not_need(
    agent: Any, core: Any, node: Any, node_name: str, admin: Any
) -> None:
    from kubernetes import client

    agent_core = client.CoreV1Api(agent)
    ns = f"t-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    make_pod(core, ns, "web-1", node_name)
    refused(agent_core.delete_namespaced_pod, "web-1", ns)
    assert exists(core, ns, "web-1") is not None
    refused(agent_core.list_namespaced_secret, "kube-system")
    refused(agent_core.read_namespaced_secret, "any", ns)
    refused(agent_core.patch_node, node_name, {"metadata": {"labels": {"x": "y"}}})
    refused(agent_core.patch_node_status, node_name, {"status": {"phase": "Running"}})
    refused(agent_core.delete_node, node_name)
    event = {"metadata": {"name": "x"}, "involvedObject": {"kind": "Node", "name": node_name}}
    refused(agent_core.create_namespaced_event, ns, event)  # events only in default
    refused(client.CustomObjectsApi(agent).list_cluster_custom_object, GROUP, VERSION, PLURAL)
    with pytest.raises(ApiUnavailable, match="403"):  # the breaker's list: apply mode only
        list_reports(agent)

    # another lease in kube-system (a controller's leader election) can be neither read nor
    # taken over; a create names no object, so RBAC cannot limit it to the slots' names
    leases = client.CoordinationV1Api(agent)
    other = f"kube-controller-manager-{uuid.uuid4().hex[:6]}"
    client.CoordinationV1Api(admin).create_namespaced_lease(
        "kube-system", {"metadata": {"name": other}, "spec": {"holderIdentity": "kcm"}}
    )
    refused(leases.read_namespaced_lease, other, "kube-system")
    refused(leases.replace_namespaced_lease, other, "kube-system",
            {"metadata": {"name": other}, "spec": {"holderIdentity": node_name}})  # fmt: skip
    refused(leases.create_namespaced_lease, "default", {"metadata": {"name": lease_name(0)}})
    # nor created: a controller's leader-election Lease that does not exist yet cannot be
    # squatted; the slots live in namespace kubegc
    squat = f"kube-scheduler-{uuid.uuid4().hex[:6]}"
    refused(leases.create_namespaced_lease, "kube-system",
            {"metadata": {"name": squat}, "spec": {"holderIdentity": node_name}})  # fmt: skip
    refused(leases.create_namespaced_lease, "kube-system", {"metadata": {"name": lease_name(0)}})
    assert not may(agent, "create", "leases", group="coordination.k8s.io",
                   namespace="kube-system")  # fmt: skip
    assert may(agent, "create", "leases", group="coordination.k8s.io", namespace="kubegc")

    assert not may(agent, "get", "nodes", sub="proxy", name=node_name)  # exec, logs, ...
    assert not may(agent, "create", "nodes", sub="proxy", name=node_name)
    assert not may(agent, "update", "nodes", name=node_name)
    # what RBAC cannot narrow: every pod of the cluster may be listed, every Node read
    assert may(agent, "list", "pods")
    assert may(agent, "get", "nodes", name="any-other-node")


# --- kubegc's own command lines, as in the manifests ----------------------------------------


def agent_globals(tmp_path: Path, host: Path, node: str) -> list[str]:
    """The global options of the DaemonSet's command line, made to run here: /host → `host`,
    the policy ConfigMap's file and the state dir → tmp_path, $(NODE_NAME) → `node`."""
    docs = kustomization_docs()
    [c] = find(docs, "DaemonSet", "kubegc-agent")["spec"]["template"]["spec"]["containers"]
    policy = tmp_path / "config.yaml"
    policy.write_text(find(docs, "ConfigMap", "kubegc-policy")["data"]["config.yaml"])
    args = c["args"][1 : c["args"].index("agent")]
    local = {"--config=/etc/kubegc/policy/config.yaml": f"--config={policy}",
             "--host-root=/host": f"--host-root={host}",
             "--state-dir=/var/lib/kubegc": f"--state-dir={tmp_path / 'state'}",
             "--node-name=$(NODE_NAME)": f"--node-name={node}"}  # fmt: skip
    assert set(local) | {"--events"} == set(args), args  # every option is accounted for
    return [local.get(a, a) for a in args]


def calls(cp: ControlPlane, identity: str, since: int = 0) -> list[dict[str, Any]]:
    """`identity`'s requests from the API server's audit log, after the first `since`: each
    {verb, resource, namespace, name, code, query} (query: the URI's parameters)."""
    out = []
    for e in cp.requests(identity)[since:]:
        ref = e.get("objectRef", {})
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(e["requestURI"]).query)
        out.append({"verb": e["verb"], "resource": ref.get("resource", ""),
                    "namespace": ref.get("namespace", ""), "name": ref.get("name", ""),
                    "code": e.get("responseStatus", {}).get("code", 0),
                    "query": {k: v[0] for k, v in query.items()}})  # fmt: skip
    return out


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_commands_run_by_hand_in_the_agent_pod_are_allowed(
    control_plane: ControlPlane, deployed: list[str], admin: Any, core: Any, node: Any,
    node_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """`evict check` and `memory available` with the DaemonSet's own options and the agent's
    identity: the API server's audit log shows exactly their calls (the node's pods by field
    selector, its Node, the Event in default), each answered 2xx."""
    kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "agent.kubeconfig")
    host = host_tree(tmp_path / "host")
    ns = f"t-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    make_pod(core, ns, "web-1", node_name, phase="Running", reason="")
    here = ["--kubeconfig", str(kubeconfig), *agent_globals(tmp_path, host, node_name)]
    mark = len(control_plane.requests("kubegc-agent"))
    code, _, err = run_cli([*here, "memory", "available"], capsys)
    assert code == 0, err
    made = calls(control_plane, "kubegc-agent", mark)
    assert sorted((r["verb"], r["resource"], r["name"], r["code"]) for r in made) == [
        ("get", "nodes", node_name, 200), ("list", "pods", "", 200)]  # fmt: skip
    mark += len(made)
    code, _, err = run_cli([*here, "evict", "check"], capsys)
    assert code == 5, err  # memory.available is below its threshold: THRESHOLD_MET
    assert "403" not in err and "forbidden" not in err.lower(), err
    assert [e.reason for e in node_events(admin, node_name)] == ["EvictionThresholdMet"]
    made = calls(control_plane, "kubegc-agent", mark)
    # the Node: its kubeletVersion picks the kubelet's defaults (evict check reads it when
    # the API is the pod source)
    assert sorted((r["verb"], r["resource"], r["namespace"], r["code"]) for r in made) == [
        ("create", "events", "default", 201), ("get", "nodes", "", 200),
        ("list", "pods", "", 200)]  # fmt: skip
    [listed] = [r for r in made if r["verb"] == "list"]
    assert listed["query"]["fieldSelector"] == f"spec.nodeName={node_name}"
    assert listed["query"]["limit"] == "500"


def test_the_prune_cronjob_command_line_runs_with_its_own_service_account(
    control_plane: ControlPlane, deployed: list[str], core: Any, node_name: str,
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    """The CronJob's own arguments as kubegc-prune: the list across namespaces and the
    deletes, and nothing else, each answered 2xx; an Evicted pod older than an hour goes, a
    running one stays."""
    ns = f"t-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    make_pod(core, ns, "old-1", node_name, evicted_at="2020-01-01T00:00:00Z")
    make_pod(core, ns, "web-1", node_name, phase="Running", reason="")
    cron = find(kustomization_docs(), "CronJob", "kubegc-evict-prune")
    [c] = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    args = [a.replace("=/dev/shm/kubegc-state", f"={tmp_path / 'shm-state'}")
            for a in c["args"][1:]]  # fmt: skip
    kubeconfig = control_plane.kubeconfig("kubegc-prune", tmp_path / "prune.kubeconfig")
    mark = len(control_plane.requests("kubegc-prune"))
    code, out, err = run_cli(["--kubeconfig", str(kubeconfig), *args], capsys)
    assert code == 0, err
    made = calls(control_plane, "kubegc-prune", mark)
    assert {(r["verb"], r["resource"], r["query"].get("fieldSelector")) for r in made} == {
        ("list", "pods", "status.phase=Failed"), ("delete", "pods", None)}  # fmt: skip
    assert all(200 <= r["code"] < 300 for r in made), made
    mine = [a for a in json.loads(out)["actions"] if a["id"].startswith(f"{ns}/")]
    assert [(a["id"], a["result"]) for a in mine] == [(f"{ns}/old-1", "removed")]
    assert exists(core, ns, "old-1") is None and exists(core, ns, "web-1") is not None
