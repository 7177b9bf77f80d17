"""`kubegc df`: what fills the node's disks, and what kubegc can reclaim of it."""

from __future__ import annotations

import sys
from typing import Any

import click

from kubegc_cli.cli.command import KubegcCommand
from kubegc_cli.cli.common import ConsoleUi, settings_from, table_view
from kubegc_cli.cli.options import WholeRange, global_options
from kubegc_cli.commands.df import DfOptions, disk_usage
from kubegc_cli.render import plan as render
from kubegc_cli.render.df import render_df, walk_progress


@click.command("df", cls=KubegcCommand)
@click.option(
    "--root-dir",
    default="/var/lib/kubelet",
    show_default=True,
    metavar="PATH",
    help="The kubelet's root directory: its filesystem is nodefs; pods/ below it is walked.",
)
@click.option(
    "--pod-logs-dir",
    metavar="PATH",
    help="Pod log root on the host [default: the kubelet config's podLogsDir, /var/log/pods].",
)
@click.option(
    "--top",
    type=WholeRange(0, 1_000_000),
    default=10,
    show_default=True,
    help="Pods listed, largest footprint (logs + emptyDir + writable layers) first (0 = all).",
)
@click.option(
    "--no-runtime",
    is_flag=True,
    help="Do not ask the CRI runtime: host lines only, images and writable layers not "
    "measured, and no exit 3 for an absent runtime.",
)
@global_options
@click.pass_context
def df(ctx: click.Context, /, **opts: Any) -> None:
    """Show what fills the node's disks, and what kubegc can reclaim of it (read-only).

    For nodefs (the filesystem of --root-dir), imagefs (the CRI image filesystem) and the
    pod log filesystem when it is separate: capacity, used, available and inodes (statvfs, as
    the kubelet reads them), the eviction and image GC thresholds that apply, and a breakdown
    — images (in use, unused), writable layers (running, dead containers), container logs,
    emptyDir volumes, the rest of the pod directories, residue, root's reserve and other —
    that adds up to used. Each line: bytes, share of capacity, reclaimable bytes and the
    kubegc command that reclaims them. Directory trees count allocated blocks, never follow
    symlinks, count hard links once and do not enter mount points (listed as mounted).

    Each command shown carries this run's options (--host-root, -r, --kubelet-config, the
    pod source, --root-dir, --pod-logs-dir), so that it acts on what was measured. Without
    the runtime the pod source cannot be checked, so no pod counts as deleted.

    Exit codes: 0 done, 2 bad input, 3 the runtime could not be read or its image filesystem
    is not under --host-root (the host lines are still printed; --no-runtime leaves the
    runtime out and exits 0), or the kubelet root cannot be read.

    \b
    Examples:
      kubegc df
      kubegc df --pods-file pods.json --top 20
      kubegc df -o json | jq '.filesystems[] | {roles, used, reclaimable}'
      kubegc df --host-root /host
      kubegc df --no-runtime
    """
    s = settings_from(ctx)
    view = table_view(s, "df", names=False)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    options = DfOptions(
        root_dir=opts["root_dir"],
        pod_logs_dir=opts["pod_logs_dir"],
        top=opts["top"],
        runtime=not opts["no_runtime"],
    )
    with walk_progress(sys.stderr.isatty()) as progress:
        report = disk_usage(s, ui, options, progress=progress)
    if s.output in ("json", "yaml"):
        render.dump_document(report.to_dict(), s.output)
    else:
        render_df(report, verbose=s.verbose, view=view)
    sys.exit(report.exit_code())
