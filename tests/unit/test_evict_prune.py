"""`evict prune`: Evicted pod shells listed and deleted with the official `kubernetes` client,
against a local server playing the Kubernetes API (`tests.unit.recorded_api`) that records
every request — so each test asserts exactly which DELETEs were made, and with what body.
Faults the real API server will not produce on demand are `test_fault_*`; deletion, its
preconditions and finalizers against the real kube-apiserver are in tests/api/test_evict_prune.py.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.commands.evict import list_evicted, prune_evicted
from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.core.errors import BadInput, PartialFailure
from kubegc_cli.core.plan import Plan, PodAction, Result
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import rfc3339_to_ns
from kubegc_cli.node.pods.api import ApiSource, ApiUnavailable
from kubegc_cli.policy.evicted import PruneOptions
from kubegc_cli.render.plan import render_plan
from tests.unit.recorded_api import RecordedApi, api_pod, serve_recorded_api

NOW = rfc3339_to_ns("2026-11-29T12:00:00Z")
NODE = PruneOptions(node="node-a")
LONG_MESSAGE = (
    "The node was low on resource: memory. Threshold quantity: 100Mi, available: 80Mi. "
    "Container web was using 1Gi, request is 0, has larger consumption of memory."
)


def evicted(name: str, *, at: str = "2026-11-29T08:48:00Z", **kw: Any) -> dict[str, Any]:
    """An Evicted pod as the kubelet leaves it: DisruptionTarget set at eviction, Ready later."""
    conditions = [
        {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
         "lastTransitionTime": at},
        {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-29T11:59:00Z"},
    ]  # fmt: skip
    return api_pod(name, conditions=conditions, **kw)


def body(uid: str, rv: str = "100") -> dict[str, Any]:
    """The exact DELETE body kubegc sends: uid and resourceVersion as preconditions."""
    return {"preconditions": {"resourceVersion": rv, "uid": uid}}


class FakeUi:
    """A Ui that records warnings; `answer` (when set) makes it interactive and is called as
    the confirmation — a test can change the API between plan and act there."""

    def __init__(self, answer: Callable[[], bool] | None = None) -> None:
        self.answer = answer
        self.warnings: list[str] = []
        self.shown: list[Plan[Any]] = []

    def info(self, message: str) -> None: ...

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def show_plan(self, plan: Plan[Any]) -> None:
        self.shown.append(plan)

    def interactive(self) -> bool:
        return self.answer is not None

    def confirm(self, question: str) -> bool:
        assert self.answer is not None
        return self.answer()


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[RecordedApi, Path]]:
    """The recorded API holding a node's worth of pods in two pages, selectors honoured."""
    with serve_recorded_api(tmp_path) as (recorded, kubeconfig):
        recorded.honor_selectors = True
        recorded.pages = [
            [
                evicted("web-1", namespace="team-a", message=LONG_MESSAGE),
                api_pod("crashed", namespace="team-a", reason="", owner=None),  # Failed only
                api_pod("running", namespace="team-a", phase="Running", reason=""),
            ],
            [
                evicted("web-2", namespace="team-b"),
                evicted("elsewhere", namespace="team-a", node="node-b"),
                api_pod("done", namespace="team-b", phase="Succeeded", reason=""),
            ],
        ]
        yield recorded, kubeconfig


def settings(kubeconfig: Path, tmp_path: Path, **kw: Any) -> Settings:
    return Settings(
        kubeconfig=str(kubeconfig), now=NOW, timeout=5, state_dir=tmp_path / "state", env={}, **kw
    )


def deletes(recorded: RecordedApi) -> list[tuple[str, str, Any, int]]:
    return sorted((d.namespace, d.name, d.body, d.status) for d in recorded.deletes)


@pytest.mark.parametrize("act", [ActOptions(dry_run=True), ActOptions()], ids=["dry-run", "no-tty"])
def test_dry_run_lists_and_deletes_nothing(
    api: tuple[RecordedApi, Path], tmp_path: Path, act: ActOptions
) -> None:
    recorded, kubeconfig = api
    ui = FakeUi()
    plan = prune_evicted(settings(kubeconfig, tmp_path), NODE, act, ui)
    assert plan.kind == "EvictedPodPlan" and plan.dry_run
    assert [a.id for a in plan.actions] == ["team-a/web-1", "team-b/web-2"]
    assert all(a.result is Result.PLANNED for a in plan.actions)
    assert plan.policy == {"all_nodes": False, "node": "node-a", "namespace": None,
                           "older_than": "0s", "selector": None}  # fmt: skip
    assert recorded.deletes == [] and recorded.unexpected == []
    assert recorded.list_paths == ["/api/v1/pods"] * 2
    selector = "status.phase=Failed,spec.nodeName=node-a"
    assert [r["fieldSelector"] for r in recorded.requests] == [[selector]] * 2
    assert all(r["limit"] == ["500"] for r in recorded.requests)
    assert "continue" not in recorded.requests[0] and recorded.requests[1]["continue"] == ["1"]
    assert any("1 Failed pod(s) not evicted" in n for n in plan.notes)
    assert plan.source.startswith("api:http://127.0.0.1:") and "node node-a" in plan.source
    assert not (tmp_path / "state").exists()  # no lock taken, no audit written
    if not act.dry_run:
        assert any("dry run only" in w for w in ui.warnings)


def test_a_server_ignoring_the_field_selector_changes_nothing(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    """Phase, reason, node and namespace are checked again on what the API answered."""
    recorded, kubeconfig = api
    recorded.honor_selectors = False
    plan = prune_evicted(settings(kubeconfig, tmp_path), NODE, ActOptions(yes=True), FakeUi())
    assert [(d[0], d[1]) for d in deletes(recorded)] == [("team-a", "web-1"), ("team-b", "web-2")]
    assert [a.id for a in plan.actions] == ["team-a/web-1", "team-b/web-2"]


def test_namespace_lists_namespaced_and_deletes_only_there(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    recorded, kubeconfig = api
    opts = PruneOptions(node="node-a", namespace="team-a")
    plan = prune_evicted(settings(kubeconfig, tmp_path), opts, ActOptions(yes=True), FakeUi())
    assert recorded.list_paths == ["/api/v1/namespaces/team-a/pods"] * 2
    assert deletes(recorded) == [("team-a", "web-1", body("uid-team-a-web-1"), 200)]
    assert plan.policy["namespace"] == "team-a" and "namespace team-a" in plan.source


def test_all_nodes_selects_by_phase_only(api: tuple[RecordedApi, Path], tmp_path: Path) -> None:
    recorded, kubeconfig = api
    opts = PruneOptions(all_nodes=True, node="node-a")
    plan = prune_evicted(settings(kubeconfig, tmp_path), opts, ActOptions(yes=True), FakeUi())
    assert [r["fieldSelector"] for r in recorded.requests] == [["status.phase=Failed"]] * 2
    assert [(d[0], d[1]) for d in deletes(recorded)] == [
        ("team-a", "elsewhere"),
        ("team-a", "web-1"),
        ("team-b", "web-2"),
    ]
    assert plan.policy["all_nodes"] is True and plan.policy["node"] is None
    assert [a.node for a in plan.actions] == ["node-b", "node-a", "node-a"]


def test_older_than_measures_from_the_eviction_time(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    """Eviction time: DisruptionTarget, else Ready, else startTime; unknown is kept."""
    recorded, kubeconfig = api
    ready_since = {"type": "Ready", "status": "False", "lastTransitionTime": "2026-11-29T10:00:00Z"}
    recorded.pages = [
        [
            evicted("old", at="2026-11-29T08:48:00Z"),  # 3h12m ago
            evicted("recent", at="2026-11-29T11:50:00Z"),  # 10m ago
            api_pod("ready-only", conditions=[ready_since]),
            api_pod("start-only", start_time="2026-11-29T07:00:00Z"),
            api_pod("unknown", start_time=None),
            api_pod("unreadable", start_time="yesterday"),
        ]
    ]
    opts = PruneOptions(node="node-a", older_than=3600)
    src = ApiSource(str(kubeconfig), None, "node-a")
    planned, kept = list_evicted(src, opts, 5, now=NOW)
    assert [(a.name, a.evicted_at) for a in planned] == [
        ("old", rfc3339_to_ns("2026-11-29T08:48:00Z")),
        ("ready-only", rfc3339_to_ns("2026-11-29T10:00:00Z")),
        ("start-only", rfc3339_to_ns("2026-11-29T07:00:00Z")),
    ]
    assert [(a.name, a.rule, a.reason, a.result) for a in kept] == [
        ("recent", "too-recent", "evicted 10m ago, less than --older-than 1h0m0s", Result.KEPT),
        ("unknown", "eviction-time-unknown", "eviction time unknown; --older-than 1h0m0s",
         Result.KEPT),
        ("unreadable", "eviction-time-unknown", "eviction time unknown; --older-than 1h0m0s",
         Result.KEPT),
    ]  # fmt: skip
    assert planned[0].reason == "Evicted 3h12m ago"
    assert recorded.deletes == []

    plan = prune_evicted(settings(kubeconfig, tmp_path), opts, ActOptions(yes=True), FakeUi())
    assert [d[1] for d in deletes(recorded)] == ["old", "ready-only", "start-only"]
    assert [k.name for k in plan.kept] == ["recent", "unknown", "unreadable"]
    assert plan.policy["older_than"] == "1h0m0s"
    # without an age limit every evicted pod goes, a time or not
    planned, kept = list_evicted(src, PruneOptions(node="node-a"), 5, now=NOW)
    assert [a.name for a in planned] == ["recent", "unknown", "unreadable"] and kept == []


def test_fault_a_500_beside_conflicts_fails_and_exits_1(
    api: tuple[RecordedApi, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Between plan and act (while the person is asked): one pod changes, one is re-created
    under its name, one is deleted by someone else; the API refuses another with a 500."""
    from kubegc_cli.cli.common import finish

    recorded, kubeconfig = api
    names = ("changed", "gone", "ok", "broken", "recreated")
    recorded.pages = [[evicted(n, namespace="x") for n in names]]
    recorded.delete_answers = {"x/broken": (500, "etcdserver: request timed out")}

    def meanwhile() -> bool:
        recorded.find("x", "changed")["metadata"]["resourceVersion"] = "101"
        recorded.find("x", "recreated")["metadata"]["uid"] = "uid-new"
        recorded.remove("x", "gone")
        return True

    s = settings(kubeconfig, tmp_path)
    ui = FakeUi(answer=meanwhile)
    plan = prune_evicted(s, NODE, ActOptions(), ui)
    assert len(ui.shown) == 1 and not plan.dry_run
    assert deletes(recorded) == [
        ("x", "broken", body("uid-x-broken"), 500),
        ("x", "changed", body("uid-x-changed"), 409),
        ("x", "gone", body("uid-x-gone"), 404),
        ("x", "ok", body("uid-x-ok"), 200),
        ("x", "recreated", body("uid-x-recreated"), 409),
    ]
    got = {a.name: (a.result, a.error) for a in plan.actions}
    assert got["ok"] == (Result.REMOVED, "")
    assert got["gone"] == (Result.SKIPPED, "gone before removal")
    assert got["changed"][0] is Result.SKIPPED
    assert got["changed"][1].startswith("changed since the plan, not deleted (409 Conflict")
    assert "the ResourceVersion in the precondition (100)" in got["changed"][1]
    assert got["recreated"][0] is Result.SKIPPED
    assert "the UID in the precondition (uid-x-recreated)" in got["recreated"][1]
    assert got["broken"] == (
        Result.FAILED,
        "delete refused: 500 Internal Server Error: etcdserver: request timed out",
    )
    assert recorded.find("x", "changed") is not None  # changed since the plan: not deleted
    assert plan.counts() == {
        "planned": 0, "removed": 1, "skipped": 3, "failed": 1, "held-back": 0,
    }  # fmt: skip

    with pytest.raises(PartialFailure) as err:  # the gc commands' exit path: exit code 1
        finish(plan, s)
    assert err.value.exit_code == 1 and "1 of 5" in str(err.value)
    out = capsys.readouterr().out
    assert "Evicted pods" in out and "removed 1, skipped 3, failed 1." in out
    assert "failed: delete refused: 500" in out


def test_fault_an_api_that_stops_answering_fails_the_deletions_and_halts(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    recorded, kubeconfig = api
    recorded.pages = [[evicted(f"p{i}", namespace="x") for i in range(8)]]

    def api_goes_away() -> bool:
        recorded.down = True
        return True

    act = ActOptions(concurrency=1)
    plan = prune_evicted(settings(kubeconfig, tmp_path), NODE, act, FakeUi(api_goes_away))
    results = [(a.result, a.error) for a in plan.actions]
    assert all(r is Result.FAILED and "unreachable" in e for r, e in results[:3])
    assert all(r is Result.SKIPPED and "not attempted" in e for r, e in results[3:])
    assert recorded.dropped == 3 and recorded.deletes == []


def test_declined_confirmation_deletes_nothing(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    recorded, kubeconfig = api
    ui = FakeUi(answer=lambda: False)
    plan = prune_evicted(settings(kubeconfig, tmp_path), NODE, ActOptions(), ui)
    assert plan.declined and plan.dry_run and recorded.deletes == []
    assert all(a.result is Result.PLANNED for a in plan.actions)


def test_fault_a_list_failing_on_page_2_is_unavailable_and_nothing_is_deleted(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    recorded, kubeconfig = api
    recorded.fail = {1: (410, "The provided continue parameter is too old")}
    with pytest.raises(ApiUnavailable, match="410") as err:
        prune_evicted(settings(kubeconfig, tmp_path), NODE, ActOptions(yes=True), FakeUi())
    assert err.value.exit_code == 3 and "\n" not in str(err.value)
    assert "listing Failed pods of node node-a" in str(err.value)
    assert len(recorded.requests) == 2 and recorded.deletes == []
    assert not (tmp_path / "state" / "state.db").exists()  # no audit: nothing was done


def test_no_credentials_is_bad_input_before_any_request(
    api: tuple[RecordedApi, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded, _ = api
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    s = Settings(now=NOW, state_dir=tmp_path / "state", env={})
    with pytest.raises(BadInput) as err:
        prune_evicted(s, NODE, ActOptions(yes=True), FakeUi())
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    assert "--kubeconfig" in str(err.value) and "KUBECONFIG" in str(err.value)
    assert recorded.requests == []


@pytest.mark.parametrize(
    ("opts", "needle"),
    [
        (PruneOptions(node="n", older_than=-1), "negative"),
        (PruneOptions(), "--node-name"),
        (PruneOptions(node="n", namespace=""), "--namespace"),
    ],
)
def test_bad_options_are_bad_input(
    api: tuple[RecordedApi, Path], tmp_path: Path, opts: PruneOptions, needle: str
) -> None:
    recorded, kubeconfig = api
    with pytest.raises(BadInput, match=needle):
        prune_evicted(settings(kubeconfig, tmp_path), opts, ActOptions(yes=True), FakeUi())
    assert recorded.requests == []


def test_snapshot_is_bad_input(api: tuple[RecordedApi, Path], tmp_path: Path) -> None:
    _, kubeconfig = api
    s = settings(kubeconfig, tmp_path, snapshot=tmp_path / "snap.json")
    with pytest.raises(BadInput, match="--snapshot"):
        prune_evicted(s, NODE, ActOptions(dry_run=True), FakeUi())


def test_json_shape_of_an_action(api: tuple[RecordedApi, Path], tmp_path: Path) -> None:
    _, kubeconfig = api
    plan = prune_evicted(settings(kubeconfig, tmp_path), NODE, ActOptions(dry_run=True), FakeUi())
    doc = json.loads(json.dumps(plan.to_dict()))
    assert doc["kind"] == "EvictedPodPlan" and doc["now"] == "2026-11-29T12:00:00Z"
    assert doc["summary"]["total"] == 2 and doc["summary"]["bytes_planned"] == 0
    assert doc["actions"][0] == {
        "kind": "pod",
        "id": "team-a/web-1",
        "namespace": "team-a",
        "name": "web-1",
        "uid": "uid-team-a-web-1",
        "resource_version": "100",
        "node": "node-a",
        "owner_kind": "ReplicaSet",
        "owner_name": "web-7d4b9",
        "evicted_at": "2026-11-29T08:48:00Z",
        "message": LONG_MESSAGE,
        "rule": "evicted",
        "reason": "Evicted 3h12m ago",
        "result": "planned",
        "error": "",
        "log_note": "",
    }
    unknown = PodAction("ns", "p", "u", "1", "n", "", "", 0, "", "evicted", "Evicted")
    assert unknown.to_dict()["evicted_at"] is None and unknown.planned_bytes == 0


def test_table_shows_owner_age_and_a_truncated_message(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    recorded, kubeconfig = api
    recorded.pages[0].append(evicted("young", at="2026-11-29T11:50:00Z", owner=None))
    opts = PruneOptions(node="node-a", older_than=3600)
    plan = prune_evicted(settings(kubeconfig, tmp_path), opts, ActOptions(dry_run=True), FakeUi())
    out = io.StringIO()
    render_plan(plan, verbose=1, out=out)
    text = out.getvalue()
    assert "Evicted pods (dry run)" in text
    assert "NAMESPACE" in text and "OWNER" in text and "EVICTED" in text and "MESSAGE" in text
    row = next(line for line in text.splitlines() if "web-1" in line)
    assert "ReplicaSet/web-7d4b9" in row and "3h12m" in row and "planned" in row
    assert LONG_MESSAGE[:59] + "…" in row and LONG_MESSAGE not in row
    young = next(line for line in text.splitlines() if "young" in line)
    assert " - " in young and "kept: evicted 10m ago, less than --older-than 1h0m0s" in young
    assert "2 evicted pod(s) to remove; 1 kept." in text


def _cli(kubeconfig: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--kubeconfig", str(kubeconfig),
         "--state-dir", str(tmp_path / "state"), "--now", "2026-11-29T12:00:00Z",
         "evict", "prune", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "HOME": "/"},
    )  # fmt: skip


def test_command_line_prune_from_dry_run_to_yes(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    """`kubegc evict prune` as an operator runs it: the dry run lists, `--yes` deletes exactly
    the evicted pods of the node with preconditions; a refused delete is exit 1."""
    recorded, kubeconfig = api
    dry = _cli(kubeconfig, tmp_path, "--node-name", "node-a", "--dry-run", "-o", "json")
    assert dry.returncode == 0, dry.stderr
    doc = json.loads(dry.stdout)
    assert doc["kind"] == "EvictedPodPlan" and doc["dry_run"] is True
    assert [(a["kind"], a["namespace"], a["name"]) for a in doc["actions"]] == [
        ("pod", "team-a", "web-1"), ("pod", "team-b", "web-2")
    ]  # fmt: skip
    assert recorded.deletes == []
    old = _cli(kubeconfig, tmp_path, "--node-name", "node-a", "--older-than", "4h", "--dry-run",
               "-o", "json")  # fmt: skip
    assert json.loads(old.stdout)["actions"] == []  # evicted 3h12m ago: too recent
    go = _cli(kubeconfig, tmp_path, "--node-name", "node-a", "-n", "team-a", "--yes")
    assert go.returncode == 0, go.stderr
    assert deletes(recorded) == [("team-a", "web-1", body("uid-team-a-web-1"), 200)]
    assert "web-1" in go.stdout
    recorded.delete_answers["team-b/web-2"] = (500, "etcd is unhappy")
    failed = _cli(kubeconfig, tmp_path, "--node-name", "node-a", "--yes", "-o", "json")
    assert failed.returncode == 1 and "failed" in failed.stderr
    assert [a["result"] for a in json.loads(failed.stdout)["actions"]] == ["failed"]
    bad = _cli(kubeconfig, tmp_path, "--older-than", "soon")
    assert bad.returncode == 2 and "'soon'" in bad.stderr and bad.stderr.count("\n") == 1
    both = _cli(kubeconfig, tmp_path, "--dry-run", "--yes")
    assert both.returncode == 2 and len(recorded.deletes) == 2  # no new request


def test_selector_is_sent_as_label_selector_and_matched_again(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    """`-l` is validated here, sent as `labelSelector` in canonical form, and matched again on
    what the API answers (the recorded API ignores it, as a careless server might)."""
    from kubegc_cli.core.selector import parse

    recorded, kubeconfig = api
    recorded.pages[0][0]["metadata"]["labels"] = {"app": "web", "tier": "front"}
    recorded.pages[1][0]["metadata"]["labels"] = {"app": "web", "tier": "back"}
    opts = PruneOptions(node="node-a", selector=parse("tier notin (back), app==web"))
    plan = prune_evicted(settings(kubeconfig, tmp_path), opts, ActOptions(yes=True), FakeUi())
    assert [r["labelSelector"] for r in recorded.requests] == [["app=web,tier notin (back)"]] * 2
    assert deletes(recorded) == [("team-a", "web-1", body("uid-team-a-web-1"), 200)]
    assert plan.policy["selector"] == "app=web,tier notin (back)"
    assert "labels app=web,tier notin (back)" in plan.source
    assert "labelSelector app=web,tier notin (back)" in plan.notes[0]


def test_command_line_bad_selector_sends_nothing(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    recorded, kubeconfig = api
    bad = _cli(kubeconfig, tmp_path, "--node-name", "node-a", "-l", "a in (b", "--yes")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "invalid label selector 'a in (b'" in bad.stderr
    assert recorded.requests == [] and recorded.deletes == []
    good = _cli(kubeconfig, tmp_path, "--node-name", "node-a", "-l", "!app", "--dry-run",
                "-o", "json")  # fmt: skip
    assert good.returncode == 0, good.stderr
    assert json.loads(good.stdout)["policy"]["selector"] == "!app"
    assert recorded.requests[0]["labelSelector"] == ["!app"]


def test_the_readme_recipe_against_the_stand_in_run_by_hand(tmp_path: Path) -> None:
    """`python -m tests.unit.recorded_api` (the README's way to try `evict prune` without a
    cluster) serves its demo pods: a dry run on node-a plans web-1 and web-2; `--all-nodes
    --older-than 1h --yes` removes web-1 (3h) and report-1 (2h) and keeps web-2 (20m)."""
    kubeconfig = tmp_path / "demo.kubeconfig"
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.unit.recorded_api", "--kubeconfig", str(kubeconfig)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parents[2],
    )  # fmt: skip
    try:
        for _ in range(200):
            if kubeconfig.exists() or server.poll() is not None:
                break
            time.sleep(0.05)
        assert kubeconfig.exists(), "the stand-in wrote no kubeconfig"

        def prune(*args: str) -> list[tuple[str, str]]:
            res = subprocess.run(
                [sys.executable, "-m", "kubegc_cli", "evict", "prune", "--kubeconfig",
                 str(kubeconfig), "--state-dir", str(tmp_path / "state"), *args, "-o", "json"],
                capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                env={"PATH": "/usr/bin:/bin", "HOME": "/"},
            )  # fmt: skip
            assert res.returncode == 0, res.stderr
            return [(a["id"], a["result"]) for a in json.loads(res.stdout)["actions"]]

        assert prune("--node-name", "node-a", "--dry-run") == [
            ("shop/web-1", "planned"),
            ("shop/web-2", "planned"),
        ]
        assert prune("--all-nodes", "--older-than", "1h", "--yes") == [
            ("batch/report-1", "removed"),
            ("shop/web-1", "removed"),
        ]
        assert prune("--all-nodes", "--dry-run") == [("shop/web-2", "planned")]
    finally:
        server.terminate()
        _, log = server.communicate(timeout=30)
    assert server.returncode == 0, log
    assert "DELETE /api/v1/namespaces/batch/pods/report-1 -> 200" in log


def test_prune_needs_no_node_lock_and_no_writable_run(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    """`evict prune` changes the API, not a node: it acts while a run holds this node's lock
    (and in a pod whose /run is read-only), under its state dir's lock alone."""
    recorded, kubeconfig = api
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
        go = _cli(kubeconfig, tmp_path, "--host-root", str(host), "--node-name", "node-a",
                  "-n", "team-a", "--yes")  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert go.returncode == 0, go.stderr
    assert deletes(recorded) == [("team-a", "web-1", body("uid-team-a-web-1"), 200)]
