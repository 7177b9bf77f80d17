"""Fixtures for the tests that drive a real containerd through CRI (see ``localnode.py``).

Every test under ``tests/node`` gets the ``node`` marker. They are skipped, with the reason,
when this machine cannot run a private containerd (not root, or containerd, ctr, runc or the
runc shim missing), except under CI (``CI=true``), where a missing runtime is a broken install
step and the tests fail instead of passing silently.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import IDENTITIES, KUBELET_NODE
from tests.node.localkubelet import KUBELET, LocalKubelet
from tests.node.localnode import LocalNode, missing_requirements

NODE_TESTS = Path(__file__).parent


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``tests/node`` items ``node``; skip them when the machine cannot run containerd."""
    missing = missing_requirements()
    skip = None
    if missing and not _in_ci():
        skip = pytest.mark.skip(
            reason="tests/node start a private containerd and need root, containerd, ctr, runc "
            f"and containerd-shim-runc-v2; missing here: {', '.join(missing)}"
        )
    for item in items:
        if item.path.is_relative_to(NODE_TESTS):
            item.add_marker(pytest.mark.node)
            if skip is not None:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalNode]:
    """One private containerd for the whole test run, started once and torn down at the end."""
    missing = missing_requirements()
    if missing:
        pytest.fail(f"CI must install what tests/node need; missing: {', '.join(missing)}")
    local = LocalNode(tmp_path_factory.mktemp("localnode") / "node")
    local.start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def ns(node: LocalNode, request: pytest.FixtureRequest) -> Iterator[str]:
    """A Kubernetes namespace name unique to this test; its pods and logs go afterwards."""
    stem = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40].strip("-")
    namespace = f"{stem or 'test'}-{uuid.uuid4().hex[:6]}"
    yield namespace
    node.remove_namespace(namespace)


@pytest.fixture(scope="module")
def kubelet(
    tmp_path_factory: pytest.TempPathFactory, control_plane: Any, admin: Any
) -> Iterator[LocalKubelet]:
    """A real kubelet (``localkubelet.py``) registered with the test run's control plane as
    Node ``KUBELET_NODE``, over a containerd of its own (never the ``node`` fixture's: the
    kubelet removes what runs in its runtime without a pod); started for the module that uses
    it and stopped after it (kubegc finds a running kubelet through /proc: other tests must not
    see this one).
    Skipped with the reason when it is not built or cannot start here, except under CI."""
    from kubernetes import client

    bin_dir = control_plane.bin_dir
    if not (bin_dir / KUBELET).is_file():
        message = f"the kubelet is not built in {bin_dir}: run scripts/build-control-plane"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    # The kubelet's rights on the API; in a cluster the Node authorizer grants them.
    rbac = client.RbacAuthorizationV1Api(admin)
    binding = {
        "metadata": {"name": f"kubegc-test:{KUBELET_NODE}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": "system:node"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                      "name": IDENTITIES["kubelet"][0]}],
    }  # fmt: skip
    rbac.create_cluster_role_binding(binding)
    base = tmp_path_factory.mktemp("kubelet")
    local = LocalNode(base / "node")
    local.start()
    try:
        try:
            kl = LocalKubelet.start(control_plane.bin_dir, base / "kubelet", control_plane,
                                    local, KUBELET_NODE)  # fmt: skip
        except RuntimeError as exc:
            if _in_ci():
                raise
            pytest.skip(f"the kubelet does not start here: {str(exc)[:2000]}")
        try:
            yield kl
        finally:
            kl.stop()
    finally:
        local.stop()
        rbac.delete_cluster_role_binding(binding["metadata"]["name"])
