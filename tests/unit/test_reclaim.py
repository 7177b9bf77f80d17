"""`kubegc reclaim` against an in-memory runtime and a fixture host: the plan's order, the
`--until`/`--bytes` cut-off, the message when a target cannot be met, one confirmation, and a
headline computed from the rows."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.commands.reclaim import ReclaimOptions, reclaim
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import Image, Sandbox, SandboxState
from kubegc_cli.core.plan import ESTIMATE_NOTE
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import format_bytes
from kubegc_cli.node.host.du import tree_usage
from kubegc_cli.policy.images import ImageGCPolicy
from kubegc_cli.policy.reclaim import cut_at, loss_order, parse_until
from kubegc_cli.render.plan import summary_line
from tests.unit.factories import NOW, S, ctr
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

UID_G = "66666666-2222-3333-4444-555555555555"  # a deleted pod
GONE = f"default_pod-{UID_G}_{UID_G}"  # its log directory
OLD = "sha256:" + "a" * 64
NEWER = "sha256:" + "b" * 64


def _runtime() -> MemoryCri:
    """Dead containers (one of the deleted pod, one beyond MaxPerPodContainer of the live pod
    uid-p), a running one, the NOTREADY sandbox of the deleted pod, the READY one of uid-p,
    two unused images."""
    cs = [
        ctr("dead0000", age_s=900, log_bytes=1000),
        ctr("dead0001", attempt=1, age_s=600, log_bytes=2000),
        ctr("gone0000", uid=UID_G, log_bytes=5000),
        ctr("live0000", name="web", state="RUNNING", age_s=1000),
    ]
    sbs = [
        Sandbox("sb-uid-p", "pod-uid-p", "default", "uid-p", 0, SandboxState.READY, NOW - 1000 * S),
        Sandbox(f"sb-{UID_G}", f"pod-{UID_G}", "default", UID_G, 0, SandboxState.NOTREADY,
                NOW - 900 * S),
    ]  # fmt: skip
    images = {
        OLD: Image(OLD, ("registry.example/old:1",), ("registry.example/old@" + OLD,), 300_000_000),
        NEWER: Image(
            NEWER, ("registry.example/newer:1",), ("registry.example/newer@" + NEWER,), 200_000_000
        ),
    }
    cri = MemoryCri({c.id: c for c in cs}, {s.id: s for s in sbs}, images=images)
    cri.endpoint = mock.Mock(display="unix:///memory.sock", path="/run/memory.sock")
    return cri


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host root with the kubelet root, and the log directory of the deleted pod (64 KiB)."""
    root = tmp_path / "host"
    (root / "var/lib/kubelet/pods").mkdir(parents=True)
    logs = root / "var/log/pods" / GONE / "app"
    logs.mkdir(parents=True)
    (logs / "0.log").write_bytes(b"x" * 65536)
    pods = tmp_path / "pods.json"
    pod = {"metadata": {"uid": "uid-p", "namespace": "default", "name": "pod-uid-p"}}
    pods.write_text(json.dumps({"kind": "PodList", "items": [pod]}))
    return root


def _argv(host: Path, *extra: str) -> list[str]:
    return [
        "--host-root", str(host), "--state-dir", str(host.parent / "state"),
        "--now", "2027-01-15T08:00:00Z", "--pods-file", str(host.parent / "pods.json"),
        "reclaim", "--pod-logs-dir", "/var/log/pods", "--minimum-image-ttl-duration", "0s",
        *extra,
    ]  # fmt: skip


def _run(host: Path, *extra: str, cri: MemoryCri | None = None) -> tuple[int, str, str]:
    with use_runtime(cri or _runtime()):
        return run_cli(_argv(host, *extra))


def test_the_plan_lists_every_kind_in_the_kubelets_order(host: Path) -> None:
    """Containers and sandboxes first, then pod logs, then images (the eviction manager's
    reclaim functions: container GC, then image GC); each kind in its planner's order."""
    code, out, err = _run(host, "--dry-run", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert [(a["kind"], a["id"]) for a in doc["actions"]] == [
        ("container", "gone0000"),
        ("container", "dead0000"),
        ("sandbox", f"sb-{UID_G}"),
        ("pod-log-dir", f"/var/log/pods/{GONE}"),
        ("image", OLD),
        ("image", NEWER),
    ]
    assert {a["result"] for a in doc["actions"]} == {"planned"}
    assert doc["target"] is None
    assert all(f["available_after"] is None for f in doc["filesystems"])


def test_the_table_rows_and_headline_are_computed_from_the_same_rows(host: Path) -> None:
    """The table lists each action once, the totals by kind sum its rows, and the headline's
    count and bytes are those of the rows (the JSON's summary too)."""
    code, out, err = _run(host, "--dry-run", "-o", "json")
    doc = json.loads(out)
    code, table, err = _run(host, "--dry-run")
    assert code == 0, err
    rows = [ln for ln in table.splitlines() if ln.endswith(" planned")]
    assert len(rows) == len(doc["actions"])
    expected = sum(k["bytes"] for k in doc["by_kind"])
    assert expected == doc["summary"]["bytes_planned"] == doc["summary"]["bytes_expected"]
    assert expected == sum(a["expected_bytes"] for a in doc["actions"])
    assert sum(k["count"] for k in doc["by_kind"]) == len(doc["actions"])
    assert doc["summary"]["bytes_expected_is_estimate"]  # (images among the rows)
    assert doc["notes"].count(ESTIMATE_NOTE) == 1  # why, said once
    assert (
        f"{len(rows)} object(s) to remove, about {format_bytes(expected)} expected (image "
        "sizes as the runtime reports them);"
    ) in table
    for k in doc["by_kind"]:
        if k["count"]:
            assert any(ln.split()[:3] == [k["kind"], str(k["count"]), format_bytes(k["bytes"])]
                       for ln in table.splitlines()), k  # fmt: skip


@pytest.mark.parametrize(
    ("target", "taken"),
    [
        # what the deleted pod left is the cheapest to lose, taken first and whole: its dead
        # container (5000 bytes of log), its sandbox and its log directory (64 KiB and its
        # directories' blocks)
        ("1Ki", {"gone0000", f"sb-{UID_G}", f"/var/log/pods/{GONE}"}),
        # then the other dead container (1000 bytes: "+500" is 500 bytes more than the
        # deleted pod's objects free), then the image used longest ago
        ("+500", {"gone0000", f"sb-{UID_G}", f"/var/log/pods/{GONE}", "dead0000"}),
        ("100Mi", {"gone0000", f"sb-{UID_G}", f"/var/log/pods/{GONE}", "dead0000", OLD}),
    ],
)
def test_bytes_stops_the_plan_once_met_cheapest_to_lose_first(
    host: Path, target: str, taken: set[str]
) -> None:
    if target.startswith("+"):  # beyond the deleted pod's directory on disk and its log
        gone = tree_usage(str(host / "var/log/pods" / GONE)).bytes
        target = str(gone + 5000 + int(target[1:]))
    code, out, err = _run(host, "--dry-run", "-o", "json", "--bytes", target)
    assert code == 0, err
    doc = json.loads(out)
    got = {a["id"] for a in doc["actions"] if a["result"] == "planned"}
    assert got == taken
    held = [a for a in doc["actions"] if a["result"] == "held-back"]
    assert all(a["error"] == f"held back: --bytes {target} is met without it" for a in held)
    assert doc["target"]["met"] is True
    assert doc["target"]["expected"] >= doc["target"]["needed"]


def test_until_is_measured_on_the_filesystem_the_signal_names(host: Path) -> None:
    """`imagefs.available>X` where X is 100 MB above what is available: the images count (the
    fixture's filesystems are one), least recently used first."""
    stats = mock.Mock(capacity=10**12, available=10**11, device=1, path=str(host))
    with mock.patch("kubegc_cli.commands.reclaim.fs_stats", return_value=stats):
        code, out, err = _run(host, "--dry-run", "-o", "json", "--until",
                              f"imagefs.available>{10**11 + 250_000_000}")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"]["needed"] == 250_000_000
    planned = [a["id"] for a in doc["actions"] if a["result"] == "planned"]
    assert OLD in planned and NEWER not in planned  # 64 KiB of logs + 300 MB: met


def test_a_target_that_cannot_be_met_says_how_far_and_what_is_in_the_way(host: Path) -> None:
    stats = mock.Mock(capacity=10**12, available=10**11, device=1, path=str(host))
    cri = _runtime()
    cri.layers = {"live0000": 7 * 2**20}
    with mock.patch("kubegc_cli.commands.reclaim.fs_stats", return_value=stats):
        code, out, err = _run(host, "--dry-run", "--until", "nodefs.available>50%", cri=cri)
        _, doc, _ = _run(host, "--dry-run", "-o", "json", "--until", "nodefs.available>50%",
                         cri=cri)  # fmt: skip
    assert code == 0, err
    needed = 5 * 10**11 - 10**11
    plannable = 65536 + 300_000_000 + 200_000_000 + 1000
    line = " ".join(out.split())  # (a note may wrap)
    assert (
        f"nodefs.available>50% cannot be met: {format_bytes(plannable)} plannable, "
        f"{format_bytes(needed)} needed; the rest is running containers' writable layers (7Mi), "
        "1 dead container(s) the kubelet's rules keep, pod data and other files ('kubegc df' "
        "shows them)"
    ) in line
    assert json.loads(doc)["target"]["in_the_way"]["running containers' writable layers"] == (
        7 * 2**20
    )
    assert "held back" not in out  # short of the target: everything goes


def test_a_target_not_met_after_acting_exits_1(host: Path) -> None:
    stats = mock.Mock(capacity=10**12, available=10**11, device=1, path=str(host))
    with mock.patch("kubegc_cli.commands.reclaim.fs_stats", return_value=stats):
        code, _, err = _run(host, "--yes", "--until", "nodefs.available>50%")
    assert code == 1
    last = err.strip().splitlines()[-1]
    assert last.startswith("kubegc: error: nodefs.available>50% not met: "), last
    assert re.fullmatch(r".* not met: [\d.]+[KMGTPE]i short", last), last  # human units


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--until", "nodefs.available<15%"], "'nodefs.available<15%'"),
        (["--until", "memory.available>1Gi"], "'memory.available'"),
        (["--until", "nodefs.available>15 %"], "15 %"),
        (["--until", "nodefs.available>0%"], "'nodefs.available>0%'"),
        (["--until", "imagefs.available>-1Gi"], "-1Gi"),
        (["--bytes", "lots"], "'lots'"),
        (["--bytes", "0"], "'0'"),
        (["--bytes", "1Gi", "--until", "nodefs.available>1%"], "--until and --bytes"),
    ],
)
def test_a_bad_target_is_one_line_exit_2_and_nothing_removed(
    host: Path, args: list[str], named: str
) -> None:
    cri = _runtime()
    code, out, err = _run(host, "--yes", *args, cri=cri)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and named in err, err
    assert cri.removed == []


def test_parse_until_reads_the_kubelet_threshold_grammar() -> None:
    t = parse_until("nodefs.available>15%")
    assert t.signal == "nodefs.available" and t.needed(1000, 100) == 50
    t = parse_until("imagefs.available>20Gi")
    assert t.needed(10**12, 20 * 2**30 - 5) == 5
    assert t.needed(10**12, 10**12) == 0
    with pytest.raises(BadInput):
        parse_until("imagefs.available>100%")


def _a(kind: str, ident: str, size: int, **kw: Any) -> Any:
    return SimpleNamespace(kind=kind, id=ident, planned_bytes=size, **kw)


def _c(ident: str, size: int, uid: str, rule: str = "deleted-pod") -> Any:
    return _a("container", ident, size, rule=rule,
              container=SimpleNamespace(pod_sandbox_id=f"s-{uid}", pod_uid=uid))  # fmt: skip


def _s(uid: str, rule: str = "deleted-pod") -> Any:
    return _a("sandbox", f"s-{uid}", 0, rule=rule, sandbox=SimpleNamespace(uid=uid))


def _d(uid: str, size: int) -> Any:
    return _a("pod-log-dir", f"/l/{uid}", size, path=f"/l/{uid}", pod_uid=uid, rule="deleted-pod")


def test_cut_at_takes_prerequisites_and_everything_when_short() -> None:
    c1 = _c("c1", 10, "u1")
    s1 = _s("u1")
    d1 = _d("u1", 100)
    i1 = _a("image", "i1", 1000, last_used=5, rule="unused")
    i0 = _a("image", "i0", 1000, last_used=0, rule="unused")
    actions = [c1, s1, d1, i1, i0]
    assert [a.id for a in loss_order(actions)] == ["c1", "s-u1", "/l/u1", "i0", "i1"]
    size = lambda a: a.planned_bytes  # noqa: E731
    assert cut_at(actions, 50, size).taken == {"/l/u1", "c1", "s-u1"}
    assert cut_at(actions, 200, size).taken == {"/l/u1", "c1", "s-u1", "i0"}
    assert cut_at(actions, 0, size).taken == frozenset()
    short = cut_at(actions, 10**6, size)
    assert short.taken == {a.id for a in actions} and not short.met
    assert short.plannable == 2110


# A live pod's dead containers (l1..l4, planned first, as the planner lists them), a deleted
# pod's container (g1) whose log is all its log directory holds (the directory: 0 B of its
# own), the deleted pod's sandbox, a live pod's old sandbox, residue, an image.
_LIVE = [_c(f"l{n}", 8 * 1024, "live", rule="max-per-pod-container") for n in range(1, 5)]
_GONE = [_c("g1", 20 * 1024, "gone"), _s("gone"), _d("gone", 0)]
_OLD_SANDBOX = _s("live", rule="older-sandbox")
_RESIDUE = _a("finding", "/var/lib/kubelet/pods/x", 4 * 1024, type="orphaned-pod-dir",
              rule="orphaned-pod-dir")  # fmt: skip
_IMAGE = _a("image", "sha256:i", 10**6, last_used=0, rule="unused")
_PLAN = [*_LIVE, _GONE[0], _OLD_SANDBOX, *_GONE[1:], _RESIDUE, _IMAGE]


@pytest.mark.parametrize(
    ("needed", "taken"),
    [
        # what the deleted pod left goes first, as one: its container, sandbox and log dir
        (1, {"g1", "s-gone", "/l/gone"}),
        (20 * 1024, {"g1", "s-gone", "/l/gone"}),
        # then residue
        (20 * 1024 + 1, {"g1", "s-gone", "/l/gone", "/var/lib/kubelet/pods/x"}),
        (24 * 1024, {"g1", "s-gone", "/l/gone", "/var/lib/kubelet/pods/x"}),
        # then the live pod's dead containers, one at a time, in the planners' order
        (24 * 1024 + 1, {"g1", "s-gone", "/l/gone", "/var/lib/kubelet/pods/x", "l1"}),
        (40 * 1024, {"g1", "s-gone", "/l/gone", "/var/lib/kubelet/pods/x", "l1", "l2"}),
        # then images (the live pod's sandbox frees nothing: not taken on its own)
        (56 * 1024 + 1, {"g1", "s-gone", "/l/gone", "/var/lib/kubelet/pods/x",
                         "l1", "l2", "l3", "l4", "sha256:i"}),
    ],
)  # fmt: skip
def test_the_cut_takes_what_deleted_pods_left_first_and_whole(needed: int, taken: set[str]) -> None:
    cut = cut_at(_PLAN, needed, lambda a: a.planned_bytes)
    assert cut.taken == taken and cut.met


def test_loss_order_puts_each_deleted_pod_first_in_acting_order() -> None:
    other = [_c("h1", 1, "gone2"), _d("gone2", 5)]
    plan = [*_PLAN, *other]
    assert [a.id for a in loss_order(plan)] == [
        "g1", "s-gone", "/l/gone", "h1", "/l/gone2", "/var/lib/kubelet/pods/x",
        "l1", "l2", "l3", "l4", "s-live", "sha256:i",
    ]  # fmt: skip


def test_a_deleted_pod_freeing_nothing_on_the_target_filesystem_is_not_taken() -> None:
    on_imagefs = lambda a: a.planned_bytes if a.kind == "image" else 0  # noqa: E731
    cut = cut_at(_PLAN, 1, on_imagefs)
    assert cut.taken == {"sha256:i"}


class _AskingUi:
    """An interactive `Ui` that says yes, and counts what it is asked and shown."""

    def __init__(self) -> None:
        self.questions: list[str] = []
        self.shown = 0

    def info(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        pass

    def show_plan(self, plan: Any) -> None:
        self.shown += 1

    def interactive(self) -> bool:
        return True

    def confirm(self, question: str) -> bool:
        self.questions.append(question)
        return True


def test_one_confirmation_for_every_kind_then_the_disk_is_measured(host: Path) -> None:
    s = Settings(
        host_root=host, state_dir=host.parent / "state", pods_file=host.parent / "pods.json",
        pod_source="file", now=NOW, env={},
    )  # fmt: skip
    cri, ui = _runtime(), _AskingUi()
    options = ReclaimOptions(images=ImageGCPolicy(min_age=0, prune_unused=True),
                             pod_logs_dir="/var/log/pods")  # fmt: skip
    with use_runtime(cri):
        plan = reclaim(s, options, ActOptions(), ui)
    assert ui.questions == ["Remove 6 object(s)?"] and ui.shown == 1
    assert sorted(cri.removed) == sorted(["gone0000", "dead0000", f"sb-{UID_G}", OLD, NEWER])
    assert not (host / "var/log/pods" / GONE).exists()
    assert {a.result.value for a in plan.actions} == {"removed"}
    assert all(f["available_after"] is not None for f in plan.filesystems)
    assert summary_line(plan).startswith("removed 6, skipped 0, failed 0")


def test_a_reclaim_run_is_counted_in_the_metrics_and_told_as_one_event(host: Path) -> None:
    """The metrics file counts every kind a reclaim acts on (residue by its type); the Event
    of a run that removed says what and the bytes regained, measured."""
    from kubegc_cli.report.events import events_for

    metrics = host.parent / "kubegc.prom"
    code, _, err = _run(host, "--yes", "--metrics-file", str(metrics))
    assert code == 0, err
    text = metrics.read_text()
    for kind in ("container", "sandbox", "pod-log-dir", "image", "orphaned-pod-dir"):
        assert f'kubegc_objects_total{{command="reclaim",kind="{kind}",result="removed"}}' in text
    s = Settings(
        host_root=host, state_dir=host.parent / "state2", pods_file=host.parent / "pods.json",
        pod_source="file", now=NOW, env={},
    )  # fmt: skip
    with use_runtime(_runtime()):
        plan = reclaim(s, ReclaimOptions(pod_logs_dir="/var/log/pods"),
                       ActOptions(yes=True), _AskingUi())  # fmt: skip
    (event,) = events_for("reclaim", plan, 0)
    assert event.reason == "Reclaimed" and "(measured)" in event.message
    assert event.message.startswith("removed 2 container(s), 1 sandbox(es)")


def test_into_a_pipe_no_line_is_cut_at_a_fixed_width(tmp_path: Path) -> None:
    """A pod log directory whose name is longer than any fixed width: its row, into a pipe,
    holds the whole path and its bytes."""
    root = tmp_path / "host"
    (root / "var/lib/kubelet/pods").mkdir(parents=True)
    name = f"default_{'p' * 180}_{UID_G}"
    (root / "var/log/pods" / name / "app").mkdir(parents=True)
    (root / "var/log/pods" / name / "app" / "0.log").write_bytes(b"x" * 65536)
    on_disk = format_bytes(tree_usage(str(root / "var/log/pods" / name)).bytes)
    pod = {"metadata": {"uid": "uid-p", "namespace": "default", "name": "pod-uid-p"}}
    (tmp_path / "pods.json").write_text(json.dumps({"kind": "PodList", "items": [pod]}))
    code, out, err = _run(root, "--dry-run")
    assert code == 0, err
    (row,) = [ln for ln in out.splitlines() if ln.startswith("pod-log-dir ")]
    assert f"/var/log/pods/{name} " in row and row.split()[-2:] == [on_disk, "planned"]
