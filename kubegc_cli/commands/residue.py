"""`kubegc residue scan` and `kubegc residue clean`: observe the node, run every scanner,
turn the findings into one plan, and (clean) act on the safe ones. What the runtime says is
read by `kubegc_cli.node.residue_runtime`, the host by the scanners of `node.host.residue`.

Observation order matters for safety: the pod source is read first, then the runtime's lists,
then the host — so an object created meanwhile is at worst reported, and cleaning re-checks
every finding (the runtime asked again, the pod source read again) right before acting.

Runtime unreachable: `residue scan` still reports host residue, marks nothing safe whose
safety depends on the runtime (`ScanContext.runtime_known` False), and its plan carries the
error (`ResiduePlan.runtime_error`) so the command can exit 3 after printing. `residue clean`
raises `RuntimeUnavailable` (exit 3) before acting: nothing is removed.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.commands.flow import (
    ActOptions,
    Stage,
    carry_out,
    decide_mode,
    load_pod_inventory,
    may_act,
    open_client,
)
from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.model import (
    LABEL_POD_UID,
    ContainerState,
)
from kubegc_cli.core.plan import Plan, Result
from kubegc_cli.core.podlogs import LogRotation, pod_uid_from_dir
from kubegc_cli.core.pods import PodInventory, against_runtime
from kubegc_cli.core.residue import (
    CNI_IP,
    DEAD_CONTAINER,
    DEAD_SANDBOX,
    LOG_LINK,
    LOG_ROTATION_TYPES,
    NETNS,
    OVERSIZED_LIST,
    POD_CGROUP,
    POD_DIR,
    POD_LOG_DIR,
    SHIM,
    STALE_LOG_LINK,
    TYPES,
    UNUSED_IMAGE,
    Finding,
)
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import format_bytes
from kubegc_cli.node.diskusage import needed_dir
from kubegc_cli.node.host.cgroups import cgroup_mounts_visible
from kubegc_cli.node.host.kubelet import (
    CONTAINER_LOGS_DIR,
    kubelet_config_for,
    root_dir_hint,
    validate_pod_logs_dir,
)
from kubegc_cli.node.host.logrotation import log_owners, read_container_log_dirs
from kubegc_cli.node.host.logs import (
    LogRoots,
    host_path_of,
    pinned_on_host,
)
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.podlogs import linked_logs
from kubegc_cli.node.host.scan import ScanContext
from kubegc_cli.node.residue_runtime import RuntimeFacts, observe_runtime, with_runtime
from kubegc_cli.policy.logrotation import plan_log_rotation, stale_links
from kubegc_cli.policy.residue import dead_objects, oversized_lists, unused_images

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient

DEFAULT_ROOT_DIR = "/var/lib/kubelet"
DEFAULT_CNI_DIR = "/var/lib/cni"
PLAN_KIND = "ResiduePlan"

#: Host scanners (in `kubegc_cli.node.host.residue`) and the finding types each produces.
HOST_SCANNERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("scan_pod_dirs", (POD_DIR,)),
    ("scan_pod_log_dirs", (POD_LOG_DIR, LOG_LINK)),
    ("scan_netns", (NETNS,)),
    ("scan_cni", (CNI_IP,)),
    ("scan_pod_cgroups", (POD_CGROUP,)),
    ("scan_shims", (SHIM,)),
)
RUNTIME_TYPES = (DEAD_SANDBOX, DEAD_CONTAINER, OVERSIZED_LIST, UNUSED_IMAGE)
NETNS_UNKNOWN = "the runtime does not report the network namespaces of {n} sandbox(es) (verbose "
NETNS_UNKNOWN += "PodSandboxStatus), so a namespace in use cannot be told from a leaked one"


@dataclass(frozen=True, slots=True)
class ResidueOptions:
    """What to scan. `kinds`: finding types (empty = all of `TYPES`); `root_dir`: the
    kubelet's root directory (default `/var/lib/kubelet`); `pod_logs_dir`: the pod log root
    (default the kubelet config's `podLogsDir`); `cni_dir`: the CNI state root holding
    `networks/<net>/` (default `/var/lib/cni`). Paths are host paths (under `--host-root`)."""

    kinds: frozenset[str] = frozenset()
    root_dir: str | None = None
    pod_logs_dir: str | None = None
    cni_dir: str | None = None

    def selected(self) -> tuple[str, ...]:
        """The chosen types in report order. Raises `BadInput` naming an unknown one."""
        for k in sorted(self.kinds):
            if k not in TYPES:
                raise BadInput(f"unknown --kind {k!r} (one of: {', '.join(TYPES)})")
        return tuple(t for t in TYPES if not self.kinds or t in self.kinds)


@dataclass(slots=True)
class ResiduePlan(Plan[Any]):
    """The plan of `residue scan`/`clean`: `actions` are the safe findings (what cleaning acts
    on), `kept` the others (each with its `unsafe_reason`); both hold `Finding`s (typed `Any`:
    `Finding` exposes `rule` and `reason` read-only, the `Action` protocol declares them as
    plain attributes). `types` are the finding types scanned; `runtime_error` says why the
    runtime could not be read ("" when it was); `scan_only` marks the plan of `residue scan`
    (a report, not a dry run of `residue clean`)."""

    types: tuple[str, ...] = ()
    runtime_error: str = ""
    scan_only: bool = False

    def totals(self) -> dict[str, dict[str, int]]:
        """Per scanned type: `count`, `bytes` (known sizes summed), `safe`, `safe_bytes` (what
        cleaning the safe ones frees: `Finding.planned_bytes`)."""
        out = {t: {"count": 0, "bytes": 0, "safe": 0, "safe_bytes": 0} for t in self.types}
        for f in [*self.actions, *self.kept]:
            row = out.setdefault(f.type, {"count": 0, "bytes": 0, "safe": 0, "safe_bytes": 0})
            row["count"] += 1
            row["bytes"] += f.bytes or 0
            if f.safe:
                row["safe"] += 1
                row["safe_bytes"] += f.planned_bytes
        return out

    def to_dict(self, *, rows_as_json: bool = False) -> dict[str, Any]:
        doc = Plan.to_dict(self, rows_as_json=rows_as_json)
        doc["totals"] = self.totals()
        doc["runtime"] = {"known": not self.runtime_error, "error": self.runtime_error or None}
        return doc


def host_dir(value: str, flag: str) -> str:
    """A host directory option: absolute, clean, never `/`. Raises `BadInput`."""
    if not value.startswith("/"):
        raise BadInput(f"invalid value for {flag}: {value!r} must be an absolute path")
    clean = os.path.normpath(value)
    if clean == "/" or clean == "//":
        raise BadInput(f"invalid value for {flag}: '/' would let kubegc delete anywhere")
    return clean


def _runtime_findings(
    facts: RuntimeFacts, pods: PodInventory, now: int, types: tuple[str, ...], gc_command: str
) -> list[Finding]:
    out: list[Finding] = []
    if DEAD_CONTAINER in types or DEAD_SANDBOX in types:
        found = dead_objects(
            facts.containers, facts.sandboxes, pods, now, command=gc_command,
            layers=facts.layers,
        )  # fmt: skip
        out += [f for f in found if f.type in types]
    if OVERSIZED_LIST in types:
        out += oversized_lists(facts.sizes)
    if UNUSED_IMAGE in types:
        out += unused_images(facts.images, facts.containers, sorted(facts.protected_images))
    return out


def _gc_command(s: Settings) -> str:
    """`kubegc gc all` with the pod source options of this run, for unsafe findings' action."""
    parts = ["kubegc gc all"]
    if s.pods_file is not None:
        parts.append(f"--pods-file {s.pods_file}")
    elif s.pod_source:
        parts.append(f"--pod-source {s.pod_source}")
    return " ".join(parts)


@dataclass
class ResidueScan:
    """A scan's plan, the client it read the runtime with (None once closed) and the pod
    source as it was read (checked against the runtime)."""

    plan: ResiduePlan
    client: CriClient | None
    pods: PodInventory


def _scan(s: Settings, ui: Ui, opts: ResidueOptions, *, keep_client: bool) -> ResidueScan:
    """Observe and scan; with `keep_client` the open client is returned (the caller closes it)
    and an unreachable runtime raises instead of degrading."""
    if s.snapshot is not None:
        raise BadInput("residue reads the node's directories and runtime; --snapshot holds none")
    types = opts.selected()
    root_dir = host_dir(DEFAULT_ROOT_DIR if opts.root_dir is None else opts.root_dir, "--root-dir")
    cni_dir = host_dir(DEFAULT_CNI_DIR if opts.cni_dir is None else opts.cni_dir, "--cni-dir")
    if opts.pod_logs_dir is not None:
        pod_logs_dir = validate_pod_logs_dir(opts.pod_logs_dir, source="--pod-logs-dir")
    else:
        pod_logs_dir = kubelet_config_for(s).pod_logs_dir
    rotating = set(LOG_ROTATION_TYPES) & set(types)
    rotation = kubelet_config_for(s).log_rotation if rotating else LogRotation()
    # a directory given that is not there says so, as df does, never "nothing found"
    if opts.root_dir is not None:
        needed_dir(s.host_root, root_dir, "the kubelet root", lambda: root_dir_hint(s.host_root))
    if opts.pod_logs_dir is not None:
        needed_dir(s.host_root, pod_logs_dir, "the pod log directory (--pod-logs-dir)")
    if opts.cni_dir is not None:
        needed_dir(s.host_root, cni_dir, "the CNI directory (--cni-dir)")
    pods = load_pod_inventory(s, ui)
    now = s.now if s.now is not None else edges().clock()
    mounts = MountTable.read()

    client: CriClient | None = None
    facts: RuntimeFacts | None = None
    runtime_error = ""
    try:
        client = open_client(s, ui)
        facts = observe_runtime(client, s, types, pod_logs_dir, mounts, ui.warn)
    except RuntimeUnavailable as exc:
        if client is not None:
            client.close()
            client = None
        if keep_client:
            raise RuntimeUnavailable(
                f"{exc}; residue clean needs the runtime to tell leftovers from live objects: "
                "nothing was removed",
                exc.code,
            ) from None
        runtime_error = str(exc)
        ui.info(f"{exc}; scanning the host only, nothing that depends on the runtime is safe")
    try:
        ctx = ScanContext(
            host_root=s.host_root,
            root_dir=root_dir,
            pod_logs_dir=pod_logs_dir,
            container_logs_dir=CONTAINER_LOGS_DIR,
            cni_dir=cni_dir,
            pods_known=pods.known,
            pod_uids=frozenset(pods.pods),
            mounts=mounts,
            log_rotation=rotation,
        )
        if facts is not None:
            pods = against_runtime(pods, facts.containers, facts.sandboxes)
            ctx = with_runtime(ctx, facts)
        socket = ""
        if client is not None:
            socket = host_path_of(s.host_root, client.endpoint.path)
        findings = _host_findings(ctx, types, ui, runtime_socket=socket)
        if rotating:
            findings += rotation_findings(ctx, types, ui.warn)
        if facts is not None:
            findings += _runtime_findings(facts, pods, now, types, _gc_command(s))
            if facts.netns_unknown:
                why = NETNS_UNKNOWN.format(n=facts.netns_unknown)
                for f in findings:
                    if f.type == NETNS and f.safe:
                        f.safe, f.unsafe_reason = False, why
        plan = _plan(findings, types, pods, ctx, now, facts, runtime_error)
    except BaseException:
        if client is not None:
            client.close()
        raise
    if client is not None and not keep_client:
        client.close()
        client = None
    ui.info(
        f"residue: {len(plan.actions) + len(plan.kept)} finding(s), {len(plan.actions)} safe; "
        f"pod source {pods.source}; kubelet root {root_dir}, pod logs {pod_logs_dir}, "
        f"CNI {cni_dir}"
    )
    return ResidueScan(plan, client, pods)


def rotation_findings(
    ctx: ScanContext, types: Iterable[str], warn: Callable[[str], None]
) -> list[Finding]:
    """The container log rotation findings of `types` (`core.residue.LOG_ROTATION_TYPES`):
    the container log directories of the pods the runtime knows (every one when it was not
    read) read under the host root (`host.logrotation.read_container_log_dirs`) and judged
    by `policy.logrotation` with `ctx.log_rotation`, and the `/var/log/containers` links
    whose target exists (`host.podlogs.linked_logs`, judged by `stale_links`). What could
    not be read is a warning (`warn`). The grace periods count from the wall clock."""
    wanted = set(types)
    roots = LogRoots(ctx.host_root, ctx.pod_logs_dir)
    known = ctx.runtime_pod_uids

    def pod_known(uid: str) -> bool:
        return uid in known

    def want(uid: str) -> bool:
        return not ctx.runtime_known or uid in known

    listing = read_container_log_dirs(roots, ctx.mounts, want)
    for note in listing.notes:
        warn(note)
    now = time.time()
    found = plan_log_rotation(
        listing.dirs, ctx.log_owners, ctx.log_rotation, now,
        runtime_known=ctx.runtime_known, pod_known=pod_known, unsure=ctx.log_unsure,
    )  # fmt: skip
    if STALE_LOG_LINK in wanted:
        pin = pinned_on_host(ctx.host_root, ctx.container_logs_dir.rstrip("/"))
        try:
            links = linked_logs(pin, ctx.host_root)
        except OSError as exc:
            warn(f"stale log links: cannot read {ctx.container_logs_dir}: {exc.strerror or exc}")
            links = []
        ids = ctx.container_ids | ctx.sandbox_ids
        found += stale_links(links, ids, now, runtime_known=ctx.runtime_known)
    return [f for f in found if f.type in wanted]


def _host_findings(
    ctx: ScanContext, types: tuple[str, ...], ui: Ui, *, runtime_socket: str = ""
) -> list[Finding]:
    """Run the host scanners the chosen types need; a scanner that cannot read the host
    (`OSError`) is reported and the others go on. `runtime_socket` (the runtime's socket as
    the host names it) keeps shims of other containerd instances out."""
    # deferred: tests/unit/test_evict_check_cache.py::test_a_second_run_uses_the_cache_and_never_imports_grpc  # noqa: E501
    from kubegc_cli.node.host import residue as host

    out: list[Finding] = []
    for name, produces in HOST_SCANNERS:
        if not set(produces) & set(types):
            continue
        scanner: Callable[..., list[Finding]] = getattr(host, name)
        kwargs = {"address": runtime_socket} if name == "scan_shims" else {}
        try:
            found = scanner(ctx, **kwargs)
        except OSError as exc:
            ui.warn(f"{name.removeprefix('scan_').replace('_', ' ')}: cannot read the host: {exc}")
            continue
        out += [f for f in found if f.type in types]
    return out


def _plan(
    findings: list[Finding],
    types: tuple[str, ...],
    pods: PodInventory,
    ctx: ScanContext,
    now: int,
    facts: RuntimeFacts | None,
    runtime_error: str,
) -> ResiduePlan:
    # deferred: tests/unit/test_evict_check_cache.py::test_a_second_run_uses_the_cache_and_never_imports_grpc  # noqa: E501
    from kubegc_cli.node.host.residue import cni_summary, sees_host_processes

    order = {t: i for i, t in enumerate(TYPES)}
    findings.sort(key=lambda f: (order.get(f.type, len(order)), f.target))
    for f in findings:
        if not f.safe:
            f.result = Result.KEPT
    plan = ResiduePlan(
        kind=PLAN_KIND,
        policy={
            "kinds": list(types),
            "host_root": str(ctx.host_root),
            "root_dir": ctx.root_dir,
            "pod_logs_dir": ctx.pod_logs_dir,
            "container_logs_dir": ctx.container_logs_dir,
            "cni_dir": ctx.cni_dir,
            "pod_source": pods.source,
            "container_log_max_size": ctx.log_rotation.max_size,
            "container_log_max_files": ctx.log_rotation.max_files,
        },
        now=now,
        actions=[f for f in findings if f.safe],
        kept=[f for f in findings if not f.safe],
        source=facts.endpoint if facts else "",
        types=types,
        runtime_error=runtime_error,
    )
    notes = plan.notes
    if not ctx.mounts.known and {POD_DIR, POD_LOG_DIR} & set(types):
        notes.append(
            f"No directory is safe to clean: {ctx.mounts.error} (kubegc reads its own "
            "/proc/self/mountinfo)."
        )
    if {NETNS, SHIM} & set(types) and not sees_host_processes(ctx.host_root):
        notes.append(
            "kubegc trusts its process table to be the host's only with --host-root /: with "
            f"--host-root {ctx.host_root} no network namespace is safe to clean and shims are not "
            "looked for (run kubegc on the host for those)."
        )
    if POD_CGROUP in types and not cgroup_mounts_visible(ctx.host_root):
        notes.append(
            f"Pod cgroups were not looked for: no cgroup filesystem is listed in "
            f"{ctx.host_root}/proc/1/mountinfo or {ctx.host_root}/proc/self/mountinfo."
        )
    notes.extend(_hung_roots(ctx, types))
    if set(LOG_ROTATION_TYPES) & set(types):
        r = ctx.log_rotation
        size = f"{r.max_size} bytes ({format_bytes(r.max_size)})" if r.enabled else "-1 (disabled)"
        notes.append(
            f"Container logs judged by containerLogMaxSize {size} and containerLogMaxFiles "
            f"{r.max_files}, from {r.source}."
        )
    if not pods.known:
        notes.append(
            "No pod source: nothing whose residue-ness depends on the pod being gone is marked "
            "safe (give --pods-file, or reach the API)."
        )
    if runtime_error:
        notes.append(
            f"The runtime could not be read ({runtime_error}): runtime findings are missing and "
            "nothing whose residue-ness depends on the runtime not knowing it is marked safe."
        )
    if facts is not None and facts.images_unknown and UNUSED_IMAGE in types:
        notes.append(
            f"No image is listed as unused: {facts.images_unknown}, so the sandbox image the "
            "runtime protects is unknown."
        )
    if facts is not None and facts.netns_unknown and NETNS in types:
        notes.append(NETNS_UNKNOWN.format(n=facts.netns_unknown).capitalize() + ".")
    if CNI_IP in types:
        for net, (leaked, reserved) in sorted(cni_summary(findings).items()):
            notes.append(f"CNI network {net}: {leaked} of {reserved} reserved address(es) leaked.")
    for t, row in plan.totals().items():
        if row["count"]:
            notes.append(
                f"{t}: {row['count']} finding(s), {format_bytes(row['bytes'])}; {row['safe']} "
                f"safe to clean ({format_bytes(row['safe_bytes'])})."
            )
    return plan


def _hung_roots(ctx: ScanContext, types: Iterable[str]) -> list[str]:
    """A note for each directory the scanned `types` start from (the kubelet's pods
    directory, podLogsDir, the legacy log link directory) that gave no answer within
    `--timeout` when it was resolved and opened (`host.logs.pinned_on_host`, cached: asking
    again costs nothing): nothing below it was looked at."""
    roots = (
        (POD_DIR, "the kubelet's pod directory", f"{ctx.root_dir.rstrip('/')}/pods"),
        (POD_LOG_DIR, "podLogsDir", ctx.pod_logs_dir),
        (LOG_LINK, "the legacy log link directory", ctx.container_logs_dir.rstrip("/")),
    )
    scanned = set(types)
    return [
        f"{what} {why}: nothing below it was looked at or is safe to clean."
        for kind, what, host_dir in roots
        if kind in scanned
        for why in [pinned_on_host(ctx.host_root, host_dir).stalled]
        if why
    ]


def residue_scan(s: Settings, ui: Ui, opts: ResidueOptions) -> ResiduePlan:
    """`kubegc residue scan`: every finding, nothing changed.

    Returns the plan (a dry run). Raises `BadInput` for bad options, a pod source that lists
    none of the pods running here, or `--snapshot`. An unreachable runtime does not raise:
    the plan's `runtime_error` says why, host findings are still reported and nothing whose
    safety depends on the runtime is safe.
    """
    plan = _scan(s, ui, opts, keep_client=False).plan
    plan.scan_only = True
    return plan


def residue_clean(s: Settings, ui: Ui, opts: ResidueOptions, act: ActOptions) -> ResiduePlan:
    """`kubegc residue clean`: scan, show, then (if allowed) act on the safe findings.

    The cleaner re-checks each finding right before acting: an ID (CNI reservation) must still
    be unknown to the runtime (`PodSandboxStatus` and `ContainerStatus` both NotFound), a pod
    must still be gone (absent from the pod source, read once more before acting, and from the
    runtime's sandboxes and containers, asked per finding). The question holds no node lock:
    after a person's yes the run takes it and scans again, and cleans only what is still safe
    of what was asked about (`commands.flow.may_act`). Raises `BadInput` as `residue_scan`,
    `RuntimeUnavailable` (exit 3, nothing removed) when the runtime cannot be read. Returns the
    plan with results.
    """
    mode = decide_mode(s, act, ui)
    scan = scan_for_clean(s, ui, opts)
    plan, client = scan.plan, scan.client
    assert client is not None

    def again() -> ResiduePlan:  # after a person's yes, under the node lock
        fresh = scan_for_clean(s, ui, opts)
        if fresh.client is not None:
            fresh.client.close()
        return fresh.plan

    try:
        if may_act(mode, plan, ui, "finding", act, again=again):
            on = {"nodefs": plan.policy["root_dir"], "logs": plan.policy["pod_logs_dir"]}
            carry_out(s, plan, [clean_stage(s, scan, act, ui)], "residue clean", ui, measure=on)
        return plan
    finally:
        client.close()


def scan_for_clean(s: Settings, ui: Ui, opts: ResidueOptions) -> ResidueScan:
    """Observe and scan as `residue clean` does: the open client is returned with the plan
    (the caller closes it). Raises `BadInput` as `residue_scan`, `RuntimeUnavailable` (exit
    3, nothing removed) when the runtime cannot be read."""
    return _scan(s, ui, opts, keep_client=True)


def clean_stage(s: Settings, scan: ResidueScan, act: ActOptions, ui: Ui) -> Stage:
    """The stage that cleans `scan`'s safe findings (kind `finding`), re-checking each right
    before acting: an ID (CNI reservation) must still be unknown to the runtime
    (`PodSandboxStatus` and `ContainerStatus` both NotFound), a pod must still be gone (absent
    from the pod source, read once more right before the stage, and from the runtime's
    sandboxes and containers, asked per finding)."""
    # deferred: tests/unit/test_evict_check_cache.py::test_a_second_run_uses_the_cache_and_never_imports_grpc  # noqa: E501
    from kubegc_cli.node.execute.residue import ResidueCleaner

    client = scan.client
    assert client is not None
    fresh: dict[str, PodInventory] = {"pods": scan.pods}

    def reread_pods() -> None:
        fresh["pods"] = load_pod_inventory(s, ui)

    def still_unknown(object_id: str) -> bool:
        """Neither a sandbox nor a container of the runtime has this ID now."""
        return (
            client.pod_sandbox_status(object_id) is None
            and client.container_status(object_id) is None
        )

    def pod_still_gone(uid: str) -> bool:
        """The pod source (read again) and the runtime (asked now) still lack `uid`."""
        pods = fresh["pods"]
        if pods.may_exist(uid):
            return False
        if client.list_containers(labels={LABEL_POD_UID: uid}):
            return False
        return not any(
            sb.uid == uid or sb.labels.get(LABEL_POD_UID) == uid for sb in client.list_sandboxes()
        )

    pod_logs_dir = str(scan.plan.policy.get("pod_logs_dir", ""))

    def instance_gone(log: str) -> bool:
        """No container of the runtime (asked now) has the live log `log`, nor may have it:
        none of that pod whose restart count is unknown has a log in its directory."""
        uid = pod_uid_from_dir(log.split("/")[-3]) if log.count("/") >= 3 else ""
        if not uid:
            return False
        of_pod = client.list_containers(labels={LABEL_POD_UID: uid})
        owners, unsure = log_owners(pod_logs_dir, of_pod)
        return log not in owners and os.path.dirname(log) not in unsure

    def running_with_log(cid: str, log: str) -> bool:
        """Container `cid` is running now, and its log path is `log`."""
        status = client.container_status(cid)
        return (
            status is not None
            and status.state is ContainerState.RUNNING
            and (status.log_path == log)
        )

    def reopen(cid: str) -> None:
        if not client.reopen_container_log(cid):
            raise RuntimeUnavailable(f"ReopenContainerLog: container {cid} is gone")

    cleaner = ResidueCleaner(
        client,
        host_root=s.host_root,
        still_unknown=still_unknown,
        pod_still_gone=pod_still_gone,
        concurrency=act.concurrency,
        pod_logs_dir=pod_logs_dir,
        instance_gone=instance_gone,
        running_with_log=running_with_log,
        reopen=reopen,
    )
    return Stage(cleaner, ("finding",), reread_pods)
