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
from contextlib import suppress
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

import kubegc_cli.node.state as state
from kubegc_cli.node.state import read_history
from kubegc_cli.report.run import Run, report_run
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
    # one try as the first removal completed (the second came within the retry interval),
    # then one at the end and one after each pause
    assert disk.tries == 2 + len(state.AUDIT_RETRY_DELAYS) and pauses == list(
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


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A tiny tmpfs (mode 0700) with neither a byte nor an inode left: nothing can be created
    in it, not even a directory."""
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    mnt = tmp_path / "full"
    mnt.mkdir()
    opts = "size=64k,nr_inodes=16,mode=0700"
    if subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)]).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        with open(mnt / "filler", "wb", buffering=0) as f, suppress(OSError):
            while f.write(b"\0" * 4096):
                pass
        n = 0
        with suppress(OSError):
            while True:
                (mnt / f"inode{n}").touch()
                n += 1
        with pytest.raises(OSError, match="No space left"):
            (mnt / "probe").mkdir()
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_a_state_dir_that_cannot_be_made_on_a_full_disk_stops_no_cleanup(
    argv: list[str], tmp_path: Path, full_tmpfs: Path
) -> None:
    """A node where kubegc never ran, under disk pressure: the state dir cannot be created.
    The run takes the node lock (on /run, under --host-root), says so, removes, keeps its audit
    rows in memory and tries them again; still unwritten, they are the one error line, exit 1."""
    state_dir = full_tmpfs / "kubegc"
    argv = [a if a != str(tmp_path / "state") else str(state_dir) for a in argv]
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli([*argv, "gc", "containers", "--yes", "-o", "json"])
    assert sorted(cri.removed) == ["dead0000", "dead0001"]  # the full disk stopped nothing
    assert code == 1, err
    warning, error = err.splitlines()
    assert warning.startswith(f"kubegc: cannot create --state-dir {state_dir}: ")
    assert "No space left on device" in warning and "audit rows are kept in memory" in warning
    assert error.startswith(f"kubegc: error: audit rows of this run not written to --state-dir "
                            f"{state_dir}: ")  # fmt: skip
    assert [a["result"] for a in json.loads(out)["actions"]] == ["removed", "removed"]
    assert (tmp_path / "host" / "run" / "kubegc" / "lock").exists()  # the lock it held
