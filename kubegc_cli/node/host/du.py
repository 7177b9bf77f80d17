"""Disk usage of a directory tree, measured as `du -x` does.

Allocated blocks (`st_blocks` × 512), not apparent size; symlinks are not followed; a
directory on another device, or a mount point named by the mount table, is not entered (a
mounted volume is not the pod's disk); a file with several hard links is counted once.
What cannot be read (permission denied, a path beyond PATH_MAX) is not counted but is
reported (`TreeUsage.unreadable`); what vanishes during the walk is neither. A walk never
touches a mount point the mount table names, and cannot hang past `--timeout`
(`host.bounded`).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field

from kubegc_cli.core.sizes import BLOCK, on_disk
from kubegc_cli.node.host.bounded import Stalled, Watch, bounded, walk_timeout
from kubegc_cli.node.host.mounts import MountTable

__all__ = ["BLOCK", "VANISHED", "TreeUsage", "tree_usage"]


@dataclass(frozen=True, slots=True)
class TreeUsage:
    """What one tree holds: `bytes` allocated, `inodes` (entries, the root included), the
    paths of `mounts` met below it and not entered, and how many entries could not be read
    (`unreadable`: a directory not listed, an entry not stat'ed; their bytes are not in
    `bytes`), the first of them (`first_unreadable`) and why (`first_reason`). `size` is the
    apparent size (`st_size`) of its regular files, each inode once. `stalled` is "" or the
    path the walk was stuck at when it gave up (no answer within `--timeout`: a hung mount?):
    the figures are then partial, and that path counts as unreadable. `changed_ns` is the
    latest change of any entry counted, the top and its directories included (its
    `st_mtime_ns` or `st_ctime_ns`, whichever is later: a write, an entry made, removed,
    replaced or renamed; a backdated mtime still moves the ctime), 0 for nothing counted:
    two walks of a tree with the same `bytes` and `changed_ns` saw the same content."""

    bytes: int = 0
    inodes: int = 0
    mounts: tuple[str, ...] = ()
    unreadable: int = 0
    first_unreadable: str = ""
    first_reason: str = ""
    size: int = 0
    stalled: str = ""
    changed_ns: int = 0


#: Errors that mean the entry is gone (a busy node changes under the walk), not unreadable.
VANISHED = frozenset({errno.ENOENT, errno.ENOTDIR})


@dataclass(slots=True)
class _Sum:
    """A walk's running totals (what `tree_usage` reports if it has to stop early)."""

    bytes: int = 0
    inodes: int = 0
    size: int = 0
    changed_ns: int = 0
    unreadable: int = 0
    first: str = ""
    reason: str = ""
    skipped: list[str] = field(default_factory=list)
    top_dev: int | None = None  # the device of the top, once stat'ed
    dirs: list[str] = field(default_factory=list)  # directories still to list
    todo: list[str] = field(default_factory=list)  # entries still to stat

    def cannot_read(self, path: str, exc: OSError) -> None:
        if exc.errno not in VANISHED:
            self.unreadable += 1
            if not self.first:
                self.first, self.reason = path, exc.strerror or str(exc)

    def usage(self, stalled: str = "") -> TreeUsage:
        return TreeUsage(
            self.bytes, self.inodes, tuple(sorted(self.skipped)), self.unreadable, self.first,
            self.reason, self.size, stalled, self.changed_ns,
        )  # fmt: skip


def tree_usage(
    path: str, mounts: MountTable | None = None, seen: set[tuple[int, int]] | None = None
) -> TreeUsage:
    """Allocated bytes and inodes under the local `path` (see the module docstring).

    A missing `path` is an empty tree; entries that vanish while walking are skipped (a busy
    node changes under the walk); entries that cannot be read are skipped and counted in
    `unreadable`. An entry the mount table names as a mount point (`path` itself too) is not
    touched at all (not even stat'ed: a stale network mount would hang), a directory on
    another device is not entered; both are listed in `mounts`. The walk runs under
    `host.bounded.bounded`: an entry that gets no answer within `--timeout` is given up
    (counted as unreadable, listed in `mounts`, the first named in `stalled`) and the walk
    goes on with the rest in a new worker; a path stuck earlier in this process is not
    touched again. `seen` holds the (device, inode) pairs of multiply-linked files already
    counted; pass one set to several calls so that a file hard linked into two trees counts
    once in all of them (it is updated in place).
    """
    if seen is None:
        seen = set()
    acc = _Sum()
    stalled = ""
    while True:
        try:
            bounded(lambda watch: _walk(path, mounts, seen, acc, watch))
            return acc.usage(stalled)
        except Stalled as exc:
            acc.cannot_read(exc.filename, exc)
            acc.skipped.append(exc.filename)
            stalled = stalled or exc.filename
            if acc.top_dev is None:  # the top itself: nothing more to walk
                return acc.usage(stalled)


def _walk(
    path: str, mounts: MountTable | None, seen: set[tuple[int, int]], acc: _Sum, watch: Watch
) -> None:
    """`tree_usage`'s walk, adding to `acc` as it goes; it takes up a walk given up (after a
    stall) where that one stopped: `acc.todo` holds the entries still to look at."""
    if acc.top_dev is None:
        if mounts is not None and mounts.is_mount_point(path):
            acc.skipped.append(path)  # a mount point itself: not entered, not even stat'ed
            return
        if not watch.may_enter(path):
            raise Stalled(path, walk_timeout())
        try:
            top = os.lstat(path)
        except OSError as exc:
            acc.cannot_read(path, exc)
            return
        acc.bytes, acc.inodes, acc.top_dev = on_disk(top.st_blocks), 1, top.st_dev
        acc.changed_ns = max(top.st_mtime_ns, top.st_ctime_ns)
        if not stat.S_ISDIR(top.st_mode):
            if top.st_nlink > 1:
                if (top.st_dev, top.st_ino) in seen:
                    acc.bytes = acc.inodes = 0
                    return
                seen.add((top.st_dev, top.st_ino))
            acc.size = top.st_size if stat.S_ISREG(top.st_mode) else 0
            return
        acc.dirs.append(os.path.normpath(path))
    points = mounts.points if mounts is not None else frozenset()  # (paths built normalised)
    while acc.dirs or acc.todo:
        if acc.todo:
            entry = acc.todo.pop()
            if entry in points:
                acc.skipped.append(entry)  # not even stat'ed: it may hang
                continue
            if not watch.may_enter(entry):  # stuck there before
                acc.skipped.append(entry)
                continue
            try:
                st = os.lstat(entry)
            except OSError as exc:
                acc.cannot_read(entry, exc)
                continue
            if stat.S_ISDIR(st.st_mode):
                if st.st_dev != acc.top_dev:
                    acc.skipped.append(entry)
                    continue
                acc.dirs.append(entry)
            elif st.st_nlink > 1:
                key = (st.st_dev, st.st_ino)
                if key in seen:
                    continue
                seen.add(key)
            acc.bytes += on_disk(st.st_blocks)
            acc.inodes += 1
            acc.changed_ns = max(acc.changed_ns, st.st_mtime_ns, st.st_ctime_ns)
            if stat.S_ISREG(st.st_mode):
                acc.size += st.st_size
            continue
        current = acc.dirs.pop()
        if not watch.may_enter(current):
            acc.skipped.append(current)
            continue
        try:
            with os.scandir(current) as it:
                names = [e.name for e in it]
        except OSError as exc:
            acc.cannot_read(current, exc)
            continue
        base = current.rstrip("/") + "/"
        acc.todo.extend(base + name for name in names)
