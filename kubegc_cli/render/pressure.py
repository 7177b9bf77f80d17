"""Tables for the observe-only commands: `memory available` and `evict check` (rich)."""

from __future__ import annotations

import sys
from typing import IO, TYPE_CHECKING, Any

from kubegc_cli.core.units import format_bytes, safe_text
from kubegc_cli.render.plan import make_console

if TYPE_CHECKING:
    from kubegc_cli.commands.evict import EvictionReport
    from kubegc_cli.commands.memory import MemoryReport


def bytes_cell(n: int | None) -> str:
    if n is None:
        return "-"
    return f"-{format_bytes(-n)}" if n < 0 else format_bytes(n)


def _kv_table(title: str) -> Any:
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.table import Table

    t = Table(title=title, title_justify="left", title_style="bold", box=None, show_header=False,
              pad_edge=False)  # fmt: skip
    t.add_column(no_wrap=True)
    t.add_column(justify="right", no_wrap=True)
    t.add_column(style="dim")
    return t


def rows_table(title: str, columns: list[tuple[str, bool]]) -> Any:
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.table import Table

    t = Table(title=title, title_justify="left", title_style="bold", box=None,
              header_style="bold", pad_edge=False)  # fmt: skip
    for name, right in columns:
        t.add_column(name, justify="right" if right else "left", no_wrap=True)
    return t


def memory_renderable(report: MemoryReport, *, notes: bool = True) -> Any:
    """The `memory available` view as one rich renderable (printed once, or live with
    --watch); `notes` False leaves the report's notes out (a watch prints each once)."""
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.console import Group

    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.text import Text

    n = report.node
    v = report.layout.version
    t = _kv_table(
        f"memory.available  {bytes_cell(n.available)}  (cgroup v{v}, as the kubelet computes it)"
    )
    t.add_row("capacity", bytes_cell(n.capacity), "MemTotal, /proc/meminfo")
    usage_src = "root memory.stat anon + file" if v == 2 else "root memory.usage_in_bytes"
    t.add_row("usage", bytes_cell(n.usage), usage_src)
    t.add_row("− inactive_file", bytes_cell(n.inactive_file), "reclaimable page cache")
    t.add_row("= working set", bytes_cell(n.working_set), "clamped at 0")
    t.add_row(
        "  of which active_file", bytes_cell(n.active_file), "page cache the kubelet counts as used"
    )
    t.add_row("memory.available", bytes_cell(n.available), "capacity − working set")
    t.add_row("MemAvailable", bytes_cell(n.mem_available), "the kernel's view, what `free` shows")
    parts: list[Any] = [t]
    a = report.allocatable
    if a is not None:
        at = _kv_table(f"allocatableMemory.available  {bytes_cell(a.available)}  (the pods cgroup)")
        at.add_row("allocatable", bytes_cell(a.allocatable), safe_text(a.allocatable_source))
        at.add_row("usage", bytes_cell(a.usage), safe_text(a.cgroup))
        at.add_row("− inactive_file", bytes_cell(a.inactive_file), "")
        at.add_row("= working set", bytes_cell(a.working_set), "")
        at.add_row("  of which active_file", bytes_cell(a.active_file), "")
        at.add_row(
            "allocatableMemory.available", bytes_cell(a.available), "allocatable − working set"
        )
        parts += [Text(""), at]
    if report.pods:
        shown = len(report.pods)
        title = f"Pods by working set (top {shown} of {report.pod_count})"
        cols = [
            ("NAMESPACE", False),
            ("POD", False),
            ("QOS", False),
            ("WORKING SET", True),
            ("USAGE", True),
            ("INACTIVE FILE", True),
            ("ACTIVE FILE", True),
            ("UID", False),
        ]
        pt = rows_table(title, cols)
        for p in report.pods:
            pt.add_row(
                safe_text(p.namespace or "?"), safe_text(p.name or "?"), p.qos,
                bytes_cell(p.working_set), bytes_cell(p.usage), bytes_cell(p.inactive_file),
                bytes_cell(p.active_file), p.uid,
            )  # fmt: skip
        parts += [Text(""), pt]
    for note in report.notes if notes else ():
        parts.append(note_text(note))
    return Group(*parts)


def note_text(note: str) -> Any:
    """One note line as shown under a view: `note: ...`, in yellow on a terminal."""
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.text import Text

    return Text("note: " + safe_text(note), style="yellow")


def render_memory(report: MemoryReport, out: IO[str] | None = None) -> None:
    """Print the `memory available` view once."""
    make_console(out or sys.stdout).print(memory_renderable(report))


def render_eviction(
    report: EvictionReport, *, verbose: int = 0, out: IO[str] | None = None
) -> None:
    """Print `evict check`: one row per threshold, then ranked pods per met signal and notes."""
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.text import Text

    console = make_console(out or sys.stdout)
    t = rows_table("Eviction thresholds", [
        ("SIGNAL", False), ("OBSERVED", True), ("THRESHOLD", True), ("", True), ("MARGIN", True),
        ("MET", False), ("KIND", False), ("CONDITION", False), ("KUBELET RECLAIMS FIRST", False),
    ])  # fmt: skip
    for r in report.results:
        th = r.threshold
        inode = "inodes" in th.signal
        fmt = (lambda x: str(x)) if inode or th.signal == "pid.available" else bytes_cell
        observed = fmt(r.observation.available) if r.observation is not None else "unknown"
        kind = "hard" if th.hard else f"soft ({th.grace_period:g}s grace)"
        met = "[bold red]MET[/]" if r.met else "no"
        t.add_row(
            th.signal, observed, safe_text(th.text), f"({fmt(r.threshold_quantity)})"
            if r.observation is not None else "", fmt(r.margin) if r.observation is not None
            else "-", met, kind, r.condition,
            ", ".join(x.split("(")[-1].rstrip(")") for x in r.reclaim) or "-",
        )  # fmt: skip
    for signal, text, _source in report.config.disabled:
        t.add_row(signal, "", safe_text(text), "", "", "disabled", "", "", "-")
    console.print(t)
    for signal, ranked in report.ranking.items():
        if not ranked:
            continue  # the notes say why no pod is ranked
        rt = rows_table(
            f"Pods the kubelet would evict first for {signal}",
            [("#", True), ("NAMESPACE", False), ("POD", False), ("PRIORITY", True),
             ("USAGE", True), ("REQUEST", True), ("EXCEEDS", False), ("NOTE", False)],
        )  # fmt: skip
        for i, row in enumerate(ranked, 1):
            rt.add_row(str(i), safe_text(row["namespace"]), safe_text(row["name"]),
                       str(row["priority"]), row["usage_text"], row["request_text"],
                       "yes" if row["exceeds"] else "no", safe_text(row["note"]))  # fmt: skip
        console.print(Text(""))
        console.print(rt)
    for note in report.notes:
        console.print(Text("note: " + safe_text(note), style="yellow"))
    if verbose:
        for line in report.provenance():
            console.print(Text(safe_text(line), style="dim"))
    console.print(Text(report.summary_line(), style="bold"))
