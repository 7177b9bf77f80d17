"""`kubegc apply`: carry out a plan a dry run saved with --plan-out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from kubegc_cli.cli.command import KubegcCommand
from kubegc_cli.cli.common import ConsoleUi, act_options, finish, settings_from
from kubegc_cli.cli.configfile import image_keep
from kubegc_cli.cli.options import GIVEN, GivenPath, act_flags, global_options
from kubegc_cli.commands.apply import apply_plan


@click.command("apply", cls=KubegcCommand)
@click.argument("plan_file", metavar="FILE", type=GivenPath(dir_okay=False))
@act_flags(dry_run_help="Show the saved plan and stop.")
@click.option(
    "--pod-logs-dir",
    type=GIVEN,
    metavar="PATH",
    help="Pod log root on the host (default: the kubelet config's podLogsDir).",
)
@click.option(
    "--match-kubelet", is_flag=True,
    help="Let the plan remove the newest dead container of a live pod's evict unit.",
)  # fmt: skip
@click.option(
    "--include-terminated-pods", is_flag=True,
    help="Let the plan remove the newest dead containers and the sandboxes of pods in phase "
         "Succeeded/Failed that still exist.",
)  # fmt: skip
@click.option(
    "--allow-unpullable", is_flag=True,
    help="Let the plan remove images that cannot be pulled again (no repo digest, a "
         "localhost/ name, imported from a tarball).",
)  # fmt: skip
@global_options
@click.pass_context
def apply_cmd(ctx: click.Context, /, plan_file: str, **opts: Any) -> None:
    """Carry out a plan saved by a dry run with --plan-out, exactly as saved.

    Only the actions in FILE are carried out (delete some to do less; nothing is added).
    FILE is JSON, or YAML when named *.yaml or *.yml (as --plan-out wrote it).
    FILE is not trusted: every object is re-read from the node now (a container, sandbox or
    image from the runtime, a log path rebuilt under podLogsDir or /var/log/containers) and
    skipped with the reason when it is gone, running, re-created, in use, pinned or no longer
    garbage; a file naming a path elsewhere, another command or an unknown rule is exit 2.
    Removals for deleted pods need a pod source now (--pods-file or the API); kubegc's guard
    on the newest dead container of a live pod is re-applied unless --match-kubelet, and a
    terminated pod that still exists keeps its newest records and its sandbox unless
    --include-terminated-pods. Images matching the config file's gc.images.keep, and images
    that cannot be pulled again (unless --allow-unpullable), stay: the file cannot lift these.
    Actions the plan held back stay held back; --max-delete and --max-bytes hold back more. A
    plan applies only on the node it was made on.

    \b
    Examples:
      kubegc gc all --pods-file pods.json --plan-out /root/gc-plan.json
      less /root/gc-plan.json                   # review, delete what should stay
      kubegc apply /root/gc-plan.json --pods-file pods.json --yes
      kubegc gc images --plan-out /root/images.yaml   # YAML: easier to edit
    """
    s = settings_from(ctx)
    act = act_options(opts)
    ui = ConsoleUi(s.verbose, s.output)
    keep, where = image_keep(ctx)
    if keep:
        ui.info(f"images matching {where} are kept")
    plan = apply_plan(
        s, Path(plan_file), act, ui,
        pod_logs_dir=opts["pod_logs_dir"], match_kubelet=opts["match_kubelet"],
        include_terminated_pods=opts["include_terminated_pods"],
        allow_unpullable=opts["allow_unpullable"], keep=keep,
    )  # fmt: skip
    finish(plan, s)
