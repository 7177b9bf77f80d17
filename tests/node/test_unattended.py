"""Running kubegc unattended against a real containerd: a `gc containers --yes` run reports
what it removed in the metrics textfile (`--metrics-file`) and as a Node Event (`--events`,
posted to the real kube-apiserver with the node agent's identity from deploy/kubernetes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubegc_cli.core.units import format_bytes
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
    assert ev.message == (
        f"removed 1 container(s); {format_bytes(doc['summary']['bytes_expected'])} expected, "
        f"{format_bytes(doc['summary']['bytes_measured'])} regained (measured)"
    )
    involved = ev.involved_object
    assert (involved.api_version, involved.kind, involved.name, involved.uid) == (
        "v1", "Node", node_name, node_name)  # fmt: skip


def test_the_shipped_units_clean_up_on_a_node_without_node_exporter(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """deploy/systemd's command lines as shipped, on a node whose node_exporter textfile
    directory does not exist, against the real containerd: the cleanup removes what it should
    and exits 0 (its unit succeeds), the report too; each says once on stderr that the
    metrics file could not be written. (Scoped to the test's namespace and a fixture kubelet
    root, so the run touches nothing of this machine's.)"""
    from tests.unit.test_deploy import SERVICES, exec_lines

    p = node.run_pod("p", namespace=ns)
    init0 = node.add_container(p, "init", attempt=0)
    init1 = node.add_container(p, "init", attempt=1)
    textfile = tmp_path / "node_exporter" / "textfile_collector"
    root = tmp_path / "kubelet"
    (root / "pods").mkdir(parents=True)
    for unit in SERVICES:
        [line] = exec_lines(unit)
        args = [a.replace("/var/lib/node_exporter/textfile_collector", str(textfile))
                for a in line[1:]]  # fmt: skip
        assert str(textfile / "kubegc.prom") in args, unit  # the path the unit writes
        scope = ["-n", ns] if args[-2:] == ["all", "--yes"] else ["--root-dir", str(root)]
        res = subprocess.run(
            [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
             "--kubelet-config", str(node.kubelet_config), "--state-dir", str(tmp_path / "state"),
             "--pod-source", "none", *args, *scope],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert res.returncode == 0, (unit, res.stderr)
        said = [ln for ln in res.stderr.splitlines() if "metrics file" in ln]
        assert said == [f"kubegc: cannot write metrics file {textfile}/kubegc.prom: "
                        "no such directory"], (unit, res.stderr)  # fmt: skip
    assert node.container_ids(namespace=ns) == {init1}  # the cleanup did its work
    assert init0 not in node.container_ids(namespace=ns)
    assert not textfile.exists()
