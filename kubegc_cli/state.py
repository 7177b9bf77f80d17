"""kubegc's local state directory: the per-node run lock and the audit log.

Layout under `--state-dir` (default `/var/lib/kubegc`):

- `lock`: held (flock, exclusive) for the whole of any run that changes the node, so two
  kubegc runs (a cron job and a person) never act at once.
- `state.db`: SQLite, table `audit` — one row per action a run carried out or tried: run id,
  time (RFC 3339), command, kind, object id, rule, reason, result, error, bytes freed.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kubegc_cli.errors import BadInput, Busy
from kubegc_cli.plan import Action
from kubegc_cli.units import ns_to_rfc3339

DEFAULT_STATE_DIR = "/var/lib/kubegc"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS audit (
    run_id TEXT NOT NULL,
    at TEXT NOT NULL,
    command TEXT NOT NULL,
    kind TEXT NOT NULL,
    object_id TEXT NOT NULL,
    rule TEXT NOT NULL,
    reason TEXT NOT NULL,
    result TEXT NOT NULL,
    error TEXT NOT NULL,
    bytes_freed INTEGER NOT NULL
)
"""


def _ensure_dir(state_dir: Path) -> None:
    try:
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise BadInput(f"cannot create state dir {state_dir}: {exc.strerror or exc}") from None


@contextmanager
def node_lock(state_dir: Path) -> Iterator[None]:
    """Hold the node's run lock for the block. Raises `Busy` if another run holds it."""
    _ensure_dir(state_dir)
    path = state_dir / "lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise BadInput(f"cannot open lock file {path}: {exc.strerror or exc}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another kubegc run holds {path}; try again when it finishes") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield
    finally:
        os.close(fd)


def record_audit(state_dir: Path, command: str, at_ns: int, actions: Iterable[Action]) -> str:
    """Append one audit row per action to `state.db`; returns the run id."""
    import sqlite3
    import uuid

    _ensure_dir(state_dir)
    run_id = uuid.uuid4().hex[:12]
    at = ns_to_rfc3339(at_ns)
    rows = [
        (
            run_id,
            at,
            command,
            a.kind,
            a.id,
            a.rule,
            a.reason,
            a.result.value,
            a.error,
            a.bytes_freed,
        )
        for a in actions
    ]
    con = sqlite3.connect(state_dir / "state.db", timeout=10)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        with con:
            con.execute(_SCHEMA)
            con.executemany("INSERT INTO audit VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    finally:
        con.close()
    return run_id
