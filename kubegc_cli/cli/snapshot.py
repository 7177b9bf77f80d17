"""`kubegc snapshot`: what kubegc observes on the node, written as a document for planning
elsewhere."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import click

from kubegc_cli.cli.command import KubegcCommand
from kubegc_cli.cli.common import ConsoleUi, settings_from
from kubegc_cli.cli.options import GIVEN, global_options
from kubegc_cli.commands.gc import snapshot_node
from kubegc_cli.core.errors import BadInput
from kubegc_cli.node.outfile import replace_file
from kubegc_cli.render.log import LOG
from kubegc_cli.render.plan import dump_document


@click.command("snapshot", cls=KubegcCommand)
@click.option("-f", "--file", "path", type=GIVEN, metavar="FILE",
              help="Write here instead of stdout.")  # fmt: skip
@global_options
@click.pass_context
def snapshot(ctx: click.Context, path: str | None) -> None:
    """Write what kubegc observes on this node as JSON (for tickets and offline planning).

    JSON, or YAML with -o yaml; --snapshot reads either.

    The file holds every CRI container (with status), sandbox, image and image filesystem, and
    the capture time. gc containers and gc sandboxes read it back with --snapshot FILE (dry run
    only); gc images cannot (its image records live in the node's state store).

    \b
    Examples:
      kubegc snapshot -f node-$(hostname).json
      kubegc --snapshot node.json gc containers --maximum-dead-containers 0
    """
    s = settings_from(ctx)
    snap = snapshot_node(s, ConsoleUi(s.verbose, s.output, s.limit))
    buf = io.StringIO()
    dump_document(snap.to_dict(), "yaml" if s.output == "yaml" else "json", buf)
    text = buf.getvalue()
    if path:
        try:
            replace_file(Path(path), text)  # a link at `path` is refused, never followed
        except OSError as exc:
            raise BadInput(f"cannot write snapshot {path}: {exc.strerror or exc}") from None
        LOG.emit("info", f"wrote {len(snap.containers)} containers to {path}")
    else:
        sys.stdout.write(text)
