"""A mount that never answers, as a stale NFS server or a dead FUSE daemon leaves one.

`hung_mount(target)` mounts a FUSE filesystem on `target` whose daemon (this process, holding
`/dev/fuse`) never reads a request: every stat, open or listing that reaches it blocks in
the kernel (killably, as hung NFS and FUSE requests do) until the mount is taken down, which
closing the descriptor does (the blocked calls then fail with ENOTCONN). Needs root.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")

needs_fuse = pytest.mark.skipif(
    os.geteuid() != 0 or not os.path.exists("/dev/fuse"), reason="a FUSE mount needs root"
)

_MNT_DETACH = 2


@contextmanager
def hung_mount(target: Path) -> Iterator[Path]:
    """A FUSE mount on `target` (an existing directory) that never answers, for the block."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open("/dev/fuse", os.O_RDWR | os.O_CLOEXEC)
    options = f"fd={fd},rootmode=40000,user_id=0,group_id=0".encode()
    if libc.mount(b"kubegc-test-hung", os.fsencode(target), b"fuse", 0, options) != 0:
        err = ctypes.get_errno()
        os.close(fd)
        raise OSError(err, os.strerror(err), str(target))
    try:
        yield target
    finally:
        os.close(fd)  # aborts the connection: whatever still waits gets ENOTCONN
        libc.umount2(os.fsencode(target), _MNT_DETACH)


def returns_within(seconds: float, call: Callable[[], T]) -> T:
    """`call()`'s result if it returns within `seconds`, else the test fails (a call that
    hangs in the kernel is left behind in a daemon thread, not waited for)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        pytest.fail(f"still blocked after {seconds} s (hung on the mount)")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]
