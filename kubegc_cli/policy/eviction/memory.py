"""The eviction manager's memory across cycles: grace periods, minimum reclaim, pressure conditions.

One observation says only which thresholds are crossed now (`thresholds.evaluate`). A running
kubelet remembers more between its eviction cycles (kubelet eviction, `eviction_manager.go`
`synchronize`, with the helpers of `helpers.go`):

- A threshold crossed now, or one that counted as met in the last cycle and whose signal is
  still short of `threshold + minimum reclaim` (`thresholdsMet` with `enforceMinReclaim`, merged
  by `mergeThresholds`), is *active*. A threshold whose signal is not observed is neither.
- Each active threshold keeps the time it first became active (`thresholdsFirstObservedAt`); a
  threshold that stops being active forgets it, so its grace period starts over next time.
- An active threshold counts as *met* once `now - first observed >= grace period`
  (`thresholdsMetGracePeriod`): a hard threshold (grace 0) at once, a soft one after its grace.
- Every active threshold — met or still in its grace period — reports its node condition
  (`nodeConditions`); a condition stays reported while `now - last observed <
  evictionPressureTransitionPeriod` (`nodeConditionsLastObservedAt`,
  `nodeConditionsObservedSince`; the kubelet's default period is 5 minutes).

`remember` is one such cycle as a pure function: the last cycle's `EvictionMemory` and this
cycle's results in, what counts now and the next memory out. Times are seconds (any epoch, the
same one every call). Thresholds are told apart as the kubelet's `hasThreshold` does: by
signal, value and grace period. The minimum reclaim that holds a met threshold is the one in
force now; a threshold no longer in force is forgotten (the kubelet's thresholds never change
while it runs; kubegc's agent re-reads its policy).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from kubegc_cli.policy.eviction.thresholds import (
    DEFAULT_PRESSURE_TRANSITION_PERIOD,
    Threshold,
    ThresholdResult,
)


class ThresholdKey(NamedTuple):
    """What tells two thresholds apart (kubelet eviction: `hasThreshold`): the signal, the
    value (`quantity` in bytes or count, or the float32 `percentage`) and the grace period in
    seconds."""

    signal: str
    quantity: int | None
    percentage: float | None
    grace_period: float

    @classmethod
    def of(cls, t: Threshold) -> ThresholdKey:
        return cls(t.signal, t.quantity, t.percentage, t.grace_period)


@dataclass(frozen=True, slots=True)
class EvictionMemory:
    """What the eviction manager keeps from one cycle to the next; `EvictionMemory()` is a
    fresh start (a kubelet just started).

    `met`: the thresholds that counted as met in the last cycle (`managerImpl.thresholdsMet`);
    `first_observed`: threshold → when it first became active, seconds
    (`thresholdsFirstObservedAt`); `conditions_last_observed`: node condition → when a
    threshold last reported it, seconds (`nodeConditionsLastObservedAt`). Never changed in
    place: `remember` returns a new one.
    """

    met: frozenset[ThresholdKey] = frozenset()
    first_observed: Mapping[ThresholdKey, float] = field(default_factory=dict)
    conditions_last_observed: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Recalled:
    """One cycle judged with the memory of the ones before.

    `met`: the results that count as met — grace period over, or held until their minimum
    reclaim is done (those come back with `met=True` and a `note` saying so; `margin` stays the
    observed one) — in the order of the results given. `conditions`: the node conditions
    reported now, sorted by name, the transition period included. `pending`: threshold
    expression (`memory.available<1Gi`) → seconds of grace period left, for soft thresholds
    crossed but not yet met.
    """

    met: list[ThresholdResult]
    conditions: list[str]
    pending: dict[str, float]


def _held(r: ThresholdResult) -> str:
    """Why a threshold met before still counts, or "" when its minimum reclaim is done
    (kubelet eviction: `thresholdsMet` with `enforceMinReclaim`)."""
    obs = r.observation
    if obs is None or r.threshold_quantity is None or r.threshold.min_reclaim is None:
        return ""
    reclaim = r.threshold.min_reclaim_quantity(obs.capacity)
    target = r.threshold_quantity + reclaim
    if target > obs.available:
        return (
            f"held met until {r.threshold.signal} reaches {target} "
            f"(threshold + minimum reclaim {r.threshold.min_reclaim}); now {obs.available}"
        )
    return ""


def remember(
    memory: EvictionMemory,
    results: Sequence[ThresholdResult],
    now: float,
    *,
    transition_period: float = DEFAULT_PRESSURE_TRANSITION_PERIOD,
) -> tuple[Recalled, EvictionMemory]:
    """One eviction cycle of the kubelet's `synchronize`, as far as thresholds and conditions go.

    `memory` is what the last cycle returned (`EvictionMemory()` for the first); `results` are
    this cycle's `thresholds.evaluate` results (one per threshold in force, unobserved signals
    included); `now` is this cycle's time in seconds; `transition_period` is
    `evictionPressureTransitionPeriod` in seconds (default 300). Returns what counts now
    (`Recalled`) and the memory to hand to the next cycle. Pure: raises nothing for results
    `evaluate` makes.
    """
    active: dict[ThresholdKey, ThresholdResult] = {}
    held: dict[ThresholdKey, str] = {}
    for r in results:
        key = ThresholdKey.of(r.threshold)
        if key in active or r.observation is None:
            continue  # mergeThresholds drops duplicates; thresholdsMet skips unobserved signals
        if r.met:
            active[key] = r
        elif key in memory.met and (why := _held(r)):
            active[key] = r
            held[key] = why

    first_observed = {k: memory.first_observed.get(k, now) for k in active}

    last_observed = dict(memory.conditions_last_observed)
    for r in active.values():
        last_observed[r.condition] = now
    conditions = sorted(c for c, at in last_observed.items() if now - at < transition_period)

    met: list[ThresholdResult] = []
    pending: dict[str, float] = {}
    for key, r in active.items():
        elapsed = now - first_observed[key]
        if elapsed < r.threshold.grace_period:
            pending[r.threshold.expression] = r.threshold.grace_period - elapsed
            continue
        met.append(replace(r, met=True, note=held[key]) if key in held else r)

    recalled = Recalled(met=met, conditions=conditions, pending=pending)
    after = EvictionMemory(
        met=frozenset(ThresholdKey.of(r.threshold) for r in met),
        first_observed=first_observed,
        conditions_last_observed=last_observed,
    )
    return recalled, after
