"""stderr: diagnostics as text or JSON lines, and the progress of long removals.

stdout carries only a command's result (the table or the document); everything else goes
here. `--log-format text` writes `kubegc: <message>` (`kubegc: error: <message>` for errors);
`--log-format json` writes one object a line: `{"time": RFC 3339 UTC, "level": "debug" |
"info" | "warning" | "error", "message": ...}`. Messages carry text from the runtime, the
API and files (error details, names): in text, every character that is not printable is
written as its escape (`units.safe_text`, as in tables), so none reaches the terminal as a
control sequence and every message stays one line (on a terminal, wrapped at spaces to its
width, its continuation rows indented: `wrapped`); JSON escapes them itself. `-q` keeps only
errors; `-v` adds info lines, `-vv` debug lines (each action's result as it finishes).

A progress bar (rich, on stderr) is shown while at least `PROGRESS_MIN` removals run, only
when stderr is a terminal and the log format is text, never with `-q`.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kubegc_cli.core.units import safe_text
from kubegc_cli.render.table import terminal_width, width_function

PROGRESS_MIN = 5


def wrapped(line: str, width: int) -> str:
    """A text line for a terminal of `width` columns, as rows none wider than it (terminal
    cells: a wide character takes two), so that the terminal never wraps one: wrapped at
    spaces (an ID or path that fits a row is never split), a word longer than a row cut at
    its end, each row after the first indented by two spaces. So only a line's first row
    starts at the left edge: text from a file or the runtime cannot start a row that reads
    as a line of kubegc's own."""
    cells = width_function([line])
    rows: list[str] = []
    row = ""
    for word in line.split(" "):
        room = width if not rows else width - 2
        joined = f"{row} {word}" if row else word
        if cells(joined) <= room:
            row = joined
            continue
        if row:
            rows.append(row)
            row, room = "", width - 2
        while cells(word) > room:  # longer than a row: cut where the row ends
            cut = next(n for n in range(len(word), 0, -1) if cells(word[:n]) <= room or n == 1)
            rows.append(word[:cut])
            word, room = word[cut:], width - 2
        row = word
    rows.append(row)
    return "\n  ".join(rows)


LEVELS = ("debug", "info", "warning", "error")


class Log:
    """Where kubegc's stderr lines go and how they look (set once per run by `configure`)."""

    def __init__(self) -> None:
        self.format = "text"
        self.quiet = False
        self._lock = threading.Lock()
        self._console: Any = None  # a live progress bar's console, while one is shown

    def configure(self, fmt: str, quiet: bool) -> None:
        self.format, self.quiet = fmt, quiet

    def format_line(self, level: str, message: str) -> str:
        """One stderr line for `message` at `level` (no newline; `message` escaped as the
        module doc says)."""
        if self.format == "json":
            now = time.time()
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
            doc = {"time": f"{stamp}.{int(now % 1 * 1000):03d}Z", "level": level,
                   "message": message}  # fmt: skip
            return json.dumps(doc)
        message = safe_text(message)
        return f"kubegc: error: {message}" if level == "error" else f"kubegc: {message}"

    def emit(self, level: str, message: str) -> None:
        """Write `message` at `level` unless `-q` hides it (only errors pass)."""
        if self.quiet and level != "error":
            return
        line = self.format_line(level, message)
        with self._lock:
            if self._console is not None:  # (a progress bar's, on the terminal)
                line = wrapped(line, self._console.width)
                self._console.print(line, markup=False, highlight=False, soft_wrap=True)
            elif sys.stderr is not None:
                if self.format == "text" and (width := terminal_width(sys.stderr)):
                    line = wrapped(line, width)
                sys.stderr.write(line + "\n")
                sys.stderr.flush()

    @contextmanager
    def progress(self, total: int, verbose: int) -> Iterator[Any]:
        """A context whose `advance(action)` counts one finished removal (and, with -vv,
        logs its result). A bar is drawn only as the module doc says."""
        bar: Any = None
        task: Any = None
        show = (
            total >= PROGRESS_MIN
            and not self.quiet
            and self.format == "text"
            and sys.stderr.isatty()
        )
        if show:
            # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
            from rich.console import Console

            # deferred: tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            bar = Progress(
                TextColumn("removing"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                console=Console(stderr=True), transient=True,
            )  # fmt: skip
            task = bar.add_task("removing", total=total)
            bar.start()
            self._console = bar.console

        class Tracker:
            def advance(self_inner, action: Any) -> None:
                if verbose >= 2:
                    error = f": {action.error}" if getattr(action, "error", "") else ""
                    LOG.emit("debug", f"{action.kind} {action.id}: {action.result.value}{error}")
                if bar is not None:
                    bar.advance(task)

        try:
            yield Tracker()
        finally:
            if bar is not None:
                bar.stop()
                self._console = None


LOG = Log()
