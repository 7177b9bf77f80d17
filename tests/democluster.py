"""A Kubernetes control plane for the demo node (`scripts/demo cluster`), to try the fleet form
of kubegc on one machine: the test suite's etcd + kube-apiserver + kube-controller-manager
(`tests.controlplane`), `deploy/kubernetes` (and the apply mode's RBAC) applied to it, and a
Node named as the demo node.

    python -m tests.democluster serve DIR NODE

starts it in `DIR` (certificates, data, logs), writes `DIR/admin.kubeconfig` and
`DIR/kubegc-agent.kubeconfig` (the agent's ServiceAccount identity, with the manifests'
RBAC) and then `DIR/ready`, and keeps it running until SIGTERM or SIGINT, when it stops every
process it started. The binaries come from `KUBEGC_CONTROL_PLANE_BIN` (what
`scripts/build-control-plane` prints).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import yaml

from tests.controlplane import ControlPlane

REPO = Path(__file__).resolve().parent.parent
DEPLOY = REPO / "deploy/kubernetes"


def manifests() -> list[dict[str, Any]]:
    """The objects deploy/kubernetes/kustomization.yaml lists, in its order, then the apply
    mode's RBAC (deploy/kubernetes-apply-mode/rbac-breaker.yaml: the circuit breaker reads
    every report), so that both modes can be tried."""
    docs: list[dict[str, Any]] = []
    for name in yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())["resources"]:
        docs += [d for d in yaml.safe_load_all((DEPLOY / name).read_text()) if d]
    breaker = DEPLOY.parent / "kubernetes-apply-mode/rbac-breaker.yaml"
    return docs + [d for d in yaml.safe_load_all(breaker.read_text()) if d]


def deploy(admin: Any, node: str) -> None:
    """Create every manifest (an object that exists already is left) and the Node `node`,
    and wait until the CRDs are established."""
    import time

    from kubernetes import client, utils
    from kubernetes.client.exceptions import ApiException

    docs = manifests()
    for doc in docs:
        try:
            utils.create_from_dict(admin, doc)
        except utils.FailToCreateError as exc:
            if not all(getattr(e, "status", 0) == 409 for e in exc.api_exceptions):
                raise
    try:
        client.CoreV1Api(admin).create_node({"metadata": {"name": node}})
    except ApiException as exc:
        if exc.status != 409:
            raise
    ext = client.ApiextensionsV1Api(admin)
    deadline = time.monotonic() + 60
    for name in (d["metadata"]["name"] for d in docs if d["kind"] == "CustomResourceDefinition"):
        while not any(
            c.type == "Established" and c.status == "True"
            for c in ext.read_custom_resource_definition(name).status.conditions or []
        ):
            if time.monotonic() > deadline:
                raise RuntimeError(f"CRD {name} not established in 60 s")
            time.sleep(0.2)


def serve(work: Path, node: str) -> None:
    """Start, deploy, write the kubeconfigs and `ready`, and wait for a stop signal."""
    from kubernetes import config

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    work.mkdir(parents=True, exist_ok=True)
    (work / "ready").unlink(missing_ok=True)
    with ControlPlane.start(Path(os.environ["KUBEGC_CONTROL_PLANE_BIN"]), work) as cp:
        for identity in ("admin", "kubegc-agent"):
            cp.kubeconfig(identity, work / f"{identity}.kubeconfig")
        deploy(config.new_client_from_config(str(work / "admin.kubeconfig")), node)
        (work / "ready").write_text(cp.url + "\n")
        stop.wait()
    (work / "ready").unlink(missing_ok=True)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "serve":
        sys.exit("usage: python -m tests.democluster serve DIR NODE")
    serve(Path(sys.argv[2]), sys.argv[3])
