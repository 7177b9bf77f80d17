"""The node's own kubelet's `/pods` and `/configz` through its authorizer: a real kubelet
(``localkubelet.py``) registered with the real API server, which checks every caller's token
(TokenReview) and right (SubjectAccessReview) against the manifests' RBAC. The agent's
identity (kube-system/kubegc-agent, granted `get nodes/pods, nodes/configz`) is let through;
kubegc-prune (allowed to list pods through the API, not granted the kubelet's subresources)
and an identity granted nothing are refused with 403."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.controlplane import KUBELET_NODE, ControlPlane
from tests.node.localkubelet import LocalKubelet


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
