"""Filesystem figures as the kubelet reads them: statfs blocks and bavail, so reserved blocks
count as used and the figures differ from df's Use%."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.node.host.bounded import Stalled, Watch, bounded, walk_timeout
from kubegc_cli.node.host.logs import on_host


@dataclass(frozen=True, slots=True)
class FsStats:
    """Bytes and inodes of one filesystem: `capacity` = blocks × frsize, `available` =
    bavail × frsize (what an unprivileged writer may still use), `inodes`, `inodes_free`;
    `free` = bfree × frsize, which also counts the blocks reserved for root (so
    `free - available` is the reserve); `device` is `st_dev` of the path (paths with one
    `device` are one filesystem)."""

    path: str
    capacity: int
    available: int
    inodes: int
    inodes_free: int
    free: int = 0
    device: int = 0


def fs_stats(host_root: Path, host_path: str) -> FsStats:
    """statvfs of `host_path` under `host_root`, within `--timeout` (`host.bounded`: a stale
    NFS or FUSE mount there costs one timeout, never a hang). Raises `RuntimeUnavailable`
    (exit 3) when it cannot be read or gives no answer in time: an unreadable image filesystem
    is an unreadable inventory."""
    local = on_host(host_root, host_path)

    def statfs(watch: Watch) -> tuple[os.statvfs_result, int]:
        if not watch.may_enter(local):
            raise Stalled(local, walk_timeout())
        watch.at(local)
        return os.statvfs(local), os.stat(local).st_dev

    try:
        st, device = bounded(statfs)
    except OSError as exc:  # (a `Stalled` too: "no answer within 1s (a hung mount?)")
        raise RuntimeUnavailable(f"cannot stat filesystem {local}: {exc.strerror or exc}") from None
    return FsStats(
        path=local,
        capacity=st.f_blocks * st.f_frsize,
        available=st.f_bavail * st.f_frsize,
        inodes=st.f_files,
        inodes_free=st.f_favail,
        free=st.f_bfree * st.f_frsize,
        device=device,
    )
