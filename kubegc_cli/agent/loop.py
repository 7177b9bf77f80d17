"""The `kubegc agent` process around its cycle: when each cycle starts, what the policy file
says before it, what a failed cycle or a stop signal does, and the state `/metrics`,
`/healthz` and `/readyz` answer from (`LoopState`).

Timing. The first cycle starts `policy.fleet.first_delay(interval, u)` seconds after the loop
begins (u uniform in [0, 1): between half an interval and one and a half, so that a fleet started in
one rollout never cycles in step). Then one cycle every `interval`, measured start to start
on the monotonic clock: each start is the previous scheduled start plus the interval, so a
late wake-up is not carried into the next one; a cycle that runs longer than the interval is
followed by the next at once, and never by two at a time (the missed starts are not made up).

A failed cycle (`error` set, or an exception out of the cycle) is one line on stderr and is
retried at the next start; the process never exits for it.

The policy (kubegc's config file) is read again before each cycle (`PolicyFile.refresh`): a
new content that resolves is handed to the cycle (`reconfigure`); one that does not is one
line on stderr, one `PolicyRejected` Event with `--events`, and `/readyz` 503 until the file
is fixed, while the last good policy stays in force. Content is compared by its SHA-256, not
the modification time: the kubelet updates a mounted ConfigMap by swapping a symlink.

Stop signals (`kubegc_cli.core.stop`, as every kubegc command): a SIGTERM or SIGINT while
waiting ends the wait at once; one during a cycle reaches the cycle's removals as it reaches a
command's (calls in flight finish, the rest is not attempted), and the loop ends when the
cycle returns. A second signal ends the process at once.
"""

from __future__ import annotations

import hashlib
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.core import stop
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import read_text
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import format_duration
from kubegc_cli.policy.fleet import first_delay
from kubegc_cli.render.log import LOG
from kubegc_cli.report.events import policy_rejected, post_events
from kubegc_cli.report.metrics import sample_value

#: Cycle timeout when none is given: how long a cycle may run before `/healthz` says the loop
#: is stuck (added to twice the interval).
CYCLE_TIMEOUT = 600.0


@dataclass(frozen=True, slots=True)
class Policy:
    """What one content of the policy file resolves to: the global `settings`, the agent's
    `options`, and `cycle_timeout` (seconds a cycle may run before `/healthz` fails)."""

    settings: Settings
    options: AgentOptions
    cycle_timeout: float = CYCLE_TIMEOUT


class Outcome(Protocol):
    """What the loop reads of a finished cycle (`agent.cycle.CycleResult`): `error` ("" when
    the cycle succeeded, else one line), `duration` (seconds) and `metrics_text()` (Prometheus
    text format)."""

    @property
    def error(self) -> str: ...

    @property
    def duration(self) -> float: ...

    def metrics_text(self) -> str: ...


class Cycle(Protocol):
    """The agent's cycle as the loop drives it (`agent.cycle.Agent`): `cycle()` observes the
    node once, runs the checks and reports; a runtime or API that is down is an `error` in
    the outcome, not an exception. `reconfigure` hands it a new policy for the next cycle."""

    def cycle(self) -> Outcome: ...

    def reconfigure(self, settings: Settings, options: AgentOptions) -> None: ...


def _seconds(seconds: float) -> str:
    """`12m`, `3h4m` (kubectl's ages); below two minutes `0.7s`, `95.0s`."""
    return format_duration(seconds) if seconds >= 120 else f"{seconds:.1f}s"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Refresh:
    """What `PolicyFile.refresh` found: `policy` a new one to put in force (None: keep the
    one in force), `error` why the file's content is not in force ("" when it is), `news`
    True when that error is new (say it once)."""

    policy: Policy | None = None
    error: str = ""
    news: bool = False


class PolicyFile:
    """The policy file at `path`, read before each cycle; `resolve(text)` turns its content
    into a `Policy` or raises `BadInput` naming the bad value (`kubegc_cli.cli.agent`)."""

    def __init__(self, path: Path, resolve: Callable[[str], Policy]) -> None:
        self.path = path
        self.resolve = resolve
        self.digest = ""  # SHA-256 of the content in force
        self.rejected = ""  # of the content last rejected (its error already said)
        self.error = ""

    def load(self) -> Policy:
        """The policy at start-up. Raises `BadInput` (nothing good to keep yet)."""
        text = read_text(self.path, "policy")
        policy = self.resolve(text)
        self.digest, self.rejected, self.error = _digest(text), "", ""
        return policy

    def refresh(self) -> Refresh:
        """Read the file again: a changed content that resolves is the new policy; a content
        that does not (or a file that cannot be read) keeps the one in force, with the error.
        Never raises `BadInput`."""
        try:
            text = read_text(self.path, "policy")
        except BadInput as exc:
            return self._reject(f"unreadable: {exc}", str(exc))
        digest = _digest(text)
        if digest == self.digest:
            self.rejected, self.error = "", ""
            return Refresh()
        if digest == self.rejected:
            return Refresh(error=self.error)
        try:
            policy = self.resolve(text)
        except BadInput as exc:
            return self._reject(digest, str(exc))
        self.digest, self.rejected, self.error = digest, "", ""
        return Refresh(policy=policy)

    def _reject(self, digest: str, error: str) -> Refresh:
        news = digest != self.rejected
        self.rejected, self.error = digest, self.reason(error)
        return Refresh(error=self.error, news=news)

    def reason(self, error: str) -> str:
        """One line for `/readyz`, the log and the Event: `policy <path>: <error>; keeping the
        last good policy` (the error's own mention of the file dropped)."""
        for prefix in (f"config file {self.path}: ", f"cannot read policy {self.path}: "):
            error = error.removeprefix(prefix)
        return f"policy {self.path}: {error}; keeping the last good policy"


class LoopState:
    """What the loop did, for the HTTP endpoints (read from their threads; every method holds
    the lock only to copy a few fields, so no request waits on a cycle). Times of `clock`
    (monotonic seconds) and `wall` (Unix seconds)."""

    def __init__(
        self,
        interval: float,
        cycle_timeout: float = CYCLE_TIMEOUT,
        *,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.clock, self.wall = clock, wall
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.interval = interval
        self.cycle_timeout = cycle_timeout
        self.began = clock()
        self.began_wall = wall()
        self.alive = True
        self.last_start: float | None = None
        self.last_start_wall = 0.0
        self.last_duration = 0.0
        self.last_error = ""
        self.finished = 0
        self.failures = 0
        self.reloads = 0
        self.policy_error = ""
        self.metrics = ""

    def started(self) -> None:
        """A cycle starts now."""
        with self._lock:
            self.last_start, self.last_start_wall = self.clock(), self.wall()

    def ended(self, error: str, duration: float, metrics: str) -> None:
        """The cycle that started last ended (`error` "" when it succeeded)."""
        with self._lock:
            self.finished += 1
            self.failures += bool(error)
            self.last_error, self.last_duration = error, duration
            if metrics:
                self.metrics = metrics

    def policy(self, error: str, *, reloaded: bool = False, interval: float | None = None,
               cycle_timeout: float | None = None) -> None:  # fmt: skip
        """The policy file's state: `error` why its content is not in force ("" when it is);
        `reloaded` a new content was put in force, with its `interval` and `cycle_timeout`."""
        with self._lock:
            self.policy_error = error
            self.reloads += reloaded
            if interval is not None:
                self.interval = interval
            if cycle_timeout is not None:
                self.cycle_timeout = cycle_timeout

    def stop(self) -> None:
        """End the loop: its wait ends at once; a cycle in progress finishes first."""
        self._stop.set()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wait(self, seconds: float) -> None:
        """Sleep `seconds`, or until `stop()` (the loop's default sleeper). A stop signal
        raises out of it at once (`kubegc_cli.core.stop`)."""
        self._stop.wait(seconds)

    def ended_loop(self) -> None:
        with self._lock:
            self.alive = False

    def health(self) -> tuple[bool, str]:
        """(`/healthz` is 200, the reason): the loop is alive and its last cycle started —
        or, before the first, the loop began — within 2 × interval + cycle timeout."""
        with self._lock:
            alive, started = self.alive, self.last_start
            budget = 2 * self.interval + self.cycle_timeout
        if not alive:
            return False, "the agent's loop has ended"
        age = self.clock() - (self.began if started is None else started)
        if age > budget:
            what = "no cycle started" if started is None else "the last cycle started"
            return False, (
                f"{what} {_seconds(age)} ago, more than 2 × interval + cycle timeout "
                f"({_seconds(budget)}): the loop is stuck"
            )
        return True, "ok"

    def readiness(self) -> tuple[bool, str]:
        """(`/readyz` is 200, the reason): the policy in force is the file's current content
        (from the start: a DaemonSet's rollout waits on its pods' readiness, and the first
        cycle comes only after 0.5 to 1.5 intervals; whether cycles succeed is `/healthz`'s
        and the report's to say)."""
        with self._lock:
            error = self.policy_error
        if error:
            return False, error
        return True, "ok"

    def metrics_text(self) -> str:
        """The last cycle's metrics followed by the process's own (Prometheus text 0.0.4):
        `kubegc_agent_loop_*` (the cycles as the loop ran them, an exception out of a cycle
        counted as a failure), `kubegc_agent_start_time_seconds`,
        `kubegc_agent_interval_seconds`, `kubegc_agent_policy_in_force` and
        `kubegc_agent_policy_reloads_total`."""
        with self._lock:
            rows = [
                ("kubegc_agent_start_time_seconds", "gauge",
                 "When the agent process started (Unix seconds).", self.began_wall),
                ("kubegc_agent_loop_cycles_total", "counter",
                 "Cycles the agent finished, failed ones included.", self.finished),
                ("kubegc_agent_loop_failed_cycles_total", "counter",
                 "Cycles that failed (retried at the next interval).", self.failures),
                ("kubegc_agent_loop_last_start_timestamp_seconds", "gauge",
                 "When the last cycle started (Unix seconds; 0 before the first).",
                 self.last_start_wall),
                ("kubegc_agent_loop_last_duration_seconds", "gauge",
                 "How long the last finished cycle ran.", self.last_duration),
                ("kubegc_agent_loop_last_success", "gauge",
                 "1 when the last finished cycle succeeded, else 0.",
                 int(self.finished > 0 and not self.last_error)),
                ("kubegc_agent_interval_seconds", "gauge",
                 "The interval between cycle starts.", self.interval),
                ("kubegc_agent_policy_in_force", "gauge",
                 "1 when the policy in force is the policy file's content, 0 while the file "
                 "is rejected.", int(not self.policy_error)),
                ("kubegc_agent_policy_reloads_total", "counter",
                 "New policy file contents put in force.", self.reloads),
            ]  # fmt: skip
            head = self.metrics
        out = [head.rstrip("\n") + "\n"] if head.strip() else []
        # (a family the cycle already wrote is not written twice: a scrape would fail)
        taken = {line.split()[2] for line in head.splitlines() if line.startswith("# TYPE ")}
        for name, kind, text, value in rows:
            if name not in taken:
                out.append(
                    f"# HELP {name} {text}\n# TYPE {name} {kind}\n{name} {sample_value(value)}\n"
                )
        return "".join(out)


@dataclass(frozen=True, slots=True)
class Ending:
    """How the loop ended: `signal` "SIGTERM" or "SIGINT" when a stop signal ended it ("" when
    `--once` or `LoopState.stop` did), `failed` whether the last finished cycle failed,
    `cycles` how many started (one a stop signal left unfinished included)."""

    signal: str = ""
    failed: bool = False
    cycles: int = 0


def _received() -> int | None:
    return stop.received


def _say(level: str, message: str) -> None:
    LOG.emit(level, message)


def run_loop(
    agent: Cycle,
    policy: Policy,
    state: LoopState,
    *,
    watch: PolicyFile | None = None,
    sleep: Callable[[float], None] | None = None,
    draw: Callable[[], float] = random.random,
    received: Callable[[], int | None] = _received,
    say: Callable[[str, str], None] = _say,
) -> Ending:
    """Run `agent`'s cycles as the module doc says, under `policy` (re-read from `watch`
    before each cycle), until `--once`'s one cycle, a stop signal or `state.stop()`.

    `sleep(seconds)` waits (default `state.wait`), `draw()` is u in [0, 1) for the first
    delay, `received()` the stop signal received so far (`core.stop.received`), `say(level,
    message)` one stderr line. Never raises for a failed cycle; returns the `Ending`."""
    wait = state.wait if sleep is None else sleep
    cycles, failed = 0, False
    try:
        if policy.options.once:
            failed = _one_cycle(agent, state, say, once=True)
            return Ending(_signal(received), failed, 1)
        due = state.clock() + first_delay(policy.options.interval, draw())
        while not state.stopping:
            left = due - state.clock()
            if left > 0:
                wait(left)
            if state.stopping:
                break
            if watch is not None:
                policy = _refresh(agent, policy, watch, state, say)
            cycles += 1
            failed = _one_cycle(agent, state, say)
            if received() is not None:
                break
            due += policy.options.interval
            due = max(due, state.clock())  # overran: the next starts now, never two at once
        return Ending(_signal(received), failed, cycles)
    except KeyboardInterrupt as exc:  # a stop signal while waiting (or `Terminated`)
        return Ending(getattr(exc, "signal_name", "SIGINT"), failed, cycles)
    finally:
        state.ended_loop()


def _signal(received: Callable[[], int | None]) -> str:
    signum = received()
    return "" if signum is None else stop.name_of(signum)


def _one_cycle(
    agent: Cycle, state: LoopState, say: Callable[[str, str], None], *, once: bool = False
) -> bool:
    """Run one cycle; True when it failed (said in one line: when the next cycle retries, or
    nothing about retrying with `once`)."""
    state.started()
    began = state.clock()
    try:
        outcome = agent.cycle()
        error = outcome.error
        metrics = _metrics_of(outcome, say)
    except Exception as exc:  # a cycle must not end the process; a stop signal still does
        error = f"{type(exc).__name__}: {exc}"
        metrics = ""
    duration = state.clock() - began
    state.ended(error, duration, metrics)
    if error:
        said = " ".join(error.split())
        then = "" if once else f"; retrying in {format_duration(state.interval)}"
        say("error", f"cycle failed after {duration:.1f}s: {said}{then}")
    return bool(error)


def _metrics_of(outcome: Outcome, say: Callable[[str, str], None]) -> str:
    try:
        return outcome.metrics_text()
    except Exception as exc:  # the cycle's result stands; only its metrics are missing
        say("warning", f"cycle metrics not rendered: {type(exc).__name__}: {exc}")
        return ""


def _refresh(
    agent: Cycle,
    policy: Policy,
    watch: PolicyFile,
    state: LoopState,
    say: Callable[[str, str], None],
) -> Policy:
    """The policy for the next cycle: the file's new content when it resolves, else the one
    in force (a new rejection said once, and posted as an Event with `--events`)."""
    found = watch.refresh()
    if found.policy is not None:
        new = found.policy
        agent.reconfigure(new.settings, new.options)
        state.policy("", reloaded=True, interval=new.options.interval,
                     cycle_timeout=new.cycle_timeout)  # fmt: skip
        say("info", f"policy {watch.path}: new content in force")
        return new
    state.policy(found.error)
    if found.news:
        say("error", found.error)
        if policy.settings.events:
            post_events(
                policy.settings,
                [policy_rejected(found.error)],
                warn=lambda m: say("warning", m),
            )
    return policy
