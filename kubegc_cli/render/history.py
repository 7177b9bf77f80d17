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
    results by count, the bytes its plan expected to free (`EXPECTED`) and the bytes its
    filesystems regained, measured (`MEASURED`) — the figures the run itself reported — and
    the run ID ("?" for a figure not recorded: a run killed before its end, or one from
    before kubegc kept it; "-" not measured);
    with `verbose`, a table of each run's actions under it, with each one's expected
    bytes."""
    screen = Screen(out, view)
    runs = Grid("Runs", [Column("AT", "id"), Column("COMMAND", "word"), Column("RESULTS"),
                         Column("EXPECTED", "num"), Column("MEASURED", "num"),
                         Column("RUN", "id")])  # fmt: skip
    for run in items:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(run["by_result"].items())) or "nothing"
        expected = _bytes(run.get("bytes_expected"), "?")
        measured = _bytes(run.get("bytes_measured"), "-") if expected != "?" else "?"
        runs.add([safe_text(str(run["at"])), safe_text(str(run["command"])), counts, expected,
                  measured, safe_text(str(run["run_id"]))])  # fmt: skip
    screen.grid(runs)
    if not verbose:
        return
    for run in items:
        acts = Grid(f"run {safe_text(str(run['run_id']))} ({safe_text(str(run['command']))})",
                    [Column("KIND", "word"), Column("ID", "id"), Column("RULE"),
                     Column("EXPECTED", "num"), Column("RESULT")])  # fmt: skip
        for a in run["actions"]:
            cells = [safe_text(str(a[k])) for k in ("kind", "id", "rule", "result")]
            acts.add([*cells[:3], _bytes(a.get("bytes_expected"), "?"), cells[3]])
        screen.line("")
        screen.grid(acts)


def _bytes(value: Any, unknown: str) -> str:
    """`value` bytes in human units, or `unknown` when None."""
    return unknown if value is None else format_bytes(int(value))
