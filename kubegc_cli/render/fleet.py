"""`kubegc fleet` as rich tables: nodes by reclaimable bytes, nodes nearest to eviction,
reports not current, and a summary line computed from every report.

Built for 80 columns: every number is in human units (bytes as `format_bytes`, counts as
`count_cell`, ages as `format_duration`) and never cut; the node name is never cut either,
and a report's error text moves under its row when the width runs out (`render.table`)."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from kubegc_cli.core.units import format_bytes, format_duration, safe_text
from kubegc_cli.render.pressure import bytes_cell
from kubegc_cli.render.table import Column, Grid, Screen, View

if TYPE_CHECKING:
    from kubegc_cli.commands.fleet import FleetView, NodeRow
    from kubegc_cli.core.fleet import SignalMargin

#: Signals counted in inodes or PIDs, not bytes (the kubelet's signal names).
COUNTED = ("nodefs.inodesFree", "imagefs.inodesFree", "containerfs.inodesFree", "pid.available")


def count_cell(n: int | None) -> str:
    """A count (inodes, PIDs) in at most 7 characters: `12,345` below 100,000, else with an
    SI suffix (`250k`, `1.2M`, `3.4G`); negative with a leading `-`; `-` for None."""
    if n is None:
        return "-"
    sign, v = ("-", -n) if n < 0 else ("", n)
    if v < 100_000:
        return f"{sign}{v:,}"
    for unit, scale in (("k", 10**3), ("M", 10**6), ("G", 10**9), ("T", 10**12)):
        if v < scale * 1000 or unit == "T":
            q = v / scale
            return f"{sign}{q:.0f}{unit}" if q >= 100 else f"{sign}{q:.1f}{unit}"
    return f"{sign}{v}"  # (not reached)


def amount(s: SignalMargin, n: int | None) -> str:
    """`n` in the unit of signal `s`: bytes, or a count for inode and PID signals."""
    return count_cell(n) if s.signal in COUNTED else bytes_cell(n)


def pressure_cell(conditions: tuple[str, ...]) -> str:
    """The conditions held, short: `DiskPressure` → `Disk`; `-` for none (control characters
    replaced: the names come from a report)."""
    return safe_text(",".join(c.removesuffix("Pressure") for c in conditions)) or "-"


def age_cell(row: NodeRow) -> str:
    if row.future:
        return "future"
    return "never" if row.age is None else format_duration(row.age)


def _of(shown: int, total: int) -> str:
    return f"top {shown} of {total}" if shown < total else f"{total}"


def summary_line(view: FleetView) -> str:
    """One line from `FleetView.summary()`."""
    s = view.summary()
    return (
        f"{s['nodes']} node(s): {s['current']} current, {s['stale']} stale, "
        f"{s['failing']} failing; {s['under_pressure']} under pressure, "
        f"{s['threshold_met']} with a threshold met; "
        f"reclaimable {format_bytes(s['reclaimable_bytes'])} in total"
    )


def render_fleet(
    view: FleetView,
    *,
    out: IO[str] | None = None,
    width: int | None = None,
    table_view: View | None = None,
) -> None:
    """Print the fleet view: three tables and the summary line, for `width` columns (default:
    the terminal's; into a pipe, no limit). The node name is the first cell of each row,
    whole; what does not fit moves under its row (`render.table`)."""
    screen = Screen(out, table_view)
    if width is not None:
        screen.width = width
    stale_after = format_duration(view.options.stale)
    if not view.rows:
        screen.line("no NodeGCReports: is kubegc agent running on the nodes?")
    if view.by_reclaimable:
        title = f"Nodes by reclaimable bytes ({_of(len(view.by_reclaimable), len(view.rows))})"
        t = Grid(title, [Column("NODE", "id"), Column("RECLAIMABLE", "num"),
                         Column("PRESSURE", "word"), Column("MODE", "word"),
                         Column("LAST FREED", "num"), Column("OBSERVED", "num")])  # fmt: skip
        for r in view.by_reclaimable:
            last = r.report.last_apply
            t.add([
                safe_text(r.node), bytes_cell(r.report.reclaimable),
                pressure_cell(r.report.conditions), safe_text(r.report.mode),
                "-" if last is None else bytes_cell(last.bytes_freed),
                age_cell(r) + ("*" if r.stale else ""),
            ])  # fmt: skip
        screen.grid(t)
        screen.line("")
    if view.nearest:
        total = sum(1 for r in view.rows if r.nearest is not None)
        t = Grid(f"Nodes nearest to eviction ({_of(len(view.nearest), total)})",
                 [Column("NODE", "id"), Column("SIGNAL", "word"), Column("THRESHOLD", "num"),
                  Column("AVAILABLE", "num"), Column("MARGIN", "num"),
                  Column("MET", "word")])  # fmt: skip
        for r in view.nearest:
            s = r.nearest
            assert s is not None
            t.add([
                safe_text(r.node), safe_text(s.signal), safe_text(s.threshold),
                amount(s, s.available), amount(s, s.margin), "yes" if s.met else "no",
            ])  # fmt: skip
        screen.grid(t)
        screen.line("")
    if view.not_current:
        t = Grid(
            f"Reports not current (stale after {stale_after} or dated ahead, or the last cycle "
            "failed)",
            [Column("NODE", "id"), Column("OBSERVED", "num"), Column("STATE", "word"),
             Column("ERROR")],
        )  # fmt: skip
        for r in view.not_current:
            flags = (("stale", r.stale), ("future", r.future), ("failing", r.failing))
            state = ", ".join(w for w, on in flags if on)
            t.add([safe_text(r.node), age_cell(r), state, safe_text(r.report.error) or "-"])
        screen.grid(t)
        screen.line("")
    screen.line(summary_line(view), style="bold")
    if any(r.stale for r in view.by_reclaimable):
        screen.line(f"* stale: observed more than {stale_after} ago", style="dim")
