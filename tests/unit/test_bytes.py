"""One byte accounting for every command (`kubegc_cli.core.plan`): what a plan expects to free
(each row's `planned_bytes`, summed over the rows that go) and what a run measured (the
filesystems' regained space), the same in the table, the JSON, `kubegc history` and the
metrics file. Table tests on the sums; whole runs on an in-memory runtime (the real
containerd's case: tests/node/test_bytes.py)."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from kubegc_cli.core.model import ANNOTATION_RESTART_COUNT, Image, Sandbox, SandboxState
from kubegc_cli.core.plan import (
    ContainerAction,
    ImageAction,
    LogAction,
    Plan,
    Result,
    SandboxAction,
    attach_layers,
    expected_bytes,
    expected_is_estimate,
    measured_bytes,
)
from kubegc_cli.core.sizes import container_bytes
from kubegc_cli.core.units import format_bytes
from kubegc_cli.node.state import AuditLog, read_history
from kubegc_cli.render.plan import summary_line
from kubegc_cli.report.metrics import parse_samples
from tests.unit.factories import NOW, ctr
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

KiB = 1 << 10
MiB = 1 << 20


def sandbox(sid: str) -> Sandbox:
    return Sandbox(sid, "pod", "default", "uid-p", 0, SandboxState.NOTREADY, NOW)


@pytest.mark.parametrize(
    ("log", "layer", "want"),
    [(None, None, 0), (300, None, 300), (None, 4096, 4096), (300, 4096, 4396), (0, 0, 0)],
)
def test_a_dead_container_is_expected_to_free_its_layer_and_its_logs(
    log: int | None, layer: int | None, want: int
) -> None:
    """As `kubegc df` counts a dead container: writable layer + logs, unknown parts as 0."""
    assert container_bytes(log, layer) == want
    a = ContainerAction(ctr("c1", log_bytes=log), "r", "why", layer_bytes=layer)
    assert a.planned_bytes == want
    assert a.to_dict()["expected_bytes"] == want
    assert a.to_dict()["writable_layer_bytes"] == layer
    assert json.loads(a.json_row()) == a.to_dict()  # the fast row says the same


@pytest.mark.parametrize(
    ("result", "counts"),
    [
        (Result.PLANNED, True),  # still to go (a dry run)
        (Result.REMOVED, True),  # gone (after acting)
        (Result.SKIPPED, False),  # changed since the plan: frees nothing
        (Result.FAILED, False),
        (Result.HELD_BACK, False),  # a cap or a target kept it
    ],
)
def test_expected_bytes_count_the_rows_that_go(result: Result, counts: bool) -> None:
    rows = [
        ContainerAction(ctr("c1", log_bytes=100), "r", "why", result, layer_bytes=1000),
        LogAction("pod-log-dir", "/p", "/p", "u", "r", "why", bytes=10, result=result),
        SandboxAction(sandbox("s1"), "r", "why", result=result),
    ]
    want = 1110 if counts else 0
    assert expected_bytes(rows) == want
    plan: Plan[Any] = Plan(kind="GCPlan", policy={}, now=NOW, actions=rows)
    assert plan.summary()["bytes_expected"] == want
    assert plan.to_dict()["summary"]["bytes_expected"] == sum(
        a["expected_bytes"] for a in plan.to_dict()["actions"] if a["result"] in ("planned",
                                                                                   "removed")
    )  # fmt: skip


def image(result: Result = Result.PLANNED, size: int = 5 * MiB) -> ImageAction:
    return ImageAction(Image(id="sha256:aa", repo_tags=("x:1",), size=size), 0, 0, "r", "why",
                       result)  # fmt: skip


@pytest.mark.parametrize(
    ("rows", "upper"),
    [
        ([], False),
        ([ContainerAction(ctr("c1"), "r", "why")], False),
        ([image()], True),  # an image's CRI size counts layers shared with images that stay
        ([image(Result.REMOVED)], True),
        ([image(Result.SKIPPED)], False),  # not among what goes
        ([ContainerAction(ctr("c1"), "r", "why"), image(Result.HELD_BACK)], False),
    ],
)
def test_expected_is_an_estimate_when_an_image_goes(rows: list[Any], upper: bool) -> None:
    assert expected_is_estimate(rows) is upper
    plan: Plan[Any] = Plan(kind="ImageGCPlan", policy={}, now=NOW, actions=rows)
    assert plan.summary()["bytes_expected_is_estimate"] is upper
    assert ("(image sizes as the runtime reports them)" in summary_line(plan)) is upper


def fs(regained: int | None) -> dict[str, Any]:
    return {"roles": ["logs"], "path": "/x", "capacity": MiB, "available_before": 0,
            "available_after": regained, "regained": regained}  # fmt: skip


@pytest.mark.parametrize(
    ("filesystems", "want"),
    [([], None), ([fs(None)], None), ([fs(0)], 0), ([fs(5), fs(None), fs(7)], 12)],
)
def test_measured_is_what_the_filesystems_regained(
    filesystems: list[dict[str, Any]], want: int | None
) -> None:
    assert measured_bytes(filesystems) == want
    plan: Plan[Any] = Plan(kind="GCPlan", policy={}, now=NOW, filesystems=filesystems)
    assert plan.summary()["bytes_measured"] == want
    assert plan.to_dict()["filesystems"] == filesystems


def test_writable_layers_are_attached_to_container_rows_only() -> None:
    rows: list[Any] = [ContainerAction(ctr("c1"), "r", "why"), ContainerAction(ctr("c2"), "r", "w"),
                       SandboxAction(sandbox("s1"), "r", "why")]  # fmt: skip
    attach_layers(rows, {"c1": (4096, 3), "c2": (None, None)})
    assert [getattr(a, "layer_bytes", "-") for a in rows] == [4096, None, "-"]


@pytest.mark.parametrize(
    ("layers", "noted"), [((0, 1), True), ((4096, 1), False), ((None, None), False)]
)
def test_a_layer_reported_as_0_bytes_is_said_to_be_maybe_not_measured_yet(
    layers: tuple[int | None, int | None], noted: bool
) -> None:
    """containerd reports a container's writable layer as 0 until it has measured it (every
    10 s): a plan with such a row says its bytes expected may be low."""
    from kubegc_cli.core.pods import NO_POD_SOURCE
    from kubegc_cli.policy.containers import ContainerGCPolicy, plan_containers

    dead = [ctr(f"c{i}", uid="u1", attempt=i, age_s=900 - i, log_bytes=KiB) for i in range(3)]
    plan = plan_containers(dead, ContainerGCPolicy(), NO_POD_SOURCE, NOW,
                           layers={c.id: layers for c in dead})  # fmt: skip
    assert plan.actions
    said = [n for n in plan.notes if "report a writable layer of 0 bytes" in n]
    assert bool(said) is noted, plan.notes
    if noted:
        assert said[0].startswith(f"{len(plan.actions)} container(s) to remove report")


def test_a_stale_saved_plan_whose_rows_are_all_skipped_has_nothing_to_remove() -> None:
    """`apply --dry-run` on a plan every object of which changed: the headline is computed
    from the rows it sums — nothing goes, nothing is expected."""
    rows = [ContainerAction(ctr(f"c{i}", log_bytes=KiB), "r", "why", Result.SKIPPED, "gone")
            for i in range(19)]  # fmt: skip
    plan: Plan[Any] = Plan(kind="ContainerGCPlan", policy={}, now=NOW, actions=rows)
    assert summary_line(plan) == (
        "0 container(s) to remove, 0B expected, 19 skipped (changed since the plan); 0 kept."
    )


def test_after_acting_the_headline_says_expected_and_measured() -> None:
    rows = [
        ContainerAction(ctr("c1", log_bytes=KiB), "r", "why", Result.REMOVED, layer_bytes=KiB),
        ContainerAction(ctr("c2", log_bytes=KiB), "r", "why", Result.FAILED, "boom"),
    ]
    plan: Plan[Any] = Plan(kind="ContainerGCPlan", policy={}, now=NOW, actions=rows,
                           dry_run=False)  # fmt: skip
    assert summary_line(plan).endswith("; 2Ki expected, not measured.")
    plan.filesystems = [fs(3 * KiB)]
    assert summary_line(plan).endswith("; 2Ki expected, 3Ki regained (measured).")


# --- whole runs on an in-memory runtime ----------------------------------------------------

POD_LOGS = "var/log/pods/default_pod-uid-p_uid-p/app"


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Path]:
    """A host root with the kubelet's pod log directory of one pod: three dead attempts of
    its container `app`, each with a log of (i + 1) × 4 KiB."""
    root = tmp_path / "host"
    logs = root / POD_LOGS
    logs.mkdir(parents=True)
    for i in range(3):
        (logs / f"{i}.log").write_bytes(b"x" * (i + 1) * 4 * KiB)
    env = {k: v for k, v in os.environ.items() if k != "CONTAINER_RUNTIME_ENDPOINT"}
    with mock.patch.dict(os.environ, env, clear=True):
        yield root


def node() -> MemoryCri:
    """Three dead attempts of one container, each with a writable layer: the two oldest are
    garbage (no pod source)."""
    cs = [replace(ctr(f"dead000{i}", attempt=i, age_s=900 - 100 * i),
                  annotations={ANNOTATION_RESTART_COUNT: str(i)}) for i in range(3)]  # fmt: skip
    return MemoryCri({c.id: c for c in cs}, {}, layers={c.id: (i + 1) * MiB
                                                     for i, c in enumerate(cs)})  # fmt: skip


def kubegc(host: Path, *args: str) -> tuple[int, str, str]:
    state = host.parent / "state"
    metrics = str(host.parent / "kubegc.prom")
    return run_cli(["--host-root", str(host), "--state-dir", str(state), "--pod-source", "none",
                    "--now", "2027-01-15T08:00:00Z", "--metrics-file", metrics, *args])  # fmt: skip


def test_gc_containers_table_json_history_and_metrics_say_the_same_figures(host: Path) -> None:
    """A dry run's table and JSON expect each removal's writable layer and log; a run that
    acts reports what those rows expected and what statvfs measured, and `history -o json`,
    `history`'s table and the metrics file give the same two figures."""
    cri = node()
    with use_runtime(cri):
        code, out, err = kubegc(host, "gc", "containers", "--dry-run", "-o", "json")
        assert code == 0, err
        dry = json.loads(out)
        code, table, err = kubegc(host, "gc", "containers", "--dry-run")
        assert code == 0, err
        code, out, err = kubegc(host, "gc", "containers", "--yes", "-o", "json")
        assert code == 0, err
    assert sorted(cri.removed) == ["dead0000", "dead0001"]
    rows = {a["id"]: a for a in dry["actions"]}
    blocks = {i: os.stat(host / POD_LOGS / f"{i}.log").st_blocks * 512 for i in range(3)}
    assert {cid: (a["writable_layer_bytes"], a["log_bytes"], a["expected_bytes"])
            for cid, a in rows.items()} == {
        "dead0000": (MiB, blocks[0], MiB + blocks[0]),
        "dead0001": (2 * MiB, blocks[1], 2 * MiB + blocks[1]),
    }  # fmt: skip
    total = sum(a["expected_bytes"] for a in dry["actions"])
    assert dry["summary"]["bytes_expected"] == total and dry["summary"]["bytes_measured"] is None
    for a in dry["actions"]:  # each row's cell, and the headline its sum
        assert any(a["id"][:13] in ln and format_bytes(a["expected_bytes"]) in ln
                   for ln in table.splitlines()), table  # fmt: skip
    assert f"2 container(s) to remove, {format_bytes(total)} expected;" in table

    done = json.loads(out)
    s = done["summary"]
    assert s["bytes_expected"] == total  # what the removed rows expected
    assert isinstance(s["bytes_measured"], int) and s["bytes_measured"] >= 0
    assert s["bytes_measured"] == sum(f["regained"] for f in done["filesystems"])
    roles = {r for f in done["filesystems"] for r in f["roles"]}
    assert {"logs", "containerfs"} <= roles  # the pod logs and where the layers live

    code, out, err = kubegc(host, "history", "-o", "json")
    assert code == 0, err
    [run] = json.loads(out)["items"]
    assert (run["bytes_expected"], run["bytes_measured"]) == (total, s["bytes_measured"])
    assert run["filesystems"] == done["filesystems"]
    assert {a["id"]: a["bytes_expected"] for a in run["actions"]} == {
        cid: a["expected_bytes"] for cid, a in rows.items()
    }
    code, table, err = kubegc(host, "history")
    assert code == 0, err
    line = next(ln for ln in table.splitlines() if run["run_id"] in ln)
    assert format_bytes(total) in line and format_bytes(s["bytes_measured"]) in line

    samples = parse_samples((host.parent / "kubegc.prom").read_text())

    def sample(name: str, **labels: str) -> float:
        want = {"command": "gc containers", **labels}
        return sum(v for (n, lbl), v in samples.items() if n == name and dict(lbl) == want)

    assert sample("kubegc_last_run_expected_bytes", kind="container") == total
    assert sample("kubegc_last_run_measured_bytes") == s["bytes_measured"]
    assert sample("kubegc_measured_bytes_total") == s["bytes_measured"]


def test_a_dry_run_measures_nothing_and_records_nothing(host: Path) -> None:
    with use_runtime(node()):
        code, out, err = kubegc(host, "gc", "containers", "--dry-run", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["filesystems"] == [] and doc["summary"]["bytes_measured"] is None
    assert read_history(host.parent / "state", 5) == []


def test_runs_recorded_before_the_figures_were_kept_read_as_unknown(tmp_path: Path) -> None:
    """A state store from before rows carried their expected bytes: the column is added when
    it is next written, the old run reads as unknown ("?" in the table), the new one whole."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    con = sqlite3.connect(state / "state.db")
    con.execute(
        "CREATE TABLE audit (run_id TEXT NOT NULL, at TEXT NOT NULL, command TEXT NOT NULL, "
        "kind TEXT NOT NULL, object_id TEXT NOT NULL, rule TEXT NOT NULL, reason TEXT NOT "
        "NULL, result TEXT NOT NULL, error TEXT NOT NULL, bytes_freed INTEGER NOT NULL)"
    )
    con.execute("INSERT INTO audit VALUES ('old', '2027-01-01T00:00:00Z', 'gc logs', "
                "'pod-log-dir', '/p', 'r', 'why', 'removed', '', 7)")  # fmt: skip
    con.commit()
    con.close()
    assert [r["bytes_expected"] for r in read_history(state, 5)] == [None]
    a = ContainerAction(ctr("c1", log_bytes=10), "r", "why", Result.REMOVED, layer_bytes=90)
    log = AuditLog(state, "gc containers", NOW + 1)
    log.add(a)
    log.finish([a], totals=(100, 64, [fs(64)]))
    new, old = read_history(state, 5)
    assert (new["bytes_expected"], new["bytes_measured"], new["filesystems"]) == (100, 64, [fs(64)])
    assert new["actions"][0]["bytes_expected"] == 100
    assert (old["bytes_expected"], old["bytes_measured"], old["bytes_freed"]) == (None, None, 7)
    code, out, err = run_cli(["--state-dir", str(state), "history"])
    assert code == 0, err
    line = next(ln for ln in out.splitlines() if " old" in ln)
    assert line.split()[-3:-1] == ["?", "?"]


@pytest.mark.parametrize(
    ("signal", "logs_dev", "image_dev", "counted"),
    [
        ("nodefs.available", 1, 2, 100),  # the log is on nodefs, the layer elsewhere
        ("imagefs.available", 1, 2, 1000),  # the layer on imagefs, the log elsewhere
        ("imagefs.available", 2, 2, 1100),  # one filesystem holds both
        ("nodefs.available", 1, 1, 1100),
    ],
)
def test_a_reclaim_target_counts_a_containers_log_and_layer_where_each_lives(
    signal: str, logs_dev: int, image_dev: int, counted: int
) -> None:
    """`reclaim --until`: a dead container's expected bytes are its log (on the pod log
    root) and its writable layer (on imagefs); each counts toward a target only on its own
    filesystem."""
    from kubegc_cli.commands.reclaim import ReclaimPlan, apply_target
    from kubegc_cli.node.host.fs import FsStats
    from kubegc_cli.policy.reclaim import parse_until

    def st(dev: int) -> FsStats:
        return FsStats(f"/dev{dev}", 100 * MiB, 10 * MiB, 0, 0, 10 * MiB, dev)

    a = ContainerAction(ctr("c1", log_bytes=100), "r", "why", layer_bytes=1000)
    plan = ReclaimPlan(kind="ReclaimPlan", policy={}, now=NOW, actions=[a])
    before = {"nodefs": st(1), "logs": st(logs_dev), "imagefs": st(image_dev)}
    apply_target(plan, parse_until(f"{signal}>99%"), before)  # (cannot be met: all taken)
    assert plan.target is not None and plan.target["plannable"] == counted
