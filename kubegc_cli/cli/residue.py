"""`kubegc residue`: find what the kubelet and the runtime left behind (scan), remove the safe
part of it (clean)."""

from __future__ import annotations

from typing import Any

import click

from kubegc_cli.cli.command import KubegcGroup
from kubegc_cli.cli.common import ConsoleUi, act_options, emit_plan, finish, settings_from
from kubegc_cli.cli.options import GIVEN, F, act_flags, global_options
from kubegc_cli.commands.residue import ResidueOptions
from kubegc_cli.commands.residue import residue_clean as clean_residue
from kubegc_cli.commands.residue import residue_scan as scan_residue
from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.residue import TYPES
from kubegc_cli.core.units import safe_text
from kubegc_cli.report.run import outcome


@click.group(cls=KubegcGroup)
@global_options
def residue() -> None:
    """Leftovers of the kubelet and the runtime: find them (scan), remove the safe ones (clean)."""


def residue_options(f: F) -> F:
    """What `residue scan` and `residue clean` look at."""
    for decorator in reversed(
        [
            click.option(
                "--kind",
                "kinds",
                multiple=True,
                type=click.Choice(TYPES),
                metavar="TYPE",
                help=f"Only findings of this type (repeatable): {', '.join(TYPES)}.",
            ),
            click.option(
                "--root-dir",
                type=GIVEN,
                metavar="PATH",
                help="The kubelet's root directory on the host [default: /var/lib/kubelet].",
            ),
            click.option(
                "--pod-logs-dir",
                metavar="PATH",
                help="Pod log root on the host [default: the kubelet config's podLogsDir, "
                "/var/log/pods].",
            ),
            click.option(
                "--cni-dir",
                type=GIVEN,
                metavar="PATH",
                help="CNI state root on the host, holding networks/<net>/ [default: /var/lib/cni].",
            ),
        ]
    ):
        f = decorator(f)
    return f


def _residue_options(opts: dict[str, Any]) -> Any:
    return ResidueOptions(
        kinds=frozenset(opts["kinds"]),
        root_dir=opts["root_dir"],
        pod_logs_dir=opts["pod_logs_dir"],
        cni_dir=opts["cni_dir"],
    )


@residue.command("scan")
@residue_options
@global_options
@click.pass_context
def residue_scan(ctx: click.Context, /, **opts: Any) -> None:
    """Find what the kubelet and the runtime left behind, and say what is safe to remove.

    Orphaned pod directories (with their volumes and any mount below them), orphaned pod log
    directories and dangling /var/log/containers links, dead sandboxes and containers (what
    `gc all` would remove), leaked network namespaces and CNI IP reservations, orphaned pod
    cgroups, leaked shims, runtime lists near the gRPC message limit, unused images, and
    what container log rotation has not done or left behind, judged by the kubelet's
    containerLogMaxSize and containerLogMaxFiles (live logs over size, containers over
    budget, rotated files past the count, uncompressed rotations, a failed compression's
    leftovers, earlier instances' logs, /var/log/containers links of gone containers). Each
    finding says why it is residue, its bytes on disk, whether `residue clean` may remove it
    (and if not, why), what cleaning does (nothing when not safe) and what an operator could
    run by hand. Nothing is changed.

    Without a pod source nothing that depends on a pod being gone is safe. If the runtime
    cannot be read, the host is still scanned (nothing that depends on the runtime is safe)
    and the exit code is 3 after the report.

    \b
    Examples:
      kubegc residue scan --pods-file pods.json
      kubegc residue scan --kind leaked-cni-ip --kind leaked-netns
      kubegc residue scan -o json | jq '.totals'
    """
    s = settings_from(ctx)
    plan = scan_residue(s, ConsoleUi(s.verbose, s.output, s.limit), _residue_options(opts))
    outcome(plan)
    if s.quiet and s.output in ("table", "wide"):
        for f in [*plan.actions, *plan.kept]:
            click.echo(safe_text(f.target))  # a host path: escaped as in the table
    else:
        emit_plan(plan, s)
    if plan.runtime_error:
        raise RuntimeUnavailable(
            f"{plan.runtime_error}; only the host was scanned (runtime findings missing)"
        )


@residue.command("clean")
@residue_options
@act_flags()
@global_options
@click.pass_context
def residue_clean(ctx: click.Context, /, **opts: Any) -> None:
    """Remove the leftovers `residue scan` marks safe, re-checking each right before.

    Directories are removed without following symlinks or crossing into another filesystem,
    never with anything mounted below (the mount table is read again first; if it cannot be
    read, no directory is removed); a network
    namespace is unmounted and unlinked only if no process holds it; a CNI IP reservation
    only while its ID is still unknown to the runtime; a pod cgroup only when empty (rmdir,
    deepest first); a container log file only while it is the file scanned, unchanged; a
    running container's live log over containerLogMaxSize is rotated as the kubelet rotates
    it (renamed, then CRI ReopenContainerLog; renamed back if that fails), never truncated.
    Shims, runtime objects and images are never touched: the finding names the command to
    run. Needs the runtime (exit 3 without it, nothing removed).

    \b
    Examples:
      kubegc residue clean --pods-file pods.json --dry-run
      kubegc residue clean --pods-file pods.json --kind orphaned-pod-dir --yes
      kubegc residue clean --kind log-over-size --kind rotated-log-past-count --yes
    """
    s = settings_from(ctx)
    if opts["dry_run"] and opts["yes"]:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    act = act_options(opts)
    finish(
        clean_residue(s, ConsoleUi(s.verbose, s.output, s.limit), _residue_options(opts), act), s
    )
