"""`kubegc fleet` as rich tables: nodes by reclaimable bytes, nodes nearest to eviction,
reports not current, and a summary line computed from every report.

Built for 80 columns: every number is in human units (bytes as `format_bytes`, counts as
`count_cell`, ages as `format_duration`) and never cut; the node name (and a report's error
text) is the only long cell, folded onto more lines when the width runs out."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any

from kubegc_cli.core.units import format_bytes, format_duration, safe_text
from kubegc_cli.render.plan import make_console
from kubegc_cli.render.pressure import bytes_cell

if TYPE_CHECKING:
    from kubegc_cli.commands.fleet import FleetView, NodeRow
    from kubegc_cli.core.fleet import SignalMargin

#: The narrowest the node column gets before the other columns would have to be cut.
NODE_MIN_WIDTH = 12
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


def _plain_row(t: Any, *cells: str) -> None:
    """Add a row whose every cell is plain text: a report's text is never read as rich
    markup (`[/var/lib]` would raise, `[red]` would style) and never reaches the terminal
    with its control characters."""
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.text import Text

    t.add_row(*(Text(safe_text(c)) for c in cells))


def age_cell(row: NodeRow) -> str:
    if row.future:
        return "future"
    return "never" if row.age is None else format_duration(row.age)


def _table(title: str, columns: list[tuple[str, str]]) -> Any:
    """A table of `columns` (header, kind): kind "text" folds onto more lines when the width
    runs out (the node first: it is the widest), "num" (right-aligned) is never wrapped nor
    cut, "word" (left-aligned) neither: a short fixed word."""
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.table import Table

    t = Table(title=title, title_justify="left", title_style="bold", box=None,
              header_style="bold", pad_edge=False)  # fmt: skip
    for i, (name, kind) in enumerate(columns):
        if kind == "text":
            t.add_column(name, overflow="fold", min_width=NODE_MIN_WIDTH if i == 0 else None)
        else:
            t.add_column(name, justify="right" if kind == "num" else "left", no_wrap=True)
    return t


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


def render_fleet(view: FleetView, *, out: IO[str] | None = None, width: int | None = None) -> None:
    """Print the fleet view: three tables and the summary line. `width` columns (default:
    the terminal's, or 200 into a pipe)."""
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.text import Text

    console = make_console(out or sys.stdout)
    if width is not None:
        console.width = width
    stale_after = format_duration(view.options.stale)
    if not view.rows:
        console.print(Text("no NodeGCReports: is kubegc agent running on the nodes?"))
    if view.by_reclaimable:
        title = f"Nodes by reclaimable bytes ({_of(len(view.by_reclaimable), len(view.rows))})"
        columns = [("NODE", "text"), ("RECLAIMABLE", "num"), ("PRESSURE", "text"),
                   ("MODE", "word"), ("LAST FREED", "num"), ("OBSERVED", "num")]  # fmt: skip
        t = _table(title, columns)
        for r in view.by_reclaimable:
            last = r.report.last_apply
            _plain_row(
                t, safe_text(r.node), bytes_cell(r.report.reclaimable),
                pressure_cell(r.report.conditions), safe_text(r.report.mode)[:6],
                "-" if last is None else bytes_cell(last.bytes_freed),
                age_cell(r) + ("*" if r.stale else ""),
            )  # fmt: skip
        console.print(t)
        console.print()
    if view.nearest:
        total = sum(1 for r in view.rows if r.nearest is not None)
        t = _table(f"Nodes nearest to eviction ({_of(len(view.nearest), total)})",
                   [("NODE", "text"), ("SIGNAL", "word"), ("THRESHOLD", "num"),
                    ("AVAILABLE", "num"), ("MARGIN", "num"), ("", "word")])  # fmt: skip
        for r in view.nearest:
            s = r.nearest
            assert s is not None
            _plain_row(
                t, safe_text(r.node), safe_text(s.signal), safe_text(s.threshold),
                amount(s, s.available), amount(s, s.margin), "MET" if s.met else "",
            )  # fmt: skip
        console.print(t)
        console.print()
    if view.not_current:
        t = _table(
            f"Reports not current (stale after {stale_after} or dated ahead, or the last cycle "
            "failed)",
            [("NODE", "text"), ("OBSERVED", "num"), ("STATE", "word"), ("ERROR", "text")],
        )
        for r in view.not_current:
            flags = (("stale", r.stale), ("future", r.future), ("failing", r.failing))
            state = ", ".join(w for w, on in flags if on)
            _plain_row(t, safe_text(r.node), age_cell(r), state, safe_text(r.report.error) or "-")
        console.print(t)
        console.print()
    console.print(Text(summary_line(view), style="bold"))
    if any(r.stale for r in view.by_reclaimable):
        console.print(Text(f"* stale: observed more than {stale_after} ago", style="dim"))
