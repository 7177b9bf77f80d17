"""Show: a plan as a rich table, JSON or YAML. The only module that imports rich.

stdout carries the result (the table or the document); diagnostics go to stderr elsewhere.
"""

from __future__ import annotations

import json
import sys
from typing import IO, Any

from kubegc_cli.plan import ContainerAction, Plan, Result
from kubegc_cli.units import NS_PER_SECOND, format_bytes, format_duration

RESULT_STYLE = {
    Result.PLANNED: "yellow",
    Result.REMOVED: "green",
    Result.SKIPPED: "cyan",
    Result.FAILED: "bold red",
    Result.KEPT: "dim",
}


def dump_document(doc: Any, fmt: str, out: IO[str] | None = None) -> None:
    """Write `doc` as JSON (indented, stable key order) or YAML."""
    out = out or sys.stdout
    if fmt == "json":
        out.write(json.dumps(doc, indent=2) + "\n")
    else:
        import yaml

        out.write(yaml.safe_dump(doc, sort_keys=False, default_flow_style=False))


def safe_text(value: str) -> str:
    """Runtime-supplied text made harmless for a terminal: control characters (escape
    sequences, newlines) are shown as `\\xNN` instead of being sent to the screen."""
    if value.isprintable():
        return value
    return "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" for ch in value)


def _short(cid: str) -> str:
    return cid[:13]


def _cells(a: ContainerAction, now: int) -> list[Any]:
    """A table row as rich `Text` (never parsed as markup: pod names may contain `[`)."""
    from rich.text import Text

    return [Text(safe_text(v)) for v in _row(a, now)]


def _row(a: ContainerAction, now: int) -> list[str]:
    c = a.container
    pod = f"{c.pod_namespace}/{c.pod_name}" if c.pod_name else f"(sandbox {c.pod_sandbox_id[:13]})"
    logs = "-" if c.log_bytes is None else format_bytes(c.log_bytes)
    if a.result is Result.REMOVED:
        logs = format_bytes(a.bytes_freed)
    result = a.result.value
    if a.error:
        result = f"{result}: {a.error}"
    elif a.log_note:
        result = f"{result} ({a.log_note})"
    return [
        _short(c.id),
        pod,
        c.container_name,
        str(c.attempt),
        c.state.value,
        format_duration((now - c.created_at) / NS_PER_SECOND),
        a.rule,
        logs,
        result,
    ]


def _console(out: IO[str]) -> Any:
    """A rich console: the terminal's width on a tty; 200 columns into files, pipes and logs."""
    from rich.console import Console

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError  # kubegc's entry point turns it into exit 141, like SIGPIPE

    isatty = hasattr(out, "isatty") and out.isatty()
    return PipeAwareConsole(file=out, width=None if isatty else 200, soft_wrap=False)


def _table(title: str) -> Any:
    from rich.table import Table

    table = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=None,
        header_style="bold",
        pad_edge=False,
        collapse_padding=True,
    )
    for col, wrap in (
        ("CONTAINER", False),
        ("POD", True),
        ("NAME", True),
        ("ATT", False),
        ("STATE", False),
        ("AGE", False),
        ("REASON", True),
        ("LOG", False),
        ("RESULT", True),
    ):
        table.add_column(col, no_wrap=not wrap, overflow="fold", min_width=7 if wrap else None)
    return table


def render_container_plan(plan: Plan, *, verbose: int = 0, out: IO[str] | None = None) -> None:
    """The container GC plan (or its results) as a table, then notes and a summary line.

    Containers the guard kept follow in a second table ("Kept"); with `verbose`, every kept
    dead container is listed there with its reason.
    """
    from rich.padding import Padding
    from rich.text import Text

    console = _console(out or sys.stdout)
    acted = any(a.result is not Result.PLANNED for a in plan.actions)
    title = "Container GC" + (" (dry run)" if plan.dry_run else "")
    if plan.actions:
        table = _table(title)
        for a in plan.actions:
            table.add_row(*_cells(a, plan.now), style=RESULT_STYLE[a.result] if acted else None)
        console.print(table)
    else:
        console.print(Text(f"{title}: nothing to remove.", style="bold"))
    shown_kept = [k for k in plan.kept if verbose or k.rule == "guard-newest-record"]
    if shown_kept:
        kept = _table("Kept (not removed)")
        for k in shown_kept:
            kept.add_row(*_cells(k, plan.now), style="dim")
        console.print(kept)
    for note in plan.notes:
        console.print(Padding(Text(safe_text(note), style="dim"), (0, 0, 0, 2), expand=False))
    console.print(Text(summary_line(plan)))


def summary_line(plan: Plan) -> str:
    """`3 to remove, 1.2Mi of logs; 5 kept` before acting, result counts after."""
    s = plan.summary()
    if plan.dry_run or all(a.result is Result.PLANNED for a in plan.actions):
        return (
            f"{s['total']} container(s) to remove, {format_bytes(s['bytes_planned'])} of logs; "
            f"{s['kept']} dead container(s) kept."
        )
    by = s["by_result"]
    return (
        f"removed {by['removed']}, skipped {by['skipped']}, failed {by['failed']}; "
        f"freed {format_bytes(s['bytes_freed'])} of logs."
    )


def render_ids(plan: Plan, out: IO[str] | None = None) -> None:
    """`-q`: the IDs of the plan's actions, one a line (removed ones only after acting)."""
    out = out or sys.stdout
    acted = not plan.dry_run
    for a in plan.actions:
        if not acted or a.result is Result.REMOVED:
            out.write(safe_text(a.id) + "\n")
