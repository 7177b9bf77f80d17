"""`kubegc memory available`: the node's memory signals exactly as the kubelet computes them.

Observe only: nothing here changes the node. Figures come from the cgroups and /proc under
`--host-root` (`node.host.cgroups`, `node.host.memory`); pod names and requests from the pod
source, else from the runtime's sandbox labels; node allocatable from `--allocatable`, the
Node object of the pod source or the API, else the kubepods cgroup's limit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.commands.flow import load_pod_inventory, open_client
from kubegc_cli.core.errors import BadInput, KubegcError, RuntimeUnavailable
from kubegc_cli.core.model import API_VERSION
from kubegc_cli.core.pods import NO_POD_SOURCE, PodInventory
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import format_bytes, ns_to_rfc3339, parse_bytes
from kubegc_cli.node.host.cgroups import (
    CgroupLayout,
    PodCgroup,
    PodCgroupScan,
    UnreadablePodCgroup,
    detect_layout,
    read_pod_cgroups,
    with_driver,
)
from kubegc_cli.node.host.memory import (
    AllocatableMemory,
    NodeMemory,
    allocatable_memory,
    node_memory,
    read_meminfo,
)
from kubegc_cli.node.host.stall import (
    CGROUP_V1_NOTE,
    Stall,
    Swap,
    cgroup_swap,
    node_swap,
    stall_note,
    stalls,
    swap_note,
)
from kubegc_cli.node.pods.api import ApiSource, find_credentials, node_name, read_node


@dataclass(frozen=True, slots=True)
class PodMemory:
    """One pod's memory from its cgroup (bytes): `working_set` = max(0, usage − inactive_file),
    as the kubelet ranks pods for memory eviction; `swap` what it has swapped out (None where
    swap is not accounted), which no memory signal counts. `namespace`/`name` are "" when
    unknown."""

    uid: str
    namespace: str
    name: str
    qos: str
    usage: int
    inactive_file: int
    active_file: int
    working_set: int
    swap: int | None = None

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
    swap: Swap | None = None
    stalls: list[Stall] = field(default_factory=list)

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
                "driver_source": self.layout.driver_source,
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
            "swap": None if self.swap is None else self.swap.to_dict(),
            "pressure_stall": [st.to_dict() for st in self.stalls],
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
    doc = node_from_api(s, pods, name, ui, lambda why: f"{why}; using the kubepods cgroup "
                        "limit as allocatable")  # fmt: skip
    if doc is not None:
        value = _node_allocatable(doc, "API")
        if value is not None:
            return value, f"Node {name} status.allocatable (API)"
    return None, ""


def node_from_api(
    s: Settings, pods: PodInventory, name: str, ui: Ui, said: Callable[[str], str]
) -> dict[str, Any] | None:
    """The Node `name` as the API serves it, when the API is the pod source (`pods`) and
    credentials are found; else None. One that cannot be read is None too, and `said(why)`
    is the `-v` line saying so."""
    if not pods.source.startswith("api:"):
        return None
    creds = find_credentials(s.kubeconfig, s.env)
    if creds is None:
        return None
    try:
        return read_node(ApiSource(creds, s.context, name), s.timeout)
    except RuntimeUnavailable as exc:
        ui.info(said(str(exc)))
        return None


def pod_names(
    s: Settings, ui: Ui, pods: PodInventory, uids: Iterable[str]
) -> dict[str, tuple[str, str]]:
    """Pod UID → (namespace, name): from the pod source, else from the runtime's sandbox
    labels (io.kubernetes.pod.*). An unreachable runtime only leaves names out (-v says why)."""
    names = {u: (p.namespace, p.name) for u, p in pods.pods.items()}
    missing = [u for u in uids if u not in names]
    if not missing:
        return names
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


def load_pods(s: Settings, ui: Ui) -> PodInventory:
    """The pod source; none when it cannot be read, unless the operator named one
    (`explicit_pod_source`: then its error is raised)."""
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
    layout = runtime_cgroup_driver(s, ui, detect_layout(host))
    node = node_memory(host, layout)
    pods = load_pods(s, ui)
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
        pods=[_pod_memory(c, names, swap=cgroup_swap(host, layout, c.path)) for c in shown],
        pod_count=len(scan.pods),
        layout=layout,
        captured_at=edges().clock(),
        without_stats=[_without_stats(u, names) for u in scan.unreadable],
    )
    report.notes.extend(memory_notes(node, alloc, alloc_source, layout))
    report.notes.extend(pod_cgroup_notes(scan, names))
    report.swap, report.stalls, beside = besides_the_signals(host, layout)
    report.notes.extend(beside)
    return report


def besides_the_signals(host: Path, layout: CgroupLayout) -> tuple[Swap, list[Stall], list[str]]:
    """What the memory signals leave out (`node.host.stall`): the node's and the pods' swap,
    the pressure stall figures, and the lines saying so — with, on cgroup v1, that kubelets
    from 1.35 refuse to start there. Raises `SignalUnavailable` naming a file that exists
    but cannot be read."""
    total, used = node_swap(read_meminfo(host))
    pods = cgroup_swap(host, layout, layout.pods_cgroup) if layout.pods_cgroup else None
    swap = Swap(total, used, pods)
    found = stalls(host, layout)
    notes = [n for n in (swap_note(swap), stall_note(found)) if n]
    if layout.version == 1:
        notes.append(CGROUP_V1_NOTE)
    return swap, found, notes


def runtime_cgroup_driver(s: Settings, ui: Ui, layout: CgroupLayout) -> CgroupLayout:
    """`layout` with the cgroup driver the runtime reports (`CriClient.runtime_config`, the
    kubelet's own source since KEP-4033) in place of the guess from the cgroup tree, where
    the runtime answers; unchanged otherwise (a runtime that does not implement the call, as
    containerd 1.x, or none reachable), with `driver_source` and `-v` saying why."""
    try:
        client = open_client(s, ui)
        try:
            ask = getattr(client, "runtime_config", None)
            driver = ask() if ask is not None else None
        finally:
            client.close()
    except (RuntimeUnavailable, BadInput) as exc:
        why = str(exc)
    else:
        if driver is not None:
            ui.info(f"cgroup driver {driver}: the runtime's RuntimeConfig")
            return with_driver(s.host_root, layout, driver, "the runtime (RuntimeConfig)")
        why = "the runtime does not answer RuntimeConfig"
    source = f"guessed from the cgroup tree ({why})"
    ui.info(f"cgroup driver {layout.driver or 'unknown'}: {source}")
    return replace(layout, driver_source=source)


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


def _pod_memory(
    c: PodCgroup, names: Mapping[str, tuple[str, str]], *, swap: int | None
) -> PodMemory:
    ns, name = names.get(c.uid, ("", ""))
    m = c.memory
    return PodMemory(
        c.uid, ns, name, c.qos, m.usage, m.inactive_file, m.active_file, m.working_set, swap
    )


def memory_notes(
    node: NodeMemory, alloc: AllocatableMemory | None, alloc_source: str, layout: CgroupLayout
) -> list[str]:
    """Human lines explaining the memory figures (the #43916 page-cache case among them)."""
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
