"""`--events` against a real kube-apiserver: the Event kubegc posts is accepted as the API
server validates it and is found on the Node it names; the rate limit holds; an identity RBAC
does not let create events gets one warning. An API that stops answering stays on the
stand-in in tests/unit/test_events.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.plan import Result
from kubegc_cli.core.settings import Settings
from kubegc_cli.report.events import INTERVAL_SECONDS, STATE_FILE, record_events
from tests.controlplane import ControlPlane
from tests.unit.test_events import T, container, plan_of

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
