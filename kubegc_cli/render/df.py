"""`kubegc df` as rich tables, and its progress indicator on a terminal's stderr."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

from kubegc_cli.commands.df import CMD_ALL, CMD_CONTAINERS, CMD_IMAGES, CMD_RESIDUE
from kubegc_cli.core.units import format_bytes, safe_text
from kubegc_cli.render.pressure import bytes_cell
from kubegc_cli.render.table import Column, Grid, Screen, View

if TYPE_CHECKING:
    from kubegc_cli.commands.df import DfReport, Filesystem, Line
    from kubegc_cli.node.diskusage import Progress

BAR_WIDTH = 20
_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(share: float, width: int = BAR_WIDTH) -> str:
    """`share` (0–1, clamped) as a bar of `width` cells drawn in eighths of a cell."""
    share = min(1.0, max(0.0, share))
    eighths = round(share * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[part] if part else "")
    return text.ljust(width, "·")


@contextmanager
def walk_progress(enabled: bool) -> Iterator[Progress | None]:
    """A transient rich progress display on stderr while the trees are walked, or None when
    not `enabled` (stderr is not a terminal): yields the callback `disk_usage` takes."""
    if not enabled:
        yield None
        return
    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.console import Console

    # deferred: tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich  # noqa: E501
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(file=sys.stderr)
    with Progress(
        TextColumn("walking {task.description}"), BarColumn(), MofNCompleteColumn(),
        console=console, transient=True,
    ) as shown:  # fmt: skip
        tasks: dict[str, Any] = {}

        def update(what: str, done: int, total: int) -> None:
            task = tasks.get(what)
            if task is None:
                task = tasks[what] = shown.add_task(what, total=total)
            shown.update(task, completed=done, total=total)

        yield update


def _header(f: Filesystem) -> str:
    st = f.stats
    pct = f"{f.used * 100 / f.capacity:.0f}%" if f.capacity else "-"
    inodes_used = st.inodes - st.inodes_free
    ipct = f" ({inodes_used * 100 / st.inodes:.0f}%)" if st.inodes else ""
    return (
        f"{' + '.join(f.shown_roles)}  {safe_text(f.path)}: {format_bytes(f.capacity)} capacity, "
        f"{format_bytes(f.used)} used ({pct}), {format_bytes(f.available)} available; "
        f"inodes {inodes_used:,} of {st.inodes:,} used{ipct}"
    )


def _thresholds(f: Filesystem) -> Grid:
    """The eviction thresholds of a filesystem: signal, threshold as configured and as a
    quantity, kind, observed, margin (or MET)."""
    grid = Grid("", [Column("  EVICTION", "id"), Column("THRESHOLD", "num"),
                     Column("", "num"), Column("OBSERVED", "num"), Column("MARGIN", "num"),
                     Column("KIND", "word")])  # fmt: skip
    for row in f.eviction:
        inodes = row["signal"].endswith("inodesFree")
        fmt: Callable[[int], str] = (lambda n: f"{n:,}") if inodes else bytes_cell
        kind = "hard" if row["hard"] else f"soft, {row['grace_period_seconds']:g}s grace"
        grid.add(
            [
                "  " + safe_text(row["signal"]),
                safe_text(row["threshold"]),
                f"= {fmt(row['threshold_quantity'])}",
                fmt(row["observed"]),
                "MET" if row["met"] else fmt(row["margin"]),
                kind,
            ],
            "bold red" if row["met"] else None,
        )
    return grid


def _image_gc_text(gc: dict[str, Any]) -> str:
    if gc["disabled"]:
        return "image GC: disabled (high threshold 100% and MaxAge 0, as the kubelet)"
    pct = gc["usage_percent"]
    where = "unknown" if pct is None else f"{pct}%"
    state = (
        "at or above high: the kubelet's image GC frees down to low"
        if gc["above_high"]
        else "below high: the kubelet's image GC frees nothing"
    )
    return (
        f"image GC: usage {where} (kubelet arithmetic), high {gc['high_threshold']}%, "
        f"low {gc['low_threshold']}%, MinAge {safe_text(gc['minimum_image_ttl_duration'])}: "
        f"{state}"
    )


#: What a line's count counts (singular), by line key, else by the key before its dot.
NOUNS = {"images": "image", "writable-layers": "container", "logs": "pod",
         "logs.dead-containers": "container", "empty-dir": "volume", "pod-dirs": "pod",
         "residue": "dir", "log-rotation": "file"}  # fmt: skip


def _counted(ln: Line) -> str:
    noun = NOUNS.get(ln.key) or NOUNS.get(ln.key.split(".", 1)[0], "")
    if not noun or ln.count is None:
        return "" if ln.count is None else f" ({ln.count:,})"
    return f" ({ln.count:,} {noun}{'' if ln.count == 1 else 's'})"


def _row(ln: Line, capacity: int) -> list[str]:
    label = ("  " + ln.label) if ln.parent else ln.label
    label += _counted(ln)
    if ln.bytes is None:
        return [label, "unknown", "", "", "-", ""]
    share = ln.bytes / capacity if capacity else 0.0
    drawn = "" if ln.parent else bar(share)
    back = "-" if ln.reclaimable is None else bytes_cell(ln.reclaimable) if ln.reclaimable else ""
    return [
        label,
        bytes_cell(ln.bytes),
        drawn,
        f"{share * 100:.1f}%",
        back,
        short_command(ln.command),
    ]


def short_command(command: str) -> str:
    """`command` without the options df added to it ("…" stands for them): the table stays
    narrow; `render_df` prints each full command once below."""
    for base in (CMD_IMAGES, CMD_CONTAINERS, CMD_ALL, CMD_RESIDUE):
        if command.startswith(base + " "):
            return base + " …"
    return command


def _filesystem(screen: Screen, f: Filesystem, verbose: int) -> None:
    screen.line(_header(f), style="bold")
    if f.eviction:
        screen.grid(_thresholds(f))
    if f.image_gc is not None:
        screen.line(_image_gc_text(f.image_gc), style="red" if f.image_gc["above_high"] else None,
                    indent=2)  # fmt: skip
    t = Grid("", [Column("", "id"), Column("BYTES", "num"),
                  Column("SHARE OF CAPACITY", "decor"), Column("%", "num"),
                  Column("RECLAIMABLE", "num"), Column("RECLAIM WITH")])  # fmt: skip
    for ln in f.lines:
        if ln.parent and not verbose and not ln.bytes and not ln.reclaimable:
            continue
        t.add(_row(ln, f.capacity), "bold" if ln.key == "other" else None)
    t.add(["used", bytes_cell(f.used), bar(f.used / f.capacity if f.capacity else 0.0),
           f"{f.used * 100 / f.capacity:.1f}%" if f.capacity else "",
           bytes_cell(f.reclaimable()), ""], "bold")  # fmt: skip
    screen.grid(t)
    for ln in f.lines:
        if ln.note and (verbose or ln.bytes is None or ln.key == "other" or ln.note_shown):
            screen.note(f"{ln.label}: {safe_text(ln.note)}")
    for note in f.notes:
        screen.note("note: " + safe_text(note), style="yellow")
    screen.line("")


def render_df(
    report: DfReport, *, verbose: int = 0, out: IO[str] | None = None, view: View | None = None
) -> None:
    """Print `kubegc df`: per filesystem its figures, thresholds and breakdown (a bar per
    line), then the pods with the largest footprint, the mount points not counted (all of
    them with `verbose`) and the notes. Every figure whole at any width (`render.table`)."""
    screen = Screen(out, view)
    for f in report.filesystems:
        _filesystem(screen, f, verbose)
    if report.pods:
        title = f"Pods by footprint (top {len(report.pods)} of {report.pod_count})"
        pt = Grid(title, [
            Column("POD", "id"), Column("LOGS", "num"),
            Column("EMPTYDIR", "num"), Column("WRITABLE LAYERS", "num"),
            Column("FOOTPRINT", "num"), Column("MOUNTS", "num"), Column("POD STATE", "word"),
            Column("UID", "id", wide=True),
        ])  # fmt: skip
        for p in report.pods:
            pt.add([
                f"{safe_text(p.namespace or '?')}/{safe_text(p.name or p.uid)}",
                bytes_cell(p.logs),
                bytes_cell(p.empty_dir), "unknown" if p.writable_layers is None else
                bytes_cell(p.writable_layers), bytes_cell(p.footprint), str(len(p.mounted)),
                "deleted" if p.deleted else "", safe_text(p.uid),
            ])  # fmt: skip
        screen.grid(pt)
        screen.line("")
    full = dict.fromkeys(
        ln.command for f in report.filesystems for ln in f.lines
        if ln.command and short_command(ln.command) != ln.command
    )  # fmt: skip
    if report.reclaimable() and report.reclaim_command:
        screen.line("Reclaim all of it in one run (one plan, one confirmation, the disk "
                    "measured after):", style="bold")  # fmt: skip
        screen.line(safe_text(report.reclaim_command), indent=2, whole=True)
        screen.line("")
    if full:
        screen.line("Reclaim with (… = the options that act on what was measured):",
                    style="bold")  # fmt: skip
        for command in full:
            screen.line(safe_text(command), indent=2, whole=True)
        screen.line("")
    if report.mounted and verbose:
        screen.line("Mounted below pod directories, not counted:", style="bold")
        for m in report.mounted:
            screen.line(f"{safe_text(m['path'])}  (pod {m['pod_uid'] or '?'})", indent=2)
    for note in report.notes:
        screen.line("note: " + safe_text(note), style="yellow")
    if verbose:
        screen.line(
            f"walked {report.entries:,} entries in {report.walk_seconds:.2f}s; "
            f"pod source {report.pod_source}",
            style="dim",
        )
    total = report.reclaimable()
    line = f"reclaimable: {format_bytes(total)}"
    if report.runtime_error:
        line += "; the runtime could not be read (exit 3)"
    elif report.images_unknown:
        line += "; images and writable layers are unknown (exit 3)"
    screen.line(line, style="bold")
