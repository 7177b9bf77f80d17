"""`kubegc fleet`: the fleet as the nodes' NodeGCReports tell it (read-only)."""

from __future__ import annotations

import sys
from typing import Any

import click

from kubegc_cli.cli.command import KubegcCommand
from kubegc_cli.cli.common import settings_from, table_view
from kubegc_cli.cli.options import WholeRange, global_options
from kubegc_cli.commands.fleet import DEFAULT_STALE, FleetOptions, read_fleet
from kubegc_cli.core.errors import BadInput, ExitCode
from kubegc_cli.core.units import parse_duration, safe_text
from kubegc_cli.render import plan as render
from kubegc_cli.render.fleet import render_fleet


@click.command("fleet", cls=KubegcCommand)
@click.option(
    "--stale",
    default=DEFAULT_STALE,
    show_default=True,
    metavar="DURATION",
    help="A report observed longer ago than this is stale (its agent is not reporting). A "
    "quiet agent writes only at its --heartbeat (30m): the default is that, one --interval "
    "(5m) and slack.",
)
@click.option(
    "--top",
    type=WholeRange(0, 1_000_000),
    default=10,
    show_default=True,
    help="Nodes listed by reclaimable bytes and nearest to eviction (0 = all).",
)
@global_options
@click.pass_context
def fleet(ctx: click.Context, /, **opts: Any) -> None:
    """Show the fleet from the nodes' NodeGCReports: reclaimable bytes, eviction, staleness.

    Reads every NodeGCReport (kubegc.io/v1alpha1, one per node, written by kubegc agent)
    through the Kubernetes API, in pages, with the credentials kubectl would use
    (--kubeconfig, --context). Lists the nodes with the most reclaimable bytes, the nodes
    nearest to eviction (a met threshold first, then the smallest margin: available minus
    threshold, in the signal's unit), and the reports that are not current: stale (observed
    longer ago than --stale, or never, or dated more than 5 minutes ahead of this clock:
    flagged future) or failing (the last cycle's error). The last line
    sums up every report. Bytes are shown in binary units; -o json or -o yaml gives every
    report whole, bytes as integers.

    Exit codes: 0 done (stale reports too), 2 bad input, 3 the reports could not be read.

    \b
    Examples:
      kubegc fleet
      kubegc fleet --top 20 --stale 30m
      kubegc fleet -o json | jq '.nodes[] | select(.stale) | .node'
      kubectl get nodegcreports --sort-by=.status.reclaimableBytes
    """
    s = settings_from(ctx)
    stale = parse_duration(opts["stale"], flag="--stale")
    if stale <= 0:
        raise BadInput(f"invalid value for --stale: {opts['stale']!r} must be above 0")
    shown = table_view(s, "fleet")
    view = read_fleet(s, FleetOptions(stale=stale, top=opts["top"]))
    if s.output in ("json", "yaml"):
        render.dump_document(view.to_dict(), s.output)
    elif s.output == "name":
        for r in view.rows:
            click.echo(f"node/{safe_text(r.node)}")
    else:
        render_fleet(view, table_view=shown)
    sys.exit(ExitCode.OK)
