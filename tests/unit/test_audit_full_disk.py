"""A full disk under `--state-dir` (ENOSPC injected where the store opens `state.db`): the
removals go ahead, the audit rows are tried again after them, and rows that still cannot be
written are one error line naming the state dir, exit 1, with every result still reported.
(tests/node/test_audit_full_disk.py fills a real tmpfs against a real containerd.)
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import kubegc_cli.state as state
from kubegc_cli.report.run import Run, report_run
from kubegc_cli.state import read_history
from tests.unit.factories import ctr
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime


def node() -> MemoryCri:
    """Three dead attempts of one container: the two oldest are garbage (no pod source)."""
    cs = [ctr(f"dead000{i}", attempt=i, age_s=900 - 100 * i) for i in range(3)]
    return MemoryCri({c.id: c for c in cs}, {})


@pytest.fixture
def argv(tmp_path: Path) -> Iterator[list[str]]:
    (tmp_path / "host").mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CONTAINER_RUNTIME_ENDPOINT"}
    with mock.patch.dict(os.environ, env, clear=True):
        yield ["--host-root", str(tmp_path / "host"), "--state-dir", str(tmp_path / "state"),
               "--now", "2027-01-15T08:00:00Z", "--pod-source", "none"]  # fmt: skip


class FullDisk:
    """Opening `state.db` for writing fails with ENOSPC for the first `fails` tries."""

    def __init__(self, fails: int) -> None:
        self.fails = fails
        self.tries = 0
        self.real = state._open_write

    def __call__(self, state_dir: Path) -> sqlite3.Connection:
        self.tries += 1
        if self.tries <= self.fails:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return self.real(state_dir)


def test_rows_that_cannot_be_written_are_one_line_and_exit_1(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = FullDisk(fails=99)
    pauses: list[float] = []
    monkeypatch.setattr(state, "_open_write", disk)
    monkeypatch.setattr(state.time, "sleep", pauses.append)
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli([*argv, "gc", "containers", "--yes", "-o", "json"])
    assert sorted(cri.removed) == ["dead0000", "dead0001"]  # the full disk stopped nothing
    assert code == 1
    db = tmp_path / "state" / "state.db"
    line = (
        f"audit rows of this run not written to --state-dir {tmp_path / 'state'}: "
        f"cannot use {db}: No space left on device"
    )
    assert err == f"kubegc: error: {line}\n"
    doc = json.loads(out)  # the report is whole: every result, and the note
    assert [(a["id"], a["result"]) for a in doc["actions"]] == [
        ("dead0000", "removed"),
        ("dead0001", "removed"),
    ]
    assert line in doc["notes"]
    assert disk.tries == 1 + len(state.AUDIT_RETRY_DELAYS) and pauses == list(
        state.AUDIT_RETRY_DELAYS
    )


def test_room_found_on_a_later_try_is_a_normal_run(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = FullDisk(fails=1)
    monkeypatch.setattr(state, "_open_write", disk)
    monkeypatch.setattr(state.time, "sleep", lambda _: None)
    cri = node()
    with use_runtime(cri):
        code, _, err = run_cli([*argv, "gc", "containers", "--yes"])
    assert (code, err) == (0, "") and disk.tries == 2
    [run] = read_history(tmp_path / "state", 5)
    assert run["command"] == "gc containers" and run["by_result"] == {"removed": 2}


def test_a_dry_run_writes_no_rows_and_is_not_failed(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    disk = FullDisk(fails=99)
    monkeypatch.setattr(state, "_open_write", disk)
    cri = node()
    with use_runtime(cri):
        code, _, err = run_cli([*argv, "gc", "containers", "--dry-run"])
    assert (code, err, disk.tries, cri.removed) == (0, "", 0, [])


def test_a_failing_exit_code_is_kept() -> None:
    said: list[tuple[str, str]] = []
    run: Any = Run(started=0.0, started_mono=0.0, audit_error="rows not written to /s: full")
    assert report_run(run, 0, say=lambda level, m: said.append((level, m))) == 1
    assert report_run(run, 130, say=lambda level, m: said.append((level, m))) == 130
    assert said == [("error", "rows not written to /s: full")] * 2
    assert report_run(Run(started=0.0, started_mono=0.0), 0, say=lambda *a: said.append(a)) == 0
