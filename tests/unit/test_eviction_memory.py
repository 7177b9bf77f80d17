"""The eviction manager's memory across cycles, as tables of cycles; each names the kubelet
function (`pkg/kubelet/eviction/eviction_manager.go` `synchronize`, `helpers.go`) it follows."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegc_cli.core.signals import Observation
from kubegc_cli.policy.eviction.memory import EvictionMemory, Recalled, ThresholdKey, remember
from kubegc_cli.policy.eviction.thresholds import (
    EvictionConfig,
    ThresholdResult,
    evaluate,
    raw_from_flags,
    resolve,
)

MI = 1024**2
GI = 1024**3
MEM = "memory.available"
NODEFS = "nodefs.available"


def config(
    hard: str = "", soft: str | None = None, grace: str | None = None, reclaim: str | None = None
) -> EvictionConfig:
    """The thresholds in force from kubegc's own --eviction-* flags (no kubelet defaults)."""
    return resolve([raw_from_flags(hard, soft, grace, reclaim)])


def results(cfg: EvictionConfig, observed: dict[str, tuple[int, int]]) -> list[ThresholdResult]:
    """One cycle's results: `observed` maps signal → (available, capacity); others unread."""
    obs = {s: Observation(s, a, c) for s, (a, c) in observed.items()}
    return evaluate(cfg, obs, dedicated_imagefs=False)


@dataclass(frozen=True)
class Cycle:
    """One cycle: at `now` (s), `observed` (signal → (available, capacity)), and what must
    come out: the met expressions, the conditions, the pending expressions → seconds left."""

    now: float
    observed: dict[str, tuple[int, int]]
    met: tuple[str, ...] = ()
    conditions: tuple[str, ...] = ()
    pending: dict[str, float] | None = None


SOFT_1G = config(soft=f"{MEM}<1Gi", grace=f"{MEM}=1m")
HARD_1G_RECLAIM = config(hard=f"{MEM}<1Gi", reclaim=f"{MEM}=500Mi")
HARD_NODEFS_PCT = config(hard=f"{NODEFS}<10%", reclaim=f"{NODEFS}=5%")
HARD_NODEFS = config(hard=f"{NODEFS}<10Gi")
LOW = {MEM: (900 * MI, 8 * GI)}
HIGH = {MEM: (2 * GI, 8 * GI)}
SOFT = f"{MEM}<1Gi"
MP, DP = "MemoryPressure", "DiskPressure"
# a nodefs threshold with one filesystem is copied to containerfs (UpdateContainerFsThresholds)
PCT = (f"{NODEFS}<10%", "containerfs.available<10%")
TEN_GI = (f"{NODEFS}<10Gi", "containerfs.available<10Gi")


def disk(avail_gi: float, plus: int = 0) -> dict[str, tuple[int, int]]:
    v = (int(avail_gi * GI) + plus, 100 * GI)
    return {NODEFS: v, "containerfs.available": v}


TABLE: list[tuple[str, EvictionConfig, list[Cycle]]] = [
    (
        # thresholdsMetGracePeriod: `duration < GracePeriod` → not yet; nodeConditions: the
        # condition is reported from the first crossing, grace period or not.
        "soft not met before its grace period (thresholdsMetGracePeriod, nodeConditions)",
        SOFT_1G,
        [
            Cycle(0, LOW, conditions=(MP,), pending={SOFT: 60.0}),
            Cycle(30, LOW, conditions=(MP,), pending={SOFT: 30.0}),
            Cycle(59.5, LOW, conditions=(MP,), pending={SOFT: 0.5}),
        ],
    ),
    (
        "soft met exactly at its grace period (thresholdsMetGracePeriod)",
        SOFT_1G,
        [
            Cycle(0, LOW, conditions=(MP,), pending={SOFT: 60.0}),
            Cycle(60, LOW, met=(SOFT,), conditions=(MP,), pending={}),
            Cycle(600, LOW, met=(SOFT,), conditions=(MP,), pending={}),
        ],
    ),
    (
        # thresholdsFirstObservedAt keeps only thresholds active now: one that clears forgets
        # when it was first seen, and its grace period starts over.
        "a soft threshold that clears resets its first-observed time (thresholdsFirstObservedAt)",
        SOFT_1G,
        [
            Cycle(0, LOW, conditions=(MP,), pending={SOFT: 60.0}),
            Cycle(50, HIGH, conditions=(MP,), pending={}),
            Cycle(70, LOW, conditions=(MP,), pending={SOFT: 60.0}),
            Cycle(129, LOW, conditions=(MP,), pending={SOFT: 1.0}),
            Cycle(130, LOW, met=(SOFT,), conditions=(MP,), pending={}),
        ],
    ),
    (
        # thresholdsMet(m.thresholdsMet, observations, enforceMinReclaim=true) then
        # mergeThresholds: met stays met while available < 1Gi + 500Mi.
        "minimum reclaim holds a met threshold, then releases it (thresholdsMet, mergeThresholds)",
        HARD_1G_RECLAIM,
        [
            Cycle(0, LOW, met=(f"{MEM}<1Gi",), conditions=(MP,)),
            Cycle(10, {MEM: (GI + 1, 8 * GI)}, met=(f"{MEM}<1Gi",), conditions=(MP,)),
            Cycle(20, {MEM: (GI + 500 * MI - 1, 8 * GI)}, met=(f"{MEM}<1Gi",), conditions=(MP,)),
            Cycle(30, {MEM: (GI + 500 * MI, 8 * GI)}, conditions=(MP,)),  # reclaim done
            Cycle(40, {MEM: (GI + 1, 8 * GI)}, conditions=(MP,)),  # released: not met again
        ],
    ),
    (
        # GetThresholdQuantity of both the threshold and the minimum reclaim on the observed
        # capacity, each through float32: 10% of 100Gi is 10737418400, 5% is 5368709200, so
        # the hold ends at 16106127600, not at 15Gi (16106127360).
        "a percentage minimum reclaim is of the observed capacity (thresholdsMet)",
        HARD_NODEFS_PCT,
        [
            Cycle(0, disk(9), met=PCT, conditions=(DP,)),
            Cycle(1, disk(14.99), met=PCT, conditions=(DP,)),
            Cycle(2, disk(0, 16106127599), met=PCT, conditions=(DP,)),
            Cycle(3, disk(0, 16106127600), conditions=(DP,)),
        ],
    ),
    (
        # the hold is for thresholds met after their grace period (m.thresholdsMet), not for a
        # soft threshold still in it.
        "no minimum-reclaim hold during a grace period (synchronize: m.thresholdsMet)",
        config(soft=f"{MEM}<1Gi", grace=f"{MEM}=1m", reclaim=f"{MEM}=500Mi"),
        [
            Cycle(0, LOW, conditions=(MP,), pending={SOFT: 60.0}),
            Cycle(30, {MEM: (GI + 1, 8 * GI)}, conditions=(MP,), pending={}),
            Cycle(40, LOW, conditions=(MP,), pending={SOFT: 60.0}),
        ],
    ),
    (
        # nodeConditionsLastObservedAt keeps the last time; nodeConditionsObservedSince reports
        # it while `now - last < evictionPressureTransitionPeriod` (5m by default).
        "a condition is held for the transition period, then dropped (nodeConditionsObservedSince)",
        HARD_NODEFS,
        [
            Cycle(0, disk(5), met=TEN_GI, conditions=(DP,)),
            Cycle(10, disk(50), conditions=(DP,)),
            Cycle(299.9, disk(50), conditions=(DP,)),  # last observed at 0, not 10
            Cycle(300, disk(50)),
            Cycle(320, disk(5), met=TEN_GI, conditions=(DP,)),
            Cycle(329, disk(50), conditions=(DP,)),
        ],
    ),
    (
        "a hard threshold is met at once (isHardEvictionThreshold: grace period 0)",
        config(hard=f"{MEM}<1Gi"),
        [
            Cycle(0, HIGH),
            Cycle(5, LOW, met=(f"{MEM}<1Gi",), conditions=(MP,)),
            Cycle(6, HIGH, conditions=(MP,)),
        ],
    ),
    (
        # thresholdsMet skips a signal without an observation, with or without
        # enforceMinReclaim: a threshold met before is let go, its condition only held by the
        # transition period.
        "a threshold whose signal is unread is not met, nor held (thresholdsMet: no observation)",
        HARD_1G_RECLAIM,
        [
            Cycle(0, {}),
            Cycle(10, LOW, met=(f"{MEM}<1Gi",), conditions=(MP,)),
            Cycle(20, {}, conditions=(MP,)),
            Cycle(30, {MEM: (GI + 1, 8 * GI)}, conditions=(MP,)),
            Cycle(400, {}),
        ],
    ),
]


@pytest.mark.parametrize(("name", "cfg", "cycles"), TABLE, ids=[row[0] for row in TABLE])
def test_cycles(name: str, cfg: EvictionConfig, cycles: list[Cycle]) -> None:
    memory = EvictionMemory()
    for c in cycles:
        recalled, memory = remember(memory, results(cfg, c.observed), c.now)
        got = tuple(r.threshold.expression for r in recalled.met)
        assert got == c.met, (name, c.now, recalled)
        assert all(r.met for r in recalled.met)
        assert tuple(recalled.conditions) == c.conditions, (name, c.now, recalled)
        if c.pending is not None:
            assert recalled.pending == pytest.approx(c.pending), (name, c.now, recalled)


def test_a_held_threshold_says_why_and_keeps_its_margin() -> None:
    """The hold comes back with met=True, a note naming the target, and the observed margin."""
    memory = EvictionMemory()
    _, memory = remember(memory, results(HARD_1G_RECLAIM, LOW), 0)
    recalled, _ = remember(memory, results(HARD_1G_RECLAIM, {MEM: (GI + MI, 8 * GI)}), 1)
    (r,) = recalled.met
    assert r.met and r.margin == MI
    assert "minimum reclaim 500Mi" in r.note and str(GI + 500 * MI) in r.note


def test_a_custom_transition_period() -> None:
    """nodeConditionsObservedSince with a 30s evictionPressureTransitionPeriod."""
    cfg = config(hard=f"{MEM}<1Gi")
    memory = EvictionMemory()
    _, memory = remember(memory, results(cfg, LOW), 0, transition_period=30)
    held, memory = remember(memory, results(cfg, HIGH), 29, transition_period=30)
    gone, _ = remember(memory, results(cfg, HIGH), 30, transition_period=30)
    assert held.conditions == [MP] and gone.conditions == []


def test_a_threshold_no_longer_in_force_is_forgotten() -> None:
    """A policy re-read that drops a met threshold: it is neither met nor held any more."""
    memory = EvictionMemory()
    _, memory = remember(memory, results(HARD_1G_RECLAIM, LOW), 0)
    assert memory.met == {ThresholdKey(MEM, GI, None, 0.0)}
    other = config(hard=f"{MEM}<512Mi", reclaim=f"{MEM}=500Mi")
    recalled, memory = remember(memory, results(other, {MEM: (GI + 1, 8 * GI)}), 1)
    assert recalled.met == [] and memory.met == frozenset()


def test_fresh_memory_is_empty_and_equal() -> None:
    assert EvictionMemory() == EvictionMemory()
    recalled, after = remember(EvictionMemory(), [], 0)
    assert recalled == Recalled([], [], {}) and after == EvictionMemory()


# --- a property: against a model of the grace period over random cycles -----------------------


@settings(max_examples=200, deadline=None)
@given(
    grace=st.integers(min_value=0, max_value=120),
    steps=st.lists(
        st.tuples(st.integers(min_value=0, max_value=90), st.booleans(), st.booleans()),
        min_size=1,
        max_size=30,
    ),
)
def test_soft_threshold_matches_a_streak_model(
    grace: int, steps: list[tuple[int, bool, bool]]
) -> None:
    """Without minimum reclaim, a threshold is met iff it has been crossed in every cycle
    since one at least `grace` seconds ago; MemoryPressure iff it was crossed within the
    last 300 s (thresholdsFirstObservedAt, thresholdsMetGracePeriod,
    nodeConditionsObservedSince). Each step: seconds since the last cycle, crossed or not,
    read or not."""
    cfg = (
        config(hard=f"{MEM}<1Gi")
        if grace == 0
        else config(soft=f"{MEM}<1Gi", grace=f"{MEM}={grace}s")
    )
    memory = EvictionMemory()
    now = 0.0
    streak: float | None = None
    last_crossed: float | None = None
    for dt, crossed, read in steps:
        now += dt
        observed = {MEM: (900 * MI if crossed else 2 * GI, 8 * GI)} if read else {}
        recalled, memory = remember(memory, results(cfg, observed), now)
        if read and crossed:
            streak = now if streak is None else streak
            last_crossed = now
        else:
            streak = None
        assert bool(recalled.met) == (streak is not None and now - streak >= grace)
        expected = last_crossed is not None and now - last_crossed < 300
        assert recalled.conditions == ([MP] if expected else [])
        if streak is not None and now - streak < grace:
            assert recalled.pending == {recalled_key(cfg): grace - (now - streak)}
        else:
            assert recalled.pending == {}


def recalled_key(cfg: EvictionConfig) -> str:
    (t,) = cfg.thresholds
    return t.expression
