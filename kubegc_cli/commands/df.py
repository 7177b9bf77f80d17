"""`kubegc df`: what fills this node's filesystems, and what kubegc can reclaim of it.

Observe only: nothing here changes the node (no lock, no state store, no removal).

Where each figure comes from, and where it is counted:

- Filesystems: nodefs (the kubelet root, `--root-dir`), imagefs (the first image filesystem
  of CRI `ImageFsInfo`), containerfs (where writable layers live: CRI's container filesystem
  when reported apart, else imagefs) and the filesystem of the pod log root. Paths on one
  device (`st_dev`) are one filesystem with several roles. Capacity, available, inodes: statvfs
  as the kubelet reads it (`host.fs.fs_stats`), so used = capacity − bavail × frsize and the
  blocks reserved for root count as used; they are a line of their own.
- Directory trees (pod log directories; pod directories and their volumes) are measured as
  `node.diskusage` says: allocated blocks, each file once, mount points listed, not counted.
- Images: CRI `ListImages` sizes. In use: used by any container the runtime has, exited ones
  too (`policy.images.images_in_use`); reclaimable: what `gc images --prune-unused` removes
  (the image GC planner with MinAge 0: unused, not pinned, not the sandbox image).
- Writable layers: CRI `ListContainerStats`; reclaimable: the layers of the containers
  `gc containers` removes, as its planner (`policy.containers.plan_containers`, default
  policy, this pod source) plans them.
- Container logs: every pod's log directory, rotated files included, in blocks on disk
  (`core.sizes`). Reclaimable: the logs of the dead containers `gc containers` removes, as its
  plan expects them (`log_bytes`: the files it may delete, `host.logs.deletable_log_files`),
  under `logs.dead-containers` — a deleted pod's ones too — and, of a pod the pod source says
  is deleted, what stays in its directory once those logs go (`core.sizes.
  left_in_pod_log_dir`), under `logs.deleted-pods`: the figures `reclaim` expects of the same
  containers and directories. Only when the runtime was read, so that the pod source was
  checked against the pods running here (`against_runtime`); without it no pod counts as
  deleted and a note says so.
- Residue: orphaned pod directories and pod log directories, as `residue scan` finds them; their
  bytes count there, not again under logs or emptyDir.
- Log rotation: the files `residue scan` finds container log rotation left behind in the log
  directories of pods the runtime knows (rotated files past containerLogMaxFiles, a failed
  compression's `.tmp`, an uncompressed file whose `.gz` exists, uncompressed rotations other
  than the newest, earlier instances' logs safe to remove), judged by the effective
  containerLogMaxSize / containerLogMaxFiles (`commands.residue.rotation_findings`); their
  bytes count there, not again under logs. Reclaimable: what `residue clean` removes (not
  the uncompressed ones: kubegc does not compress). Not counted: those of a deleted pod
  (its whole directory is under logs) or of a container `gc containers` removes (its logs
  are under dead containers). Live logs over containerLogMaxSize and containers over budget
  are a note: rotating frees nothing.
- other = used − every line above, per filesystem, so the lines add up to used exactly. It is
  negative when CRI sizes overstate (a layer shared by two images counts in both image sizes).
  What the walk cannot read is in other, and counted in `DfReport.unreadable` with a note.
- Paths (`--root-dir`, `--pod-logs-dir`) are resolved under the host root, absolute symlink
  targets included; a kubelet root that is missing or not a directory raises
  `RuntimeUnavailable`, a pod log root that is neither is a note.
- Each command shown carries this run's options (`_commands`), so that it acts on what was
  measured.

Exit code: 3 (`DfReport.exit_code`) when the runtime could not be read, or its image
filesystem was not found under the host root — host lines are still reported, image and
writable-layer lines are unknown — unless the runtime was left out on purpose
(`DfOptions.runtime` False); 0 otherwise.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.commands.evict import eviction_config, kubelet_root
from kubegc_cli.commands.flow import load_pod_inventory, open_client
from kubegc_cli.commands.residue import rotation_findings
from kubegc_cli.core.errors import BadInput, ExitCode, GCFailed, KubegcError, RuntimeUnavailable
from kubegc_cli.core.model import (
    API_VERSION,
    LABEL_POD_UID,
    Container,
    ContainerState,
    SandboxState,
)
from kubegc_cli.core.plan import layer_of
from kubegc_cli.core.podlogs import LogRotation
from kubegc_cli.core.pods import PodInventory, against_runtime
from kubegc_cli.core.residue import (
    EARLIER_INSTANCE_LOG,
    LOG_OVER_SIZE,
    LOGS_OVER_BUDGET,
    ROTATED_PAST_COUNT,
    ROTATED_UNCOMPRESSED,
    ROTATION_LEFTOVER,
)
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import format_bytes, format_go_duration, ns_to_rfc3339
from kubegc_cli.node.cri.endpoint import resolve_endpoint
from kubegc_cli.node.diskusage import (
    EMPTY_DIR,
    LOGS,
    LOGS_DEAD,
    LOGS_DELETED,
    POD_DATA,
    RESIDUE,
    RESIDUE_LOG_DIRS,
    RESIDUE_POD_DIRS,
    PodFootprint,
    Progress,
    RuntimeView,
    Tally,
    Walker,
    count_finding,
    dead_container_logs,
    host_real_or_given,
    needed_dir,
    read_runtime_view,
    residue_dirs,
    role_filesystems,
    walk_roots,
)
from kubegc_cli.node.host.fs import FsStats
from kubegc_cli.node.host.kubelet import kubelet_config_for, root_dir_hint, validate_pod_logs_dir
from kubegc_cli.node.host.logrotation import log_owners
from kubegc_cli.node.host.logs import host_path_of
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.scan import ScanContext
from kubegc_cli.node.imagefs import FsLayout, fs_layout
from kubegc_cli.node.signals import disk_observations
from kubegc_cli.policy.containers import ContainerGCPolicy, plan_containers
from kubegc_cli.policy.eviction.thresholds import (
    EvictionConfig,
    RawEviction,
    evaluate,
)
from kubegc_cli.policy.images import (
    KEEP_IN_USE,
    ImageGCPolicy,
    ImageGCSettings,
    plan_images,
    resolve_image_gc_settings,
    usage,
)

KIND = "DiskUsage"
# Line keys (JSON `key`), in report order. A key with a dot details the line before the dot.
IMAGES = "images"
IMAGES_IN_USE = "images.in-use"
IMAGES_UNUSED = "images.unused"
LAYERS = "writable-layers"
LAYERS_RUNNING = "writable-layers.running"
LAYERS_DEAD = "writable-layers.dead"
LOG_ROTATION = "log-rotation"
RESERVED = "reserved"
OTHER = "other"

LABELS = {
    IMAGES: "images",
    IMAGES_IN_USE: "in use",
    IMAGES_UNUSED: "unused",
    LAYERS: "writable layers",
    LAYERS_RUNNING: "running containers",
    LAYERS_DEAD: "dead containers",
    LOGS: "container logs",
    LOGS_DEAD: "of dead containers",
    LOGS_DELETED: "of deleted pods",
    LOG_ROTATION: "left by log rotation",
    EMPTY_DIR: "emptyDir volumes",
    POD_DATA: "pod directories, other",
    RESIDUE: "residue",
    RESIDUE_POD_DIRS: "orphaned pod dirs",
    RESIDUE_LOG_DIRS: "orphaned pod log dirs",
    RESERVED: "reserved for root",
    OTHER: "other",
}
ORDER = {k: i for i, k in enumerate(LABELS)}

DEFAULT_ROOT_DIR = "/var/lib/kubelet"
CMD_IMAGES = "kubegc gc images --prune-unused"
CMD_CONTAINERS = "kubegc gc containers"
CMD_ALL = "kubegc gc all"
CMD_RESIDUE = "kubegc residue clean"
CMD_RECLAIM = "kubegc reclaim"  # every kind above, in one plan

# Roles of a filesystem, in display order; "pods" (the kubelet's pods directory) only shows when
# it is a filesystem of its own.
ROLE_ORDER = ("nodefs", "imagefs", "containerfs", "logs", "pods")


@dataclass(frozen=True, slots=True)
class DfOptions:
    """What `kubegc df` reads. `root_dir`: the kubelet root (host path); `pod_logs_dir`: the pod
    log root (None: the kubelet config's `podLogsDir`); `top`: how many pods to list, largest
    footprint first (0 = all); `runtime`: False leaves the CRI runtime out (image and
    writable-layer lines are then not measured, and exit code 3 does not apply)."""

    root_dir: str = DEFAULT_ROOT_DIR
    pod_logs_dir: str | None = None
    top: int = 10
    runtime: bool = True


@dataclass(slots=True)
class Line:
    """One line of a filesystem's breakdown. `bytes` None = unknown (the runtime was not
    read). `count`: objects behind it (images, containers, pods, volumes, findings) or None.
    `reclaimable`: bytes a kubegc command can free (`command`). `parent`: the key of the line
    this one details ("" for a top-level line; only top-level lines add up to used).
    `note_shown`: its note is shown without -v too (it says its figure may be wrong)."""

    key: str
    bytes: int | None
    count: int | None = None
    reclaimable: int | None = 0
    command: str = ""
    note: str = ""
    note_shown: bool = False

    @property
    def label(self) -> str:
        return LABELS.get(self.key, self.key)

    @property
    def parent(self) -> str:
        return self.key.split(".", 1)[0] if "." in self.key else ""

    def to_dict(self, capacity: int) -> dict[str, Any]:
        share = None if self.bytes is None or capacity <= 0 else self.bytes / capacity
        return {
            "key": self.key,
            "label": self.label,
            "parent": self.parent or None,
            "bytes": self.bytes,
            "count": self.count,
            "share": share,
            "reclaimable": self.reclaimable,
            "command": self.command or None,
            "note": self.note or None,
        }


@dataclass(slots=True)
class Filesystem:
    """One filesystem and what fills it. `roles`: nodefs, imagefs, containerfs, logs, pods;
    `path`: the host path statvfs read (`stats`: bytes and inodes). `lines` end with
    `reserved` and `other`, and their top-level `bytes` add up to `used`. `eviction`: the
    kubelet's eviction thresholds on this filesystem (rows as `threshold_row` makes them);
    `image_gc`: the image GC thresholds (imagefs only)."""

    roles: list[str]
    path: str
    device: int
    stats: FsStats
    lines: list[Line] = field(default_factory=list)
    eviction: list[dict[str, Any]] = field(default_factory=list)
    image_gc: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def capacity(self) -> int:
        return self.stats.capacity

    @property
    def available(self) -> int:
        return self.stats.available

    @property
    def used(self) -> int:
        """capacity − available: the kubelet's view, root's reserve included."""
        return self.stats.capacity - self.stats.available

    @property
    def shown_roles(self) -> list[str]:
        return [r for r in self.roles if r != "pods"] or list(self.roles)

    def line(self, key: str) -> Line | None:
        return next((ln for ln in self.lines if ln.key == key), None)

    def attributed(self) -> int:
        """The known bytes of every top-level line but `other`."""
        return sum(ln.bytes or 0 for ln in self.lines if not ln.parent and ln.key != OTHER)

    def reclaimable(self) -> int:
        return sum(ln.reclaimable or 0 for ln in self.lines if not ln.parent)

    def to_dict(self) -> dict[str, Any]:
        return {
            "roles": self.shown_roles,
            "path": self.path,
            "device": f"{os.major(self.device)}:{os.minor(self.device)}",
            "capacity": self.capacity,
            "used": self.used,
            "available": self.available,
            "inodes": self.stats.inodes,
            "inodes_used": self.stats.inodes - self.stats.inodes_free,
            "inodes_free": self.stats.inodes_free,
            "lines": [ln.to_dict(self.capacity) for ln in self.lines],
            "attributed": self.attributed(),
            "reclaimable": self.reclaimable(),
            "eviction": list(self.eviction),
            "image_gc": self.image_gc,
            "notes": list(self.notes),
        }


@dataclass(slots=True)
class DfReport:
    """`kubegc df`: the filesystems with their breakdown, the pods with the largest footprint
    (`pods`, at most `DfOptions.top`, of `pod_count`), the mount points met and not counted
    (`mounted`: host path and pod UID), where settings came from, the runtime's endpoint (the
    one tried when it failed) and why it could not be read (`runtime_error`, "" when it was
    or was not asked), why images and writable layers are unknown although the runtime was
    read (`images_unknown`: the image filesystem it names was not found), whether the pod
    source was checked against the pods running here (`pod_source_checked`: only then does
    a pod count as deleted), what the walk could not read (`unreadable`: count, first host
    path, error), the walk's size (`entries`) and duration (`walk_seconds`), notes, the
    capture time (ns), and `reclaim_command`: `kubegc reclaim` with this run's options, the one
    command that reclaims every reclaimable line."""

    filesystems: list[Filesystem]
    pods: list[PodFootprint]
    pod_count: int
    captured_at: int
    paths: dict[str, str | None]
    mounted: list[dict[str, str]] = field(default_factory=list)
    runtime_endpoint: str = ""
    runtime_error: str = ""
    runtime_skipped: bool = False
    images_unknown: str = ""
    pod_source: str = "none"
    pod_source_checked: bool = False
    reclaim_command: str = ""
    image_gc_sources: dict[str, str] = field(default_factory=dict)
    unreadable: dict[str, Any] | None = None
    entries: int = 0
    walk_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    def exit_code(self) -> int:
        """3 when the runtime was asked for and its images and writable layers are unknown
        (it could not be read, or its image filesystem was not found), else 0."""
        unknown = self.runtime_error or self.images_unknown
        return ExitCode.UNAVAILABLE if unknown else ExitCode.OK

    def reclaimable(self) -> int:
        return sum(f.reclaimable() for f in self.filesystems)

    def to_dict(self) -> dict[str, Any]:
        by_command: dict[str, int] = {}
        for f in self.filesystems:
            for ln in f.lines:
                if ln.parent or not ln.command or not ln.reclaimable:
                    continue
                by_command[ln.command] = by_command.get(ln.command, 0) + ln.reclaimable
        return {
            "kind": KIND,
            "apiVersion": API_VERSION,
            "now": ns_to_rfc3339(self.captured_at),
            "paths": dict(self.paths),
            "runtime": {
                "endpoint": self.runtime_endpoint or None,
                "read": not self.runtime_error and not self.runtime_skipped,
                "skipped": self.runtime_skipped,
                "error": self.runtime_error or None,
                "images_unknown": self.images_unknown or None,
            },
            "pod_source": self.pod_source,
            "pod_source_checked": self.pod_source_checked,
            "reclaim_command": self.reclaim_command or None,
            "unreadable": dict(self.unreadable) if self.unreadable else None,
            "image_gc_sources": dict(self.image_gc_sources),
            "filesystems": [f.to_dict() for f in self.filesystems],
            "pods": [p.to_dict() for p in self.pods],
            "pod_count": self.pod_count,
            "mounted": [dict(m) for m in self.mounted],
            "notes": list(self.notes),
            "summary": {
                "used": sum(f.used for f in self.filesystems),
                "reclaimable": self.reclaimable(),
                "reclaimable_by_command": by_command,
                "entries_walked": self.entries,
                "walk_seconds": round(self.walk_seconds, 3),
            },
            "exit_code": self.exit_code(),
        }


# --- observation -------------------------------------------------------------------------------


def read_runtime(s: Settings, ui: Ui, pod_logs_dir: str, mounts: MountTable) -> RuntimeView:
    """Read everything `df` needs from the CRI runtime in one connection. Raises
    `RuntimeUnavailable` when any call fails (the runtime is then unknown as a whole)."""
    client = open_client(s, ui)
    try:
        return read_runtime_view(
            client, s.host_root, pod_logs_dir, mounts, runtime_config=s.runtime_config,
            warn=ui.warn,
        )  # fmt: skip
    finally:
        client.close()


# --- the report --------------------------------------------------------------------------------


def _commands(s: Settings, opts: DfOptions) -> dict[str, str]:
    """Each reclaiming command (`CMD_*`) as this run would run it, so that it acts on what was
    measured: the same host root, runtime endpoint and kubelet config; the same pod source
    (not for `gc images`, which reads none); the kubelet root (`residue clean`) and pod log
    root (`gc all`, `residue clean`, `reclaim`: every kind in one plan) when given. Values are
    shell-quoted."""
    common: list[str] = []
    if os.path.normpath(str(s.host_root)) != "/":
        common += ["--host-root", str(s.host_root)]
    if s.runtime_endpoint:
        common += ["-r", s.runtime_endpoint]
    if s.kubelet_config is not None:
        common += ["--kubelet-config", str(s.kubelet_config)]
    if s.kubelet_config_dir is not None:
        common += ["--kubelet-config-dir", str(s.kubelet_config_dir)]
    if s.kubelet_version is not None:
        common += ["--kubelet-version", s.kubelet_version]
    pods: list[str] = []
    if s.pods_file is not None:
        pods += ["--pods-file", str(s.pods_file)]
    else:
        if s.pod_source:
            pods += ["--pod-source", s.pod_source]
        for flag, value in (
            ("--kubeconfig", s.kubeconfig), ("--context", s.context), ("--node-name", s.node_name)
        ):  # fmt: skip
            if value:
                pods += [flag, value]
    logs = [] if opts.pod_logs_dir is None else ["--pod-logs-dir", opts.pod_logs_dir]
    root = [] if opts.root_dir == DEFAULT_ROOT_DIR else ["--root-dir", opts.root_dir]

    def line(base: str, *args: str) -> str:
        return " ".join([base, *(shlex.quote(a) for a in args)])

    return {
        CMD_IMAGES: line(CMD_IMAGES, *common),
        CMD_CONTAINERS: line(CMD_CONTAINERS, *common, *pods),
        CMD_ALL: line(CMD_ALL, *common, *pods, *logs),
        CMD_RESIDUE: line(CMD_RESIDUE, *common, *pods, *root, *logs),
        CMD_RECLAIM: line(CMD_RECLAIM, *common, *pods, *root, *logs),
    }


RuntimeReader = Callable[["Settings", "Ui", str, MountTable], RuntimeView]


def disk_usage(
    s: Settings,
    ui: Ui,
    opts: DfOptions,
    *,
    progress: Progress | None = None,
    reader: RuntimeReader = read_runtime,
) -> DfReport:
    """`kubegc df`: the node's filesystems, what fills each, and what kubegc can reclaim.

    Paths in `opts` are host paths read under `s.host_root` (symlinks in them resolved there).
    `progress` is called while the directory trees are walked; `reader` reads the runtime
    (`read_runtime`, over CRI). Raises `BadInput` for bad options, pod source or kubelet
    config (exit 2), `RuntimeUnavailable` when the kubelet root cannot be read or is not a
    directory (exit 3). An unreachable runtime does not raise: the report's `runtime_error`
    says why (exit 3 once printed). The rules are in this module's docstring.
    """
    if s.snapshot is not None:
        raise BadInput("df measures the node's filesystems; --snapshot holds none")
    if opts.top < 0:
        raise BadInput(f"invalid value for --top: {opts.top} must be 0 or more")
    given_root = kubelet_root(opts.root_dir)
    kcfg = kubelet_config_for(s)
    given_logs = (
        validate_pod_logs_dir(opts.pod_logs_dir, source="--pod-logs-dir")
        if opts.pod_logs_dir is not None
        else kcfg.pod_logs_dir
    )
    gc_settings = _image_gc_settings(kcfg.image_gc, kcfg.source, kcfg.sources)
    pods = load_pod_inventory(s, ui)
    eviction = _eviction_config(s, ui, pods)
    now = edges().clock()
    mounts = MountTable.read()
    commands = _commands(s, opts)

    root_dir = needed_dir(
        s.host_root, given_root, "the kubelet root", lambda: root_dir_hint(s.host_root)
    )
    if opts.pod_logs_dir is not None:  # one given that is not there is a mistyped flag
        logs_dir = needed_dir(s.host_root, given_logs, "the pod log directory (--pod-logs-dir)")
    else:
        logs_dir = host_real_or_given(s.host_root, given_logs)

    rt: RuntimeView | None = None
    runtime_error = ""
    endpoint = ""
    if opts.runtime:
        try:
            rt = reader(s, ui, logs_dir, mounts)
        except RuntimeUnavailable as exc:
            runtime_error = str(exc)
            endpoint = _endpoint_tried(s)
            ui.warn(f"{exc}; images and writable layers are unknown (exit 3 after the report)")
        else:
            endpoint = rt.endpoint
            pods = against_runtime(
                pods,
                rt.containers,
                rt.sandboxes,
                consequence="df needs this node's pods, or no pod source",
            )
    # Without the runtime the pod source cannot be checked against the pods running here
    # (the check every gc command makes): no pod counts as deleted then.
    checked = pods.known and rt is not None
    deleted = pods.is_deleted if checked else _never

    report = DfReport(
        reclaim_command=commands[CMD_RECLAIM],
        filesystems=[],
        pods=[],
        pod_count=0,
        captured_at=now,
        paths={
            "root_dir": given_root,
            "pod_logs_dir": given_logs,
            "imagefs": None,
            "containerfs": None,
        },
        runtime_endpoint=endpoint,
        runtime_error=runtime_error,
        runtime_skipped=not opts.runtime,
        pod_source=pods.source,
        pod_source_checked=checked,
        image_gc_sources=dict(gc_settings.origins),
    )
    layout = _layout(s, rt, root_dir, report)
    going = _container_gc(rt, pods, now) if rt is not None else {}
    removed = frozenset(going)

    residue, skip = residue_dirs(s.host_root, ui.warn, root_dir, logs_dir, pods, rt, mounts)
    walker = Walker(mounts, skip, progress)
    began = time.perf_counter()
    logs_dev = walk_roots(walker, s.host_root, root_dir, logs_dir, deleted, report.notes)
    report.walk_seconds = time.perf_counter() - began
    report.entries = walker.entries
    if rt is not None and logs_dev is not None:
        kubelet_logs = host_real_or_given(s.host_root, kcfg.pod_logs_dir)
        dead_container_logs(
            walker, s.host_root, kubelet_logs, rt, deleted, going, logs_dev, mounts
        )  # fmt: skip

    roles = [("nodefs", root_dir), ("pods", f"{root_dir.rstrip('/')}/pods"), ("logs", logs_dir)]
    if layout is not None:
        roles[1:1] = [("imagefs", layout.imagefs),
                      ("containerfs", layout.containerfs or layout.imagefs)]  # fmt: skip
    systems = [
        Filesystem(roles=f.roles, path=f.path, device=f.device, stats=f.stats)
        for f in role_filesystems(s.host_root, roles, report.notes)
    ]
    for finding in residue:
        report.mounted += count_finding(s.host_root, finding, walker.tally)
    if rt is not None and logs_dev is not None:
        _log_rotation(s, ui, rt, logs_dir, kcfg.log_rotation, mounts, deleted, removed, walker,
                      report.notes)  # fmt: skip
    _attribute(s, systems, walker, rt, removed, now, commands, report)
    _thresholds(systems, eviction, layout, report)
    _image_gc(systems, gc_settings, report)
    report.filesystems = systems
    _rank(walker, pods, deleted, rt, opts.top, report)
    report.mounted += [
        {"path": host_path_of(s.host_root, path), "pod_uid": uid}
        for path, uid in sorted(walker.mounted)
    ]
    for p in walker.pods.values():
        p.mounted = sorted(host_path_of(s.host_root, m) for m in p.mounted)
    if walker.unreadable and walker.first_unreadable is not None:
        path, why = walker.first_unreadable
        report.unreadable = {
            "count": walker.unreadable,
            "first": host_path_of(s.host_root, path),
            "error": why,
        }
    _notes(report, pods, rt, walker)
    return report


#: The rotation findings counted in the `log-rotation` line.
ROTATION_COUNTED = (ROTATED_PAST_COUNT, ROTATION_LEFTOVER, EARLIER_INSTANCE_LOG,
                    ROTATED_UNCOMPRESSED)  # fmt: skip


def _log_rotation(
    s: Settings,
    ui: Ui,
    rt: RuntimeView,
    logs_dir: str,
    rotation: LogRotation,
    mounts: MountTable,
    deleted: Callable[[str], bool],
    removed: frozenset[str],
    walker: Walker,
    notes: list[str],
) -> None:
    """The `log-rotation` line: the rotation findings `residue scan` makes (`ROTATION_COUNTED`)
    moved out of `logs` on the device of each file, reclaimable when `residue clean` removes
    them; none of a deleted pod or of a container `gc containers` removes (counted there),
    nor an earlier instance's log not safe to remove (it may be a new instance's). Live logs
    over size and containers over budget: a note each."""
    uids = {c.pod_uid for c in rt.containers} | {sb.uid for sb in rt.sandboxes}
    uids |= {sb.labels.get(LABEL_POD_UID, "") for sb in rt.sandboxes}
    owners, unsure = log_owners(logs_dir, rt.containers)
    ctx = ScanContext(
        host_root=s.host_root,
        pod_logs_dir=logs_dir,
        runtime_known=True,
        runtime_pod_uids=frozenset(u for u in uids if u),
        sandbox_ids=frozenset(sb.id for sb in rt.sandboxes),
        container_ids=frozenset(c.id for c in rt.containers),
        mounts=mounts,
        log_rotation=rotation,
        log_owners=owners,
        log_unsure=unsure,
    )
    found = rotation_findings(ctx, (*ROTATION_COUNTED, LOG_OVER_SIZE, LOGS_OVER_BUDGET), ui.warn)
    tally = walker.tally
    over = budget = 0
    for f in found:
        d = f.details
        if deleted(str(d.get("uid", ""))) or d.get("container_id") in removed:
            continue
        if f.type == LOG_OVER_SIZE:
            over += 1
            continue
        if f.type == LOGS_OVER_BUDGET:
            budget += 1
            continue
        if f.type == EARLIER_INSTANCE_LOG and not f.safe:
            continue  # not known to be an earlier instance's (yet): a live log, maybe
        dev, n = d.get("dev"), f.bytes or 0
        if not isinstance(dev, int):
            continue
        tally.add(dev, LOGS, -n)
        tally.add(dev, LOG_ROTATION, n, reclaim=n if f.safe else 0, count=1)
    size = format_bytes(rotation.max_size)
    if over:
        notes.append(
            f"{over} running container log(s) at or over containerLogMaxSize {size} "
            f"({rotation.source}): the kubelet has not rotated them yet (`residue clean` "
            "rotates them; that moves bytes, it frees none)"
        )
    if budget:
        notes.append(
            f"{budget} container log(s) over containerLogMaxSize × containerLogMaxFiles "
            f"({size} × {rotation.max_files}): `residue scan --kind logs-over-budget` names them"
        )


def _never(uid: str) -> bool:
    return False


def _endpoint_tried(s: Settings) -> str:
    """The runtime endpoint kubegc tried ("" when none could be resolved)."""
    try:
        return resolve_endpoint(
            s.runtime_endpoint, s.env, s.host_root, s.runtime_endpoint_source
        ).display
    except KubegcError:
        return ""


def _container_gc(rt: RuntimeView, pods: PodInventory, now: int) -> dict[str, int]:
    """The containers `gc containers` removes with its default policy and this pod source,
    each with the log bytes its plan expects to free (ID → `log_bytes`, None counted 0): the
    container GC planner itself, on the same sizes, so reclaimable is what it expects."""
    ready = frozenset(sb.id for sb in rt.sandboxes if sb.state is SandboxState.READY)
    plan = plan_containers(
        rt.containers, ContainerGCPolicy(), pods, now, ready_sandboxes=ready, layers=rt.layers
    )
    return {a.container.id: a.container.log_bytes or 0 for a in plan.actions}


def _attribute(
    s: Settings,
    systems: list[Filesystem],
    walker: Walker,
    rt: RuntimeView | None,
    removed: frozenset[str],
    now: int,
    commands: Mapping[str, str],
    report: DfReport,
) -> None:
    """Fill each filesystem's lines: what the walk and residue counted on its device, images
    on imagefs, writable layers on containerfs (`removed`: the containers `gc containers`
    removes), unknown lines on nodefs when the runtime was not read or its image filesystem
    was not found (`report.images_unknown`, exit 3), then root's reserve and `other`."""
    by_dev = {f.device: f for f in systems}
    tally = walker.tally
    for dev in sorted(tally.devices() - by_dev.keys()):
        lost = sum(v for (d, key), v in tally.bytes.items() if d == dev and "." not in key)
        report.notes.append(
            f"{format_bytes(lost)} on device {os.major(dev)}:{os.minor(dev)} belong to none "
            "of the filesystems shown"
        )
    for f in systems:
        _lines(f, tally, commands)
    image_fs = next((f for f in systems if "imagefs" in f.roles), None)
    layer_fs = next((f for f in systems if "containerfs" in f.roles), None)
    if rt is not None and image_fs is not None and layer_fs is not None:
        image_fs.lines += _image_lines(rt, now, commands[CMD_IMAGES])
        layer_fs.lines += _layer_lines(rt, walker, removed, commands[CMD_CONTAINERS])
    else:
        if report.runtime_skipped:
            why = "not read (--no-runtime)"
        elif report.runtime_error:
            why = f"unknown: the runtime could not be read ({report.runtime_error})"
        else:
            if not report.images_unknown:
                paths = {report.paths.get("imagefs"), report.paths.get("containerfs")}
                where = ", ".join(sorted(p for p in paths if p))
                report.images_unknown = (
                    f"the image filesystem the runtime reports ({where}) was not found under "
                    f"--host-root {s.host_root}"
                )
            why = f"unknown: {report.images_unknown}"
        systems[0].lines += [
            Line(IMAGES, None, reclaimable=None, note=why),
            Line(LAYERS, None, reclaimable=None, note=why),
        ]
    for f in systems:
        f.lines.sort(key=lambda ln: ORDER.get(ln.key, len(ORDER)))
        _close(f)
        if "logs" in f.roles and not {"nodefs", "imagefs", "containerfs"} & set(f.roles):
            f.notes.append("no kubelet eviction signal watches this filesystem")


def _rank(
    walker: Walker,
    pods: PodInventory,
    deleted: Callable[[str], bool],
    rt: RuntimeView | None,
    top: int,
    report: DfReport,
) -> None:
    """Name the pods (pod source, else their log directory, else the runtime's sandbox), mark
    those that count as `deleted`, and keep the `top` largest footprints (0 = all)."""
    for uid, p in walker.pods.items():
        p.deleted = deleted(uid)
        info = pods.pods.get(uid)
        if info is not None:
            p.namespace, p.name = info.namespace, info.name
    for sb in rt.sandboxes if rt else []:
        known = walker.pods.get(sb.uid)
        if known is not None and not known.name:
            known.namespace, known.name = sb.namespace, sb.name
    ranked = sorted(walker.pods.values(), key=lambda p: (-p.footprint, p.uid))
    ranked = [p for p in ranked if p.footprint or p.mounted]
    report.pod_count = len(ranked)
    report.pods = ranked[:top] if top > 0 else ranked


def _image_gc_settings(
    config: Mapping[str, Any], source: str, sources: Mapping[str, str]
) -> ImageGCSettings:
    """The image GC thresholds as `gc images` resolves them without flags: the kubelet config
    file, else the kubelet's defaults. Raises `BadInput` for values the kubelet rejects."""
    settings = resolve_image_gc_settings({}, config, source, sources)
    ImageGCPolicy(**settings.values).validate(settings.names)
    return settings


def _eviction_config(s: Settings, ui: Ui, pods: PodInventory) -> EvictionConfig:
    """The eviction thresholds as `evict check` reads them without flags, their defaults
    those of the kubelet version it finds (`kubelet_version`: the Node in `pods`)."""
    return eviction_config(s, ui, RawEviction(), pods=pods)


def _layout(
    s: Settings, rt: RuntimeView | None, root_dir: str, report: DfReport
) -> FsLayout | None:
    if rt is None:
        return None
    try:
        layout = fs_layout(s.host_root, root_dir, rt.image_fs, rt.container_fs)
    except RuntimeUnavailable as exc:
        report.images_unknown = str(exc)
        report.notes.append(f"{exc}: images and writable layers are not attributed (exit 3)")
        return None
    report.paths["imagefs"] = layout.imagefs
    report.paths["containerfs"] = layout.containerfs or layout.imagefs
    return layout


def _lines(f: Filesystem, tally: Tally, commands: Mapping[str, str]) -> None:
    """The walked and residue lines of `f` from the tally, with the commands that reclaim
    them (`_commands`: carrying this run's options)."""
    gc_all, clean = commands[CMD_ALL], commands[CMD_RESIDUE]
    by_key = {LOGS: gc_all, LOGS_DEAD: commands[CMD_CONTAINERS], LOGS_DELETED: gc_all,
              RESIDUE: clean, RESIDUE_POD_DIRS: clean, RESIDUE_LOG_DIRS: clean,
              LOG_ROTATION: clean}  # fmt: skip
    for (dev, key), n in tally.bytes.items():
        if dev != f.device:
            continue
        back = tally.reclaim.get((dev, key), 0)
        count = tally.count.get((dev, key))
        cmd = by_key.get(key, "") if back else ""
        f.lines.append(Line(key, n, count, back, cmd))


def _image_lines(rt: RuntimeView, now: int, command: str) -> list[Line]:
    """images (total), in use, unused; reclaimable = what `gc images --prune-unused` removes
    (the same planner and policy: never the runtimes' sandbox or pinned images, nor an image
    that cannot be pulled again, as without --allow-unpullable)."""
    plan = plan_images(
        rt.images, rt.containers, {}, ImageGCPolicy(min_age=0, prune_unused=True), now,
        began=now, protected=rt.sandbox_images,
    )  # fmt: skip
    every = [d.image for d in [*plan.remove, *plan.kept]]
    in_use = [d.image for d in plan.kept if d.rule == KEEP_IN_USE]
    unused = [d.image for d in [*plan.remove, *plan.kept] if d.rule != KEEP_IN_USE]
    back = sum(d.image.size for d in plan.remove)
    kept = len(unused) - len(plan.remove)
    note = f"{kept} unused kept: pinned, a sandbox image or cannot be pulled again" if kept else ""
    return [
        Line(IMAGES, sum(i.size for i in every), len(every), back, command if back else ""),
        Line(IMAGES_IN_USE, sum(i.size for i in in_use), len(in_use)),
        Line(IMAGES_UNUSED, sum(i.size for i in unused), len(unused), back,
             command if back else "", note),
    ]  # fmt: skip


def _layer_lines(rt: RuntimeView, w: Walker, removed: frozenset[str], command: str) -> list[Line]:
    """writable layers (total), of running and of dead containers; reclaimable: the layers of
    the containers `gc containers` removes (`removed`). Each pod's share goes to its
    footprint."""
    running = [c for c in rt.containers if c.state is ContainerState.RUNNING]
    dead = [c for c in rt.containers if c.state is not ContainerState.RUNNING]

    def size(cs: Iterable[Container]) -> int:  # (as `gc containers` counts a layer)
        return sum(layer_of(rt.layers, c.id) or 0 for c in cs)

    for c in rt.containers:
        if c.pod_uid:
            p = w.pod(c.pod_uid)
            p.writable_layers = (p.writable_layers or 0) + size([c])
    back = size(c for c in dead if c.id in removed)
    kept = sum(1 for c in dead if c.id not in removed)
    note = (
        f"{kept} kept: gc containers (default policy, this pod source) keeps the newest dead "
        "container of each container of a pod not known to be deleted (MaxPerPodContainer 1)"
        if kept
        else ""
    )
    zero = sum(1 for c in dead if layer_of(rt.layers, c.id) == 0)
    if zero:  # containerd measures a layer every 10 s: 0 until it has
        unmeasured = (
            f"{zero} report 0 bytes: the runtime may not have measured them yet (containerd "
            "does every 10 s after a container exits)"
        )
        note = f"{note}; {unmeasured}" if note else unmeasured
    cmd = command if back else ""
    return [
        Line(LAYERS, size(rt.containers), len(rt.containers), back, cmd),
        Line(LAYERS_RUNNING, size(running), len(running)),
        Line(LAYERS_DEAD, size(dead), len(dead), back, cmd, note, note_shown=bool(zero)),
    ]


def _close(f: Filesystem) -> None:
    """Append root's reserve and `other` (used − everything else), so the lines add up."""
    reserved = max(0, f.stats.free - f.stats.available)
    if reserved:
        f.lines.append(Line(RESERVED, reserved, note="counted as used, as the kubelet does"))
    other = f.used - f.attributed()
    note = "not Kubernetes': the OS, other programs, filesystem metadata"
    if other < 0:
        note = (
            "negative: the lines above overstate (CRI image sizes count a layer shared by "
            "several images once per image)"
        )
    if any(ln.bytes is None for ln in f.lines):
        note += "; includes what is unknown above"
    f.lines.append(Line(OTHER, other, note=note))


def threshold_row(r: Any) -> dict[str, Any]:
    """One eviction `ThresholdResult` as a JSON-ready row (bytes, or inodes for inodesFree)."""
    t = r.threshold
    return {
        "signal": t.signal,
        "threshold": t.text,
        "threshold_quantity": r.threshold_quantity,
        "observed": r.observation.available,
        "margin": r.margin,
        "met": r.met,
        "hard": t.hard,
        "grace_period_seconds": t.grace_period,
        "source": t.source,
    }


def _thresholds(
    systems: list[Filesystem], config: EvictionConfig, layout: FsLayout | None, report: DfReport
) -> None:
    """The kubelet's disk eviction thresholds, each on the filesystem its signal observes."""
    obs: dict[str, Any] = {}
    for f in systems:
        for family in ("nodefs", "imagefs", "containerfs"):
            if family in f.roles:
                obs.update(disk_observations(family, f.stats, f.path)[0])
    results = evaluate(
        config, obs, dedicated_imagefs=bool(layout and layout.dedicated_imagefs),
        split=bool(layout and layout.split),
    )  # fmt: skip
    unknown: list[str] = []
    for r in results:
        family = r.threshold.signal.split(".", 1)[0]
        if family not in ("nodefs", "imagefs", "containerfs"):
            continue
        home = next((f for f in systems if family in f.roles), None)
        if home is None or r.observation is None:
            unknown.append(r.threshold.expression)
            continue
        home.eviction.append(threshold_row(r))
    if unknown:
        report.notes.append(f"{', '.join(unknown)}: not shown, their filesystem is unknown")


def _image_gc(systems: list[Filesystem], settings: ImageGCSettings, report: DfReport) -> None:
    """The image GC thresholds on the image filesystem, with its usage in the kubelet's
    integer arithmetic (`policy.images.usage`)."""
    policy = ImageGCPolicy(**settings.values)
    for f in systems:
        if "imagefs" not in f.roles:
            continue
        try:
            pct: int | None = usage(f.capacity, f.available, f.path)[0]
        except GCFailed as exc:
            pct = None
            f.notes.append(str(exc))
        f.image_gc = {
            "high_threshold": policy.high_threshold,
            "low_threshold": policy.low_threshold,
            "minimum_image_ttl_duration": format_go_duration(policy.min_age),
            "image_maximum_gc_age": format_go_duration(policy.max_age),
            "usage_percent": pct,
            "above_high": pct is not None and pct >= policy.high_threshold,
            "disabled": policy.threshold_gc_disabled,
        }


def _notes(report: DfReport, pods: PodInventory, rt: RuntimeView | None, w: Walker) -> None:
    if not pods.known:
        report.notes.append(
            "no pod source (--pods-file or the API): no pod counts as deleted, so the logs of "
            "deleted pods and orphaned directories are not told apart"
        )
    elif not report.pod_source_checked:
        gone = [p for uid, p in w.pods.items() if pods.is_deleted(uid)]
        why = "--no-runtime" if report.runtime_skipped else "the runtime could not be read"
        report.notes.append(
            f"pod source {pods.source} not checked against the pods running on this node "
            f"({why}; gc refuses a source that lists none of them): no pod counts as deleted, "
            f"so the logs of the {len(gone)} pod(s) it does not list "
            f"({format_bytes(sum(p.logs for p in gone))}) are not counted reclaimable"
        )
    if rt is not None:
        report.notes.append(
            "the images' reclaimable bytes are an estimate: the sizes the runtime reports "
            "(removing an image also frees its unpacked layers, and not the layers images that "
            "stay share); and gc images keeps images first seen less than MinAge "
            "(minimumImageTTLDuration) ago"
        )
    if report.mounted:
        report.notes.append(
            f"{len(report.mounted)} mount point(s) below pod directories are not counted "
            "(memory-backed emptyDir, secrets, other volumes): listed with -v, and under "
            "mounted in -o json"
        )
    if report.unreadable:
        u = report.unreadable
        report.notes.append(
            f"{u['count']} entr{'y' if u['count'] == 1 else 'ies'} below the pod directories "
            f"and pod logs could not be read (first: {u['first']}: {u['error']}): what they "
            "hold is in no line above but in other"
        )
