"""`evict prune` against a real kube-apiserver: pods made Evicted through the status
subresource, as the kubelet leaves them, and deleted by kubegc with uid and resourceVersion
preconditions; what is on the server afterwards is what the tests check. Faults the real server
will not produce on demand (a 500, an API that stops answering) stay on the stand-in in
tests/unit/test_evict_prune.py.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.commands.evict import prune_evicted
from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.core.plan import Result
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import rfc3339_to_ns
from kubegc_cli.node.pods.api import ApiUnavailable
from kubegc_cli.node.state import read_history
from kubegc_cli.policy.evicted import PruneOptions
from tests.controlplane import ControlPlane
from tests.unit.test_evict_prune import FakeUi

NOW = rfc3339_to_ns("2026-11-29T12:00:00Z")


@pytest.fixture(scope="module")
def core(admin: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(admin)


@pytest.fixture
def ns(core: Any) -> Callable[[str], str]:
    """Namespaces of the test's own: `ns("team-a")` creates (once) and names one."""
    made: dict[str, str] = {}
    suffix = uuid.uuid4().hex[:6]

    def name(base: str) -> str:
        if base not in made:
            made[base] = f"{base}-{suffix}"
            core.create_namespace({"metadata": {"name": made[base]}})
        return made[base]

    return name


def make_pod(
    core: Any, namespace: str, name: str, node: str, *, phase: str = "Failed",
    reason: str = "Evicted", evicted_at: str = "2026-11-29T08:48:00Z",
    labels: dict[str, str] | None = None,
) -> Any:  # fmt: skip
    """A pod bound to `node` whose status, written through the status subresource, is as the
    kubelet leaves it (default: Evicted, DisruptionTarget at `evicted_at`); the server's pod."""
    core.create_namespaced_pod(namespace, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
    })  # fmt: skip
    status: dict[str, Any] = {"phase": phase, "startTime": "2026-11-29T08:00:00Z"}
    if reason:
        status.update(reason=reason, message="The node was low on resource: memory.")
        status["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
             "lastTransitionTime": evicted_at},
            {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-29T11:59:00Z"},
        ]  # fmt: skip
    return core.patch_namespaced_pod_status(name, namespace, {"status": status})


def exists(core: Any, namespace: str, name: str) -> Any:
    """The pod as the server has it now, or None."""
    from kubernetes.client.exceptions import ApiException

    try:
        return core.read_namespaced_pod(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise


def settings(kubeconfig: Path, tmp_path: Path) -> Settings:
    return Settings(kubeconfig=str(kubeconfig), now=NOW, timeout=10,
                    state_dir=tmp_path / "state", env={})  # fmt: skip


def test_yes_deletes_exactly_the_evicted_pods_of_the_node(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    a, b = ns("team-a"), ns("team-b")
    make_pod(core, a, "web-1", node_name)
    make_pod(core, b, "web-2", node_name)
    make_pod(core, a, "crashed", node_name, reason="")  # Failed, not Evicted
    make_pod(core, a, "running", node_name, phase="Running", reason="")
    make_pod(core, b, "done", node_name, phase="Succeeded", reason="")
    make_pod(core, a, "elsewhere", f"{node_name}-other")  # another node's
    s = settings(control_plane.kubeconfig("admin"), tmp_path)

    dry = prune_evicted(s, PruneOptions(node=node_name), ActOptions(dry_run=True), FakeUi())
    assert [x.id for x in dry.actions] == [f"{a}/web-1", f"{b}/web-2"]
    assert exists(core, a, "web-1") and exists(core, b, "web-2")

    plan = prune_evicted(s, PruneOptions(node=node_name), ActOptions(yes=True), FakeUi())
    assert [(x.id, x.result, x.error) for x in plan.actions] == [
        (f"{a}/web-1", Result.REMOVED, ""),
        (f"{b}/web-2", Result.REMOVED, ""),
    ]
    assert exists(core, a, "web-1") is None and exists(core, b, "web-2") is None
    for namespace, name in ((a, "crashed"), (a, "running"), (b, "done"), (a, "elsewhere")):
        assert exists(core, namespace, name) is not None, name
    [run] = read_history(s.state_dir, 1)
    assert run["command"] == "evict prune" and run["by_result"] == {"removed": 2}


def test_changed_recreated_or_gone_between_plan_and_act_is_not_deleted(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """While the person is asked: one pod changes (a label: new resourceVersion), one is
    deleted and created again under its name (new uid), one is deleted by someone else. The
    API server's preconditions refuse the first two (409), the third is gone (404); only the
    untouched pod is deleted, and the pod re-created under the old name is still there."""
    from kubegc_cli.cli.common import finish

    x = ns("x")
    for name in ("changed", "gone", "ok", "recreated"):
        make_pod(core, x, name, node_name)
    new_uid: list[str] = []

    def meanwhile() -> bool:
        core.patch_namespaced_pod("changed", x, {"metadata": {"labels": {"touched": "yes"}}})
        core.delete_namespaced_pod("recreated", x)
        new_uid.append(str(make_pod(core, x, "recreated", node_name).metadata.uid))
        core.delete_namespaced_pod("gone", x)
        return True

    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    plan = prune_evicted(s, PruneOptions(node=node_name), ActOptions(), FakeUi(meanwhile))
    got = {p.name: (p.result, p.error) for p in plan.actions}
    assert got["ok"] == (Result.REMOVED, "")
    assert got["gone"] == (Result.SKIPPED, "gone before removal")
    assert got["changed"][0] is Result.SKIPPED
    assert got["changed"][1].startswith("changed since the plan, not deleted (409 Conflict")
    assert "the ResourceVersion in the precondition (" in got["changed"][1]
    assert got["recreated"][0] is Result.SKIPPED
    assert "the UID in the precondition (" in got["recreated"][1]
    assert exists(core, x, "ok") is None
    assert exists(core, x, "changed") is not None
    assert exists(core, x, "recreated").metadata.uid == new_uid[0]
    assert plan.counts() == {
        "planned": 0, "removed": 1, "skipped": 3, "failed": 0, "held-back": 0,
    }  # fmt: skip
    finish(plan, s)  # skipped, nothing failed: no PartialFailure


def test_finalizers_hold_a_deleted_pod(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    x = ns("x")
    core.create_namespaced_pod(x, {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "held", "namespace": x, "finalizers": ["example.com/keep"]},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "busybox"}]},
    })  # fmt: skip
    core.patch_namespaced_pod_status("held", x, {"status": {
        "phase": "Failed", "reason": "Evicted", "message": "low on memory"}})  # fmt: skip
    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    [a] = prune_evicted(s, PruneOptions(node=node_name), ActOptions(yes=True), FakeUi()).actions
    assert a.result is Result.REMOVED
    assert a.log_note == "deletion waits for finalizers: example.com/keep"
    assert exists(core, x, "held").metadata.deletion_timestamp is not None
    again = prune_evicted(s, PruneOptions(node=node_name), ActOptions(yes=True), FakeUi())
    assert again.actions == [] and [k.rule for k in again.kept] == ["being-deleted"]
    core.patch_namespaced_pod("held", x, {"metadata": {"finalizers": None}})


def test_an_identity_that_may_not_list_pods_deletes_nothing(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    x = ns("x")
    make_pod(core, x, "web-1", node_name)
    s = settings(control_plane.kubeconfig("nobody"), tmp_path)
    with pytest.raises(ApiUnavailable, match="403 Forbidden: kubegc needs permission to list"):
        prune_evicted(s, PruneOptions(node=node_name), ActOptions(yes=True), FakeUi())
    assert exists(core, x, "web-1") is not None


def test_namespace_all_nodes_and_selector_are_what_the_server_selects(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """`--namespace` lists in that namespace only, `--all-nodes` takes every node's Evicted
    pods, `-l` goes to the server as a labelSelector (set-based terms included) and the
    server's answer is what is deleted; `--older-than` counts from the DisruptionTarget time."""
    from kubegc_cli.core.selector import parse

    a, b = ns("team-a"), ns("team-b")
    make_pod(core, a, "front", node_name, labels={"app": "web", "tier": "front"})
    make_pod(core, a, "back", node_name, labels={"app": "web", "tier": "back"})
    make_pod(core, a, "recent", node_name, evicted_at="2026-11-29T11:50:00Z",
             labels={"app": "web", "tier": "front"})  # fmt: skip
    make_pod(core, a, "other-node", f"{node_name}-b", labels={"app": "web", "tier": "front"})
    make_pod(core, b, "front", node_name, labels={"app": "web", "tier": "front"})
    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    opts = PruneOptions(all_nodes=True, namespace=a, older_than=3600,
                        selector=parse("tier notin (back), app==web"))  # fmt: skip
    plan = prune_evicted(s, opts, ActOptions(yes=True), FakeUi())
    assert sorted((x.id, x.result) for x in plan.actions) == [
        (f"{a}/front", Result.REMOVED), (f"{a}/other-node", Result.REMOVED)]  # fmt: skip
    assert [k.name for k in plan.kept] == ["recent"]
    assert exists(core, a, "back") and exists(core, a, "recent") and exists(core, b, "front")
    assert exists(core, a, "front") is None and exists(core, a, "other-node") is None
