"""`--metrics-file`: the node_exporter textfile, its names and values, how it survives runs
(counters summed, the last success kept by a failed run, other commands' series untouched),
the atomic write, and the command line around it (issue 7, case 3: a directory kubegc cannot
write — the run still does its work, says so in one line, exits 1)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kubegc_cli.commands.residue import ResiduePlan
from kubegc_cli.core.errors import ExitCode
from kubegc_cli.core.model import NodeSnapshot
from kubegc_cli.core.plan import ContainerAction, ImageAction, Plan, Result
from kubegc_cli.core.residue import Finding
from kubegc_cli.report.metrics import (
    METRICS,
    MetricsError,
    RunFacts,
    check_metrics_path,
    parse_samples,
    render,
    run_samples,
    series,
    write_metrics,
)
from tests.unit.factories import NOW, ctr
from tests.unit.test_cli import run

T0 = 1_800_000_000.0


def gc_plan(*results: tuple[Result, int]) -> Plan[ContainerAction]:
    """A gc containers plan with one container action per (result, log bytes freed)."""
    actions = []
    for i, (result, freed) in enumerate(results):
        a = ContainerAction(ctr(f"c{i:02d}" * 8, log_bytes=100 + i), "deleted-pod", "gone", result)
        a.bytes_freed = freed
        actions.append(a)
    kept = [ContainerAction(ctr("k0" * 8), "min-age", "young", Result.KEPT)]
    return Plan(kind="ContainerGCPlan", policy={}, now=NOW, actions=actions, kept=kept,
                dry_run=False)  # fmt: skip


def facts(command: str = "gc containers", code: int = 0, result: Any = None,
          ended: float = T0 + 5) -> RunFacts:  # fmt: skip
    return RunFacts(command, code, ended - 5, ended, 4.25, result)


def value(samples: dict[Any, float], name: str, **labels: str) -> float:
    found = [
        v for lbl, v in series(samples, name) if all(lbl.get(k) == x for k, x in labels.items())
    ]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def test_every_metric_follows_the_prometheus_conventions() -> None:
    for name, (kind, help_text) in METRICS.items():
        # kubegc's own, or the kubelet's image GC metrics under the kubelet's names
        assert name.startswith(("kubegc_", "kubelet_image_g")) and help_text
        assert name.endswith("_total") == (kind == "counter"), name
        assert kind in ("counter", "gauge", "histogram")
        assert "bytes" not in name or name.endswith(("_bytes", "_bytes_total")), name
        assert "seconds" not in name or name.endswith("_seconds"), name


def test_the_file_parses_as_the_text_format_with_help_and_type() -> None:
    plan = gc_plan((Result.REMOVED, 4096), (Result.FAILED, 0), (Result.SKIPPED, 0))
    text = render(run_samples(facts(result=plan)))
    families = {f.name: f for f in text_string_to_metric_families(text)}
    # the official parser drops _total from counter family names
    assert families["kubegc_objects"].type == "counter"
    assert families["kubegc_last_run_duration_seconds"].type == "gauge"
    for line in text.splitlines():
        assert not line.startswith("#") or line.split()[1] in ("HELP", "TYPE")
    assert text.count("# TYPE kubegc_objects_total counter") == 1
    assert "# HELP kubegc_last_success_timestamp_seconds " in text
    got = {(s.name, tuple(sorted(s.labels.items()))): s.value
           for f in families.values() for s in f.samples}  # fmt: skip
    assert got[("kubegc_objects_total", (("command", "gc containers"), ("kind", "container"),
                                          ("result", "removed")))] == 1  # fmt: skip


def test_objects_bytes_and_run_facts_of_one_run() -> None:
    plan = gc_plan((Result.REMOVED, 4096), (Result.REMOVED, 100), (Result.FAILED, 0))
    s = run_samples(facts(result=plan, code=1))
    cmd = {"command": "gc containers", "kind": "container"}
    assert value(s, "kubegc_objects_total", result="removed", **cmd) == 2
    assert value(s, "kubegc_objects_total", result="failed", **cmd) == 1
    assert value(s, "kubegc_objects_total", result="skipped", **cmd) == 0
    assert value(s, "kubegc_freed_bytes_total", **cmd) == 4196
    assert value(s, "kubegc_last_run_freed_bytes", **cmd) == 4196
    assert value(s, "kubegc_last_run_planned_bytes", **cmd) == 100 + 101 + 102
    assert value(s, "kubegc_last_run_objects", result="kept", **cmd) == 1
    assert value(s, "kubegc_last_run_duration_seconds") == 4.25
    assert value(s, "kubegc_last_run_exit_code") == 1
    assert value(s, "kubegc_last_run_timestamp_seconds") == T0 + 5
    assert value(s, "kubegc_runs_total", result="failure") == 1
    assert value(s, "kubegc_runs_total", result="success") == 0
    assert not list(series(s, "kubegc_last_success_timestamp_seconds"))


def test_a_dry_run_counts_planned_objects_and_acts_on_none() -> None:
    plan = gc_plan((Result.PLANNED, 0), (Result.PLANNED, 0))
    plan.dry_run = True
    s = run_samples(facts(result=plan))
    assert value(s, "kubegc_last_run_objects", kind="container", result="planned") == 2
    assert sum(v for _, v in series(s, "kubegc_objects_total")) == 0


def test_image_kind_and_evict_check_thresholds() -> None:
    from kubegc_cli.core.model import Image

    img = ImageAction(Image(id="sha256:aa", repo_tags=("x:1",), size=5000), 0, 0, "space", "lru",
                      Result.REMOVED)  # fmt: skip
    img.bytes_freed = 5000
    plan = Plan(kind="ImageGCPlan", policy={}, now=NOW, actions=[img], dry_run=False)
    s = run_samples(facts("gc images", result=plan))
    assert value(s, "kubegc_freed_bytes_total", command="gc images", kind="image") == 5000

    def result(signal: str, met: bool, hard: bool = True) -> Any:
        return SimpleNamespace(met=met, threshold=SimpleNamespace(signal=signal, hard=hard))

    rows = [result("memory.available", True), result("nodefs.available", False),
            result("imagefs.available", True, hard=False)]  # fmt: skip
    report = SimpleNamespace(results=rows, met=lambda: [r for r in rows if r.met])
    s = run_samples(facts("evict check", code=ExitCode.THRESHOLD_MET, result=report))
    met = {(lbl["signal"], lbl["type"]): v for lbl, v in series(s, "kubegc_eviction_threshold_met")}
    assert met == {("memory.available", "hard"): 1, ("nodefs.available", "hard"): 0,
                   ("imagefs.available", "soft"): 1}  # fmt: skip
    # a met threshold is what evict check found, not a failure of the check
    assert value(s, "kubegc_runs_total", result="success") == 1
    assert value(s, "kubegc_last_success_timestamp_seconds") == T0 + 5
    # exit 1 is a failure on every command, evict check's too
    failed = run_samples(facts("evict check", code=ExitCode.FAILED, result=report))
    assert value(failed, "kubegc_runs_total", result="failure") == 1


def test_residue_findings_by_type() -> None:
    def finding(t: str, safe: bool, size: int | None) -> Finding:
        return Finding(t, f"/x/{t}/{safe}/{size}", "why", size, safe, "rm")

    safe = [finding("orphaned-pod-dir", True, 4096), finding("orphaned-pod-dir", True, 100)]
    unsafe = [finding("leaked-netns", False, None), finding("orphaned-pod-dir", False, 7)]
    plan = ResiduePlan(kind="ResiduePlan", policy={}, now=NOW, actions=safe, kept=unsafe,
                       types=("orphaned-pod-dir", "leaked-netns", "leaked-cni-ip"))  # fmt: skip
    s = run_samples(facts("residue scan", result=plan))
    assert value(s, "kubegc_residue_findings", kind="orphaned-pod-dir", safe="true") == 2
    assert value(s, "kubegc_residue_findings", kind="orphaned-pod-dir", safe="false") == 1
    assert value(s, "kubegc_residue_findings", kind="leaked-netns", safe="false") == 1
    assert value(s, "kubegc_residue_findings", kind="leaked-cni-ip", safe="true") == 0
    assert value(s, "kubegc_residue_bytes", kind="orphaned-pod-dir") == 4203


def test_counters_add_up_and_a_failed_run_keeps_the_last_success(tmp_path: Path) -> None:
    path = tmp_path / "kubegc.prom"
    write_metrics(path, facts(result=gc_plan((Result.REMOVED, 10)), ended=T0 + 10))
    write_metrics(path, facts("residue scan", ended=T0 + 15))
    write_metrics(path, facts(result=gc_plan((Result.REMOVED, 5), (Result.FAILED, 0)), code=1,
                              ended=T0 + 20))  # fmt: skip
    write_metrics(path, facts(code=3, ended=T0 + 30))  # runtime down: no plan at all
    s = parse_samples(path.read_text())
    cmd = {"command": "gc containers"}
    assert value(s, "kubegc_objects_total", kind="container", result="removed", **cmd) == 2
    assert value(s, "kubegc_objects_total", kind="container", result="failed", **cmd) == 1
    assert value(s, "kubegc_freed_bytes_total", kind="container", **cmd) == 15
    assert value(s, "kubegc_runs_total", result="success", **cmd) == 1
    assert value(s, "kubegc_runs_total", result="failure", **cmd) == 2
    assert value(s, "kubegc_last_success_timestamp_seconds", **cmd) == T0 + 10
    assert value(s, "kubegc_last_run_timestamp_seconds", **cmd) == T0 + 30
    assert value(s, "kubegc_last_run_exit_code", **cmd) == 3
    # the last run had no plan: no last-run object gauges for it
    assert not [
        x for x in series(s, "kubegc_last_run_objects") if x[0]["command"] == "gc containers"
    ]
    # the other command's series are as it left them
    assert value(s, "kubegc_last_success_timestamp_seconds", command="residue scan") == T0 + 15
    assert value(s, "kubegc_runs_total", result="success", command="residue scan") == 1


def test_label_values_are_escaped_and_read_back() -> None:
    odd = 'gc "odd"\\name\nx'
    samples = run_samples(facts(odd))
    text = render(samples)
    assert parse_samples(text) == samples
    families = list(text_string_to_metric_families(text))
    assert {s.labels["command"] for f in families for s in f.samples} == {odd}


def test_a_damaged_previous_file_costs_its_values_only(tmp_path: Path) -> None:
    path = tmp_path / "kubegc.prom"
    path.write_bytes(b'kubegc_runs_total{command="gc containers",result="success"} 41\n'
                     b"garbage {{{\n\xff\xfe\nkubegc_runs_total{command=broken} 1\n")  # fmt: skip
    write_metrics(path, facts())
    s = parse_samples(path.read_text())
    assert value(s, "kubegc_runs_total", command="gc containers", result="success") == 42
    assert "garbage" not in path.read_text()


def test_write_is_atomic_world_readable_and_leaves_no_temp_file(tmp_path: Path) -> None:
    path = tmp_path / "kubegc.prom"
    path.write_text("old\n")
    old_inode = path.stat().st_ino
    write_metrics(path, facts())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kubegc.prom"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert path.stat().st_ino != old_inode  # replaced by rename, never rewritten in place


@pytest.mark.parametrize("planted", ["link", "fifo"])
def test_a_previous_file_that_is_not_a_regular_file_is_refused_at_once(
    tmp_path: Path, planted: str
) -> None:
    """In a textfile directory another user can write, the metrics file may be a link they
    planted (never followed: no file of theirs is read, none elsewhere written) or a FIFO
    (never waited on): a `MetricsError` naming it, at once."""
    victim = tmp_path / "victim"
    victim.write_text("secret\n")
    path = tmp_path / "kubegc.prom"
    if planted == "link":
        path.symlink_to(victim)
    else:
        os.mkfifo(path)
    began = time.monotonic()
    with pytest.raises(MetricsError, match=r"kubegc\.prom"):
        write_metrics(path, facts())
    assert time.monotonic() - began < 5
    assert victim.read_text() == "secret\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert path.is_symlink() if planted == "link" else stat.S_ISFIFO(path.lstat().st_mode)


def test_the_temp_file_is_made_0644_through_its_descriptor(tmp_path: Path) -> None:
    """The temp file's mode is set on the open file, never by name: a name another user swaps
    for a link between the write and the chmod changes nothing of theirs."""
    path = tmp_path / "kubegc.prom"
    with mock.patch("os.chmod", side_effect=AssertionError("chmod by name")):
        write_metrics(path, facts())
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_concurrent_writers_take_turns(tmp_path: Path) -> None:
    path = tmp_path / "kubegc.prom"
    errors: list[BaseException] = []

    def writer(cmd: str) -> None:
        try:
            for _ in range(15):
                write_metrics(path, facts(cmd))
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(c,)) for c in ("gc all", "gc all", "df")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    s = parse_samples(path.read_text())
    assert value(s, "kubegc_runs_total", command="gc all", result="success") == 30
    assert value(s, "kubegc_runs_total", command="df", result="success") == 15


def test_a_missing_directory_is_a_metrics_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(MetricsError, match=r"cannot write metrics file .*nope/k\.prom: no such"):
        write_metrics(tmp_path / "nope" / "k.prom", facts())


@pytest.mark.parametrize(
    ("value_", "why"),
    [("", "empty path"), ("  ", "empty path"), ("/tmp/kubegc.txt", "must be a file name ending"),
     ("/tmp/.prom", "must be a file name ending")],
)  # fmt: skip
def test_check_metrics_path_refuses_what_the_collector_would_not_read(
    value_: str, why: str
) -> None:
    from kubegc_cli.core.errors import BadInput

    with pytest.raises(BadInput, match=why):
        check_metrics_path(value_)


# --- the command line -----------------------------------------------------------------------


@pytest.fixture
def snapshot_file(tmp_path: Path) -> Path:
    snap = NodeSnapshot(
        captured_at=NOW,
        endpoint="unix:///run/containerd/containerd.sock",
        containers=(
            ctr("i0" * 8, name="init", attempt=0, age_s=300, log_bytes=1000),
            ctr("i1" * 8, name="init", attempt=1, age_s=200, log_bytes=500),
        ),
    )
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(snap.to_dict()))
    return f


def test_cli_writes_the_file_after_a_run(
    snapshot_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom = tmp_path / "kubegc.prom"
    code, out, err = run(["--snapshot", str(snapshot_file), "--metrics-file", str(prom),
                          "gc", "containers", "-o", "json"], capsys)  # fmt: skip
    assert code == 0 and err == ""
    assert json.loads(out)["kind"] == "ContainerGCPlan"
    s = parse_samples(prom.read_text())
    assert value(s, "kubegc_last_run_objects", kind="container", result="planned") == 1
    assert value(s, "kubegc_last_run_exit_code", command="gc containers") == 0


def test_cli_a_run_that_fails_still_writes_its_metrics(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom = tmp_path / "kubegc.prom"
    code, _, err = run(["--snapshot", str(tmp_path / "missing.json"), "--metrics-file", str(prom),
                        "gc", "containers"], capsys)  # fmt: skip
    assert code == 2 and err.count("\n") == 1
    s = parse_samples(prom.read_text())
    assert value(s, "kubegc_last_run_exit_code", command="gc containers") == 2
    assert value(s, "kubegc_runs_total", command="gc containers", result="failure") == 1


@pytest.mark.parametrize("bad", ["", "metrics.txt"])
def test_cli_bad_metrics_path_is_one_line_naming_it_exit_2(
    bad: str, snapshot_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["--snapshot", str(snapshot_file), "--metrics-file", bad,
                          "gc", "containers"], capsys)  # fmt: skip
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "--metrics-file" in err and repr(bad)[1:-1] in err


def test_cli_missing_metrics_directory_is_a_warning_after_the_work(
    snapshot_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A textfile directory that does not exist (a node without node_exporter) does not fail
    a run that did its work: one warning line, the run's own exit code."""
    prom = tmp_path / "no-such-dir" / "kubegc.prom"
    code, out, err = run(["--snapshot", str(snapshot_file), "--metrics-file", str(prom), "-o",
                          "json", "gc", "containers"], capsys)  # fmt: skip
    assert code == 0
    assert json.loads(out)["actions"]  # the plan was made and printed
    assert err == f"kubegc: cannot write metrics file {prom}: no such directory\n"
    assert not prom.parent.exists()


def test_cli_unwritable_metrics_file_keeps_a_failing_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run's own failure (here a runtime that cannot be reached, exit 3) is the exit
    code, the metrics file's a warning after it."""
    prom = tmp_path / "no-such-dir" / "kubegc.prom"
    code, _, err = run(["-r", f"unix://{tmp_path}/none.sock", "--state-dir", str(tmp_path / "st"),
                        "--metrics-file", str(prom), "gc", "containers", "--dry-run"],
                       capsys)  # fmt: skip
    lines = err.splitlines()
    assert code == 3 and len(lines) == 2, err
    assert lines[0].startswith("kubegc: error: ") and "none.sock" in lines[0]
    assert lines[1] == f"kubegc: cannot write metrics file {prom}: no such directory"


def test_cli_other_commands_are_reported_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom = tmp_path / "kubegc.prom"
    code, _, _ = run(["--state-dir", str(tmp_path / "st"), "--metrics-file", str(prom),
                      "history"], capsys)  # fmt: skip
    assert code == 0
    s = parse_samples(prom.read_text())
    assert value(s, "kubegc_last_run_exit_code", command="history") == 0


def test_help_writes_no_metrics_and_imports_no_heavy_module(tmp_path: Path) -> None:
    prom = tmp_path / "kubegc.prom"
    code = (
        "import sys; from kubegc_cli.cli.main import main\n"
        "try:\n    main(['--metrics-file', sys.argv[1], 'gc', 'containers', '--help'])\n"
        "except SystemExit as e:\n    assert e.code in (0, None), e.code\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('grpc', 'kubernetes')]\n"
        "assert not heavy, heavy\n"
    )
    res = subprocess.run([sys.executable, "-c", code, str(prom)], capture_output=True, text=True,
                         timeout=60)  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert not prom.exists()


# -- the kubelet's image GC metrics (pkg/kubelet/metrics, KEP-6053's draft) ------------------


def image_plan(*actions: tuple[str, Result, int], kept: tuple[str, ...] = (),
               prune: bool = False, shortfall: int = 0, dry_run: bool = False,
               usage: int | None = 91) -> Plan[ImageAction]:  # fmt: skip
    """A gc images plan: one image action per (rule, result, bytes freed), one kept image
    per rule in `kept`."""
    from kubegc_cli.core.model import Image

    acts = []
    for i, (rule, result, freed) in enumerate(actions):
        a = ImageAction(Image(f"sha256:a{i}", size=freed or 10), 0, 0, rule, "why", result)
        a.bytes_freed = freed
        acts.append(a)
    keep = [ImageAction(Image(f"sha256:k{i}"), 0, 0, rule, "why", Result.KEPT)
            for i, rule in enumerate(kept)]  # fmt: skip
    plan = Plan(kind="ImageGCPlan", policy={"prune_unused": prune}, now=NOW, actions=acts,
                kept=keep, dry_run=dry_run)  # fmt: skip
    plan.shortfall = shortfall
    plan.filesystem = {"usage_percent": usage}
    return plan


MI = 1024 * 1024
GC = {"command": "gc images", "operation": "garbage_collect", "trigger": "unknown"}


@pytest.mark.parametrize(
    ("plan", "result", "reason"),
    [
        (image_plan(("space", Result.REMOVED, 5 * MI)), "success", "threshold"),
        (image_plan(("max-age", Result.REMOVED, MI)), "success", "age"),
        (image_plan(), "noop", "threshold"),
        (image_plan(("space", Result.REMOVED, MI), shortfall=10), "partial",
         "insufficient_freed"),
        (image_plan(shortfall=10), "error", "insufficient_freed"),
        (image_plan(("max-age", Result.REMOVED, MI), ("max-age", Result.HELD_BACK, 0)),
         "partial", "insufficient_freed"),
        (image_plan(("space", Result.HELD_BACK, 0)), "error", "insufficient_freed"),
        (image_plan(("space", Result.REMOVED, MI), ("space", Result.FAILED, 0)), "error",
         "delete_error"),
    ],
)  # fmt: skip
def test_an_image_gc_attempt_by_result_and_reason(plan: Any, result: str, reason: str) -> None:
    s = run_samples(facts("gc images", result=plan))
    attempts = list(series(s, "kubelet_image_gc_attempts_total"))
    assert attempts == [({**GC, "result": result, "reason": reason}, 1.0)]
    labels = {**GC, "result": result, "reason": reason}
    assert value(s, "kubelet_image_gc_freed_bytes_count", **labels) == 1
    freed = sum(a.bytes_freed for a in plan.actions if a.result is Result.REMOVED)
    assert value(s, "kubelet_image_gc_freed_bytes_sum", **labels) == freed
    assert value(s, "kubelet_image_gc_image_fs_usage_percent", phase="before") == 91


def test_image_gc_deletions_skips_and_the_kubelets_own_counter() -> None:
    plan = image_plan(("space", Result.REMOVED, 3 * MI), ("max-age", Result.REMOVED, MI),
                      ("space", Result.FAILED, 0), ("space", Result.SKIPPED, 0),
                      kept=("in-use", "in-use", "min-age", "pinned", "protected", "unpullable",
                            "not-needed"))  # fmt: skip
    s = run_samples(facts("gc images", result=plan))
    collected = {lbl["reason"]: v for lbl, v in series(s, "kubelet_image_garbage_collected_total")}
    assert collected == {"space": 1, "age": 1}
    deletions = {(lbl["reason"], lbl["result"]): v
                 for lbl, v in series(s, "kubelet_image_gc_image_deletions_total")}  # fmt: skip
    assert deletions == {("space", "success"): 1, ("age", "success"): 1, ("space", "error"): 1}
    skipped = {lbl["reason"]: v for lbl, v in series(s, "kubelet_image_gc_skipped_images_total")}
    assert skipped == {"in_use": 2, "min_age": 1, "pinned": 1, "other": 2}
    buckets = {lbl["le"]: v for lbl, v in series(s, "kubelet_image_gc_freed_bytes_bucket")}
    assert buckets["1048576"] == 0 and buckets["10485760"] == 1 and buckets["+Inf"] == 1


def test_prune_and_reclaim_are_delete_unused_images_and_the_agent_periodic() -> None:
    plan = image_plan(("prune-unused", Result.REMOVED, MI), prune=True)
    s = run_samples(RunFacts("gc images", 0, T0, T0 + 1, 1.0, plan, trigger="periodic"))
    ((labels, n),) = series(s, "kubelet_image_gc_attempts_total")
    assert n == 1 and labels == {"command": "gc images", "operation": "delete_unused_images",
                                 "trigger": "periodic", "result": "success",
                                 "reason": "all_unused"}  # fmt: skip
    ((labels, n),) = series(s, "kubelet_image_gc_image_deletions_total")
    assert labels["reason"] == "all_unused" and labels["result"] == "success"
    # prune-unused has no reason in the kubelet's own counter
    assert {v for _, v in series(s, "kubelet_image_garbage_collected_total")} == {0}
    mixed = Plan(
        kind="ReclaimPlan",
        policy={},
        now=NOW,
        dry_run=False,
        actions=list(image_plan(("prune-unused", Result.REMOVED, MI)).actions),
    )
    s = run_samples(facts("reclaim", result=mixed))
    ((labels, _),) = series(s, "kubelet_image_gc_attempts_total")
    assert labels["operation"] == "delete_unused_images"


def test_a_dry_run_is_no_image_gc_attempt() -> None:
    s = run_samples(facts("gc images", result=image_plan(("space", Result.PLANNED, 0),
                                                         dry_run=True)))  # fmt: skip
    assert list(series(s, "kubelet_image_gc_attempts_total")) == []
    assert list(series(s, "kubelet_image_gc_freed_bytes_count")) == []
    assert {v for _, v in series(s, "kubelet_image_garbage_collected_total")} == {0}
    assert value(s, "kubelet_image_gc_image_fs_usage_percent", phase="before") == 91


def test_the_histogram_parses_and_its_counts_add_up_across_runs(tmp_path: Path) -> None:
    path = tmp_path / "kubegc.prom"
    plan = image_plan(("space", Result.REMOVED, 5 * MI))
    write_metrics(path, facts("gc images", result=plan))
    write_metrics(path, facts("gc images", result=image_plan(("space", Result.REMOVED, MI))))
    text = path.read_text()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    hist = families["kubelet_image_gc_freed_bytes"]
    assert hist.type == "histogram"
    got = {(s.name, s.labels.get("le")): s.value for s in hist.samples}
    assert got[("kubelet_image_gc_freed_bytes_count", None)] == 2
    assert got[("kubelet_image_gc_freed_bytes_sum", None)] == 6 * MI
    assert got[("kubelet_image_gc_freed_bytes_bucket", "1048576")] == 1
    assert got[("kubelet_image_gc_freed_bytes_bucket", "10485760")] == 2
    assert got[("kubelet_image_gc_freed_bytes_bucket", "+Inf")] == 2
    lines = [ln for ln in text.splitlines() if ln.startswith("kubelet_image_gc_freed_bytes")]
    bounds = [ln.split('le="')[1].split('"')[0] for ln in lines if "_bucket" in ln]
    assert bounds == [*(str(2**20 * 10**k) for k in range(6)), "+Inf"]  # ascending
    assert lines[-2].startswith("kubelet_image_gc_freed_bytes_sum")
    assert families["kubelet_image_garbage_collected"].type == "counter"


def test_gc_images_with_images_held_back_by_max_delete_is_a_partial_attempt(
    tmp_path: Path,
) -> None:
    from kubegc_cli.core.model import Image
    from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

    images = {f"sha256:{i}": Image(f"sha256:{i}", (f"quay.io/acme/app{i}:1",),
                                   (f"quay.io/acme/app{i}@sha256:{i:064x}",), size=100)
              for i in range(4)}  # fmt: skip
    prom = tmp_path / "kubegc.prom"
    cri = MemoryCri(containers={}, sandboxes={}, images=images)
    with use_runtime(cri):
        code, _, err = run_cli(["--host-root", str(tmp_path), "--state-dir", str(tmp_path / "s"),
                                "--metrics-file", str(prom), "gc", "images", "--prune-unused",
                                "--minimum-image-ttl-duration", "0s", "--allow-unpullable",
                                "--max-delete", "2", "--yes"])  # fmt: skip
    assert code == 0, err
    assert len(cri.removed) == 2
    s = parse_samples(prom.read_text())
    attempts = {(lbl["result"], lbl["reason"]): v
                for lbl, v in series(s, "kubelet_image_gc_attempts_total")}  # fmt: skip
    assert attempts == {("partial", "insufficient_freed"): 1}
