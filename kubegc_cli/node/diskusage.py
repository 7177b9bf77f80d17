"""What fills the node's disks, measured: the pod log root and the kubelet's pods directory
walked into per-pod footprints, the dead containers' logs, the residue directories, and the
runtime's view of images and writable layers — for `kubegc df`.

- Directory trees (pod log directories; pod directories and their volumes) are measured with
  `host.du.tree_usage`: allocated blocks, symlinks not followed, a file hard-linked several
  times counted once across all trees, mount points not entered. A mounted volume (a
  memory-backed emptyDir, a secret) is listed as mounted and counted nowhere. A tree counts on
  the filesystem its device belongs to.
- Paths are host paths resolved under the host root, absolute symlink targets included
  (`real_path`, `host_real`).
- Byte counts are kept by (device, line key) in a `Tally`; the keys of the lines measured
  here (logs, emptyDir, pod directories, residue) are defined here, the others in
  `commands.df`.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegc_cli.core.errors import RuntimeUnavailable, SandboxImageUnreadable
from kubegc_cli.core.model import (
    LABEL_POD_UID,
    Container,
    ContainerState,
    FilesystemUsage,
    Image,
    Sandbox,
)
from kubegc_cli.core.podlogs import pod_uid_from_dir
from kubegc_cli.core.pods import PodInventory
from kubegc_cli.core.residue import POD_DIR, POD_LOG_DIR, Finding
from kubegc_cli.core.sizes import left_in_pod_log_dir, on_disk
from kubegc_cli.node.host.bounded import Watch, bounded_each, listdir, stat_of
from kubegc_cli.node.host.du import VANISHED, tree_usage
from kubegc_cli.node.host.fs import FsStats, fs_stats
from kubegc_cli.node.host.logs import (
    LogRoots,
    deletable_log_files,
    foreign_log,
    host_path_of,
    log_files,
    on_host,
    resolve_on_host,
)
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.scan import ScanContext
from kubegc_cli.node.observe import observe_node
from kubegc_cli.node.sandboximages import runtime_sandbox_images

EMPTY_DIR_PLUGIN = "kubernetes.io~empty-dir"

#: Progress callback: (what is being walked, entries done, entries in all).
Progress = Callable[[str, int, int], None]

# The keys (JSON `key` of a `kubegc df` line) of what is measured here.
LOGS = "logs"
LOGS_DEAD = "logs.dead-containers"
LOGS_DELETED = "logs.deleted-pods"
EMPTY_DIR = "empty-dir"
POD_DATA = "pod-dirs"
RESIDUE = "residue"
RESIDUE_POD_DIRS = "residue.orphaned-pod-dir"
RESIDUE_LOG_DIRS = "residue.orphaned-pod-log-dir"

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient


@dataclass(slots=True)
class PodFootprint:
    """One pod's disk: `logs` (its log directory, rotated files included), `empty_dir` (its
    emptyDir volumes on disk, `volumes` of them), `writable_layers` of its containers (None:
    unknown), in bytes; `mounted`: mount points met below its directories, not counted;
    `deleted`: the pod source says it is gone."""

    uid: str
    namespace: str = ""
    name: str = ""
    logs: int = 0
    empty_dir: int = 0
    volumes: int = 0
    writable_layers: int | None = None
    mounted: list[str] = field(default_factory=list)
    deleted: bool = False

    @property
    def footprint(self) -> int:
        """logs + emptyDir + writable layers (unknown layers count 0)."""
        return self.logs + self.empty_dir + (self.writable_layers or 0)

    def to_dict(self) -> dict[str, Any]:
        return {
            "uid": self.uid,
            "namespace": self.namespace,
            "name": self.name,
            "logs": self.logs,
            "empty_dir": self.empty_dir,
            "empty_dir_volumes": self.volumes,
            "writable_layers": self.writable_layers,
            "footprint": self.footprint,
            "mounted": list(self.mounted),
            "deleted": self.deleted,
        }


@dataclass(slots=True)
class RuntimeView:
    """What the runtime says: containers (dead ones with their log path), sandboxes, images,
    the image IDs it protects as its sandbox image, `ImageFsInfo`, and writable layers
    (container ID → (bytes, inodes), each None when not reported)."""

    endpoint: str
    containers: list[Container]
    sandboxes: list[Sandbox]
    images: list[Image]
    sandbox_images: set[str]
    image_fs: list[FilesystemUsage]
    container_fs: list[FilesystemUsage]
    layers: dict[str, tuple[int | None, int | None]]


def read_runtime_view(
    client: CriClient,
    host_root: Path,
    pod_logs_dir: str,
    mounts: MountTable,
    *,
    runtime_config: Path | None,
    warn: Callable[[str], None],
) -> RuntimeView:
    """Read everything `df` needs from the CRI runtime through `client`; the images the
    runtimes keep for themselves from `sandboximages.runtime_sandbox_images` (containerd's
    config `runtime_config`, a host path; a file that cannot be read is a warning: `warn`).
    Raises `RuntimeUnavailable` when any call fails (the runtime is then unknown as a whole),
    `SandboxImageUnreadable` when the runtime names its sandbox image unreadably."""
    snap = observe_node(
        client, host_root, statuses="dead", images=True, sandboxes=True,
        pod_logs_dir=pod_logs_dir, mounts=mounts,
    )  # fmt: skip
    kept = runtime_sandbox_images(client, host_root, runtime_config, warn)
    if kept.status_error:
        raise SandboxImageUnreadable(kept.status_error)
    layers = client.writable_layers()
    protected = set(kept.protected_ids(snap.images))
    return RuntimeView(
        endpoint=snap.endpoint,
        containers=list(snap.containers),
        sandboxes=list(snap.sandboxes),
        images=list(snap.images),
        sandbox_images=protected,
        image_fs=list(snap.image_filesystems),
        container_fs=list(snap.container_filesystems),
        layers=layers,
    )


class Tally:
    """Bytes, reclaimable bytes and counts by (device, line key)."""

    def __init__(self) -> None:
        self.bytes: dict[tuple[int, str], int] = {}
        self.reclaim: dict[tuple[int, str], int] = {}
        self.count: dict[tuple[int, str], int] = {}

    def add(self, dev: int, key: str, n: int, *, reclaim: int = 0, count: int = 0) -> None:
        k = (dev, key)
        self.bytes[k] = self.bytes.get(k, 0) + n
        if reclaim:
            self.reclaim[k] = self.reclaim.get(k, 0) + reclaim
        if count:
            self.count[k] = self.count.get(k, 0) + count

    def devices(self) -> set[int]:
        return {d for d, _ in self.bytes}


class Walker:
    """Measures the pod log root and the kubelet's pods directory into a `Tally` and per-pod
    footprints. `skip` holds the (device, inode) of directories counted elsewhere (residue).
    Entries it cannot read (permission denied, a path beyond PATH_MAX) are counted in
    `unreadable`, the first with why in `first_unreadable` (local path, reason): what they
    hold is in no line (so it ends up in `other`)."""

    def __init__(
        self,
        mounts: MountTable,
        skip: frozenset[tuple[int, int]] = frozenset(),
        progress: Progress | None = None,
    ) -> None:
        self.mounts = mounts
        self.skip = skip
        self.progress = progress
        self.seen: set[tuple[int, int]] = set()
        self.tally = Tally()
        self.pods: dict[str, PodFootprint] = {}
        self.mounted: list[tuple[str, str]] = []  # (local path, pod UID)
        self.entries = 0
        self.unreadable = 0
        self.first_unreadable: tuple[str, str] | None = None

    def _cannot_read(self, path: str, exc: OSError, n: int = 1) -> None:
        """Count `n` entries that could not be read (not one that vanished meanwhile)."""
        if exc.errno in VANISHED:
            return
        self.unreadable += n
        if self.first_unreadable is None:
            self.first_unreadable = (path, exc.strerror or str(exc))

    def pod(self, uid: str) -> PodFootprint:
        p = self.pods.get(uid)
        if p is None:
            p = self.pods[uid] = PodFootprint(uid)
        return p

    def _mounted(self, path: str, uid: str) -> None:
        self.mounted.append((path, uid))
        if uid:
            self.pod(uid).mounted.append(path)

    def entry(self, path: str, dev: int, uid: str = "") -> int | None:
        """Allocated bytes of the tree (or file) at local `path` on device `dev`; None when it
        is gone, counted elsewhere (`skip`) or a mount point (then listed under `uid`; one the
        mount table names is not touched: a stale mount would hang)."""
        if self.mounts.is_mount_point(path):
            self._mounted(path, uid)
            return None
        try:
            st = stat_of(path)
        except OSError as exc:
            self._cannot_read(path, exc)
            return None
        if (st.st_dev, st.st_ino) in self.skip:
            return None
        if stat.S_ISDIR(st.st_mode) and (st.st_dev != dev or self.mounts.is_mount_point(path)):
            self._mounted(path, uid)
            return None
        t = tree_usage(path, self.mounts, self.seen)
        self.entries += t.inodes
        if t.unreadable:
            self.unreadable += t.unreadable
            if self.first_unreadable is None:
                self.first_unreadable = (t.first_unreadable, t.first_reason)
        for m in t.mounts:
            self._mounted(m, uid)
        return t.bytes

    def _children(self, path: str) -> list[os.DirEntry[str]]:
        try:
            return listdir(path)
        except OSError as exc:
            self._cannot_read(path, exc)
            return []

    def _root(self, root: str, key: str) -> tuple[int, list[os.DirEntry[str]]]:
        """The device and entries of a walk's root; its own blocks count under `key`. Raises
        `OSError` when the root cannot be read (`NotADirectoryError` when it is not a
        directory: then nothing of it is counted)."""
        top = stat_of(root, follow_symlinks=True)
        entries = listdir(root)
        self.tally.add(top.st_dev, key, on_disk(top.st_blocks))
        return top.st_dev, entries

    def _each(
        self,
        entries: list[os.DirEntry[str]],
        what: str,
        one: Callable[[os.DirEntry[str], Watch], None],
    ) -> None:
        """`one(entry, watch)` for each of `entries`, telling `progress` how far the walk of
        `what` is, in bounded walks (`host.bounded.bounded_each`: one worker thread while
        nothing hangs): an entry whose walk gets no answer within `--timeout` is given up, and
        the path it hung at is counted unreadable (the note names it) and listed as mounted."""
        total = len(entries)

        def step(item: tuple[int, os.DirEntry[str]], watch: Watch) -> None:
            if self.progress is not None:
                self.progress(what, item[0], total)
            one(item[1], watch)

        for _, exc in bounded_each(list(enumerate(entries)), step):
            self._cannot_read(exc.filename, exc)
            self._mounted(exc.filename, "")
        if self.progress is not None:
            self.progress(what, total, total)

    def pod_logs(self, root: str, deleted: Callable[[str], bool]) -> int:
        """Walk the pod log root (a real local path): each `<ns>_<pod>_<uid>` directory counts
        as its pod's logs, all of it reclaimable when `deleted(uid)`. Returns the device."""
        dev, entries = self._root(root, LOGS)

        def one(e: os.DirEntry[str], watch: Watch) -> None:
            is_dir = e.is_dir(follow_symlinks=False)
            uid = pod_uid_from_dir(e.name) if is_dir else ""
            n = self.entry(e.path, dev, uid)
            watch.at(e.path)  # (a walk given up since counts nothing more)
            if n is None:
                return
            if not is_dir:
                self.tally.add(dev, LOGS, n)
                return
            p = self.pod(uid)
            p.logs += n
            parts = e.name.split("_")
            if len(parts) == 3 and not p.name:
                p.namespace, p.name = parts[0], parts[1]
            self.tally.add(dev, LOGS, n, reclaim=n if deleted(uid) else 0, count=1)
            if deleted(uid):
                self.tally.add(dev, LOGS_DELETED, n, reclaim=n, count=1)

        self._each(entries, "pod logs", one)
        return dev

    def pod_dirs(self, root: str) -> int:
        """Walk the kubelet's pods directory (a real local path): `<uid>/volumes/
        kubernetes.io~empty-dir/<volume>` counts as the pod's emptyDir, everything else in the
        pod's directory as other pod data. Returns the device."""
        dev, entries = self._root(root, POD_DATA)

        def one(e: os.DirEntry[str], watch: Watch) -> None:
            if not e.is_dir(follow_symlinks=False):
                n = self.entry(e.path, dev) or 0
                watch.at(e.path)
                self.tally.add(dev, POD_DATA, n)
                return
            self._pod_dir(e.path, e.name, dev, watch)

        self._each(entries, "pod directories", one)
        return dev

    def _dir_here(self, path: str, dev: int, uid: str) -> int | None:
        """The allocated bytes of the directory inode at `path` itself, or None when it is
        not a directory on `dev` to enter (a mount point is listed)."""
        if self.mounts.is_mount_point(path):
            self._mounted(path, uid)
            return None
        try:
            st = stat_of(path)
        except OSError as exc:
            self._cannot_read(path, exc)
            return None
        if (st.st_dev, st.st_ino) in self.skip or not stat.S_ISDIR(st.st_mode):
            return None
        if st.st_dev != dev or self.mounts.is_mount_point(path):
            self._mounted(path, uid)
            return None
        self.entries += 1
        return on_disk(st.st_blocks)

    def _pod_dir(self, path: str, uid: str, dev: int, watch: Watch) -> None:
        own = self._dir_here(path, dev, uid)
        if own is None:
            return
        p = self.pod(uid)
        data = own
        for child in self._children(path):
            if child.name == "volumes" and child.is_dir(follow_symlinks=False):
                vols = self._dir_here(child.path, dev, uid)
                if vols is None:
                    continue
                data += vols
                for plugin in self._children(child.path):
                    data += self._plugin(plugin, dev, p)
                continue
            data += self.entry(child.path, dev, uid) or 0
        watch.at(path)  # (a walk given up since counts nothing more)
        self.tally.add(dev, POD_DATA, data, count=1)

    def _plugin(self, plugin: os.DirEntry[str], dev: int, p: PodFootprint) -> int:
        """Measure one `volumes/<plugin>` directory; returns the bytes that are not emptyDir."""
        if not plugin.is_dir(follow_symlinks=False):
            return self.entry(plugin.path, dev, p.uid) or 0
        own = self._dir_here(plugin.path, dev, p.uid)
        if own is None:
            return 0
        other = own
        for vol in self._children(plugin.path):
            n = self.entry(vol.path, dev, p.uid)
            if n is None:
                continue
            if plugin.name == EMPTY_DIR_PLUGIN:
                p.empty_dir += n
                p.volumes += 1
                self.tally.add(dev, EMPTY_DIR, n, count=1)
            else:
                other += n
        return other


def real_path(host_root: Path, host_path: str) -> str:
    """The local path of `host_path`, every symlink in it resolved under the host root (an
    absolute link target starts again at `--host-root`). Raises `OSError` (ELOOP)."""
    return resolve_on_host(host_root, host_path)


def host_real(host_root: Path, host_path: str) -> str:
    """`host_path` with every symlink in it resolved under the host root, as a host path."""
    return host_path_of(Path(os.path.realpath(host_root)), real_path(host_root, host_path))


def needed_dir(host_root: Path, host_path: str, what: str, hint: Callable[[], str] = str) -> str:
    """`host_path` (a directory a command cannot do without: the kubelet root, a directory a
    flag named) with its symlinks resolved under the host root, as a host path. Raises
    `RuntimeUnavailable` (exit 3, one line naming `what`, the path and the host root) when it
    does not exist, is no directory or cannot be read: a command over a wrong `--host-root`
    or a mistyped flag must say so, never report "nothing found"; `hint()` is added to that
    line (asked only then: what to give instead)."""
    try:
        found = host_real(host_root, host_path)
        local = real_path(host_root, found)
        if not stat.S_ISDIR(stat_of(local, follow_symlinks=True).st_mode):
            raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
    except OSError as exc:
        under = "" if os.path.normpath(host_root) == "/" else f" under {host_root}"
        raise RuntimeUnavailable(
            f"cannot read {what} {host_path}{under}: {exc.strerror or exc}{hint()}"
        ) from None
    return found


def host_real_or_given(host_root: Path, host_path: str) -> str:
    """`host_real`, or `host_path` as given when it cannot be resolved (a symlink loop: the
    walk then says it cannot be read)."""
    try:
        return host_real(host_root, host_path)
    except OSError:
        return host_path


def walk_roots(
    w: Walker,
    host_root: Path,
    root_dir: str,
    logs_dir: str,
    deleted: Callable[[str], bool],
    notes: list[str],
) -> int | None:
    """Walk the pod log root and the pods directory (symlinks in their paths resolved as the
    host resolves them); returns the log root's device (None when there is no log root). A
    root that is not a directory is no root: a note (appended to `notes`), and nothing of it
    is counted."""
    logs_dev: int | None = None
    try:
        logs_dev = w.pod_logs(resolve_on_host(host_root, logs_dir), deleted)
    except FileNotFoundError:
        notes.append(f"no pod log directory at {logs_dir}")
    except NotADirectoryError:
        notes.append(f"no pod log directory at {logs_dir}: not a directory")
    except OSError as exc:
        notes.append(f"cannot read the pod log root {logs_dir}: {exc.strerror or exc}")
    pods_dir = f"{root_dir.rstrip('/')}/pods"
    try:
        w.pod_dirs(resolve_on_host(host_root, pods_dir))
    except FileNotFoundError:
        notes.append(f"no pods directory at {pods_dir}")
    except NotADirectoryError:
        notes.append(f"no pods directory at {pods_dir}: not a directory")
    except OSError as exc:
        notes.append(f"cannot read the pods directory {pods_dir}: {exc.strerror or exc}")
    return logs_dev


def dead_container_logs(
    w: Walker,
    host_root: Path,
    kubelet_logs_dir: str,
    rt: RuntimeView,
    deleted: Callable[[str], bool],
    going: Mapping[str, int],
    logs_dev: int,
    mounts: MountTable,
) -> None:
    """The log files of the dead containers (rotated ones too), on the log filesystem, under
    `logs.dead-containers`. Reclaimable: the logs of the containers `gc containers` removes,
    each as its plan expects to free it (`going`: container ID → the plan's `log_bytes`, the
    `core.sizes.on_disk` blocks of the files it may delete inside the kubelet config's
    podLogsDir `kubelet_logs_dir`), so that this line's reclaimable is what `gc containers`
    and `reclaim` expect of those logs.

    A deleted pod's directory was counted whole under `logs.deleted-pods`; the logs of its
    containers that `gc containers` removes move from there to `logs.dead-containers` (they go
    with their containers, before the directory), and the directory keeps what stays in it
    (`core.sizes.left_in_pod_log_dir`), as `gc all` and `reclaim` plan it. A pod whose
    directory is residue is not walked here."""
    roots = LogRoots(host_root, kubelet_logs_dir)
    counted: set[tuple[int, int]] = set()
    total = back = dead = 0
    moved: dict[str, int] = {}  # deleted pod UID -> its removed containers' log bytes
    for c in rt.containers:
        if c.state is ContainerState.RUNNING or not c.log_path:
            continue
        if c.pod_uid not in w.pods:
            continue  # its log directory was not walked (residue, or elsewhere)
        if deleted(c.pod_uid):
            if c.id in going:  # (one that stays is counted with its pod's directory)
                moved[c.pod_uid] = moved.get(c.pod_uid, 0) + going[c.id]
                total += going[c.id]
                back += going[c.id]
                dead += 1
            continue
        own = not foreign_log(kubelet_logs_dir, c, c.log_path)
        # the kubelet's own log: listed where `gc containers` lists it (never through a link)
        files = deletable_log_files(roots, c.log_path, mounts)[0] if own else []
        for _, st in files if own else log_files(on_host(host_root, c.log_path)):
            key = (st.st_dev, st.st_ino)
            if stat.S_ISREG(st.st_mode) and st.st_dev == logs_dev and key not in counted:
                counted.add(key)
                total += on_disk(st.st_blocks)
        back += going.get(c.id, 0)
        dead += 1
    cut = 0  # what the deleted pods' directories no longer hold once those logs go
    for uid, logs in moved.items():
        whole = w.pods[uid].logs
        cut += whole - left_in_pod_log_dir(whole, logs)
    if cut:
        w.tally.add(logs_dev, LOGS_DELETED, -cut, reclaim=-cut)
    if dead:
        w.tally.add(logs_dev, LOGS, 0, reclaim=back - cut)
        w.tally.add(logs_dev, LOGS_DEAD, total, reclaim=back, count=dead)


def residue_dirs(
    host_root: Path,
    warn: Callable[[str], None],
    root_dir: str,
    logs_dir: str,
    pods: PodInventory,
    rt: RuntimeView | None,
    mounts: MountTable,
) -> tuple[list[Finding], frozenset[tuple[int, int]]]:
    """Orphaned pod and pod log directories (`residue scan`'s scanners), and the (device,
    inode) of each, which the walk then leaves to the residue lines.

    Without the runtime nothing is residue here: `residue scan` would then report every pod
    directory (none is known to a runtime that was not read), which says nothing about disk.
    The log directory scanner (which sizes every log directory) runs only when some log
    directory's pod is unknown."""
    if rt is None:
        return [], frozenset()
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from kubegc_cli.node.host import residue as scanners

    uids = {c.pod_uid for c in rt.containers} | {sb.uid for sb in rt.sandboxes}
    uids |= {sb.labels.get(LABEL_POD_UID, "") for sb in rt.sandboxes}
    ctx = ScanContext(
        host_root=host_root,
        root_dir=root_dir,
        pod_logs_dir=logs_dir,
        pods_known=pods.known,
        pod_uids=frozenset(pods.pods),
        runtime_known=True,
        runtime_pod_uids=frozenset(u for u in uids if u),
        sandbox_ids=frozenset(sb.id for sb in rt.sandboxes),
        container_ids=frozenset(c.id for c in rt.containers),
        mounts=mounts,
    )
    scans: list[tuple[Callable[[ScanContext], list[Finding]], str]] = [
        (scanners.scan_pod_dirs, POD_DIR)
    ]
    try:
        names = [e.name for e in listdir(on_host(host_root, logs_dir))]
    except OSError:
        names = []
    if any(ctx.pod_unknown(pod_uid_from_dir(n)) for n in names):
        scans.append((scanners.scan_pod_log_dirs, POD_LOG_DIR))
    findings: list[Finding] = []
    for scan, kind in scans:
        try:
            findings += [f for f in scan(ctx) if f.type == kind]
        except OSError as exc:
            warn(f"residue ({kind}): cannot read the host: {exc}")
    skip: set[tuple[int, int]] = set()
    for f in findings:
        try:
            st = stat_of(on_host(host_root, f.target))
        except OSError:
            continue
        skip.add((st.st_dev, st.st_ino))
    return findings, frozenset(skip)


def count_finding(host_root: Path, f: Finding, tally: Tally) -> list[dict[str, str]]:
    """Count a residue finding's bytes on its device, under `RESIDUE` and its kind's key
    (reclaimable when it is safe to clean); returns the mount points below it (host path and
    pod UID), which are not counted."""
    try:
        dev = stat_of(on_host(host_root, f.target)).st_dev
    except OSError:
        return []
    n = f.bytes or 0
    back = n if f.safe else 0
    key = RESIDUE_POD_DIRS if f.type == POD_DIR else RESIDUE_LOG_DIRS
    tally.add(dev, RESIDUE, n, reclaim=back, count=1)
    tally.add(dev, key, n, reclaim=back, count=1)
    uid = str(f.details.get("uid", ""))
    return [{"path": str(m), "pod_uid": uid} for m in f.details.get("mounts_below", ())]


@dataclass(slots=True)
class RoleFilesystem:
    """One filesystem among the role paths: its `roles`, the host `path` statvfs read (the
    first role's), its `device` and `stats`."""

    roles: list[str]
    path: str
    device: int
    stats: FsStats


def role_filesystems(
    host_root: Path, roles: list[tuple[str, str]], notes: list[str]
) -> list[RoleFilesystem]:
    """One filesystem per device among the role paths (`roles`: (role, host path), symlinks
    resolved under `host_root`), in role order (nodefs first). Raises `RuntimeUnavailable`
    when nodefs cannot be statvfs'd; another role's failure is a note (appended to `notes`;
    the pod log root and the pods directory are no role when they are not directories: the
    walk says so)."""
    out: dict[int, RoleFilesystem] = {}
    for role, path in roles:
        try:
            local = real_path(host_root, path)
            st_dev = stat_of(local, follow_symlinks=True)
        except OSError as exc:
            if role == "nodefs":
                raise RuntimeUnavailable(
                    f"cannot read the kubelet root {path}: {exc.strerror or exc}"
                ) from None
            if role not in ("pods", "logs"):  # the walk says when those are missing
                notes.append(f"{role} {path}: {exc.strerror or exc}; not shown")
            continue
        if role in ("pods", "logs") and not stat.S_ISDIR(st_dev.st_mode):
            continue
        dev = st_dev.st_dev
        if dev in out:
            out[dev].roles.append(role)
            continue
        try:
            st: FsStats = fs_stats(host_root, host_real(host_root, path))
        except RuntimeUnavailable as exc:
            if role == "nodefs":
                raise
            notes.append(f"{role}: {exc}; not shown")
            continue
        out[dev] = RoleFilesystem(roles=[role], path=path, device=dev, stats=st)
    return list(out.values())
