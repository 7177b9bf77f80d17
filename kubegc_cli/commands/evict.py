"""What the node's eviction signals say now: `kubegc memory available` and `kubegc evict check`.

Observe only: nothing here changes the node. Host figures come from files under `--host-root`
(cgroups, /proc, statvfs); the image filesystem from CRI `ImageFsInfo`; pod names and
requests from the pod source, else from the runtime's sandbox labels.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegc_cli.core.errors import BadInput, KubegcError, RuntimeUnavailable
from kubegc_cli.core.model import API_VERSION as API_VERSION
from kubegc_cli.core.units import ns_to_rfc3339, parse_bytes
from kubegc_cli.node.host.bounded import stat_of
from kubegc_cli.node.host.cgroups import (
    CgroupLayout,
    PodCgroup,
    PodCgroupScan,
    UnreadablePodCgroup,
    detect_layout,
    read_pod_cgroups,
)
from kubegc_cli.node.host.memory import (
    AllocatableMemory,
    NodeMemory,
    allocatable_memory,
    node_memory,
)

if TYPE_CHECKING:
    from kubegc_cli.commands.session import Settings, Ui
    from kubegc_cli.core.pods import PodInventory


@dataclass(frozen=True, slots=True)
class PodMemory:
    """One pod's memory from its cgroup (bytes): `working_set` = max(0, usage − inactive_file),
    as the kubelet ranks pods for memory eviction. `namespace`/`name` are "" when unknown."""

    uid: str
    namespace: str
    name: str
    qos: str
    usage: int
    inactive_file: int
    active_file: int
    working_set: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # (every field, in order: plain strings and ints)


@dataclass(frozen=True, slots=True)
class PodWithoutStats:
    """A pod whose cgroup was found but could not be read: no figures. `namespace`/`name`
    are "" when unknown; `cgroup` is the host path, `reason` the file and why."""

    uid: str
    namespace: str
    name: str
    qos: str
    cgroup: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)  # (every field, in order: plain strings and ints)


@dataclass(slots=True)
class MemoryReport:
    """`kubegc memory available`: the node's `memory.available` with its breakdown, the pods
    cgroup's `allocatableMemory.available` (None when there is no kubepods cgroup or no limit),
    the pods with the largest working sets (`pods`, at most --top of the `pod_count` pods
    read), the pods whose cgroup could not be read (`without_stats`), and notes.
    `captured_at` in ns since the epoch."""

    node: NodeMemory
    allocatable: AllocatableMemory | None
    pods: list[PodMemory]
    pod_count: int
    layout: CgroupLayout
    captured_at: int
    notes: list[str] = field(default_factory=list)
    without_stats: list[PodWithoutStats] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        n = self.node
        alloc = self.allocatable
        return {
            "kind": "MemoryAvailable",
            "apiVersion": API_VERSION,
            "now": ns_to_rfc3339(self.captured_at),
            "cgroup": {
                "version": self.layout.version,
                "driver": self.layout.driver,
                "memory_root": self.layout.memory_root,
                "pods_cgroup": self.layout.pods_cgroup,
            },
            "memory.available": {
                "available": n.available,
                "capacity": n.capacity,
                "usage": n.usage,
                "active_file": n.active_file,
                "inactive_file": n.inactive_file,
                "working_set": n.working_set,
                "mem_available": n.mem_available,
                "active_file_drags_available": n.active_file_drags_available,
                "sources": dict(n.sources),
            },
            "allocatableMemory.available": None
            if alloc is None
            else {
                "available": alloc.available,
                "allocatable": alloc.allocatable,
                "allocatable_source": alloc.allocatable_source,
                "cgroup": alloc.cgroup,
                "cgroup_limit": alloc.cgroup_limit,
                "usage": alloc.usage,
                "active_file": alloc.active_file,
                "inactive_file": alloc.inactive_file,
                "working_set": alloc.working_set,
            },
            "pods": [p.to_dict() for p in self.pods],
            "pod_count": self.pod_count,
            "pods_without_stats": [p.to_dict() for p in self.without_stats],
            "notes": list(self.notes),
        }


def _node_allocatable(node: Mapping[str, Any], source: str) -> int | None:
    status = node.get("status")
    alloc = status.get("allocatable") if isinstance(status, Mapping) else None
    value = alloc.get("memory") if isinstance(alloc, Mapping) else None
    if value is None:
        return None
    return parse_bytes(str(value), flag=f"{source}: status.allocatable.memory")


def resolve_allocatable(
    s: Settings, ui: Ui, given: int | None, pods: PodInventory
) -> tuple[int | None, str]:
    """Node allocatable memory (bytes) and where it came from: `given` (`--allocatable`), else
    the Node object the pods file carries (`kubectl get pods,nodes -o json`) or the API
    serves, else (None, "") — the kubepods cgroup's own limit is then used.

    Raises `BadInput` for a Node object whose allocatable memory is not a quantity."""
    if given is not None:
        return given, "--allocatable"
    from kubegc_cli.node.pods.api import node_name

    name = node_name(s.node_name)
    node = pods.nodes.get(name)
    if node is None and len(pods.nodes) == 1 and not s.node_name:
        name, node = next(iter(pods.nodes.items()))
    elif node is None and pods.nodes:
        ui.warn(
            f"the pod source holds Node(s) {', '.join(sorted(pods.nodes))} but not {name} "
            "(--node-name): allocatable from the kubepods cgroup limit"
        )
    if node is not None:
        value = _node_allocatable(node, pods.source)
        if value is not None:
            return value, f"Node {name} status.allocatable ({pods.source})"
    if pods.source.startswith("api:"):
        from kubegc_cli.node.pods.api import ApiSource, find_credentials, read_node

        creds = find_credentials(s.kubeconfig, s.env)
        if creds is not None:
            try:
                doc = read_node(ApiSource(creds, s.context, name), s.timeout)
            except RuntimeUnavailable as exc:
                ui.info(f"{exc}; using the kubepods cgroup limit as allocatable")
            else:
                value = _node_allocatable(doc, "API")
                if value is not None:
                    return value, f"Node {name} status.allocatable (API)"
    return None, ""


def pod_names(
    s: Settings, ui: Ui, pods: PodInventory, uids: Iterable[str]
) -> dict[str, tuple[str, str]]:
    """Pod UID → (namespace, name): from the pod source, else from the runtime's sandbox
    labels (io.kubernetes.pod.*). An unreachable runtime only leaves names out (-v says why)."""
    names = {u: (p.namespace, p.name) for u, p in pods.pods.items()}
    missing = [u for u in uids if u not in names]
    if not missing:
        return names
    from kubegc_cli.commands.session import open_client

    try:
        client = open_client(s, ui)
        try:
            for sb in client.list_sandboxes():
                if sb.uid and sb.uid not in names:
                    names[sb.uid] = (sb.namespace, sb.name)
        finally:
            client.close()
    except (RuntimeUnavailable, BadInput) as exc:
        ui.info(f"pod names from the runtime: {exc}")
    return names


def _load_pods(s: Settings, ui: Ui) -> PodInventory:
    from kubegc_cli.commands.session import load_pod_inventory
    from kubegc_cli.core.pods import NO_POD_SOURCE

    try:
        return load_pod_inventory(s, ui)
    except KubegcError:
        if explicit_pod_source(s):
            raise
        return NO_POD_SOURCE


def explicit_pod_source(s: Settings) -> bool:
    """The operator named a pod source (--pod-source, --pods-file, --kubeconfig): a source
    that cannot be read is then an error, not a quiet fallback to none."""
    return bool(s.pod_source or s.pods_file or s.kubeconfig)


def memory_report(s: Settings, ui: Ui, *, allocatable: int | None, top: int) -> MemoryReport:
    """`kubegc memory available`: one sample of the kubelet's memory signals (bytes).

    `allocatable` (bytes) overrides the node allocatable; `top` limits the pod list (0 = all).
    A pod cgroup that cannot be read makes only that pod's figures unknown (listed in
    `without_stats`, with a note). Raises `SignalUnavailable` (exit 3) when a node-level file
    (meminfo, the root or kubepods memory cgroup, the mount table) cannot be read, `BadInput`
    for a bad pod source or allocatable.
    """
    host = s.host_root
    layout = detect_layout(host)
    node = node_memory(host, layout)
    pods = _load_pods(s, ui)
    alloc_bytes, alloc_source = resolve_allocatable(s, ui, allocatable, pods)
    alloc = allocatable_memory(host, layout, alloc_bytes)
    if alloc is not None and alloc_source:
        alloc = replace(alloc, allocatable_source=alloc_source)
    scan = read_pod_cgroups(host, layout) if layout.pods_cgroup else PodCgroupScan()
    ranked = sorted(scan.pods, key=lambda c: (-c.memory.working_set, c.uid))
    shown = ranked[:top] if top > 0 else ranked
    uids = [c.uid for c in shown] + [u.uid for u in scan.unreadable]
    names = pod_names(s, ui, pods, uids) if uids else {}
    report = MemoryReport(
        node=node,
        allocatable=alloc,
        pods=[_pod_memory(c, names) for c in shown],
        pod_count=len(scan.pods),
        layout=layout,
        captured_at=time.time_ns(),
        without_stats=[_without_stats(u, names) for u in scan.unreadable],
    )
    report.notes.extend(memory_notes(node, alloc, alloc_source, layout))
    report.notes.extend(pod_cgroup_notes(scan, names))
    return report


def _without_stats(u: UnreadablePodCgroup, names: Mapping[str, tuple[str, str]]) -> PodWithoutStats:
    ns, name = names.get(u.uid, ("", ""))
    return PodWithoutStats(u.uid, ns, name, u.qos, u.path, u.reason)


def pod_label(uid: str, names: Mapping[str, tuple[str, str]]) -> str:
    """`namespace/name (uid)` of a pod, or `uid <uid>` when its name is unknown."""
    ns, name = names.get(uid, ("", ""))
    return f"{ns}/{name} ({uid})" if name else f"uid {uid}"


def pod_cgroup_notes(scan: PodCgroupScan, names: Mapping[str, tuple[str, str]]) -> list[str]:
    """One line per pod cgroup that could not be read (naming the pod and the file) and per
    directory of pod cgroups that could not be listed: those pods have no stats, which the
    kubelet's eviction ranking puts first."""
    notes = [
        f"pod {pod_label(u.uid, names)} has no stats: {u.reason} "
        "(the kubelet ranks a pod without stats first)"
        for u in scan.unreadable
    ]
    notes += [f"pod cgroups not listed, their pods have no stats: {why}" for why in scan.unlisted]
    return notes


def _pod_memory(c: PodCgroup, names: Mapping[str, tuple[str, str]]) -> PodMemory:
    ns, name = names.get(c.uid, ("", ""))
    m = c.memory
    return PodMemory(c.uid, ns, name, c.qos, m.usage, m.inactive_file, m.active_file, m.working_set)


def memory_notes(
    node: NodeMemory, alloc: AllocatableMemory | None, alloc_source: str, layout: CgroupLayout
) -> list[str]:
    """Human lines explaining the memory figures (the #43916 page-cache case among them)."""
    from kubegc_cli.core.units import format_bytes

    notes = []
    if node.active_file_drags_available:
        notes.append(
            f"active page cache ({format_bytes(node.active_file)}) counts as used: the kubelet's "
            f"memory.available is {format_bytes(node.available)} while the kernel's MemAvailable "
            f"(what `free` shows) is {format_bytes(node.mem_available or 0)}. The kubelet may "
            "evict here although the kernel could reclaim that cache (kubernetes#43916); give "
            "I/O-heavy containers equal memory requests and limits."
        )
    if layout.pods_cgroup is None:
        notes.append("no kubepods cgroup on this host: allocatableMemory.available not observed")
    elif alloc is None:
        notes.append(
            "the kubepods cgroup has no memory limit and no allocatable was given "
            "(--allocatable, or a Node object in --pods-file / the API): "
            "allocatableMemory.available not observed"
        )
    if alloc is not None and alloc.available < 0:
        notes.append(
            f"the pods' working set exceeds allocatable memory by {format_bytes(-alloc.available)}"
        )
    return notes


def kubelet_root(root_dir: str) -> str:
    """Validate `--root-dir` (the kubelet's root directory, a host path)."""
    if not root_dir.startswith("/"):
        raise BadInput(f"--root-dir {root_dir!r} must be an absolute path")
    return os.path.normpath(root_dir)


# --- evict check -------------------------------------------------------------------------------

DISK_FAMILIES = ("nodefs", "imagefs", "containerfs")


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


@dataclass(slots=True)
class EvictionReport:
    """`kubegc evict check`: the thresholds in force (`config`), one result per threshold,
    the observations (bytes, inodes, PIDs), signals that could not be read (`unread`: signal →
    why), the pods the kubelet would evict first per met signal (`ranking`: signal → rows),
    notes, and the capture time (ns since the epoch)."""

    config: Any  # kubegc_cli.policy.eviction.thresholds.EvictionConfig
    results: list[Any]  # ThresholdResult
    observations: dict[str, Any]  # signal → Observation
    unread: dict[str, str]
    fs: FsLayout
    captured_at: int
    ranking: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def met(self) -> list[Any]:
        return [r for r in self.results if r.met]

    def unread_thresholds(self) -> list[Any]:
        return [
            r for r in self.results if r.observation is None and r.threshold.signal in self.unread
        ]

    def exit_code(self) -> int:
        """0 no threshold met; 1 at least one met; 3 none met but a threshold's signal could
        not be read (the answer is unknown)."""
        if self.met():
            return 1
        return 3 if self.unread_thresholds() else 0

    def provenance(self) -> list[str]:
        """Where each threshold (and each disabled one) came from, one line each."""
        lines = [f"{r.threshold.expression}: source: {r.threshold.source}" for r in self.results]
        lines += [
            f"{sig}<{text}: disabled; source: {src}" for sig, text, src in self.config.disabled
        ]
        return lines

    def summary_line(self) -> str:
        met = self.met()
        if met:
            kinds = sorted({"hard" if r.threshold.hard else "soft" for r in met})
            conditions = sorted({r.condition for r in met})
            return (
                f"{len(met)} threshold(s) met ({', '.join(kinds)}): "
                f"{', '.join(conditions)}; the kubelet would act"
            )
        if self.unread_thresholds():
            return "no threshold met, but some signals could not be read (exit 3)"
        return f"no threshold met ({len(self.results)} checked)"

    def to_dict(self) -> dict[str, Any]:
        def threshold(r: Any) -> dict[str, Any]:
            t = r.threshold
            obs = r.observation
            return {
                "signal": t.signal,
                "threshold": t.text,
                "threshold_quantity": r.threshold_quantity,
                "observed": None if obs is None else obs.available,
                "capacity": None if obs is None else obs.capacity,
                "margin": r.margin,
                "met": r.met,
                "hard": t.hard,
                "grace_period_seconds": t.grace_period,
                "min_reclaim": t.min_reclaim,
                "condition": r.condition,
                "reclaim_first": list(r.reclaim),
                "source": t.source,
                "observed_from": None if obs is None else obs.source,
                "note": r.note or self.unread.get(t.signal, ""),
            }

        met = self.met()
        return {
            "kind": "EvictionCheck",
            "apiVersion": API_VERSION,
            "now": ns_to_rfc3339(self.captured_at),
            "thresholds": [threshold(r) for r in self.results],
            "met": [
                {"signal": r.threshold.signal, "hard": r.threshold.hard, "condition": r.condition}
                for r in met
            ],
            "conditions": sorted({r.condition for r in met}),
            "disabled": [
                {"signal": s, "threshold": t, "source": src} for s, t, src in self.config.disabled
            ],
            "unread": dict(self.unread),
            "filesystems": self.fs.to_dict(),
            "ranking": {k: list(v) for k, v in self.ranking.items()},
            "notes": list(self.notes),
            "exit_code": self.exit_code(),
        }


def eviction_config(s: Settings, ui: Ui, flags: Any) -> Any:
    """The eviction settings in force: kubegc's flags (`flags`, a `RawEviction`), else the
    running kubelet's command line (from /proc, only when --host-root is /), else its
    config file (`--kubelet-config`, the `--config` of the running kubelet, or the default
    path under --host-root), else the kubelet's defaults. Raises `BadInput` for bad values."""
    from kubegc_cli.core.inputs import parse_yaml, present, read_text
    from kubegc_cli.node.host.kubelet import DEFAULT_CONFIG
    from kubegc_cli.policy.eviction.thresholds import (
        find_kubelet_cmdline,
        raw_from_kubelet_cmdline,
        raw_from_kubelet_config,
        resolve,
    )

    layers = [flags]
    config_path = s.kubelet_config
    found = find_kubelet_cmdline(s.host_root)
    if found is not None:
        pid, argv = found
        raw, cmd_config = raw_from_kubelet_cmdline(argv, f"kubelet command line (pid {pid})")
        layers.append(raw)
        ui.info(f"running kubelet found: pid {pid}")
        if config_path is None and cmd_config:
            config_path = s.host_root / cmd_config.lstrip("/")
    if config_path is None:
        default = s.host_root / DEFAULT_CONFIG.lstrip("/")
        config_path = default if present(default) else None
    if config_path is not None:
        doc = parse_yaml(read_text(config_path, "kubelet config"), config_path, "kubelet config")
        if doc is not None and not isinstance(doc, Mapping):
            raise BadInput(f"{config_path}: not a KubeletConfiguration (expected a mapping)")
        layers.append(raw_from_kubelet_config(doc, str(config_path)))
        ui.info(f"kubelet config: {config_path}")
    return resolve(layers)


def _families(config: Any) -> set[str]:
    fams = {t.signal.split(".", 1)[0] for t in config.thresholds}
    if "containerfs" in fams:
        fams |= {"nodefs", "imagefs"}
    return fams


def observe_signals(
    s: Settings, ui: Ui, config: Any, *, root_dir: str, allocatable: int | None
) -> tuple[dict[str, Any], dict[str, str], FsLayout]:
    """Observe the signals `config`'s thresholds need: (observations by signal, unread signal
    → why, the filesystem layout). Every failure to read is recorded, never raised: the
    report says which signals are unknown."""
    from kubegc_cli.core.errors import RuntimeUnavailable as Unreadable
    from kubegc_cli.node.host.fs import fs_stats
    from kubegc_cli.policy.eviction.thresholds import Observation

    obs: dict[str, Any] = {}
    unread: dict[str, str] = {}
    fams = _families(config)
    signals = {t.signal for t in config.thresholds}
    host = s.host_root
    fs = FsLayout(nodefs=root_dir)

    if signals & {"memory.available", "allocatableMemory.available"}:
        # Each memory signal is read on its own: the root cgroup (memory.available) and the
        # kubepods cgroup (allocatableMemory.available) fail independently.
        try:
            layout: CgroupLayout | None = detect_layout(host)
        except Unreadable as exc:
            layout = None
            unread["memory.available"] = unread["allocatableMemory.available"] = str(exc)
        if layout is not None:
            try:
                node = node_memory(host, layout)
                obs["memory.available"] = Observation(
                    "memory.available", node.available, node.available + node.working_set,
                    f"MemTotal − working set of the root memory cgroup (v{layout.version})",
                )  # fmt: skip
            except Unreadable as exc:
                unread["memory.available"] = str(exc)
            try:
                alloc = allocatable_memory(host, layout, allocatable)
            except Unreadable as exc:
                unread["allocatableMemory.available"] = str(exc)
            else:
                if alloc is not None:
                    obs["allocatableMemory.available"] = Observation(
                        "allocatableMemory.available", alloc.available,
                        alloc.available + alloc.working_set,
                        f"{alloc.allocatable_source} − working set of {alloc.cgroup}",
                    )  # fmt: skip
                # else: no kubepods cgroup with a limit: the signal does not exist on this
                # host (not an unreadable one); its thresholds are not met, as the kubelet
                # skips them

    def disk(family: str, path: str) -> None:
        try:
            st = fs_stats(host, path)
        except Unreadable as exc:
            unread[f"{family}.available"] = unread[f"{family}.inodesFree"] = str(exc)
            return
        seen, missing = disk_observations(family, st, path)
        obs.update(seen)
        unread.update(missing)

    if fams & set(DISK_FAMILIES):
        disk("nodefs", root_dir)
    if fams & set(DISK_FAMILIES):  # the layout decides what containerfs and reclaim mean
        try:
            images, containers = runtime_filesystems(s, ui)
            fs = layout_of(host, root_dir, images, containers)
        except (Unreadable, BadInput) as exc:
            why = f"image filesystem unknown ({exc})"
            for fam in ("imagefs", "containerfs"):
                unread[f"{fam}.available"] = unread[f"{fam}.inodesFree"] = why
        else:
            disk("imagefs", fs.imagefs)
            if fs.split:
                disk("containerfs", fs.containerfs)
            else:
                obs.update(containerfs_copies(obs, fs))
    if "pid.available" in signals:
        from kubegc_cli.node.host.memory import pid_available

        try:
            p = pid_available(host)
            obs["pid.available"] = Observation(
                "pid.available", p.available, p.max_pid,
                "min(pid_max, threads-max) − tasks in /proc/loadavg",
            )  # fmt: skip
        except Unreadable as exc:
            unread["pid.available"] = str(exc)
    return obs, unread, fs


def runtime_filesystems(s: Settings, ui: Ui) -> tuple[list[str], list[str]]:
    """The runtime's image and container filesystem mountpoints (host paths, as CRI
    `ImageFsInfo` names them). Remembered in the state dir while the runtime's socket stays
    the same file (`kubegc_cli.node.cri.fscache`): then no gRPC client is even loaded. Otherwise the
    runtime is asked and the answer remembered. With `--snapshot` the runtime is always asked
    and nothing is remembered. `-v` says which. Raises `RuntimeUnavailable` when the runtime
    cannot be reached, `BadInput` for a malformed endpoint."""
    from kubegc_cli.node.cri import fscache
    from kubegc_cli.node.cri.endpoint import resolve_endpoint

    ep = resolve_endpoint(s.runtime_endpoint, s.env, s.host_root, s.runtime_endpoint_source)
    ui.info(f"runtime endpoint {ep.display} (from {ep.source})")
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
        found, why = fscache.lookup(s.state_dir, ep.address, ident, s.host_root, ui.warn)
        if found is not None:
            ui.info(
                f"image filesystem from the cache {where}: the runtime's socket {ep.path} is "
                f"the one it was asked on ({fscache.describe_identity(ident)})"
            )
            return found
    from kubegc_cli.node.cri.client import CriClient

    client = CriClient(ep, timeout=s.timeout, max_recv_bytes=s.max_recv_size)
    try:
        image_fs, container_fs = client.image_fs_info()
    finally:
        client.close()
    images = [f.mountpoint for f in image_fs]
    containers = [f.mountpoint for f in container_fs]
    ui.info(f"image filesystem from the runtime (CRI ImageFsInfo); cache {where}: {why}")
    if ident is not None and images:
        # a runtime restarted during the call may have answered on another socket
        if fscache.socket_identity(ep.path) != ident:
            ui.info("not remembered: the runtime's socket changed during the call")
        else:
            why_not = fscache.remember(s.state_dir, ep.address, ident, images, containers)
            ui.info(f"not remembered: {why_not}" if why_not else f"remembered in {where}")
    return images, containers


def _device(local: str) -> int:
    """The device of `local`, or -1 when it cannot be read or gives no answer within
    `--timeout` (`host.bounded.stat_of`: a hung mount is never waited on)."""
    try:
        return stat_of(local, follow_symlinks=True).st_dev
    except OSError:
        return -1


def fs_layout(
    host_root: Path, root_dir: str, images: Sequence[Any], containers: Sequence[Any]
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
    from kubegc_cli.node.host.logs import on_host

    if not images:
        raise RuntimeUnavailable("the runtime reports no image filesystem")
    fs = FsLayout(nodefs=root_dir, imagefs=images[0])
    image_dev = _device(on_host(host_root, fs.imagefs))
    root_dev = _device(on_host(host_root, root_dir))
    fs.layout_known = image_dev != -1 and root_dev != -1
    fs.dedicated_imagefs = fs.layout_known and image_dev != root_dev
    if containers and containers[0] not in ("", fs.imagefs):
        fs.containerfs = containers[0]
        fs.split = fs.dedicated_imagefs
    return fs


def disk_observations(family: str, st: Any, path: str) -> tuple[dict[str, Any], dict[str, str]]:
    """The `<family>.available` and `<family>.inodesFree` observations (signal →
    `Observation`) of one filesystem's `FsStats` `st`, statvfs'd at the host path `path`:
    available = bavail, inodes free = files free, each against its capacity; and the signals
    that cannot be observed (signal → why: a filesystem reporting no inodes)."""
    from kubegc_cli.policy.eviction.thresholds import Observation

    obs: dict[str, Any] = {
        f"{family}.available": Observation(
            f"{family}.available", st.available, st.capacity, f"statvfs {path} (bavail)"
        )
    }
    if st.inodes > 0:
        obs[f"{family}.inodesFree"] = Observation(
            f"{family}.inodesFree", st.inodes_free, st.inodes, f"statvfs {path} (files)"
        )
        return obs, {}
    return obs, {f"{family}.inodesFree": f"statvfs {path} reports no inodes"}


def containerfs_copies(obs: Mapping[str, Any], fs: FsLayout) -> dict[str, Any]:
    """The `containerfs.*` observations when writable layers share a filesystem with nodefs
    or imagefs (not split): copies of the imagefs ones with a dedicated imagefs, else of the
    nodefs ones (signal → `Observation`; absent when the base was not observed)."""
    base = "imagefs" if fs.dedicated_imagefs else "nodefs"
    out: dict[str, Any] = {}
    for kind in ("available", "inodesFree"):
        o = obs.get(f"{base}.{kind}")
        if o is not None:
            out[f"containerfs.{kind}"] = replace(o, signal=f"containerfs.{kind}")
    return out


def evict_check(
    s: Settings, ui: Ui, flags: Any, *, root_dir: str, allocatable: int | None, top: int
) -> EvictionReport:
    """`kubegc evict check`: every threshold in force against the signals observed now, and,
    with a pod source, the pods the kubelet would evict first for each met signal.

    `flags` is a `RawEviction` of kubegc's own --eviction-* flags; `root_dir` the kubelet root
    (host path); `allocatable` (bytes) replaces the kubepods cgroup limit; `top` limits each
    ranking (0 = all). Raises `BadInput` for bad thresholds or files; unreadable signals are
    reported in the result (exit 3 when nothing is met)."""
    from kubegc_cli.policy.eviction.thresholds import evaluate

    config = eviction_config(s, ui, flags)
    # A named pod source is read up front: a bad one is exit 2 whether or not anything is met.
    pods = _load_pods(s, ui) if explicit_pod_source(s) else None
    obs, unread, fs = observe_signals(s, ui, config, root_dir=root_dir, allocatable=allocatable)
    results = evaluate(config, obs, dedicated_imagefs=fs.dedicated_imagefs, split=fs.split)
    report = EvictionReport(config, results, obs, unread, fs, time.time_ns())
    report.notes.extend(config.notes)
    if (not fs.imagefs or not fs.layout_known) and any(
        f in DISK_FAMILIES for f in _families(config)
    ):
        report.notes.append(
            "the disk layout is unknown (the image filesystem or the kubelet root dir cannot "
            "be read): containerfs and the reclaim column assume one filesystem"
        )
    why_signals: dict[str, list[str]] = {}
    for r in results:
        sig = r.threshold.signal
        if r.observation is None and sig in unread and sig not in why_signals.get(unread[sig], []):
            why_signals.setdefault(unread[sig], []).append(sig)
    for why, sigs in why_signals.items():
        report.notes.append(f"{', '.join(sigs)} not observed: {why}")
    if report.met():
        rank_met(s, ui, report, root_dir=root_dir, top=top, pods=pods)
    return report


def rank_met(
    s: Settings,
    ui: Ui,
    report: EvictionReport,
    *,
    root_dir: str,
    top: int,
    pods: PodInventory | None = None,
) -> None:
    """Fill `report.ranking` for each met signal (needs a pod source; a note otherwise).
    `pods` is the pod source already read, if any."""
    from kubegc_cli.node.pods.api import node_name
    from kubegc_cli.policy.eviction.ranking import (
        PodResources,
        PodStats,
        pod_resources,
        rank_disk,
        rank_memory,
        rank_pid,
    )

    if pods is None:
        pods = _load_pods(s, ui)
    if not pods.known:
        report.notes.append(
            "no pod source (--pods-file or the API): pods are not ranked for eviction"
        )
        return
    node = node_name(s.node_name)
    active: list[PodResources] = []
    elsewhere: set[str] = set()
    for uid, info in sorted(pods.pods.items()):
        raw = info.raw or {}
        spec: Mapping[str, Any] = (
            raw.get("spec") or {} if isinstance(raw.get("spec"), Mapping) else {}
        )
        if spec.get("nodeName") not in (None, "", node):
            elsewhere.add(str(spec.get("nodeName")))
            continue
        if pods.is_terminated(uid):
            continue
        try:
            active.append(pod_resources(raw))
        except BadInput as exc:
            report.notes.append(f"pod {info.namespace}/{info.name} not ranked: {exc}")
    if elsewhere:
        shown = ", ".join(sorted(elsewhere)[:3]) + (", ..." if len(elsewhere) > 3 else "")
        report.notes.append(
            f"pods of the pod source bound to {shown} are not ranked: this node is {node} "
            "(--node-name)"
        )
    signals = sorted({r.threshold.signal for r in report.met()}, key=_signal_order)
    needs_disk = any(sig.split(".", 1)[0] in DISK_FAMILIES for sig in signals)
    stats = _pod_stats(s, ui, report, root_dir, [p.uid for p in active], disk=needs_disk, pods=pods)
    for sig in signals:
        family = sig.split(".", 1)[0]
        entries = [(p, stats.get((family, p.uid), PodStats())) for p in active]
        if family in MEMORY_FAMILIES:
            ranked = rank_memory(entries)
        elif family == "pid":
            ranked = rank_pid(entries)
        else:
            ranked = rank_disk(entries, inodes=sig.endswith("inodesFree"))
        rows = [_ranked_row(r, sig) for r in ranked]
        report.ranking[sig] = rows[:top] if top > 0 else rows


MEMORY_FAMILIES = ("memory", "allocatableMemory")


def _signal_order(signal: str) -> tuple[int, str]:
    return (0 if signal.split(".", 1)[0] in MEMORY_FAMILIES else 1, signal)


def _ranked_row(r: Any, signal: str) -> dict[str, Any]:
    """One ranked pod as a JSON-ready row with display texts."""
    from kubegc_cli.core.units import format_bytes

    pod, st = r.pod, r.stats
    family = signal.split(".", 1)[0]
    if family in MEMORY_FAMILIES:
        usage, request, unit = st.working_set, pod.memory_request, "bytes"
    elif family == "pid":
        usage, request, unit = st.processes, None, "processes"
    elif signal.endswith("inodesFree"):
        usage, request, unit = st.inodes, pod.ephemeral_request, "inodes"
    else:
        usage, request, unit = st.disk_usage, pod.ephemeral_request, "bytes"

    def text(n: int | None, as_bytes: bool) -> str:
        if n is None:
            return "-"
        return format_bytes(n) if as_bytes else str(n)

    note = r.skipped_reason or ("" if usage is not None else "no stats: the kubelet ranks it first")
    return {
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
        "priority": pod.priority,
        "owner": f"{pod.owner_kind}/{pod.owner_name}" if pod.owner_kind else "",
        "usage": usage,
        "request": request,
        "unit": unit,
        "exceeds": r.exceeds,
        "excess": r.excess,
        "skipped": bool(r.skipped_reason),
        "note": note,
        "usage_text": text(usage, unit == "bytes"),
        "request_text": "-" if request is None else text(request, unit == "bytes"),
    }


def _pod_stats(
    s: Settings,
    ui: Ui,
    report: EvictionReport,
    root_dir: str,
    uids: list[str],
    *,
    disk: bool,
    pods: PodInventory,
) -> dict[tuple[str, str], Any]:
    """(signal family, pod UID) → `PodStats`: working set and processes from the pod cgroups
    (a pod whose cgroup cannot be read has none, and a note names it); with `disk`, disk
    usage and inodes per the filesystem layout (kubelet eviction: logs and local volumes on
    nodefs, writable layers on the filesystem that holds them). `pods` names the pods."""
    from kubegc_cli.policy.eviction.ranking import PodStats

    out: dict[tuple[str, str], Any] = {}
    try:
        layout = detect_layout(s.host_root)
    except RuntimeUnavailable as exc:
        report.notes.append(f"pod cgroups unreadable, pods ranked without memory stats: {exc}")
        scan = PodCgroupScan()
    else:
        scan = read_pod_cgroups(s.host_root, layout) if layout.pods_cgroup else PodCgroupScan()
    cgroups = {c.uid: c for c in scan.pods}
    # A pod whose cgroup cannot be read is missing from the stats, as from the kubelet's
    # summary: that pod alone ranks first ("no stats") for memory and PIDs.
    ranked = set(uids)
    names = {uid: (p.namespace, p.name) for uid, p in pods.pods.items()}
    unreadable = [u for u in scan.unreadable if u.uid in ranked]
    report.notes.extend(pod_cgroup_notes(PodCgroupScan(unreadable=unreadable), names))
    if scan.unlisted:
        report.notes.append(
            f"pod cgroups not listed, pods ranked without memory stats: {scan.unlisted[0]}"
        )
    for uid in uids:
        c = cgroups.get(uid)
        mem = PodStats(working_set=c.memory.working_set) if c else PodStats()
        for fam in MEMORY_FAMILIES:
            out[(fam, uid)] = mem
        out[("pid", uid)] = PodStats(processes=c.processes) if c else PodStats()
    if not disk:
        return out
    local = _local_disk_usage(s, ui, root_dir, set(uids))
    layers, why = _writable_layers(s, ui, set(uids))
    if why:
        report.notes.append(f"writable layers not counted in disk ranking: {why}")
    fs = report.fs
    for uid in uids:
        lb, li = local.get(uid, (0, 0))
        wb, wi = layers.get(uid, (0, 0))
        if not fs.dedicated_imagefs:
            every = PodStats(disk_usage=lb + wb, inodes=li + wi)
            per = {"nodefs": every, "imagefs": every, "containerfs": every}
        elif not fs.split:
            rootfs = PodStats(disk_usage=wb, inodes=wi)
            per = {"nodefs": PodStats(disk_usage=lb, inodes=li), "imagefs": rootfs,
                   "containerfs": rootfs}  # fmt: skip
        else:
            both = PodStats(disk_usage=lb + wb, inodes=li + wi)
            per = {"nodefs": both, "containerfs": both, "imagefs": PodStats(disk_usage=0, inodes=0)}
        for fam, st in per.items():
            out[(fam, uid)] = st
    return out


LOCAL_VOLUME_PLUGINS = (
    "kubernetes.io~empty-dir",
    "kubernetes.io~configmap",
    "kubernetes.io~git-repo",
)


def _local_disk_usage(
    s: Settings, ui: Ui, root_dir: str, uids: set[str]
) -> dict[str, tuple[int, int]]:
    """Pod UID → (bytes, inodes) of its container logs (`podLogsDir`) and local ephemeral
    volumes (emptyDir on disk, configMap, gitRepo under the kubelet root); mounted volumes
    (memory-backed emptyDir) are not entered."""
    from kubegc_cli.node.host.bounded import listdir
    from kubegc_cli.node.host.du import tree_usage
    from kubegc_cli.node.host.kubelet import load_kubelet_config
    from kubegc_cli.node.host.logs import on_host
    from kubegc_cli.node.host.mounts import MountTable
    from kubegc_cli.node.host.podlogs import pod_uid_from_dir

    mounts = MountTable.read()
    usage: dict[str, list[int]] = {u: [0, 0] for u in uids}
    logs_root = on_host(
        s.host_root, load_kubelet_config(s.kubelet_config, s.host_root).pod_logs_dir
    )
    try:
        entries = listdir(logs_root)  # (bounded: a hung mount never stops the check)
    except OSError:
        entries = []
    for e in entries:
        uid = pod_uid_from_dir(e.name)
        if uid in usage and e.is_dir(follow_symlinks=False):
            t = tree_usage(e.path, mounts)
            usage[uid][0] += t.bytes
            usage[uid][1] += t.inodes
    for uid in uids:
        volumes = on_host(s.host_root, f"{root_dir}/pods/{uid}/volumes")
        for plugin in LOCAL_VOLUME_PLUGINS:
            try:
                vols = listdir(os.path.join(volumes, plugin))
            except OSError:
                continue
            for v in vols:
                if v.is_dir(follow_symlinks=False):
                    t = tree_usage(v.path, mounts)
                    usage[uid][0] += t.bytes
                    usage[uid][1] += t.inodes
    return {u: (b, i) for u, (b, i) in usage.items()}


def _writable_layers(s: Settings, ui: Ui, uids: set[str]) -> tuple[dict[str, tuple[int, int]], str]:
    """Pod UID → (bytes, inodes) of its containers' writable layers (CRI ContainerStats), and
    why they could not be read ("" when they were)."""
    from kubegc_cli.commands.session import open_client

    out: dict[str, list[int]] = {}
    try:
        client = open_client(s, ui)
        try:
            owner = {c.id: c.pod_uid for c in client.list_containers()}
            layers = client.writable_layers()
        finally:
            client.close()
    except (RuntimeUnavailable, BadInput) as exc:
        return {}, str(exc)
    for cid, (b, i) in layers.items():
        uid = owner.get(cid, "")
        if uid in uids:
            acc = out.setdefault(uid, [0, 0])
            acc[0] += b or 0
            acc[1] += i or 0
    return {u: (b, i) for u, (b, i) in out.items()}, ""
