"""`kubegc fleet`'s view (`commands.fleet.fleet_view`, pure) and its tables
(`render.fleet`) at 80 columns: every number whole, the node name the only cell that
folds."""

from __future__ import annotations

import io

import pytest

from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.commands.fleet import DEFAULT_STALE, FleetOptions, age_of, fleet_view
from kubegc_cli.core.fleet import LastApply, NodeReport, SignalMargin
from kubegc_cli.core.units import format_bytes, ns_to_rfc3339, parse_duration
from kubegc_cli.render.fleet import count_cell, pressure_cell, render_fleet, summary_line

NOW = 1_764_900_000 * 10**9  # 2025-12-05T02:00:00Z
Ti, Gi, Mi = 1 << 40, 1 << 30, 1 << 20
#: A node name as long as the API allows (a DNS subdomain: 253 characters).
LONGEST = ".".join(["ip-10-0-12-34-eu-central-1-compute-internal-abcdefghijklmnopq"] * 4)[:253]


def at(seconds_ago: float) -> str:
    return ns_to_rfc3339(NOW - int(seconds_ago * 10**9))


def report(node: str, ago: float | None = 60, **kw: object) -> NodeReport:
    return NodeReport(node, "" if ago is None else at(ago), **kw)  # type: ignore[arg-type]


# --- the view -------------------------------------------------------------------------------


def test_age_is_from_observed_at_to_now_never_negative_none_when_unknown() -> None:
    assert age_of(at(90), NOW) == 90
    assert age_of(ns_to_rfc3339(NOW + 10**12), NOW) == 0  # clock skew: not in the future
    assert age_of("", NOW) is None
    assert age_of("yesterday", NOW) is None


def test_the_view_ranks_reclaimable_nearest_and_not_current() -> None:
    reports = [
        report("a", reclaimable=5 * Gi),
        report("b", reclaimable=9 * Gi, signals=(
            SignalMargin("nodefs.available", "10%", 2 * Gi, 1 * Gi, False),)),
        report("c", ago=3600, reclaimable=1 * Gi, signals=(
            SignalMargin("memory.available", "100Mi", 50 * Mi, -50 * Mi, True),)),
        report("d", ago=None, signals=(
            SignalMargin("nodefs.available", "10%", 1 * Gi, 100 * Mi, False),)),
        report("e", error="the runtime did not answer", reclaimable=5 * Gi),
    ]  # fmt: skip
    v = fleet_view(reports, NOW, FleetOptions(stale=900, top=3))
    assert [r.node for r in v.rows] == ["a", "b", "c", "d", "e"]
    assert [r.node for r in v.by_reclaimable] == ["b", "a", "e"]  # ties by name
    # a met threshold first, then the smallest margin (kubelet: met before near)
    assert [r.node for r in v.nearest] == ["c", "d", "b"]
    assert [r.node for r in v.not_current] == ["d", "c", "e"]  # never, oldest, failing
    assert [(r.node, r.stale) for r in v.rows if r.stale] == [("c", True), ("d", True)]
    s = v.summary()
    assert s == {"nodes": 5, "current": 2, "stale": 2, "failing": 1, "under_pressure": 0,
                 "threshold_met": 1, "reclaimable_bytes": 20 * Gi}  # fmt: skip
    assert fleet_view(reports, NOW, FleetOptions(top=0)).by_reclaimable == sorted(
        v.rows, key=lambda r: (-r.report.reclaimable, r.node)
    )


def test_by_default_a_quiet_agent_writing_at_its_heartbeat_is_not_stale() -> None:
    a = AgentOptions()
    assert parse_duration(DEFAULT_STALE) == FleetOptions().stale == 2400
    assert FleetOptions().stale > a.heartbeat + a.interval  # a write 35 minutes ago is current
    v = fleet_view([report("quiet", ago=a.heartbeat + a.interval), report("gone", ago=2401)],
                   NOW, FleetOptions())  # fmt: skip
    assert [(r.node, r.stale) for r in v.rows] == [("gone", True), ("quiet", False)]


def test_a_report_exactly_at_the_stale_limit_is_not_stale() -> None:
    v = fleet_view([report("a", ago=900), report("b", ago=901)], NOW, FleetOptions(stale=900))
    assert [r.stale for r in v.rows] == [False, True]


def test_a_report_dated_more_than_5_minutes_ahead_is_flagged_and_stale() -> None:
    reports = [report("a", ago=-300), report("b", ago=-301, reclaimable=Gi),
               report("c", ago=None), NodeReport("d", "9999-12-31T23:59:59Z")]  # fmt: skip
    v = fleet_view(reports, NOW, FleetOptions(stale=900))
    assert [(r.node, r.stale, r.future) for r in v.rows] == [
        ("a", False, False),
        ("b", True, True),
        ("c", True, False),
        ("d", True, True),
    ]
    assert v.summary()["stale"] == 3 and v.summary()["current"] == 1
    assert v.to_dict()["nodes"][3]["future"] is True
    text = rendered(reports, 100)
    assert "stale, future" in text and "future*" in text


def test_the_json_document_holds_every_report_whole() -> None:
    reports = [report(f"n{i}", reclaimable=i * Ti + 1) for i in range(15)]
    doc = fleet_view(reports, NOW, FleetOptions(top=2)).to_dict()
    assert len(doc["nodes"]) == 15 and len(doc["by_reclaimable"]) == 2
    by_name = {n["node"]: n for n in doc["nodes"]}
    assert all(by_name[r.node]["status"] == r.to_status() for r in reports)
    assert doc["summary"]["reclaimable_bytes"] == sum(i * Ti + 1 for i in range(15))
    assert doc["now"] == "2025-12-05T02:00:00Z" and doc["stale_after_seconds"] == 2400


# --- the tables -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "shown"),
    [(0, "0"), (99_999, "99,999"), (100_000, "100k"), (123_456_789, "123M"),
     (1_500_000, "1.5M"), (-987_654_321, "-988M"), (None, "-")],
)  # fmt: skip
def test_count_cell_is_short(n: int | None, shown: str) -> None:
    assert count_cell(n) == shown


def test_pressure_cell_drops_the_suffix() -> None:
    assert pressure_cell(("MemoryPressure", "DiskPressure", "PIDPressure")) == "Memory,Disk,PID"
    assert pressure_cell(()) == "-"


def widest() -> list[NodeReport]:
    """The widest cells each column can get: the longest node name, the largest and most
    negative numbers in their units, every condition, the longest signal name."""
    big = 1023 * Ti + 900 * Gi  # "1023.9Ti"
    return [
        report(LONGEST, reclaimable=big, mode="report",
               conditions=("MemoryPressure", "DiskPressure", "PIDPressure"),
               signals=(SignalMargin("allocatableMemory.available", "1023.5Mi", big,
                                     -(1023 * Gi + 900 * Mi), True),),
               last_apply=LastApply(at(60), ("gc all",), 10**6, 1023 * Gi + 950 * Mi, 0)),
        report(LONGEST[:200] + "-b", ago=47 * 3600 + 59 * 60, reclaimable=1000 * Gi + 512 * Mi,
               signals=(SignalMargin("containerfs.inodesFree", "5%", 4_000_000_000,
                                     -3_999_999_999, False),),
               error="the runtime did not answer: " + "x" * 300),
    ]  # fmt: skip


def rendered(reports: list[NodeReport], width: int) -> str:
    out = io.StringIO()
    render_fleet(fleet_view(reports, NOW, FleetOptions()), out=out, width=width)
    return out.getvalue()


@pytest.mark.parametrize("width", [80, 100, 200])
def test_at_80_columns_no_number_is_cut(width: int) -> None:
    text = rendered(widest(), width)
    lines = text.splitlines()
    # wider only where one word is longer than the line (the terminal soft-wraps it)
    assert all(len(ln.rstrip()) <= width or len(ln.split()[-1]) > width - 16 for ln in lines), text
    cells = text.split()
    for number in ["1023.9Ti", "1000.5Gi", "1023.9Gi", "-1023.9Gi", "1023.5Mi", "4.0G", "-4.0G",
                   "60s", "47h59m*", "Memory,Disk,PID", "allocatableMemory.available",
                   "containerfs.inodesFree", "yes", "no"]:  # fmt: skip
        assert number in cells, f"{number!r} cut:\n{text}"
    # the node name is whole, one word (the terminal soft-wraps it), never shortened
    assert LONGEST in cells
    assert "MET" in text.replace(":", " ").split()  # the met column is named, in any layout


def test_the_summary_line_is_computed_from_the_rows() -> None:
    v = fleet_view(widest(), NOW, FleetOptions())
    assert summary_line(v) == (
        "2 node(s): 1 current, 1 stale, 1 failing; 1 under pressure, 1 with a threshold met; "
        f"reclaimable {format_bytes(1023 * Ti + 900 * Gi + 1000 * Gi + 512 * Mi)} in total"
    )
    assert rendered(widest(), 200).splitlines()[-2] == summary_line(v)


def test_no_reports_says_so() -> None:
    text = rendered([], 80)
    assert text.splitlines()[0] == "no NodeGCReports: is kubegc agent running on the nodes?"
    assert "0 node(s)" in text


def test_report_text_is_plain_text_never_markup_nor_escape_sequences() -> None:
    hostile = [
        report("n[/x]", reclaimable=Gi, mode="[red]x",
               conditions=("Disk\x1b]8;;http://e\x07Pressure", "[link=http://e]P"),
               signals=(SignalMargin("nodefs.available", "[/b]10%", Gi, Mi, False),),
               error="open [/var/lib/kubelet/pods]: [bold red]denied[/] \x1b[2J"),
    ]  # fmt: skip
    text = rendered(hostile, 200)  # the old code raised rich's MarkupError here
    assert "\x1b" not in text and "\x07" not in text
    for shown in ["n[/x]", "[red]x", "[/b]10%", "open [/var/lib/kubelet/pods]:",
                  "[bold", "denied[/]", "\\x1b[2J", "[link=http://e]P", "\\x1b]8;;"]:  # fmt: skip
        assert shown in text, f"{shown!r} not shown as it is:\n{text}"
    assert "\\x1b" in pressure_cell(("Disk\x1bPressure",))


def test_a_df_threshold_from_the_kubelet_config_is_never_read_as_markup() -> None:
    from types import SimpleNamespace

    from kubegc_cli.render.df import _thresholds
    from kubegc_cli.render.table import Screen

    row = {"signal": "nodefs.available", "hard": True, "met": True, "margin": -1,
           "threshold": "[/x][red]10%", "threshold_quantity": Gi, "observed": Mi}  # fmt: skip
    out = io.StringIO()
    Screen(out).grid(_thresholds(SimpleNamespace(eviction=[row])))  # type: ignore[arg-type]
    assert "[/x][red]10%" in out.getvalue() and "MET" in out.getvalue().split()
