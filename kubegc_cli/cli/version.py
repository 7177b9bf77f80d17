"""`kubegc version`: kubegc's version and the CRI runtime's (`crictl version`'s fields)."""

from __future__ import annotations

import click

from kubegc_cli import __version__
from kubegc_cli.cli.command import KubegcCommand
from kubegc_cli.cli.common import ConsoleUi, settings_from
from kubegc_cli.cli.options import global_options
from kubegc_cli.commands.version import version_report
from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.render.plan import dump_document
from kubegc_cli.render.version import render_version


@click.command("version", cls=KubegcCommand)
@global_options
@click.pass_context
def version(ctx: click.Context) -> None:
    """Print kubegc's version and the CRI runtime's: its name, version and CRI API version.

    The runtime's lines are those of crictl version (Version, RuntimeName, RuntimeVersion,
    RuntimeApiVersion), from the runtime found as every command finds it (-r, then
    CONTAINER_RUNTIME_ENDPOINT, /etc/crictl.yaml, the usual sockets). A runtime that cannot
    be reached: kubegc's own version is printed, then one error line, exit 3.
    kubegc --version prints kubegc's version alone, without asking the runtime.

    \b
    Examples:
      kubegc version
      kubegc version -o json | jq -r .runtime.runtime_version
    """
    s = settings_from(ctx)
    report = version_report(s, ConsoleUi(s.verbose, s.output, s.limit), __version__)
    if s.output in ("json", "yaml"):
        dump_document(report.to_dict(), s.output)
    else:
        render_version(report)
    if report.error:
        raise RuntimeUnavailable(report.error)
