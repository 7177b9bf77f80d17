"""`kubegc history` as a table: one row per run (bytes in human units, the run ID whole), and
with -v each run's actions (IDs whole)."""

from __future__ import annotations

from typing import IO, Any

from kubegc_cli.core.units import format_bytes, safe_text
from kubegc_cli.render.table import Column, Grid, Screen, View


def render_history(
    items: list[dict[str, Any]],
    *,
    verbose: int = 0,
    out: IO[str] | None = None,
    view: View | None = None,
) -> None:
    """Print the runs of `node.state.read_history` (newest first, as given): when, command,
    results by count, bytes freed and the run ID; with `verbose`, a table of each run's
    actions under it."""
    screen = Screen(out, view)
    runs = Grid("Runs", [Column("AT", "id"), Column("COMMAND", "word"), Column("RESULTS"),
                         Column("FREED", "num"), Column("RUN", "id")])  # fmt: skip
    for run in items:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(run["by_result"].items())) or "nothing"
        freed = format_bytes(int(run["bytes_freed"] or 0))
        runs.add([safe_text(str(run["at"])), safe_text(str(run["command"])), counts, freed,
                  safe_text(str(run["run_id"]))])  # fmt: skip
    screen.grid(runs)
    if not verbose:
        return
    for run in items:
        acts = Grid(f"run {safe_text(str(run['run_id']))} ({safe_text(str(run['command']))})",
                    [Column("KIND", "word"), Column("ID", "id"), Column("RULE"),
                     Column("RESULT")])  # fmt: skip
        for a in run["actions"]:
            acts.add([safe_text(str(a[k])) for k in ("kind", "id", "rule", "result")])
        screen.line("")
        screen.grid(acts)
