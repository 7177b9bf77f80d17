"""Where the image filesystem is: the one place kubegc locates it and the nodefs layout.

The image filesystem is the first one CRI `ImageFsInfo` names (`image_filesystem`), as the
kubelet takes it; its mountpoints are remembered between runs (`runtime_filesystems`,
`node.cri.fscache`). `fs_layout`/`layout_of` tell whether it is a filesystem of its own
beside nodefs (the kubelet root), and whether the runtime keeps writable layers on a third one.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.model import FilesystemUsage
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.cri import fscache
from kubegc_cli.node.cri.endpoint import Endpoint, resolve_endpoint
from kubegc_cli.node.host.bounded import stat_of
from kubegc_cli.node.host.logs import on_host

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient


@dataclass(slots=True)
class FsLayout:
    """The filesystems behind the disk signals (host paths): `nodefs` (the kubelet root dir),
    `imagefs` (the CRI image filesystem mountpoint, "" when unknown), `containerfs` (CRI's
    container filesystem when reported apart, else ""); `dedicated_imagefs` when the image
    filesystem is another device than nodefs; `split` when images and writable layers are on
    different filesystems too; `layout_known` False when either filesystem could not be
    stat'ed (then one filesystem is assumed)."""

    nodefs: str
    imagefs: str = ""
    containerfs: str = ""
    dedicated_imagefs: bool = False
    split: bool = False
    layout_known: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodefs": self.nodefs,
            "imagefs": self.imagefs or None,
            "containerfs": self.containerfs or None,
            "dedicated_imagefs": self.dedicated_imagefs,
            "split": self.split,
        }


def image_filesystem(mountpoints: Sequence[str], runtime: str = "the runtime") -> str:
    """The image filesystem's mountpoint (a host path): the first of the image filesystems
    CRI `ImageFsInfo` reports (`mountpoints`, in the runtime's order), as the kubelet takes
    it. Raises `RuntimeUnavailable` ("`runtime` reports no image filesystem") when there is
    none."""
    if not mountpoints:
        raise RuntimeUnavailable(f"{runtime} reports no image filesystem")
    return mountpoints[0]


def runtime_filesystems(
    s: Settings,
    info: Callable[[str], None],
    warn: Callable[[str], None],
    *,
    connect: Callable[[Endpoint], CriClient],
) -> tuple[list[str], list[str]]:
    """The runtime's image and container filesystem mountpoints (host paths, as CRI
    `ImageFsInfo` names them). Remembered in the state dir while the runtime's socket stays
    the same file (`kubegc_cli.node.cri.fscache`): then no gRPC client is even loaded. Otherwise the
    runtime is asked and the answer remembered. With `--snapshot` the runtime is always asked
    and nothing is remembered. `info` says which. Raises `RuntimeUnavailable` when the runtime
    cannot be reached, `BadInput` for a malformed endpoint. `info` and `warn` take one line
    each (diagnostics, as `-v` shows them; warnings). `connect` opens the client that asks
    the runtime at the endpoint resolved (`commands.flow.connect_at`)."""
    ep = resolve_endpoint(s.runtime_endpoint, s.env, s.host_root, s.runtime_endpoint_source)
    info(f"runtime endpoint {ep.display} (from {ep.source})")
    where = fscache.cache_path(s.state_dir)
    ident = None
    if s.snapshot is not None:
        why = "not used with --snapshot"
    elif not os.access(ep.path, os.R_OK | os.W_OK):
        why = f"no access to the socket {ep.path}"
    else:
        ident = fscache.socket_identity(ep.path)
        why = f"{ep.path} is not a socket"
    if ident is not None:
        found, why = fscache.lookup(s.state_dir, ep.address, ident, s.host_root, warn)
        if found is not None:
            info(
                f"image filesystem from the cache {where}: the runtime's socket {ep.path} is "
                f"the one it was asked on ({fscache.describe_identity(ident)})"
            )
            return found
    client = connect(ep)
    try:
        image_fs, container_fs = client.image_fs_info()
    finally:
        client.close()
    images = [f.mountpoint for f in image_fs]
    containers = [f.mountpoint for f in container_fs]
    info(f"image filesystem from the runtime (CRI ImageFsInfo); cache {where}: {why}")
    if ident is not None and images:
        # a runtime restarted during the call may have answered on another socket
        if fscache.socket_identity(ep.path) != ident:
            info("not remembered: the runtime's socket changed during the call")
        else:
            why_not = fscache.remember(s.state_dir, ep.address, ident, images, containers)
            info(f"not remembered: {why_not}" if why_not else f"remembered in {where}")
    return images, containers


def _device(local: str) -> int:
    """The device of `local`, or -1 when it cannot be read or gives no answer within
    `--timeout` (`host.bounded.stat_of`: a hung mount is never waited on)."""
    try:
        return stat_of(local, follow_symlinks=True).st_dev
    except OSError:
        return -1


def fs_layout(
    host_root: Path,
    root_dir: str,
    images: Sequence[FilesystemUsage],
    containers: Sequence[FilesystemUsage],
) -> FsLayout:
    """The filesystem layout from CRI `ImageFsInfo` (`images`, `containers`: its
    `FilesystemUsage` lists) and the kubelet root `root_dir` (host paths, read under
    `host_root`): imagefs is the first image filesystem's mountpoint, dedicated when its
    device differs from the root dir's; containerfs is set when the runtime reports a container
    filesystem elsewhere, and the layout is split when imagefs is dedicated too (kubelet
    eviction: the layout detection at the first synchronize). Raises `RuntimeUnavailable`
    when the runtime reports no image filesystem."""
    return layout_of(
        host_root, root_dir, [f.mountpoint for f in images], [f.mountpoint for f in containers]
    )


def layout_of(
    host_root: Path, root_dir: str, images: Sequence[str], containers: Sequence[str]
) -> FsLayout:
    """`fs_layout` from the mountpoints alone (host paths): `images` and `containers` are
    the image and container filesystems' mountpoints, in the runtime's order."""
    fs = FsLayout(nodefs=root_dir, imagefs=image_filesystem(images))
    image_dev = _device(on_host(host_root, fs.imagefs))
    root_dev = _device(on_host(host_root, root_dir))
    fs.layout_known = image_dev != -1 and root_dev != -1
    fs.dedicated_imagefs = fs.layout_known and image_dev != root_dev
    if containers and containers[0] not in ("", fs.imagefs):
        fs.containerfs = containers[0]
        fs.split = fs.dedicated_imagefs
    return fs
