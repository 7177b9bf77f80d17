"""The control plane the API tests run against is the real one: RBAC decides, the garbage
collector of kube-controller-manager follows ownerReferences, and stopping it ends every
process it started."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import ControlPlane


def test_rbac_refuses_an_identity_it_grants_nothing(control_plane: ControlPlane) -> None:
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    api = config.new_client_from_config(str(control_plane.kubeconfig("nobody")))
    with pytest.raises(ApiException) as err:
        client.CoreV1Api(api).list_namespace()
    assert err.value.status == 403 and "kubegc-test-nobody" in str(err.value.body)


def test_the_garbage_collector_deletes_a_dependent_whose_owner_is_gone(admin: Any) -> None:
    """A ConfigMap owned by another ConfigMap goes when its owner is deleted (background
    propagation: the garbage collector, not the API server, deletes it)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    core: Any = client.CoreV1Api(admin)
    ns = "default"
    owner_name, dependent_name = f"owner-{uuid.uuid4().hex[:6]}", f"dep-{uuid.uuid4().hex[:6]}"
    owner: Any = core.create_namespaced_config_map(ns, {"metadata": {"name": owner_name}})
    core.create_namespaced_config_map(ns, {"metadata": {
        "name": dependent_name,
        "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": owner_name,
                             "uid": owner.metadata.uid}],
    }})  # fmt: skip
    core.delete_namespaced_config_map(owner_name, ns, propagation_policy="Background")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_config_map(dependent_name, ns)
        except ApiException as exc:
            assert exc.status == 404
            return
        time.sleep(0.5)
    pytest.fail("the dependent ConfigMap outlived its owner by 60 s")


def test_stop_ends_every_process(control_plane: ControlPlane, tmp_path: Path) -> None:
    """A second control plane (no controller manager) started and stopped: none of its
    processes is left, not even as a zombie."""
    cp = ControlPlane.start(control_plane.bin_dir, tmp_path / "cp", controller_manager=False)
    pids = [p.pid for p in cp.procs.values()]
    assert len(pids) == 2
    cp.stop()
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), pid


def test_the_audit_log_counts_an_identitys_requests(control_plane: ControlPlane) -> None:
    """`requests(identity)` is what the API server recorded: a refused list by `nobody` is
    there with its verb, resource and 403, and nobody else's requests are."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    before = len(control_plane.requests("nobody"))
    api = client.CoreV1Api(config.new_client_from_config(str(control_plane.kubeconfig("nobody"))))
    with pytest.raises(ApiException):
        api.list_namespaced_config_map("kube-system", limit=1)
    seen = control_plane.requests("nobody")[before:]
    assert [(e["verb"], e["objectRef"]["resource"], e["responseStatus"]["code"]) for e in seen] == [
        ("list", "configmaps", 403)
    ]
    assert all(e["user"]["username"] == "kubegc-test-nobody" for e in seen)
