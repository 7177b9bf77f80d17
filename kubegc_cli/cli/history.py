"""`kubegc history`: what past runs did, from the state store."""

from __future__ import annotations

import click

from kubegc_cli.cli.command import KubegcCommand
from kubegc_cli.cli.common import ConsoleUi, settings_from
from kubegc_cli.cli.options import WholeRange, global_options
from kubegc_cli.core.units import safe_text
from kubegc_cli.node.state import read_history
from kubegc_cli.render import plan as render


@click.command("history", cls=KubegcCommand)
@click.option("--runs", type=WholeRange(1, 10_000), default=20, show_default=True,
              help="How many recent runs to show.")  # fmt: skip
@global_options
@click.pass_context
def history(ctx: click.Context, /, runs: int) -> None:
    """List past runs that acted, and what each did, from the state store (--state-dir).

    \b
    Examples:
      kubegc history
      kubegc history --runs 1 -o json
    """
    s = settings_from(ctx)
    items = read_history(s.state_dir, runs, ConsoleUi(s.verbose, s.output, s.limit).warn)
    if s.output in ("json", "yaml"):
        render.dump_document({"kind": "History", "items": items}, s.output)
        return
    if not items:
        click.echo(f"no runs recorded in {s.state_dir}")
        return
    for run in items:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(run["by_result"].items())) or "nothing"
        click.echo(
            f"{run['at']}  {run['command']:<14} {counts}; freed {run['bytes_freed']} bytes  "
            f"(run {run['run_id']})"
        )
        if s.verbose:
            for a in run["actions"]:
                cells = (safe_text(str(a[k])) for k in ("kind", "id", "rule", "result"))
                kind, oid, rule, result = cells
                click.echo(f"    {kind:<11} {oid[:40]:<40} {rule:<22} {result}")
