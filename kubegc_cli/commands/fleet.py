"""`kubegc fleet`: the fleet as the nodes' `NodeGCReport`s tell it, read through the API.

Read only: one paged list of the reports (`node.fleet.reports.list_reports`), nothing
written. From the reports (`fleet_view`, pure):

- nodes by reclaimable bytes, most first (`reclaimableBytes`, the sum of the report's df
  categories), the top `FleetOptions.top`;
- nodes nearest to eviction: each report's nearest signal (`NodeReport.nearest`: a met
  threshold first, then the smallest margin as a share of its threshold), across nodes by
  the same order;
- reports that are not current: stale (observed longer ago than `FleetOptions.stale`, or
  never: the agent is not reporting) or failing (the last cycle's `error`);
- a summary computed from every report.

A report's age is measured from its `observedAt` to the run's now (`--now`, else the edges'
clock); an `observedAt` a little in the future (clock skew) counts as age 0; one more than
`FUTURE_SKEW` seconds (5 minutes) ahead is not believed: the report is flagged `future` and
counts as stale (a forged or broken time must not keep a report current forever).

Raises `BadInput` (exit 2) when no credentials are found or they are unusable, and
`ApiUnavailable` (exit 3) when the reports cannot be read to the end.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kubegc_cli.commands.edges import edges
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.fleet import FUTURE_SKEW, GROUP, KIND, PLURAL, NodeReport, SignalMargin
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.units import NS_PER_SECOND, ns_to_rfc3339, rfc3339_to_ns
from kubegc_cli.node.fleet.reports import list_reports
from kubegc_cli.node.pods.api import ApiSource, find_credentials, node_name, open_api
from kubegc_cli.node.pods.evicted import close_api

VIEW_KIND = "FleetView"
#: A quiet, healthy agent writes its report only at its heartbeat (30m): stale after the
#: heartbeat, one interval (5m) and as much again of slack.
DEFAULT_STALE = "40m"


@dataclass(frozen=True, slots=True)
class FleetOptions:
    """`stale`: seconds after which a report counts as stale (the agent is not reporting);
    `top`: rows in each ranked list (0 = every node)."""

    stale: float = 2400.0
    top: int = 10


@dataclass(frozen=True, slots=True)
class NodeRow:
    """One node's report as the fleet view sees it: `age` seconds since `observedAt` (None:
    never observed, or not an RFC 3339 time), `stale` per `FleetOptions.stale` (or `future`),
    `future` when `observedAt` lies more than `FUTURE_SKEW` seconds ahead of now, `nearest`
    its nearest signal (None when no signal was read)."""

    report: NodeReport
    age: float | None
    stale: bool
    future: bool = False

    @property
    def node(self) -> str:
        return self.report.node

    @property
    def nearest(self) -> SignalMargin | None:
        return self.report.nearest()

    @property
    def failing(self) -> bool:
        return bool(self.report.error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "age_seconds": self.age,
            "stale": self.stale,
            "future": self.future,
            "failing": self.failing,
            "status": self.report.to_status(),
        }


@dataclass(slots=True)
class FleetView:
    """The fleet: `rows` (every report, by node name), the three ranked lists (`top` rows
    each, `not_current` all of them), `now` (ns since the epoch), `source` (the API)."""

    now: int
    options: FleetOptions
    rows: list[NodeRow]
    by_reclaimable: list[NodeRow] = field(default_factory=list)
    nearest: list[NodeRow] = field(default_factory=list)
    not_current: list[NodeRow] = field(default_factory=list)
    source: str = ""

    def summary(self) -> dict[str, Any]:
        """Counts and totals over every row: nodes, stale, failing, current (neither),
        under pressure (holding a condition), with a threshold met, reclaimable bytes."""
        return {
            "nodes": len(self.rows),
            "current": sum(1 for r in self.rows if not r.stale and not r.failing),
            "stale": sum(1 for r in self.rows if r.stale),
            "failing": sum(1 for r in self.rows if r.failing),
            "under_pressure": sum(1 for r in self.rows if r.report.conditions),
            "threshold_met": sum(1 for r in self.rows if any(s.met for s in r.report.signals)),
            "reclaimable_bytes": sum(r.report.reclaimable for r in self.rows),
        }

    def to_dict(self) -> dict[str, Any]:
        """The whole view as plain data (bytes as integers): every report's status, and the
        ranked lists as node names."""
        return {
            "kind": VIEW_KIND,
            "now": ns_to_rfc3339(self.now),
            "source": self.source,
            "stale_after_seconds": self.options.stale,
            "top": self.options.top,
            "summary": self.summary(),
            "by_reclaimable": [r.node for r in self.by_reclaimable],
            "nearest_eviction": [r.node for r in self.nearest],
            "not_current": [r.node for r in self.not_current],
            "nodes": [r.to_dict() for r in self.rows],
        }


def age_of(observed_at: str, now: int) -> float | None:
    """Seconds from `observed_at` (RFC 3339) to `now` (ns), at least 0; None when
    `observed_at` is empty or not an RFC 3339 time."""
    if not observed_at:
        return None
    try:
        at = rfc3339_to_ns(observed_at, what="observedAt")
    except BadInput:
        return None
    return max(0, now - at) / NS_PER_SECOND


def ahead_of(observed_at: str, now: int) -> bool:
    """True when `observed_at` (RFC 3339) lies more than `FUTURE_SKEW` seconds after `now`
    (ns): not believed."""
    try:
        at = rfc3339_to_ns(observed_at, what="observedAt") if observed_at else None
    except BadInput:
        return False
    return at is not None and at > now + FUTURE_SKEW * NS_PER_SECOND


def _top(rows: list[NodeRow], n: int) -> list[NodeRow]:
    return rows if n <= 0 else rows[:n]


def fleet_view(reports: Iterable[NodeReport], now: int, options: FleetOptions) -> FleetView:
    """The fleet view of `reports` at `now` (ns since the epoch). Pure."""
    rows = []
    for report in sorted(reports, key=lambda r: r.node):
        age = age_of(report.observed_at, now)
        future = ahead_of(report.observed_at, now)
        rows.append(NodeRow(report, age, future or age is None or age > options.stale, future))
    by_reclaimable = sorted(rows, key=lambda r: (-r.report.reclaimable, r.node))

    def nearness(r: NodeRow) -> tuple[bool, float, str]:
        s = r.nearest
        assert s is not None and s.relative is not None
        return (not s.met, s.relative, r.node)

    nearest = sorted((r for r in rows if r.nearest is not None), key=nearness)
    not_current = sorted(
        (r for r in rows if r.stale or r.failing),
        key=lambda r: (r.age is not None, -(r.age or 0.0), r.node),
    )
    return FleetView(
        now=now,
        options=options,
        rows=rows,
        by_reclaimable=_top(by_reclaimable, options.top),
        nearest=_top(nearest, options.top),
        not_current=not_current,
    )


def read_fleet(s: Settings, options: FleetOptions) -> FleetView:
    """`kubegc fleet`: every `NodeGCReport` read through the API (credentials as kubectl
    finds them: `s.kubeconfig`, `s.context`, `s.env`; `s.timeout` seconds per request), as a
    `fleet_view` at `s.now` (ns), else the edges' clock.

    Raises `BadInput` when no credentials are found or they are unusable (or with
    `--snapshot`), `ApiUnavailable` when the reports cannot be read to the end.
    """
    if s.snapshot is not None:
        raise BadInput(f"fleet reads the {KIND}s from the Kubernetes API; --snapshot holds none")
    creds = find_credentials(s.kubeconfig, s.env)
    if creds is None:
        raise BadInput(
            "fleet needs the Kubernetes API: give --kubeconfig, set KUBECONFIG, "
            "create ~/.kube/config, or run in a pod with a service account"
        )
    api, host = open_api(ApiSource(creds, s.context, node_name(s.node_name)))
    try:
        reports = list_reports(api.api_client, timeout=s.timeout)
    finally:
        close_api(api)
    now = s.now if s.now is not None else edges().clock()
    view = fleet_view(reports, now, options)
    view.source = f"api:{host} {PLURAL}.{GROUP}"
    return view
