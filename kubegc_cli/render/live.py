"""Live views: a table sampled again every few seconds, redrawn in place on a terminal, or
written as one plain frame per sample into a pipe or file."""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kubegc_cli.core.units import format_duration, safe_text
from kubegc_cli.render.pressure import memory_renderable, note_text, render_memory
from kubegc_cli.render.table import make_console, terminal_width

if TYPE_CHECKING:
    from kubegc_cli.commands.memory import MemoryReport


def watch_memory(report: MemoryReport, sample: Callable[[], MemoryReport], interval: float) -> None:
    """Show the `memory available` view of `report`, then of a new `sample()` every
    `interval` seconds, until interrupted (the interrupt is the caller's to handle).

    Each frame starts with its header (`watch_header`: when it was sampled, every how long).
    A note is printed once, when first seen, not in every frame (`note_gist`: a note whose
    figures alone changed is the same note); on a terminal the notes go above the view,
    which is redrawn in place below them."""
    seen: set[str] = set()

    def new_notes(r: MemoryReport) -> list[str]:
        fresh = [n for n in r.notes if note_gist(n) not in seen]
        seen.update(note_gist(n) for n in fresh)
        return fresh

    if not sys.stdout.isatty():
        # Into a pipe or file (`| tee log`): one plain frame per sample, each flushed at
        # once, 200 columns wide as every other table written there.
        while True:
            print(watch_header(report, interval), flush=True)
            render_memory(report, notes=False)
            for note in new_notes(report):
                print("note: " + safe_text(note))
            print(flush=True)
            time.sleep(interval)
            report = sample()

    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from rich.console import Group

    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from rich.live import Live

    width = terminal_width(sys.stdout)

    def view(r: MemoryReport) -> Any:
        body = memory_renderable(r, width, notes=False)
        return Group(watch_header(r, interval, live=True), "", body)

    with Live(view(report), console=make_console(sys.stdout), refresh_per_second=4,
              screen=False) as live:  # fmt: skip
        while True:
            for note in new_notes(report):
                live.console.print(note_text(note))  # (above the view, printed once)
            time.sleep(interval)
            report = sample()
            live.update(view(report))


def watch_header(report: MemoryReport, interval: float, *, live: bool = False) -> str:
    """A watched frame's first line: `sample at 2026-12-05T06:40:12Z, every 2s` (the sample's
    time, UTC, to the second), and on a terminal how to stop."""
    at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(report.captured_at // 1_000_000_000))
    every = format_duration(interval) if interval == int(interval) else f"{interval:g}s"
    return f"sample at {at}, every {every}" + ("  (Ctrl-C to stop)" if live else "")


def note_gist(note: str) -> str:
    """What a note says without its figures (`1.2Gi`, `512`, `3.5e9`): the same note with
    other numbers is not new."""
    return _FIGURE.sub("#", note)


_FIGURE = re.compile(r"\d+(?:\.\d+)?(?:e\d+)?(?:[KMGTPE]i?)?B?")
