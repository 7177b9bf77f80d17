"""Container log files: how big they are and removing them as the kubelet does.

When the kubelet removes a container it first removes the container's log file (ContainerStatus
`log_path`) with its rotated siblings (`<log>.<timestamp>`, `.gz`), then the legacy symlink
`/var/log/containers/<pod>_<namespace>_<container>-<id>.log` (the part before `.log` cut to
251 characters); if removing the log fails, the container is not removed
(kuberuntime_container.go `removeContainer`, `removeContainerLog`).

kubegc adds its safety rules: it only deletes files whose directory lies inside the kubelet's
`podLogsDir` (after resolving symlinks), never a file that is a mount point, never follows a
symlink (a link is removed, not its target), and only removes a legacy entry that is a symlink.
All host paths are resolved under `host_root`.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from kubegc_cli.host.kubelet import CONTAINER_LOGS_DIR
from kubegc_cli.host.mounts import OPEN_DIR, MountTable, mount_id
from kubegc_cli.host.tree import Pin
from kubegc_cli.model import (
    ANNOTATION_RESTART_COUNT,
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    fill_listed_log,
)

LEGACY_NAME_MAX = 251


class LogRemovalError(Exception):
    """A log file could not be removed; the container must then be left in place."""


def on_host(host_root: Path, host_path: str) -> str:
    """A host absolute path as seen from this process (under `host_root`), normalised
    lexically; `..` never climbs above the host's `/` (symlinks are not resolved here: see
    `resolve_on_host`)."""
    clean = os.path.normpath("/" + host_path.lstrip("/"))
    root = str(host_root)
    if root in ("", "/"):
        return clean
    return os.path.normpath(os.path.join(root, clean.lstrip("/")))


def host_path_of(host_root: Path, local_path: str) -> str:
    """The host path of a local path under `host_root` (the inverse of `on_host`).

    A path outside `host_root` is returned unchanged (normalised).
    """
    local = os.path.normpath(local_path)
    root = os.path.normpath(str(host_root))
    if root == "/":
        return local
    if local == root:
        return "/"
    if local.startswith(root + "/"):
        return local[len(root) :]
    return local


MAX_SYMLINKS = 40  # what Linux path resolution allows (ELOOP beyond)


def resolve_on_host(host_root: Path, host_path: str) -> str:
    """The local path of `host_path` with every symlink resolved as the host would resolve it.

    With `host_root` `/` this is `os.path.realpath`. Otherwise each component is resolved
    under `host_root`: an absolute link target starts again at `host_root` (never at this
    process's `/`), and `..` never climbs above it. Components that do not exist are kept as
    written (like `realpath`). Raises `OSError` (ELOOP) after 40 symlinks.
    """
    root = os.path.realpath(str(host_root))
    if root == "/":
        return os.path.realpath(host_path)
    pending = [p for p in host_path.split("/") if p]
    pending.reverse()  # a stack: the next component is last
    resolved: list[str] = []
    links = 0
    while pending:
        name = pending.pop()
        if name == ".":
            continue
        if name == "..":
            if resolved:
                resolved.pop()
            continue
        candidate = os.path.join(root, *resolved, name)
        try:
            st = os.lstat(candidate)
        except OSError:
            resolved.append(name)
            continue
        if not stat.S_ISLNK(st.st_mode):
            resolved.append(name)
            continue
        links += 1
        if links > MAX_SYMLINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), host_path)
        target = os.readlink(candidate)
        if target.startswith("/"):
            resolved = []
        pending.extend(reversed([p for p in target.split("/") if p]))
    return os.path.join(root, *resolved)


_PINS: dict[tuple[str, str], Pin] = {}
_PINS_LOCK = threading.Lock()


def pinned_on_host(host_root: Path, host_path: str) -> Pin:
    """The directory `host_path` resolved as on the host (`resolve_on_host`) and held open
    (`Pin`), once per process: the first call (when the plan is made) decides, and every later
    call for the same directory gets that `Pin`, whatever was put on the path since. Its
    `path` is "" when the directory resolves to the host's `/` itself or loops (nothing
    below it is ever removed)."""
    key = (os.path.realpath(str(host_root)), os.path.normpath(host_path))
    with _PINS_LOCK:
        pin = _PINS.get(key)
        if pin is None:
            try:
                real = resolve_on_host(host_root, host_path).rstrip("/")
            except OSError:  # a symlink loop (ELOOP): no directory
                real = ""
            if real == key[0].rstrip("/"):
                real = ""
            pin = _PINS[key] = Pin.open(real, host_path_of(Path(key[0]), real)) if real else Pin("")
        return pin


def release_pins() -> None:
    """Close every `Pin` taken by `pinned_on_host` (at the end of a run)."""
    with _PINS_LOCK:
        for pin in _PINS.values():
            pin.close()
        _PINS.clear()


def legacy_symlink_name(pod_name: str, namespace: str, container_name: str, cid: str) -> str:
    """`<pod>_<namespace>_<container>-<id>.log`, the part before `.log` cut to 251 characters."""
    return f"{pod_name}_{namespace}_{container_name}-{cid}"[:LEGACY_NAME_MAX] + ".log"


def kubelet_log_dir(pod_logs_dir: str, labels: Mapping[str, str]) -> str:
    """The directory, with a trailing `/`, the kubelet gives the logs of the container these
    labels name: `<podLogsDir>/<namespace>_<pod>_<uid>/<container>/` (kubelet
    `BuildPodLogsDirectory`, `BuildContainerLogsDirectory`). "" when a label is missing or a
    part could not be a name the kubelet writes (empty, `.`/`..`, or with `/` or NUL)."""
    ns = labels.get(LABEL_POD_NAMESPACE, "")
    pod = labels.get(LABEL_POD_NAME, "")
    uid = labels.get(LABEL_POD_UID, "")
    name = labels.get(LABEL_CONTAINER_NAME, "")
    for part in (ns, pod, uid, name):
        if not part or part in (".", "..") or "/" in part or "\0" in part:
            return ""
    return f"{pod_logs_dir.rstrip('/')}/{ns}_{pod}_{uid}/{name}/"


def kubelet_log_name(container: Container) -> str:
    """`<restartCount>.log`, the name of a container's log file in its `kubelet_log_dir`
    (the `io.kubernetes.container.restartCount` annotation); "" when the annotation is
    missing or not a decimal number."""
    restarts = container.annotations.get(ANNOTATION_RESTART_COUNT, "")
    if not restarts.isdigit() or not restarts.isascii():
        return ""
    return f"{int(restarts)}.log"


def kubelet_log_path(pod_logs_dir: str, container: Container) -> str:
    """The host path the kubelet gives a container's log, from the container's labels alone.

    `<podLogsDir>/<namespace>_<pod>_<uid>/<container>/<restartCount>.log`: `kubelet_log_dir`
    and `kubelet_log_name`. "" when either is "": such a container's log path is known only
    from `ContainerStatus`.
    """
    name = kubelet_log_name(container)
    folder = kubelet_log_dir(pod_logs_dir, container.labels) if name else ""
    return folder + name if folder else ""


def foreign_log(pod_logs_dir: str, container: Container, log_path: str) -> str:
    """ "" when `log_path`, a log path the runtime reports for `container`, is the very path the
    kubelet gives that container's log (`kubelet_log_path` under `pod_logs_dir`, as written),
    else why kubegc deletes no log there: a runtime may report any path, and one in another
    pod's or container's directory, or another attempt's file, is that one's log (it may be
    being written). Source of the layout: kubelet `BuildContainerLogsDirectory`."""
    expected = kubelet_log_path(os.path.normpath(pod_logs_dir), container)
    if not expected:
        return f"log {log_path} left: the container's labels do not give the kubelet's log path"
    if log_path != expected:
        return f"log {log_path} is not where the kubelet puts this container's ({expected}); left"
    return ""


def log_files(local_log: str) -> list[tuple[str, os.stat_result]]:
    """The log file and its rotated siblings that exist, with their lstat results.

    Only regular files and symlinks are returned (never directories).
    """
    out: list[tuple[str, os.stat_result]] = []
    directory, base = os.path.split(local_log)
    try:
        with os.scandir(directory) as it:
            names = [e.name for e in it if e.name == base or e.name.startswith(base + ".")]
    except OSError:
        return out
    for name in sorted(names):
        p = os.path.join(directory, name)
        try:
            st = os.lstat(p)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            out.append((p, st))
    return out


def _layout_parts(prefix: str, path: str) -> list[str] | None:
    """`[pod dir, container dir, file]` when `path` is `<prefix><pod dir>/<container dir>/<file>`
    (`prefix` ends in `/`) with no part empty, `.` or `..`; None for any other path."""
    if not path.startswith(prefix):
        return None
    parts = path[len(prefix) :].split("/")
    if len(parts) != 3 or any(p in ("", ".", "..") for p in parts):
        return None
    return parts


def _is_plain_dir(local: str) -> bool:
    """True if `local` is a directory and not a symlink (one `lstat`)."""
    try:
        return stat.S_ISDIR(os.lstat(local).st_mode)
    except OSError:
        return False


@dataclass(frozen=True)
class LogRoots:
    """Where kubegc may delete log files. Paths are host paths; `host_root` is this side's `/`.

    Every path is resolved as the host resolves it (`resolve_on_host`: an absolute symlink
    target starts again at `host_root`, `..` never leaves it).
    """

    host_root: Path
    pod_logs_dir: str
    container_logs_dir: str = CONTAINER_LOGS_DIR

    @cached_property
    def pin(self) -> Pin:
        """podLogsDir resolved as on the host and held open since it was first resolved in
        this run (`pinned_on_host`: when the plan was made); log files are removed relative
        to it."""
        return pinned_on_host(self.host_root, self.pod_logs_dir)

    @cached_property
    def real_pod_logs_dir(self) -> str:
        """podLogsDir as this process sees it with every symlink resolved as on the host (when
        the plan was made), without a trailing `/`; "" when it resolves to the host's `/`
        itself (then no log is inside it: kubegc never deletes logs anywhere on the host)."""
        return self.pin.path

    @cached_property
    def _local_prefix(self) -> str:
        return on_host(self.host_root, self.pod_logs_dir).rstrip("/") + "/"

    @cached_property
    def links_pin(self) -> Pin:
        """The legacy symlink directory resolved as on the host and held open since it was
        first resolved in this run (`pinned_on_host`)."""
        return pinned_on_host(self.host_root, self.container_logs_dir)

    @cached_property
    def local_container_logs_dir(self) -> str:
        """The legacy symlink directory (`/var/log/containers`) as this process sees it, its
        symlinks resolved as on the host; "" when it loops or resolves to the host's `/`."""
        return self.links_pin.path

    def resolve(self, local_path: str) -> str:
        """`local_path` (a path under `host_root`) with every symlink resolved as on the host."""
        return resolve_on_host(self.host_root, host_path_of(self.host_root, local_path))

    def real_log_dir(self, local_path: str) -> str | None:
        """The real directory (symlinks resolved as on the host) of the file `local_path` if
        it is inside the real podLogsDir (or is it); None if it is not, or if podLogsDir
        resolves to the host's `/`.

        A path of the kubelet's shape `<podLogsDir>/<pod dir>/<container dir>/<file>` whose two
        directories are not symlinks is settled with two `lstat`s (its real directory is then
        `<real podLogsDir>/<pod dir>/<container dir>`); any other path is resolved in full.
        """
        root = self.real_pod_logs_dir
        if not root:
            return None
        parts = _layout_parts(self._local_prefix, local_path)
        if parts is not None:
            pod_dir = f"{root}/{parts[0]}"
            if _is_plain_dir(pod_dir) and _is_plain_dir(f"{pod_dir}/{parts[1]}"):
                return f"{pod_dir}/{parts[1]}"
        try:
            parent = self.resolve(os.path.dirname(local_path))
        except OSError:  # a symlink loop on the way (ELOOP): the log is nowhere kubegc may go
            return None
        return parent if parent == root or parent.startswith(root + "/") else None

    def mount_on_the_way(self, real_dir: str, mounts: MountTable) -> str:
        """The first directory strictly below the real podLogsDir, down to `real_dir` (a
        `real_log_dir`), that is a mount point; "" when there is none. Nothing is deleted
        into a mounted directory (the mount's source may be anywhere)."""
        root = self.real_pod_logs_dir
        path = root
        for part in real_dir[len(root) + 1 :].split("/") if real_dir != root else ():
            path = f"{path}/{part}"
            if mounts.is_mount_point(path):
                return path
        return ""


def deletable_log_files(
    roots: LogRoots, log_path: str, mounts: MountTable
) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    """The log files of `log_path` kubegc may delete (their real paths, with their lstat
    results), and notes on those it may not.

    Files must lie in a directory inside podLogsDir (symlinks resolved as on the host) with no
    mount point between podLogsDir and it, and must not be mount points themselves (a file
    that is a symlink: its resolved target must not be one); when the mount table could not be
    read (`mounts.known` False) none may be deleted. The files are listed in the real
    directory, so what is checked is what is deleted. Used both to plan (bytes to free) and
    to remove, so the two agree.
    """
    if not log_path:
        return [], []
    if "\0" in log_path:
        return [], [f"log path {log_path!r} holds a NUL byte; left"]
    local = on_host(roots.host_root, log_path)
    real_dir = roots.real_log_dir(local)
    if real_dir is None:
        return [], [f"log {log_path} is outside podLogsDir {roots.pod_logs_dir}; left"]
    if not mounts.known:
        return [], [f"{mounts.error}; log {log_path} left"]
    mounted = roots.mount_on_the_way(real_dir, mounts)
    if mounted:
        return [], [f"{roots.pin.show(mounted)} is a mount point; log {log_path} left"]
    files, notes = [], []
    for path, st in log_files(os.path.join(real_dir, os.path.basename(local))):
        # a file that is not a link is where its real directory says
        try:
            real = roots.resolve(path) if stat.S_ISLNK(st.st_mode) else path
        except OSError:  # a link in a loop: removing the link itself frees nothing outside
            real = path
        if mounts.is_mount_point(real):
            notes.append(f"{roots.pin.show(path)} is a mount point; left")
        else:
            files.append((path, st))
    return files, notes


def log_bytes(roots: LogRoots, log_path: str, mounts: MountTable) -> int | None:
    """Bytes removing the container's logs would free (regular files kubegc may delete).

    None when the runtime reported no log path.
    """
    if not log_path:
        return None
    files, _ = deletable_log_files(roots, log_path, mounts)
    return sum(st.st_size for _, st in files if stat.S_ISREG(st.st_mode))


class LogSizer:
    """`log_bytes` for many containers at once, each log directory listed once.

    Same answer as `log_bytes(roots, log_path, mounts)` for every path. A path of the kubelet's
    shape, `<podLogsDir>/<pod dir>/<container dir>/<file>`, is measured by descending from the
    real podLogsDir through directories that are not symlinks (so the file's real directory is
    inside podLogsDir by construction, without resolving each path); each directory's check and
    listing is remembered. Any other path, or one through a symlinked directory, is measured by
    `log_bytes` itself.
    """

    def __init__(self, roots: LogRoots, mounts: MountTable) -> None:
        self.roots = roots
        self.mounts = mounts
        self._prefix = roots.pod_logs_dir.rstrip("/") + "/"
        self._dirs: dict[str, dict[str, int]] = {}  # local container dir -> `_sums`
        self._kinds: dict[str, str] = {}

    def _kind(self, local: str) -> str:
        """What `local` is (remembered): "dir" (not a symlink), "link", "missing" or "other"."""
        kind = self._kinds.get(local)
        if kind is None:
            try:
                mode = os.lstat(local).st_mode
            except FileNotFoundError:
                kind = "missing"
            except OSError:
                kind = "other"
            else:
                kind = "dir" if stat.S_ISDIR(mode) else "link" if stat.S_ISLNK(mode) else "other"
            self._kinds[local] = kind
        return kind

    def _sums(self, local_dir: str) -> dict[str, int]:
        """Bytes by log name in one container log directory (remembered): each regular file
        that is not a mount point counts for its own name and for every part of it before a
        dot (`0.log.20261130-010101.gz` for `0.log.20261130-010101`, `0.log` and `0`), so a
        log's total is the log with its rotated siblings."""
        sums = self._dirs.get(local_dir)
        if sums is not None:
            return sums
        sums = {}
        try:
            with os.scandir(local_dir) as it:
                entries = list(it)
        except OSError:
            entries = []
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode) or self.mounts.is_mount_point(entry.path):
                continue  # symlinks and the rest free nothing (as in `log_bytes`)
            name, size = entry.name, st.st_size
            dot = name.find(".")
            while dot != -1:
                sums[name[:dot]] = sums.get(name[:dot], 0) + size
                dot = name.find(".", dot + 1)
            sums[name] = sums.get(name, 0) + size
        self._dirs[local_dir] = sums
        return sums

    def _in_layout(self, pod_dir: str, ctr_dir: str) -> tuple[str, str]:
        """How to size a log in `<podLogsDir>/<pod_dir>/<ctr_dir>/` (names checked by the
        caller): ("dir", the local container directory), ("link", "": through a symlinked
        directory, measured by `log_bytes`) or ("none", "": nothing there to free)."""
        root = self.roots.real_pod_logs_dir
        if not self.mounts.known or not root:
            return ("none", "")
        local = f"{root}/{pod_dir}"
        kind = self._kind(local)
        if kind == "dir":
            local = f"{local}/{ctr_dir}"
            kind = self._kind(local)
        if kind == "dir":
            return (
                ("none", "") if self.roots.mount_on_the_way(local, self.mounts) else ("dir", local)
            )
        return ("link", "") if kind == "link" else ("none", "")

    def _measure(self, how: tuple[str, str], log_path: str, name: str) -> int | None:
        kind, local = how
        if kind == "dir":
            return self._sums(local).get(name, 0)
        if kind == "link":  # a symlinked directory: resolve it the careful way
            return log_bytes(self.roots, log_path, self.mounts)
        return 0  # nothing there, or not a directory: no log file to free

    def bytes_of(self, log_path: str, container: Container | None = None) -> int | None:
        """Bytes removing this log (and its rotated siblings) would free; None without a path.
        With `container`, the runtime's path for its log: 0 unless it is that container's own
        (`foreign_log`: nothing else is removed with it)."""
        if not log_path:
            return None
        if container is not None and foreign_log(self.roots.pod_logs_dir, container, log_path):
            return 0
        parts = _layout_parts(self._prefix, log_path)
        if parts is None:
            return log_bytes(self.roots, log_path, self.mounts)
        return self._measure(self._in_layout(parts[0], parts[1]), log_path, parts[2])

    def fill_layout_logs(self, containers: Iterable[Container]) -> None:
        """Give each container its kubelet layout log (`kubelet_log_path` under this sizer's
        podLogsDir) and that log's `bytes_of`, set in place (`model.fill_listed_log`: only
        for containers a listing just made); one the layout cannot name is left as it is.

        The directory of each labels object (the attempts of a container share one) is
        worked out and checked once: 100,000 containers cost 100,000 dictionary lookups, not
        100,000 path parses.
        """
        root = self.roots.pod_logs_dir
        folders: dict[int, tuple[str, tuple[str, str]]] = {}  # id(labels) -> (dir, how to size)
        names: dict[int, str] = {}  # id(annotations) -> `kubelet_log_name`
        held = []  # (the labels and annotations objects, alive while their ids are keys)
        for c in containers:
            notes = c.annotations
            name = names.get(id(notes))
            if name is None:
                held.append(notes)
                name = names[id(notes)] = kubelet_log_name(c)
            if not name:
                continue
            labels = c.labels
            known = folders.get(id(labels))
            if known is None:
                held.append(labels)
                folder = kubelet_log_dir(root, labels)
                how = ("none", "")
                if folder:
                    pod_dir, ctr_dir = folder[len(self._prefix) : -1].split("/")
                    how = self._in_layout(pod_dir, ctr_dir)
                known = folders[id(labels)] = (folder, how)
            folder, how = known
            if folder:
                path = folder + name
                fill_listed_log(c, path, self._measure(how, path, name))


def _unlink(path: str, what: str, dir_fd: int | None = None, shown: str = "") -> bool:
    """Unlink `path` (never following it; with `dir_fd`, its name in that open directory).
    False if it was already gone; `LogRemovalError` naming `what` and the path (`shown`, if
    given) on any other failure."""
    try:
        if dir_fd is None:
            os.unlink(path)
        else:
            os.unlink(os.path.basename(path), dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    except OSError as exc:
        why = exc.strerror or exc
        raise LogRemovalError(f"cannot remove {what} {shown or path}: {why}") from None
    return True


def _open_below(pin: Pin, directory: str) -> int:
    """Open `directory`, `pin.path` or a directory below it, relative to `pin.fd` one component
    at a time without following a symlink (`OSError` ELOOP/ENOTDIR if one is there now)."""
    if directory != pin.path and not directory.startswith(pin.path + "/"):
        raise OSError(errno.EXDEV, f"not below {pin.path}", directory)
    fd = os.dup(pin.fd)
    rest = directory[len(pin.path) :].strip("/")
    try:
        for part in rest.split("/") if rest else ():
            sub = os.open(part, OPEN_DIR, dir_fd=fd)
            os.close(fd)
            fd = sub
    except BaseException:
        os.close(fd)
        raise
    return fd


def _unlink_logs(roots: LogRoots, files: list[tuple[str, os.stat_result]], notes: list[str]) -> int:
    """Unlink `files` (from `deletable_log_files`: one real directory) by name in that
    directory, opened once and checked to be on podLogsDir's own mount (`mount_id`): a mount
    made there since the mount table was read leaves them, with a note. Returns the bytes of
    the regular files removed that had no other hard link; `LogRemovalError` when an unlink
    fails."""
    directory = os.path.dirname(files[0][0])
    pin = roots.pin
    if why := pin.usable():
        notes.append(f"{why}; logs in {pin.show(directory)} left")
        return 0
    try:
        fd = _open_below(pin, directory)
    except FileNotFoundError:
        return 0
    except OSError as exc:
        shown = f"{pin.show(directory)}: {exc.strerror or exc}"
        raise LogRemovalError(f"cannot open {shown}") from None
    try:
        if mount_id(fd) != pin.mnt:
            shown = pin.show(directory)
            notes.append(f"{shown} is not on podLogsDir's mount (a mount point now?); left")
            return 0
        freed = 0
        for path, _ in files:
            try:  # what is there now, in the pinned directory
                st = os.stat(os.path.basename(path), dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                continue
            removed = _unlink(path, "log", fd, pin.show(path))
            if removed and stat.S_ISREG(st.st_mode) and st.st_nlink == 1:  # else none freed
                freed += st.st_size
        return freed
    finally:
        os.close(fd)


def remove_container_logs(
    roots: LogRoots, container: Container, log_path: str, mounts: MountTable
) -> tuple[int, str]:
    """Remove a container's log files and legacy symlink. Returns (bytes freed, note).

    The note is "" when everything expected was removed, else it says what was left and why
    (not the container's own log path — `foreign_log` —, outside podLogsDir, a mount point).
    Raises `LogRemovalError` when a deletion fails for another reason.
    """
    foreign = foreign_log(roots.pod_logs_dir, container, log_path) if log_path else ""
    files: list[tuple[str, os.stat_result]] = []
    if foreign:
        notes = [foreign]
    else:
        files, notes = deletable_log_files(roots, log_path, mounts)
    freed = _unlink_logs(roots, files, notes) if files else 0
    link_dir = roots.local_container_logs_dir
    if not link_dir:
        notes.append(f"{roots.container_logs_dir} is in a symlink loop; legacy link left")
        return freed, "; ".join(notes)
    name = legacy_symlink_name(
        container.pod_name, container.pod_namespace, container.container_name, container.id
    )
    if "/" in name or "\0" in name:  # labels no kubelet writes: never leave its directory
        notes.append(f"legacy link name {name!r} is not a file name; left")
        return freed, "; ".join(notes)
    link = os.path.join(link_dir, name)
    pin = roots.links_pin
    link_st: os.stat_result | None
    try:
        link_st = os.stat(name, dir_fd=pin.fd, follow_symlinks=False) if pin.fd >= 0 else None
    except OSError:
        link_st = None
    if link_st is not None and stat.S_ISLNK(link_st.st_mode):
        _unlink(link, "symlink", pin.fd, pin.show(link))
    elif link_st is not None:
        notes.append(f"{pin.show(link)} is not a symlink; left")
    return freed, "; ".join(notes)
