"""Fixtures shared by the tests that talk to a real Kubernetes control plane
(``tests/controlplane.py``): ``tests/api`` and the node tests that also post to the API.

The control plane is started once per test session from the binaries
``scripts/build-control-plane`` built (``scripts/test`` builds them first) and stopped after the
last test. Without those binaries the tests using it are skipped with the reason, except under
CI (``CI=true``), where a missing binary is a broken build step and the tests fail instead.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.controlplane import BINARIES, ControlPlane

REPO = Path(__file__).parent.parent
DEPLOY = REPO / "deploy" / "kubernetes"


def _in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def control_plane_binaries() -> Path | None:
    """The directory holding the pinned etcd, kube-apiserver and kube-controller-manager, or
    None when they are not built (``KUBEGC_CONTROL_PLANE_BIN`` names one explicitly)."""
    explicit = os.environ.get("KUBEGC_CONTROL_PLANE_BIN")
    if explicit:
        found = Path(explicit)
        return found if all((found / b).is_file() for b in BINARIES) else None
    found = subprocess.run(
        [str(REPO / "scripts/build-control-plane"), "--check"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    return Path(found.stdout.strip()) if found.returncode == 0 else None


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    """etcd + kube-apiserver (+ kube-controller-manager with the garbage collector) for the
    whole session; stopped after the last test."""
    bin_dir = control_plane_binaries()
    if bin_dir is None:
        message = "the control plane is not built: run scripts/build-control-plane"
        if _in_ci():
            pytest.fail(message)
        pytest.skip(message)
    with (
        tempfile.TemporaryDirectory(prefix="kubegc-controlplane-") as work,
        ControlPlane.start(bin_dir, Path(work)) as cp,
    ):
        yield cp


@pytest.fixture(scope="session")
def admin(control_plane: ControlPlane) -> Any:
    """A `kubernetes.client.ApiClient` acting as the cluster admin (system:masters)."""
    from kubernetes import client, config

    api = config.new_client_from_config(str(control_plane.kubeconfig("admin")))
    assert isinstance(api, client.ApiClient)
    return api


@pytest.fixture
def node_name() -> str:
    """A node name no other test uses: tests share one API server and see each other's pods
    only when they share a node."""
    return f"node-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def deployed(admin: Any) -> list[str]:
    """Every object of deploy/kubernetes/kustomization.yaml created as the admin (once: the
    session's API server keeps them); returns their kinds."""
    from kubernetes import utils
    from kubernetes.client.exceptions import ApiException

    kinds = []
    for name in yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]:
        for doc in yaml.safe_load_all((DEPLOY / name).read_text()):
            if not doc:
                continue
            kinds.append(doc["kind"])
            try:
                utils.create_from_dict(admin, doc)
            except utils.FailToCreateError as exc:
                if not all(isinstance(e, ApiException) and e.status == 409
                           for e in exc.api_exceptions):  # fmt: skip
                    raise
    return kinds
