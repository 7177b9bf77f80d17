"""Reading one small file from a host kubegc does not trust, without waiting on it.

A look before the open (`os.stat`, then `open`) proves nothing: the file may be swapped for a
FIFO, whose open waits for a writer that never comes, or a device between the two. So the
file is opened once, without blocking (`O_NONBLOCK`: a FIFO's open returns at once), and what
was opened is checked (`fstat`): anything but a regular file is refused before a byte is read.
"""

from __future__ import annotations

import errno
import os
import stat

_OPEN = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC


class NotRegularFile(OSError):
    """What was opened is no regular file (a FIFO, a device, a socket, a directory)."""

    def __init__(self, path: str) -> None:
        super().__init__(errno.EINVAL, "not a regular file", path)


def read_regular(
    path: str, limit: int, *, dir_fd: int | None = None, follow_symlinks: bool = True
) -> bytes:
    """The bytes of the regular file at `path` (relative to the open directory `dir_fd` when
    given), at most `limit` + 1 of them: more than `limit` says the file is larger than
    `limit`, which the caller names. Opened without blocking, and with `O_NOFOLLOW` unless
    `follow_symlinks`; the opened file is checked with `fstat`.

    Raises `OSError`: `FileNotFoundError`; `errno.ELOOP` for a symbolic link not followed
    (or a loop of links); `NotRegularFile` for anything but a regular file; any error of the
    open or the read."""
    flags = _OPEN if follow_symlinks else _OPEN | os.O_NOFOLLOW
    fd = os.open(path, flags, dir_fd=dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise NotRegularFile(path)
        data = b""
        while len(data) <= limit and (chunk := os.read(fd, min(1 << 20, limit + 1 - len(data)))):
            data += chunk
        return data
    finally:
        os.close(fd)
