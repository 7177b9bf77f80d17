"""`kubegc evict`: check the eviction thresholds, prune the Evicted pods left in the API."""

from __future__ import annotations

import sys
from typing import Any

import click

from kubegc_cli.cli.command import KubegcGroup
from kubegc_cli.cli.common import ConsoleUi, act_options, finish, settings_from, table_view
from kubegc_cli.cli.completion import complete_namespace
from kubegc_cli.cli.options import WholeRange, act_flags, global_options
from kubegc_cli.commands.evict import evict_check as check_thresholds
from kubegc_cli.commands.evict import kubelet_root, prune_evicted
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.plan import GENTLE_CONCURRENCY
from kubegc_cli.core.selector import parse
from kubegc_cli.core.units import parse_bytes, parse_duration
from kubegc_cli.node.pods.api import node_name
from kubegc_cli.policy.evicted import PruneOptions
from kubegc_cli.policy.eviction.thresholds import raw_from_flags
from kubegc_cli.render import plan as render
from kubegc_cli.render.pressure import render_eviction
from kubegc_cli.report.run import outcome


@click.group(cls=KubegcGroup)
@global_options
def evict() -> None:
    """The kubelet's node-pressure eviction: check thresholds, prune Evicted pods."""


def _joined(values: tuple[str, ...]) -> str | None:
    """Repeated kubelet map flags merge (later keys win), as the kubelet's flags do."""
    return ",".join(values) if values else None


@evict.command("check")
@click.option(
    "--eviction-hard",
    multiple=True,
    metavar="SIGNAL<VALUE,...",
    help="Hard thresholds, kubelet syntax: memory.available<100Mi,nodefs.available<10%. "
    "[default: the running kubelet's, else its config file's, else the kubelet's]",
)
@click.option(
    "--eviction-soft",
    multiple=True,
    metavar="SIGNAL<VALUE,...",
    help="Soft thresholds (each needs a grace period).",
)
@click.option(
    "--eviction-soft-grace-period",
    multiple=True,
    metavar="SIGNAL=DURATION,...",
    help="Grace periods of the soft thresholds: memory.available=1m30s.",
)
@click.option(
    "--eviction-minimum-reclaim",
    multiple=True,
    metavar="SIGNAL=VALUE,...",
    help="Minimum reclaim per signal: memory.available=0Mi,nodefs.available=500Mi.",
)
@click.option(
    "--root-dir",
    default="/var/lib/kubelet",
    show_default=True,
    metavar="PATH",
    help="The kubelet's root directory: its filesystem is nodefs.",
)
@click.option(
    "--allocatable",
    metavar="QUANTITY",
    help="Node allocatable memory [default: the kubepods cgroup's limit, as the kubelet].",
)
@click.option(
    "--top",
    type=WholeRange(0, 100_000),
    default=5,
    show_default=True,
    help="Pods listed per met signal, first to be evicted first (0 = all).",
)
@global_options
@click.pass_context
def evict_check(ctx: click.Context, /, **opts: Any) -> None:
    """Check the eviction thresholds against the signals observed now.

    Thresholds come from --eviction-* (kubelet grammar), else the running kubelet's command
    line, else its config file (--kubelet-config, default /var/lib/kubelet/config.yaml) with
    the drop-ins of --kubelet-config-dir merged onto it, else the kubelet's defaults.
    Setting any hard threshold drops the unlisted defaults, as on the kubelet; the output
    says which. One row per threshold: observed value, threshold,
    margin, met or not, hard or soft, the node condition, and what the kubelet reclaims first.
    With a pod source, the pods the kubelet would evict first for each met signal.

    One-shot: soft thresholds are judged on this one observation; the kubelet — and
    `kubegc agent` — wait for the grace period, and hold a met threshold until its minimum
    reclaim is done.

    Exit codes: 0 no threshold met, 5 at least one met, 2 bad input, 3 a signal could not
    be read (and none met).

    \b
    Examples:
      kubegc evict check
      kubegc evict check --eviction-hard 'memory.available<1Gi,nodefs.available<15%'
      kubegc evict check -o json | jq '.met'
    """
    s = settings_from(ctx)
    view = table_view(s, "evict check", names=False)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    flags = raw_from_flags(
        _joined(opts["eviction_hard"]),
        _joined(opts["eviction_soft"]),
        _joined(opts["eviction_soft_grace_period"]),
        _joined(opts["eviction_minimum_reclaim"]),
    )
    given = opts["allocatable"]
    report = check_thresholds(
        s, ui, flags,
        root_dir=kubelet_root(opts["root_dir"]),
        allocatable=parse_bytes(given, flag="--allocatable") if given is not None else None,
        top=opts["top"],
    )  # fmt: skip
    outcome(report)
    if s.output in ("json", "yaml"):
        render.dump_document(report.to_dict(), s.output)
    else:
        render_eviction(report, verbose=s.verbose, view=view)
    sys.exit(report.exit_code())


@evict.command("prune")
@click.option("--all-nodes", is_flag=True, help="Evicted pods of every node, not only this one.")
@click.option("-n", "--namespace", metavar="NS", multiple=True,
              help="Only this namespace (one).", shell_complete=complete_namespace)  # fmt: skip
@click.option(
    "-l",
    "--selector",
    metavar="SELECTOR",
    help="Only pods whose labels match, in kubectl's grammar (app=web,tier!=db, "
    "'env in (a,b)', '!canary'); checked here, sent to the API, matched again.",
)
@click.option(
    "--older-than",
    default="0s",
    show_default=True,
    metavar="DURATION",
    help="Only pods evicted at least this long ago.",
)
@act_flags(concurrency_help="Parallel API calls.", concurrency=GENTLE_CONCURRENCY)
@global_options
@click.pass_context
def evict_prune(ctx: click.Context, /, **opts: Any) -> None:
    """Delete the Evicted pod shells (phase Failed, reason Evicted) left in the API.

    After node-pressure eviction a ReplicaSet's pods stay in the API as Failed/Evicted until
    something deletes them. This lists them on this node (--node-name, default the hostname)
    or every node (--all-nodes), shows them, and deletes each with its resourceVersion as a
    precondition: a pod that changed since the plan is skipped, not deleted.

    \b
    Examples:
      kubegc evict prune --dry-run
      kubegc evict prune --all-nodes --older-than 1h --yes
    """
    s = settings_from(ctx)
    if opts["dry_run"] and opts["yes"]:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    if len(opts["namespace"]) > 1:
        raise BadInput(
            f"evict prune takes one --namespace, got {len(opts['namespace'])}: "
            f"{', '.join(opts['namespace'])} (run it once per namespace, or give none for all)"
        )
    popts = PruneOptions(
        all_nodes=opts["all_nodes"],
        node=node_name(s.node_name),
        namespace=opts["namespace"][0] if opts["namespace"] else None,
        older_than=parse_duration(opts["older_than"], flag="--older-than"),
        selector=None if opts["selector"] is None else parse(opts["selector"]),
    )
    act = act_options(opts)
    plan = prune_evicted(s, popts, act, ConsoleUi(s.verbose, s.output, s.limit))
    finish(plan, s)
