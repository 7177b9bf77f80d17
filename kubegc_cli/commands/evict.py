"""`kubegc evict check` and `kubegc evict prune`: the kubelet's node-pressure eviction.

`evict check` observes only: the thresholds in force (kubegc's flags, the running kubelet's
command line, its config file, its defaults) against the signals read now (`node.signals`:
cgroups, /proc, statvfs; the image filesystem from `node.imagefs`), and, with a pod source,
the pods the kubelet would evict first (`policy.eviction.ranking`).

`evict prune` deletes the Evicted pod shells left in the API after node-pressure eviction.
When the kubelet evicts a pod it sets `status.phase` Failed and `status.reason` Evicted; the
pod object stays in the API (a ReplicaSet just creates a replacement) until the controller
manager's PodGC reaches `--terminated-pod-gc-threshold` (12500 by default), so on a node that
was under pressure `kubectl get pods` fills up with Evicted shells. It follows the flow of
every kubegc command (observe → plan → show → act → report):

- Observe: pods listed with the official `kubernetes` client, in pages (`limit`/`continue`),
  with `fieldSelector=status.phase=Failed` plus `spec.nodeName=<node>` (unless all nodes),
  namespaced when a namespace is given, with `labelSelector` when `-l` is given (validated
  here first, and matched here again). A list that cannot be read to the end raises
  `ApiUnavailable` (exit 3): nothing is deleted from a partial list (`node.pods.evicted`).
- Plan: only pods whose `status.phase` is Failed and `status.reason` is Evicted (checked
  again here, so a server that ignores the field selector changes nothing); with an age limit,
  pods evicted more recently (or at an unknown time) are kept, each with its reason
  (`policy.evicted`).
- Act: each pod is deleted with its planned `uid` and `resourceVersion` as preconditions, so
  the API server itself refuses a pod that changed since the plan (409 Conflict → skipped).
  That precondition is the re-check: it is atomic with the deletion, which a separate read
  before deleting would not be (`node.execute.pods`).

Deleting in the API is cluster-side; kubegc still runs it under its run lock in `--state-dir`
and writes the audit rows there, like every other acting command.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.commands.flow import (
    ActOptions,
    Stage,
    carry_out,
    connect_at,
    decide_mode,
    may_act,
    open_client,
)
from kubegc_cli.commands.memory import (
    besides_the_signals,
    explicit_pod_source,
    load_pods,
    node_from_api,
    pod_cgroup_notes,
    pod_label,
    runtime_cgroup_driver,
)
from kubegc_cli.core.errors import BadInput, ExitCode, RuntimeUnavailable, SignalUnavailable
from kubegc_cli.core.model import API_VERSION
from kubegc_cli.core.plan import Plan, PodAction
from kubegc_cli.core.pods import PodInventory
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.signals import Observation
from kubegc_cli.core.units import format_bytes, ns_to_rfc3339
from kubegc_cli.node.execute.pods import PodDeleter
from kubegc_cli.node.host.bounded import stat_of
from kubegc_cli.node.host.cgroups import PodCgroupScan, detect_layout, read_pod_cgroups
from kubegc_cli.node.host.kubelet import (
    kubelet_config_for,
    load_kubelet_files,
    merge_patch,
    root_dir_hint,
)
from kubegc_cli.node.host.logs import on_host
from kubegc_cli.node.host.processes import find_kubelet_cmdline
from kubegc_cli.node.host.stall import Stall, Swap, cgroup_swap, swapping
from kubegc_cli.node.imagefs import FsLayout, runtime_filesystems
from kubegc_cli.node.kubeletapi import kubelet_configz
from kubegc_cli.node.pods.api import (
    ApiSource,
    find_credentials,
    node_name,
    open_api,
)
from kubegc_cli.node.pods.evicted import close_api, list_failed
from kubegc_cli.node.signals import (
    DISK_FAMILIES,
    families,
    local_disk_usage,
    observe_signals,
    writable_layers_by_pod,
)
from kubegc_cli.policy.evicted import PruneOptions, plan_evicted
from kubegc_cli.policy.eviction.ranking import (
    PodResources,
    PodStats,
    Ranked,
    pod_resources,
    rank_disk,
    rank_memory,
    rank_pid,
)
from kubegc_cli.policy.eviction.thresholds import (
    NEWEST_KUBELET,
    EvictionConfig,
    KubeletVersion,
    RawEviction,
    ThresholdResult,
    disabled_why,
    evaluate,
    kubelet_base_for_dropins,
    parse_kubelet_version,
    pointless,
    raw_from_kubelet_cmdline,
    raw_from_kubelet_config,
    resolve,
)


def kubelet_root(root_dir: str) -> str:
    """Validate `--root-dir` (the kubelet's root directory, a host path)."""
    if not root_dir.startswith("/"):
        raise BadInput(f"--root-dir {root_dir!r} must be an absolute path")
    return os.path.normpath(root_dir)


@dataclass(slots=True)
class EvictionReport:
    """`kubegc evict check`: the thresholds in force (`config`), one result per threshold,
    the observations (bytes, inodes, PIDs), signals that could not be read (`unread`: signal →
    why), the pods the kubelet would evict first per met signal (`ranking`: signal → rows;
    a memory signal's rows carry each pod's `swap`, bytes, None where not accounted), notes,
    and the capture time (ns since the epoch)."""

    config: EvictionConfig
    results: list[ThresholdResult]
    observations: dict[str, Observation]
    unread: dict[str, str]
    fs: FsLayout
    captured_at: int
    ranking: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # beside the memory signals (`commands.memory.besides_the_signals`): never a signal
    swap: Swap | None = None
    stalls: list[Stall] = field(default_factory=list)

    def swap_shown(self, signal: str) -> bool:
        """Whether the ranking for `signal` shows each pod's swap: a memory signal on a node
        with swap (SwapTotal > 0), where the pods' swapped-out bytes, which no memory signal
        counts, sit beside their working sets (as `memory available` shows them)."""
        return swapping(self.swap) and signal.split(".", 1)[0] in MEMORY_FAMILIES

    def met(self) -> list[Any]:
        return [r for r in self.results if r.met]

    def unread_thresholds(self) -> list[Any]:
        return [
            r for r in self.results if r.observation is None and r.threshold.signal in self.unread
        ]

    def exit_code(self) -> int:
        """0 no threshold met; 5 (`ExitCode.THRESHOLD_MET`) at least one met; 3 none met but
        a threshold's signal could not be read (the answer is unknown)."""
        if self.met():
            return ExitCode.THRESHOLD_MET
        return ExitCode.UNAVAILABLE if self.unread_thresholds() else ExitCode.OK

    def provenance(self) -> list[str]:
        """Where each threshold (and each disabled one) came from, one line each; first the
        kubelet version whose defaults apply and where it came from."""
        lines = [
            f"kubelet version {self.config.kubelet_version}: source: "
            f"{self.config.kubelet_version_source}"
        ] if self.config.kubelet_version else []  # fmt: skip
        lines += [f"{r.threshold.expression}: source: {r.threshold.source}" for r in self.results]
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
            "swap": None if self.swap is None else self.swap.to_dict(),
            "pressure_stall": [st.to_dict() for st in self.stalls],
            "notes": list(self.notes),
            "kubelet_version": {
                "version": self.config.kubelet_version,
                "source": self.config.kubelet_version_source,
            },
            "exit_code": self.exit_code(),
        }


def kubelet_version(
    s: Settings, ui: Ui, pods: PodInventory | None = None
) -> tuple[KubeletVersion, str]:
    """The kubelet version whose defaults apply, and where it came from: `--kubelet-version`
    (bad text is `BadInput`), else the Node's `status.nodeInfo.kubeletVersion` from `pods` (a
    pods file holding the Node, or the API as the pod source: the Node is read from it),
    else the newest kubegc knows. The running binary is never executed to ask it (`kubelet
    --version` would run whatever file sits at that path, as root): without the flag or the
    Node, the newest rules apply and the source says so."""
    if s.kubelet_version:
        version = parse_kubelet_version(s.kubelet_version, where="--kubelet-version")
        return version, "--kubelet-version"
    if pods is not None:
        name = node_name(s.node_name)
        node = pods.nodes.get(name)
        if node is None and len(pods.nodes) == 1 and not s.node_name:
            name, node = next(iter(pods.nodes.items()))
        where = pods.source
        if node is None:
            node = node_from_api(s, pods, name, ui, lambda why: f"kubelet version from the "
                                 f"Node: {why}")  # fmt: skip
        info = node.get("status", {}).get("nodeInfo", {}) if isinstance(node, dict) else {}
        text = info.get("kubeletVersion") if isinstance(info, dict) else None
        if isinstance(text, str) and text:
            field_name = f"Node {name} status.nodeInfo.kubeletVersion {text} ({where})"
            try:
                return parse_kubelet_version(text, where=field_name), field_name
            except BadInput as exc:
                ui.info(str(exc))
    newest = f"{NEWEST_KUBELET[0]}.{NEWEST_KUBELET[1]}"
    return NEWEST_KUBELET, f"the newest kubelet kubegc knows ({newest}; --kubelet-version sets it)"


def eviction_config(
    s: Settings, ui: Ui, flags: RawEviction, *, pods: PodInventory | None
) -> EvictionConfig:
    """The eviction settings in force: kubegc's flags (`flags`, a `RawEviction`), else the
    running kubelet's command line (from /proc, only when --host-root is /), else its
    configuration files (`node.host.kubelet.load_kubelet_files`: `--kubelet-config` or the
    running kubelet's `--config` or the default path, with the drop-ins of
    `--kubelet-config-dir` or the running kubelet's `--config-dir` merged onto it as the
    kubelet merges them), else the kubelet's defaults. Each threshold names the file that set
    it. The defaults follow the kubelet version `kubelet_version` finds (`pods`: the pod
    source, for the Node's version; every command showing eviction settings passes the one it
    read, None only when it reads none). When the kubelet's `/configz` is asked (`--kubelet-url`,
    or `--kubelet-configz` through the node proxy: `node.kubeletapi.kubelet_configz`, the
    source `kubelet_config_for` also prefers) and answers, that effective configuration
    replaces the command line and the files; refused, a warning says why and they are read.
    Raises `BadInput` for bad values or files."""
    version, version_source = kubelet_version(s, ui, pods)
    ui.info(f"kubelet version {version[0]}.{version[1]}: {version_source}")
    configz = kubelet_configz(s)
    if configz is not None and configz.fallback:
        ui.warn(f"{configz.fallback}; reading the kubelet's command line and config file instead")
    if configz is not None and configz.doc is not None:
        ui.info(f"kubelet config: {configz.label}")
        raw = raw_from_kubelet_config(configz.doc, configz.source)
        raw.defaults_applied = True  # /configz holds the maps as the kubelet filled them in
        config = resolve([flags, raw], version=version)
        config.kubelet_version = f"{version[0]}.{version[1]}"
        config.kubelet_version_source = version_source
        return config
    layers = [flags]
    found = find_kubelet_cmdline(s.host_root)
    if found is not None:
        pid, argv = found
        raw, _ = raw_from_kubelet_cmdline(argv, f"kubelet command line (pid {pid})")
        layers.append(raw)
        ui.info(f"running kubelet found: pid {pid}")
    files = load_kubelet_files(s.kubelet_config, s.host_root, s.kubelet_config_dir, running=found)
    notes: list[str] = []
    if files.base is not None or files.dropins:
        base_source = str(files.base) if files.base is not None else "kubelet defaults"
        raw = raw_from_kubelet_config(files.base_doc, base_source)
        if files.dropins:
            doc, provenance = kubelet_base_for_dropins(
                files.base_doc, merge_defaults=bool(raw.merge_defaults), version=version
            )
            for path, dropin in files.dropins:
                merge_patch(doc, dropin, str(path), provenance)
                if dropin.get("mergeDefaultEvictionSettings") is not None:
                    notes.append(
                        f"mergeDefaultEvictionSettings in {path} has no effect: the kubelet "
                        "reads it from the base config file only"
                    )
            merge = raw.merge_defaults
            raw = raw_from_kubelet_config(doc, base_source, provenance=provenance)
            raw.merge_defaults, raw.defaults_applied = merge, True
        layers.append(raw)
        if files.base is not None:
            ui.info(f"kubelet config: {files.base}")
        for path, _ in files.dropins:
            ui.info(f"kubelet config drop-in: {path}")
    config = resolve(layers, version=version)
    config.notes.extend(notes)
    config.kubelet_version = f"{version[0]}.{version[1]}"
    config.kubelet_version_source = version_source
    return config


#: `evict check`'s options that set the eviction maps: option name → (the map in
#: `EvictionConfig.maps`, how the option writes one entry: `signal<value`, `signal=value`).
EVICTION_OPTIONS = {
    "eviction_hard": ("hard", "<"),
    "eviction_soft": ("soft", "<"),
    "eviction_soft_grace_period": ("grace", "="),
    "eviction_minimum_reclaim": ("min_reclaim", "="),
}


def kubelet_eviction_settings(s: Settings, ui: Ui) -> dict[str, list[tuple[str, str]]]:
    """The eviction maps in force where kubegc's own --eviction-* flags set none, by `evict
    check` option name (`EVICTION_OPTIONS`): each entry as the option writes it
    (`memory.available<500Mi`, `memory.available=1m30s`) with the source that set that one
    key — a file and its key, a drop-in, the running kubelet's flag, `/configz`, the kubelet's
    default — as `eviction_config` reads them (no pod source: the kubelet version from
    `--kubelet-version`, else the newest). What `config view evict check` shows. Raises
    `BadInput` as `eviction_config` does."""
    config = eviction_config(s, ui, RawEviction(), pods=None)
    return {
        option: [(f"{sig}{sep}{text}", source) for sig, text, source in config.maps[name]]
        for option, (name, sep) in EVICTION_OPTIONS.items()
    }


def _families(config: EvictionConfig) -> set[str]:
    return families(t.signal for t in config.thresholds)


def observe(
    s: Settings, ui: Ui, config: EvictionConfig, *, root_dir: str, allocatable: int | None
) -> tuple[dict[str, Observation], dict[str, str], FsLayout]:
    """Observe the signals `config`'s thresholds need (`node.signals.observe_signals`), the
    image filesystem located by `node.imagefs.runtime_filesystems`."""
    return observe_signals(
        s.host_root,
        {t.signal for t in config.thresholds},
        root_dir=root_dir,
        allocatable=allocatable,
        filesystems=lambda: _runtime_filesystems(s, ui),
    )


def _runtime_filesystems(s: Settings, ui: Ui) -> tuple[list[str], list[str]]:
    """The runtime's filesystem mountpoints (`node.imagefs.runtime_filesystems`), asking the
    runtime the edges name (`edges().cri`) when they name one."""
    cri = edges().cri
    if cri is None:
        return runtime_filesystems(s, ui.info, ui.warn, connect=lambda ep: connect_at(s, ep))
    return runtime_filesystems(s, ui.info, ui.warn, connect=lambda ep: cri(s, ui))


def _missing(path: str) -> bool:
    """True when nothing is at `path`; a stat that hangs (a stuck mount) or fails otherwise
    is no answer (False), and never waits past the walk timeout (`bounded`)."""
    try:
        stat_of(path, follow_symlinks=True)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return False


def evict_check(
    s: Settings,
    ui: Ui,
    flags: RawEviction,
    *,
    root_dir: str,
    allocatable: int | None,
    top: int,
) -> EvictionReport:
    """`kubegc evict check`: every threshold in force against the signals observed now, and,
    with a pod source, the pods the kubelet would evict first for each met signal.

    `flags` is a `RawEviction` of kubegc's own --eviction-* flags; `root_dir` the kubelet root
    (host path); `allocatable` (bytes) replaces the kubepods cgroup limit; `top` limits each
    ranking (0 = all). Raises `BadInput` for bad thresholds or files; unreadable signals are
    reported in the result (exit 3 when nothing is met)."""
    # A named pod source is read up front: a bad one is exit 2 whether or not anything is met.
    pods = load_pods(s, ui) if explicit_pod_source(s) else None
    config = eviction_config(s, ui, flags, pods=pods)
    obs, unread, fs = observe(s, ui, config, root_dir=root_dir, allocatable=allocatable)
    results = evaluate(config, obs, dedicated_imagefs=fs.dedicated_imagefs, split=fs.split)
    report = EvictionReport(config, results, obs, unread, fs, edges().clock())
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
    if why_signals and _missing(on_host(s.host_root, root_dir)):
        report.notes.append(f"the kubelet root {root_dir} is not there{root_dir_hint(s.host_root)}")
    for r in results:
        why = pointless(r)
        if why:
            report.notes.append(
                f"{r.threshold.expression} {why}; source: {r.threshold.source or 'default'}"
            )
    for signal, text, source in config.disabled:
        report.notes.append(f"{disabled_why(signal, text)}; source: {source}")
    if any(f in MEMORY_FAMILIES for f in _families(config)):
        try:
            report.swap, report.stalls, beside = besides_the_signals(
                s.host_root, detect_layout(s.host_root)
            )
            report.notes.extend(beside)
        except SignalUnavailable as exc:
            report.notes.append(f"swap and pressure stall not read: {exc}")
    soft_met = [r.threshold.expression for r in results if r.met and not r.threshold.hard]
    if soft_met:
        report.notes.append(
            f"{', '.join(soft_met)} met on this one observation: the kubelet (and kubegc "
            "agent) counts a soft threshold as met only after its grace period, and holds a "
            "met threshold until its minimum reclaim is done"
        )
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
    if pods is None:
        pods = load_pods(s, ui)
    if not pods.known:
        report.notes.append(
            "no pod source (--pods-file or the API): pods are not ranked for eviction"
        )
        return
    node = node_name(s.node_name)
    version = (
        parse_kubelet_version(report.config.kubelet_version, where="kubelet version")
        if report.config.kubelet_version
        else None
    )
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
            active.append(pod_resources(raw, version=version))
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
    needs_swap = any(sig.split(".", 1)[0] in MEMORY_FAMILIES for sig in signals)
    stats, swaps = _pod_stats(s, ui, report, root_dir, [p.uid for p in active], disk=needs_disk,
                              swap=needs_swap, pods=pods)  # fmt: skip
    for sig in signals:
        family = sig.split(".", 1)[0]
        entries = [(p, stats.get((family, p.uid), PodStats())) for p in active]
        if family in MEMORY_FAMILIES:
            ranked = rank_memory(entries)
        elif family == "pid":
            ranked = rank_pid(entries)
        else:
            ranked = rank_disk(entries, inodes=sig.endswith("inodesFree"))
        rows = [_ranked_row(r, sig, swaps.get(r.pod.uid)) for r in ranked]
        report.ranking[sig] = rows[:top] if top > 0 else rows


MEMORY_FAMILIES = ("memory", "allocatableMemory")


def _signal_order(signal: str) -> tuple[int, str]:
    return (0 if signal.split(".", 1)[0] in MEMORY_FAMILIES else 1, signal)


def _ranked_row(r: Ranked, signal: str, swap: int | None = None) -> dict[str, Any]:
    """One ranked pod as a JSON-ready row with display texts. `swap` is the bytes the pod's
    cgroup has swapped out (`node.host.stall.cgroup_swap`), shown for the memory signals
    only: None where swap is not accounted, and for every other signal."""
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
    if pod.resize and family != "pid":  # requests rank memory and disk, not PIDs
        note = f"{note}; {pod.resize}" if note else pod.resize
    return {
        "namespace": pod.namespace,
        "name": pod.name,
        "uid": pod.uid,
        "priority": pod.priority,
        "qos": pod.qos,
        "owner": f"{pod.owner_kind}/{pod.owner_name}" if pod.owner_kind else "",
        "usage": usage,
        "request": request,
        "unit": unit,
        "exceeds": r.exceeds,
        "excess": r.excess,
        "skipped": bool(r.skipped_reason),
        "resize": pod.resize,
        "note": note,
        "swap": swap if family in MEMORY_FAMILIES else None,
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
    swap: bool,
    pods: PodInventory,
) -> tuple[dict[tuple[str, str], PodStats], dict[str, int | None]]:
    """(signal family, pod UID) → `PodStats`: working set and processes from the pod cgroups
    (a pod whose cgroup cannot be read has none, and a note names it); with `disk`, disk
    usage and inodes per the filesystem layout (kubelet eviction: logs and local volumes on
    nodefs, writable layers on the filesystem that holds them). `pods` names the pods.
    With `swap`, also pod UID → bytes its cgroup has swapped out, as `memory available`
    reads it (`node.host.stall.cgroup_swap`; None where swap is not accounted, or where the
    file cannot be read: a note names it) — shown beside the ranking, never ranked on."""
    out: dict[tuple[str, str], PodStats] = {}
    swaps: dict[str, int | None] = {}
    try:
        layout = runtime_cgroup_driver(s, ui, detect_layout(s.host_root))
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
        if swap and c is not None:
            try:
                swaps[uid] = cgroup_swap(s.host_root, layout, c.path)
            except SignalUnavailable as exc:
                report.notes.append(f"swap of pod {pod_label(uid, names)} not read: {exc}")
    if not disk:
        return out, swaps
    logs_dir = kubelet_config_for(s).pod_logs_dir
    local = local_disk_usage(s.host_root, logs_dir, root_dir, set(uids))
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
    return out, swaps


def _writable_layers(s: Settings, ui: Ui, uids: set[str]) -> tuple[dict[str, tuple[int, int]], str]:
    """Pod UID → (bytes, inodes) of its containers' writable layers (CRI ContainerStats), and
    why they could not be read ("" when they were)."""
    try:
        client = open_client(s, ui)
        try:
            return writable_layers_by_pod(client, uids), ""
        finally:
            client.close()
    except (RuntimeUnavailable, BadInput) as exc:
        return {}, str(exc)


# --- evict prune -------------------------------------------------------------------------------

PLAN_KIND = "EvictedPodPlan"
COMMAND = "evict prune"


def _list_failed(api: Any, host: str, opts: PruneOptions, timeout: float) -> list[Any]:
    """The raw Failed pods (`fieldSelector` as `opts` says), every page. `ApiUnavailable`."""
    return list_failed(
        api,
        host,
        timeout,
        field_selector=opts.field_selector(),
        label_selector=None if opts.selector is None else str(opts.selector),
        namespace=opts.namespace,
        what=f"listing Failed pods of {opts.describe()}",
    )


def list_evicted(
    src: ApiSource, opts: PruneOptions, timeout: float, *, now: int | None = None
) -> tuple[list[PodAction], list[PodAction]]:
    """The Evicted pods `opts` selects, as (planned deletions, kept), each sorted by
    (namespace, name). `timeout` is seconds per request; `now` ns since the epoch (default:
    the edges' clock) is what `opts.older_than` is measured from; `opts.node` (not `src.node`) picks
    the node.

    Raises `ApiUnavailable` when the list cannot be read to the end, `BadInput` for unusable
    credentials or options.
    """
    opts.validate()
    api, host = open_api(src)
    try:
        items = _list_failed(api, host, opts, timeout)
    finally:
        close_api(api)
    planned, kept, _ = plan_evicted(items, opts, edges().clock() if now is None else now)
    return planned, kept


def prune_evicted(s: Settings, opts: PruneOptions, act: ActOptions, ui: Ui) -> Plan[PodAction]:
    """`kubegc evict prune`: plan the deletion of Evicted pod shells, then (if allowed) delete.

    Uses `s.kubeconfig`, `s.context` and `s.env` (credentials as kubectl finds them),
    `s.timeout` (seconds per API request), `s.now` (ns; default the edges' clock) for ages,
    `s.state_dir` (run lock and audit rows), and `act` (`dry_run`, `yes`, `concurrency`).

    Raises `BadInput` (exit 2) with `--snapshot`, for bad options, or when no credentials are
    found or they are unusable; `ApiUnavailable` (exit 3) when the pod list cannot be read to
    the end — nothing is deleted in either case; `Busy` (exit 4) when another run holds the
    lock. Returns the plan (kind `EvictedPodPlan`) with results filled in: a pod the API
    refused to delete is `failed`, which the caller turns into `PartialFailure` (exit 1).
    """
    if s.snapshot is not None:
        raise BadInput("evict prune reads pods from the Kubernetes API; --snapshot holds none")
    opts.validate()
    creds = find_credentials(s.kubeconfig, s.env)
    if creds is None:
        raise BadInput(
            "evict prune needs the Kubernetes API: give --kubeconfig, set KUBECONFIG, "
            "create ~/.kube/config, or run in a pod with a service account"
        )
    mode = decide_mode(s, act, ui, node_wide=False)  # it changes the API, not this node
    api, host = open_api(ApiSource(creds, s.context, opts.node))
    try:
        now = s.now if s.now is not None else edges().clock()
        ui.info(f"Kubernetes API {host} ({creds}): Failed pods of {opts.describe()}")
        items = _list_failed(api, host, opts, s.timeout)
        planned, kept, others = plan_evicted(items, opts, now)
        labels = f" and labelSelector {opts.selector}" if opts.selector is not None else ""
        notes = [
            f"{len(items)} pod(s) listed with fieldSelector {opts.field_selector()}{labels}; "
            f"{len(planned) + len(kept)} evicted"
        ]
        if others:
            notes.append(f"{others} Failed pod(s) not evicted are left alone")
        notes.append(
            "each pod is deleted only if its uid and resourceVersion still match this plan"
        )
        plan: Plan[PodAction] = Plan(
            kind=PLAN_KIND,
            policy=opts.to_dict(),
            now=now,
            actions=planned,
            kept=kept,
            notes=notes,
            source=f"api:{host} {opts.describe()}",
        )

        def again() -> Plan[PodAction]:
            """The evicted pods listed anew once a person said yes: a pod deleted, no longer
            evicted, or changed (another uid or resourceVersion) since is not deleted."""
            asked = {a.id: (a.uid, a.resource_version) for a in planned}
            fresh, still_kept, _ = plan_evicted(_list_failed(api, host, opts, s.timeout), opts,
                                                now)  # fmt: skip
            same: list[PodAction] = []
            changed: list[PodAction] = []
            for a in fresh:
                version = (a.uid, a.resource_version)
                if asked.get(a.id, version) == version:
                    same.append(a)
                else:
                    a.reason = "changed since the question (another uid or resourceVersion)"
                    changed.append(a)
            return Plan(kind=PLAN_KIND, policy=plan.policy, now=now, actions=same,
                        kept=[*still_kept, *changed])  # fmt: skip

        if may_act(mode, plan, ui, "evicted pod", act, again=again, where="the API"):
            deleter = PodDeleter(api, concurrency=act.concurrency, host=host, timeout=s.timeout)
            carry_out(s, plan, [Stage(deleter, (PodAction.kind,))], COMMAND, ui)
        return plan
    finally:
        close_api(api)
