"""`evict prune` against a real kube-apiserver: pods made Evicted through the status
subresource, as the kubelet leaves them, and deleted by kubegc with uid and resourceVersion
preconditions; what is on the server afterwards is what the tests check. Faults the real server
will not produce on demand (a 500, an API that stops answering) stay on the stand-in in
tests/unit/test_evict_prune.py.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.commands.evict import list_evicted, prune_evicted
from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.core.plan import Result
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import rfc3339_to_ns
from kubegc_cli.node.pods.api import ApiSource, ApiUnavailable
from kubegc_cli.node.state import read_history
from kubegc_cli.policy.evicted import PruneOptions
from kubegc_cli.render.plan import render_plan
from tests.controlplane import ControlPlane
from tests.unit.test_evict_prune import FakeUi, cli

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


_DEFAULT: Any = object()


def make_pod(
    core: Any, namespace: str, name: str, node: str, *, phase: str = "Failed",
    reason: str = "Evicted", evicted_at: str = "2026-11-29T08:48:00Z",
    labels: dict[str, str] | None = None,
    message: str = "The node was low on resource: memory.",
    conditions: Any = _DEFAULT, start_time: str | None = "2026-11-29T08:00:00Z",
    owner: dict[str, Any] | None = None,
) -> Any:  # fmt: skip
    """A pod bound to `node` whose status, written through the status subresource, is as the
    kubelet leaves it (default: Evicted, DisruptionTarget at `evicted_at`, Ready false later;
    `conditions` replaces those); `owner` an ownerReference; the server's pod."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        meta["ownerReferences"] = [owner]
    core.create_namespaced_pod(namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
    })  # fmt: skip
    status: dict[str, Any] = {"phase": phase}
    if start_time:
        status["startTime"] = start_time
    if reason:
        status.update(reason=reason, message=message)
        status["conditions"] = [
            {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
             "lastTransitionTime": evicted_at},
            {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-29T11:59:00Z"},
        ]  # fmt: skip
    if conditions is not _DEFAULT:
        status["conditions"] = conditions
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


def _change_three(core: Any, x: str, node_name: str, new_uid: list[str]) -> None:
    """One pod changes (a label: new resourceVersion), one is deleted and created again under
    its name (new uid), one is deleted by someone else."""
    core.patch_namespaced_pod("changed", x, {"metadata": {"labels": {"touched": "yes"}}})
    core.delete_namespaced_pod("recreated", x)
    new_uid.append(str(make_pod(core, x, "recreated", node_name).metadata.uid))
    core.delete_namespaced_pod("gone", x)


def test_changed_recreated_or_gone_while_asked_is_not_deleted(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """While the person is asked, three pods change (`_change_three`): the answer's yes lists
    the pods again and says what changed; only the untouched pod is deleted, and the pod
    re-created under the old name is still there."""
    from kubegc_cli.cli.common import finish

    x = ns("x")
    for name in ("changed", "gone", "ok", "recreated"):
        make_pod(core, x, name, node_name)
    new_uid: list[str] = []

    def meanwhile() -> bool:
        _change_three(core, x, node_name, new_uid)
        return True

    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    ui = FakeUi(meanwhile)
    plan = prune_evicted(s, PruneOptions(node=node_name), ActOptions(), ui)
    got = {p.name: (p.result, p.error) for p in plan.actions}
    assert got["ok"] == (Result.REMOVED, "")
    assert got["gone"] == (Result.SKIPPED, "gone since the question")
    changed = (Result.SKIPPED, "no longer selected since the question: changed since the "
               "question (another uid or resourceVersion)")  # fmt: skip
    assert got["changed"] == got["recreated"] == changed
    assert "the API changed while the question waited:" in ui.warnings
    assert f"pod {x}/gone: gone since the question; not removed" in "\n".join(ui.warnings)
    assert exists(core, x, "ok") is None
    assert exists(core, x, "changed") is not None
    assert exists(core, x, "recreated").metadata.uid == new_uid[0]
    assert plan.counts() == {
        "planned": 0, "removed": 1, "skipped": 3, "failed": 0, "held-back": 0,
    }  # fmt: skip
    finish(plan, s)  # skipped, nothing failed: no PartialFailure


def test_changed_recreated_or_gone_between_list_and_delete_is_refused_by_the_server(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """With --yes the pods change right after they are listed (`_change_three`, run once the
    list returns: a race the server does not make on demand). The API server's
    preconditions refuse the first two (409), the third is gone (404); only the untouched
    pod is deleted."""
    from kubegc_cli.commands import evict

    x = ns("x")
    for name in ("changed", "gone", "ok", "recreated"):
        make_pod(core, x, name, node_name)
    new_uid: list[str] = []
    listed = evict._list_failed

    def list_then_change(*args: Any) -> Any:
        items = listed(*args)
        _change_three(core, x, node_name, new_uid)
        return items

    monkeypatch.setattr(evict, "_list_failed", list_then_change)
    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    plan = prune_evicted(s, PruneOptions(node=node_name), ActOptions(yes=True), FakeUi())
    got = {p.name: (p.result, p.error) for p in plan.actions}
    assert got["ok"] == (Result.REMOVED, "")
    assert got["gone"] == (Result.SKIPPED, "gone before removal")
    assert got["changed"][0] is Result.SKIPPED
    assert got["changed"][1].startswith("changed since the plan, not deleted (409 Conflict")
    assert "the ResourceVersion in the precondition (" in got["changed"][1]
    assert got["recreated"][0] is Result.SKIPPED
    assert "the UID in the precondition (" in got["recreated"][1]
    assert exists(core, x, "changed") is not None
    assert exists(core, x, "recreated").metadata.uid == new_uid[0]


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


# --- listing, selection and output, against what the server answers ------------------------

LONG_MESSAGE = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. "
    "Container web was using 1Gi, request is 0, has larger consumption of memory."
)


def replica_set(admin: Any, namespace: str, name: str) -> dict[str, Any]:
    """A ReplicaSet (no controller runs it here) and an ownerReference to it."""
    from kubernetes import client

    labels = {"rs": name}
    made = client.AppsV1Api(admin).create_namespaced_replica_set(namespace, {
        "metadata": {"name": name},
        "spec": {"replicas": 0, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})  # fmt: skip
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name,
            "uid": made.metadata.uid, "controller": True}  # fmt: skip


@pytest.fixture
def node_pods(admin: Any, core: Any, ns: Callable[[str], str], node_name: str) -> dict[str, str]:
    """A node's worth of pods in two namespaces: two Evicted (web-1 owned by a ReplicaSet,
    with a long message), one Failed only, one Running, one Succeeded; and one Evicted pod
    of another node. Returns the namespaces by their base name."""
    a, b = ns("team-a"), ns("team-b")
    owner = replica_set(admin, a, "web-7d4b9")
    make_pod(core, a, "web-1", node_name, message=LONG_MESSAGE, owner=owner)
    make_pod(core, a, "crashed", node_name, reason="")
    make_pod(core, a, "running", node_name, phase="Running", reason="")
    make_pod(core, b, "web-2", node_name)
    make_pod(core, a, "elsewhere", f"{node_name}-b")
    make_pod(core, b, "done", node_name, phase="Succeeded", reason="")
    return {"team-a": a, "team-b": b}


@pytest.mark.parametrize("act", [ActOptions(dry_run=True), ActOptions()], ids=["dry-run", "no-tty"])
def test_dry_run_lists_and_deletes_nothing(
    control_plane: ControlPlane, core: Any, node_pods: dict[str, str], node_name: str,
    tmp_path: Path, act: ActOptions,
) -> None:  # fmt: skip
    a, b = node_pods["team-a"], node_pods["team-b"]
    ui = FakeUi()
    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    plan = prune_evicted(s, PruneOptions(node=node_name), act, ui)
    assert plan.kind == "EvictedPodPlan" and plan.dry_run
    assert [x.id for x in plan.actions] == [f"{a}/web-1", f"{b}/web-2"]
    assert all(x.result is Result.PLANNED for x in plan.actions)
    assert plan.policy == {"all_nodes": False, "node": node_name, "namespace": None,
                           "older_than": "0s", "selector": None}  # fmt: skip
    assert any("1 Failed pod(s) not evicted" in n for n in plan.notes)
    assert plan.source.startswith("api:https://127.0.0.1:") and f"node {node_name}" in plan.source
    assert not (tmp_path / "state").exists()  # no lock taken, no audit written
    assert exists(core, a, "web-1") and exists(core, b, "web-2")
    if not act.dry_run:
        assert any("dry run only" in w for w in ui.warnings)


def test_declined_confirmation_deletes_nothing(
    control_plane: ControlPlane, core: Any, node_pods: dict[str, str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    plan = prune_evicted(s, PruneOptions(node=node_name), ActOptions(), FakeUi(lambda: False))
    assert plan.declined and plan.dry_run
    assert all(x.result is Result.PLANNED for x in plan.actions)
    assert exists(core, node_pods["team-a"], "web-1") and exists(core, node_pods["team-b"], "web-2")


def test_namespace_deletes_only_there(
    control_plane: ControlPlane, core: Any, node_pods: dict[str, str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    a, b = node_pods["team-a"], node_pods["team-b"]
    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    opts = PruneOptions(node=node_name, namespace=a)
    plan = prune_evicted(s, opts, ActOptions(yes=True), FakeUi())
    assert [(x.id, x.result) for x in plan.actions] == [(f"{a}/web-1", Result.REMOVED)]
    assert plan.policy["namespace"] == a and f"namespace {a}" in plan.source
    assert exists(core, a, "web-1") is None and exists(core, b, "web-2") is not None


def test_older_than_measures_from_the_eviction_time(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """Eviction time: DisruptionTarget, else Ready, else startTime; unknown is kept."""
    x = ns("x")
    ready_since = {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-29T10:00:00Z"}
    make_pod(core, x, "old", node_name, evicted_at="2026-11-29T08:48:00Z")  # 3h12m ago
    make_pod(core, x, "recent", node_name, evicted_at="2026-11-29T11:50:00Z")  # 10m ago
    make_pod(core, x, "ready-only", node_name, conditions=[ready_since])
    make_pod(core, x, "start-only", node_name, conditions=[], start_time="2026-11-29T07:00:00Z")
    make_pod(core, x, "unknown", node_name, conditions=[], start_time=None)
    opts = PruneOptions(node=node_name, older_than=3600)
    src = ApiSource(str(control_plane.kubeconfig("admin")), None, node_name)
    planned, kept = list_evicted(src, opts, 10, now=NOW)
    assert [(p.name, p.evicted_at) for p in planned] == [
        ("old", rfc3339_to_ns("2026-11-29T08:48:00Z")),
        ("ready-only", rfc3339_to_ns("2026-11-29T10:00:00Z")),
        ("start-only", rfc3339_to_ns("2026-11-29T07:00:00Z")),
    ]
    assert [(k.name, k.rule, k.reason, k.result) for k in kept] == [
        ("recent", "too-recent", "evicted 10m ago, less than --older-than 1h0m0s", Result.KEPT),
        ("unknown", "eviction-time-unknown", "eviction time unknown; --older-than 1h0m0s",
         Result.KEPT),
    ]  # fmt: skip
    assert planned[0].reason == "Evicted 3h12m ago"

    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    plan = prune_evicted(s, opts, ActOptions(yes=True), FakeUi())
    assert [p.name for p in plan.actions if p.result is Result.REMOVED] == [
        "old", "ready-only", "start-only"]  # fmt: skip
    assert [k.name for k in plan.kept] == ["recent", "unknown"]
    assert plan.policy["older_than"] == "1h0m0s"
    # without an age limit every evicted pod goes, a time or not
    planned, kept = list_evicted(src, PruneOptions(node=node_name), 10, now=NOW)
    assert [p.name for p in planned] == ["recent", "unknown"] and kept == []


def test_json_shape_of_an_action(
    control_plane: ControlPlane, core: Any, node_pods: dict[str, str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    a = node_pods["team-a"]
    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    plan = prune_evicted(s, PruneOptions(node=node_name), ActOptions(dry_run=True), FakeUi())
    doc = json.loads(json.dumps(plan.to_dict()))
    assert doc["kind"] == "EvictedPodPlan" and doc["now"] == "2026-11-29T12:00:00Z"
    assert doc["summary"]["total"] == 2 and doc["summary"]["bytes_planned"] == 0
    pod = exists(core, a, "web-1")
    assert doc["actions"][0] == {
        "kind": "pod",
        "id": f"{a}/web-1",
        "namespace": a,
        "name": "web-1",
        "uid": pod.metadata.uid,
        "resource_version": pod.metadata.resource_version,
        "node": node_name,
        "owner_kind": "ReplicaSet",
        "owner_name": "web-7d4b9",
        "evicted_at": "2026-11-29T08:48:00Z",
        "message": LONG_MESSAGE,
        "expected_bytes": 0,  # an API object holds no node bytes
        "rule": "evicted",
        "reason": "Evicted 3h12m ago",
        "result": "planned",
        "error": "",
        "log_note": "",
    }


def test_table_shows_owner_age_and_the_whole_message(
    control_plane: ControlPlane, core: Any, node_pods: dict[str, str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    make_pod(core, node_pods["team-a"], "young", node_name, evicted_at="2026-11-29T11:50:00Z")
    s = settings(control_plane.kubeconfig("admin"), tmp_path)
    opts = PruneOptions(node=node_name, older_than=3600)
    plan = prune_evicted(s, opts, ActOptions(dry_run=True), FakeUi())
    out = io.StringIO()
    render_plan(plan, verbose=1, out=out)
    text = out.getvalue()
    assert "Evicted pods (dry run)" in text
    assert "NAMESPACE" in text and "OWNER" in text and "EVICTED" in text and "MESSAGE" in text
    row = next(line for line in text.splitlines() if "web-1" in line)
    assert "ReplicaSet/web-7d4b9" in row and "3h12m" in row and "planned" in row
    assert LONG_MESSAGE in row and "…" not in row  # into a file: never cut
    young = next(line for line in text.splitlines() if "young" in line)
    assert " - " in young and "kept: evicted 10m ago, less than --older-than 1h0m0s" in young
    assert "2 evicted pod(s) to remove; 1 kept." in text


def test_command_line_prune_from_dry_run_to_yes(
    control_plane: ControlPlane, core: Any, node_pods: dict[str, str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """The dry run lists, `--older-than` keeps what is too recent, `--yes` deletes exactly
    the evicted pods of the node; bad input is one line, exit 2, and deletes nothing."""
    a, b = node_pods["team-a"], node_pods["team-b"]
    kubeconfig = control_plane.kubeconfig("admin")
    dry = cli(kubeconfig, tmp_path, "--node-name", node_name, "--dry-run", "-o", "json")
    assert dry.returncode == 0, dry.stderr
    doc = json.loads(dry.stdout)
    assert doc["kind"] == "EvictedPodPlan" and doc["dry_run"] is True
    assert [(x["kind"], x["namespace"], x["name"]) for x in doc["actions"]] == [
        ("pod", a, "web-1"), ("pod", b, "web-2")]  # fmt: skip
    old = cli(kubeconfig, tmp_path, "--node-name", node_name, "--older-than", "4h", "--dry-run",
              "-o", "json")  # fmt: skip
    assert json.loads(old.stdout)["actions"] == []  # evicted 3h12m ago: too recent
    bad = cli(kubeconfig, tmp_path, "--node-name", node_name, "--older-than", "soon", "--yes")
    assert bad.returncode == 2 and "'soon'" in bad.stderr and bad.stderr.count("\n") == 1
    both = cli(kubeconfig, tmp_path, "--node-name", node_name, "--dry-run", "--yes")
    assert both.returncode == 2
    assert exists(core, a, "web-1") and exists(core, b, "web-2")
    go = cli(kubeconfig, tmp_path, "--node-name", node_name, "-n", a, "--yes")
    assert go.returncode == 0, go.stderr
    assert "web-1" in go.stdout
    assert exists(core, a, "web-1") is None and exists(core, b, "web-2") is not None


def test_command_line_selector_goes_to_the_server(
    control_plane: ControlPlane, core: Any, ns: Callable[[str], str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    x = ns("x")
    make_pod(core, x, "labelled", node_name, labels={"app": "web"})
    make_pod(core, x, "bare", node_name)
    kubeconfig = control_plane.kubeconfig("admin")
    good = cli(kubeconfig, tmp_path, "--node-name", node_name, "-l", "!app", "--dry-run",
               "-o", "json")  # fmt: skip
    assert good.returncode == 0, good.stderr
    doc = json.loads(good.stdout)
    assert doc["policy"]["selector"] == "!app"
    assert [a["name"] for a in doc["actions"]] == ["bare"]


def test_prune_needs_no_node_lock_and_no_writable_run(
    control_plane: ControlPlane, core: Any, node_pods: dict[str, str], node_name: str,
    tmp_path: Path,
) -> None:  # fmt: skip
    """`evict prune` changes the API, not a node: it acts while a run holds this node's lock
    (and in a pod whose /run is read-only), under its state dir's lock alone."""
    a = node_pods["team-a"]
    host = tmp_path / "host"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from kubegc_cli.node.state import node_lock\n"
         "with node_lock(Path(sys.argv[1]), host_root=sys.argv[2]):\n"
         " print('held', flush=True); time.sleep(60)", str(tmp_path / "other"), str(host)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        go = cli(control_plane.kubeconfig("admin"), tmp_path, "--host-root", str(host),
                 "--node-name", node_name, "-n", a, "--yes")  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert go.returncode == 0, go.stderr
    assert exists(core, a, "web-1") is None
