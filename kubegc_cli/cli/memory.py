"""`kubegc memory available`: the kubelet's memory signal, once or watched."""

from __future__ import annotations

import click

from kubegc_cli.cli.command import KubegcGroup
from kubegc_cli.cli.common import ConsoleUi, settings_from, table_view
from kubegc_cli.cli.options import GIVEN, WholeRange, global_options
from kubegc_cli.commands.memory import memory_report
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.stop import Terminated
from kubegc_cli.core.units import parse_bytes, parse_duration
from kubegc_cli.render import plan as render
from kubegc_cli.render.live import watch_memory
from kubegc_cli.render.pressure import render_memory


@click.group(cls=KubegcGroup)
@global_options
def memory() -> None:
    """The kubelet's memory signals on this node (observe only)."""


def watch_interval(text: str | None) -> float:
    """`--watch INTERVAL` in seconds (2s when given without a value). Raises `BadInput`."""
    seconds = parse_duration(text or "2s", flag="--watch")
    if seconds < 0.1:
        raise BadInput(f"--watch {text!r} is too short (at least 100ms)")
    return seconds


@memory.command("available")
@click.option(
    "--allocatable",
    metavar="QUANTITY",
    help="Node allocatable memory for allocatableMemory.available [default: the Node "
    "object from --pods-file or the API, else the kubepods cgroup's limit].",
)
@click.option(
    "--top",
    type=WholeRange(0, 100_000),
    default=10,
    show_default=True,
    help="Pods listed, largest working set first (0 = all).",
)
@click.option(
    "--watch",
    "watch",
    type=GIVEN,
    is_flag=False,
    flag_value="2s",
    default=None,
    metavar="[INTERVAL]",
    help="Refresh every INTERVAL (default 2s) until Ctrl-C; into a pipe or file, one plain "
    "frame per sample.",
)
@global_options
@click.pass_context
def memory_available(ctx: click.Context, /, allocatable: str | None, top: int,
                     watch: str | None) -> None:  # fmt: skip
    """Show memory.available exactly as the kubelet computes it, with the breakdown.

    memory.available = MemTotal − working set of the root memory cgroup, where working set =
    usage − inactive_file (cgroup v1: memory.usage_in_bytes; v2: anon + file of the root
    memory.stat). Beside it: active_file (page cache the kubelet counts as used, the usual
    reason it evicts while `free` shows plenty), the kernel's MemAvailable,
    allocatableMemory.available of the kubepods cgroup, and the pods with the largest working
    sets. Everything is read under --host-root.

    \b
    Examples:
      kubegc memory available
      kubegc memory available --watch 5s
      kubegc memory available -o json | jq '."memory.available".available'
    """
    s = settings_from(ctx)
    view = table_view(s, "memory available", names=False)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    given = parse_bytes(allocatable, flag="--allocatable") if allocatable is not None else None
    interval = watch_interval(watch) if watch is not None else None
    if interval is not None and s.output not in ("table", "wide"):
        raise BadInput("--watch shows a live table; drop it for -o json/yaml (one sample)")
    report = memory_report(s, ui, allocatable=given, top=top)
    if s.output in ("json", "yaml"):
        render.dump_document(report.to_dict(), s.output)
        return
    if interval is None:
        render_memory(report, view=view)
        return
    try:
        watch_memory(report, lambda: memory_report(s, ui, allocatable=given, top=top), interval)
    except Terminated:  # a supervisor's stop (systemd, `timeout`): exit 143 as everywhere
        raise
    except KeyboardInterrupt:  # Ctrl-C is how a watch ends: not an error
        return
