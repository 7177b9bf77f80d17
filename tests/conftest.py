"""Fixtures shared by the tests that talk to a real Kubernetes control plane
(``tests/controlplane.py``): ``tests/api`` and the node tests that also post to the API.

The control plane is started once per test session from the binaries
``scripts/build-control-plane`` built (``scripts/test`` builds them first) and stopped after the
last test. Without those binaries the tests using it are skipped with the reason, except under
CI (``CI=true``), where a missing binary is a broken build step and the tests fail instead.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegc_cli.core import stop
from tests.controlplane import BINARIES, ControlPlane

REPO = Path(__file__).parent.parent
DEPLOY = REPO / "deploy" / "kubernetes"


@pytest.fixture(autouse=True)
def _stop_state_restored() -> Iterator[None]:
    """Each test starts with no stop signal received and pytest's own SIGINT and SIGTERM
    handlers: a test that sends itself a stop signal (or runs a command that installs
    `core.stop.first_stop`) leaves neither behind for the next."""
    handlers = {sig: signal.getsignal(sig) for sig in stop.STOP_SIGNALS}
    stop.received = None
    yield
    stop.received = None
    for sig, handler in handlers.items():
        signal.signal(sig, handler)


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
    with tempfile.TemporaryDirectory(prefix="kubegc-controlplane-") as work:
        try:
            cp = ControlPlane.start(bin_dir, Path(work) / "1")
        except RuntimeError as exc:
            # once more: a component that dies while starting on a loaded machine (seen:
            # kube-controller-manager aborting in gRPC's epoll) is the machine's, not kubegc's
            print(f"control plane: {str(exc).splitlines()[0]}; starting it again", file=sys.stderr)
            cp = ControlPlane.start(bin_dir, Path(work) / "2")
        with cp:
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


def kustomization_docs(directory: Path = DEPLOY) -> list[dict[str, Any]]:
    """The objects of the files `directory/kustomization.yaml` lists, in its order (its
    `resources` that are files; a directory or a missing file fails the test, naming it)."""
    docs = []
    for name in yaml.safe_load((directory / "kustomization.yaml").read_text())["resources"]:
        path = directory / name
        if not path.is_file():
            pytest.fail(f"{path} is listed in {directory / 'kustomization.yaml'} but is no file")
        docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    return docs


@pytest.fixture(scope="session")
def deployed(admin: Any) -> list[str]:
    """Every object of deploy/kubernetes/kustomization.yaml created as the admin (once: the
    session's API server keeps them), the CRDs among them established; returns their kinds."""
    import time

    from kubernetes import client, utils
    from kubernetes.client.exceptions import ApiException

    kinds = []
    for doc in kustomization_docs():
        kinds.append(doc["kind"])
        try:
            utils.create_from_dict(admin, doc)
        except utils.FailToCreateError as exc:
            if not all(isinstance(e, ApiException) and e.status == 409
                       for e in exc.api_exceptions):  # fmt: skip
                raise
    crds = [d["metadata"]["name"] for d in kustomization_docs()
            if d["kind"] == "CustomResourceDefinition"]  # fmt: skip
    ext = client.ApiextensionsV1Api(admin)
    deadline = time.monotonic() + 30
    for name in crds:
        while True:
            conditions = ext.read_custom_resource_definition(name).status.conditions or []
            if any(c.type == "Established" and c.status == "True" for c in conditions):
                break
            assert time.monotonic() < deadline, f"CRD {name} not established in 30 s"
            time.sleep(0.2)
    return kinds
