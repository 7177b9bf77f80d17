"""A seam to inject timing and faults into `kubegc agent`'s loop: `ScriptedCycle` is a cycle
(`kubegc_cli.agent.loop.Cycle`) that does what the test scripts — take so long, fail, raise,
hang, or stop the loop — and records what it was handed; `SteppedClock` is a monotonic clock
the loop's waits step forward. Neither stands in for the runtime: the loop, the policy file,
the HTTP endpoints and the command are kubegc's own."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubegc_cli.agent.loop import run_loop


class SteppedClock:
    """Monotonic seconds that move only when the loop waits (`sleep`) or a scripted cycle
    runs; `waits` records every wait asked for."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


@dataclass
class ScriptedOutcome:
    """A finished cycle as `CycleResult` shapes it."""

    error: str = ""
    duration: float = 0.0
    metrics: str = ""
    report: Any = None

    def metrics_text(self) -> str:
        return self.metrics


@dataclass
class Step:
    """One scripted cycle: it runs `seconds` (on the `SteppedClock`, or really sleeping when
    there is none), then fails with `error`, or raises `raises`; `hang` blocks it until
    released; `then` runs at its end (e.g. `state.stop`). With `absorb`, a stop signal while
    it sleeps ends the sleep and the cycle returns (as `carry_out` finishes an interrupted
    removal); without, the signal's exception leaves the cycle."""

    seconds: float = 0.0
    error: str = ""
    raises: BaseException | None = None
    hang: threading.Event | None = None
    then: Callable[[], None] | None = None
    absorb: bool = False


@dataclass
class ScriptedCycle:
    """A cycle that plays `steps` in order (the last one repeats). `starts` records the clock
    at each cycle start; `reconfigured` each (settings, options) handed over."""

    steps: list[Step]
    clock: Callable[[], float] = time.monotonic
    stepped: SteppedClock | None = None
    starts: list[float] = field(default_factory=list)
    reconfigured: list[tuple[Any, Any]] = field(default_factory=list)
    metrics: str = "# TYPE kubegc_cycle_seen gauge\nkubegc_cycle_seen 1\n"
    marker: Path | None = None  # a line per cycle start and end, for a test in another process

    def cycle(self) -> ScriptedOutcome:
        n = len(self.starts)
        self.starts.append(self.clock())
        step = self.steps[min(n, len(self.steps) - 1)]
        self._mark(f"started {n + 1}")
        if self.stepped is not None:
            self.stepped.now += step.seconds
        elif step.seconds:
            try:
                time.sleep(step.seconds)
            except KeyboardInterrupt:
                if not step.absorb:
                    raise
                self._mark(f"interrupted {n + 1}")
        if step.hang is not None:
            step.hang.wait()
        if step.then is not None:
            step.then()
        if step.raises is not None:
            raise step.raises
        self._mark(f"ended {n + 1}")
        return ScriptedOutcome(step.error, step.seconds, self.metrics)

    def _mark(self, line: str) -> None:
        if self.marker is not None:
            with self.marker.open("a") as f:
                f.write(line + "\n")

    def reconfigure(self, settings: Any, options: Any) -> None:
        self.reconfigured.append((settings, options))


def rewrite_each_cycle(
    path: Path,
    contents: list[str],
    stop: Callable[[], None],
    seen: Callable[[], None] | None = None,
) -> Callable[[], None]:
    """A `Step.then`: at the end of each cycle, `seen()` (e.g. note the readiness), then write
    the next of `contents` to `path` — a policy file changed between cycles — and after the
    last, `stop()` the loop."""
    left = iter(contents)

    def edit() -> None:
        if seen is not None:
            seen()
        text = next(left, None)
        if text is None:
            stop()
        else:
            path.write_text(text)

    return edit


def drive_policy(
    seam_steps: Callable[[Callable[[], None]], list[Step]],
    first: Any,
    watch: Any,
    state: Any,
    clock: SteppedClock,
) -> tuple[ScriptedCycle, list[tuple[str, str]]]:
    """Run the real loop (`agent.loop.run_loop`) on `clock` with the policy file `watch`;
    (the scripted cycle, the lines said as (level, message))."""
    seam = ScriptedCycle(seam_steps(state.stop), clock=clock, stepped=clock)
    said: list[tuple[str, str]] = []
    run_loop(seam, first, state, watch=watch, sleep=clock.sleep, draw=lambda: 0.0,
             received=lambda: None, say=lambda level, m: said.append((level, m)))  # fmt: skip
    return seam, said
