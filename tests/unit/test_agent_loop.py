"""`kubegc agent`'s loop (kubegc_cli.agent.loop): the first cycle's jitter, one cycle per
interval start to start, failed cycles retried, the policy file re-read before each cycle,
and `--once`'s exit codes — driven through `tests.unit.agentseam` (a scripted cycle and a
clock the loop's waits step)."""

from __future__ import annotations

import random
import time
from dataclasses import replace
from pathlib import Path

import pytest

from kubegc_cli.agent.loop import (
    Ending,
    LoopState,
    Policy,
    PolicyFile,
    first_delay,  # (policy.fleet's, the one the loop calls)
    run_loop,
)
from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.cli.agent import exit_code
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.settings import Settings
from tests.unit.agentseam import (
    ScriptedCycle,
    Step,
    SteppedClock,
    drive_policy,
    rewrite_each_cycle,
)

INTERVAL = 300.0


def policy(**changes: object) -> Policy:
    return Policy(Settings(), replace(AgentOptions(), **changes))  # type: ignore[arg-type]


def drive(
    steps: list[Step], *, cycles: int, draw: float = 0.0, **options: object
) -> tuple[ScriptedCycle, SteppedClock, Ending, list[tuple[str, str]]]:
    """Run the loop with a stepped clock until `cycles` cycles ran."""
    clock = SteppedClock()
    state = LoopState(INTERVAL, clock=clock)
    seam = ScriptedCycle(steps, clock=clock, stepped=clock)
    last = steps[-1]
    steps[:] = steps + [last] * (cycles - len(steps))
    steps[cycles - 1] = replace(steps[cycles - 1], then=state.stop)
    said: list[tuple[str, str]] = []
    end = run_loop(
        seam,
        policy(interval=INTERVAL, **options),
        state,
        sleep=clock.sleep,
        draw=lambda: draw,
        received=lambda: None,
        say=lambda level, m: said.append((level, m)),
    )
    return seam, clock, end, said


def test_the_first_delay_is_half_to_one_and_a_half_intervals_over_many_draws() -> None:
    """`first_delay(interval, u) = interval * (0.5 + u)`, u uniform in [0, 1): every delay in
    [0.5, 1.5) intervals, and the draws spread over the whole range (not bunched)."""
    rng = random.Random(22)
    delays = [first_delay(INTERVAL, rng.random()) for _ in range(20_000)]
    assert all(0.5 * INTERVAL <= d < 1.5 * INTERVAL for d in delays)
    assert min(delays) < 0.51 * INTERVAL and max(delays) > 1.49 * INTERVAL
    tenths = [0] * 10  # each tenth of the range gets about a tenth of the draws
    for d in delays:
        tenths[int((d / INTERVAL - 0.5) * 10)] += 1
    assert all(1700 < n < 2300 for n in tenths), tenths
    assert first_delay(INTERVAL, 0.0) == 150.0 and first_delay(INTERVAL, 0.999) == pytest.approx(
        449.7
    )
    for bad in (-0.1, 1.0):
        with pytest.raises(ValueError):
            first_delay(INTERVAL, bad)


@pytest.mark.parametrize("u", [0.0, 0.25, 0.999])
def test_the_loop_waits_the_first_delay_of_its_draw(u: float) -> None:
    seam, _, _, _ = drive([Step(seconds=1.0)], cycles=1, draw=u)
    assert seam.starts == [pytest.approx(1000.0 + INTERVAL * (0.5 + u))]


def test_cycles_start_one_interval_apart_start_to_start() -> None:
    """A cycle's own duration is not added to the wait: starts stay on the grid."""
    seam, clock, end, _ = drive([Step(seconds=7.5), Step(seconds=42.0)], cycles=5, draw=0.5)
    first = 1000.0 + INTERVAL
    assert seam.starts == [pytest.approx(first + i * INTERVAL) for i in range(5)]
    assert clock.waits[1:] == [pytest.approx(INTERVAL - 7.5)] + [pytest.approx(INTERVAL - 42.0)] * 3
    assert end == Ending(signal="", failed=False, cycles=5)


def test_a_late_wake_up_does_not_shift_the_next_start() -> None:
    """A wait that overshoots (a busy machine) makes one start late, not every later one."""
    clock = SteppedClock()
    state = LoopState(INTERVAL, clock=clock)
    late = iter([0.0, 3.0, 0.0, 0.0])

    def sleep(seconds: float) -> None:
        clock.sleep(seconds + next(late))

    steps = [Step(seconds=1.0)] * 3 + [Step(seconds=1.0, then=state.stop)]
    seam = ScriptedCycle(steps, clock=clock, stepped=clock)
    run_loop(seam, policy(interval=INTERVAL), state, sleep=sleep, draw=lambda: 0.5,
             received=lambda: None, say=lambda *_: None)  # fmt: skip
    base = 1000.0 + INTERVAL
    assert seam.starts == pytest.approx([base, base + INTERVAL + 3.0, base + 2 * INTERVAL,
                                         base + 3 * INTERVAL])  # fmt: skip


def test_a_cycle_longer_than_the_interval_is_followed_at_once_never_two_at_a_time() -> None:
    seam, clock, _, _ = drive(
        [Step(seconds=100.0), Step(seconds=2.5 * INTERVAL), Step(seconds=10.0)],
        cycles=4,
        draw=0.5,
    )
    s = seam.starts
    assert s[1] - s[0] == pytest.approx(INTERVAL)
    assert s[2] == pytest.approx(s[1] + 2.5 * INTERVAL)  # at once after the long one ends
    assert s[3] == pytest.approx(s[2] + INTERVAL)  # then on the interval again
    assert all(b - a >= 2.5 * INTERVAL - 1e-9 for a, b in [(s[1], s[2])])
    assert all(w >= 0 for w in clock.waits)  # no negative wait: one cycle at a time
    assert len(clock.waits) == 3  # no wait before the cycle that follows an overrun


def test_a_failing_cycle_is_said_in_one_line_and_retried_next_interval() -> None:
    steps = [Step(seconds=2.0, error="runtime unreachable: unix:///run/containerd.sock\nx"),
             Step(seconds=3.0, raises=RuntimeError("API gone")), Step(seconds=1.0)]  # fmt: skip
    seam, _, end, said = drive(steps, cycles=3, draw=0.0)
    assert len(seam.starts) == 3
    assert [s - seam.starts[0] for s in seam.starts] == pytest.approx([0, INTERVAL, 2 * INTERVAL])
    errors = [m for level, m in said if level == "error"]
    assert len(errors) == 2 and all("\n" not in m for m in errors)
    assert (
        "cycle failed after 2.0s: runtime unreachable: unix:///run/containerd.sock x" in (errors[0])
    )
    assert errors[0].endswith("retrying in 5m")
    assert "RuntimeError: API gone" in errors[1]
    assert end.failed is False and end.cycles == 3


def test_the_state_counts_cycles_and_failures_for_metrics() -> None:
    clock = SteppedClock()
    state = LoopState(INTERVAL, clock=clock, wall=lambda: 1_700_000_000.0)
    steps = [Step(seconds=2.0, error="down"), Step(seconds=4.0, then=state.stop)]
    run_loop(ScriptedCycle(steps, clock=clock, stepped=clock), policy(), state,
             sleep=clock.sleep, draw=lambda: 0.0, received=lambda: None,
             say=lambda *_: None)  # fmt: skip
    text = state.metrics_text()
    assert "kubegc_cycle_seen 1\n" in text  # the cycle's own metrics first
    for line in ("kubegc_agent_loop_cycles_total 2", "kubegc_agent_loop_failed_cycles_total 1",
                 "kubegc_agent_loop_last_success 1", "kubegc_agent_loop_last_duration_seconds 4",
                 "kubegc_agent_loop_last_start_timestamp_seconds 1700000000",
                 "kubegc_agent_policy_in_force 1"):  # fmt: skip
        assert f"\n{line}\n" in text, line
    assert state.alive is False  # the loop ended


def test_every_agent_sample_is_written_at_full_precision() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    state = LoopState(INTERVAL, wall=lambda: 1_796_450_000.25)
    state.started()
    state.ended("", 0.125, "")
    got = {s.name: s.value for f in text_string_to_metric_families(state.metrics_text())
           for s in f.samples}  # fmt: skip
    assert got["kubegc_agent_start_time_seconds"] == 1_796_450_000.25
    assert got["kubegc_agent_loop_last_start_timestamp_seconds"] == 1_796_450_000.25
    assert got["kubegc_agent_loop_last_duration_seconds"] == 0.125
    # and with the real clock: now, to the second, not an hour off
    real = LoopState(INTERVAL)
    real.started()
    got = {s.name: s.value for f in text_string_to_metric_families(real.metrics_text())
           for s in f.samples}  # fmt: skip
    for name in ("kubegc_agent_start_time_seconds",
                 "kubegc_agent_loop_last_start_timestamp_seconds"):  # fmt: skip
        assert abs(got[name] - time.time()) < 5, (name, got[name])


@pytest.mark.parametrize(
    ("step", "code"),
    [
        (Step(seconds=1.0), 0),
        (Step(error="runtime unreachable"), 1),
        (Step(raises=OSError("boom")), 1),
    ],
)
def test_once_runs_one_cycle_at_once_and_its_exit_code_says_how_it_went(
    step: Step, code: int
) -> None:
    clock = SteppedClock()
    state = LoopState(INTERVAL, clock=clock)
    seam = ScriptedCycle([step], clock=clock, stepped=clock)
    said: list[str] = []
    end = run_loop(seam, policy(once=True), state, sleep=clock.sleep, draw=lambda: 0.9,
                   received=lambda: None, say=lambda _, m: said.append(m))  # fmt: skip
    assert seam.starts == [1000.0] and clock.waits == []  # no delay
    assert exit_code(end, once=True) == code
    # --once exits after its cycle: a failure says nothing about retrying
    assert len(said) == code and not any("retrying" in m for m in said), said


@pytest.mark.parametrize(
    ("signal", "once", "code"),
    [
        ("SIGTERM", False, 0),
        ("SIGINT", False, 130),
        ("SIGTERM", True, 143),
        ("SIGINT", True, 130),
    ],
)
def test_the_exit_code_of_a_stop_signal(signal: str, once: bool, code: int) -> None:
    """Running, SIGTERM is the normal end of a DaemonSet pod (exit 0); --once is a command."""
    assert exit_code(Ending(signal=signal, failed=True, cycles=1), once=once) == code


def test_a_stop_signal_while_waiting_ends_the_loop_at_once() -> None:
    clock = SteppedClock()
    state = LoopState(INTERVAL, clock=clock)

    def sleep(seconds: float) -> None:
        raise KeyboardInterrupt  # what `core.stop.first_stop` raises for SIGINT

    seam = ScriptedCycle([Step()], clock=clock, stepped=clock)
    end = run_loop(seam, policy(), state, sleep=sleep, received=lambda: None)
    assert end == Ending(signal="SIGINT", failed=False, cycles=0) and seam.starts == []
    assert state.health() == (False, "the agent's loop has ended")


def test_a_stop_signal_a_cycle_absorbed_ends_the_loop_after_that_cycle() -> None:
    """A removal interrupted inside the cycle finishes it (`carry_out`): the loop then ends."""
    clock = SteppedClock()
    state = LoopState(INTERVAL, clock=clock)
    got: list[int] = []
    seam = ScriptedCycle([Step(seconds=5.0, then=lambda: got.append(15))], clock=clock,
                         stepped=clock)  # fmt: skip
    end = run_loop(seam, policy(), state, sleep=clock.sleep, draw=lambda: 0.0,
                   received=lambda: got[0] if got else None, say=lambda *_: None)  # fmt: skip
    assert end == Ending(signal="SIGTERM", failed=False, cycles=1)


def config(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_the_policy_file_is_read_again_before_each_cycle(tmp_path: Path) -> None:
    """A new valid content is handed to the cycle; a malformed one keeps the last good policy,
    is said once (not at every cycle) and fails readiness until the file is fixed."""
    path = config(tmp_path / "config.yaml", "interval: 5m\n")

    def resolve(text: str) -> Policy:
        if "bad" in text:
            raise BadInput(f"config file {path}: unknown key 'bad'; here the file takes: x")
        return policy(interval=float(text.split(":")[1].strip().rstrip("m")) * 60)

    watch = PolicyFile(path, resolve)
    first = watch.load()
    clock = SteppedClock()
    state = LoopState(INTERVAL, clock=clock)
    readiness: list[tuple[bool, str]] = []
    contents = ["interval: 10m\n", "bad: 1\n", "bad: 1\n", "interval: 2m\n"]
    seam, said = drive_policy(
        lambda stop: [Step(seconds=1.0, then=rewrite_each_cycle(
            path, contents, stop, lambda: readiness.append(state.readiness())))],
        first, watch, state, clock,
    )  # fmt: skip
    assert [o.interval for _, o in seam.reconfigured] == [600.0, 120.0]
    gaps = [b - a for a, b in zip(seam.starts, seam.starts[1:], strict=False)]
    assert gaps == pytest.approx([300.0, 600.0, 600.0, 600.0])  # the policy in force's
    why = f"policy {path}: unknown key 'bad'; here the file takes: x; keeping the last good policy"
    assert [ok for ok, _ in readiness] == [True, True, False, False, True]
    assert readiness[0] == (True, "ok") and readiness[2] == (False, why)
    assert [m for level, m in said if level == "error"] == [why]  # said once
    assert state.readiness() == (True, "ok")  # fixed: the file's content is in force


def test_a_policy_file_that_disappears_keeps_the_last_good_policy(tmp_path: Path) -> None:
    path = config(tmp_path / "config.yaml", "a: 1\n")
    watch = PolicyFile(path, lambda text: policy())
    watch.load()
    path.unlink()
    found = watch.refresh()
    assert found.policy is None and found.news
    assert found.error.startswith(f"policy {path}: ") and "No such file" in found.error
    assert watch.refresh().news is False
    path.write_text("a: 1\n")  # the same content as in force: nothing to hand over
    assert watch.refresh().policy is None and watch.error == ""


def test_a_malformed_policy_at_start_up_is_bad_input(tmp_path: Path) -> None:
    path = config(tmp_path / "config.yaml", "a: 1\n")

    def resolve(text: str) -> Policy:
        raise BadInput("config file x: bad")

    with pytest.raises(BadInput, match="bad"):
        PolicyFile(path, resolve).load()


def test_health_allows_two_intervals_and_the_cycle_timeout_since_the_last_start() -> None:
    """The first delay (at most 1.5 intervals) fits in the budget; a cycle running past it,
    or a loop that never starts one, is reported stuck with the age and the budget."""
    clock = SteppedClock()
    state = LoopState(INTERVAL, 600.0, clock=clock)
    clock.now += 2 * INTERVAL + 600.0
    assert state.health() == (True, "ok")
    clock.now += 1.0
    assert state.health() == (False, "no cycle started 20m ago, more than 2 × interval + cycle "
                                     "timeout (20m): the loop is stuck")  # fmt: skip
    state.started()
    assert state.health() == (True, "ok")
    clock.now += 1300.0
    ok, why = state.health()
    assert not ok and why.startswith("the last cycle started 21m ago, ")


def test_a_metric_family_the_cycle_wrote_is_not_written_twice() -> None:
    """Two TYPE lines for one name fail a Prometheus scrape whole."""
    clock = SteppedClock()
    state = LoopState(INTERVAL, clock=clock)
    state.ended("", 1.0, "# TYPE kubegc_agent_interval_seconds gauge\n"
                         "kubegc_agent_interval_seconds 60\n")  # fmt: skip
    text = state.metrics_text()
    assert text.count("# TYPE kubegc_agent_interval_seconds ") == 1
    assert "\nkubegc_agent_interval_seconds 60\n" in text
    assert "kubegc_agent_interval_seconds 300" not in text
    types = [line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")]
    assert len(types) == len(set(types)) == 9  # the cycle's one and the 8 others
