"""kubegc's local state directory: the per-node run lock and the audit log.

Layout under `--state-dir` (default `/var/lib/kubegc`):

- `lock`: held (flock, exclusive) for the whole of any run that changes the node, so two
  kubegc runs (a cron job and a person) never act at once.
- `state.db`: SQLite in WAL mode with a busy timeout, so concurrent runs neither corrupt nor
  block it for long. Table `audit` — one row per action a run carried out or tried: run id,
  time (RFC 3339), command, kind, object id, rule, reason, result, error, bytes freed. Table
  `images` — per image ID, first detected and last used (ns since the epoch; 0 = never used).
  Table `meta` — `began`, when kubegc first collected on this node (gates MaxAge).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegc_cli.errors import BadInput, Busy
from kubegc_cli.plan import Action
from kubegc_cli.units import ns_to_rfc3339

if TYPE_CHECKING:
    from kubegc_cli.policy.images import ImageRecord

DEFAULT_STATE_DIR = "/var/lib/kubegc"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS images (
    id TEXT PRIMARY KEY,
    first_detected INTEGER NOT NULL,
    last_used INTEGER NOT NULL
);
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
);
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


def _connect(state_dir: Path, warn: Callable[[str], None] | None = None) -> Any:
    """Open `state.db` (WAL, busy timeout, schema created). A file that is not a usable
    SQLite database is moved aside (`state.db.corrupt-<time>`) with a warning, and a fresh one
    is started: losing image memory is better than refusing to run."""
    import sqlite3

    _ensure_dir(state_dir)
    path = state_dir / "state.db"
    for attempt in (1, 2):
        con = sqlite3.connect(path, timeout=10)
        try:
            con.execute("PRAGMA journal_mode=WAL")
            with con:
                con.executescript(_SCHEMA)
            return con
        except sqlite3.DatabaseError as exc:
            con.close()
            if attempt == 2:
                raise BadInput(f"cannot use state database {path}: {exc}") from None
            aside = path.with_name(f"state.db.corrupt-{int(time.time())}")
            os.replace(path, aside)
            for suffix in ("-wal", "-shm"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(str(path) + suffix)
            if warn is not None:
                warn(f"state database {path} was unreadable ({exc}); moved to {aside}")
    raise AssertionError("unreachable")  # pragma: no cover


def record_audit(state_dir: Path, command: str, at_ns: int, actions: Iterable[Action]) -> str:
    """Append one audit row per action to `state.db`; returns the run id."""
    import uuid

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
    con = _connect(state_dir)
    try:
        with con:
            con.executemany("INSERT INTO audit VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    finally:
        con.close()
    return run_id


def load_image_records(
    state_dir: Path, now: int, warn: Callable[[str], None] | None = None
) -> tuple[dict[str, ImageRecord], int]:
    """The remembered image records and when kubegc first collected on this node (`began`,
    ns since the epoch; set to `now` on the first run). The kubelet keeps both in memory and
    forgets them on restart; kubegc keeps them here across runs."""
    from kubegc_cli.policy.images import ImageRecord

    con = _connect(state_dir, warn)
    try:
        with con:
            con.execute("INSERT OR IGNORE INTO meta VALUES ('began', ?)", (str(now),))
        began = int(con.execute("SELECT value FROM meta WHERE key = 'began'").fetchone()[0])
        records = {
            iid: ImageRecord(first, last)
            for iid, first, last in con.execute("SELECT id, first_detected, last_used FROM images")
        }
    finally:
        con.close()
    return records, began


def save_image_records(state_dir: Path, records: Mapping[str, ImageRecord]) -> None:
    """Replace the remembered image records with `records` (images no longer listed are
    forgotten, as the kubelet drops their records)."""
    con = _connect(state_dir)
    try:
        with con:
            con.execute("DELETE FROM images")
            con.executemany(
                "INSERT INTO images VALUES (?,?,?)",
                [(iid, r.first_detected, r.last_used) for iid, r in records.items()],
            )
    finally:
        con.close()


def read_history(state_dir: Path, runs: int) -> list[dict[str, Any]]:
    """The last `runs` runs recorded in `state.db`, newest first, each with its actions.

    A missing state dir or database is an empty history.
    """
    if not (state_dir / "state.db").exists():
        return []
    con = _connect(state_dir)
    try:
        latest = con.execute(
            "SELECT run_id, MIN(at), command FROM audit GROUP BY run_id "
            "ORDER BY MIN(at) DESC, MIN(rowid) DESC LIMIT ?",
            (runs,),
        ).fetchall()
        out = []
        for run_id, at, command in latest:
            rows = con.execute(
                "SELECT kind, object_id, rule, reason, result, error, bytes_freed FROM audit "
                "WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            ).fetchall()
            actions = [
                dict(zip(("kind", "id", "rule", "reason", "result", "error", "bytes_freed"), r,
                         strict=True))
                for r in rows
            ]  # fmt: skip
            counts: dict[str, int] = {}
            for a in actions:
                counts[a["result"]] = counts.get(a["result"], 0) + 1
            out.append(
                {
                    "run_id": run_id,
                    "at": at,
                    "command": command,
                    "by_result": counts,
                    "bytes_freed": sum(a["bytes_freed"] for a in actions),
                    "actions": actions,
                }
            )
        return out
    finally:
        con.close()
