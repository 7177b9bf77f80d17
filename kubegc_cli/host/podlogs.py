"""Pod log directories and legacy container-log symlinks, read and removed under `--host-root`.

Layout (the kubelet's): `<podLogsDir>/<namespace>_<pod>_<uid>/<container>/<n>.log`
(a bare `<uid>` directory is the legacy form) and `/var/log/containers/*.log` symlinks named
`<pod>_<namespace>_<container>-<containerID>.log`.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass

from kubegc_cli.host.mounts import MountTable


@dataclass(frozen=True, slots=True)
class PodLogDir:
    """One entry of the pod log root. `path` is local (under the host root); `uid` parsed from
    the name (last `_` field); `bytes` of regular files below (not following symlinks);
    `mount` is "" or a mount point at or below it (such a directory is never removed)."""

    name: str
    path: str
    uid: str
    bytes: int
    is_symlink: bool
    mount: str = ""


@dataclass(frozen=True, slots=True)
class LegacyLink:
    """A dangling `/var/log/containers/*.log` symlink. `container_id` is the parsed ID ("" if
    the name does not parse); `state` the runtime's answer for it: a `ContainerState` value,
    "" when the runtime does not know the container, or "none" when it answered with nothing."""

    name: str
    path: str
    container_id: str
    state: str


def pod_uid_from_dir(name: str) -> str:
    """The kubelet's parse: the last `_`-separated field; a name without `_` is all UID."""
    return name.rsplit("_", 1)[-1]


def container_id_from_link(name: str) -> str:
    """The kubelet's legacy-symlink parse: last `-` field, minus `.log`, at least 6 characters.

    Returns "" when the name does not parse (such a dangling link is removed).
    """
    last = name.rsplit("-", 1)[-1]
    if not last.endswith(".log"):
        return ""
    cid = last[: -len(".log")]
    return cid if len(cid) >= 6 else ""


def _tree_bytes(path: str) -> int:
    total = 0
    for root, dirs, files in os.walk(path, followlinks=False):
        for name in files + dirs:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def read_pod_log_dirs(local_root: str, mounts: MountTable) -> list[PodLogDir]:
    """Every entry of the pod log root (local path). Raises `OSError` if the root is unreadable."""
    out = []
    with os.scandir(local_root) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        is_link = e.is_symlink()
        if not is_link and not e.is_dir(follow_symlinks=False):
            continue
        real = os.path.realpath(e.path)
        mount = ""
        if not is_link:
            if mounts.is_mount_point(real):
                mount = real
            else:
                below = [p for p in mounts.points if p.startswith(real.rstrip("/") + "/")]
                mount = min(below) if below else ""
        out.append(
            PodLogDir(
                name=e.name,
                path=e.path,
                uid=pod_uid_from_dir(e.name),
                bytes=0 if is_link else _tree_bytes(e.path),
                is_symlink=is_link,
                mount=mount,
            )
        )
    return out


def dangling_links(local_dir: str) -> list[tuple[str, str]]:
    """(name, local path) of the dangling symlinks `*.log` in `local_dir` (missing dir: none)."""
    out: list[tuple[str, str]] = []
    try:
        with os.scandir(local_dir) as it:
            entries = sorted(it, key=lambda e: e.name)
    except FileNotFoundError:
        return out
    for e in entries:
        if not e.name.endswith(".log") or not e.is_symlink():
            continue
        if not os.path.exists(e.path):  # follows the link: it points nowhere
            out.append((e.name, e.path))
    return out


class LogDirChanged(Exception):
    """The directory is no longer what was planned (now a mount point, or gone); left alone."""


def remove_pod_log_dir(local_path: str, mounts: MountTable) -> int:
    """Remove a pod log directory (or, for a symlink, only the link). Returns bytes freed.

    Re-checks right before: a mount point at or below it now, or no longer a directory →
    `LogDirChanged`. Never follows symlinks (shutil.rmtree uses fd-based traversal on Linux).
    Raises `OSError` on failure.
    """
    if os.path.islink(local_path):
        os.unlink(local_path)
        return 0
    if not os.path.isdir(local_path):
        raise LogDirChanged(f"{local_path} is no longer a directory; left")
    real = os.path.realpath(local_path)
    if mounts.is_mount_point(real) or mounts.has_mount_below(real):
        raise LogDirChanged(f"{local_path} has a mount point at or below it now; left")
    freed = _tree_bytes(local_path)
    shutil.rmtree(local_path)
    return freed


def remove_dangling_link(local_path: str) -> None:
    """Unlink a legacy symlink if it is still a dangling symlink, else `LogDirChanged`."""
    if not os.path.islink(local_path) or os.path.exists(local_path):
        raise LogDirChanged(f"{local_path} is no longer a dangling symlink; left")
    os.unlink(local_path)
