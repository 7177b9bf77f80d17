"""The sizes docs/FLEET.md's API arithmetic rests on, measured on a real kube-apiserver: the
largest NodeGCReport a node can write (every list at its bound, `core.fleet.TOP`), as the
API server stores and serves it (metadata and managedFields included), written with the node
agent's identity; and a Lease as the apply slots hold them."""

from __future__ import annotations

import contextlib
import json
import re
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.fleet import (
    GROUP,
    MAX_SOURCE,
    NAME_MAX,
    PLURAL,
    POD_NAME_MAX,
    TEXT_MAX,
    TOP,
    VERSION,
    Category,
    EvictCandidate,
    LastApply,
    NodeReport,
    SignalMargin,
    lease_name,
)
from kubegc_cli.node.fleet.reports import write_report
from kubegc_cli.policy.eviction.thresholds import SIGNALS
from tests.controlplane import ControlPlane

FLEET_DOC = Path(__file__).resolve().parents[2] / "docs" / "FLEET.md"
CATEGORIES = ("images", "writable-layers", "logs", "logs.dead-containers", "empty-dir",
              "pod-dirs", "residue", "other")  # fmt: skip
RESIDUE = ("pod-dir", "pod-log-dir", "container-log-link", "netns", "cni-ip", "cgroup",
           "volume-mount", "sandbox-dir")  # fmt: skip


def documented(name: str) -> int:
    """A number docs/FLEET.md states as `name = <n> bytes` (the doc and the test agree)."""
    m = re.search(rf"`{name} = ([\d,]+) bytes`", FLEET_DOC.read_text())
    assert m, f"docs/FLEET.md states no `{name} = ... bytes`"
    return int(m.group(1).replace(",", ""))


def largest_report(node: str) -> NodeReport:
    """A report with every list full and every free-text string and name at its bound: what
    an honest node writes at most."""
    big = 987_654_321_098
    return NodeReport(
        node=node,
        observed_at="2026-11-29T12:00:00.123456Z",
        mode="apply",
        version="0.1.0",
        categories=tuple(Category(c, big, big) for c in CATEGORIES),
        reclaimable=big * len(CATEGORIES),
        signals=tuple(
            SignalMargin(s, "15%", big, -big, True, hard) for s in SIGNALS for hard in (True, False)
        ),
        conditions=("MemoryPressure", "DiskPressure", "PIDPressure"),
        evict_first=tuple(
            EvictCandidate("n" * NAME_MAX, "p" * POD_NAME_MAX, "nodefs.available")
            for _ in range(TOP)
        ),
        residue={r: 12345 for r in RESIDUE},
        last_apply=LastApply(
            "2026-11-29T11:55:00Z",
            ("gc containers", "gc sandboxes", "gc logs", "gc images"),
            1234,
            big,
            12,
            "e" * TEXT_MAX,
        ),
        error="x" * TEXT_MAX,
        paused="y" * TEXT_MAX,
        pod_source="kubelet",
        kubelet_config="k" * MAX_SOURCE,
    )


def served_bytes(api: Any, path: str) -> int:
    """The size of the JSON body the API server sends for GET `path`."""
    method, url, headers, _, _ = api.param_serialize(
        "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
    )
    resp = api.call_api(method, url, header_params=headers)
    assert resp.status == 200, resp.status
    return len(resp.read())


def typical_report(node: str) -> NodeReport:
    """A node's everyday report: the kubelet's default hard thresholds, nothing met, no
    apply yet, a little residue."""
    gib = 1 << 30
    defaults = (("memory.available", "100Mi"), ("nodefs.available", "10%"),
                ("nodefs.inodesFree", "5%"), ("imagefs.available", "15%"),
                ("imagefs.inodesFree", "5%"))  # fmt: skip
    return NodeReport(
        node=node,
        observed_at="2026-11-29T12:00:00.123456Z",
        version="0.1.0",
        categories=tuple(Category(c, 40 * gib, 3 * gib) for c in CATEGORIES[:6]),
        reclaimable=18 * gib,
        signals=tuple(SignalMargin(s, t, 50 * gib, 40 * gib, False) for s, t in defaults),
        residue={"pod-dir": 2, "netns": 1},
    )


@pytest.fixture
def agent(control_plane: ControlPlane, deployed: list[str], tmp_path: Path) -> Any:
    from kubernetes import config

    kubeconfig = control_plane.kubeconfig("kubegc-agent", tmp_path / "agent.kubeconfig")
    return config.new_client_from_config(str(kubeconfig))


def test_the_largest_report_is_as_small_as_the_arithmetic_assumes(
    agent: Any, core_node: Any
) -> None:
    from kubernetes import client

    name = core_node.metadata.name
    largest = largest_report(name)
    assert len(largest.to_status()["evictFirst"]) == TOP
    reports = client.CustomObjectsApi(agent)
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": core_node.metadata.uid}
    reports.create_cluster_custom_object(GROUP, VERSION, PLURAL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeGCReport",
        "metadata": {"name": name, "ownerReferences": [owner]}})  # fmt: skip
    path = f"/apis/{GROUP}/{VERSION}/{PLURAL}/{name}"
    for report, bound in ((typical_report(name), "REPORT_TYPICAL"), (largest, "REPORT_MAX")):
        made = reports.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
        made["status"] = report.to_status()
        reports.replace_cluster_custom_object_status(GROUP, VERSION, PLURAL, name, made)
        size = served_bytes(agent, path)
        status_only = len(json.dumps(report.to_status(), separators=(",", ":")))
        print(f"{bound}: status {status_only} bytes, served {size} bytes")
        assert status_only < size <= documented(bound), (bound, status_only, size)


def test_a_lease_is_as_small_as_the_arithmetic_assumes(agent: Any, admin: Any) -> None:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    slot = lease_name(8)
    with contextlib.suppress(ApiException):
        client.CoordinationV1Api(admin).delete_namespaced_lease(slot, "kubegc")
    path = "/apis/coordination.k8s.io/v1/namespaces/kubegc/leases"
    at = "2026-11-29T12:00:00.000000Z"
    spec = {"holderIdentity": "n" * 63, "leaseDurationSeconds": 60, "acquireTime": at,
            "renewTime": at, "leaseTransitions": 3}  # fmt: skip
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": slot},
             "spec": spec}  # fmt: skip
    # sent as JSON as it is: the client's models would re-write the MicroTime values
    method, url, headers, body, _ = agent.param_serialize(
        "POST",
        path,
        body=lease,
        auth_settings=["BearerToken"],
        header_params={"Content-Type": "application/json", "Accept": "application/json"},
    )
    assert agent.call_api(method, url, header_params=headers, body=body).status == 201
    size = served_bytes(agent, f"/apis/coordination.k8s.io/v1/namespaces/kubegc/leases/{slot}")
    print(f"lease: served {size} bytes")
    assert size <= documented("LEASE_MAX"), size


@pytest.fixture
def core_node(admin: Any) -> Any:
    from kubernetes import client

    core = client.CoreV1Api(admin)
    name = "n" * 50 + "-" + uuid.uuid4().hex[:12]
    made = core.create_node({"metadata": {"name": name}})
    yield made
    core.delete_node(name)


def test_a_report_write_makes_the_requests_the_arithmetic_counts(
    control_plane: ControlPlane, agent: Any, core_node: Any
) -> None:
    """node.fleet.reports.write_report with the agent's identity, counted in the API server's
    audit log: the first write reads the Node and the report and writes twice (create, then
    the status); every later one reads both and writes once (the status)."""
    name = core_node.metadata.name
    report = typical_report(name)
    mark = len(control_plane.requests("kubegc-agent"))
    write_report(agent, report)
    first = control_plane.requests("kubegc-agent")[mark:]
    write_report(agent, replace(report, reclaimable=report.reclaimable + 1))
    later = control_plane.requests("kubegc-agent")[mark + len(first) :]

    def seen(events: list[dict[str, Any]]) -> list[tuple[str, str, str, int]]:
        return [(e["verb"], e["objectRef"]["resource"], e["objectRef"].get("subresource", ""),
                 e["responseStatus"]["code"]) for e in events]  # fmt: skip

    reads = [("get", "nodes", "", 200), ("get", PLURAL, "", 200)]
    status = ("update", PLURAL, "status", 200)
    assert seen(first) == [reads[0], ("get", PLURAL, "", 404), ("create", PLURAL, "", 201), status]
    assert seen(later) == [*reads, status]
