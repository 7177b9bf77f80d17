"""kubegc's local state directory: the audit log, the image records, the run locks.

Layout under `--state-dir` (default `/var/lib/kubegc`), made mode 0700 when missing:

- `lock`: held (flock, exclusive) from before the plan to the end of any run that may change
  the node, after the node-wide `<host-root>/run/kubegc/lock` (the same file for every run on
  the node, whatever its `--state-dir`; on tmpfs, so taken even on a full disk), so two
  kubegc runs (a cron job and a person) never act at once; each holds the holder's pid,
  which a run that finds it taken names in its error (exit 4).
- `state.db`: SQLite in WAL mode with a busy timeout, so concurrent runs neither corrupt nor
  block it for long. Table `audit` — one row per action a run carried out or tried, written
  as the action completes (`AuditLog`): run id, time (RFC 3339), command, kind, object id,
  rule, reason, result, error, bytes freed, bytes expected (what removing it was expected
  to free: `planned_bytes`). Table `runs` — per run that acted, the bytes its plan expected
  to free and the bytes its filesystems regained, measured (statvfs before and after), and
  those filesystems (JSON), written with its last audit rows. Table `images` — per image
  ID, first detected and last used (ns since the epoch; 0 = never used). Table `meta` —
  `began`, when kubegc first collected on this node (gates MaxAge).
- `runtime-fs.json`: the runtime's image and container filesystem mountpoints as `evict check`
  last learned them, per runtime endpoint and runtime socket (`kubegc_cli.node.cri.fscache`);
  `events.json`: when each Event was last posted (`kubegc_cli.report.events`).

The directory cannot be turned against the user running kubegc (root): one that another user
could change (`safe_dir`: not owned by this user, writable by group or others, or below a
directory that is) is `BadInput` (exit 2) naming it with its owner and mode, before a run does
anything; no file of kubegc's there is opened through a symbolic link (`open_in`; SQLite's
files are checked before it opens them, and nobody else can plant one after): a link is
`BadInput`, or replaced by a rename, never written, truncated or created through.

Failures of the store:

- A damaged `state.db` (not a database, or malformed pages, found at any point of any
  operation) is moved aside to `state.db.corrupt-<unix seconds>` (with its `-wal`), a warning
  names both, and the operation is retried once on a fresh database: losing image memory is
  better than refusing to run.
- A store kubegc cannot write (read-only filesystem, permission denied) or cannot use for now
  (locked past the busy timeout, I/O error) is `StateUnavailable` (exit 2). It is never taken
  for damage, so nothing is moved aside; readers fall back to opening the file read-only.
- A `--state-dir` that is not a directory, or a `state.db` that is not a regular file, is
  `BadInput` (exit 2) naming the path.
- A full disk never stops a run that removes: a state dir that cannot be made for lack of
  space is a warning (the node-wide lock on `/run` suffices), and audit rows that cannot be
  written wait in memory, tried again with later rows and after the removals
  (`AuditLog.finish`), since the removals may have made room; rows that still cannot be
  written are the caller's to report (`commands.flow` makes that exit 1, with every result
  still shown).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from kubegc_cli.core.errors import BadInput, Busy
from kubegc_cli.core.model import ImageRecord
from kubegc_cli.core.plan import Action
from kubegc_cli.core.units import escaped_char, ns_to_rfc3339

if TYPE_CHECKING:
    import sqlite3


DB_NAME = "state.db"
BUSY_TIMEOUT_SECONDS = 10

Warn = Callable[[str], None]
T = TypeVar("T")


class StateUnavailable(BadInput):
    """The state store cannot be written or used for now: read-only filesystem, permission
    denied, locked past the busy timeout, I/O error, full disk (`full` True). Not damage:
    nothing was moved aside. Exit code 2."""

    def __init__(self, message: str, *, full: bool = False) -> None:
        super().__init__(message)
        self.full = full


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
    bytes_freed INTEGER NOT NULL,
    bytes_expected INTEGER
);
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    bytes_expected INTEGER NOT NULL,
    bytes_measured INTEGER,
    filesystems TEXT NOT NULL
);
"""
#: The audit table's columns, in the order its rows are written.
_AUDIT_COLUMNS = ("run_id", "at", "command", "kind", "object_id", "rule", "reason", "result",
                  "error", "bytes_freed", "bytes_expected")  # fmt: skip


def _add_expected_column(con: sqlite3.Connection) -> None:
    """Give an audit table made before rows carried their expected bytes that column (its
    old rows: NULL, unknown)."""
    columns = {r[1] for r in con.execute("PRAGMA table_info(audit)")}
    if "bytes_expected" not in columns:
        con.execute("ALTER TABLE audit ADD COLUMN bytes_expected INTEGER")


def _stderr_warn(message: str) -> None:
    """Where warnings go when the caller gives no `warn`: stderr, as the command line's."""
    print(f"kubegc: {message}", file=sys.stderr)


def _kind(path: Path) -> str:
    """`missing`, `dir`, `file`, `link` or `other` (a symbolic link is not followed). Raises
    `StateUnavailable` when the path cannot be looked at (permission denied)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    except OSError as exc:
        raise StateUnavailable(f"cannot look at {path}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(mode):
        return "link"
    return "dir" if stat.S_ISDIR(mode) else "file" if stat.S_ISREG(mode) else "other"


def _owner_mode(st: os.stat_result) -> str:
    """`owner uid U, mode 0MMM`, as refusals name a directory."""
    return f"owner uid {st.st_uid}, mode {stat.S_IMODE(st.st_mode):04o}"


def _ancestors(path: str) -> list[str]:
    """The directories above absolute `path`, from `/` down (`/a/b/c` → `/`, `/a`, `/a/b`)."""
    out, head = [], os.path.dirname(path)
    while True:
        out.append(head)
        if head == "/":
            return out[::-1]
        head = os.path.dirname(head)


MAX_LINKS = 40  # as the kernel's MAXSYMLINKS


def _check_links(path: str, what: str) -> None:
    """Raises `BadInput` when resolving absolute `path` goes through a symbolic link that is
    not owned by root or this process's user (whoever owns a link chooses where it leads: a
    link another user planted at `--state-dir` would put kubegc's files in any directory root
    owns), or through more than `MAX_LINKS` links. Every link on the way is checked, those
    that links lead through too. A component that does not exist ends the walk (what is made
    there is made by kubegc)."""
    me = os.geteuid()
    current, hops = "/", 0
    pending = [p for p in reversed(path.split("/")) if p]
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, name)
        try:
            st = os.lstat(step)
        except OSError:
            return
        if not stat.S_ISLNK(st.st_mode):
            current = step
            continue
        if st.st_uid not in (0, me):
            raise BadInput(
                f"{what} {path} goes through the symbolic link {step} (owner uid "
                f"{st.st_uid}), which another user chose where it leads; use a path without "
                "it, or a link owned by root (or this user)"
            )
        hops += 1
        if hops > MAX_LINKS:
            raise BadInput(f"{what} {path}: too many levels of symbolic links")
        target = os.readlink(step)
        if target.startswith("/"):
            current = "/"
        pending.extend(p for p in reversed(target.split("/")) if p)


def _check_above(path: str, what: str) -> None:
    """Raises `BadInput` when a directory above `path` (absolute, normalized) could be changed
    by another user: not owned by root or this process's user, or writable by group or others
    without the sticky bit (whoever can rename entries there can swap `path` for a link). A
    directory that does not exist (yet) or cannot be looked at is left to later steps."""
    me = os.geteuid()
    for d in _ancestors(path):
        try:
            st = os.lstat(d)
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode):
            continue  # a link: what it leads to is checked on the resolved path
        writable = st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX
        if st.st_uid not in (0, me) or writable:
            raise BadInput(
                f"{what} {path} is below {d} ({_owner_mode(st)}), which another user can "
                "change; use a directory only root (or this user) can write"
            )


def _make_parents(directory: str) -> None:
    """Make the missing directories of absolute `directory`, each mode 0755 whatever the umask
    (`os.makedirs` gives the mode to the last one only): none is left writable by others.
    Raises `OSError` as `os.mkdir`."""
    missing: list[str] = []
    while not os.path.lexists(directory):
        missing.append(directory)
        directory = os.path.dirname(directory)
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o755)
        except FileExistsError:
            continue  # made at the same moment by another run; checked as any other above
        os.chmod(d, 0o755)  # just made by this user, below directories others cannot change


def safe_dir(path: Path, what: str = "--state-dir", *, create: bool = False) -> Path | None:
    """The directory where kubegc keeps a file only it may write (the state dir, the node lock's
    directory), checked so it cannot be turned against the user running kubegc: owned by this
    process's user, not writable by group or others, reached through no symbolic link another
    user owns (`_check_links`), and every directory above it (lexically and once links are
    resolved) owned by root or this user and not writable by others (see
    `_check_above`). Returns its resolved path (what the files in it are opened under), or
    None when it is missing and not `create`. With `create`, a missing one is made, mode 0700
    (its missing parents too, mode 0755 whatever the umask).

    Raises `BadInput` (exit 2) naming the path with its owner and mode when it fails a check,
    or when it is not a directory; `StateUnavailable` when it cannot be created (`full` on a
    full disk) or looked at."""
    where = os.path.abspath(path)
    _check_links(where, what)
    _check_above(where, what)
    real = os.path.realpath(where)
    if real != where:
        _check_above(real, what)
    kind = _kind(Path(real))
    if kind == "missing":
        if not create:
            return None
        try:
            _make_parents(os.path.dirname(real))
            os.mkdir(real, 0o700)
        except FileExistsError:
            pass  # made at the same moment by another run: checked below like any other
        except NotADirectoryError:
            raise BadInput(f"{what} {path}: a path component is not a directory") from None
        except OSError as exc:
            raise StateUnavailable(
                f"cannot create {what} {path}: {exc.strerror or exc}",
                full=exc.errno == errno.ENOSPC,
            ) from None
        return safe_dir(path, what, create=False)
    if kind != "dir":
        raise BadInput(f"{what} {path} is not a directory")
    st = os.lstat(real)
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise BadInput(
            f"{what} {path} ({_owner_mode(st)}) is not this user's (uid {os.geteuid()}) "
            "alone: kubegc keeps its files only in a directory owned by the user running it "
            "that group and others cannot write (e.g. chmod 0700)"
        )
    return Path(real)


def open_in(directory: Path, name: str, flags: int, mode: int = 0o600) -> int:
    """`os.open` of `directory/name` that never follows a symbolic link there (`directory`
    comes from `safe_dir`). Raises `BadInput` naming the path when it is a link, `OSError`
    otherwise."""
    path = directory / name
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise _link_refused(path) from None
        raise


def _link_refused(path: Path) -> BadInput:
    return BadInput(
        f"{path} is a symbolic link; kubegc opens no file of its own through a link (remove it)"
    )


_DB_FILES = ("", "-wal", "-shm", "-journal")


def _db_path(state_dir: Path, *, create: bool = False) -> Path | None:
    """`state.db` in the checked state dir (`safe_dir`), or None when the state dir is missing
    (and not `create`). Raises `BadInput` when `state.db` or its `-wal`, `-shm` or `-journal`
    is a symbolic link or not a regular file (SQLite opens them by path), and as `safe_dir`."""
    real = safe_dir(state_dir, create=create)
    if real is None:
        return None
    path = real / DB_NAME
    for suffix in _DB_FILES:
        one = Path(f"{path}{suffix}")
        kind = _kind(one)
        if kind == "link":
            raise _link_refused(state_dir / one.name)
        if kind not in ("missing", "file"):
            raise BadInput(f"state database {state_dir / one.name} is not a regular file")
    return path


def check_state_dir(state_dir: Path) -> None:
    """Raises `BadInput` naming the path (see `safe_dir`, `_db_path`) when `state_dir` exists and
    another user could change it, it is not a directory, or a file of its database is a link
    or not a regular file; and when a `lock` there is a link. Checked before a run observes or
    changes anything. A path that cannot be looked at is left for the store's operations to
    report."""
    with suppress(StateUnavailable):
        real = _db_path(state_dir)
        if real is not None and _kind(real.parent / LOCK_NAME) == "link":
            raise _link_refused(state_dir / LOCK_NAME)


def ensure_state_dir(state_dir: Path) -> Path:
    """`safe_dir(state_dir, create=True)`: the checked state dir, made (mode 0700) if missing.
    Raises as `safe_dir`."""
    real = safe_dir(state_dir, create=True)
    assert real is not None  # (created)
    return real


LOCK_NAME = "lock"
LOCK_POLL_SECONDS = 0.1
#: The node-wide lock's directory under `--host-root`: on tmpfs (no free disk needed), and the
#: same for every run on the node whatever its `--state-dir`.
NODE_LOCK_DIR = "run/kubegc"

#: The run locks this process holds for its whole run, by state dir: [(path, fd), ...].
_run_locks: dict[str, list[tuple[Path, int]]] = {}


def node_lock_dir(host_root: Path | str = "/") -> Path:
    """`<host_root>/run/kubegc`: where the node-wide run lock lives."""
    return Path(host_root) / NODE_LOCK_DIR


def lock_holder(path: Path) -> int | None:
    """The pid written in the lock file at `path` by the run holding it, or None when the file
    holds none (yet) or cannot be read (a link is not followed)."""
    for _ in range(5):  # the holder writes its pid right after taking the lock
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            text = os.read(fd, 64).decode("ascii", errors="replace").strip()
        except OSError:
            return None
        finally:
            os.close(fd)
        if text.isdigit():
            return int(text)
        time.sleep(0.02)
    return None


_LOCK_OPEN_ERRORS = {
    errno.EROFS: "read-only filesystem",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
}


def _lock_file(directory: Path, shown: Path, timeout: float, deadline: float) -> tuple[Path, int]:
    """Take `directory/lock` (flock, exclusive; no link followed), waiting until `deadline`
    (monotonic seconds), and write this process's pid into it. `shown` is the path errors
    name. Returns (path, fd). Raises `Busy`, `BadInput` (a link), `OSError` (cannot open)."""
    path = directory / LOCK_NAME
    fd = open_in(directory, LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise BadInput(f"lock file {shown} is not a regular file")
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    pid = lock_holder(path)
                    who = f"another kubegc run (pid {pid})" if pid else "another kubegc run"
                    waited = f" after waiting {timeout:g}s" if timeout > 0 else ""
                    raise Busy(
                        f"{who} holds the node lock {shown}; gave up{waited} "
                        "(--lock-timeout waits longer)"
                    ) from None
                time.sleep(min(LOCK_POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        os.ftruncate(fd, 0)
        with suppress(OSError):  # only informative; a full disk must not stop a run freeing it
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return path, fd


def _acquire(
    state_dir: Path, timeout: float, host_root: Path | str | None, warn: Warn | None
) -> list[tuple[Path, int]]:
    """Take the run locks: first the node-wide `<host_root>/run/kubegc/lock` (its directory
    made 0700 and checked as `safe_dir`; none when `host_root` is None), then
    `state_dir/lock`, waiting up to `timeout` seconds in all. The state dir is checked
    (`check_state_dir`) before either is taken. A state dir that cannot be made, or a lock
    there that cannot be created, for lack of space is a warning (`warn`, default stderr):
    the node-wide lock still keeps other runs out, and a full disk must not stop the run that
    would free it (without a node-wide lock it is `StateUnavailable`). Returns [(path, fd)].
    Raises as `node_lock`."""
    check_state_dir(state_dir)
    deadline = time.monotonic() + max(0.0, timeout)
    held: list[tuple[Path, int]] = []
    where = node_lock_dir(host_root or "/")
    try:
        try:
            if host_root is None:
                pass  # (no node-wide lock asked for)
            elif node_dir := safe_dir(where, "node lock directory", create=True):
                held.append(_lock_file(node_dir, where / LOCK_NAME, timeout, deadline))
        except (OSError, StateUnavailable) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            why = _LOCK_OPEN_ERRORS.get(getattr(exc, "errno", 0) or 0, why or str(exc))
            raise StateUnavailable(
                f"cannot take the node lock {where / LOCK_NAME}: {why}; a run that removes "
                "needs it; nothing was removed (--dry-run plans without it)"
            ) from None
        try:
            real = ensure_state_dir(state_dir)
            held.append(_lock_file(real, state_dir / LOCK_NAME, timeout, deadline))
        except (OSError, StateUnavailable) as exc:
            if isinstance(exc, StateUnavailable):
                what, full = str(exc), exc.full
            else:
                why = _LOCK_OPEN_ERRORS.get(exc.errno or 0, exc.strerror or str(exc))
                what = f"cannot open lock file {state_dir / LOCK_NAME}: {why}"
                full = exc.errno == errno.ENOSPC
            if not full:
                raise StateUnavailable(
                    f"{what}; a run that removes needs a writable --state-dir for its lock "
                    "and audit log; nothing was removed (--dry-run plans without it)"
                ) from None
            if not held:
                raise StateUnavailable(f"{what}; nothing was removed") from None
            (warn or _stderr_warn)(
                f"{what}; going on under the node lock {where / LOCK_NAME}: the audit rows "
                "are kept in memory and tried again"
            )
    except BaseException:
        _release(held)
        raise
    return held


def _release(held: list[tuple[Path, int]]) -> None:
    """Empty each lock file (no stale pid is left to name) and let go of the locks."""
    for _, fd in reversed(held):
        with suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)


@contextmanager
def node_lock(
    state_dir: Path,
    timeout: float = 0.0,
    *,
    host_root: Path | str | None = "/",
    warn: Warn | None = None,
) -> Iterator[None]:
    """Hold the node's run lock for the block: `<host_root>/run/kubegc/lock`, the same for
    every run on the node whatever its state dir (so two runs with different `--state-dir`
    never act at once), and `state_dir/lock` too; each holds the holder's pid. `host_root`
    None takes only the state dir's (a command that changes no node: `evict prune`).

    Waits up to `timeout` seconds for another run to let go. Raises `Busy` (exit 4, naming the
    lock and the holder's pid) if another run still holds one; `StateUnavailable` (exit 2) if
    a lock file cannot be created or opened for writing (read-only), except for a full disk
    under the state dir (see `_acquire`); `BadInput` (exit 2) if the state dir or the node
    lock's directory fails `safe_dir`'s checks, a lock file is a link, or `state.db` is not a
    regular file. Not reentrant: a second `node_lock` in one process is `Busy` too.
    """
    held = _acquire(state_dir, timeout, host_root, warn)
    try:
        yield
    finally:
        _release(held)


def hold_run_lock(
    state_dir: Path,
    timeout: float = 0.0,
    *,
    host_root: Path | str | None = "/",
    warn: Warn | None = None,
) -> None:
    """Take the node's run lock (`node_lock`) for the rest of this run (until
    `release_run_lock`), so a run that may change the node plans and acts with no other run
    in between. Holding it already is fine. Raises as `node_lock`."""
    key = str(state_dir.absolute())
    if key not in _run_locks:
        _run_locks[key] = _acquire(state_dir, timeout, host_root, warn)


def run_lock_held(state_dir: Path) -> bool:
    """True when this process holds the run lock of `state_dir` (`hold_run_lock`)."""
    return str(state_dir.absolute()) in _run_locks


def release_run_lock() -> None:
    """Let go of every run lock this process holds (none held: nothing happens)."""
    while _run_locks:
        _, held = _run_locks.popitem()
        _release(held)


def _one_line(exc: BaseException) -> str:
    """SQLite's message on one line (quick_check reports span lines)."""
    return " ".join(str(exc).replace("*** in database main ***", "").split())


class _Damaged(Exception):
    """`PRAGMA quick_check` found the database damaged (its first complaint is the message)."""


def _is_damage(exc: BaseException) -> bool:
    """True for SQLite's "database disk image is malformed" and "file is not a database"."""
    import sqlite3

    if isinstance(exc, _Damaged):
        return True
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and code & 0xFF in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)


def _quick_check(con: sqlite3.Connection) -> None:
    """Raises `_Damaged` unless `PRAGMA quick_check` says ok (it may raise the damage itself)."""
    row = con.execute("PRAGMA quick_check(1)").fetchone()
    if row is None or row[0] != "ok":
        raise _Damaged(str(row[0]) if row else "quick_check returned nothing")


def _open_write(state_dir: Path) -> sqlite3.Connection:
    """Open `state.db` for writing (WAL, busy timeout), checked and with the schema created."""
    import sqlite3

    path = _db_path(state_dir, create=True)
    assert path is not None  # (created)
    with suppress(OSError):  # made 0600 (SQLite's own is 0644); a failure is SQLite's to report
        os.close(open_in(path.parent, DB_NAME, os.O_RDWR | os.O_CREAT, 0o600))
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_SECONDS, check_same_thread=False)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        _quick_check(con)
        with con:
            con.executescript(_SCHEMA)
            _add_expected_column(con)
    except BaseException:
        con.close()
        raise
    return con


def _open_read(path: Path) -> sqlite3.Connection:
    """Open an existing `state.db` read-only, and checked. A WAL database whose `-shm` cannot
    be made (a directory kubegc cannot write: CANTOPEN; a full filesystem: IOERR) is opened
    immutable."""
    import sqlite3

    uri = path.absolute().as_uri()
    try:
        con = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_SECONDS)
        try:
            _quick_check(con)
        except BaseException:
            con.close()
            raise
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in (
            sqlite3.SQLITE_CANTOPEN,
            sqlite3.SQLITE_IOERR,
        ):
            raise
        con = sqlite3.connect(f"{uri}?immutable=1", uri=True)
        try:
            _quick_check(con)
        except BaseException:
            con.close()
            raise
    return con


def _move_aside(path: Path, why: BaseException, warn: Warn) -> None:
    """Rename a damaged `state.db` (and its `-wal`) to `state.db.corrupt-<unix seconds>` and
    drop its `-shm`; warn naming both. Raises `StateUnavailable` when it cannot be renamed."""
    stamp = int(time.time())
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while aside.exists():
        aside, n = path.with_name(f"{path.name}.corrupt-{stamp}.{n}"), n + 1
    try:
        os.replace(path, aside)
    except FileNotFoundError:
        return  # another run moved it aside first
    except OSError as exc:
        raise StateUnavailable(
            f"state database {path} is damaged ({_one_line(why)}) and cannot be moved aside: "
            f"{exc.strerror or exc}"
        ) from None
    for suffix, dest in (("-wal", f"{aside}-wal"), ("-shm", None)):
        try:
            if dest is None:
                os.unlink(f"{path}{suffix}")
            else:
                os.replace(f"{path}{suffix}", dest)
        except OSError:
            pass  # absent, or gone with another run's move: either way not in the fresh one
    detail = _one_line(why)
    warn(f"state database {path} is damaged ({detail}); moved to {aside}, the state starts afresh")


def _unwritable(path: Path) -> str:
    """Why `path` (state.db, or its directory) cannot be written, or "" when no reason shows."""
    for target in (path, path.parent):
        try:
            if os.statvfs(target).f_flag & os.ST_RDONLY:
                return "read-only filesystem"
        except OSError:
            continue
    if not os.access(path.parent, os.W_OK) or (
        os.path.exists(path) and not os.access(path, os.W_OK)
    ):
        return "permission denied"
    return ""


class _Fresh(Exception):
    """A read-only operation moved a damaged database aside: what it reads is now empty."""


_UNAVAILABLE_ERRNOS = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EIO)


def _with_db(
    state_dir: Path,
    op: Callable[[sqlite3.Connection], T],
    warn: Warn | None,
    *,
    write: bool = True,
    keep_open: bool = False,
) -> T:
    """Run `op` on an open `state.db` and close it (`keep_open`: unless `op` succeeds; the
    caller then owns the connection, e.g. as `op`'s result). Damage found at any point
    (opening, checking, inside `op`) moves the file aside and runs `op` once more on a fresh
    database. The state dir and the database's files are checked first (`_db_path`).

    `write=False` opens an existing database read-only (the caller checks it exists).
    Raises `StateUnavailable` for a store that cannot be written or used now, `BadInput` for
    one that is not a usable kubegc database for other reasons.
    """
    import sqlite3

    path = _db_path(state_dir) or Path(os.path.abspath(state_dir)) / DB_NAME
    for attempt in (1, 2):
        try:
            con = _open_write(state_dir) if write else _open_read(path)
            try:
                result = op(con)
            except BaseException:
                con.close()
                raise
            if not keep_open:
                con.close()
            return result
        except (sqlite3.Error, _Damaged) as exc:
            if _is_damage(exc) and attempt == 1:
                _move_aside(path, exc, warn or _stderr_warn)
                if not write:
                    raise _Fresh from None
                continue
            detail = _one_line(exc)
            if isinstance(exc, sqlite3.OperationalError):
                why = _unwritable(path) if write else ""
                if why:
                    detail = f"{why} ({detail})"
                raise StateUnavailable(
                    f"cannot use state database {path}: {detail}",
                    full=exc.sqlite_errorcode == sqlite3.SQLITE_FULL,  # "database or disk is full"
                ) from None
            raise BadInput(f"cannot use state database {path}: {detail}") from None
        except OverflowError:
            raise BadInput(
                f"cannot record in {path}: a time beyond 2262-04-11 does not fit the store"
            ) from None
        except OSError as exc:
            if exc.errno in _UNAVAILABLE_ERRNOS:
                raise StateUnavailable(
                    f"cannot use {path}: {exc.strerror or exc}", full=exc.errno == errno.ENOSPC
                ) from None
            raise BadInput(f"cannot use {path}: {exc.strerror or exc}") from None
    raise AssertionError("unreachable")  # pragma: no cover


def storable(text: str) -> str:
    """`text` as SQLite can store it (UTF-8): a path's non-UTF-8 byte, which Python holds as a
    lone surrogate (`os.fsdecode`), is written as `\\xff`; valid text is unchanged."""
    try:
        text.encode()
        return text
    except UnicodeEncodeError:
        return "".join(escaped_char(c) if "\ud800" <= c <= "\udfff" else c for c in text)


def _audit_row(run_id: str, at: str, command: str, a: Action) -> tuple[Any, ...]:
    """One `audit` table row for action `a`."""
    return (
        run_id, at, command, a.kind, storable(a.id), a.rule, storable(a.reason),
        a.result.value, storable(a.error), a.bytes_freed, a.planned_bytes,
    )  # fmt: skip


_INSERT_AUDIT = (
    f"INSERT INTO audit ({', '.join(_AUDIT_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_AUDIT_COLUMNS))})"
)

#: Pauses (seconds) before each new try of writing a run's audit rows that could not be
#: written: a full disk may have room again once the runtime has let go of what was removed.
AUDIT_RETRY_DELAYS = (0.2, 1.0)
#: While the store cannot be written, rows of completed actions wait in memory; a new try is
#: made with a later action's row at most this often (seconds), and at the end of the run.
AUDIT_RETRY_EVERY_SECONDS = 1.0
#: Each audit row is committed as its action completes (in the WAL: kept if kubegc is killed);
#: the WAL is synced to disk (kept through a power loss) with a row at most this long after
#: the last sync (seconds), and at the end: an fsync per row would cost more than a removal.
AUDIT_SYNC_EVERY_SECONDS = 0.2
#: The result of the row written as an action starts (`AuditLog.begin`), replaced by its
#: outcome's row when it completes: one left behind is a removal whose outcome nobody
#: recorded (its run was killed with it in flight, or is still running).
IN_FLIGHT = "in-flight"
#: What such a row says in `history`.
IN_FLIGHT_ERROR = (
    "started; no outcome recorded (still running, or the run was killed with it in flight)"
)


class AuditLog:
    """A run's audit rows, appended to `state.db` as its actions complete, so a run killed
    mid-stage (SIGKILL, OOM, power loss) leaves the rows of what it did. Each row is its own
    transaction, in the WAL once `add` returns (kept if kubegc is killed), synced to disk
    within `AUDIT_SYNC_EVERY_SECONDS` (kept through a power loss) and at `finish`; one
    connection serves the whole run. `add` is safe from the executors' worker threads.
    `begin` writes an action's row as `in-flight` before it starts, replaced by its outcome's
    row in one transaction: a run killed mid-call leaves `in-flight` rows for the removals
    whose outcome it never learnt, never a removal with no row.

    A store that cannot be written now (full disk, I/O error, locked past the busy timeout:
    `StateUnavailable`) never stops the run: rows wait in memory, are tried again with later
    rows (at most every `AUDIT_RETRY_EVERY_SECONDS`) and by `finish`; `info` hears of each
    failed try. `warn` (default stderr) hears of a damaged database moved aside.
    """

    def __init__(
        self,
        state_dir: Path,
        command: str,
        at_ns: int,
        warn: Warn | None = None,
        *,
        info: Warn | None = None,
    ) -> None:
        import threading
        import uuid

        self.state_dir = state_dir
        self.command = command
        self.run_id = uuid.uuid4().hex[:12]
        self._at = ns_to_rfc3339(at_ns)
        self._warn = warn
        self._info = info
        self._pending: list[tuple[Any, ...]] = []
        self._run: tuple[Any, ...] | None = None
        self._added: set[int] = set()
        self._begun: dict[int, int] = {}  # id(action) -> rowid of its in-flight row
        self._replaced: list[int] = []  # in-flight rows to delete with the pending rows
        self._con: sqlite3.Connection | None = None
        self._retry_at = 0.0
        self._synced_at = time.monotonic()
        self._lock = threading.Lock()

    def begin(self, action: Action) -> None:
        """Write `action`'s row as `in-flight` before its re-check and removal start (one
        commit, in the WAL once this returns: kept if kubegc is killed mid-call), so that a
        run killed with a removal in flight leaves a row saying so; `add` replaces it with
        the outcome's row in one transaction. Never raises and never waits for a retry: a
        store that cannot be written now gets no such row (the outcome's row waits as `add`
        says)."""
        import sqlite3

        with self._lock:
            if time.monotonic() < self._retry_at:
                return  # the store failed a moment ago: the removal does not wait for it
            if self._con is None or self._pending:
                try:  # opens the store (the run's first action), with any rows waiting
                    self._write(sync=False)
                except Exception:
                    self._retry_at = time.monotonic() + AUDIT_RETRY_EVERY_SECONDS
                    return
            assert self._con is not None
            row = _audit_row(self.run_id, self._at, self.command, action)
            row = (*row[:7], IN_FLIGHT, IN_FLIGHT_ERROR, 0, row[10])
            try:
                self._con.execute("PRAGMA synchronous=NORMAL")
                with self._con:
                    cur = self._con.execute(_INSERT_AUDIT, row)
                if cur.lastrowid is not None:
                    self._begun[id(action)] = cur.lastrowid
            except (sqlite3.Error, OSError):
                pass  # the outcome's row is written as `add` says

    def add(self, action: Action) -> None:
        """Append `action`'s row now that it has its result (once per action; later calls
        for it do nothing). Never raises for the store: a row that cannot be written waits
        for a later try."""
        with self._lock:
            if id(action) in self._added:
                return
            self._queue(action)
            if time.monotonic() < self._retry_at:
                return
            try:
                self._write(sync=time.monotonic() >= self._synced_at + AUDIT_SYNC_EVERY_SECONDS)
            except Exception as exc:  # the audit log never stops a removal: kept for later
                self._retry_at = time.monotonic() + AUDIT_RETRY_EVERY_SECONDS
                if self._info is not None:
                    self._info(f"{exc}; the audit rows wait in memory and are tried again")

    def _queue(self, action: Action) -> None:
        """Make `action`'s outcome row pending (under `_lock`), with its in-flight row, if
        `begin` wrote one, to be deleted in the same transaction."""
        self._added.add(id(action))
        self._pending.append(_audit_row(self.run_id, self._at, self.command, action))
        begun = self._begun.pop(id(action), None)
        if begun is not None:
            self._replaced.append(begun)

    def _write(self, *, sync: bool = True) -> None:
        """Write the pending rows in one transaction (under `_lock`), the WAL synced to disk
        with it when `sync`. Raises as `_with_db`."""
        import sqlite3

        rows, run = self._pending, self._run
        replaced = [(rowid, IN_FLIGHT) for rowid in self._replaced]

        def insert(con: sqlite3.Connection) -> sqlite3.Connection:
            con.execute(f"PRAGMA synchronous={'FULL' if sync else 'NORMAL'}")
            with con:  # the in-flight rows go with their outcomes' rows, never before
                con.executemany("DELETE FROM audit WHERE rowid = ? AND result = ?", replaced)
                con.executemany(_INSERT_AUDIT, rows)
                if run is not None:
                    con.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?)", run)
            if sync:
                self._synced_at = time.monotonic()
            return con

        if self._con is not None:
            try:
                insert(self._con)
                self._pending, self._replaced, self._run = [], [], None
                return
            except (sqlite3.Error, OSError):  # opened afresh below, with the store's handling
                self._close()
        self._con = _with_db(self.state_dir, insert, self._warn, keep_open=True)
        self._pending, self._replaced, self._run = [], [], None

    def _close(self) -> None:
        if self._con is not None:
            with suppress(Exception):
                self._con.close()
            self._con = None

    def finish(
        self,
        actions: Iterable[Action] = (),
        *,
        delays: Iterable[float] | None = None,
        sleep: Callable[[float], None] | None = None,
        timeout: float | None = None,
        totals: tuple[int, int | None, list[dict[str, Any]]] | None = None,
    ) -> str:
        """Add the rows of `actions` not added yet (those never attempted: held back,
        skipped) and the run's `totals` (bytes expected, bytes measured or None, the
        filesystems measured: `Plan.summary`, `Plan.filesystems`) if given, then write every
        pending row, trying again after each pause of `delays`
        (seconds; default `AUDIT_RETRY_DELAYS`) while the store is `StateUnavailable`: a full
        disk may have had room freed by the removals themselves. `timeout` (seconds) bounds
        the wait for rows being written by another thread (a second stop signal). Returns
        the run id. Raises the last `StateUnavailable` when no try succeeds, and `BadInput` at
        once for a store of the wrong type (a retry cannot help)."""
        if not self._lock.acquire(timeout=-1 if timeout is None else timeout):
            raise StateUnavailable("the audit rows were still being written")
        try:
            for a in actions:
                if id(a) not in self._added:
                    self._queue(a)
            if totals is not None:
                expected, measured, filesystems = totals
                self._run = (self.run_id, expected, measured, json.dumps(filesystems))
            pauses = list(AUDIT_RETRY_DELAYS if delays is None else delays)
            sleep = time.sleep if sleep is None else sleep
            while True:  # once at least: an empty run still checks (and makes) the store
                try:
                    self._write()
                    break
                except StateUnavailable as exc:
                    if not pauses:
                        raise
                    pause = pauses.pop(0)
                    if self._info is not None:
                        self._info(f"{exc}; trying the audit rows again in {pause:g}s")
                    sleep(pause)
            return self.run_id
        finally:
            self._close()
            self._lock.release()


def record_audit(
    state_dir: Path,
    command: str,
    at_ns: int,
    actions: Iterable[Action],
    warn: Warn | None = None,
) -> str:
    """Append one audit row per action to `state.db` (`at_ns`: ns since the epoch) in one
    go, with no retry; returns the run id. `warn` (default: stderr) hears of a damaged
    database moved aside. Raises `StateUnavailable` / `BadInput` as `_with_db`."""
    return AuditLog(state_dir, command, at_ns, warn).finish(actions, delays=())


def record_audit_retrying(
    state_dir: Path,
    command: str,
    at_ns: int,
    actions: Iterable[Action],
    warn: Warn | None = None,
    *,
    delays: Iterable[float] | None = None,
    sleep: Callable[[float], None] | None = None,
    info: Warn | None = None,
) -> str:
    """`record_audit`, tried again after each pause of `delays` as `AuditLog.finish`."""
    log = AuditLog(state_dir, command, at_ns, warn, info=info)
    return log.finish(actions, delays=delays, sleep=sleep)


def load_image_records(
    state_dir: Path, now: int, warn: Warn | None = None, *, read_only: bool = False
) -> tuple[dict[str, ImageRecord], int]:
    """The remembered image records and when kubegc first collected on this node (`began`).
    Times are ns since the epoch; `began` is set to `now` on the first run. The kubelet keeps
    both in memory and forgets them on restart; kubegc keeps them here across runs.

    `read_only` reads without writing anything (for a store kubegc cannot write): a missing
    database is no records and `began` = `now`. A damaged database is moved aside (`warn`
    hears of it) and the records start empty. Raises `StateUnavailable` for a store that
    cannot be written (or, `read_only`, read), `BadInput` for a state dir or file of the wrong
    type.
    """

    def load(con: sqlite3.Connection) -> tuple[dict[str, ImageRecord], int]:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        if not read_only:
            with con:
                con.execute("INSERT OR IGNORE INTO meta VALUES ('began', ?)", (str(now),))
        row = None
        if "meta" in tables:
            row = con.execute("SELECT value FROM meta WHERE key = 'began'").fetchone()
        records: dict[str, ImageRecord] = {}
        if "images" in tables:
            records = {
                iid: ImageRecord(first, last)
                for iid, first, last in con.execute(
                    "SELECT id, first_detected, last_used FROM images"
                )
            }
        return records, int(row[0]) if row else now

    if read_only:
        path = _db_path(state_dir)
        if path is None or _kind(path) == "missing":
            return {}, now
        try:
            return _with_db(state_dir, load, warn, write=False)
        except _Fresh:
            return {}, now
    return _with_db(state_dir, load, warn)


def save_image_records(
    state_dir: Path,
    records: Mapping[str, ImageRecord],
    warn: Warn | None = None,
    *,
    began: int | None = None,
    loaded: Mapping[str, ImageRecord] | None = None,
) -> None:
    """Replace the remembered image records with `records` (images no longer listed are
    forgotten, as the kubelet drops their records). `began` (ns since the epoch) is stored if
    the database has none (it was just started fresh). `loaded`, the records as this run read
    them: a record that was there then and is gone now was forgotten meanwhile by a run that
    removed its image (`forget_image_records`), and is not brought back (the image, if
    listed again, was pulled again: first detected at the next run). Raises as `_with_db`."""

    def save(con: sqlite3.Connection) -> None:
        with con:
            if began is not None:
                con.execute("INSERT OR IGNORE INTO meta VALUES ('began', ?)", (str(began),))
            now_there = {str(r[0]) for r in con.execute("SELECT id FROM images")}
            gone = {i for i in (loaded or {}) if i not in now_there}
            con.execute("DELETE FROM images")
            con.executemany(
                "INSERT INTO images VALUES (?,?,?)",
                [(iid, r.first_detected, r.last_used) for iid, r in records.items()
                 if iid not in gone],
            )  # fmt: skip

    _with_db(state_dir, save, warn)


def forget_image_records(
    state_dir: Path, image_ids: Iterable[str], warn: Warn | None = None
) -> None:
    """Drop the records of `image_ids`, images a run removed, as the kubelet's image GC deletes
    an image's record once it has removed it: the same image pulled again is first detected
    then, not when its removed copy was (MinAge counts from the new pull). Raises as
    `_with_db`."""
    ids = [(i,) for i in image_ids]
    if not ids:
        return

    def forget(con: sqlite3.Connection) -> None:
        with con:
            con.executemany("DELETE FROM images WHERE id = ?", ids)

    _with_db(state_dir, forget, warn)


def read_history(state_dir: Path, runs: int, warn: Warn | None = None) -> list[dict[str, Any]]:
    """The last `runs` runs recorded in `state.db`, newest first, each with its actions.

    Each run: `run_id`, `at`, `command`, `by_result` (counts), `bytes_expected` (what its
    plan expected the objects it removed to free, as the run reported it; None for a run
    recorded before kubegc kept it), `bytes_measured` (what its filesystems regained,
    measured; None when not measured), `filesystems` (those measured, as `Plan.filesystems`),
    `bytes_freed` (the sum of its rows'), `actions` (kind, id, rule, reason, result, error,
    bytes_freed, bytes_expected).

    A missing state dir or database is an empty history; the database is only read (a
    read-only state dir is fine). A damaged one is moved aside (`warn`, default stderr, says
    so) and the history is empty. Raises `BadInput` when `state_dir` is not a directory or
    `state.db` not a regular file, `StateUnavailable` when it cannot be read.
    """
    path = _db_path(state_dir)
    if path is None or _kind(path) == "missing":
        return []
    names = ("kind", "id", "rule", "reason", "result", "error", "bytes_freed", "bytes_expected")

    def read(con: sqlite3.Connection) -> list[dict[str, Any]]:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        if "audit" not in tables:
            return []
        columns = {r[1] for r in con.execute("PRAGMA table_info(audit)")}
        expected = "bytes_expected" if "bytes_expected" in columns else "NULL"
        latest = con.execute(
            "SELECT run_id, MIN(at), command FROM audit GROUP BY run_id "
            "ORDER BY MIN(at) DESC, MIN(rowid) DESC LIMIT ?",
            (runs,),
        ).fetchall()
        out = []
        for run_id, at, command in latest:
            rows = con.execute(
                "SELECT kind, object_id, rule, reason, result, error, bytes_freed, "
                f"{expected} FROM audit WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            ).fetchall()
            actions = [dict(zip(names, r, strict=True)) for r in rows]
            counts: dict[str, int] = {}
            for a in actions:
                counts[a["result"]] = counts.get(a["result"], 0) + 1
            totals = None
            if "runs" in tables:
                totals = con.execute(
                    "SELECT bytes_expected, bytes_measured, filesystems FROM runs WHERE run_id = ?",
                    (run_id,),
                ).fetchone()
            out.append(
                {
                    "run_id": run_id,
                    "at": at,
                    "command": command,
                    "by_result": counts,
                    "bytes_expected": totals[0] if totals else None,
                    "bytes_measured": totals[1] if totals else None,
                    "filesystems": _filesystems(totals[2]) if totals else [],
                    "bytes_freed": sum(a["bytes_freed"] for a in actions),
                    "actions": actions,
                }
            )
        return out

    try:
        return _with_db(state_dir, read, warn, write=False)
    except _Fresh:
        return []


def _filesystems(text: str) -> list[dict[str, Any]]:
    """The filesystems of a `runs` row (JSON), or [] when it is not a JSON list."""
    try:
        value = json.loads(text)
    except ValueError:
        return []
    return value if isinstance(value, list) else []
