"""Container log directories read for log rotation, and the rotation's file operations, under
`--host-root`.

Reading: `<podLogsDir>/<namespace>_<pod>_<uid>/<container>/` of the kubelet's layout, each
directory opened from podLogsDir held open since the plan (`LogRoots.pin`) one component at a
time (`host.logs.open_log_dir`: never through a symlink, never into a mount point or onto
another mount), listed, and each entry named as a container log (`<n>.log`,
`<n>.log.<suffix>`) stat'ed relative to it without following it. Every directory is read in
bounded walks (`host.bounded`): one that gives no answer within `--timeout` is given up and
named.

Acting (`residue clean`): `unlink_log_file` and `rotate_live_log`, each in the directory
opened the same way right before, on the file only while it is still the file that was
planned (its device and inode), never through a link.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from kubegc_cli.core.model import Container, ContainerState
from kubegc_cli.core.podlogs import ContainerLogDir, LogFile, LogOwner, live_log_of
from kubegc_cli.core.sizes import on_disk
from kubegc_cli.node.host.bounded import Watch, bounded, bounded_each
from kubegc_cli.node.host.logs import (
    LogRoots,
    OpenLogDir,
    kubelet_log_dir,
    kubelet_log_path,
    open_log_dir,
)
from kubegc_cli.node.host.mounts import OPEN_DIR, MountTable, mount_id
from kubegc_cli.node.host.tree import Refused

#: The most entries of one container log directory kubegc reads (a directory holding more
#: is named, and judged on the first this many names in name order).
MAX_ENTRIES = 10_000


@dataclass(slots=True)
class LogDirListing:
    """What `read_container_log_dirs` found: the directories, and `notes` on what it could not
    read (a hung or unreadable directory, podLogsDir not usable), host paths."""

    dirs: list[ContainerLogDir] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def log_owners(
    pod_logs_dir: str, containers: Iterable[Container]
) -> tuple[dict[str, LogOwner], frozenset[str]]:
    """(owners, unsure) from the runtime's containers: the host path of each container's live
    log as the kubelet names it (`host.logs.kubelet_log_path`: from its labels and its
    restart count annotation) → its `LogOwner` (a running container wins a path two
    containers name); `unsure` the host paths (no trailing `/`) of the container log
    directories of containers whose labels give the directory but not the file (no restart
    count): any `<n>.log` there may be theirs."""
    owners: dict[str, LogOwner] = {}
    unsure: set[str] = set()
    for c in containers:
        path = kubelet_log_path(pod_logs_dir, c)
        if not path:
            folder = kubelet_log_dir(pod_logs_dir, c.labels)
            if folder:
                unsure.add(folder.rstrip("/"))
            continue
        running = c.state is ContainerState.RUNNING
        if path not in owners or running:
            owners[path] = LogOwner(c.id, running)
    return owners, frozenset(unsure)


def read_container_log_dirs(
    roots: LogRoots, mounts: MountTable, want: Callable[[str], bool]
) -> LogDirListing:
    """Every container log directory below podLogsDir of a pod directory named
    `<namespace>_<pod>_<uid>` with `want(uid)`, its container log files listed (`LogFile`:
    sizes, allocated bytes, modification time, device and inode, regular or not). Symlinks,
    mount points, directories on another mount and names of another shape are passed over
    (nothing of theirs is listed); a directory that cannot be read or gives no answer within
    `--timeout` is named in `notes`."""
    out = LogDirListing()
    pin = roots.pin
    if pin.stalled or not pin.path or pin.usable():
        why = pin.stalled or pin.usable() or f"podLogsDir {roots.pod_logs_dir} resolves to /"
        out.notes.append(f"container log rotation not looked at: {why}")
        return out
    if not mounts.known:
        out.notes.append(f"container log rotation not looked at: {mounts.error}")
        return out
    prefix = roots.layout_prefix

    def names_in(fd: int, watch: Watch, where: str) -> list[str]:
        watch.at(where)
        with os.scandir(fd) as it:
            return sorted(e.name for e in it)

    try:
        pods = bounded(lambda watch: names_in(pin.fd, watch, pin.path))
    except OSError as exc:
        out.notes.append(f"cannot list {pin.show()}: {exc.strerror or exc}")
        return out
    wanted = []
    for name in pods:
        parts = name.split("_")
        if len(parts) == 3 and all(parts) and want(parts[2]):
            wanted.append(name)

    def one_pod(pod: str, watch: Watch) -> None:
        local = f"{pin.path}/{pod}"
        if mounts.is_mount_point(local):
            return
        watch.at(local)
        try:
            fd = os.open(pod, OPEN_DIR, dir_fd=pin.fd)
        except OSError:
            return  # a symlink (ELOOP), no directory, gone: not the kubelet's
        try:
            if mount_id(fd) != pin.mnt:
                return
            containers = names_in(fd, watch, local)
        except OSError as exc:
            out.notes.append(f"cannot list {pin.show(local)}: {exc.strerror or exc}")
            return
        finally:
            os.close(fd)
        uid = pod.rsplit("_", 1)[1]
        for ctr in containers:
            opened = open_log_dir(roots, f"{prefix}{pod}/{ctr}/-", mounts, watch)
            if opened.fd < 0:
                continue  # a symlink, a file, a mount point: no container log directory
            try:
                files = _files(opened, watch)
            except OSError as exc:
                out.notes.append(f"cannot list {pin.show(opened.local)}: {exc.strerror or exc}")
                continue
            finally:
                opened.close()
            if len(files) >= MAX_ENTRIES:
                out.notes.append(f"{pin.show(opened.local)}: only the first {MAX_ENTRIES} read")
            out.dirs.append(ContainerLogDir(f"{prefix}{pod}/{ctr}", uid, ctr, tuple(files)))

    for i, stalled in bounded_each(wanted, one_pod):
        out.notes.append(f"{prefix}{wanted[i]}: {stalled.strerror}")
    return out


def _files(opened: OpenLogDir, watch: Watch) -> list[LogFile]:
    """The container log files in the open directory (at most `MAX_ENTRIES` names)."""
    with os.scandir(opened.fd) as it:
        names = sorted(e.name for e in it if live_log_of(e.name))[:MAX_ENTRIES]
    out = []
    for name in names:
        watch.at(f"{opened.local}/{name}")
        try:
            st = os.stat(name, dir_fd=opened.fd, follow_symlinks=False)
        except OSError:
            continue
        out.append(
            LogFile(
                name,
                st.st_size,
                on_disk(st.st_blocks),
                st.st_mtime,
                stat.S_ISREG(st.st_mode),
                st.st_dev,
                st.st_ino,
            )
        )
    return out


# --- acting -----------------------------------------------------------------------------------


def _same_file(details: Mapping[str, object], st: os.stat_result, *, unchanged: bool) -> bool:
    """`st` is the file a finding planned (its device and inode), a regular file, and (with
    `unchanged`) not written since (its modification time)."""
    return (
        stat.S_ISREG(st.st_mode)
        and st.st_dev == details.get("dev")
        and st.st_ino == details.get("ino")
        and (not unchanged or st.st_mtime == details.get("mtime"))
    )


def _opened(roots: LogRoots, log_dir: str, mounts: MountTable, watch: Watch) -> OpenLogDir:
    """The container log directory `log_dir` (a host path of the kubelet's layout) opened as
    `read_container_log_dirs` opened it; `Refused` when it cannot be."""
    try:
        opened = open_log_dir(roots, f"{log_dir}/-", mounts, watch)
    except OSError as exc:
        raise Refused(f"cannot open {log_dir}: {exc.strerror or exc}; left") from None
    if opened.fd < 0:
        raise Refused(f"{opened.why or f'{log_dir} is gone'}; left")
    return opened


def unlink_log_file(
    roots: LogRoots, mounts: MountTable, details: Mapping[str, object], *, twin: str = ""
) -> tuple[int, int]:
    """Unlink the file `details["name"]` in the container log directory
    `details["container_log_dir"]` (host paths; `details` as `policy.logrotation` makes them),
    only while it is the same regular file (`dev`, `ino`), unchanged since (`mtime`), not a
    mount point, and (with `twin`) while the regular file `twin` beside it is the one judged
    at the scan — the same `judged_dev`, `judged_ino`, `judged_size` and `judged_mtime` of
    `details` — and has not changed for `details["grace"]` seconds by now (a `.gz` replaced
    since, even by an empty file, no longer stands for the uncompressed one); returns
    (allocated bytes freed, apparent size): 0 bytes when it has other links. `Refused` when
    it changed or the directory is not the kubelet's; `FileNotFoundError` when it is gone;
    `OSError` when the unlink fails; `Stalled` when a call gives no answer within
    `--timeout`."""
    name = str(details.get("name", ""))
    log_dir = str(details.get("container_log_dir", ""))
    for n in (name, twin) if twin else (name,):
        if not live_log_of(n) or "/" in n:
            raise Refused(f"{n!r} is not a container log's name; {name} left")

    def walk(watch: Watch) -> tuple[int, int]:
        opened = _opened(roots, log_dir, mounts, watch)
        try:
            local = f"{opened.local}/{name}"
            if mounts.is_mount_point(local):
                raise Refused(f"{log_dir}/{name} is a mount point; left")
            watch.at(local)
            st = os.stat(name, dir_fd=opened.fd, follow_symlinks=False)
            if not _same_file(details, st, unchanged=True):
                raise Refused(f"{log_dir}/{name} is no longer the file planned; left")
            if twin:
                try:
                    kept = os.stat(twin, dir_fd=opened.fd, follow_symlinks=False)
                except FileNotFoundError:
                    raise Refused(f"{log_dir}/{twin} is gone; {name} left") from None
                if not stat.S_ISREG(kept.st_mode):
                    raise Refused(f"{log_dir}/{twin} is no longer a file; {name} left")
                judged = {
                    "judged_dev": kept.st_dev,
                    "judged_ino": kept.st_ino,
                    "judged_size": kept.st_size,
                    "judged_mtime": kept.st_mtime,
                }
                if any(details.get(k) != v for k, v in judged.items()):
                    raise Refused(f"{log_dir}/{twin} is not the file judged at the scan "
                                  f"(replaced or changed since); {name} left")  # fmt: skip
                grace = details.get("grace")
                age = time.time() - kept.st_mtime
                if not isinstance(grace, int | float) or age < grace:
                    raise Refused(f"{log_dir}/{twin} changed {max(int(age), 0)}s ago: it may "
                                  f"still be being written; {name} left")  # fmt: skip
            os.unlink(name, dir_fd=opened.fd)
            freed = on_disk(st.st_blocks) if st.st_nlink == 1 else 0
            return freed, st.st_size
        finally:
            opened.close()

    return bounded(walk)


#: The format of a rotated log's timestamp: the kubelet's `timestampFormat`
#: "20060102-150405" (Go), in the local time of the process that rotates, as Go's
#: `time.Now()` gives it to the kubelet.
TIMESTAMP_FORMAT = "%Y%m%d-%H%M%S"


@dataclass(frozen=True, slots=True)
class Rotated:
    """What `rotate_live_log` did: the rotated file's host path and its size then."""

    rotated: str
    size: int


def rotate_live_log(
    roots: LogRoots,
    mounts: MountTable,
    details: Mapping[str, object],
    reopen: Callable[[str], None],
    *,
    now: float | None = None,
) -> Rotated:
    """Rotate a running container's live log as the kubelet does (container_log_manager.go
    `rotateLatestLog`): rename `<n>.log` to `<n>.log.<YYYYMMDD-hhmmss>` (`now`, default the
    wall clock, in local time) in its directory, then `reopen(container_id)` (CRI
    `ReopenContainerLog`: the runtime opens a fresh `<n>.log`); when that raises, the file is
    renamed back (only while nothing has taken `<n>.log` meanwhile) and the error is raised
    again. Never truncates, never removes.

    Checked right before, in the directory opened as `read_container_log_dirs` opened it: the
    live log is still the file planned (`dev`, `ino`), a regular file at or over
    `details["max_size"]`; the rotated name is free (the kubelet's rename would replace a
    file there; kubegc leaves it). `Refused` otherwise; `OSError` when a rename fails;
    `Stalled` when a call gives no answer within `--timeout`.
    """
    name = str(details.get("name", ""))
    log_dir = str(details.get("container_log_dir", ""))
    cid = str(details.get("container_id", ""))
    max_size = details.get("max_size")
    if live_log_of(name) != name or not cid or not isinstance(max_size, int):
        raise Refused(f"{log_dir}/{name}: not a live log with its container; left")
    stamp = time.strftime(TIMESTAMP_FORMAT, time.localtime(time.time() if now is None else now))
    rotated = f"{name}.{stamp}"

    def rename(watch: Watch) -> int:
        opened = _opened(roots, log_dir, mounts, watch)
        try:
            watch.at(f"{opened.local}/{name}")
            st = os.stat(name, dir_fd=opened.fd, follow_symlinks=False)
            if not _same_file(details, st, unchanged=False):  # (a live log is being written)
                raise Refused(f"{log_dir}/{name} is no longer the file planned; left")
            if st.st_size < max_size:
                raise Refused(f"{log_dir}/{name} is under {max_size} bytes now; left")
            try:
                os.stat(rotated, dir_fd=opened.fd, follow_symlinks=False)
            except FileNotFoundError:
                pass
            else:
                raise Refused(f"{log_dir}/{rotated} exists already; left")
            os.rename(name, rotated, src_dir_fd=opened.fd, dst_dir_fd=opened.fd)
            return st.st_size
        finally:
            opened.close()

    size = bounded(rename)
    try:
        reopen(cid)
    except BaseException:
        bounded(lambda watch: _rename_back(roots, mounts, log_dir, rotated, name, watch))
        raise
    return Rotated(f"{log_dir}/{rotated}", size)


def _rename_back(
    roots: LogRoots, mounts: MountTable, log_dir: str, rotated: str, name: str, watch: Watch
) -> None:
    """Rename `rotated` back to `name` (the kubelet does, so that the next round rotates it
    again) unless `name` exists now: then `OSError` (EEXIST) naming both."""
    opened = _opened(roots, log_dir, mounts, watch)
    try:
        try:
            os.stat(name, dir_fd=opened.fd, follow_symlinks=False)
        except FileNotFoundError:
            os.rename(rotated, name, src_dir_fd=opened.fd, dst_dir_fd=opened.fd)
            return
        raise OSError(
            errno.EEXIST,
            f"{log_dir}/{name} exists again; the rotated log stays {log_dir}/{rotated}",
        )
    finally:
        opened.close()
