"""One `kubegc agent` cycle: observe the node once, run the configured checks from that
observation, report, and — in apply mode, when allowed — carry out the gc plans.

A cycle (`Agent.cycle`):

1. Opens the runtime once (the edges' CRI factory, `commands.flow.open_client`) and reads the
   pod source once; both are put in force for the checks (`commands.edges.using`): the
   runtime as an `ObservedCri` (`node.cri.observed`: each CRI list is asked once and shared,
   every removal refused), the pod source as the inventory read.
2. Runs `options.checks` in order — `evict` (the thresholds in force against the signals,
   judged with the eviction manager's memory across cycles, and the pods the kubelet would
   evict first), `df`, `residue` (`residue scan`), `gc` (the dry runs of `options.plans`:
   `gc all`, or the single commands, and `gc images`) — through the commands the CLI runs.
3. Apply mode only: inside `options.window`, with the circuit breaker closed (`breaker()`
   returns ""), and holding an apply slot (`slots.acquire()`, released after), it carries
   out `options.plans` through `gc all` / `gc images` with `options.act`'s caps and `yes`
   (so each re-check, the node lock and the audit rows are the CLI's), on a fresh
   observation under the node lock, and measures the bytes freed as the filesystems'
   available space before and after (statvfs; never negative). Before each plan and each
   removal (`edges().abandon`) the slot must still be held and the window still open: else
   no further removal starts (the one in flight finishes) and the last apply says why.
   Nothing is carried out after a cycle whose observation failed.
4. Builds the `NodeReport`, hands it to `write_report` when `should_write` says so (at most
   once a cycle), and the metrics samples (`agent.metrics`).

A runtime, API or host file that cannot be read makes the cycle fail — `CycleResult.error`,
one line, the first failure — and the next cycle tries again; the process never stops for it.
A stop signal (`KeyboardInterrupt`, `core.stop.Terminated`) passes through, also one that
interrupted a removal (after the removal was finished or abandoned as the CLI does, the slot
released, the last apply recorded as interrupted and one report write tried).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from kubegc_cli import __version__
from kubegc_cli.agent.metrics import (
    AGENT_METRICS,
    add,
    eviction_gauges,
    reclaimable_gauges,
)
from kubegc_cli.agent.observe import (
    Eviction,
    categories,
    check_eviction,
    evict_first,
    residue_counts,
)
from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.commands.df import DfOptions, DfReport, disk_usage
from kubegc_cli.commands.edges import Ui, using
from kubegc_cli.commands.flow import ActOptions, load_pod_inventory, open_client
from kubegc_cli.commands.gc import gc_all, gc_containers, gc_images, gc_logs, gc_sandboxes
from kubegc_cli.commands.residue import ResidueOptions, residue_scan
from kubegc_cli.core.errors import ExitCode, KubegcError, RuntimeUnavailable
from kubegc_cli.core.fleet import MAX_SOURCE, LastApply, NodeReport
from kubegc_cli.core.plan import Plan, Result
from kubegc_cli.core.pods import NO_POD_SOURCE, PodInventory
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.stop import Terminated
from kubegc_cli.core.units import ns_to_rfc3339
from kubegc_cli.node.cri.observed import ObservedCri
from kubegc_cli.node.diskusage import role_filesystems
from kubegc_cli.node.host.kubelet import kubelet_config_for
from kubegc_cli.node.pods.api import node_name
from kubegc_cli.policy.eviction.memory import EvictionMemory, Recalled, remember
from kubegc_cli.policy.fleet import parse_window, should_write
from kubegc_cli.policy.images import ImageGCPolicy, resolve_image_gc_settings
from kubegc_cli.report.metrics import Key, RunFacts, merge, render

#: The gc plans `gc all` carries out as one.
ALL = ("containers", "sandboxes", "logs")


class Slots(Protocol):
    """Apply slots (`node.fleet.leases.ApplySlots`): `acquire()` → the slot held, or None when
    every slot has a live holder; `renew(name)` → False once the slot is lost; `release`."""

    def acquire(self) -> str | None: ...

    def renew(self, name: str) -> bool: ...

    def release(self, name: str) -> None: ...


@dataclass(frozen=True, slots=True)
class CycleResult:
    """One cycle: the node's `report`; `samples` for `/metrics` (`report.metrics` keys, the
    counters summed over the agent's cycles); `duration` in seconds; `error` the first failure,
    one line ("" when the cycle succeeded; also in `report.error`); `written` whether
    `write_report` was called; `pending` the soft thresholds still in their grace period
    (expression → seconds left)."""

    report: NodeReport
    samples: dict[Key, float]
    duration: float
    error: str = ""
    written: bool = False
    pending: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.error

    def metrics_text(self) -> str:
        """`samples` in the Prometheus text format (`report.metrics.render`)."""
        return render(self.samples, AGENT_METRICS)


class Agent:
    """The cycles of one `kubegc agent` process (see the module doc).

    `settings` the global options (`--host-root`, `--state-dir`, the runtime endpoint, the pod
    source, `--timeout`, ...); `options` the agent's (`AgentOptions`); `ui` where diagnostics
    go. `write_report(report)` stores the node's report (`node.fleet.reports.write_report`;
    None: not stored); `slots` the apply slots (None: apply mode never acts, `paused` says
    so); `breaker()` the circuit breaker ("" closed, else why it is open; None: closed);
    `clock()` seconds since the epoch (the report's time, the eviction manager's memory, the
    window, the heartbeat); `last_apply` the last apply before this process (from the node's
    report), reported until this agent applies. Not thread-safe: one cycle at a time.
    """

    def __init__(
        self,
        settings: Settings,
        options: AgentOptions,
        ui: Ui,
        *,
        write_report: Callable[[NodeReport], None] | None = None,
        slots: Slots | None = None,
        breaker: Callable[[], str] | None = None,
        clock: Callable[[], float] = time.time,
        last_apply: LastApply | None = None,
    ) -> None:
        self._settings = settings
        self._options = options
        self._ui = ui
        self._write_report = write_report
        self._slots = slots
        self._breaker = breaker
        self._clock = clock
        self._memory: EvictionMemory = fresh_memory()
        self._runs: dict[Key, float] = {}  # kubegc's run and reclaim series, merged per run
        self._counters: dict[Key, float] = {}  # the agent's own counters
        self._last_apply = last_apply
        self._written: NodeReport | None = None
        self._written_at = 0.0
        for result in ("ok", "failed"):
            add(self._counters, "kubegc_agent_cycles_total", 0.0, {"result": result})
        add(self._counters, "kubegc_agent_apply_freed_bytes_total", 0.0, {})

    @property
    def settings(self) -> Settings:
        return self._settings

    @property
    def options(self) -> AgentOptions:
        return self._options

    def reconfigure(self, settings: Settings, options: AgentOptions) -> None:
        """A re-read policy: in force from the next cycle (a cycle running keeps its own)."""
        self._settings, self._options = settings, options

    def cycle(self) -> CycleResult:
        """Run one cycle (see the module doc). Never raises for an unreachable runtime or API,
        an unreadable host file or bad settings (the result's `error` says which); raises
        `KeyboardInterrupt` / `Terminated` for a stop signal."""
        s, o = self._settings, self._options
        began, mono = self._clock(), time.monotonic()
        run = _Cycle(s, o, self._ui)
        run.observe(self._memory, began)
        if run.eviction is not None:
            self._memory = run.eviction.memory
        paused = ""
        if o.mode == "apply":
            try:
                paused = self._maybe_apply(run, began)
            except KeyboardInterrupt:
                self._last_words(run, began)
                raise
        report = run.report(node_name(s.node_name), began, self._last_apply, paused)
        written = False
        if self._write_report is not None and should_write(
            report, self._written, last_write=self._written_at, now=began, heartbeat=o.heartbeat
        ):
            try:
                self._write_report(report)
            except KubegcError as exc:
                run.fail("report", exc)
                report = replace(report, error=run.error)
            else:
                written, self._written, self._written_at = True, report, began
        duration = time.monotonic() - mono
        for facts in run.facts:
            self._runs = merge(self._runs, facts)
        add(self._counters, "kubegc_agent_cycles_total", 1.0,
            {"result": "failed" if run.error else "ok"})  # fmt: skip
        samples = {**self._runs, **self._counters, **run.gauges(report)}
        samples[_gauge("kubegc_agent_last_cycle_duration_seconds")] = round(duration, 6)
        samples[_gauge("kubegc_agent_last_cycle_timestamp_seconds")] = round(began, 3)
        pending = dict(run.eviction.pending) if run.eviction else {}
        return CycleResult(report, samples, duration, run.error, written, pending)

    def _last_words(self, run: _Cycle, began: float) -> None:
        """A stop signal ended an apply: remember it (interrupted, what was removed) and try
        one report write, so the breaker and `kubegc fleet` see it."""
        if run.last_apply is None:
            return
        self._last_apply = run.last_apply
        if self._write_report is None:
            return
        report = run.report(node_name(self._settings.node_name), began, self._last_apply, "")
        try:
            self._write_report(report)
        except KubegcError as exc:
            self._ui.warn(f"report: {' '.join(str(exc).split())}")

    def _maybe_apply(self, run: _Cycle, now: float) -> str:
        """Apply mode: why no slot is taken now ("" when the plans were carried out, or the
        cycle failed before); the last apply is remembered for the reports."""
        o = run.o
        if run.error:
            return ""
        if run.planned == 0:  # the dry runs found nothing: no slot, no breaker read
            return ""
        try:  # judged now, right before acquiring: the checks may have taken a while
            why = outside_window(o, self._clock())
        except KubegcError as exc:  # a window that does not parse
            run.fail("apply", exc)
            return ""
        if not why and self._slots is None:
            why = "apply mode without apply slots: nothing is carried out"
        if why:
            return why
        assert self._slots is not None
        slots = self._slots
        try:
            name = slots.acquire()
        except KubegcError as exc:
            run.fail("apply slot", exc)
            return ""
        if name is None:
            n = o.apply_slots
            return f"all {n} apply slot(s) held by other nodes ({o.lease_namespace})"
        # The breaker is read holding a slot: only the nodes about to act read every node's
        # report, not every node every cycle.
        try:
            try:
                why = self._breaker() if self._breaker is not None else ""
            except KubegcError as exc:  # the reports cannot be read: do not act blind
                run.fail("apply", exc)
                return ""
            if why:
                return why
            applied = run.apply(
                lambda: _why_stop(lambda: slots.renew(name), o, self._clock), self._clock()
            )
        finally:
            try:
                slots.release(name)
            except KubegcError as exc:  # the Lease then expires by its duration
                run.fail("apply slot release", exc)
        add(self._counters, "kubegc_agent_apply_freed_bytes_total", float(applied.bytes_freed), {})
        self._last_apply = applied
        return ""


def _gauge(name: str) -> Key:
    return (name, ())


class _Cycle:
    """What one cycle found and did (see `Agent.cycle`)."""

    def __init__(self, s: Settings, o: AgentOptions, ui: Ui) -> None:
        self.s, self.o, self.ui = s, o, ui
        self.error = ""
        self.said: set[str] = set()  # the failures said this cycle (`fail`)
        self.facts: list[RunFacts] = []
        self.eviction: Eviction | None = None
        self.df: DfReport | None = None
        self.residue: dict[str, int] = {}
        self.pod_source = ""  # kubelet, api, file or none: where observe() read the pods
        self.observed: ObservedCri | None = None
        self.runtime_fs: list[tuple[str, str]] = []  # (role, mountpoint) of ImageFsInfo
        self.applied: list[Plan[Any]] = []
        self.planned: int | None = None  # removals the gc dry runs planned (None: not run)
        self.last_apply: LastApply | None = None  # what `apply` did, also when interrupted

    def fail(self, what: str, exc: BaseException | str) -> None:
        """Keep the first failure as the cycle's error (one line: `what: why`); say each
        failure once a cycle (every check that reads an unreachable runtime fails for it)."""
        line = " ".join(str(exc).split()) or type(exc).__name__
        if line not in self.said:
            self.said.add(line)
            self.ui.warn(f"{what}: {line}")
        if not self.error:
            self.error = f"{what}: {line}"

    def _ran(self, command: str, started: float, mono: float, code: int, result: Any) -> None:
        end = time.time()
        took = time.monotonic() - mono
        self.facts.append(
            RunFacts(command, int(code), started, end, took, result, trigger="periodic")
        )

    def _check(self, command: str, body: Callable[[], tuple[int, Any]]) -> Any:
        """Run one command of the cycle: its run for the metrics, a failure kept."""
        started, mono = time.time(), time.monotonic()
        try:
            code, result = body()
        except (KubegcError, OSError) as exc:
            self.fail(command, exc)
            code = exc.exit_code if isinstance(exc, KubegcError) else ExitCode.UNAVAILABLE
            self._ran(command, started, mono, code, None)
            return None
        self._ran(command, started, mono, code, result)
        return result

    # ---- observe ----

    def observe(self, memory: Any, now: float) -> None:
        """The checks of `options.checks` from one runtime observation and one pod source."""
        s, ui, o = self.s, self.ui, self.o
        client: Any = None
        lost: KubegcError | None = None
        try:
            client = open_client(s, ui)
        except KubegcError as exc:  # unreachable, or an endpoint that cannot be one
            lost = exc
            self.fail("runtime", exc)
        pods: PodInventory = NO_POD_SOURCE
        try:
            pods = load_pod_inventory(s, ui)
        except KubegcError as exc:
            self.fail("pod source", exc)
        self.pod_source = pods.source.split(":", 1)[0] if pods.known else "none"
        self.observed = ObservedCri(client) if client is not None else None

        def runtime(*_: Any) -> Any:
            if self.observed is None:
                assert lost is not None
                raise lost
            return self.observed

        try:
            with using(cri=runtime, pods=lambda *_: pods):
                for check in o.checks:
                    getattr(self, f"_{check}")(pods, memory, now)
            if o.mode == "apply" and self.observed is not None and not self.error:
                images, containers = self.observed.image_fs_info()
                self.runtime_fs = [("imagefs", f.mountpoint) for f in images]
                self.runtime_fs += [("containerfs", f.mountpoint) for f in containers]
        except RuntimeUnavailable as exc:
            self.fail("runtime", exc)
        finally:
            if client is not None:
                client.close()

    def _evict(self, pods: PodInventory, memory: Any, now: float) -> None:
        def body() -> tuple[int, Any]:
            self.eviction = check_eviction(
                self.s, self.ui, root_dir=self.o.root_dir, top=self.o.top, pods=pods,
                memory=memory, now=now, recall=recall,
            )  # fmt: skip
            return self.eviction.report.exit_code(), self.eviction.report

        self._check("evict check", body)
        unread = self.eviction.report.unread if self.eviction else {}
        if unread:  # a signal that could not be read is an unreadable host file
            signal, why = next(iter(unread.items()))
            self.fail("evict check", f"{signal} not observed: {why}")

    def _df(self, pods: PodInventory, memory: Any, now: float) -> None:
        opts = DfOptions(root_dir=self.o.root_dir, pod_logs_dir=self.o.pod_logs_dir, top=self.o.top)

        def body() -> tuple[int, Any]:
            self.df = disk_usage(self.s, self.ui, opts)
            return self.df.exit_code(), self.df

        self._check("df", body)
        if self.df is not None and (self.df.runtime_error or self.df.images_unknown):
            self.fail("df", self.df.runtime_error or self.df.images_unknown)

    def _residue(self, pods: PodInventory, memory: Any, now: float) -> None:
        opts = ResidueOptions(root_dir=self.o.root_dir, pod_logs_dir=self.o.pod_logs_dir)

        def body() -> tuple[int, Any]:
            plan = residue_scan(self.s, self.ui, opts)
            self.residue = residue_counts(plan)
            if plan.runtime_error:
                self.fail("residue scan", plan.runtime_error)
            return ExitCode.UNAVAILABLE if plan.runtime_error else ExitCode.OK, plan

        self._check("residue scan", body)

    def _gc(self, pods: PodInventory, memory: Any, now: float) -> None:
        # the whole plan, without the caps: they bound what an apply removes, and a dry run
        # removes nothing (in report mode a note "held back by --max-delete" every cycle
        # would say nothing true)
        dry = replace(self.o.act, dry_run=True, yes=False, max_delete=None, max_bytes=None)
        planned = 0
        for command, carry in self.plans():
            plan = self._check(command, _dry_run(carry, dry))
            planned += len(plan.actions) if isinstance(plan, Plan) else 0
        self.planned = planned

    def plans(self) -> list[tuple[str, Callable[[ActOptions], Plan[Any]]]]:
        """The commands that carry out `options.plans`, in the kubelet's order: `gc all` for
        containers, sandboxes and logs together, else each of them; then `gc images`."""
        s, o, ui = self.s, self.o, self.ui
        policy, scope = o.container_policy, o.scope
        out: list[tuple[str, Callable[[ActOptions], Plan[Any]]]] = []
        if all(p in o.plans for p in ALL):
            out.append(("gc all", lambda act: gc_all(s, policy, scope, o.pod_logs_dir, act, ui)))
        else:
            if "containers" in o.plans:
                out.append(("gc containers", lambda act: gc_containers(s, policy, scope, act, ui)))
            if "sandboxes" in o.plans:
                terminated = policy.include_terminated_pods
                out.append(
                    ("gc sandboxes", lambda act: gc_sandboxes(s, terminated, scope, act, ui))
                )
            if "logs" in o.plans:
                out.append(("gc logs", lambda act: gc_logs(s, o.pod_logs_dir, act, ui)))
        if "images" in o.plans:
            root = o.root_dir
            out.append(
                ("gc images", lambda act: gc_images(s, image_policy(s), act, ui, root_dir=root))
            )
        return out

    # ---- act ----

    def apply(self, abandon: Callable[[], str], now: float) -> LastApply:
        """Carry out the plans while `abandon()` says "" (asked before each plan and, through
        the edges, before each removal: the slot lost, the window ended — then no further
        removal starts, the one in flight finishes), within one budget of `options.act`'s
        caps for all the plans (each plan's caps less what the plans before it attempted),
        on the real runtime and pod source, measuring the filesystems before and after; `now`
        (seconds since the epoch) is when the apply began. A stop signal passes through,
        `last_apply` set first."""
        act = replace(self.o.act, dry_run=False, yes=True)
        unwritten: list[str] = []
        before = self._available()
        done: list[str] = []
        removed = failures = 0
        error = interrupted = ""
        stopped: list[str] = []

        def why_stop() -> str:  # the first reason, kept: once stopped, the apply stays stopped
            if not stopped:
                why = abandon()
                if why:
                    stopped.append(why)
            return stopped[0] if stopped else ""

        # one budget for the whole apply: each plan's caps are what the plans before left
        left_delete, left_bytes = act.max_delete, act.max_bytes
        with using(audit_unwritten=unwritten.append, abandon=why_stop):
            for command, carry in self.plans():
                if why_stop():
                    error = f"{stopped[0]}; later plans not carried out"
                    break
                started, mono = time.time(), time.monotonic()
                try:
                    plan = carry(replace(act, max_delete=left_delete, max_bytes=left_bytes))
                except KubegcError as exc:
                    self._ran(command, started, mono, exc.exit_code, None)
                    error = f"{command}: {' '.join(str(exc).split())}"
                    break
                except KeyboardInterrupt as exc:  # a stop while planning or re-checking
                    interrupted = getattr(exc, "signal_name", "SIGINT")
                    error = f"interrupted by {interrupted}"
                    break
                self.applied.append(plan)
                done.append(command)
                spent = [a for a in plan.actions if a.result in _SPENT]
                if left_delete is not None:
                    left_delete = max(0, left_delete - len(spent))
                if left_bytes is not None:
                    left_bytes = max(0, left_bytes - sum(a.planned_bytes for a in spent))
                counts = plan.counts()
                removed += counts["removed"]
                failures += counts["failed"]
                code = _exit_code(plan)
                self._ran(command, started, mono, code, plan)
                if plan.interrupted:
                    interrupted = plan.interrupted
                    error = f"interrupted by {interrupted}"
                    break
                if plan.runtime_lost:
                    error = f"{command}: {plan.runtime_lost}"
                    break
                if stopped:
                    error = f"{command}: {stopped[0]}; the removals not begun were not carried out"
                    break
        after = self._available()
        freed = sum(max(0, after[dev] - avail) for dev, avail in before.items() if dev in after)
        error = error or (unwritten[0] if unwritten else "")
        if error:
            self.fail("apply", error)
        at = ns_to_rfc3339(int(now * 1e9))
        self.last_apply = LastApply(at, tuple(done), removed, freed, failures, error)
        if interrupted:  # the stop signal passes through, the apply recorded
            raise Terminated if interrupted == "SIGTERM" else KeyboardInterrupt
        return self.last_apply

    def _available(self) -> dict[int, int]:
        """Device → available bytes (statvfs, as the kubelet reads it) of the filesystems an
        apply touches: the kubelet root, the pod log root, the image and container
        filesystems the runtime reports."""
        s, o = self.s, self.o
        logs = o.pod_logs_dir or kubelet_config_for(s).pod_logs_dir
        roles = [("nodefs", o.root_dir), ("logs", logs), *self.runtime_fs]
        notes: list[str] = []
        try:
            found = role_filesystems(s.host_root, roles, notes)
        except RuntimeUnavailable:
            return {}
        return {f.device: f.stats.available for f in found}

    # ---- report ----

    def report(
        self, node: str, now: float, last_apply: LastApply | None, paused: str
    ) -> NodeReport:
        """The node's report from what the checks found."""
        ev, df = self.eviction, self.df
        cats = tuple(categories(df)) if df is not None else ()
        ranking = ev.report.ranking if ev is not None else {}
        return NodeReport(
            node=node,
            observed_at=ns_to_rfc3339(int(now * 1e9)),
            mode=self.o.mode,
            version=__version__,
            categories=cats,
            reclaimable=df.reclaimable() if df is not None else 0,
            signals=tuple(ev.margins) if ev is not None else (),
            conditions=tuple(ev.conditions) if ev is not None else (),
            evict_first=tuple(evict_first(ranking, self.o.top)),
            residue=dict(self.residue),
            last_apply=last_apply,
            error=self.error,
            paused=paused,
            pod_source=self.pod_source,
            kubelet_config=self._kubelet_config_source(),
        )

    def _kubelet_config_source(self) -> str:
        try:
            return kubelet_config_for(self.s).source[:MAX_SOURCE]
        except KubegcError:  # said by the checks that read it
            return ""

    def gauges(self, report: NodeReport) -> dict[Key, float]:
        """This cycle's gauges: eviction margins, reclaimable bytes by category."""
        out = reclaimable_gauges(report.categories)
        if self.eviction is not None:
            out.update(eviction_gauges(self.eviction.report.results))
        return out


#: The actions that count against an apply's caps: attempted removals (a failed one may
#: still have happened: its outcome can be unknown).
_SPENT = (Result.REMOVED, Result.FAILED)


def _why_stop(renew: Callable[[], bool], o: AgentOptions, clock: Callable[[], float]) -> str:
    """Why an apply must start no further removal ("" to go on): the slot lost (`renew()`
    False, or it could not be renewed), or `clock()` past the apply window's end."""
    try:
        held = renew()
    except KubegcError:
        held = False
    if not held:
        return "the apply slot was lost"
    try:
        return outside_window(o, clock())
    except KubegcError as exc:
        return " ".join(str(exc).split())


def _dry_run(
    carry: Callable[[ActOptions], Plan[Any]], dry: ActOptions
) -> Callable[[], tuple[int, Any]]:
    return lambda: (ExitCode.OK, carry(dry))


def _exit_code(plan: Plan[Any]) -> int:
    """The exit code the CLI gives a carried-out plan (`cli.common.finish`): 3 when the runtime
    stopped answering before anything was removed, 1 for failures, else 0."""
    counts = plan.counts()
    if plan.runtime_lost:
        return ExitCode.FAILED if counts["removed"] else ExitCode.UNAVAILABLE
    return ExitCode.FAILED if counts["failed"] else ExitCode.OK


def image_policy(s: Settings) -> ImageGCPolicy:
    """The image GC policy as `gc images` takes it without flags: the kubelet config file's
    settings, else the kubelet's defaults. Raises `BadInput` for values the kubelet rejects."""
    kcfg = kubelet_config_for(s)
    settings = resolve_image_gc_settings({}, kcfg.image_gc, kcfg.source)
    policy = ImageGCPolicy(**settings.values)
    policy.validate(settings.names)
    return policy


# ---- the parts of the fleet policy this cycle uses (policy.eviction.memory, policy.fleet) ----


def fresh_memory() -> EvictionMemory:
    """The eviction manager's memory of an agent just started: nothing observed yet."""
    return EvictionMemory()


def recall(
    memory: EvictionMemory | None, results: Any, now: float, *, transition_period: float
) -> tuple[Recalled, EvictionMemory]:
    """This cycle's thresholds judged with the memory of the cycles before
    (`policy.eviction.memory.remember`): (what counts as met, the conditions held and the
    grace left; the memory for the next cycle)."""
    return remember(memory or EvictionMemory(), results, now, transition_period=transition_period)


def outside_window(o: AgentOptions, now: float) -> str:
    """Why `now` (seconds since the epoch) is outside the apply window ("" inside, and when
    no window is set; `policy.fleet.parse_window(...).contains(now)`). Raises `BadInput` for
    a window kubegc cannot read (the policy is checked when it is loaded)."""
    if not o.window or parse_window(o.window, o.window_timezone).contains(now):
        return ""
    return f"outside the apply window {o.window} ({o.window_timezone})"
