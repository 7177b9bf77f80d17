"""`kubegc reclaim`: free space safely, in one step — every kind of object kubegc may remove,
one plan, one confirmation, the disk before and after."""

from __future__ import annotations

from typing import Any

import click

from kubegc_cli.cli.common import ConsoleUi, act_options, finish, settings_from
from kubegc_cli.cli.gc import (
    container_policy,
    container_policy_options,
    image_gc_policy,
    pod_infra_image,
)
from kubegc_cli.cli.options import GIVEN, act_flags, global_options
from kubegc_cli.commands.reclaim import RESIDUE_KINDS, ReclaimOptions
from kubegc_cli.commands.reclaim import reclaim as reclaim_node
from kubegc_cli.core.errors import BadInput, PartialFailure
from kubegc_cli.core.units import format_bytes, parse_bytes
from kubegc_cli.policy.reclaim import Target, parse_until


@click.command("reclaim")
@container_policy_options
@click.option(
    "--include-terminated-pods",
    is_flag=True,
    help="Also treat pods in phase Succeeded/Failed as gone (needs a pod source).",
)
@click.option(
    "--minimum-image-ttl-duration",
    default="2m",
    show_default=True,
    metavar="DURATION",
    help="MinAge: images first detected less than this long ago stay.",
)
@click.option(
    "--keep",
    multiple=True,
    metavar="PATTERN",
    help="Never remove images whose tag or digest matches (glob).",
)
@click.option(
    "--pod-infra-container-image",
    metavar="IMAGE",
    help="Also protect this sandbox image (besides the runtime's own).",
)
@click.option(
    "--root-dir",
    type=GIVEN,
    metavar="PATH",
    help="The kubelet's root directory on the host (nodefs) [default: /var/lib/kubelet].",
)
@click.option(
    "--pod-logs-dir",
    metavar="PATH",
    help="Pod log root on the host [default: the kubelet config's podLogsDir].",
)
@click.option(
    "--cni-dir",
    type=GIVEN,
    metavar="PATH",
    help="CNI state root on the host [default: /var/lib/cni].",
)
@click.option(
    "--residue-kind",
    "residue_kinds",
    multiple=True,
    type=click.Choice(RESIDUE_KINDS),
    metavar="TYPE",
    help=f"Only this kind of residue (repeatable) [default: all of {', '.join(RESIDUE_KINDS)}].",
)
@click.option(
    "--until",
    metavar="SIGNAL>QUANTITY",
    help="Plan only until this is met, cheapest to lose first: nodefs.available>15%, "
    "imagefs.available>20Gi (the kubelet's signal grammar).",
)
@click.option(
    "--bytes",
    "target_bytes",
    metavar="QUANTITY",
    help="Plan only until this many bytes are expected to be freed (e.g. 5Gi), "
    "cheapest to lose first.",
)
@act_flags()
@global_options
@click.pass_context
def reclaim(ctx: click.Context, /, **opts: Any) -> None:
    """Free disk space safely, in one step: everything kubegc may remove, one plan.

    Dead containers, sandboxes and pod log directories (what `gc all` removes), unused images
    (what `gc images --prune-unused` removes: never one in use by any container, pinned, the
    sandbox image, a --keep match, or younger than MinAge) and safe residue (orphaned pod
    directories, leaked network namespaces and CNI reservations, empty pod cgroups: what
    `residue clean` removes), in the kubelet's order: containers and sandboxes, then logs and
    residue, then images. One table grouped by kind with the bytes each is expected to free
    (image sizes as the runtime reports them: an estimate), one confirmation, one node lock;
    each object is re-checked right before it is removed. At the end, each filesystem touched is
    measured again (statvfs) and shown before and after.

    With --until or --bytes the plan stops once the target would be met, taking first what
    costs least to lose: what deleted pods left (each pod's dead containers, sandbox and log
    directory together), then residue, dead containers and sandboxes of live pods, then
    images least recently used first; it says when the target cannot be met and what is in
    the way.

    \b
    Examples:
      kubegc df
      kubegc reclaim --pods-file pods.json --dry-run
      kubegc reclaim --until 'nodefs.available>15%' --yes
      kubegc reclaim --bytes 5Gi -o json --yes > reclaim-$(date +%F).json
    """
    s = settings_from(ctx)
    act = act_options(opts)
    target: Target | None = None
    if opts["until"] is not None and opts["target_bytes"] is not None:
        raise BadInput("--until and --bytes are two targets; give one")
    if opts["until"] is not None:
        target = parse_until(opts["until"])
    elif opts["target_bytes"] is not None:
        text = opts["target_bytes"]
        target = Target(f"--bytes {text}", "--bytes", amount=parse_bytes(text, flag="--bytes"))
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    infra = pod_infra_image(opts)
    images = image_gc_policy(ctx, opts, s, ui, prune_unused=True)
    options = ReclaimOptions(
        containers=container_policy(opts),
        images=images,
        pod_infra_image=infra,
        root_dir=opts["root_dir"],
        pod_logs_dir=opts["pod_logs_dir"],
        cni_dir=opts["cni_dir"],
        residue_kinds=frozenset(opts["residue_kinds"]),
        target=target,
    )
    plan = reclaim_node(s, options, act, ui)
    finish(plan, s)
    if plan.shortfall and not plan.dry_run and plan.target is not None:
        raise PartialFailure(f"{plan.target['text']} not met: {format_bytes(plan.shortfall)} short")
