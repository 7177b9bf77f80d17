"""Disk usage of a directory tree, measured as `du -x` does.

Allocated blocks (`st_blocks` × 512), not apparent size; symlinks are not followed; a
directory on another device, or a mount point named by the mount table, is not entered (a
mounted volume is not the pod's disk); a file with several hard links is counted once.
What cannot be read (permission denied, a path beyond PATH_MAX) is not counted but is
reported (`TreeUsage.unreadable`); what vanishes during the walk is neither.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass

from kubegc_cli.host.mounts import MountTable

BLOCK = 512  # st_blocks unit (POSIX)


@dataclass(frozen=True, slots=True)
class TreeUsage:
    """What one tree holds: `bytes` allocated, `inodes` (entries, the root included), the
    paths of `mounts` met below it and not entered, and how many entries could not be read
    (`unreadable`: a directory not listed, an entry not stat'ed; their bytes are not in
    `bytes`), the first of them (`first_unreadable`) and why (`first_reason`)."""

    bytes: int = 0
    inodes: int = 0
    mounts: tuple[str, ...] = ()
    unreadable: int = 0
    first_unreadable: str = ""
    first_reason: str = ""


#: Errors that mean the entry is gone (a busy node changes under the walk), not unreadable.
VANISHED = frozenset({errno.ENOENT, errno.ENOTDIR})


def tree_usage(
    path: str, mounts: MountTable | None = None, seen: set[tuple[int, int]] | None = None
) -> TreeUsage:
    """Allocated bytes and inodes under the local `path` (see the module docstring).

    A missing `path` is an empty tree; entries that vanish while walking are skipped (a busy
    node changes under the walk); entries that cannot be read are skipped and counted in
    `unreadable`. `seen` holds the (device, inode) pairs of multiply-linked files already
    counted; pass one set to several calls so that a file hard linked into two trees counts
    once in all of them (it is updated in place).
    """
    try:
        top = os.lstat(path)
    except OSError as exc:
        if exc.errno in VANISHED:
            return TreeUsage()
        return TreeUsage(unreadable=1, first_unreadable=path, first_reason=exc.strerror or str(exc))
    if seen is None:
        seen = set()
    total = top.st_blocks * BLOCK
    inodes = 1
    skipped: list[str] = []
    unreadable = 0
    first = reason = ""
    if not stat.S_ISDIR(top.st_mode):
        if top.st_nlink > 1:
            if (top.st_dev, top.st_ino) in seen:
                return TreeUsage()
            seen.add((top.st_dev, top.st_ino))
        return TreeUsage(total, inodes)
    stack = [path]
    while stack:
        current = stack.pop()
        try:
            it = os.scandir(current)
        except OSError as exc:
            if exc.errno not in VANISHED:
                unreadable += 1
                if not first:
                    first, reason = current, exc.strerror or str(exc)
            continue
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError as exc:
                    if exc.errno not in VANISHED:
                        unreadable += 1
                        if not first:
                            first, reason = e.path, exc.strerror or str(exc)
                    continue
                if stat.S_ISDIR(st.st_mode):
                    if st.st_dev != top.st_dev or (
                        mounts is not None and mounts.is_mount_point(e.path)
                    ):
                        skipped.append(e.path)
                        continue
                    stack.append(e.path)
                elif st.st_nlink > 1:
                    key = (st.st_dev, st.st_ino)
                    if key in seen:
                        continue
                    seen.add(key)
                total += st.st_blocks * BLOCK
                inodes += 1
    return TreeUsage(total, inodes, tuple(sorted(skipped)), unreadable, first, reason)
