"""deploy/kubernetes applied to a real kube-apiserver (the API server validates every object of
the kustomization), and kubegc run with the identity of each of its ServiceAccounts: every
call it makes is one the manifests grant (else these tests fail with the API's 403), and
nothing more is granted to the node agent than it needs."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.commands.evict import prune_evicted
from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.core.plan import Result
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.pods.api import ApiSource, load_api_inventory
from kubegc_cli.policy.evicted import PruneOptions
from kubegc_cli.report.events import record_events
from tests.api.test_evict_prune import NOW, exists, make_pod
from tests.controlplane import ControlPlane
from tests.unit.test_events import T, container, plan_of
from tests.unit.test_evict_prune import FakeUi


@pytest.fixture(scope="module")
def core(admin: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(admin)


def test_the_manifests_are_accepted(deployed: list[str]) -> None:
    assert {"Namespace", "ServiceAccount", "ClusterRole", "DaemonSet", "CronJob"} <= set(deployed)


def test_the_node_agent_reads_its_pods_and_posts_events_and_may_not_delete(
    control_plane: ControlPlane, deployed: list[str], core: Any, node_name: str, tmp_path: Path
) -> None:
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    ns = f"t-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    uid = str(make_pod(core, ns, "web-1", node_name).metadata.uid)
    kubeconfig = control_plane.kubeconfig("kubegc", tmp_path / "kubegc")
    inv = load_api_inventory(ApiSource(str(kubeconfig), None, node_name), timeout=10)
    assert set(inv.pods) == {uid}
    s = Settings(kubeconfig=str(kubeconfig), node_name=node_name,
                 state_dir=tmp_path / "state", timeout=10, env={})  # fmt: skip
    done = plan_of([container(0, Result.REMOVED, 10)])
    assert len(record_events(s, "gc all", done, 0, warn=pytest.fail, now=T)) == 1
    agent = client.CoreV1Api(config.new_client_from_config(str(kubeconfig)))
    with pytest.raises(ApiException) as err:
        agent.delete_namespaced_pod("web-1", ns)
    assert err.value.status == 403
    with pytest.raises(ApiException) as err:
        agent.create_namespaced_event(
            ns, {"metadata": {"name": "x"}, "involvedObject": {"kind": "Node", "name": "n"}}
        )
    assert err.value.status == 403  # events only in default, where the Node's live
    assert exists(core, ns, "web-1") is not None


def test_evict_prune_runs_with_its_own_service_account(
    control_plane: ControlPlane, deployed: list[str], core: Any, node_name: str, tmp_path: Path
) -> None:
    ns = f"t-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    make_pod(core, ns, "web-1", node_name)
    kubeconfig = control_plane.kubeconfig("kubegc-prune", tmp_path / "prune")
    s = Settings(kubeconfig=str(kubeconfig), now=NOW, timeout=10, state_dir=tmp_path / "state",
                 env={})  # fmt: skip
    plan = prune_evicted(s, PruneOptions(node=node_name), ActOptions(yes=True), FakeUi())
    assert [(a.id, a.result, a.error) for a in plan.actions] == [
        (f"{ns}/web-1", Result.REMOVED, "")]  # fmt: skip
    assert exists(core, ns, "web-1") is None
