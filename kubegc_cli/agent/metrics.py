"""What `kubegc agent` serves on `/metrics` (Prometheus text format 0.0.4).

The samples are `report.metrics`' own, keyed and rendered as the textfile is: every command
a cycle runs (`evict check`, `df`, `residue scan`, `gc all`, `gc images`, ...) adds its run
as a `--metrics-file` run would (`report.metrics.merge`: the run and reclaim counters summed
across cycles, the last-run gauges replaced). Besides those:

| metric | type | labels | value |
|---|---|---|---|
| `kubegc_eviction_margin` | gauge | `signal`, `type` (hard, soft) | available − threshold |
| `kubegc_eviction_threshold` | gauge | `signal`, `type` | the threshold in the signal's unit |
| `kubegc_eviction_available` | gauge | `signal` | the signal observed (bytes, inodes, PIDs) |
| `kubegc_reclaimable_bytes` | gauge | `category` (df's lines) | bytes kubegc can free |
| `kubegc_agent_cycles_total` | counter | `result` (ok, failed) | cycles |
| `kubegc_agent_last_cycle_duration_seconds` | gauge | | wall time of the last cycle |
| `kubegc_agent_last_cycle_timestamp_seconds` | gauge | | when it began (Unix time) |
| `kubegc_agent_apply_freed_bytes_total` | counter | | bytes freed by applies, measured (statvfs) |

`kubegc_eviction_threshold_met{command="evict check"}` says met as the eviction manager's
memory counts it (a soft threshold after its grace period).

The kubelet's image GC metrics (`kubelet_image_garbage_collected_total{reason}` and
KEP-6053's `kubelet_image_gc_*`) come with the `gc images` runs, as in the textfile
(`report.metrics.image_gc_samples`), with `trigger="periodic"`: a cycle's run is the agent's
periodic GC. Signals not observed have no margin sample.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubegc_cli.core.fleet import Category
from kubegc_cli.report.metrics import METRICS, Key, key

#: name → (type, help): kubegc's textfile metrics, then the agent's, in the order served.
AGENT_METRICS: dict[str, tuple[str, str]] = {
    **METRICS,
    "kubegc_eviction_margin": (
        "gauge",
        "Eviction signal available minus its threshold, by signal and type (negative: crossed).",
    ),
    "kubegc_eviction_threshold": ("gauge", "Eviction threshold in the signal's unit."),
    "kubegc_eviction_available": ("gauge", "Eviction signal observed (bytes, inodes or PIDs)."),
    "kubegc_reclaimable_bytes": (
        "gauge",
        "Bytes kubegc can reclaim on the node, by df category.",
    ),
    "kubegc_agent_cycles_total": ("counter", "kubegc agent cycles by result (ok, failed)."),
    "kubegc_agent_last_cycle_duration_seconds": ("gauge", "Wall time of the last agent cycle."),
    "kubegc_agent_last_cycle_timestamp_seconds": (
        "gauge",
        "When the last agent cycle began (Unix time).",
    ),
    "kubegc_agent_apply_freed_bytes_total": (
        "counter",
        "Bytes freed by the agent's applies, measured as filesystem space regained.",
    ),
}


def eviction_gauges(results: Iterable[Any]) -> dict[Key, float]:
    """Margin, threshold and available of every observed threshold result (`ThresholdResult`,
    `met` as counted after the eviction manager's memory)."""
    out: dict[Key, float] = {}
    for r in results:
        t = r.threshold
        kind = "hard" if t.hard else "soft"
        if r.observation is None or r.margin is None:
            continue
        out[key("kubegc_eviction_margin", {"signal": t.signal, "type": kind})] = float(r.margin)
        if r.threshold_quantity is not None:
            labels = {"signal": t.signal, "type": kind}
            out[key("kubegc_eviction_threshold", labels)] = float(r.threshold_quantity)
        out[key("kubegc_eviction_available", {"signal": t.signal})] = float(r.observation.available)
    return out


def reclaimable_gauges(categories: Iterable[Category]) -> dict[Key, float]:
    """`kubegc_reclaimable_bytes` of each category whose reclaimable bytes are known."""
    return {
        key("kubegc_reclaimable_bytes", {"category": c.name}): float(c.reclaimable)
        for c in categories
        if c.reclaimable is not None
    }


def add(counters: dict[Key, float], name: str, value: float, labels: Mapping[str, str]) -> None:
    """Add `value` to the counter `name{labels}` in `counters` (created at 0)."""
    k = key(name, labels)
    counters[k] = counters.get(k, 0.0) + value
