"""Pod log directories and legacy container-log symlinks, read and removed under `--host-root`.

Layout (the kubelet's): `<podLogsDir>/<namespace>_<pod>_<uid>/<container>/<n>.log`
(a bare `<uid>` directory is the legacy form) and `/var/log/containers/*.log` symlinks named
`<pod>_<namespace>_<container>-<containerID>.log`.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from kubegc_cli.core.podlogs import (
    LinkedLog,
    PodLogDir,
    container_id_from_link,
    pod_uid_from_dir,
)
from kubegc_cli.node.host.bounded import Stalled, Watch, bounded, bounded_each, listdir
from kubegc_cli.node.host.du import TreeUsage, tree_usage
from kubegc_cli.node.host.logs import resolve_on_host
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.tree import Pin, Refused, TreeRemoval, remove_tree


def read_pod_log_dirs(local_root: str, mounts: MountTable) -> list[PodLogDir]:
    """Every entry of the pod log root (local path). Raises `OSError` if the root is unreadable
    (`host.bounded.Stalled` when listing it gets no answer within `--timeout`).

    Each directory's `bytes` is what it takes on disk as `du -x` counts it (`tree_usage`:
    allocated blocks of every inode below, the directories' own included, each once): never
    through a symlink, never into a mount point the table names (not even stat'ed) or onto
    another device; a walk that gets no answer within `--timeout` stops and the directory's
    `stalled` names where (its size is then partial).
    """
    out = []
    for e in listdir(local_root):
        is_link = e.is_symlink()
        if not is_link and not e.is_dir(follow_symlinks=False):
            continue
        mount = stalled = ""
        unknown = "" if is_link else mounts.error
        size = changed = 0
        if not is_link:  # an entry of the real root, not a link: its path is real
            if mounts.is_mount_point(e.path):
                mount = e.path
            else:
                below = [p for p in mounts.points if p.startswith(e.path.rstrip("/") + "/")]
                mount = min(below) if below else ""
                usage = tree_usage(e.path, mounts)
                size, stalled, changed = usage.bytes, usage.stalled, usage.changed_ns
        out.append(
            PodLogDir(
                name=e.name,
                path=e.path,
                uid=pod_uid_from_dir(e.name),
                bytes=size,
                is_symlink=is_link,
                mount=mount,
                mounts_unknown=unknown,
                stalled=stalled,
                changed_ns=changed,
            )
        )
    return out


def pod_log_dir_usage(local_path: str, mounts: MountTable | None = None) -> TreeUsage | None:
    """What the pod log directory `local_path` (a real local path) holds: its `bytes` on disk
    (allocated blocks, the directories' own included) and latest change `changed_ns`, walked
    as `read_pod_log_dirs` walks it (`tree_usage`: partial if a call hangs past `--timeout`);
    an empty `TreeUsage` when it is a symlink, no directory or gives no answer, None when it
    is gone."""

    def mode(watch: Watch) -> int:
        watch.at(local_path)
        return os.lstat(local_path).st_mode

    try:
        kind = bounded(mode)
    except FileNotFoundError:
        return None
    except OSError:  # (`Stalled` too)
        return TreeUsage()
    if not stat.S_ISDIR(kind):
        return TreeUsage()
    return tree_usage(local_path, mounts)


def _host_path(real_root: str, local: str) -> str | None:
    """The host path of the local path `local` under the resolved host root (None outside)."""
    if real_root == "/":
        return local
    if local == real_root:
        return "/"
    if local.startswith(real_root + "/"):
        return local[len(real_root) :]
    return None


def link_dangles(local_link: str, host_root: Path = Path("/")) -> bool:
    """Whether the symlink `local_link` (a local path under `host_root`) points to nothing on
    the host. False when it is no symlink (or gone).

    The target is resolved as the host resolves it, never on this process's `/`: an absolute
    target (and every absolute link met on the way) starts again at `host_root`, a relative
    one starts at the link's own (resolved) directory, and `..` never climbs above
    `host_root`. A target that cannot be resolved (a symlink loop) points nowhere. With
    `host_root` `/` this is "the link exists, `os.path.exists` says no". Each component is
    resolved under `host.bounded` (`resolve_on_host`): a target in a mount that gives no
    answer within `--timeout` does not dangle, and that mount is not touched again.
    """
    if not os.path.islink(local_link):
        return False
    real_root = os.path.realpath(str(host_root))
    parent = _host_path(real_root, os.path.dirname(local_link))
    if parent is None:
        return False  # not under the host root: not kubegc's to judge
    try:
        host_dir = _host_path(real_root, resolve_on_host(Path(real_root), parent))
        target = os.readlink(local_link)
    except OSError:
        return False
    if host_dir is None:
        return False
    return _target_dangles(real_root, host_dir, target)


def _target_dangles(real_root: str, host_dir: str, target: str) -> bool:
    """Whether the link target `target`, of a link in the host directory `host_dir`, resolves
    to nothing under `real_root` (this side's host `/`)."""
    host_target = target if target.startswith("/") else os.path.join(host_dir, target)
    try:
        resolved = resolve_on_host(Path(real_root), host_target)
    except Stalled:
        return False  # no answer (a hung mount): not known to dangle
    except OSError:
        return True  # a loop (ELOOP): it resolves to nothing
    return not os.path.lexists(resolved)


def links_into(local_dir: str, host_dir: str, pod_dirs: set[str]) -> list[tuple[str, str, str]]:
    """(name, local path, pod dir) of the `*.log` symlinks in `local_dir` (the local path of
    the link directory `host_dir`) whose target, as written (a relative one taken from
    `host_dir`), lies below one of `pod_dirs` (host paths of pod log directories): the links a
    removal of those directories leaves dangling (the kubelet removes both together)."""
    if not pod_dirs:
        return []
    try:
        return _into(_log_symlinks(local_dir), host_dir, pod_dirs)
    except OSError:
        return []


def _into(
    entries: list[os.DirEntry[str]], host_dir: str, pod_dirs: set[str]
) -> list[tuple[str, str, str]]:
    """`links_into` for the listed `entries` of the link directory `host_dir`."""
    out: list[tuple[str, str, str]] = []
    for e in entries:
        try:
            target = os.path.normpath(os.path.join(host_dir, os.readlink(e.path)))
        except OSError:
            continue
        parts = target.split("/")
        for n in range(len(parts) - 1, 1, -1):
            top = "/".join(parts[:n])
            if top in pod_dirs:
                out.append((e.name, e.path, top))
                break
    return out


def dangling_links(local_dir: str, host_root: Path = Path("/")) -> list[tuple[str, str]]:
    """(name, local path) of the dangling symlinks `*.log` in `local_dir` (a local path under
    `host_root`; missing dir: none). Targets are resolved under `host_root` (`link_dangles`).
    """
    try:
        entries = _log_symlinks(local_dir)
    except FileNotFoundError:
        return []
    return [(e.name, e.path) for e in _dangling(entries, host_root)]


def _dangling(entries: list[os.DirEntry[str]], host_root: Path) -> list[os.DirEntry[str]]:
    """The links among `entries` that dangle (`link_dangles`), looked up in bounded walks
    (`bounded_each`): a target on a mount that gives no answer within `--timeout` is not known
    to dangle, so its link is not listed (nothing unsure is removed)."""
    found: list[os.DirEntry[str]] = []

    def look(e: os.DirEntry[str], watch: Watch) -> None:
        watch.at(e.path)
        if link_dangles(e.path, host_root):
            found.append(e)

    hung = {id(entries[i]) for i, _ in bounded_each(entries, look)}
    return [e for e in found if id(e) not in hung]


def legacy_links(
    local_dir: str, host_dir: str, host_root: Path, pod_dirs: set[str]
) -> list[tuple[str, str, str]]:
    """(name, local path, pod dir) of the `*.log` symlinks in `local_dir` (the local path of
    the link directory `host_dir`) that `gc logs` judges, from one listing: the dangling ones
    (pod dir "": `dangling_links`), then those into one of `pod_dirs` (`links_into`). Missing
    dir: none; `OSError` when it cannot be listed."""
    try:
        entries = _log_symlinks(local_dir)
    except FileNotFoundError:
        return []
    dangling = [(e.name, e.path, "") for e in _dangling(entries, host_root)]
    names = {name for name, _, _ in dangling}
    rest = [e for e in entries if e.name not in names]
    return dangling + (_into(rest, host_dir, pod_dirs) if pod_dirs else [])


def linked_logs(pin: Pin, host_root: Path) -> list[LinkedLog]:
    """The `*.log` symlinks of the pinned legacy link directory `pin` (`/var/log/containers`)
    whose target exists (resolved under `host_root`, `link_dangles`: a target on a mount that
    gives no answer within `--timeout` is not known to exist, and its link is not listed),
    each with its container ID parsed from the name and the link's own modification time.
    A directory that is missing or not usable: none; `OSError` when it cannot be listed."""
    if pin.usable() or not pin.path:
        return []
    try:
        entries = _log_symlinks(pin.path)
    except FileNotFoundError:
        return []
    dangling = {e.name for e in _dangling(entries, host_root)}
    out: list[LinkedLog] = []
    for e in entries:
        if e.name in dangling:
            continue
        try:
            target = os.readlink(e.name, dir_fd=pin.fd)
            mtime = os.stat(e.name, dir_fd=pin.fd, follow_symlinks=False).st_mtime
        except OSError:
            continue
        host = os.path.join(pin.show(), e.name)
        out.append(LinkedLog(e.name, host, target, container_id_from_link(e.name), mtime))
    return out


def remove_link(local_path: str, parent: Pin) -> None:
    """Unlink the symlink `local_path`, an entry of the pinned link directory `parent`, if it
    is still a symlink (wherever it points), else `LogDirChanged`. Read and unlinked relative
    to `parent` as it was when planned."""
    name = os.path.basename(local_path)
    why_not = parent.usable() or (os.path.dirname(local_path) != parent.path and "not in it")
    if why_not:
        raise LogDirChanged(f"{parent.show()}: {why_not}; {parent.show(local_path)} left")
    mode = os.stat(name, dir_fd=parent.fd, follow_symlinks=False).st_mode
    if not stat.S_ISLNK(mode):
        raise LogDirChanged(f"{parent.show(local_path)} is no longer a symlink; left")
    os.unlink(name, dir_fd=parent.fd)


def _log_symlinks(local_dir: str) -> list[os.DirEntry[str]]:
    """The `*.log` symlinks in `local_dir`, by name; `OSError` when it cannot be listed
    (`host.bounded.Stalled` when the listing gives no answer within `--timeout`)."""
    return [e for e in listdir(local_dir) if e.name.endswith(".log") and e.is_symlink()]


class LogDirChanged(Exception):
    """The directory is no longer what was planned (now a mount point, or gone); left alone."""


def remove_pod_log_dir(local_path: str, mounts: MountTable, parent: Pin) -> TreeRemoval:
    """Remove a pod log directory (or, for a symlink, only the link), an entry of the pinned
    podLogsDir `parent`: what was removed, its `bytes_freed` the blocks freed (`size_freed`
    the log files' apparent size).

    Re-checks right before: no longer a directory, a mount table that could not be read
    (`mounts.known` False: anything may be mounted), a mount point at or below it now, a path
    at or below it that gave no answer to a walk in this run (`remove_tree`), or a podLogsDir
    that is not usable → `LogDirChanged`, nothing removed. Everything is done
    relative to `parent` as it was when planned (`remove_tree`): never through a symlink or a
    mount put on the way since, never into another mount (checked by mount ID as it walks);
    what it had to leave is in the result, which is then not `complete`. Raises `OSError`
    when the directory cannot be opened.
    """
    if mounts.known and mounts.is_mount_point(local_path):  # (a stale one would hang a stat)
        raise LogDirChanged(f"{parent.show(local_path)} has a mount point at or below it now; left")
    try:
        name, st = parent.entry(local_path)
    except Refused as exc:
        raise LogDirChanged(str(exc)) from None
    if stat.S_ISLNK(st.st_mode):
        os.unlink(name, dir_fd=parent.fd)
        return TreeRemoval()
    if not stat.S_ISDIR(st.st_mode):
        raise LogDirChanged(f"{parent.show(local_path)} is no longer a directory; left")
    if not mounts.known:
        raise LogDirChanged(f"{mounts.error}; {parent.show(local_path)} left")
    if mounts.has_mount_below(local_path):
        shown = parent.show(local_path)
        raise LogDirChanged(f"{shown} has a mount point at or below it now; left")
    try:
        return remove_tree(local_path, mounts, parent)
    except Refused as exc:
        raise LogDirChanged(str(exc)) from None


def remove_dangling_link(local_path: str, host_root: Path, parent: Pin) -> None:
    """Unlink a legacy symlink, an entry of the pinned link directory `parent`, if it is
    still a dangling symlink (its target resolved under `host_root`), else `LogDirChanged`.
    The link is read and unlinked relative to `parent` as it was when planned."""
    name = os.path.basename(local_path)
    why_not = parent.usable() or (os.path.dirname(local_path) != parent.path and "not in it")
    if why_not:
        raise LogDirChanged(f"{parent.show()}: {why_not}; {parent.show(local_path)} left")
    gone = f"{parent.show(local_path)} is no longer a dangling symlink; left"
    try:
        target = os.readlink(name, dir_fd=parent.fd)
    except OSError:  # gone, or no symlink
        raise LogDirChanged(gone) from None
    real_root = os.path.realpath(str(host_root))
    host_dir = _host_path(real_root, parent.path)
    if host_dir is None or not _target_dangles(real_root, host_dir, target):
        raise LogDirChanged(gone)
    os.unlink(name, dir_fd=parent.fd)
