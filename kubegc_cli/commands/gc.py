"""`kubegc gc containers|sandboxes|logs|all|images` and `kubegc snapshot`: observe the node (or
read a snapshot), plan with the kubelet's rules, then show and — if allowed — act through the
flow every command shares (`kubegc_cli.commands.flow`).

The runtime, the pod source and the clock are reached only through the edges
(`commands.edges`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.commands.flow import (
    ActOptions,
    Mode,
    Stage,
    carry_out,
    decide_mode,
    fs_roles,
    load_pod_inventory,
    log_stages,
    may_act,
    open_client,
    runtime_fs_paths,
    writable_layers_for,
)
from kubegc_cli.core.errors import BadInput, RuntimeUnavailable, SandboxImageUnreadable
from kubegc_cli.core.inputs import parse_json, parse_yaml, read_text
from kubegc_cli.core.model import (
    ContainerState,
    ImageRecord,
    NodeSnapshot,
    Sandbox,
    SandboxState,
)
from kubegc_cli.core.plan import (
    ESTIMATE_NOTE,
    ContainerAction,
    ImageAction,
    LogAction,
    Plan,
    Result,
    SandboxAction,
)
from kubegc_cli.core.podlogs import LegacyLink
from kubegc_cli.core.podlogs import container_id_from_link as container_id_of
from kubegc_cli.core.pods import PodInventory, against_runtime
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.sizes import left_in_pod_log_dir
from kubegc_cli.core.units import format_bytes, ns_to_rfc3339
from kubegc_cli.node.diskusage import needed_dir
from kubegc_cli.node.execute.actions import (
    ContainerRemover,
    ImageRemover,
    LogRemover,
    SandboxRemover,
)
from kubegc_cli.node.host.fs import FsStats, fs_stats
from kubegc_cli.node.host.kubelet import (
    CONTAINER_LOGS_DIR,
    kubelet_config_for,
    kubelet_config_once,
    kubelet_pod_infra_image,
    root_dir_hint,
    validate_pod_logs_dir,
)
from kubegc_cli.node.host.logs import LogRoots, LogSizer
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.podlogs import legacy_links, read_pod_log_dirs
from kubegc_cli.node.host.pullrecords import DEFAULT_ROOT_DIR, read_pull_records
from kubegc_cli.node.imagefs import image_filesystem
from kubegc_cli.node.observe import observe_node
from kubegc_cli.node.sandboximages import KUBEGC_POD_INFRA_FLAG, NamedImage, runtime_sandbox_images
from kubegc_cli.node.state import (
    StateUnavailable,
    check_state_dir,
    forget_image_records,
    load_image_records,
    save_image_records,
)
from kubegc_cli.policy.containers import ContainerGCPolicy, plan_containers, recheck_guard
from kubegc_cli.policy.images import (
    detect_images,
    plan_images,
    repull_risk,
    sandbox_image_mismatch,
)
from kubegc_cli.policy.logs import link_state, plan_logs
from kubegc_cli.policy.pins import own_pin_reasons, reads_pins
from kubegc_cli.policy.sandboxes import plan_sandboxes
from kubegc_cli.policy.scope import Scope

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient

#: How many unreadable kubelet pull records `gc images` names in a warning each; the rest
#: are counted in one more line.
PULL_RECORDS_WARNED = 3


def _now(s: Settings, snap: NodeSnapshot) -> int:
    """Planning time: `--now`, else when the snapshot was taken (ns since the epoch)."""
    return s.now if s.now is not None else snap.captured_at


def load_snapshot(path: Path) -> NodeSnapshot:
    """Read a `kubegc snapshot` file (JSON, or YAML from `-o yaml`). Raises `BadInput`."""
    text = read_text(path, "snapshot")
    if text.lstrip().startswith(("{", "[")):
        doc = parse_json(text, path, "snapshot")
    else:
        doc = parse_yaml(text, path, "snapshot", unique_keys=True)
    return NodeSnapshot.from_dict(doc, source=f"snapshot {path}")


def snapshot_node(s: Settings, ui: Ui) -> NodeSnapshot:
    """`kubegc snapshot`: everything kubegc observes, with status for every container."""

    kcfg = kubelet_config_for(s)
    client = open_client(s, ui)
    try:
        return observe_node(
            client,
            s.host_root,
            statuses="all",
            images=True,
            sandboxes=True,
            pod_logs_dir=kcfg.pod_logs_dir,
            clock=edges().clock,
        )
    finally:
        client.close()


def _observe_for_containers(
    client: CriClient,
    s: Settings,
    scope: Scope,
    pod_logs_dir: str,
    mounts: MountTable,
    *,
    sandboxes: bool,
    sizer: LogSizer | None = None,
) -> NodeSnapshot:
    """The node as a container GC plan needs it: `ListContainers` alone, with status calls only
    when the plan needs finish times (`--older-than`); dead containers' log paths from the
    kubelet's layout (the executor re-reads each status before removing); the restart count of
    the annotations; the sandboxes when `sandboxes`, or when a container is CREATED (whether
    its sandbox is READY decides if it may be removed: `plan_containers`). `sizer` measures
    the logs (`observe_node`)."""

    snap = observe_node(
        client,
        s.host_root,
        statuses="dead" if scope.older_than is not None else "none",
        log_layout=True,
        annotations=False,
        sandboxes=sandboxes,
        pod_logs_dir=pod_logs_dir,
        mounts=mounts,
        clock=edges().clock,
        sizer=sizer,
    )
    if not sandboxes and any(c.state is ContainerState.CREATED for c in snap.containers):
        snap = replace(snap, sandboxes=tuple(client.list_sandboxes()))
    return snap


def _note_logs_left(plan: Plan[Any], sizer: LogSizer) -> None:
    """Give each planned container removal whose log may not be removed where the kubelet
    puts it (its directory a symlink, not a directory, a mount point, or one that gave no
    answer in time: `LogSizer.note_for`) that note, so a dry run says what `--yes` would
    leave; give each its log's latest change as `sizer` read it (`log_changed_ns`); and say
    in the plan's notes which log directories gave no answer (their sizes are unknown)."""
    for a in plan.actions:
        if a.kind == "container":  # (compared after a question: `flow.changed_since`)
            a.log_changed_ns = sizer.changed_of(a.container.log_path)
        if a.kind == "container" and a.result is Result.PLANNED and not a.log_note:
            a.log_note = sizer.note_for(a.container.log_path)
    if sizer.stalled:
        shown = ", ".join(sizer.stalled[:5])
        plan.notes.append(
            f"{len(sizer.stalled)} container log directory(ies) gave no answer within "
            f"--timeout (a hung mount?): {shown}; the sizes of their logs are unknown."
        )


def _ready(sandboxes: Iterable[Sandbox]) -> frozenset[str]:
    """The IDs of the READY sandboxes among `sandboxes`."""
    return frozenset(sb.id for sb in sandboxes if sb.state is SandboxState.READY)


def gc_containers(
    s: Settings, policy: ContainerGCPolicy, scope: Scope, act: ActOptions, ui: Ui
) -> Plan[ContainerAction]:
    """`kubegc gc containers`: plan the kubelet's container GC, then (if allowed) carry it out.

    Raises `BadInput` (bad pod source, snapshot) before touching the runtime and
    `RuntimeUnavailable` if the inventory cannot be read; nothing is removed in either case.
    Returns the plan with results filled in (all `planned` for a dry run).
    """
    pods = load_pod_inventory(s, ui, needs_source=policy.include_terminated_pods)
    mode = decide_mode(s, act, ui)

    def plan_from(
        snap: NodeSnapshot, source: str, client: CriClient | None = None
    ) -> Plan[ContainerAction]:
        here = against_runtime(pods, snap.containers, snap.sandboxes)
        bound = scope.with_sandboxes(snap.sandboxes)  # -l: pod labels from the sandboxes
        layers, why = writable_layers_for(snap.containers, client) if client else (None, "")
        plan = plan_containers(
            snap.containers, policy, here, _now(s, snap), bound,
            ready_sandboxes=_ready(snap.sandboxes), layers=layers,
        )  # fmt: skip
        if why and plan.actions:
            plan.notes.append(why)
        plan.source = source
        return plan

    if s.snapshot is not None:
        offline = plan_from(load_snapshot(s.snapshot), f"snapshot {s.snapshot}")
        if offline.actions:
            offline.notes.append(
                "a snapshot holds no writable layers: the bytes expected count the logs alone"
            )
        may_act(Mode.DRY_RUN, offline, ui, "object", act)  # the caps, shown
        return offline

    kcfg = kubelet_config_for(s)
    client = open_client(s, ui)
    try:
        mounts = MountTable.read()
        sizer = LogSizer(LogRoots(s.host_root, kcfg.pod_logs_dir), mounts)
        # -l matches the pod labels the sandboxes carry; READY ones keep their pods alive.
        snap = _observe_for_containers(
            client, s, scope, kcfg.pod_logs_dir, mounts,
            sandboxes=scope.selector is not None or pods.known, sizer=sizer,
        )  # fmt: skip
        ui.info(
            f"{snap.runtime.name} {snap.runtime.version}: {len(snap.containers)} containers "
            f"listed; pod source {pods.source}; kubelet config {kcfg.read_from()}"
        )
        plan = plan_from(snap, snap.endpoint, client)
        _note_logs_left(plan, sizer)

        def again() -> Plan[ContainerAction]:  # after a person's yes, under the node lock
            fresh = LogSizer(LogRoots(s.host_root, kcfg.pod_logs_dir), mounts)  # (read anew)
            now = _observe_for_containers(
                client, s, scope, kcfg.pod_logs_dir, mounts,
                sandboxes=scope.selector is not None or pods.known, sizer=fresh,
            )  # fmt: skip
            replanned = plan_from(now, now.endpoint, client)
            _note_logs_left(replanned, fresh)
            return replanned

        if may_act(mode, plan, ui, "container", act, again=again):
            remover = ContainerRemover(
                client,
                concurrency=act.concurrency,
                log_roots=LogRoots(s.host_root, kcfg.pod_logs_dir),
                mounts=mounts,
            )
            guard = lambda: recheck_guard(plan, client.list_containers(), policy)  # noqa: E731
            on = {"logs": kcfg.pod_logs_dir, **runtime_fs_paths(client, ui)}
            carry_out(s, plan, [Stage(remover, ("container",), guard)], "gc containers", ui,
                      measure=on)  # fmt: skip
        return plan
    finally:
        client.close()


def gc_sandboxes(
    s: Settings, include_terminated_pods: bool, scope: Scope, act: ActOptions, ui: Ui
) -> Plan[SandboxAction]:
    """`kubegc gc sandboxes`: plan the kubelet's sandbox GC, then (if allowed) carry it out.

    Errors as `gc_containers`. Returns the plan with results filled in.
    """
    pods = load_pod_inventory(s, ui, needs_source=include_terminated_pods)
    mode = decide_mode(s, act, ui)

    def plan_from(snap: NodeSnapshot, source: str) -> Plan[SandboxAction]:
        here = against_runtime(pods, snap.containers, snap.sandboxes)
        plan = plan_sandboxes(
            snap.sandboxes, snap.containers, here, _now(s, snap),
            include_terminated_pods=include_terminated_pods, scope=scope,
        )  # fmt: skip
        plan.source = source
        return plan

    if s.snapshot is not None:
        offline = plan_from(load_snapshot(s.snapshot), f"snapshot {s.snapshot}")
        may_act(Mode.DRY_RUN, offline, ui, "object", act)  # the caps, shown
        return offline

    client = open_client(s, ui)
    try:
        snap = observe_node(
            client, s.host_root, statuses="none", sandboxes=True, clock=edges().clock
        )
        ui.info(
            f"{snap.runtime.name} {snap.runtime.version}: {len(snap.sandboxes)} sandboxes, "
            f"{len(snap.containers)} containers listed; pod source {pods.source}"
        )
        plan = plan_from(snap, snap.endpoint)

        def again() -> Plan[SandboxAction]:  # after a person's yes, under the node lock
            now = observe_node(
                client, s.host_root, statuses="none", sandboxes=True, clock=edges().clock
            )
            return plan_from(now, now.endpoint)

        if may_act(mode, plan, ui, "sandbox", act, again=again):
            remover = SandboxRemover(client, concurrency=act.concurrency)
            on = runtime_fs_paths(client, ui)
            carry_out(s, plan, [Stage(remover, ("sandbox",))], "gc sandboxes", ui, measure=on)
        return plan
    finally:
        client.close()


def pod_logs_root_of(s: Settings, pod_logs_dir: str | None) -> str:
    """The pod log root (a host path): `pod_logs_dir` (`--pod-logs-dir`) when given, else the
    kubelet config's podLogsDir. Raises `BadInput` for a `pod_logs_dir` the kubelet would not
    take (`validate_pod_logs_dir`), and `RuntimeUnavailable` (exit 3, naming it) when one given
    is not a directory under the host root, as `df` and `residue` say it (`needed_dir`): a
    mistyped flag is never "nothing to remove". The kubelet config's is only warned of when
    missing (`_observe_logs`): the kubelet makes it with its first pod."""
    if pod_logs_dir is not None:
        root = validate_pod_logs_dir(pod_logs_dir, source="--pod-logs-dir")
        needed_dir(s.host_root, root, "the pod log directory (--pod-logs-dir)")
        return root
    return kubelet_config_for(s).pod_logs_dir


def _observe_logs(
    s: Settings, root: str, pods: PodInventory, containers: list[Any], mounts: Any, ui: Ui
) -> tuple[list[Any], list[Any]]:
    """(pod log dirs, dangling legacy links) on the host. Dirs only with a known pod source.

    Raises `RuntimeUnavailable` when the pod log root exists but cannot be read.
    """

    local_root = root
    try:
        local_root = LogRoots(s.host_root, root).real_pod_logs_dir  # resolved as on the host
        if not local_root:
            raise BadInput(
                f"pod log root {root} resolves to the host's / (or loops) under --host-root "
                f"{s.host_root}; refusing to look for pod log directories there"
            )
        dirs = read_pod_log_dirs(local_root, mounts) if pods.known else []
    except FileNotFoundError:
        dirs = []
        ui.warn(f"no pod log directory at {local_root}")
    except OSError as exc:
        raise RuntimeUnavailable(
            f"cannot read pod log root {local_root}: {exc.strerror or exc}"
        ) from None
    links_pin = LogRoots(s.host_root, root, CONTAINER_LOGS_DIR).links_pin
    if links_pin.stalled:
        raise RuntimeUnavailable(f"cannot read the legacy log links: {links_pin.stalled}")
    links_dir = links_pin.path
    pod_dirs = {os.path.join(root, d.name) for d in dirs}
    found = legacy_links(links_dir, CONTAINER_LOGS_DIR, s.host_root, pod_dirs) if links_dir else []
    links = [
        LegacyLink(name, path, cid, link_state(cid, containers) if cid else "", into)
        for name, path, into in found
        for cid in [container_id_of(name)]
    ]
    return dirs, links


def _minus_container_logs(dirs: list[Any], removals: list[ContainerAction], root: str) -> list[Any]:
    """Pod log directories as the container stage will leave them: each one's bytes what
    stays in it once the container logs that stage removes are gone (`core.sizes.
    left_in_pod_log_dir`: the directories' own blocks and any other file), so a combined plan
    counts no byte twice."""

    freed: dict[str, int] = {}
    prefix = root.rstrip("/") + "/"
    for a in removals:
        path = a.container.log_path
        if path.startswith(prefix) and a.container.log_bytes:
            name = path[len(prefix) :].split("/", 1)[0]
            freed[name] = freed.get(name, 0) + a.container.log_bytes
    return [replace(d, bytes=left_in_pod_log_dir(d.bytes, freed.get(d.name, 0))) for d in dirs]


def gc_logs(s: Settings, pod_logs_dir: str | None, act: ActOptions, ui: Ui) -> Plan[LogAction]:
    """`kubegc gc logs`: pod log directories of deleted pods and dangling legacy symlinks.

    `pod_logs_dir` (a host path) overrides the kubelet config's podLogsDir. Raises `BadInput`
    with `--snapshot` (a snapshot holds no log directories) and `RuntimeUnavailable` when the
    runtime or the pod log root cannot be read.
    """
    if s.snapshot is not None:
        raise BadInput("gc logs reads the node's log directories; --snapshot holds none")
    pods = load_pod_inventory(s, ui)
    mode = decide_mode(s, act, ui)

    root = pod_logs_root_of(s, pod_logs_dir)
    client = open_client(s, ui)
    try:
        mounts = MountTable.read()

        def plan_now() -> Plan[LogAction]:
            snap = observe_node(
                client, s.host_root, statuses="none", sandboxes=pods.known, clock=edges().clock
            )
            here = against_runtime(pods, snap.containers, snap.sandboxes)
            dirs, links = _observe_logs(s, root, here, list(snap.containers), mounts, ui)
            plan = plan_logs(
                dirs, links, snap.containers, here, _now(s, snap),
                pod_logs_dir=root, container_logs_dir=CONTAINER_LOGS_DIR,
            )  # fmt: skip
            plan.source = snap.endpoint
            return plan

        plan = plan_now()  # (again after a person's yes, under the node lock)
        if may_act(mode, plan, ui, "log path", act, again=plan_now):
            remover = LogRemover(
                client, concurrency=act.concurrency, mounts=mounts, host_root=s.host_root,
                roots=LogRoots(s.host_root, root),
            )  # fmt: skip
            carry_out(s, plan, log_stages(remover), "gc logs", ui, measure={"logs": root})
        return plan
    finally:
        client.close()


def gc_all(
    s: Settings,
    policy: ContainerGCPolicy,
    scope: Scope,
    pod_logs_dir: str | None,
    act: ActOptions,
    ui: Ui,
) -> Plan[Any]:
    """`kubegc gc all`: containers, then sandboxes, then logs — the kubelet's order — as one
    plan with one confirmation (`plan_all`), then (if allowed) carried out.

    Errors as the single commands; `BadInput` with `--snapshot`.
    """
    if s.snapshot is not None:
        raise BadInput("gc all reads the node's log directories; --snapshot holds none")
    pods = load_pod_inventory(s, ui, needs_source=policy.include_terminated_pods)
    mode = decide_mode(s, act, ui)

    with kubelet_config_once():  # the log root and the plan from one reading of the config
        root = pod_logs_root_of(s, pod_logs_dir)
        client = open_client(s, ui)
        try:
            planned = plan_all(s, policy, scope, root, client, pods, act, ui)
        except BaseException:
            client.close()
            raise
    try:

        def again() -> Plan[Any]:  # after a person's yes, under the node lock
            return plan_all(s, policy, scope, root, client, pods, act, ui).plan

        if may_act(mode, planned.plan, ui, "object", act, again=again):
            on = {"logs": root, **runtime_fs_paths(client, ui)}
            carry_out(s, planned.plan, planned.stages(), "gc all", ui, measure=on)
        return planned.plan
    finally:
        client.close()


@dataclass(frozen=True)
class Planned:
    """A plan and how to carry it out: `stages()` are its executors in acting order (made
    only when the run acts)."""

    plan: Plan[Any]
    stages: Callable[[], list[Stage]]


def plan_all(
    s: Settings,
    policy: ContainerGCPolicy,
    scope: Scope,
    root: str,
    client: CriClient,
    pods: PodInventory,
    act: ActOptions,
    ui: Ui,
) -> Planned:
    """The plan of `gc all` on the node `client` reaches: containers, then sandboxes, then
    pod log directories and dangling legacy links (`root` the pod log root, a host path).

    Later stages plan on the state the earlier ones leave: a sandbox whose last dead container
    is removed in this run is removable in this run, and so is that pod's log directory; no
    byte is counted twice (`_minus_container_logs`). The stages re-check every object right
    before acting (the container stage re-checks the plan against a fresh `ListContainers`).
    Raises `RuntimeUnavailable` when the runtime or the pod log root cannot be read.
    """
    kcfg = kubelet_config_for(s)
    mounts = MountTable.read()
    sizer = LogSizer(LogRoots(s.host_root, kcfg.pod_logs_dir), mounts)
    snap = _observe_for_containers(
        client, s, scope, kcfg.pod_logs_dir, mounts, sandboxes=True, sizer=sizer
    )
    pods = against_runtime(pods, snap.containers, snap.sandboxes)
    now = _now(s, snap)
    scope = scope.with_sandboxes(snap.sandboxes)  # -l: pod labels from the sandboxes
    layers, why = writable_layers_for(snap.containers, client)
    pc = plan_containers(
        snap.containers, policy, pods, now, scope, ready_sandboxes=_ready(snap.sandboxes),
        layers=layers,
    )  # fmt: skip
    if why and pc.actions:
        pc.notes.append(why)
    _note_logs_left(pc, sizer)
    going = {a.id for a in pc.actions}
    left = [c for c in snap.containers if c.id not in going]
    ps = plan_sandboxes(
        snap.sandboxes, left, pods, now,
        include_terminated_pods=policy.include_terminated_pods, scope=scope,
    )  # fmt: skip
    dirs, links = _observe_logs(s, root, pods, left, mounts, ui)
    dirs = _minus_container_logs(dirs, pc.actions, root)
    links = [
        lk
        for lk in links
        if not (lk.container_id and any(g.startswith(lk.container_id) for g in going))
    ]  # (the container stage removes the links of the containers it removes)
    pl = plan_logs(
        dirs, links, left, pods, now,
        pod_logs_dir=root, container_logs_dir=CONTAINER_LOGS_DIR, scope=scope,
    )  # fmt: skip
    plan: Plan[Any] = Plan(
        kind="GCPlan",
        policy={"containers": pc.policy, "sandboxes": ps.policy, "logs": pl.policy},
        now=now,
        actions=[*pc.actions, *ps.actions, *pl.actions],
        kept=[*pc.kept, *ps.kept, *pl.kept],
        notes=[*pc.notes, *(n for n in ps.notes + pl.notes if n not in pc.notes)],
        out_of_scope=pc.out_of_scope,
        source=snap.endpoint,
    )

    def stages() -> list[Stage]:
        n = act.concurrency
        log_roots = LogRoots(s.host_root, kcfg.pod_logs_dir)
        return [
            Stage(
                ContainerRemover(client, concurrency=n, log_roots=log_roots, mounts=mounts),
                ("container",),
                lambda: recheck_guard(pc, client.list_containers(), policy),
            ),
            Stage(SandboxRemover(client, concurrency=n), ("sandbox",)),
            *log_stages(
                LogRemover(
                    client,
                    concurrency=n,
                    mounts=mounts,
                    host_root=s.host_root,
                    roots=LogRoots(s.host_root, root),
                )
            ),
        ]

    return Planned(plan, stages)


def gc_images(
    s: Settings,
    policy: Any,
    act: ActOptions,
    ui: Ui,
    *,
    pod_infra_image: str | None = None,
    assume_detected_at: int | None = None,
    root_dir: str | None = None,
) -> Plan[ImageAction]:
    """`kubegc gc images`: the kubelet's image GC with first-detected/last-used remembered in
    the state store across runs.

    `pod_infra_image` is protected besides the runtime's own sandbox image;
    `assume_detected_at` (ns since the epoch) is used as first-detected time for images without
    a record (instead of now); it may not be later than now (`--now`, else the clock) plus 5
    minutes of clock skew. `root_dir` is the kubelet root (a host path, absolute; None: the
    kubelet's default) whose pull records say what pulling each image again takes
    (`plan_images_on`); one given that is not a directory under the host root is
    `RuntimeUnavailable` naming it, as `df` and `residue` say it.

    Records are what a run on the wall clock saw (first sighting, last use), saved by dry runs
    too; a run with `--now` saves none, and the assumed first-detected times are saved only by
    a run that acts (a note says which). A state store kubegc cannot write (read-only, permission
    denied) only warns in a dry run (records are read if possible, not saved); a run that may
    remove (`--yes`, or asking on a terminal) raises `StateUnavailable` (exit 2) before
    anything is removed, since its lock and audit log live there. A full disk does not stop a
    removing run: the records are not saved, and the audit rows are tried again afterwards.

    Raises `BadInput` for a bad policy or time, with `--snapshot`, or a state dir or file of
    the wrong type; `GCFailed` (exit 1) when the image filesystem reports capacity 0;
    `RuntimeUnavailable` when the runtime or the image filesystem cannot be read;
    `SandboxImageUnreadable` (exit 3) when the runtime names its sandbox image in a form kubegc
    cannot read and no `pod_infra_image` is given (the image it protects is unknown)."""

    check_image_inputs(s, policy, assume_detected_at)
    if root_dir is None:
        root_dir = DEFAULT_ROOT_DIR
    elif not root_dir.startswith("/"):
        raise BadInput(f"invalid value for --root-dir: {root_dir!r} must be an absolute path")
    else:  # a mistyped flag is never "no pull records"
        needed_dir(s.host_root, root_dir, "the kubelet root", lambda: root_dir_hint(s.host_root))
    mode = decide_mode(s, act, ui)
    client = open_client(s, ui)
    try:
        planned = plan_images_on(
            s, policy, client, ui, may_remove=mode in (Mode.ACT, Mode.ASK),
            pod_infra_image=pod_infra_image, assume_detected_at=assume_detected_at,
            concurrency=act.concurrency, root_dir=root_dir,
        )  # fmt: skip
        plan = planned.plan

        def again() -> Plan[ImageAction]:  # after a person's yes, under the node lock
            return plan_images_on(
                s, policy, client, ui, may_remove=True, pod_infra_image=pod_infra_image,
                assume_detected_at=assume_detected_at, concurrency=act.concurrency,
                root_dir=root_dir,
            ).plan  # fmt: skip

        acting = may_act(mode, plan, ui, "image", act, again=again)
        planned.save(acting or mode is Mode.ACT)  # --yes, or a person said yes: the run acts
        if acting:
            carry_out(s, plan, planned.stages(), "gc images", ui,
                      measure={"imagefs": planned.imagefs})  # fmt: skip
            forget_removed_images(s, plan, ui)
            if plan.filesystems and plan.filesystem is not None:  # (the same measurement)
                measured = plan.filesystems[0]
                plan.filesystem.update(available_after=measured["available_after"],
                                       regained=measured["regained"])  # fmt: skip
        return plan
    finally:
        client.close()


def check_image_inputs(s: Settings, policy: Any, assume_detected_at: int | None) -> None:
    """What an image GC run checks before it observes: no `--snapshot`, a valid `policy`, a
    `--now` the state store can record, an `assume_detected_at` (ns since the epoch) not
    later than now plus 5 minutes of clock skew. Raises `BadInput`."""
    if s.snapshot is not None:
        raise BadInput(
            "gc images cannot plan from a snapshot: it reads and updates the node's image "
            "records in the state store (drop --snapshot)"
        )
    policy.validate()
    max_ns = 2**63 - 1  # the state store keeps times as SQLite (64-bit) integers
    if s.now is not None and s.now > max_ns:
        raise BadInput(
            f"invalid --now: {ns_to_rfc3339(s.now)} is beyond 2262-04-11, the latest time "
            "gc images can record"
        )
    if assume_detected_at is not None:
        ref = s.now if s.now is not None else edges().clock()
        if assume_detected_at > ref + 5 * 60 * 1_000_000_000:
            raise BadInput(
                f"invalid --assume-detected-at: {ns_to_rfc3339(assume_detected_at)} is later "
                f"than now ({ns_to_rfc3339(ref)}); an image cannot be first detected in the future"
            )


@dataclass(frozen=True)
class ImagesPlanned(Planned):
    """The plan of `gc images` (`plan_images_on`): `imagefs` the image filesystem's host path,
    `containerfs` the container filesystem's (from the same `ImageFsInfo`), `fs` the image
    filesystem's figures when planned; `save(acting)` stores the image records this run saw (and,
    with --assume-detected-at, the assumed times only when `acting`) and notes what it
    stored."""

    imagefs: str = ""
    containerfs: str = ""  # where the writable layers live (`flow.fs_roles`), a host path
    fs: FsStats | None = None
    save: Callable[[bool], None] = lambda acting: None


def plan_images_on(
    s: Settings,
    policy: Any,
    client: CriClient,
    ui: Ui,
    *,
    may_remove: bool,
    pod_infra_image: str | None = None,
    assume_detected_at: int | None = None,
    concurrency: int = 4,
    root_dir: str = DEFAULT_ROOT_DIR,
) -> ImagesPlanned:
    """The plan of `gc images` on the node `client` reaches, with the image records of the
    state store (read here, saved by the returned `save`). `may_remove`: the run may act (a
    state store it cannot use then raises `StateUnavailable`, see `gc_images`). Errors as
    `gc_images`."""

    check_state_dir(s.state_dir)

    def store_unusable(exc: StateUnavailable) -> None:
        """Raise for a run that may remove (unless the disk is full); warn otherwise."""
        if may_remove and exc.full:
            # A full disk is when image GC is needed most: the removals go ahead; the audit
            # rows are tried again after them (exit 1 if they still cannot be written). Records
            # not saved only make the next run see these images as newly detected (safer).
            ui.warn(f"{exc}; image records are not saved; removals go ahead")
            return
        if may_remove:
            raise StateUnavailable(
                f"{exc}; a run that removes needs a writable --state-dir for its lock and "
                "audit log; nothing was removed (--dry-run plans without it)"
            ) from None
        ui.warn(f"{exc}; dry run goes on, image records are not saved")

    snap = observe_node(client, s.host_root, statuses="none", images=True, clock=edges().clock)
    now = _now(s, snap)
    imagefs = image_filesystem([f.mountpoint for f in snap.image_filesystems], snap.endpoint)
    fs = fs_stats(s.host_root, imagefs)
    kept_by_runtime = runtime_sandbox_images(client, s.host_root, s.runtime_config, ui.warn)
    if kept_by_runtime.status_error:
        if not pod_infra_image:
            raise SandboxImageUnreadable(kept_by_runtime.status_error)
        ui.warn(f"{kept_by_runtime.status_error}; the sandbox image protected is "
                "--pod-infra-container-image's")  # fmt: skip
    pause = kept_by_runtime.status_image
    mismatch = sandbox_image_mismatch(
        kubelet_pod_infra_image(s.host_root), kept_by_runtime.said(), snap.images
    )
    if pod_infra_image:
        kept_by_runtime.named.insert(0, NamedImage(pod_infra_image, KUBEGC_POD_INFRA_FLAG))
    protected = kept_by_runtime.protected_ids(snap.images)
    for named in kept_by_runtime.named:
        ui.info(f"kept if present: {named.reason}")
    # Only a run on the wall clock records (first sighting, last use): one with --now
    # reads the records and stores nothing, so a simulated time never reaches a later run.
    writable = s.now is None
    try:
        records, began = load_image_records(s.state_dir, now, ui.warn, read_only=not writable)
    except StateUnavailable as exc:
        if writable:
            store_unusable(exc)
        writable = False
        try:
            records, began = load_image_records(s.state_dir, now, ui.warn, read_only=True)
        except StateUnavailable as again:
            ui.warn(f"{again}; planning as on a first run")
            records, began = {}, now
    stored, stored_began = dict(records), began  # as read (see save_image_records' loaded)
    if assume_detected_at is not None:
        for i in snap.images:
            records.setdefault(i.id, ImageRecord(assume_detected_at))
        began = min(began, assume_detected_at)
    ip = plan_images(
        snap.images, snap.containers, records, policy, now,
        began=began, capacity=fs.capacity, available=fs.available, protected=protected,
        filesystem=imagefs, pinned_by=_own_pins(s, client, snap, ui),
    )  # fmt: skip

    def stored_now(acting: bool) -> bool:
        """Store what this run observed: with --assume-detected-at, the assumed times
        only when it acts (a dry run's plan uses them, a later run never sees them).
        True when stored."""
        if not writable:
            return False
        kept = ip.records
        if assume_detected_at is not None and not acting:
            kept = detect_images(snap.images, snap.containers, stored, now)
        try:
            save_image_records(s.state_dir, kept, ui.warn, began=stored_began, loaded=stored)
        except StateUnavailable as exc:
            store_unusable(exc)
            return False
        return True

    def save(acting: bool) -> None:
        kept_assumed = stored_now(acting) and acting
        plan.notes.extend(_records_notes(s.now, assume_detected_at, kept_assumed, records, stored))

    pulls = read_pull_records(s.host_root, root_dir, snap.images)
    unreadable = sorted({p.why for p in pulls.values() if p.why})
    for why in unreadable[:PULL_RECORDS_WARNED]:
        ui.warn(f"kubelet pull record unreadable: {why}")
    if len(unreadable) > PULL_RECORDS_WARNED:
        more = len(unreadable) - PULL_RECORDS_WARNED
        ui.warn(f"... and {more} more kubelet pull record(s) unreadable (not listed)")

    def action(d: Any, result: Result) -> ImageAction:
        r = d.record
        repull = repull_risk(d.image, pulls.get(d.image.id))
        return ImageAction(d.image, r.first_detected, r.last_used, d.rule, d.reason, result,
                           used_by=d.used_by, repull=repull)  # fmt: skip

    plan: Plan[ImageAction] = Plan(
        kind="ImageGCPlan",
        policy={
            **policy.to_dict(),
            "sandbox_image": pause or "",
            "pod_infra_container_image": pod_infra_image or "",
        },
        now=now,
        actions=[action(d, Result.PLANNED) for d in ip.remove],
        kept=[action(d, Result.KEPT) for d in ip.kept],
        notes=[
            f"image filesystem {fs.path}: {ip.usage_percent}% used "
            f"({format_bytes(fs.capacity - fs.available)} of {format_bytes(fs.capacity)}, "
            "reserved blocks count)",
            *ip.notes,
            *([mismatch] if mismatch else []),
            *([ESTIMATE_NOTE] if ip.remove else []),
        ],
        source=snap.endpoint,
    )
    plan.shortfall = ip.shortfall
    plan.filesystem = {
        "path": fs.path,
        "capacity": fs.capacity,
        "available": fs.available,
        "usage_percent": ip.usage_percent,
        "bytes_to_free": ip.bytes_to_free,
        "available_after": None,
        "regained": None,
    }

    def stages() -> list[Stage]:
        remover = ImageRemover(client, concurrency=concurrency)
        return [Stage(remover, ("image",))]

    layers = fs_roles(snap.image_filesystems, snap.container_filesystems)["containerfs"]
    return ImagesPlanned(plan, stages, imagefs=imagefs, containerfs=layers, fs=fs, save=save)


def _own_pins(s: Settings, client: CriClient, snap: NodeSnapshot, ui: Ui) -> dict[str, str]:
    """Image ID → "pinned by kubegc (images pin, <when>)" for the pinned images kubegc
    pinned (`policy.pins.own_pin_reasons`), from one `images List` of containerd's own API
    on the CRI socket — asked only when an image is pinned and the runtime reads containerd's
    pin label (containerd 1.7 on, `reads_pins`); {} otherwise (CRI-O, containerd 1.6: every
    pinned image stays "pinned by the runtime"), and when containerd does not answer (-v
    says why)."""
    if not any(i.pinned for i in snap.images) or not reads_pins(snap.runtime):
        return {}
    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from kubegc_cli.node.containerd.client import ContainerdImages

    try:
        with ContainerdImages(client.endpoint, timeout=s.timeout) as ctd:
            records = ctd.list_records()
    except RuntimeUnavailable as exc:
        ui.info(f"kubegc's own pins not told apart from the runtime's: {exc}")
        return {}
    return own_pin_reasons(snap.images, records)


def forget_removed_images(s: Settings, plan: Plan[Any], ui: Ui) -> None:
    """Drop the image records of the images `plan` removed (`state.forget_image_records`, as the
    kubelet's image GC does); a store that cannot be written is a warning (the removals are
    done; the records of images no longer listed go at the next run that saves)."""
    removed = [a.id for a in plan.actions if a.kind == "image" and a.result is Result.REMOVED]
    try:
        forget_image_records(s.state_dir, removed, ui.warn)
    except StateUnavailable as exc:
        ui.warn(f"{exc}; the records of the images removed are kept until the next run")


def _records_notes(
    now: int | None,
    assume_detected_at: int | None,
    assumed_stored: bool,
    records: dict[str, Any],
    stored: dict[str, Any],
) -> list[str]:
    """The notes of `gc images` on what it stored: nothing with --now (`now` given); with
    `assume_detected_at` (ns since the epoch), whether it was stored (`assumed_stored`) for
    the images without a record (`records` the planned ones, `stored` those read from the
    state store)."""

    notes = []
    if now is not None:
        notes.append("--now given: image records were read, none stored (only a run on the "
                     "wall clock records what it sees)")  # fmt: skip
    if assume_detected_at is not None:
        fresh = len(records.keys() - stored.keys())
        shown = ns_to_rfc3339(assume_detected_at)
        if assumed_stored:
            notes.append(f"--assume-detected-at {shown} stored as the first-detected time of "
                         f"{fresh} image(s) kubegc had no record of")  # fmt: skip
        else:
            notes.append(f"--assume-detected-at {shown} used for this plan only, stored for no "
                         "image (only a run that acts, on the wall clock, with a writable "
                         "--state-dir stores it)")  # fmt: skip
    return notes
