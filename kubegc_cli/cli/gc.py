"""`kubegc gc`: containers, sandboxes, logs, all, images — the kubelet's garbage collection —
and the options they share."""

from __future__ import annotations

from typing import Any

import click
from click.core import ParameterSource

from kubegc_cli.cli.command import KubegcGroup
from kubegc_cli.cli.common import ConsoleUi, act_options, finish, settings_from
from kubegc_cli.cli.completion import complete_namespace, complete_pod
from kubegc_cli.cli.configfile import loaded
from kubegc_cli.cli.options import GIVEN, WHOLE, F, act_flags, global_options
from kubegc_cli.commands import gc as flows
from kubegc_cli.core.errors import BadInput, PartialFailure
from kubegc_cli.core.selector import parse as parse_selector
from kubegc_cli.core.units import format_bytes, parse_duration, rfc3339_to_ns
from kubegc_cli.node.host.kubelet import kubelet_config_for
from kubegc_cli.policy.containers import ContainerGCPolicy
from kubegc_cli.policy.images import IMAGE_GC_SETTINGS, ImageGCPolicy, resolve_image_gc_settings
from kubegc_cli.policy.scope import Scope


@click.group(cls=KubegcGroup)
@global_options
def gc() -> None:
    """Garbage-collect what the kubelet would: containers, then sandboxes, then pod logs."""


def removal_options(f: F) -> F:
    """Options every removing command shares: pod scope, terminated pods, how to act."""
    return scope_options(act_flags()(f))


def scope_options(f: F) -> F:
    """The pods a removal may touch (`scope_from`) and whether terminated pods count as gone."""
    for decorator in reversed(
        [
            click.option(
                "--include-terminated-pods",
                is_flag=True,
                help="Also treat pods in phase Succeeded/Failed as gone (needs a pod source).",
            ),
            click.option(
                "-n",
                "--namespace",
                multiple=True,
                type=GIVEN,
                metavar="NS",
                help="Only these namespaces.",
                shell_complete=complete_namespace,
            ),
            click.option(
                "--exclude-namespace",
                multiple=True,
                type=GIVEN,
                metavar="NS",
                help="Never these namespaces.",
                shell_complete=complete_namespace,
            ),
            click.option(
                "--pod",
                multiple=True,
                type=GIVEN,
                metavar="POD",
                help="Only these pods (name, ns/name or UID).",
                shell_complete=complete_pod,
            ),
            click.option(
                "-l",
                "--selector",
                metavar="SELECTOR",
                help="Only pods whose labels match, in kubectl's grammar (app=web,tier!=db, "
                "'env in (a,b)', '!canary'); labels as the kubelet copied them onto the pod's "
                "sandbox.",
            ),
        ]
    ):
        f = decorator(f)
    return f


def plan_out_option(f: F) -> F:
    """`--plan-out FILE`: save the dry run's plan for `kubegc apply`."""
    return click.option(
        "--plan-out",
        metavar="FILE",
        help="Dry run, and save the plan to FILE for review (YAML when FILE ends in .yaml or "
        ".yml, else JSON); `kubegc apply FILE --yes` carries it out later.",
    )(f)


def container_policy_options(f: F) -> F:
    """The kubelet's container GC flags, with its names and defaults."""
    for decorator in reversed(
        [
            click.option(
                "--minimum-container-ttl-duration",
                default="0s",
                show_default=True,
                metavar="DURATION",
                help="MinAge: only containers created at least this long ago are garbage.",
            ),
            click.option(
                "--maximum-dead-containers-per-container",
                type=WHOLE,
                default=1,
                show_default=True,
                metavar="N",
                help="MaxPerPodContainer: dead containers kept per evict unit (pod, container); "
                "<0 no limit.",
            ),
            click.option(
                "--maximum-dead-containers",
                type=WHOLE,
                default=-1,
                show_default=True,
                metavar="N",
                help="MaxContainers: dead containers kept on the node; <0 no limit.",
            ),
            click.option(
                "--match-kubelet",
                is_flag=True,
                help="Do exactly what the kubelet does, removing a live pod's newest dead "
                "container too.",
            ),
        ]
    ):
        f = decorator(f)
    return f


def container_policy(opts: dict[str, Any]) -> Any:
    """`ContainerGCPolicy` from the container policy options. Raises `BadInput`."""
    return ContainerGCPolicy(
        min_age=parse_duration(
            opts["minimum_container_ttl_duration"], flag="--minimum-container-ttl-duration"
        ),
        max_per_pod_container=opts["maximum_dead_containers_per_container"],
        max_containers=opts["maximum_dead_containers"],
        match_kubelet=opts["match_kubelet"],
        include_terminated_pods=opts["include_terminated_pods"],
    )


def _scope_and_act(s: Any, opts: dict[str, Any], older_than: float | None = None) -> Any:
    """(Scope, ActOptions) from the shared removal options; `BadInput` for contradictions
    and a bad `-l/--selector`."""
    act = act_options(opts)
    return scope_from(opts, older_than), act


def scope_from(opts: dict[str, Any], older_than: float | None = None) -> Scope:
    """`Scope` from the `scope_options`. Raises `BadInput` for a bad `-l/--selector`."""
    raw_selector = opts.get("selector")
    selector = None
    if raw_selector is not None:
        selector = parse_selector(raw_selector)
    return Scope(
        namespaces=frozenset(opts["namespace"]),
        exclude_namespaces=frozenset(opts["exclude_namespace"]),
        pods=frozenset(opts["pod"]),
        older_than=older_than,
        selector=selector,
    )


@gc.command("containers")
@container_policy_options
@plan_out_option
@click.option(
    "--older-than",
    type=GIVEN,
    metavar="DURATION",
    help="Only containers that finished at least this long ago.",
)
@removal_options
@global_options
@click.pass_context
def gc_containers(ctx: click.Context, /, **opts: Any) -> None:
    """Remove dead containers as the kubelet's container GC would.

    Dead means not running: EXITED, CREATED and UNKNOWN (stopped first). Containers are grouped
    into evict units (pod UID, container name). The containers of deleted pods go (with a pod
    source); each unit keeps its newest N; the node keeps at most M. kubegc never removes the
    newest dead container of a live pod's unit unless --match-kubelet.

    \b
    Examples:
      kubegc gc containers                                # plan, then ask (no tty: dry run)
      kubectl get pods -A --field-selector spec.nodeName=$NODE -o json > pods.json
      kubegc gc containers --pods-file pods.json --yes    # also deleted pods' containers
      kubegc gc containers -n ci --maximum-dead-containers-per-container 0 -o json
    """
    s = settings_from(ctx)
    policy = container_policy(opts)
    older = parse_duration(opts["older_than"], flag="--older-than") if opts["older_than"] else None
    scope, act = _scope_and_act(s, opts, older)
    finish(flows.gc_containers(s, policy, scope, act, ConsoleUi(s.verbose, s.output, s.limit)), s)


@gc.command("sandboxes")
@removal_options
@plan_out_option
@global_options
@click.pass_context
def gc_sandboxes(ctx: click.Context, /, **opts: Any) -> None:
    """Remove dead pod sandboxes as the kubelet's sandbox GC would.

    A sandbox is active — never removed — while it is READY or any container (even an exited
    one) is still in it. Of a pod that exists, the newest sandbox is always kept and older
    inactive ones go; of a deleted pod (needs a pod source) every inactive sandbox goes. No age
    limit applies. Removal is StopPodSandbox, then RemovePodSandbox.

    \b
    Examples:
      kubegc gc sandboxes --dry-run
      kubegc gc sandboxes --pods-file pods.json --yes     # also deleted pods' sandboxes
      kubegc gc containers --yes && kubegc gc sandboxes --yes
    """
    s = settings_from(ctx)
    scope, act = _scope_and_act(s, opts)
    finish(
        flows.gc_sandboxes(
            s, opts["include_terminated_pods"], scope, act, ConsoleUi(s.verbose, s.output, s.limit)
        ),
        s,
    )


@gc.command("logs")
@click.option(
    "--pod-logs-dir",
    metavar="PATH",
    help="Pod log root on the host [default: the kubelet config's podLogsDir, /var/log/pods].",
)
@act_flags()
@plan_out_option
@global_options
@click.pass_context
def gc_logs(ctx: click.Context, /, **opts: Any) -> None:
    """Remove pod log directories of deleted pods and dangling /var/log/containers links.

    A directory <namespace>_<pod>_<uid> under the pod log root goes only with a pod source and
    only when its pod is gone — never while the runtime still has a container of that pod, and
    never with a mount point at or below it (reported instead). A dangling legacy symlink goes
    unless its container still exists and has not exited (log rotation).

    \b
    Examples:
      kubegc gc logs --pods-file pods.json --dry-run
      kubegc gc logs --pods-file pods.json --yes -o json
    """
    s = settings_from(ctx)
    if opts["dry_run"] and opts["yes"]:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    act = act_options(opts)
    finish(flows.gc_logs(s, opts["pod_logs_dir"], act, ConsoleUi(s.verbose, s.output, s.limit)), s)


@gc.command("all")
@container_policy_options
@plan_out_option
@click.option("--pod-logs-dir", metavar="PATH", help="Pod log root on the host (see gc logs).")
@removal_options
@global_options
@click.pass_context
def gc_all(ctx: click.Context, /, **opts: Any) -> None:
    """Containers, then sandboxes, then pod logs — the kubelet's order — as one plan.

    One table, one confirmation, one JSON document with the actions of all three kinds. Later
    stages plan on the state the earlier ones leave: a sandbox whose last dead container goes
    in this run goes too, and so does a deleted pod's log directory. Every object is still
    re-checked right before it is removed.

    It leaves out unused images (`gc images`) and residue (`residue clean`): `kubegc reclaim`
    plans all of them in one run, and measures the disk before and after.

    \b
    Examples:
      kubegc gc all --pods-file pods.json --dry-run
      kubegc gc all --pods-file pods.json --yes -o json > gc-$(date +%F).json
    """
    s = settings_from(ctx)
    policy = container_policy(opts)
    scope, act = _scope_and_act(s, opts)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    finish(flows.gc_all(s, policy, scope, opts["pod_logs_dir"], act, ui), s)


@gc.command("images")
@click.option("--image-gc-high-threshold", type=WHOLE, default=85, show_default=True, metavar="PCT",
              help="Image filesystem usage (%) at which image GC runs (100 with MaxAge 0s: "
                   "never, as the kubelet).")  # fmt: skip
@click.option("--image-gc-low-threshold", type=WHOLE, default=80, show_default=True, metavar="PCT",
              help="Usage (%) image GC frees down to.")  # fmt: skip
@click.option("--minimum-image-ttl-duration", default="2m", show_default=True, metavar="DURATION",
              help="MinAge: images first detected less than this long ago stay.")  # fmt: skip
@click.option("--image-maximum-gc-age", default="0s", show_default=True, metavar="DURATION",
              help="MaxAge: images unused longer go at any usage (0s: off).")  # fmt: skip
@click.option("--keep", multiple=True, metavar="PATTERN",
              help="Never remove images whose tag or digest matches (glob).")  # fmt: skip
@click.option("--prune-unused", is_flag=True,
              help="Remove every unused image past MinAge at any usage.")  # fmt: skip
@click.option("--pod-infra-container-image", metavar="IMAGE",
              help="Also protect this sandbox image (besides the runtime's own).")  # fmt: skip
@click.option("--allow-unpullable", is_flag=True,
              help="Also remove images that cannot be pulled again (no repo digest, a "
                   "localhost/ name, imported from a tarball); kept by default.")  # fmt: skip
@click.option("--assume-detected-at", metavar="RFC3339",
              help="First-detected time for images kubegc has no record of yet (not later "
                   "than now).")  # fmt: skip
@click.option("--root-dir", metavar="PATH",
              help="The kubelet's root directory, whose image_manager/pulled/ records say "
                   "what pulling an image again takes; one given must be there. "
                   "[default: /var/lib/kubelet]")  # fmt: skip
@act_flags()
@plan_out_option
@global_options
@click.pass_context
def gc_images(ctx: click.Context, /, **opts: Any) -> None:
    """Remove unused images as the kubelet's image GC would, remembering them across runs.

    Images used by any container (exited ones too), pinned (by the runtime, a person, or
    kubegc images pin: the reason says which kubegc can tell), the runtime's
    sandbox and pinned images (its Status, its config file: --runtime-config, CRI-O's, the
    cri-dockerd flag) and --keep matches are never removed; images that cannot be pulled
    again are kept unless --allow-unpullable. At usage >= high, least recently used
    images past MinAge go until usage is at low; MaxAge removes long-unused images at any usage.
    First-detected and last-used times are kept in the state store (--state-dir), dry runs
    included, so MinAge counts from the first run that saw an image. Each image shows what
    pulling it again takes (REPULL; -o wide: DIGEST, REGISTRY, CREDENTIALS): a repo digest or
    not, its registry, and the credentials the kubelet's pull records (--root-dir) say it was
    pulled with: node-wide, a pod's secret, a service account. Each setting comes from
    its flag, else the kubelet config file (--kubelet-config), else the kubelet's default; -v
    says which.

    \b
    Examples:
      kubegc gc images --dry-run
      kubegc gc images --image-gc-high-threshold 70 --image-gc-low-threshold 60 --yes
      kubegc gc images --prune-unused --keep 'registry.k8s.io/*' --dry-run
    """
    s = settings_from(ctx)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    policy, act, infra, assumed = image_gc_options(ctx, opts, s, ui)
    plan = flows.gc_images(
        s, policy, act, ui, pod_infra_image=infra, assume_detected_at=assumed,
        root_dir=opts["root_dir"],
    )  # fmt: skip
    finish(plan, s)
    if plan.shortfall and not plan.dry_run:
        short = format_bytes(plan.shortfall)
        raise PartialFailure(f"image GC could not free enough: {short} short")


def image_gc_options(
    ctx: click.Context, opts: dict[str, Any], s: Any, ui: Any
) -> tuple[Any, Any, str | None, int | None]:
    """`gc images`' option values as its run takes them: (policy, act options, pod infra
    image, assume-detected-at in ns). Each image GC setting from its flag or the config file,
    else the kubelet config file, else the default (`ui.info` says which). Raises `BadInput`."""
    policy = image_gc_policy(ctx, opts, s, ui, prune_unused=opts["prune_unused"])
    if opts["dry_run"] and opts["yes"]:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    act = act_options(opts)
    infra = pod_infra_image(opts)
    assumed = opts["assume_detected_at"]
    at = rfc3339_to_ns(assumed, what="--assume-detected-at") if assumed is not None else None
    return policy, act, infra, at


def image_gc_policy(
    ctx: click.Context, opts: dict[str, Any], s: Any, ui: Any, *, prune_unused: bool
) -> ImageGCPolicy:
    """The image GC policy of a run: each setting of `IMAGE_GC_SETTINGS` the command has from
    its flag or the config file, else the kubelet config file, else the kubelet's default
    (`ui.info` says which); `--keep` patterns. Raises `BadInput` for a bad value."""
    kcfg = kubelet_config_for(s)
    if kcfg.fallback:
        ui.warn(f"{kcfg.fallback}; reading the kubelet's config file instead")
    given = {
        name: opts[name]
        for name, _, _ in IMAGE_GC_SETTINGS
        if name in opts
        and ctx.get_parameter_source(name)
        in (ParameterSource.COMMANDLINE, ParameterSource.DEFAULT_MAP)
    }
    settings = resolve_image_gc_settings(given, kcfg.image_gc, kcfg.source, kcfg.sources)
    _name_config_values(ctx, settings)
    for line in settings.provenance():
        ui.info(line)
    policy = ImageGCPolicy(
        **settings.values,
        prune_unused=prune_unused,
        keep=tuple(opts["keep"]),
        allow_unpullable=bool(opts.get("allow_unpullable")),
    )
    policy.validate(settings.names)
    return policy


def pod_infra_image(opts: dict[str, Any]) -> str | None:
    """`--pod-infra-container-image`: None when not given. Raises `BadInput` when empty."""
    infra: str | None = opts["pod_infra_container_image"]
    if infra is not None and not infra.strip():
        raise BadInput(f"invalid value for --pod-infra-container-image: {infra!r} is empty")
    return infra


def _name_config_values(ctx: click.Context, settings: Any) -> None:
    """Image GC settings the config file gave: named by key and file, in errors and -v."""
    cfg = loaded(ctx)
    if cfg is None:
        return
    for option, fld, _ in IMAGE_GC_SETTINGS:
        if ctx.get_parameter_source(option) is ParameterSource.DEFAULT_MAP:
            key = cfg.key(("gc", "images"), option)
            settings.names[fld] = f"{key} in {cfg.path}"
            settings.origins[option] = cfg.source
