"""The flow every command shares: settings and edges in, plan out. No click, no rich.

Every command follows observe → plan → show → act → report. This module holds what they
share: how they may act (`ActOptions`, `Mode`, `decide_mode`, `may_act`: show, then ask or
not), how they act (`Stage`, `log_stages`, `carry_out`: under the node lock, audited), and
how they reach the node's outside — the CRI runtime (`open_client`), the pod source
(`load_pod_inventory`) and the clock — only through the edges (`kubegc_cli.commands.edges`:
`Edges`, `edges()`, `using()`, and the `Ui` protocol, re-exported here), read at call time.
`Settings` (the global options) is `kubegc_cli.core.settings`'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.model import Container, ContainerState, Image
from kubegc_cli.core.plan import (
    INTERRUPTED,
    REMOVAL_CONCURRENCY,
    Plan,
    Result,
    apply_caps,
    attach_layers,
    expected_bytes,
    measured_bytes,
    skip_planned,
)
from kubegc_cli.core.pods import NO_POD_SOURCE, PodInventory, load_pods_file
from kubegc_cli.core.residue import DEAD_CONTAINER, DEAD_SANDBOX, UNUSED_IMAGE
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import format_bytes
from kubegc_cli.node.cri.endpoint import Endpoint, resolve_endpoint
from kubegc_cli.node.execute.actions import (
    HALTED,
    LAST_WORDS_SECONDS,
    NOT_ATTEMPTED,
    Executor,
    Interrupted,
    LogRemover,
)
from kubegc_cli.node.host.fs import FsStats, fs_stats
from kubegc_cli.node.kubeletapi import kubelet_source, load_kubelet_inventory
from kubegc_cli.node.pods.api import (
    ApiSource,
    ApiUnavailable,
    find_credentials,
    load_api_inventory,
    node_name,
)
from kubegc_cli.node.state import (
    AuditLog,
    hold_run_lock,
    node_lock,
    release_run_lock,
    run_lock_held,
)

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient


@dataclass(frozen=True, slots=True)
class ActOptions:
    """How a destructive command may act: `dry_run`, `yes`, `concurrency` (parallel calls),
    and the blast-radius caps `max_delete` (removals) and `max_bytes` (planned bytes) — None
    is no cap; the actions beyond a cap are held back (`kubegc_cli.core.plan.apply_caps`)."""

    dry_run: bool = False
    yes: bool = False
    concurrency: int = REMOVAL_CONCURRENCY
    max_delete: int | None = None
    max_bytes: int | None = None


def load_pod_inventory(s: Settings, ui: Ui, *, needs_source: bool = False) -> PodInventory:
    """The run's desired pods: from the edges' pod source (`edges().pods`), else as
    `read_pod_source` finds them. Raises `BadInput` when `needs_source`
    (`--include-terminated-pods`) but no source is available."""
    pods = (edges().pods or read_pod_source)(s, ui)
    if needs_source and not pods.known:
        raise BadInput("--include-terminated-pods needs a pod source (--pods-file or the API)")
    return pods


def check_pod_source(s: Settings) -> None:
    """Refuse pod source options that contradict each other (`BadInput`, exit 2): a
    `--pods-file` with a `--pod-source` other than `file`; `--pod-source kubelet` without
    `--kubelet-url`. Asked by every run that reads pods, and by the agent at start-up and
    for every policy it reads (it would otherwise fail every cycle for it)."""
    if s.pods_file and s.pod_source not in (None, "file"):
        raise BadInput(f"--pods-file given with --pod-source {s.pod_source}; drop one of them")
    if s.pod_source == "kubelet" and not s.kubelet_url:
        raise BadInput("--pod-source kubelet needs --kubelet-url https://HOST:10250")


def read_pod_source(s: Settings, ui: Ui) -> PodInventory:
    """The pod source chosen by `--pod-source` / `--pods-file`, else found like kubectl does.

    Default: `file` with `--pods-file`; else `api` when a kubeconfig or in-cluster service
    account is found — first the kubelet's `/pods` when `--kubelet-url` is given, the API's
    field-selector list when the kubelet cannot be read — and if that API cannot be read, a
    warning and `none`; else `none`. An explicit `--pod-source api` or `kubelet` that cannot be
    read raises `ApiUnavailable` (exit 3). Raises `BadInput` for unusable files and
    contradictions.
    """
    check_pod_source(s)
    explicit = s.pod_source
    creds = find_credentials(s.kubeconfig, s.env)
    source = explicit or ("file" if s.pods_file else "api" if creds else "none")
    if source == "kubelet" or (source == "api" and not explicit and s.kubelet_url):
        kubelet = kubelet_source(s) if s.kubelet_url else None
        if kubelet is None:
            raise BadInput("--pod-source kubelet needs --kubelet-url https://HOST:10250")
        try:
            pods = load_kubelet_inventory(kubelet, s.timeout)
        except ApiUnavailable as exc:
            if explicit == "kubelet":
                raise
            ui.warn(f"{exc}; listing the node's pods through the API instead")
        else:
            ui.info(f"pod source: kubelet {kubelet.url}/pods, node {kubelet.api.node}")
            return pods
    if source == "none":
        return NO_POD_SOURCE
    if source == "file":
        if not s.pods_file:
            raise BadInput("--pod-source file needs --pods-file PATH")
        return load_pods_file(s.pods_file)
    if source != "api":
        raise BadInput(f"unknown --pod-source {source!r} (use none, file, api or kubelet)")
    if creds is None:
        raise BadInput("--pod-source api: no kubeconfig (--kubeconfig, KUBECONFIG, ~/.kube/config) "
                       "and no in-cluster service account")  # fmt: skip
    api = ApiSource(creds, s.context, node_name(s.node_name))
    ui.info(f"pod source: Kubernetes API ({creds}), node {api.node}")
    try:
        return load_api_inventory(api, s.timeout)
    except ApiUnavailable as exc:
        if explicit == "api":
            raise
        ui.warn(f"{exc}; going on without a pod source (no pod is treated as deleted)")
        return NO_POD_SOURCE


def open_client(s: Settings, ui: Ui) -> CriClient:
    """The run's CRI client: the edges' (`edges().cri`), else `connect_runtime`'s. Raises
    `RuntimeUnavailable` when the runtime cannot be reached."""
    return (edges().cri or connect_runtime)(s, ui)


def connect_runtime(s: Settings, ui: Ui) -> CriClient:
    """Resolve the endpoint (crictl's order), connect, and check it speaks CRI v1."""
    ep = resolve_endpoint(s.runtime_endpoint, s.env, s.host_root, s.runtime_endpoint_source)
    ui.info(f"runtime endpoint {ep.display} (from {ep.source})")
    return connect_at(s, ep)


def connect_at(s: Settings, ep: Endpoint) -> CriClient:
    """A gRPC CRI client to the endpoint `ep`, with the run's `--timeout` and receive limit:
    the one place kubegc makes one."""
    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from kubegc_cli.node.cri.client import CriClient

    return CriClient(ep, timeout=s.timeout, max_recv_bytes=s.max_recv_size)


class Mode(StrEnum):
    """How a destructive command proceeds once it has a plan."""

    DRY_RUN = "dry-run"
    ACT = "act"
    ASK = "ask"
    NO_TTY = "no-tty"  # would ask, but nobody can answer: a dry run that says so


def decide_mode(s: Settings, act: ActOptions, ui: Ui, *, node_wide: bool = True) -> Mode:
    """`--dry-run` and `--snapshot` plan only; `--yes` acts; else ask a terminal, or dry-run.

    A run that acts (`ACT`) checks its state dir and takes the node's run lock here
    (`kubegc_cli.node.state.hold_run_lock`: node-wide under `--host-root`'s `/run`, and in the
    state dir), before it observes, and keeps it until it has acted (`carry_out`) or decided
    not to (`may_act`), so its plan is made with no other run changing the node. A run that
    asks (`ASK`) checks the same here (another run holding the lock is told before the plan)
    but lets go of the lock while the question waits — a person may take minutes to answer,
    and a timer's run must not fail for it: `may_act` takes it again once they said yes, then
    observes again and re-checks the plan (`recheck_after_question`). Raises
    `BadInput` for `--snapshot` with `--yes` (a snapshot cannot be acted on) and for a state
    dir another user could change or holding a link; `Busy` (exit 4) when another run holds
    the lock past `s.lock_timeout`. `node_wide` False (a command that changes no node: `evict
    prune`) takes only the state dir's lock.
    """
    if s.snapshot is not None:
        if act.yes:
            raise BadInput("--snapshot plans from a file and cannot act; drop --yes")
        return Mode.DRY_RUN
    if act.dry_run:
        return Mode.DRY_RUN
    mode = Mode.ACT if act.yes else Mode.ASK if ui.interactive() else Mode.NO_TTY
    _after_question.clear()
    if mode is not Mode.NO_TTY:
        host_root = s.host_root if node_wide else None
        hold_run_lock(s.state_dir, s.lock_timeout, host_root=host_root, warn=ui.warn)
        if mode is Mode.ASK:
            release_run_lock()  # (not held while the question waits)

            def take() -> None:
                hold_run_lock(s.state_dir, s.lock_timeout, host_root=host_root, warn=ui.warn)

            _after_question.append(take)
    return mode


#: How a run that asks takes the node's run lock once the answer is yes (`decide_mode`).
_after_question: list[Callable[[], None]] = []


def may_act(
    mode: Mode,
    plan: Plan[Any],
    ui: Ui,
    noun: str,
    act: ActOptions | None = None,
    *,
    again: Callable[[], Plan[Any]] | None = None,
    where: str = "the node",
) -> bool:
    """Show-then-ask, as the mode says. True when the plan's actions should be carried out.

    First holds back what `act`'s caps do not allow (`apply_caps`; in every mode, so a dry
    run shows it). Sets `plan.dry_run` (and `plan.declined` when a person said no). A person's
    yes (`ASK`) takes the node's run lock (waiting up to --lock-timeout, else `Busy`), then
    plans again from a new observation (`again`: the command's own observe and plan, under
    the lock) and re-checks the plan asked about against it (`recheck_after_question`, which
    names `where` the change happened: the node, the API).
    Returning False lets go of the run lock.
    """
    if act is not None and apply_caps(plan, act.max_delete, act.max_bytes):
        ui.warn(plan.notes[-1])
    go = _decide(mode, plan, ui, noun)
    if go and mode is Mode.ASK:
        for take in _after_question:
            take()
        if again is not None:
            recheck_after_question(plan, again(), ui, where)
            go = any(a.result is Result.PLANNED for a in plan.actions)
    if not go:
        release_run_lock()
    return go


#: The most changes `recheck_after_question` lists one by one on stderr.
CHANGES_LISTED = 20


#: Kinds whose bytes are not compared for a change: a container's writable layer (the
#: runtime may report it late: containerd measures every 10 s; its log is compared), an
#: image (its ID is its content; its names are compared), a pod object (no node bytes).
_FIXED_SIZE = frozenset({"container", "image", "pod"})
#: The residue findings that are such runtime objects.
_FIXED_SIZE_FINDINGS = frozenset({DEAD_CONTAINER, DEAD_SANDBOX, UNUSED_IMAGE})


def names_added(was: Image, now: Image) -> list[str]:
    """The tags and repo digests image `now` has that `was` (the same image as seen before)
    did not, sorted: names that removing it would take too."""
    return sorted({*now.repo_tags, *now.repo_digests} - {*was.repo_tags, *was.repo_digests})


def changed_since(asked: Any, now: Any) -> str:
    """Why the object of action `asked` (as the question showed it) is not the one `now` (the
    same kind and ID, planned again) shows, or "" when it is the same: an image that gained a
    name (a tag or digest someone added: removing the image would take it too), a dead
    container whose log grew, or a directory whose bytes or latest change (`changed_ns`, its
    tree's newest mtime or ctime) differ (written to, emptied or refilled since: something
    still uses it, and the person agreed to other content)."""
    if asked.kind == "image":
        added = names_added(asked.image, now.image)
        return f"changed since the question: now also named {', '.join(added)}" if added else ""
    if asked.kind == "container":
        was, grown = asked.container.log_bytes, now.container.log_bytes
        if was is not None and grown is not None and grown > was:
            return (
                f"changed since the question: its log grew from {format_bytes(was)} to "
                f"{format_bytes(grown)}"
            )
        if asked.log_changed_ns and now.log_changed_ns > asked.log_changed_ns:
            return "changed since the question: its log was written to since"
        return ""
    if asked.kind in _FIXED_SIZE or getattr(asked, "type", "") in _FIXED_SIZE_FINDINGS:
        return ""
    if now.planned_bytes != asked.planned_bytes:
        return (
            f"changed since the question: {format_bytes(asked.planned_bytes)} then, "
            f"{format_bytes(now.planned_bytes)} now"
        )
    was, since = getattr(asked, "changed_ns", 0), getattr(now, "changed_ns", 0)
    if was and since > was:  # a write within the same blocks, a file replaced
        return "changed since the question: written to since"
    return ""


def recheck_after_question(
    plan: Plan[Any], fresh: Plan[Any], ui: Ui, where: str = "the node"
) -> list[str]:
    """Re-check the plan a person said yes to against `fresh`, planned again from what
    `where` holds now (under the run lock), and say what changed, before anything is removed.

    An action of `plan` still PLANNED whose object `fresh` no longer selects is skipped, its
    error saying why: "no longer selected since the question: <the rule that keeps it now>"
    (in `fresh.kept`), or "gone since the question"; so is one whose object changed
    (`changed_since`: an image with a name more, a directory that grew). An object `fresh`
    selects that `plan` did not is not removed — nobody was asked about it — and a note
    says how many (run again to see them). Objects are matched by kind and ID. Returns the
    lines said (each change, at most `CHANGES_LISTED` of them, then how many more; empty
    when nothing changed); the executors still re-check each object right before removing
    it."""
    selected = {(a.kind, a.id): a for a in fresh.actions}
    kept = {(k.kind, k.id): k for k in fresh.kept}
    changes: list[str] = []
    for a in plan.actions:
        key = (a.kind, a.id)
        if a.result is not Result.PLANNED:
            continue
        if key in selected:
            why = changed_since(a, selected[key])
            if not why:
                continue
        elif (k := kept.get(key)) is not None:
            why = f"no longer selected since the question: {k.reason or k.rule}"
        else:
            why = "gone since the question"
        a.result, a.error = Result.SKIPPED, why
        changes.append(f"{a.kind} {a.id}: {why}; not removed")
    asked = {(a.kind, a.id) for a in plan.actions}
    new = [a for a in fresh.actions if (a.kind, a.id) not in asked]
    if new:
        note = (
            f"{len(new)} object(s) selected since the question were not asked about and are "
            "not removed (run again to see them)"
        )
        plan.notes.append(note)
        changes += [f"{a.kind} {a.id}: selected since the question ({a.rule}); not removed"
                    for a in new]  # fmt: skip
    said = changes[:CHANGES_LISTED]
    if len(changes) > CHANGES_LISTED:
        said.append(f"... and {len(changes) - CHANGES_LISTED} more change(s) (see the result)")
    if said:
        ui.warn(f"{where} changed while the question waited:")
        for line in said:
            ui.warn(f"  {line}")
    else:
        ui.info("observed again under the node lock: the plan is unchanged")
    return said


def _decide(mode: Mode, plan: Plan[Any], ui: Ui, noun: str) -> bool:
    """`may_act` once the caps are applied: only PLANNED actions count as to be done."""
    todo = sum(1 for a in plan.actions if a.result is Result.PLANNED)
    if mode is Mode.NO_TTY and todo:
        ui.warn("not a terminal and no --yes: dry run only, nothing removed (add --yes to act)")
    if mode in (Mode.DRY_RUN, Mode.NO_TTY):
        return False
    plan.dry_run = False  # a run that acts, or would have: shown as what is about to happen
    if mode is Mode.ASK and todo:
        ui.show_plan(plan)
        if not ui.confirm(f"Remove {todo} {noun}(s)?"):
            plan.dry_run, plan.declined = True, True
            ui.warn("declined; nothing removed")
            return False
    return bool(todo)


@dataclass(frozen=True)
class Stage:
    """One step of acting: an executor for the actions of `kinds`, and an optional re-check of
    the plan as a whole right before it runs."""

    executor: Executor[Any]
    kinds: tuple[str, ...]
    recheck: Callable[[], None] | None = None


def log_stages(remover: LogRemover, links_recheck: Callable[[], None] | None = None) -> list[Stage]:
    """Pod log directories, then legacy links (`links_recheck` first): a link into a
    directory removed in the same run dangles only once the directory is gone."""
    return [Stage(remover, ("pod-log-dir",)), Stage(remover, ("log-symlink",), links_recheck)]


def fs_entries(stats: Mapping[str, FsStats]) -> list[dict[str, Any]]:
    """`Plan.filesystems` from statvfs figures by role (`stats`: role → `FsStats`): one entry
    per distinct filesystem (by device), its roles in the order given, `available_after` and
    `regained` None (not measured yet)."""
    out: dict[int, dict[str, Any]] = {}
    for role, st in stats.items():
        entry = out.setdefault(
            st.device,
            {
                "roles": [],
                "path": st.path,
                "capacity": st.capacity,
                "available_before": st.available,
                "available_after": None,
                "regained": None,
            },
        )
        entry["roles"].append(role)
    return list(out.values())


def stats_of(s: Settings, paths: Mapping[str, str], ui: Ui) -> dict[str, FsStats]:
    """statvfs (`node.host.fs.fs_stats`, bounded by --timeout) of each role's host path
    (`paths`: role → host path, "" for none); a filesystem that cannot be read is left out
    and -v says so (it is not measured; the run goes on)."""
    out: dict[str, FsStats] = {}
    for role, path in paths.items():
        if not path:
            continue
        try:
            out[role] = fs_stats(s.host_root, path)
        except RuntimeUnavailable as exc:
            ui.info(f"{role} {path} not measured: {exc}")
    return out


def runtime_fs_paths(client: Any, ui: Ui) -> dict[str, str]:
    """The runtime's image and container filesystems (CRI `ImageFsInfo`, host paths) as
    roles for `carry_out`'s `measure`: `imagefs` the first image filesystem, `containerfs`
    the first container filesystem (else the image filesystem: where writable layers live).
    Empty when the runtime does not say (-v says why)."""
    try:
        images, containers = client.image_fs_info()
    except RuntimeUnavailable as exc:
        ui.info(f"the runtime's filesystems not measured: {exc}")
        return {}
    return fs_roles(images, containers)


def fs_roles(images: Sequence[Any], containers: Sequence[Any]) -> dict[str, str]:
    """The roles of the runtime's filesystems as CRI `ImageFsInfo` gives them (each with a
    `mountpoint`, a host path): `imagefs` the first image filesystem, `containerfs` the first
    container filesystem, else the image filesystem (where writable layers live)."""
    image = images[0].mountpoint if images else ""
    return {"imagefs": image, "containerfs": containers[0].mountpoint if containers else image}


def writable_layers_for(
    containers: Iterable[Container], client: Any
) -> tuple[dict[str, tuple[int | None, int | None]] | None, str]:
    """The writable layers to plan `containers` with (CRI `ListContainerStats`, one call,
    made only when one of them is dead: `policy.containers.plan_containers`' `layers`), and
    "" or the note to add when the runtime did not answer (the layers are then unknown, None,
    and count 0)."""
    if all(c.state is ContainerState.RUNNING for c in containers):
        return {}, ""
    try:
        return client.writable_layers(), ""
    except RuntimeUnavailable as exc:
        return None, f"writable layers unknown ({exc}): the bytes expected count the logs alone"


def add_writable_layers(plan: Plan[Any], client: Any, ui: Ui) -> None:
    """Give the container actions of `plan` (planned and kept) their writable layers (CRI
    `ListContainerStats`, one call: `core.plan.attach_layers`), so that what the plan expects
    to free counts them as `kubegc df` does (a saved plan applied). A runtime that does not
    answer leaves them unknown (counted 0) and a note says so."""
    rows = [a for a in [*plan.actions, *plan.kept] if a.kind == "container"]
    if not rows:
        return
    layers, why = writable_layers_for([a.container for a in rows], client)
    if layers is None:
        plan.notes.append(why)
        return
    attach_layers(rows, layers)


def measure_after(s: Settings, plan: Plan[Any], paths: Mapping[str, str], ui: Ui) -> None:
    """statvfs of each filesystem of `plan.filesystems` again, by its first role's path in
    `paths`: `available_after` and `regained` (bytes; never < 0). A filesystem that cannot be
    read now keeps `regained` None."""
    after = stats_of(s, {e["roles"][0]: paths[e["roles"][0]] for e in plan.filesystems}, ui)
    for entry in plan.filesystems:
        st = after.get(entry["roles"][0])
        if st is not None:
            entry["available_after"] = st.available
            entry["regained"] = max(0, st.available - entry["available_before"])


def carry_out(
    s: Settings,
    plan: Plan[Any],
    stages: list[Stage],
    command: str,
    ui: Ui,
    at: int | None = None,
    *,
    measure: Mapping[str, str] | None = None,
) -> None:
    """Act under the node lock, stage by stage (the kubelet's order), appending each action's
    audit row as it completes (`AuditLog`, stamped `at`, ns since the epoch; default the
    plan's time), and the rows of the actions never attempted at the end.

    `measure` (role → host path: the filesystems the plan's objects live on) has each
    filesystem's available bytes read (statvfs) right before the first stage and after the
    last (`plan.filesystems`: `fs_entries`, `measure_after`), and the run's bytes expected
    and measured (`Plan.summary`) written with its audit rows, where `kubegc history` reads
    them. A full disk under
    the state dir does not stop the removals: rows wait in memory and are tried again, and if
    they still cannot be written a note says so and the edges' report hears it
    (`edges().audit_unwritten`: the run ends with exit 1).

    Once `edges().abandon()` names a reason (asked before each stage and each removal), no
    further removal starts: those in flight finish, the rest are skipped with the reason.
    After an interrupt, later stages start nothing: their actions are marked skipped. So
    once the runtime stopped answering (`plan.runtime_lost`, the message): a stage's re-check
    could not ask it, or a stage's executor gave up on it (`Executor.runtime_gone`). The run
    is reported and audited as far as it went (`finish` makes it exit 3 if nothing was
    removed, else 1).
    """
    held = run_lock_held(s.state_dir)
    progress = getattr(ui, "progress", None)
    todo_total = sum(1 for a in plan.actions if a.result is Result.PLANNED)
    lock = node_lock(s.state_dir, s.lock_timeout, host_root=s.host_root, warn=ui.warn)
    with (
        nullcontext() if held else lock,
        progress(todo_total) if progress else nullcontext() as bar,
    ):
        audit = AuditLog(s.state_dir, command, plan.now if at is None else at, ui.warn,
                         info=ui.info)  # fmt: skip
        advance = getattr(bar, "advance", None)

        def done(a: Any) -> None:  # from the executors' worker threads
            audit.add(a)
            if advance is not None:
                advance(a)

        def last_words() -> None:  # at a second stop signal: the audit rows as things stand
            skip_planned(plan.actions, INTERRUPTED)
            audit.finish(plan.actions, delays=(), timeout=LAST_WORDS_SECONDS)

        abandon = edges().abandon
        paths = dict(measure or {})
        if paths:
            plan.filesystems = fs_entries(stats_of(s, paths, ui))
        for stage in stages:
            stage.executor.on_done = done
            stage.executor.on_start = audit.begin
            stage.executor.last_words = last_words
            stage.executor.abandon = abandon
            todo = [a for a in plan.actions if a.kind in stage.kinds and a.result is Result.PLANNED]
            if plan.interrupted or plan.runtime_lost:
                skip_planned(todo, INTERRUPTED if plan.interrupted else HALTED)
                continue
            why = abandon()
            if why:
                skip_planned(todo, f"{NOT_ATTEMPTED}{why}")
                continue
            if stage.recheck is not None:
                try:
                    stage.recheck()
                except RuntimeUnavailable as exc:  # what earlier stages did is still reported
                    plan.runtime_lost = str(exc)
                    skip_planned(todo, HALTED)
                    continue
                todo = [a for a in todo if a.result is Result.PLANNED]
            began = time.monotonic()
            try:
                stage.executor.run(todo)
            except Interrupted as exc:
                plan.interrupted = exc.signal_name
            plan.runtime_lost = stage.executor.runtime_gone  # later stages start nothing
            if todo:
                ui.info(_stage_rate(stage, todo, time.monotonic() - began))
        if paths:
            measure_after(s, plan, paths, ui)
        totals = (expected_bytes(plan.actions), measured_bytes(plan.filesystems), plan.filesystems)
        try:
            audit.finish(plan.actions, totals=totals)
        except Exception as exc:  # the audit log must never undo a finished run: say it, exit 1
            message = f"audit rows of this run not written to --state-dir {s.state_dir}: {exc}"
            plan.notes.append(message)
            edges().audit_unwritten(message)
    if held:
        release_run_lock()


def _stage_rate(stage: Stage, done: list[Any], seconds: float) -> str:
    """The -v line for one finished stage: how many actions, how long, the rate (what an
    operator watching a big cleanup, or a benchmark of removal throughput, wants)."""
    removed = sum(1 for a in done if a.result is Result.REMOVED)
    rate = len(done) / seconds if seconds > 0 else 0.0
    return (
        f"{'/'.join(stage.kinds)}: {len(done)} acted on in {seconds:.3f} s ({rate:.1f}/s, "
        f"{removed} removed) at --concurrency {stage.executor.concurrency}"
    )
