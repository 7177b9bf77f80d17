"""Tables for the observe-only commands: `memory available` and `evict check` (rich)."""

from __future__ import annotations

from typing import IO, TYPE_CHECKING, Any

from kubegc_cli.core.units import format_bytes, safe_text
from kubegc_cli.node.host.stall import swapping
from kubegc_cli.render.table import Column, Grid, Line, Screen, View, grid_lines, prose

if TYPE_CHECKING:
    from kubegc_cli.commands.evict import EvictionReport
    from kubegc_cli.commands.memory import MemoryReport


def bytes_cell(n: int | None) -> str:
    if n is None:
        return "-"
    return f"-{format_bytes(-n)}" if n < 0 else format_bytes(n)


def _kv_grid(title: str) -> Grid:
    """A table of name, value (a number) and where it comes from, without a header line."""
    return Grid(title, [Column("", "id"), Column("", "num"), Column("")], header=False)


def memory_lines(
    report: MemoryReport, width: int | None, view: View | None = None, *, notes: bool = True
) -> list[Line]:
    """The `memory available` view as lines for `width` columns (`render.table.grid_lines`);
    `notes` False leaves the report's notes out (a watch prints each once)."""
    n = report.node
    v = report.layout.version
    t = _kv_grid(
        f"memory.available  {bytes_cell(n.available)}  (cgroup v{v}, as the kubelet computes it)"
    )
    t.add(["capacity", bytes_cell(n.capacity), "MemTotal, /proc/meminfo"])
    usage_src = "root memory.stat anon + file" if v == 2 else "root memory.usage_in_bytes"
    t.add(["usage", bytes_cell(n.usage), usage_src])
    t.add(["− inactive_file", bytes_cell(n.inactive_file), "reclaimable page cache"])
    t.add(["= working set", bytes_cell(n.working_set), "clamped at 0"])
    t.add(["  of which active_file", bytes_cell(n.active_file),
           "page cache the kubelet counts as used"])  # fmt: skip
    t.add(["memory.available", bytes_cell(n.available), "capacity − working set"])
    t.add(["MemAvailable", bytes_cell(n.mem_available), "the kernel's view, what `free` shows"])
    lines = grid_lines(t, width, view)
    a = report.allocatable
    if a is not None:
        at = _kv_grid(f"allocatableMemory.available  {bytes_cell(a.available)}  (the pods cgroup)")
        at.add(["allocatable", bytes_cell(a.allocatable), safe_text(a.allocatable_source)])
        at.add(["usage", bytes_cell(a.usage), safe_text(a.cgroup)])
        at.add(["− inactive_file", bytes_cell(a.inactive_file), ""])
        at.add(["= working set", bytes_cell(a.working_set), ""])
        at.add(["  of which active_file", bytes_cell(a.active_file), ""])
        at.add(["allocatableMemory.available", bytes_cell(a.available),
                "allocatable − working set"])  # fmt: skip
        lines += [("", None), *grid_lines(at, width, view)]
    if report.pods:
        shown = len(report.pods)
        # a node with swap: each pod's swapped-out bytes, which no memory signal counts
        with_swap = swapping(report.swap)
        pt = Grid(
            f"Pods by working set (top {shown} of {report.pod_count})",
            [Column("POD", "id"), Column("QOS", "word"), Column("WORKING SET", "num"),
             Column("USAGE", "num"), Column("INACTIVE FILE", "num"), Column("ACTIVE FILE", "num"),
             *([Column("SWAP", "num")] if with_swap else []), Column("UID", "word")],
        )  # fmt: skip
        for p in report.pods:
            swap = [bytes_cell(p.swap) if p.swap is not None else "-"] if with_swap else []
            pt.add([
                f"{safe_text(p.namespace or '?')}/{safe_text(p.name or '?')}", p.qos,
                bytes_cell(p.working_set), bytes_cell(p.usage), bytes_cell(p.inactive_file),
                bytes_cell(p.active_file), *swap, safe_text(p.uid),
            ])  # fmt: skip
        lines += [("", None), *grid_lines(pt, width, view)]
    for note in report.notes if notes else ():
        lines += [(text, "yellow") for text in prose("note: " + safe_text(note), width)]
    return lines


def memory_renderable(report: MemoryReport, width: int | None = None, *, notes: bool = True) -> Any:
    """The `memory available` view as one rich renderable (for the live view of --watch);
    `notes` False leaves the report's notes out (a watch prints each once)."""
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.console import Group

    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.text import Text

    lines = memory_lines(report, width, notes=notes)
    return Group(*(Text(text, style=style or "") for text, style in lines))


def note_text(note: str) -> Any:
    """One note line as shown under a view: `note: ...`, in yellow on a terminal."""
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.text import Text

    return Text("note: " + safe_text(note), style="yellow")


def render_memory(
    report: MemoryReport, out: IO[str] | None = None, view: View | None = None, *,
    notes: bool = True,
) -> None:  # fmt: skip
    """Print the `memory available` view once (`notes` False: without the report's notes)."""
    screen = Screen(out, view)
    screen.lines(memory_lines(report, screen.width, screen.view, notes=notes))


def render_eviction(
    report: EvictionReport,
    *,
    verbose: int = 0,
    out: IO[str] | None = None,
    view: View | None = None,
) -> None:
    """Print `evict check`: one row per threshold, then ranked pods per met signal and notes.
    Observed, threshold, margin and MET stay whole on the signal's line at any width."""
    screen = Screen(out, view)
    t = Grid("Eviction thresholds", [
        Column("SIGNAL", "id"), Column("OBSERVED", "num"), Column("THRESHOLD", "num"),
        Column("", "num"), Column("MARGIN", "num"), Column("MET", "id"), Column("KIND", "word"),
        Column("CONDITION", "word"), Column("KUBELET RECLAIMS FIRST"),
    ])  # fmt: skip
    for r in report.results:
        th = r.threshold
        inode = "inodes" in th.signal
        fmt = (lambda x: str(x)) if inode or th.signal == "pid.available" else bytes_cell
        seen = r.observation is not None
        t.add(
            [
                th.signal,
                fmt(r.observation.available) if r.observation is not None else "unknown",
                safe_text(th.text),
                f"({fmt(r.threshold_quantity)})" if seen else "",
                fmt(r.margin) if seen else "-",
                "MET" if r.met else "no",
                "hard" if th.hard else f"soft ({th.grace_period:g}s grace)",
                r.condition,
                ", ".join(x.split("(")[-1].rstrip(")") for x in r.reclaim) or "-",
            ],
            "bold red" if r.met else None,
        )
    for signal, text, _source in report.config.disabled:
        t.add([signal, "", safe_text(text), "", "", "disabled", "", "", "-"])
    screen.grid(t)
    for signal, ranked in report.ranking.items():
        if not ranked:
            continue  # the notes say why no pod is ranked
        swapping = report.swap_shown(signal)
        rt = Grid(
            f"Pods the kubelet would evict first for {signal}",
            [Column("#", "num"), Column("POD", "id"), Column("PRIORITY", "num"),
             Column("USAGE", "num"), Column("REQUEST", "num"),
             *([Column("SWAP", "num")] if swapping else []), Column("EXCEEDS", "word"),
             Column("NOTE")],
        )  # fmt: skip
        for i, row in enumerate(ranked, 1):
            swap = [bytes_cell(row["swap"])] if swapping else []
            rt.add([str(i), f"{safe_text(row['namespace'])}/{safe_text(row['name'])}",
                    str(row["priority"]), safe_text(row["usage_text"]),
                    safe_text(row["request_text"]), *swap, "yes" if row["exceeds"] else "no",
                    safe_text(row["note"])])  # fmt: skip
        screen.line("")
        screen.grid(rt)
    for note in report.notes:
        screen.line("note: " + safe_text(note), style="yellow")
    if verbose:
        for line in report.provenance():
            screen.line(safe_text(line), style="dim")
    screen.line(report.summary_line(), style="bold")
