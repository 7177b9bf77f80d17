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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from kubegc_cli.core.model import (
    ANNOTATION_RESTART_COUNT,
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    fill_listed_log,
)
from kubegc_cli.core.sizes import on_disk
from kubegc_cli.node.host.bounded import (
    Stalled,
    Watch,
    bounded,
    bounded_each,
    hung_at,
    walk_timeout,
)
from kubegc_cli.node.host.kubelet import CONTAINER_LOGS_DIR
from kubegc_cli.node.host.mounts import OPEN_DIR, MountTable, mount_id
from kubegc_cli.node.host.tree import Pin

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

    Each component is resolved under `host_root` (with `host_root` `/` this is what
    `os.path.realpath` does): an absolute link target starts again at `host_root` (never at
    this process's `/`), and `..` never climbs above it. Components that do not exist are
    kept as written (like `realpath`). Raises `OSError` (ELOOP) after 40 symlinks, and
    `host.bounded.Stalled` when a component gives no answer within `--timeout` (a hung
    mount: the component is remembered and not touched again, `host.bounded.hung_at`; one a
    walk was stuck at before raises it at once). Runs under `host.bounded.bounded`.
    """
    return bounded(lambda watch: _resolve(host_root, host_path, watch))


def _resolve(host_root: Path, host_path: str, watch: Watch) -> str:
    """`resolve_on_host`'s work, each call that may block reported to `watch` first."""
    watch.at(str(host_root))
    root = os.path.realpath(str(host_root))
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
        if not watch.may_enter(candidate):
            raise Stalled(candidate, walk_timeout())
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
_PINS_LOCK = threading.Lock()  # held only to read or change `_PINS`, never across a call


def pinned_on_host(host_root: Path, host_path: str) -> Pin:
    """The directory `host_path` resolved as on the host (`resolve_on_host`) and held open
    (`Pin`), once per process: the first call (when the plan is made) decides, and every later
    call for the same directory gets that `Pin`, whatever was put on the path since. Its
    `path` is "" when the directory resolves to the host's `/` itself or loops (nothing
    below it is ever removed).

    Resolving and opening run under `host.bounded.bounded`: when they get no answer within
    `--timeout` (a hung mount), the `Pin` has `stalled` set (naming `host_path`), `fd` -1 and
    `path` the lexical local path, which is remembered as hung (`host.bounded.hung_at`), so
    nothing touches it again; that costs one timeout per directory and process. No lock is
    held while a call may block, so `release_pins` never waits for a call that hangs."""
    asked = (str(host_root), host_path)  # as given: found again without a system call
    with _PINS_LOCK:
        pin = _PINS.get(asked)
    if pin is not None:
        return pin
    key = (os.path.realpath(str(host_root)), os.path.normpath(host_path))
    with _PINS_LOCK:
        pin = _PINS.get(key)
    if pin is None:
        pin = _pin(key[0], key[1])
    with _PINS_LOCK:
        first = _PINS.setdefault(key, pin)
        _PINS.setdefault(asked, first)
    if first is not pin:  # another thread pinned it meanwhile: its pin decides
        pin.close()
    return first


def _pin(root: str, host_path: str) -> Pin:
    """`pinned_on_host`'s work for the resolved host root `root`, not cached."""
    lexical = on_host(Path(root), host_path)

    def hung() -> Pin:
        why = f"{host_path} gave no answer within {walk_timeout():g}s (a hung mount?)"
        return Pin(lexical, host=host_path, stalled=why)

    if hung_at(lexical):
        return hung()
    try:
        real = resolve_on_host(Path(root), host_path).rstrip("/")
    except Stalled:
        return hung()
    except OSError:  # a symlink loop (ELOOP): no directory
        real = ""
    if not real or real == root.rstrip("/"):
        return Pin("")
    host = host_path_of(Path(root), real)

    def open_it(watch: Watch) -> Pin:
        if not watch.may_enter(real):
            raise Stalled(real, walk_timeout())
        return Pin.open(real, host)

    try:
        return bounded(open_it)
    except Stalled:
        return hung()


def release_pins() -> None:
    """Close every `Pin` taken by `pinned_on_host` (at the end of a run). Never waits for a
    pin being taken (the lock is only held to change `_PINS`; given up after a second)."""
    if not _PINS_LOCK.acquire(timeout=1.0):
        return
    try:
        pins = {id(pin): pin for pin in _PINS.values()}  # (a pin is there under two keys)
        _PINS.clear()
    finally:
        _PINS_LOCK.release()
    for pin in pins.values():
        pin.close()


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


@dataclass(frozen=True)
class LogRoots:
    """Where kubegc may delete log files. Paths are host paths; `host_root` is this side's `/`.

    podLogsDir itself is resolved as the host resolves it (`resolve_on_host`: an absolute
    symlink target starts again at `host_root`, `..` never leaves it) and held open (`pin`);
    below it nothing is resolved: a container's log directory is the kubelet's lexical path
    `<podLogsDir>/<pod dir>/<container dir>`, opened one component at a time from the pin
    (`open_log_dir`).
    """

    host_root: Path
    pod_logs_dir: str
    container_logs_dir: str = CONTAINER_LOGS_DIR

    @property
    def pin(self) -> Pin:
        """podLogsDir resolved as on the host and held open since it was first resolved in
        this run (`pinned_on_host`: when the plan was made, within `--timeout`); log files are
        removed relative to it. (Not cached here: `pinned_on_host` caches it without holding a
        lock across a call that may block.)"""
        return pinned_on_host(self.host_root, self.pod_logs_dir)

    @property
    def real_pod_logs_dir(self) -> str:
        """podLogsDir as this process sees it with every symlink resolved as on the host (when
        the plan was made), without a trailing `/`; "" when it resolves to the host's `/`
        itself (then no log is inside it: kubegc never deletes logs anywhere on the host).
        Raises `host.bounded.Stalled` when it gave no answer within `--timeout` (`Pin.stalled`)."""
        return _answered(self.pin)

    @cached_property
    def layout_prefix(self) -> str:
        """podLogsDir as written (a host path, normalised) with a trailing `/`: the start of
        every log path of the kubelet's layout."""
        return os.path.normpath("/" + self.pod_logs_dir.lstrip("/")).rstrip("/") + "/"

    @property
    def links_pin(self) -> Pin:
        """The legacy symlink directory resolved as on the host and held open since it was
        first resolved in this run (`pinned_on_host`, within `--timeout`)."""
        return pinned_on_host(self.host_root, self.container_logs_dir)

    @property
    def local_container_logs_dir(self) -> str:
        """The legacy symlink directory (`/var/log/containers`) as this process sees it, its
        symlinks resolved as on the host; "" when it loops or resolves to the host's `/`.
        Raises `host.bounded.Stalled` when it gave no answer within `--timeout`."""
        return _answered(self.links_pin)


def _answered(pin: Pin) -> str:
    """`pin.path`; `host.bounded.Stalled` naming its host path when it gave no answer."""
    if pin.stalled:
        raise Stalled(pin.host or pin.path, walk_timeout())
    return pin.path


@dataclass(frozen=True, slots=True)
class OpenLogDir:
    """A container's log directory as `open_log_dir` found it: `fd` open on it (-1 when it was
    not opened), `local` its local path (`<pinned podLogsDir>/<pod dir>/<container dir>`, ""
    when the log path is not of the kubelet's layout) and `why`, "" or why no log may be
    removed there (shown with host paths; "" with `fd` -1 when it is simply missing)."""

    fd: int
    local: str
    why: str = ""

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def open_log_dir(
    roots: LogRoots, log_path: str, mounts: MountTable, watch: Watch | None = None
) -> OpenLogDir:
    """Open the directory of `log_path`, a host path of the kubelet's layout
    `<podLogsDir>/<pod dir>/<container dir>/<file>` (podLogsDir as written in `roots`), from
    the held podLogsDir (`LogRoots.pin`) one component at a time, never following a link.

    The kubelet writes its logs there and nowhere else, so kubegc reads and removes them
    there and nowhere else (kubelet `BuildContainerLogsDirectory`). A component that is a
    symlink (even one leading to another directory inside podLogsDir: that is another pod's
    log directory), is not a directory, is a mount point by the mount table (checked before
    it is touched: a stale network mount is never entered) or is not on podLogsDir's own
    mount (its mount ID: a mount made since the table was read) leaves the log, and `why`
    names it. So does a path of another shape, a podLogsDir that resolves to the host's `/`
    or could not be opened when planned, and a mount table that could not be read. Raises
    `OSError` when a component exists but cannot be opened for another reason (EACCES...).
    Each call that may block is reported to `watch` first (when run under `bounded`).
    """
    parts = _layout_parts(roots.layout_prefix, log_path)
    if parts is None:
        below = f"below podLogsDir {roots.pod_logs_dir}"
        return OpenLogDir(-1, "", f"the path is not of the kubelet's layout {below}")
    pin = roots.pin
    if not pin.path:
        loops = f"podLogsDir {roots.pod_logs_dir} resolves to the host's / or loops"
        return OpenLogDir(-1, "", f"{loops}: the log is outside podLogsDir")
    if why := pin.usable():
        return OpenLogDir(-1, "", why)
    if not mounts.known:
        return OpenLogDir(-1, "", mounts.error)
    fd = os.dup(pin.fd)
    local = pin.path
    try:
        for name in parts[:2]:
            local = f"{local}/{name}"
            if mounts.is_mount_point(local):
                return OpenLogDir(-1, local, f"{pin.show(local)} is a mount point")
            if watch is not None:
                watch.at(local)
            try:
                sub = os.open(name, OPEN_DIR, dir_fd=fd)
            except FileNotFoundError:
                return OpenLogDir(-1, local)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                try:
                    mode = os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode
                except FileNotFoundError:
                    return OpenLogDir(-1, local)
                what = "a symlink" if stat.S_ISLNK(mode) else "not a directory"
                return OpenLogDir(-1, local, f"{pin.show(local)} is {what}")
            os.close(fd)
            fd = sub
            if mount_id(fd) != pin.mnt:
                shown = pin.show(local)
                return OpenLogDir(
                    -1, local, f"{shown} is not on podLogsDir's mount (a mount point now?)"
                )
        opened, fd = fd, -1
        return OpenLogDir(opened, local)
    finally:
        if fd >= 0:
            os.close(fd)


def _listed(
    opened: OpenLogDir, base: str, mounts: MountTable, pin: Pin, watch: Watch
) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    """The files named `base` or `base.<anything>` in the open log directory that are regular
    files or symlinks (local paths, lstat results read relative to it), and notes on those
    that are mount points (checked by the table before they are touched; left)."""
    files: list[tuple[str, os.stat_result]] = []
    notes: list[str] = []
    with os.scandir(opened.fd) as it:
        names = sorted(e.name for e in it if e.name == base or e.name.startswith(base + "."))
    for _, path, st in _entries(opened, names, mounts, watch, notes, pin):
        if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
            files.append((path, st))
    return files, notes


def _entries(
    opened: OpenLogDir,
    names: list[str],
    mounts: MountTable,
    watch: Watch,
    notes: list[str] | None = None,
    pin: Pin | None = None,
) -> Iterator[tuple[str, str, os.stat_result]]:
    """(name, local path, lstat) of each of `names` in the open log directory, read relative
    to it; a mount point the table names is never touched (with `notes` and `pin`: noted as
    left), one gone meanwhile is passed over. Each stat is announced to `watch` first."""
    for name in names:
        path = f"{opened.local}/{name}"
        if mounts.is_mount_point(path):
            if notes is not None and pin is not None:
                notes.append(f"{pin.show(path)} is a mount point; left")
            continue
        watch.at(path)
        try:
            st = os.stat(name, dir_fd=opened.fd, follow_symlinks=False)
        except OSError:
            continue
        yield name, path, st


def deletable_log_files(
    roots: LogRoots, log_path: str, mounts: MountTable
) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    """The log files of `log_path` kubegc may delete (local paths in the log's directory as
    `open_log_dir` opens it, with their lstat results), and notes on those it may not.

    The log and its rotated siblings (`<log>.<anything>`), regular files or symlinks (a link
    is removed, never followed), listed in the directory opened from the held podLogsDir
    without following a link, and not mount points; when that directory could not be
    opened as the kubelet's (`open_log_dir`'s `why`), none. Used both to plan (bytes to free)
    and to remove, so the two agree.
    """
    if not log_path:
        return [], []
    if "\0" in log_path:
        return [], [f"log path {log_path!r} holds a NUL byte; left"]
    try:
        return bounded(lambda watch: _deletable(roots, log_path, mounts, watch))
    except Stalled as exc:
        return [], [f"cannot read the directory of log {log_path}: {exc.strerror}; left"]


def _deletable(
    roots: LogRoots, log_path: str, mounts: MountTable, watch: Watch
) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    """`deletable_log_files` for a path without NUL, its calls reported to `watch`."""
    try:
        opened = open_log_dir(roots, log_path, mounts, watch)
    except OSError as exc:
        return [], [f"cannot open the directory of log {log_path}: {exc.strerror or exc}; left"]
    if opened.fd < 0:
        return [], [f"{opened.why}; log {log_path} left"] if opened.why else []
    try:
        return _listed(opened, os.path.basename(log_path), mounts, roots.pin, watch)
    except OSError as exc:
        return [], [f"cannot list {roots.pin.show(opened.local)}: {exc.strerror or exc}; left"]
    finally:
        opened.close()


def log_bytes(roots: LogRoots, log_path: str, mounts: MountTable) -> int | None:
    """Bytes removing the container's logs would free: the blocks on disk
    (`core.sizes.on_disk`) of the regular files kubegc may delete (`deletable_log_files`).

    None when the runtime reported no log path.
    """
    if not log_path:
        return None
    files, _ = deletable_log_files(roots, log_path, mounts)
    return sum(on_disk(st.st_blocks) for _, st in files if stat.S_ISREG(st.st_mode))


class LogSizer:
    """`log_bytes` for many containers at once, each log directory opened and listed once.

    Same answer as `log_bytes(roots, log_path, mounts)` for every path: a log's directory is
    opened as `open_log_dir` opens it (from the held podLogsDir, never through a link) and
    listed; each directory's listing (or why it was not opened: `note_for`) is remembered.
    The directories of a batch are read in one worker under `host.bounded.bounded_each`: one
    that gives no answer within `--timeout` is given up (its logs' sizes are None: unknown,
    and `stalled` names where it hung); the others are still read.
    """

    def __init__(self, roots: LogRoots, mounts: MountTable) -> None:
        self.roots = roots
        self.mounts = mounts
        self._prefix = roots.layout_prefix
        # (pod dir, ctr dir) -> bytes by log name; None when it gave no answer in time
        self._dirs: dict[tuple[str, str], dict[str, int] | None] = {}
        # (pod dir, ctr dir) -> latest mtime or ctime (ns) by log name, grouped as `_dirs`
        self._changed: dict[tuple[str, str], dict[str, int]] = {}
        self._why: dict[tuple[str, str], str] = {}
        self.stalled: list[str] = []  # host paths of the directories given up

    def _read(self, key: tuple[str, str], watch: Watch) -> None:
        """Read one container log directory into `_dirs`: bytes on disk by log name
        (`core.sizes.on_disk`, as `log_bytes` counts), where each
        regular file that is not a mount point counts for its own name and for every part of
        it before a dot (`0.log.20261130-010101.gz` for `0.log.20261130-010101`, `0.log` and
        `0`), so a log's total is the log with its rotated siblings."""
        sums: dict[str, int] = {}
        changed: dict[str, int] = {}
        self._dirs[key] = sums
        self._changed[key] = changed
        pod_dir, ctr_dir = key
        try:
            opened = open_log_dir(
                self.roots, f"{self._prefix}{pod_dir}/{ctr_dir}/-", self.mounts, watch
            )
        except OSError as exc:
            self._why[key] = f"cannot open {pod_dir}/{ctr_dir}: {exc.strerror or exc}"
            return
        if opened.fd < 0:
            if opened.why:
                self._why[key] = opened.why
            return
        try:
            with os.scandir(opened.fd) as it:
                names = [e.name for e in it]
            for name, _, st in _entries(opened, names, self.mounts, watch):
                if not stat.S_ISREG(st.st_mode):
                    continue  # symlinks and the rest free nothing (as in `log_bytes`)
                size = on_disk(st.st_blocks)
                when = max(st.st_mtime_ns, st.st_ctime_ns)
                dot = name.find(".")
                while dot != -1:
                    sums[name[:dot]] = sums.get(name[:dot], 0) + size
                    changed[name[:dot]] = max(changed.get(name[:dot], 0), when)
                    dot = name.find(".", dot + 1)
                sums[name] = sums.get(name, 0) + size
                changed[name] = max(changed.get(name, 0), when)
        except OSError:
            pass
        finally:
            opened.close()

    def _read_all(self, keys: Iterable[tuple[str, str]]) -> None:
        """Read every directory of `keys` not read yet, in one bounded batch."""
        todo = sorted({k for k in keys if k not in self._dirs})
        pin = self.roots.pin if todo else None  # pinned here, within `--timeout`, not per walk
        if pin is not None and pin.stalled:  # podLogsDir gave no answer: nothing below is read
            for key in todo:
                self._dirs[key] = None
                self._why[key] = f"podLogsDir {pin.stalled}"
            if pin.host not in self.stalled:
                self.stalled.append(pin.host)
            return
        for index, _ in bounded_each(todo, self._read):
            key = todo[index]
            self._dirs[key] = None
            shown = f"{self._prefix}{key[0]}/{key[1]}"
            self._why[key] = f"no answer from {shown} within --timeout (a hung mount?)"
            self.stalled.append(shown)

    def _size(self, key: tuple[str, str], name: str) -> int | None:
        sums = self._dirs.get(key)
        return None if sums is None else sums.get(name, 0)

    def changed_of(self, log_path: str) -> int:
        """The latest mtime or ctime (ns) of `log_path`'s files (the log and its rotated
        siblings) as this sizer read them; 0 when not read or not in the kubelet's layout."""
        parts = _layout_parts(self._prefix, log_path) if log_path else None
        if parts is None:
            return 0
        return self._changed.get((parts[0], parts[1]), {}).get(parts[2], 0)

    def note_for(self, log_path: str) -> str:
        """ "" or why no file of `log_path` (a path this sizer measured) may be removed or
        was not sized: its directory could not be opened as the kubelet's (a symlink, not a
        directory, a mount point...), as `remove_container_logs` would say it, or gave no
        answer in time."""
        parts = _layout_parts(self._prefix, log_path)
        why = self._why.get((parts[0], parts[1])) if parts else None
        return f"{why}; log {log_path} left" if why else ""

    def bytes_of(self, log_path: str, container: Container | None = None) -> int | None:
        """Bytes removing this log (and its rotated siblings) would free; None without a path
        (or when its directory gave no answer in time). With `container`, the runtime's path
        for its log: 0 unless it is that container's own (`foreign_log`: nothing else is
        removed with it)."""
        return self.sizes_of([(log_path, container)])[0]

    def sizes_of(self, logs: Sequence[tuple[str, Container | None]]) -> list[int | None]:
        """`bytes_of(log_path, container)` for each pair, their directories read in one
        bounded batch."""
        keys = []
        for log_path, _ in logs:
            parts = _layout_parts(self._prefix, log_path) if log_path else None
            if parts is not None:
                keys.append((parts[0], parts[1]))
        self._read_all(keys)
        out: list[int | None] = []
        for log_path, container in logs:
            if not log_path:
                out.append(None)
                continue
            if container is not None and foreign_log(self.roots.pod_logs_dir, container, log_path):
                out.append(0)
                continue
            parts = _layout_parts(self._prefix, log_path)
            if parts is None:
                out.append(log_bytes(self.roots, log_path, self.mounts))
            else:
                out.append(self._size((parts[0], parts[1]), parts[2]))
        return out

    def fill_layout_logs(self, containers: Iterable[Container]) -> None:
        """Give each container its kubelet layout log (`kubelet_log_path` under this sizer's
        podLogsDir) and that log's `bytes_of`, set in place (`model.fill_listed_log`: only
        for containers a listing just made); one the layout cannot name is left as it is.

        The directory of each labels object (the attempts of a container share one) is
        worked out once, and all are read in one bounded batch: 100,000 containers cost
        100,000 dictionary lookups, not 100,000 path parses.
        """
        root = self.roots.pod_logs_dir
        folders: dict[int, tuple[str, tuple[str, str]]] = {}  # id(labels) -> (dir, key)
        names: dict[int, str] = {}  # id(annotations) -> `kubelet_log_name`
        held = []  # (the labels and annotations objects, alive while their ids are keys)
        todo: list[tuple[Container, str, str, tuple[str, str]]] = []
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
                key = ("", "")
                if folder:
                    pod_dir, ctr_dir = folder[len(self._prefix) : -1].split("/")
                    key = (pod_dir, ctr_dir)
                known = folders[id(labels)] = (folder, key)
            folder, key = known
            if folder:
                todo.append((c, folder, name, key))
        self._read_all(key for _, _, _, key in todo)
        for c, folder, name, key in todo:
            fill_listed_log(c, folder + name, self._size(key, name))


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


def _unlink_listed(
    opened: OpenLogDir, files: list[tuple[str, os.stat_result]], pin: Pin, watch: Watch
) -> int:
    """Unlink `files` (from `_listed`) by name in the open log directory, each as it is there
    now (a regular file or a symlink). Returns the bytes on disk (`core.sizes.on_disk`) of the
    regular files removed that had no other hard link; `LogRemovalError` when an unlink fails."""
    freed = 0
    for path, _ in files:
        name = os.path.basename(path)
        watch.at(path)
        try:  # what is there now, in the opened directory
            st = os.stat(name, dir_fd=opened.fd, follow_symlinks=False)
        except OSError:
            continue
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
            continue
        removed = _unlink(path, "log", opened.fd, pin.show(path))
        if removed and stat.S_ISREG(st.st_mode) and st.st_nlink == 1:  # else none freed
            freed += on_disk(st.st_blocks)
    return freed


def _remove_log_files(roots: LogRoots, log_path: str, mounts: MountTable, notes: list[str]) -> int:
    """Remove the log `log_path` (a container's own: `foreign_log` ""), with its rotated
    siblings, in its directory opened once by `open_log_dir` and listed there (`_listed`):
    what is checked is what is removed. Appends to `notes` what was left and why. Returns
    the bytes freed; `LogRemovalError` when the directory cannot be opened or listed, an
    unlink fails, or a call gets no answer within `--timeout` (`host.bounded`)."""
    if "\0" in log_path:
        notes.append(f"log path {log_path!r} holds a NUL byte; left")
        return 0
    if stalled := roots.pin.stalled:  # podLogsDir gave no answer: the log cannot be removed
        raise LogRemovalError(f"cannot remove log {log_path}: podLogsDir {stalled}")
    found: list[str] = []
    try:
        freed = bounded(lambda watch: _remove_in(roots, log_path, mounts, found, watch))
    except Stalled as exc:
        raise LogRemovalError(f"cannot remove log {log_path}: {exc.strerror}") from None
    notes.extend(found)
    return freed


def _remove_in(
    roots: LogRoots, log_path: str, mounts: MountTable, notes: list[str], watch: Watch
) -> int:
    """`_remove_log_files`' work, its calls reported to `watch`."""
    pin = roots.pin
    try:
        opened = open_log_dir(roots, log_path, mounts, watch)
    except OSError as exc:
        why = exc.strerror or exc
        raise LogRemovalError(f"cannot open the directory of {log_path}: {why}") from None
    if opened.fd < 0:
        if opened.why:
            notes.append(f"{opened.why}; log {log_path} left")
        return 0
    try:
        try:
            files, left = _listed(opened, os.path.basename(log_path), mounts, pin, watch)
        except OSError as exc:
            shown = f"{pin.show(opened.local)}: {exc.strerror or exc}"
            raise LogRemovalError(f"cannot list {shown}") from None
        notes.extend(left)
        return _unlink_listed(opened, files, pin, watch)
    finally:
        opened.close()


def remove_container_logs(
    roots: LogRoots, container: Container, log_path: str, mounts: MountTable
) -> tuple[int, str]:
    """Remove a container's log files and legacy symlink. Returns (bytes freed, note).

    The note is "" when everything expected was removed, else it says what was left and why
    (not the container's own log path — `foreign_log` —, outside podLogsDir, a mount point).
    Raises `LogRemovalError` when a deletion fails for another reason, or podLogsDir or the
    legacy link directory gave no answer within `--timeout` (`Pin.stalled`; nothing is then
    removed when it is the link directory). Both removals run in one bounded walk (one
    worker thread per container, `host.bounded`); a stall names the one it was in.
    """
    pin = roots.links_pin  # checked first: nothing is removed when the link cannot be
    if pin.stalled:  # the kubelet, too, keeps a container whose legacy link it cannot remove
        raise LogRemovalError(f"cannot remove the legacy link of the container: {pin.stalled}")
    foreign = foreign_log(roots.pod_logs_dir, container, log_path) if log_path else ""
    notes = [foreign] if foreign else []
    doing = [f"log {log_path}"]  # what the walk is removing, named when it stalls

    def walk(watch: Watch) -> int:
        freed = _remove_log_files(roots, log_path, mounts, notes) if log_path and not foreign else 0
        link_dir = pin.path
        if not link_dir:
            notes.append(f"{roots.container_logs_dir} is in a symlink loop; legacy link left")
            return freed
        name = legacy_symlink_name(
            container.pod_name, container.pod_namespace, container.container_name, container.id
        )
        if "/" in name or "\0" in name:  # labels no kubelet writes: never leave its directory
            notes.append(f"legacy link name {name!r} is not a file name; left")
            return freed
        link = os.path.join(link_dir, name)
        doing[0] = f"symlink {pin.show(link)}"
        if left := _remove_link(pin, link, watch):
            notes.append(left)
        return freed

    try:
        freed = bounded(walk)
    except Stalled as exc:
        raise LogRemovalError(f"cannot remove {doing[0]}: {exc.strerror}") from None
    return freed, "; ".join(notes)


def _remove_link(pin: Pin, link: str, watch: Watch) -> str:
    """Remove the legacy symlink `link` (`<pin.path>/<name>`) relative to `pin` when it is a
    symlink; "" or why it was left. `LogRemovalError` when the unlink fails."""
    if pin.fd < 0:
        return ""
    watch.at(link)
    try:
        link_st = os.stat(os.path.basename(link), dir_fd=pin.fd, follow_symlinks=False)
    except OSError:
        return ""
    if not stat.S_ISLNK(link_st.st_mode):
        return f"{pin.show(link)} is not a symlink; left"
    _unlink(link, "symlink", pin.fd, pin.show(link))
    return ""
