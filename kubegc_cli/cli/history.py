"""`kubegc history`: what past runs did, from the state store."""

from __future__ import annotations

import click

from kubegc_cli.cli.command import KubegcCommand
from kubegc_cli.cli.common import ConsoleUi, settings_from, table_view
from kubegc_cli.cli.options import WholeRange, global_options
from kubegc_cli.core.units import safe_text
from kubegc_cli.node.state import read_history
from kubegc_cli.render import plan as render
from kubegc_cli.render.history import render_history


@click.command("history", cls=KubegcCommand)
@click.option("--runs", type=WholeRange(1, 10_000), default=20, show_default=True,
              help="How many recent runs to show.")  # fmt: skip
@global_options
@click.pass_context
def history(ctx: click.Context, /, runs: int) -> None:
    """List past runs that acted, and what each did, from the state store (--state-dir).

    Each run's bytes are the two figures it reported: EXPECTED, what its plan expected the
    objects it removed to free (an image's size is the runtime's, an estimate), and
    MEASURED, what its filesystems regained by statvfs before and after acting ("-": not
    measured; "?": not recorded — a run killed before its end, or one from before kubegc
    kept these figures).
    -v lists each run's actions.

    \b
    Examples:
      kubegc history
      kubegc history --runs 1 -o json
    """
    s = settings_from(ctx)
    view = table_view(s, "history")
    items = read_history(s.state_dir, runs, ConsoleUi(s.verbose, s.output, s.limit).warn)
    if s.output in ("json", "yaml"):
        render.dump_document({"kind": "History", "items": items}, s.output)
        return
    if s.output == "name":
        for run in items:
            click.echo(f"run/{safe_text(str(run['run_id']))}")
        return
    if not items:
        click.echo(f"no runs recorded in {s.state_dir}")
        return
    render_history(items, verbose=s.verbose, view=view)
