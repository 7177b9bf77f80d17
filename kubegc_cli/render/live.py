"""Live views: a table sampled again every few seconds, redrawn in place on a terminal, or
written as one plain frame per sample into a pipe or file."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from kubegc_cli.core.units import ns_to_rfc3339
from kubegc_cli.render.pressure import memory_renderable, render_memory
from kubegc_cli.render.table import make_console, terminal_width

if TYPE_CHECKING:
    from kubegc_cli.commands.memory import MemoryReport


def watch_memory(report: MemoryReport, sample: Callable[[], MemoryReport], interval: float) -> None:
    """Show the `memory available` view of `report`, then of a new `sample()` every
    `interval` seconds, until interrupted (the interrupt is the caller's to handle)."""
    if not sys.stdout.isatty():
        # Into a pipe or file (`| tee log`): one plain frame per sample, each flushed at
        # once, 200 columns wide as every other table written there.
        while True:
            print(f"sample at {ns_to_rfc3339(report.captured_at)}", flush=True)
            render_memory(report)
            print(flush=True)
            time.sleep(interval)
            report = sample()

    # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
    from rich.live import Live

    width = terminal_width(sys.stdout)
    with Live(memory_renderable(report, width), console=make_console(sys.stdout),
              refresh_per_second=4, screen=False) as live:  # fmt: skip
        while True:
            time.sleep(interval)
            report = sample()
            live.update(memory_renderable(report, width))
