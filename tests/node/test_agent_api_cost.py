"""What one `kubegc agent` cycle costs the API server, counted: the DaemonSet's own agent
arguments (deploy/kubernetes/daemonset-agent.yaml) with `--once`, against a real containerd
and the real kube-apiserver, as the node agent's identity (kube-system/kubegc-agent). The API
server's audit log must show no more requests and writes than docs/FLEET.md's arithmetic
assumes, every one allowed by the manifests' RBAC, and no Lease in report mode."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from kubegc_cli.core.fleet import GROUP, PLURAL, VERSION
from tests.api.test_evict_prune import make_pod
from tests.conftest import kustomization_docs
from tests.controlplane import ControlPlane
from tests.node.localnode import LocalNode

#: docs/FLEET.md, "Requests per agent cycle": at most 6 requests, 1 of them a write; the
#: first write ever creates the report as well (one more request, one more write).
MAX_REQUESTS, MAX_WRITES = 6, 1
WRITES = {"create", "update", "patch", "delete"}


def agent_args() -> list[str]:
    """The agent's own arguments in the DaemonSet (`agent --mode=report ...`)."""
    [ds] = [d for d in kustomization_docs() if d["kind"] == "DaemonSet"]
    [c] = ds["spec"]["template"]["spec"]["containers"]
    args: list[str] = c["args"]
    return args[args.index("agent") :]


def test_one_report_cycle_costs_what_the_arithmetic_says(
    node: LocalNode, ns: str, tmp_path: Path, control_plane: ControlPlane, admin: Any,
    deployed: list[str], node_name: str,
) -> None:  # fmt: skip
    from kubernetes import client

    core = client.CoreV1Api(admin)
    core.create_node({"metadata": {"name": node_name}})
    try:
        core.create_namespace({"metadata": {"name": ns}})
        pod = make_pod(core, ns, "p", node_name, phase="Running", reason="")
        node.run_pod("p", namespace=ns, uid=pod.metadata.uid)  # the API's pod, running here
        (tmp_path / "kubelet").mkdir()
        kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "agent.kubeconfig")

        def cycle() -> list[dict[str, Any]]:
            mark = len(control_plane.requests("kubegc-agent"))
            res = subprocess.run(
                [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
                 "--kubelet-config", str(node.kubelet_config),
                 "--state-dir", str(tmp_path / "state"), "--kubeconfig", str(kubeconfig),
                 "--node-name", node_name, "--events",
                 *agent_args(), "--once", "--root-dir", str(tmp_path / "kubelet"), "-n", ns],
                capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            assert res.returncode == 0, res.stderr
            return control_plane.requests("kubegc-agent")[mark:]

        first, second = cycle(), cycle()
        for made, extra in ((first, 1), (second, 0)):  # the first write creates the report
            seen = [(e["verb"], e["objectRef"].get("resource"), e["responseStatus"]["code"])
                    for e in made]  # fmt: skip
            assert all(code < 400 or code == 404 for _, _, code in seen), seen  # none refused
            assert len(made) <= MAX_REQUESTS + extra, seen
            assert sum(verb in WRITES for verb, _, _ in seen) <= MAX_WRITES + extra, seen
            assert not any(resource == "leases" for _, resource, _ in seen), seen
        report = client.CustomObjectsApi(admin).get_cluster_custom_object(
            GROUP, VERSION, PLURAL, node_name
        )
        assert report["status"]["mode"] == "report"
    finally:
        core.delete_node(node_name)
