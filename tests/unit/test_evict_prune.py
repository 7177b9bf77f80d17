"""`evict prune` where the real API server is not the test: faults it will not produce on
demand (`test_fault_*`: a 500, an API that stops answering, a continue token refused on page
2, a server ignoring the field or label selector, a startTime it would not store), played by
the stand-in `tests.unit.recorded_api`, which records every request; and bad input, refused
before any request (the kubeconfig there names a port nothing listens on: a request would be
exit 3, not 2). Listing, selection, deletion and output against the real kube-apiserver are
tests/api/test_evict_prune.py.
"""

from __future__ import annotations

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
from kubegc_cli.core.plan import Plan, Result
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import rfc3339_to_ns
from kubegc_cli.node.pods.api import ApiSource, ApiUnavailable
from kubegc_cli.policy.evicted import PruneOptions
from tests.controlplane import free_port
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


def test_fault_a_server_ignoring_the_field_selector_changes_nothing(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    """Phase, reason, node and namespace are checked again on what the API answered."""
    recorded, kubeconfig = api
    recorded.honor_selectors = False
    plan = prune_evicted(settings(kubeconfig, tmp_path), NODE, ActOptions(yes=True), FakeUi())
    assert [(d[0], d[1]) for d in deletes(recorded)] == [("team-a", "web-1"), ("team-b", "web-2")]
    assert [a.id for a in plan.actions] == ["team-a/web-1", "team-b/web-2"]


def test_fault_a_start_time_the_server_would_not_store_is_kept(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    """An eviction time that cannot be read (a startTime no API server stores) is unknown:
    kept under --older-than, pruned without it."""
    recorded, kubeconfig = api
    recorded.pages = [[api_pod("unreadable", start_time="yesterday"), evicted("old")]]
    src = ApiSource(str(kubeconfig), None, "node-a")
    planned, kept = list_evicted(src, PruneOptions(node="node-a", older_than=3600), 5, now=NOW)
    assert [p.name for p in planned] == ["old"]
    assert [(k.name, k.rule) for k in kept] == [("unreadable", "eviction-time-unknown")]
    planned, kept = list_evicted(src, PruneOptions(node="node-a"), 5, now=NOW)
    assert [p.name for p in planned] == ["old", "unreadable"] and kept == []
    assert recorded.deletes == []


def test_fault_a_500_beside_conflicts_fails_and_exits_1(
    api: tuple[RecordedApi, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Between plan and act (right after the list): one pod changes, one is re-created
    under its name, one is deleted by someone else; the API refuses another with a 500."""
    from kubegc_cli.cli.common import finish
    from kubegc_cli.commands import evict

    recorded, kubeconfig = api
    names = ("changed", "gone", "ok", "broken", "recreated")
    recorded.pages = [[evicted(n, namespace="x") for n in names]]
    recorded.delete_answers = {"x/broken": (500, "etcdserver: request timed out")}
    listed = evict._list_failed

    def list_then_change(*args: Any) -> Any:
        items = listed(*args)
        recorded.find("x", "changed")["metadata"]["resourceVersion"] = "101"
        recorded.find("x", "recreated")["metadata"]["uid"] = "uid-new"
        recorded.remove("x", "gone")
        return items

    monkeypatch.setattr(evict, "_list_failed", list_then_change)
    s = settings(kubeconfig, tmp_path)
    plan = prune_evicted(s, NODE, ActOptions(yes=True), FakeUi())
    assert not plan.dry_run
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
    api: tuple[RecordedApi, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kubegc_cli.commands import evict

    recorded, kubeconfig = api
    recorded.pages = [[evicted(f"p{i}", namespace="x") for i in range(8)]]

    def api_goes_away() -> bool:
        recorded.down = True
        return True

    # gone while the person is asked: the yes lists again, cannot, and deletes nothing
    with pytest.raises(ApiUnavailable) as err:
        prune_evicted(settings(kubeconfig, tmp_path), NODE, ActOptions(), FakeUi(api_goes_away))
    assert err.value.exit_code == 3 and recorded.deletes == []
    recorded.down, recorded.dropped = False, 0
    listed = evict._list_failed

    def list_then_go_away(*args: Any) -> Any:
        items = listed(*args)
        recorded.down = True
        return items

    monkeypatch.setattr(evict, "_list_failed", list_then_go_away)
    act = ActOptions(concurrency=1, yes=True)
    plan = prune_evicted(settings(kubeconfig, tmp_path), NODE, act, FakeUi())
    results = [(a.result, a.error) for a in plan.actions]
    assert all(r is Result.FAILED and "unreachable" in e for r, e in results[:3])
    assert all(r is Result.SKIPPED and "not attempted" in e for r, e in results[3:])
    assert recorded.dropped == 3 and recorded.deletes == []


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


def nothing_listens(tmp_path: Path) -> Path:
    """A kubeconfig for a port nothing listens on: any request kubegc made would fail as
    unreachable (exit 3), so a BadInput (exit 2) shows no request was made."""
    port = free_port()
    path = tmp_path / "closed.kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}))  # fmt: skip
    return path


def test_no_credentials_is_bad_input_before_any_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.kube/config
    s = Settings(now=NOW, state_dir=tmp_path / "state", env={})
    with pytest.raises(BadInput) as err:
        prune_evicted(s, NODE, ActOptions(yes=True), FakeUi())
    assert err.value.exit_code == 2 and "\n" not in str(err.value)
    assert "--kubeconfig" in str(err.value) and "KUBECONFIG" in str(err.value)


@pytest.mark.parametrize(
    ("opts", "needle"),
    [
        (PruneOptions(node="n", older_than=-1), "negative"),
        (PruneOptions(), "--node-name"),
        (PruneOptions(node="n", namespace=""), "--namespace"),
    ],
)
def test_bad_options_are_bad_input(tmp_path: Path, opts: PruneOptions, needle: str) -> None:
    s = settings(nothing_listens(tmp_path), tmp_path)
    with pytest.raises(BadInput, match=needle):
        prune_evicted(s, opts, ActOptions(yes=True), FakeUi())


def test_snapshot_is_bad_input(tmp_path: Path) -> None:
    s = settings(nothing_listens(tmp_path), tmp_path, snapshot=tmp_path / "snap.json")
    with pytest.raises(BadInput, match="--snapshot"):
        prune_evicted(s, NODE, ActOptions(dry_run=True), FakeUi())


def test_an_unreachable_api_would_be_exit_3(tmp_path: Path) -> None:
    """What the tests above rely on: with valid options, the closed port is exit 3."""
    with pytest.raises(ApiUnavailable) as err:
        prune_evicted(settings(nothing_listens(tmp_path), tmp_path), NODE, ActOptions(yes=True),
                      FakeUi())  # fmt: skip
    assert err.value.exit_code == 3


def cli(kubeconfig: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubegc evict prune` as an operator runs it, at the tests' NOW."""
    return subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--kubeconfig", str(kubeconfig),
         "--state-dir", str(tmp_path / "state"), "--now", "2026-11-29T12:00:00Z",
         "evict", "prune", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        env={"PATH": "/usr/bin:/bin", "HOME": "/"},
    )  # fmt: skip


def test_fault_a_refused_delete_on_the_command_line_is_exit_1(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    recorded, kubeconfig = api
    recorded.delete_answers["team-b/web-2"] = (500, "etcd is unhappy")
    failed = cli(kubeconfig, tmp_path, "--node-name", "node-a", "-n", "team-b", "--yes",
                  "-o", "json")  # fmt: skip
    assert failed.returncode == 1 and "failed" in failed.stderr
    assert [a["result"] for a in json.loads(failed.stdout)["actions"]] == ["failed"]
    assert deletes(recorded) == [("team-b", "web-2", body("uid-team-b-web-2"), 500)]


def test_fault_a_server_ignoring_the_label_selector_changes_nothing(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    """`-l` is sent as `labelSelector` in canonical form and matched again on what the API
    answers (the stand-in ignores it, as a careless server might)."""
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


def test_command_line_bad_selector_sends_nothing(tmp_path: Path) -> None:
    bad = cli(nothing_listens(tmp_path), tmp_path, "--node-name", "node-a", "-l", "a in (b",
               "--yes")  # fmt: skip
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "invalid label selector 'a in (b'" in bad.stderr


def test_the_readme_recipe_against_the_stand_in_run_by_hand(tmp_path: Path) -> None:
    """`python -m tests.unit.recorded_api` (the reference's way to try `evict prune` without a
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
