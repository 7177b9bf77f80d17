"""Observe: read the node into a `NodeSnapshot` (the only step of a plan that does I/O)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kubegc_cli.core.gcpause import cyclic_gc_paused
from kubegc_cli.core.model import (
    Container,
    ContainerState,
    FilesystemUsage,
    Image,
    NodeSnapshot,
)
from kubegc_cli.node.host.kubelet import DEFAULT_POD_LOGS_DIR
from kubegc_cli.node.host.logs import LogRoots, LogSizer
from kubegc_cli.node.host.mounts import MountTable

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient

Clock = Callable[[], int]


def wall_clock_ns() -> int:
    """Nanoseconds since the epoch, the real clock."""
    return time.time_ns()


@cyclic_gc_paused
def observe_node(
    client: CriClient,
    host_root: Path,
    *,
    statuses: str = "dead",
    log_layout: bool = False,
    annotations: bool = True,
    images: bool = False,
    sandboxes: bool = False,
    pod_logs_dir: str = DEFAULT_POD_LOGS_DIR,
    mounts: MountTable | None = None,
    clock: Clock = wall_clock_ns,
    sizer: LogSizer | None = None,
) -> NodeSnapshot:
    """Read containers (and, if asked, sandboxes, images and image filesystems) from the runtime.

        `statuses` chooses which containers get a `ContainerStatus` call for their log path, finish
    time and exit code: `"dead"` (all but RUNNING), `"all"` or `"none"`. With `log_layout`, a
    dead container that got no status call takes its log path from the kubelet's log layout
    (`kubelet_log_path`: labels and restart count, no call), so planning 100,000 containers
    needs no 100,000 calls; executors still read each container's status right before removing
    it and remove the log the runtime names. `annotations` False keeps only each container's
    restart count (`CriClient.list_containers`). Log sizes are read under `host_root`: only
    files kubegc may delete count (in the kubelet's directory below `pod_logs_dir`, reached
    without following a link, not mount points; `mounts` defaults to this process's mount
    table; `sizer`, when given, measures them instead and keeps why a log may not be removed:
    `LogSizer.note_for`). Containers that vanish between the list and their status call are
    left out. Raises `RuntimeUnavailable` if any list or status call fails: a partial
    inventory must never be planned on.
    """
    info = client.check()
    now = clock()
    listed = client.list_containers(annotations=annotations)
    if statuses == "none":
        wanted: list[Container] = []
    elif statuses == "all":
        wanted = listed
    else:
        wanted = [c for c in listed if c.state is not ContainerState.RUNNING]
    found = dict(client.container_statuses([c.id for c in wanted]))
    mounts = mounts if mounts is not None else MountTable.read()
    if sizer is None:
        sizer = LogSizer(LogRoots(host_root, pod_logs_dir), mounts)
    if log_layout:  # (the listing's own objects: filled in, not copied)
        sizer.fill_layout_logs(
            c for c in listed if c.state is not ContainerState.RUNNING and c.id not in found
        )
    statused = [(c, st) for c in listed if (st := found.get(c.id)) is not None]
    sizes = iter(sizer.sizes_of([(st.log_path, c) for c, st in statused]))  # one batch
    containers: list[Container] = []
    for c in listed:
        if c.id not in found:
            containers.append(c)
            continue
        st = found[c.id]
        if st is None:
            continue
        containers.append(
            c.with_status(
                state=st.state,
                finished_at=st.finished_at,
                exit_code=st.exit_code,
                log_path=st.log_path,
                log_bytes=next(sizes),
            )
        )
    sbx = tuple(client.list_sandboxes()) if sandboxes else ()
    imgs: tuple[Image, ...] = ()
    img_fs: tuple[FilesystemUsage, ...] = ()
    ctr_fs: tuple[FilesystemUsage, ...] = ()
    if images:
        imgs = tuple(client.list_images())
        ifs, cfs = client.image_fs_info()
        img_fs, ctr_fs = tuple(ifs), tuple(cfs)
    return NodeSnapshot(
        captured_at=now,
        endpoint=client.endpoint.display,
        runtime=info,
        containers=tuple(containers),
        sandboxes=sbx,
        images=imgs,
        image_filesystems=img_fs,
        container_filesystems=ctr_fs,
    )
