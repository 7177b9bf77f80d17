"""Filesystem walks that cannot hang a run.

A `stat` or a directory listing on a hung network or FUSE mount (a stale NFS server, a FUSE
daemon that stopped answering) blocks in the kernel, and the thread that made the call cannot
be interrupted until the kernel gives up — which for a hard NFS mount is never. kubegc keeps
such calls off the calling thread with two guards:

- Walks never enter another mount: they check the mount table (`MountTable.is_mount_point`)
  by path *before* they stat or open an entry, so a stale mount listed in the table is never
  touched, and compare devices or mount IDs after (a mount made since the table was read).
- Each walk runs in a worker thread (`bounded`) that reports its progress (`Watch.at`) before
  each call that may block. When no progress is reported for the walk timeout (`--timeout`,
  `set_walk_timeout`), the caller stops waiting and gets `Stalled` naming the path the walk
  was stuck at: the walk's figures are then partial or unknown, and callers say so. That path
  is remembered: no later walk in this process touches it or anything below it
  (`Watch.may_enter`), so one hung mount costs one timeout, not one per walk.

The abandoned thread is a daemon: its walk ends at its next `Watch.at` once its call returns
(the path is then forgotten: it answered), or the thread ends with the process (hung NFS and
FUSE requests are killable). Workers are kept idle for the next walk once theirs has
returned; one whose walk hangs is never handed another.
"""

from __future__ import annotations

import errno
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")
X = TypeVar("X")

#: Seconds a walk may go without progress (one filesystem call not returning); `--timeout`.
_timeout = [10.0]
_HUNG: set[str] = set()  # local paths a walk was stuck at, not touched again
_HUNG_LOCK = threading.Lock()
_worker = threading.local()  # `watch`: the `Watch` of the bounded walk this thread runs


def set_walk_timeout(seconds: float) -> None:
    """Set how long (seconds, > 0) a walk may wait for one filesystem call (`--timeout`)."""
    _timeout[0] = seconds


def walk_timeout() -> float:
    """Seconds a walk may wait for one filesystem call (`set_walk_timeout`; default 10)."""
    return _timeout[0]


def hung_at(path: str) -> str:
    """The path at or above the local `path` that a walk was stuck at earlier in this process
    (nothing below it is touched again), or ""."""
    if not _HUNG:
        return ""
    with _HUNG_LOCK:
        for hung in _HUNG:
            if path == hung or path.startswith(hung.rstrip("/") + "/"):
                return hung
    return ""


def hung_below(path: str) -> str:
    """A path at, above or below the local `path` that a walk was stuck at earlier in this
    process, or "": a removal of `path` would reach it."""
    if not _HUNG:
        return ""
    prefix = path.rstrip("/") + "/"
    with _HUNG_LOCK:
        for hung in _HUNG:
            if hung == path or hung.startswith(prefix) or path.startswith(hung.rstrip("/") + "/"):
                return hung
    return ""


class Stalled(OSError):
    """A walk got no answer from the kernel for the walk timeout at `path` (a hung mount?).
    An `OSError` (ETIMEDOUT), so code that reports an unreadable path reports this one too."""

    def __init__(self, path: str, seconds: float) -> None:
        shown = f"{seconds:g}"
        super().__init__(errno.ETIMEDOUT, f"no answer within {shown}s (a hung mount?)", path)


class _Abandoned(BaseException):
    """Raised in an abandoned walk at its next `Watch.at`: the caller has stopped waiting."""


class Watch:
    """What a walk running under `bounded` reports: call `at(path)` right before each call
    that may block on `path` (a stat, an open, a listing)."""

    __slots__ = ("abandoned", "path", "stamp")

    def __init__(self) -> None:
        self.path = ""
        self.stamp = time.monotonic()
        self.abandoned = False

    def at(self, path: str) -> None:
        """The walk is about to touch `path`. Raises (in the worker) once it was abandoned."""
        if self.abandoned:
            raise _Abandoned
        self.path = path
        self.stamp = time.monotonic()

    def may_enter(self, path: str) -> bool:
        """`at(path)`, and whether `path` may be touched: False when it is (or is below) a
        path a walk was stuck at before (`hung_at`); the walk then leaves it out."""
        if self.abandoned:
            raise _Abandoned
        self.path = path
        self.stamp = time.monotonic()
        return not (_HUNG and hung_at(path))


#: Idle walk workers kept for the next `bounded` call (a thread per walk costs more than
#: many a walk: a removal's log unlink is two system calls).
_IDLE_WORKERS_KEPT = 16
_NOT_BEGUN = -1.0  # `Watch.stamp` of a walk no worker has begun
_idle: list[queue.SimpleQueue[Callable[[], None]]] = []
_IDLE_LOCK = threading.Lock()


def _start(job: Callable[[], None]) -> None:
    """Run `job` in an idle walk worker, or in a new daemon one when none is idle. A worker
    goes back to idle once its job has returned, whenever that is: one whose job hangs is
    never handed another."""
    with _IDLE_LOCK:
        idle = _idle.pop() if _idle else None
    if idle is not None:
        idle.put(job)
        return
    jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
    jobs.put(job)

    def serve() -> None:
        while True:
            jobs.get()()
            with _IDLE_LOCK:
                if len(_idle) >= _IDLE_WORKERS_KEPT:
                    return
                _idle.append(jobs)

    threading.Thread(target=serve, name="kubegc-walk", daemon=True).start()


def bounded(walk: Callable[[Watch], T], timeout: float | None = None) -> T:
    """`walk(watch)` run in a daemon worker thread, its result or its exception; `Stalled`
    when the walk reports no progress (`Watch.at`) for `timeout` seconds (default
    `walk_timeout()`). The path it was stuck at is then remembered (`hung_at`) until the
    call returns. Whatever the walk filled in before that is the caller's partial result.

    Called from inside a bounded walk (its worker thread), `walk` runs right there with the
    enclosing walk's `Watch`: the enclosing walk's deadline covers it, and no thread is
    started (a walk of many small walks costs one thread)."""
    enclosing: Watch | None = getattr(_worker, "watch", None)
    if enclosing is not None:
        return walk(enclosing)
    limit = walk_timeout() if timeout is None else timeout
    watch = Watch()
    watch.stamp = _NOT_BEGUN  # the timeout counts from the walk's start, not from its queueing
    done = threading.Event()
    box: dict[str, object] = {}

    def run() -> None:
        watch.stamp = time.monotonic()
        _worker.watch = watch
        try:
            box["value"] = walk(watch)
        except _Abandoned:
            pass
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            _worker.watch = None
            if watch.abandoned:  # the call it was stuck in returned: the path answers again
                with _HUNG_LOCK:
                    _HUNG.discard(watch.path)
            done.set()

    _start(run)
    wait = limit
    while not done.wait(wait):
        if watch.stamp == _NOT_BEGUN:  # no worker has run it yet: waiting for a CPU, not a call
            continue
        idle = time.monotonic() - watch.stamp
        if idle >= limit:
            with _HUNG_LOCK:
                watch.abandoned = True
                if done.is_set():  # it finished just now
                    watch.abandoned = False
                    break
                _HUNG.add(watch.path)
            raise Stalled(watch.path, limit)
        wait = limit - idle
    if "error" in box:
        error = box["error"]
        assert isinstance(error, BaseException)
        raise error
    return box["value"]  # type: ignore[return-value]


def bounded_each(
    items: Sequence[X], each: Callable[[X, Watch], object]
) -> list[tuple[int, Stalled]]:
    """`each(item, watch)` for every item in order, under `bounded`, in one worker thread as
    long as nothing hangs: when the call for one item stalls, that item is given up and the
    rest go on in a new worker (a path stuck once is not touched again: `Watch.may_enter`).
    Returns (index, `Stalled`) of the items given up, whose results the caller must treat as
    unknown; an exception from `each` is raised."""
    stalls: list[tuple[int, Stalled]] = []
    start = 0
    while start < len(items):
        at = [start]

        def walk(watch: Watch, at: list[int] = at) -> None:
            for i in range(at[0], len(items)):
                at[0] = i
                each(items[i], watch)
            at[0] = len(items)

        try:
            bounded(walk)
            break
        except Stalled as exc:
            stalls.append((at[0], exc))
            start = at[0] + 1
    return stalls


def listdir(path: str) -> list[os.DirEntry[str]]:
    """The entries of the directory `path` (`os.scandir`, sorted by name), listed under
    `bounded`: `Stalled` when the listing hangs or `path` was stuck before; `OSError` as
    `os.scandir` raises it."""

    def walk(watch: Watch) -> list[os.DirEntry[str]]:
        if not watch.may_enter(path):
            raise Stalled(path, walk_timeout())
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)

    return bounded(walk)


def stat_of(path: str, *, follow_symlinks: bool = False) -> os.stat_result:
    """`os.stat(path)` (`os.lstat` unless `follow_symlinks`) under `bounded`: `Stalled` when
    it hangs (or `path` was stuck before); `OSError` as `os.stat` raises it."""

    def walk(watch: Watch) -> os.stat_result:
        if not watch.may_enter(path):
            raise Stalled(path, walk_timeout())
        return os.stat(path, follow_symlinks=follow_symlinks)

    return bounded(walk)


@contextmanager
def walk_timeout_of(seconds: float) -> Iterator[None]:
    """Within the block, walks wait `seconds` for one filesystem call (tests)."""
    before = walk_timeout()
    set_walk_timeout(seconds)
    try:
        yield
    finally:
        set_walk_timeout(before)
