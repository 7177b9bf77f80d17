"""One agent cycle's checks, each from the cycle's one observation of the node: the eviction
signals judged with the eviction manager's memory, `df`'s categories, the residue counts, and
the pods the kubelet would evict first — turned into the fields of a `core.fleet.NodeReport`.

The commands do the work (`commands.evict`, `commands.df`, `commands.residue`); this module
only reads what they return into the report's shapes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from kubegc_cli.commands.df import ORDER, DfReport
from kubegc_cli.commands.edges import Ui, edges
from kubegc_cli.commands.evict import EvictionReport, eviction_config, kubelet_root, rank_met
from kubegc_cli.commands.evict import observe as observe_signals
from kubegc_cli.core.fleet import Category, EvictCandidate, SignalMargin
from kubegc_cli.core.pods import PodInventory
from kubegc_cli.core.settings import Settings
from kubegc_cli.policy.eviction.thresholds import RawEviction, ThresholdResult, evaluate


@dataclass(slots=True)
class Eviction:
    """The eviction check of one cycle: `report` (`commands.evict.EvictionReport`, its results'
    `met` as the memory counts them, its ranking for those), the node `conditions` held, the
    soft thresholds still in their grace period (`pending`: expression → seconds left), and
    the memory to hand to the next cycle."""

    report: EvictionReport
    conditions: list[str]
    pending: dict[str, float]
    memory: Any
    margins: list[SignalMargin] = field(default_factory=list)


def check_eviction(
    s: Settings,
    ui: Ui,
    *,
    root_dir: str,
    top: int,
    pods: PodInventory,
    memory: Any,
    now: float,
    recall: Any,
) -> Eviction:
    """The thresholds in force (as `evict check` without flags finds them) against the signals
    observed now, judged with `memory` at `now` (seconds) by `recall(memory, results, now,
    transition_period=...)` (the eviction manager's `remember`); the pods the kubelet would
    evict first for what counts as met (`top` per signal, `pods` the cycle's pod source).
    Raises `BadInput` for bad thresholds or files."""
    config = eviction_config(s, ui, RawEviction(), pods=pods)
    root = kubelet_root(root_dir)
    obs, unread, fs = observe_signals(s, ui, config, root_dir=root, allocatable=None)
    results = evaluate(config, obs, dedicated_imagefs=fs.dedicated_imagefs, split=fs.split)
    recalled, after = recall(
        memory, results, now, transition_period=config.pressure_transition_period
    )
    judged = judged_results(results, recalled.met)
    report = EvictionReport(config, judged, obs, unread, fs, edges().clock())
    report.notes.extend(config.notes)
    if report.met():
        rank_met(s, ui, report, root_dir=root, top=top, pods=pods)
    return Eviction(
        report,
        list(recalled.conditions),
        dict(recalled.pending),
        after,
        [margin_of(r) for r in judged],
    )


def judged_results(
    results: Sequence[ThresholdResult], met: Sequence[ThresholdResult]
) -> list[ThresholdResult]:
    """`results` with `met` as the memory says: the result it returned for a threshold it
    counts as met (held ones carry its note), else the observation with `met` False."""
    counted = {m.threshold: m for m in met}
    out = []
    for r in results:
        m = counted.get(r.threshold)
        out.append(m if m is not None else replace(r, met=False) if r.met else r)
    return out


def margin_of(r: ThresholdResult) -> SignalMargin:
    """One threshold result as the report's `SignalMargin` (threshold as written)."""
    t = r.threshold
    available = None if r.observation is None else r.observation.available
    return SignalMargin(t.signal, t.text, available, r.margin, r.met, t.hard)


def evict_first(
    ranking: Mapping[str, Sequence[Mapping[str, Any]]], top: int
) -> list[EvictCandidate]:
    """At most `top` pods the kubelet would evict first: signals in `ranking`'s order (the
    kubelet's: memory first, as `rank_met` fills it), each signal's ranking in order, pods
    it would skip (critical) left out, each pod once."""
    out: list[EvictCandidate] = []
    seen: set[tuple[str, str]] = set()
    for signal in ranking:
        for row in ranking[signal]:
            pod = (str(row["namespace"]), str(row["name"]))
            if row.get("skipped") or pod in seen:
                continue
            seen.add(pod)
            out.append(EvictCandidate(pod[0], pod[1], signal))
            if len(out) >= top:
                return out
    return out


def categories(df: DfReport) -> list[Category]:
    """`df`'s top-level lines summed over its filesystems, in `df`'s order: bytes and
    reclaimable bytes (None when a filesystem's figure is unknown)."""
    sums: dict[str, list[int | None]] = {}
    for f in df.filesystems:
        for ln in f.lines:
            if ln.parent:
                continue
            row = sums.setdefault(ln.key, [0, 0])
            row[0] = None if row[0] is None or ln.bytes is None else row[0] + ln.bytes
            row[1] = None if row[1] is None or ln.reclaimable is None else row[1] + ln.reclaimable
    ordered = sorted(sums, key=lambda k: ORDER.get(k, len(ORDER)))
    return [Category(k, sums[k][0], sums[k][1]) for k in ordered]


def residue_counts(plan: Any) -> dict[str, int]:
    """Finding type → findings, every type scanned (0 when none)."""
    return {t: row["count"] for t, row in plan.totals().items()}
