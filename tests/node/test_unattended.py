"""Running kubegc unattended against a real containerd: a `gc containers --yes` run reports
what it removed in the metrics textfile (`--metrics-file`) and as a Node Event (`--events`,
posted to the real kube-apiserver with the node agent's identity from deploy/kubernetes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubegc_cli.report.metrics import parse_samples, series
from tests.api.test_events import node_events
from tests.controlplane import ControlPlane
from tests.node.localnode import LocalNode, pod_list


def test_gc_containers_reports_metrics_and_an_event(
    node: LocalNode, ns: str, tmp_path: Path, control_plane: ControlPlane, admin: Any,
    deployed: list[str], node_name: str,
) -> None:  # fmt: skip
    p = node.run_pod("p", namespace=ns)
    init0 = node.add_container(p, "init", attempt=0)
    init1 = node.add_container(p, "init", attempt=1)
    app = node.add_container(p, "app", state="running")
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps(pod_list([p])))
    prom = tmp_path / "textfile" / "kubegc.prom"
    prom.parent.mkdir()
    kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "kubeconfig")
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
         "--kubelet-config", str(node.kubelet_config), "--state-dir", str(tmp_path / "state"),
         "--pods-file", str(pods), "--kubeconfig", str(kubeconfig), "--node-name", node_name,
         "--metrics-file", str(prom), "--events",
         "gc", "containers", "-n", ns, "--yes", "-o", "json"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert [(a["id"], a["result"]) for a in doc["actions"]] == [(init0, "removed")]
    freed = doc["summary"]["bytes_freed"]
    assert freed > 0
    assert node.container_ids(namespace=ns) == {init1, app}

    samples = parse_samples(prom.read_text())
    got = {(lbl["kind"], lbl["result"]): v for lbl, v in series(samples, "kubegc_objects_total")}
    assert got == {("container", "removed"): 1, ("container", "skipped"): 0,
                   ("container", "failed"): 0}  # fmt: skip
    [(_, freed_total)] = list(series(samples, "kubegc_freed_bytes_total"))
    assert freed_total == freed

    [ev] = node_events(admin, node_name)
    assert (ev.reason, ev.type) == ("ContainerGCSucceeded", "Normal")
    assert ev.message.startswith("removed 1 container(s); freed ")
    involved = ev.involved_object
    assert (involved.api_version, involved.kind, involved.name, involved.uid) == (
        "v1", "Node", node_name, node_name)  # fmt: skip
