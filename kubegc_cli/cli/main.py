"""`kubegc`: the root command, option parsing into `Settings`, and the one error wrapper.

Start-up is part of the product: this module imports only click and kubegc's light modules;
grpc, the Kubernetes client and rich are imported inside the commands that need them.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from kubegc_cli import __version__
from kubegc_cli.cli.completion import complete_namespace, complete_pod
from kubegc_cli.cli.operate import apply_cmd, completion_cmd, config_group
from kubegc_cli.cli.options import (
    GIVEN,
    WHOLE,
    F,
    KubegcGroup,
    OutputClosed,
    Stopped,
    WholeRange,
    act_flags,
    collected,
    global_options,
    global_sources,
)
from kubegc_cli.core.errors import BadInput, KubegcError, PartialFailure
from kubegc_cli.core.gcpause import cyclic_gc_paused
from kubegc_cli.core.stop import Terminated, ending, first_stop
from kubegc_cli.core.units import safe_text
from kubegc_cli.render.log import LOG
from kubegc_cli.report.run import metrics_file_option, outcome, reported_main, reported_settings

if TYPE_CHECKING:
    from kubegc_cli.core.settings import Settings

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}
MAX_TIMEOUT_SECONDS = 24 * 3600
MAX_RECV_BYTES = 2**31 - 1


@reported_settings
def settings_from(ctx: click.Context) -> Settings:
    """Global option values → `core.settings.Settings`. Raises `BadInput` for bad values."""
    from kubegc_cli.core.settings import Settings
    from kubegc_cli.core.units import parse_bytes, parse_duration, rfc3339_to_ns
    from kubegc_cli.node.host.bounded import set_walk_timeout

    g = collected(ctx)
    LOG.configure(g.get("log_format") or "text", bool(g.get("quiet")))
    timeout = parse_duration(g["timeout"], flag="--timeout")
    if not 0 < timeout <= MAX_TIMEOUT_SECONDS:
        raise BadInput(
            f"invalid value for --timeout: {g['timeout']!r} must be above 0 and at most 24h"
        )
    set_walk_timeout(timeout)  # (no filesystem walk waits longer for one call either)
    max_recv = parse_bytes(g["max_recv_size"], flag="--max-recv-size", whole=True)
    if max_recv > MAX_RECV_BYTES:
        raise BadInput(
            f"invalid value for --max-recv-size: {g['max_recv_size']!r} is above gRPC's limit 2Gi-1"
        )
    if g.get("pods_file") == "":
        raise BadInput("invalid value for --pods-file: empty path")
    host_root = Path(g["host_root"])
    if not os.path.isdir(host_root):  # (False also when it may not be looked into)
        raise BadInput(f"invalid value for --host-root: {g['host_root']!r} is not a directory")
    raw_lock_timeout = g.get("lock_timeout")
    lock_timeout = parse_duration(
        "0s" if raw_lock_timeout is None else raw_lock_timeout, flag="--lock-timeout"
    )
    if lock_timeout > MAX_TIMEOUT_SECONDS:
        raise BadInput(f"invalid value for --lock-timeout: {g['lock_timeout']!r} is above 24h")
    endpoint_from = global_sources(ctx).get("runtime_endpoint", "")
    return Settings(
        runtime_endpoint=g.get("runtime_endpoint"),
        runtime_endpoint_source=(
            f"runtime-endpoint in {endpoint_from.removeprefix('config ')}"
            if endpoint_from.startswith("config ")
            else "--runtime-endpoint"
        ),
        timeout=timeout,
        max_recv_size=max_recv,
        host_root=host_root,
        output=g["output"],
        verbose=g.get("verbose", 0),
        quiet=bool(g.get("quiet")),
        limit=100 if g.get("limit") is None else int(g["limit"]),
        pod_source=g.get("pod_source"),
        pods_file=Path(g["pods_file"]) if g.get("pods_file") else None,
        state_dir=Path(g["state_dir"]),
        snapshot=Path(g["snapshot"]) if g.get("snapshot") else None,
        now=rfc3339_to_ns(g["now"], what="--now") if g.get("now") else None,
        kubelet_config=Path(g["kubelet_config"]) if g.get("kubelet_config") else None,
        kubeconfig=g.get("kubeconfig") or None,
        context=g.get("context") or None,
        node_name=g.get("node_name") or None,
        env=dict(os.environ),
        lock_timeout=lock_timeout,
        metrics_file=metrics_file_option(g.get("metrics_file")),
        events=bool(g.get("events")),
    )


class ConsoleUi:
    """The terminal side of `commands.session.Ui`: diagnostics on stderr, prompts on a tty."""

    def __init__(self, verbose: int, output: str, limit: int = 100) -> None:
        self.verbose = verbose
        self.output = output
        self.limit = limit  # rows a plan table lists per section (--limit; 0 = all)

    def info(self, message: str) -> None:
        if self.verbose:
            LOG.emit("info", message)

    def warn(self, message: str) -> None:
        LOG.emit("warning", message)

    def progress(self, total: int) -> Any:
        """A context for `total` removals: a bar on a terminal, -vv lines (see `LOG`)."""
        return LOG.progress(total, self.verbose)

    def show_plan(self, plan: Any) -> None:
        from kubegc_cli.render.plan import render_plan

        out = sys.stdout if self.output == "table" else sys.stderr
        render_plan(plan, verbose=self.verbose, out=out, limit=self.limit)

    def interactive(self) -> bool:
        return sys.stdin.isatty() and sys.stderr.isatty()

    def confirm(self, question: str) -> bool:
        """Ask on stderr, read a line from stdin: y/yes is yes; n/no or nothing is no; the
        end of input (Ctrl-D, a closed stdin) is no as well — not an interrupt. Ctrl-C still
        interrupts (exit 130)."""
        while True:
            click.echo(f"{question} [y/N]: ", nl=False, err=True)
            line = sys.stdin.readline()
            if not line:
                click.echo("", err=True)
                return False
            answer = line.strip().lower()
            if answer in ("y", "yes"):
                return True
            if answer in ("", "n", "no"):
                return False
            click.echo("Error: invalid input", err=True)


@click.group(cls=KubegcGroup, context_settings=CONTEXT)
@click.version_option(__version__, "--version", prog_name="kubegc", message="%(prog)s %(version)s")
@global_options
def cli() -> None:
    """kubegc: the kubelet's garbage collection for one Kubernetes node, shown before it is done.

    \b
    kubegc gc containers            dead containers, by the kubelet's container GC rules
    kubegc gc sandboxes             dead pod sandboxes, by the kubelet's sandbox GC rules
    kubegc gc logs                  log directories of deleted pods, dangling log symlinks
    kubegc gc all                   all three in the kubelet's order, one plan
    kubegc gc images                unused images, by the kubelet's image GC rules
    kubegc residue scan             leftovers: orphaned pod dirs, netns, CNI IPs, cgroups, ...
    kubegc residue clean            remove the leftovers that are safe to remove
    kubegc df                       what fills the node's disks, and what can be reclaimed
    kubegc snapshot > node.json     what kubegc observes, for planning off the node
    kubegc history                  what past runs removed (from the state store)
    kubegc apply plan.json          carry out a plan a dry run saved with --plan-out
    kubegc config view              the configuration in force, with each value's source
    kubegc completion bash          the shell completion script (bash, zsh, fish)

    Destructive commands print their plan first; --dry-run stops there, --yes acts.
    Exit codes: 0 done, 1 some actions failed, 2 bad input, 3 runtime unreachable,
    4 another kubegc run holds the node lock.
    """


@cli.group(cls=KubegcGroup)
@global_options
def gc() -> None:
    """Garbage-collect what the kubelet would: containers, then sandboxes, then pod logs."""


def removal_options(f: F) -> F:
    """Options every removing command shares: pod scope, terminated pods, how to act."""
    f = act_flags()(f)
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
        help="Dry run, and save the plan to FILE for review; `kubegc apply FILE --yes` "
        "carries it out later.",
    )(f)


def act_options(opts: dict[str, Any]) -> Any:
    """`ActOptions` from `--dry-run`, `--yes`, `--concurrency`, the caps and `--plan-out`.

    `--plan-out` makes the run a dry run. Raises `BadInput` for `--dry-run` with `--yes`,
    `--plan-out` with `--yes` or an empty path, and a `--max-bytes` that is not a size.
    """
    from kubegc_cli.commands.session import ActOptions
    from kubegc_cli.core.units import parse_bytes

    if opts["dry_run"] and opts["yes"]:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    plan_out = opts.get("plan_out")
    if plan_out is not None:
        if not plan_out.strip():
            raise BadInput("invalid value for --plan-out: empty path")
        if opts["yes"]:
            raise BadInput(
                "--plan-out saves the plan of a dry run; drop --yes "
                "(then carry it out with: kubegc apply FILE --yes)"
            )
    raw_bytes = opts.get("max_bytes")
    return ActOptions(
        dry_run=opts["dry_run"] or plan_out is not None,
        yes=opts["yes"],
        concurrency=opts["concurrency"],
        max_delete=opts.get("max_delete"),
        max_bytes=parse_bytes(raw_bytes, flag="--max-bytes") if raw_bytes is not None else None,
    )


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
    from kubegc_cli.core.units import parse_duration
    from kubegc_cli.policy.containers import ContainerGCPolicy

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
    from kubegc_cli.policy.scope import Scope

    act = act_options(opts)
    raw_selector = opts.get("selector")
    selector = None
    if raw_selector is not None:
        from kubegc_cli.core.selector import parse

        selector = parse(raw_selector)
    scope = Scope(
        namespaces=frozenset(opts["namespace"]),
        exclude_namespaces=frozenset(opts["exclude_namespace"]),
        pods=frozenset(opts["pod"]),
        older_than=older_than,
        selector=selector,
    )
    return scope, act


def finish(plan: Any, s: Any) -> None:
    """Print the plan (or its results), save it with `--plan-out`, and turn its outcome into
    the exit code."""
    outcome(plan)
    emit_plan(plan, s)
    ctx = click.get_current_context(silent=True)
    plan_out = ctx.params.get("plan_out") if ctx is not None else None
    if plan_out:
        from kubegc_cli.commands.apply import save_plan

        save_plan(plan, Path(plan_out), s)
        LOG.emit("warning", f"plan saved to {plan_out}; carry it out with: kubegc apply "
                 f"{plan_out} --yes")  # fmt: skip
    if plan.interrupted:
        from kubegc_cli.core.plan import INTERRUPTED

        skipped = sum(1 for a in plan.actions if a.error == INTERRUPTED)
        why, code = ("terminated", 143) if plan.interrupted == "SIGTERM" else ("interrupted", 130)
        _fail(f"{why}; {skipped} planned removal(s) not attempted", code)
    counts = plan.counts()
    failed = counts["failed"]
    if plan.runtime_lost:
        from kubegc_cli.core.errors import RuntimeUnavailable

        if not counts["removed"] and not _outcome_unknown(plan):
            raise RuntimeUnavailable(
                f"the runtime stopped answering before anything was removed "
                f"({plan.runtime_lost}); nothing removed: {failed} failed, "
                f"{counts['skipped']} skipped (see RESULT)"
            )
        raise PartialFailure(
            f"{plan.runtime_lost}; {counts['removed']} removed before, the rest not attempted "
            "(see RESULT)"
        )
    if failed:
        raise PartialFailure(f"{failed} of {len(plan.actions)} removal(s) failed (see RESULT)")


def _outcome_unknown(plan: Any) -> bool:
    """A call that changes the runtime went unanswered ("outcome unknown"): it may have been
    carried out, so "nothing removed" (exit 3) cannot be said."""
    from kubegc_cli.node.execute.actions import OUTCOME_UNKNOWN

    return any(OUTCOME_UNKNOWN in a.error for a in plan.actions if a.error)


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
    from kubegc_cli.commands.gc import gc_containers as run
    from kubegc_cli.core.units import parse_duration

    s = settings_from(ctx)
    policy = container_policy(opts)
    older = parse_duration(opts["older_than"], flag="--older-than") if opts["older_than"] else None
    scope, act = _scope_and_act(s, opts, older)
    finish(run(s, policy, scope, act, ConsoleUi(s.verbose, s.output, s.limit)), s)


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
    from kubegc_cli.commands.gc import gc_sandboxes as run

    s = settings_from(ctx)
    scope, act = _scope_and_act(s, opts)
    finish(
        run(
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
    from kubegc_cli.commands.gc import gc_logs as run

    s = settings_from(ctx)
    if opts["dry_run"] and opts["yes"]:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    act = act_options(opts)
    finish(run(s, opts["pod_logs_dir"], act, ConsoleUi(s.verbose, s.output, s.limit)), s)


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

    \b
    Examples:
      kubegc gc all --pods-file pods.json --dry-run
      kubegc gc all --pods-file pods.json --yes -o json > gc-$(date +%F).json
    """
    from kubegc_cli.commands.gc import gc_all as run

    s = settings_from(ctx)
    policy = container_policy(opts)
    scope, act = _scope_and_act(s, opts)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    finish(run(s, policy, scope, opts["pod_logs_dir"], act, ui), s)


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
@click.option("--assume-detected-at", metavar="RFC3339",
              help="First-detected time for images kubegc has no record of yet (not later "
                   "than now).")  # fmt: skip
@act_flags()
@plan_out_option
@global_options
@click.pass_context
def gc_images(ctx: click.Context, /, **opts: Any) -> None:
    """Remove unused images as the kubelet's image GC would, remembering them across runs.

    Images used by any container (exited ones too), pinned by the runtime, the runtime's
    sandbox image and --keep matches are never removed. At usage >= high, least recently used
    images past MinAge go until usage is at low; MaxAge removes long-unused images at any usage.
    First-detected and last-used times are kept in the state store (--state-dir), dry runs
    included, so MinAge counts from the first run that saw an image. Each setting comes from
    its flag, else the kubelet config file (--kubelet-config), else the kubelet's default; -v
    says which.

    \b
    Examples:
      kubegc gc images --dry-run
      kubegc gc images --image-gc-high-threshold 70 --image-gc-low-threshold 60 --yes
      kubegc gc images --prune-unused --keep 'registry.k8s.io/*' --dry-run
    """
    from kubegc_cli.commands.gc import gc_images as run

    s = settings_from(ctx)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    policy, act, infra, assumed = _image_gc_options(ctx, opts, s, ui)
    plan = run(s, policy, act, ui, pod_infra_image=infra, assume_detected_at=assumed)
    finish(plan, s)
    if plan.shortfall and not plan.dry_run:
        raise PartialFailure(f"image GC could not free enough: {plan.shortfall} bytes short")


def _image_gc_options(
    ctx: click.Context, opts: dict[str, Any], s: Any, ui: Any
) -> tuple[Any, Any, str | None, int | None]:
    """`gc images`' option values as its run takes them: (policy, act options, pod infra
    image, assume-detected-at in ns). Each image GC setting from its flag or the config file,
    else the kubelet config file, else the default (`ui.info` says which). Raises `BadInput`."""
    from click.core import ParameterSource

    from kubegc_cli.core.units import rfc3339_to_ns
    from kubegc_cli.node.host.kubelet import load_kubelet_config
    from kubegc_cli.policy.images import (
        IMAGE_GC_SETTINGS,
        ImageGCPolicy,
        resolve_image_gc_settings,
    )

    kcfg = load_kubelet_config(s.kubelet_config, s.host_root)
    given = {
        name: opts[name]
        for name, _, _ in IMAGE_GC_SETTINGS
        if ctx.get_parameter_source(name)
        in (ParameterSource.COMMANDLINE, ParameterSource.DEFAULT_MAP)
    }
    settings = resolve_image_gc_settings(given, kcfg.image_gc, kcfg.source)
    _name_config_values(ctx, settings)
    for line in settings.provenance():
        ui.info(line)
    policy = ImageGCPolicy(
        **settings.values, prune_unused=opts["prune_unused"], keep=tuple(opts["keep"])
    )
    policy.validate(settings.names)
    if opts["dry_run"] and opts["yes"]:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    act = act_options(opts)
    infra = opts["pod_infra_container_image"]
    if infra is not None and not infra.strip():
        raise BadInput(f"invalid value for --pod-infra-container-image: {infra!r} is empty")
    assumed = opts["assume_detected_at"]
    at = rfc3339_to_ns(assumed, what="--assume-detected-at") if assumed is not None else None
    return policy, act, infra, at


def check_options(path: tuple[str, ...], ctx: click.Context, s: Any) -> None:
    """The checks the command at `path` makes of its option values (in `ctx.params`) before
    it observes anything, made the same way with the same messages — for `config view`, so
    that it refuses what the run would refuse. Raises `BadInput`."""
    from kubegc_cli.core.units import parse_bytes, parse_duration
    from kubegc_cli.node.host.kubelet import validate_pod_logs_dir

    opts = ctx.params
    if path == ("gc", "images"):
        _image_gc_options(ctx, opts, s, ConsoleUi(0, s.output))
        return
    if "minimum_container_ttl_duration" in opts:
        container_policy(opts)
    if opts.get("older_than"):
        parse_duration(opts["older_than"], flag="--older-than")
    if {"dry_run", "yes", "concurrency"} <= opts.keys():
        act_options(opts)
    if opts.get("pod_logs_dir") is not None and path[0] in ("gc", "apply"):
        validate_pod_logs_dir(opts["pod_logs_dir"], source="--pod-logs-dir")
    if opts.get("allocatable") is not None:
        parse_bytes(opts["allocatable"], flag="--allocatable")
    if opts.get("watch") is not None:
        _interval(opts["watch"])


def _name_config_values(ctx: click.Context, settings: Any) -> None:
    """Image GC settings the config file gave: named by key and file, in errors and -v."""
    from click.core import ParameterSource

    from kubegc_cli.cli.config import loaded
    from kubegc_cli.policy.images import IMAGE_GC_SETTINGS

    cfg = loaded(ctx)
    if cfg is None:
        return
    for option, fld, _ in IMAGE_GC_SETTINGS:
        if ctx.get_parameter_source(option) is ParameterSource.DEFAULT_MAP:
            key = cfg.key(("gc", "images"), option)
            settings.names[fld] = f"{key} in {cfg.path}"
            settings.origins[option] = cfg.source


@cli.group(cls=KubegcGroup)
@global_options
def memory() -> None:
    """The kubelet's memory signals on this node (observe only)."""


def _interval(text: str | None) -> float:
    from kubegc_cli.core.units import parse_duration

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
    from kubegc_cli.commands.evict import memory_report
    from kubegc_cli.core.units import parse_bytes

    s = settings_from(ctx)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    given = parse_bytes(allocatable, flag="--allocatable") if allocatable is not None else None
    interval = _interval(watch) if watch is not None else None
    if interval is not None and s.output != "table":
        raise BadInput("--watch shows a live table; drop it for -o json/yaml (one sample)")
    report = memory_report(s, ui, allocatable=given, top=top)
    from kubegc_cli.render import plan as render

    if s.output in ("json", "yaml"):
        render.dump_document(report.to_dict(), s.output)
        return
    from kubegc_cli.render.pressure import memory_renderable, render_memory

    if interval is None:
        render_memory(report)
        return
    import time

    try:
        if not sys.stdout.isatty():
            # Into a pipe or file (`| tee log`): one plain frame per sample, each flushed at
            # once, 200 columns wide as every other table written there.
            from kubegc_cli.core.units import ns_to_rfc3339

            while True:
                print(f"sample at {ns_to_rfc3339(report.captured_at)}", flush=True)
                render_memory(report)
                print(flush=True)
                time.sleep(interval)
                report = memory_report(s, ui, allocatable=given, top=top)

        from rich.live import Live

        from kubegc_cli.render.plan import make_console

        with Live(memory_renderable(report), console=make_console(sys.stdout), refresh_per_second=4,
                  screen=False) as live:  # fmt: skip
            while True:
                time.sleep(interval)
                report = memory_report(s, ui, allocatable=given, top=top)
                live.update(memory_renderable(report))
    except Terminated:  # a supervisor's stop (systemd, `timeout`): exit 143 as everywhere
        raise
    except KeyboardInterrupt:  # Ctrl-C is how a watch ends: not an error
        return


@cli.group(cls=KubegcGroup)
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
    line, else its config file (--kubelet-config, default /var/lib/kubelet/config.yaml),
    else the kubelet's defaults. Setting any hard threshold drops the unlisted defaults, as
    on the kubelet; the output says which. One row per threshold: observed value, threshold,
    margin, met or not, hard or soft, the node condition, and what the kubelet reclaims first.
    With a pod source, the pods the kubelet would evict first for each met signal.

    Exit codes: 0 no threshold met, 1 at least one met, 2 bad input, 3 a signal could not
    be read (and none met).

    \b
    Examples:
      kubegc evict check
      kubegc evict check --eviction-hard 'memory.available<1Gi,nodefs.available<15%'
      kubegc evict check -o json | jq '.met'
    """
    from kubegc_cli.commands.evict import evict_check as run
    from kubegc_cli.commands.evict import kubelet_root
    from kubegc_cli.core.units import parse_bytes
    from kubegc_cli.policy.eviction.thresholds import raw_from_flags

    s = settings_from(ctx)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    flags = raw_from_flags(
        _joined(opts["eviction_hard"]),
        _joined(opts["eviction_soft"]),
        _joined(opts["eviction_soft_grace_period"]),
        _joined(opts["eviction_minimum_reclaim"]),
    )
    given = opts["allocatable"]
    report = run(
        s, ui, flags,
        root_dir=kubelet_root(opts["root_dir"]),
        allocatable=parse_bytes(given, flag="--allocatable") if given is not None else None,
        top=opts["top"],
    )  # fmt: skip
    outcome(report)
    from kubegc_cli.render import plan as render

    if s.output in ("json", "yaml"):
        render.dump_document(report.to_dict(), s.output)
    else:
        from kubegc_cli.render.pressure import render_eviction

        render_eviction(report, verbose=s.verbose)
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
@act_flags(concurrency_help="Parallel API calls.")
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
    from kubegc_cli.commands.evicted import PruneOptions, prune_evicted
    from kubegc_cli.core.selector import parse
    from kubegc_cli.core.units import parse_duration
    from kubegc_cli.node.pods.api import node_name

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


@cli.group(cls=KubegcGroup)
@global_options
def residue() -> None:
    """Leftovers of the kubelet and the runtime: find them (scan), remove the safe ones (clean)."""


def residue_options(f: F) -> F:
    """What `residue scan` and `residue clean` look at."""
    from kubegc_cli.core.residue import TYPES

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
    from kubegc_cli.commands.residue import ResidueOptions

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
    cgroups, leaked shims, runtime lists near the gRPC message limit, unused images. Each
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
    from kubegc_cli.commands.residue import residue_scan as run

    s = settings_from(ctx)
    plan = run(s, ConsoleUi(s.verbose, s.output, s.limit), _residue_options(opts))
    outcome(plan)
    if s.quiet and s.output == "table":
        for f in [*plan.actions, *plan.kept]:
            click.echo(safe_text(f.target))  # a host path: escaped as in the table
    else:
        emit_plan(plan, s)
    if plan.runtime_error:
        from kubegc_cli.core.errors import RuntimeUnavailable

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
    deepest first). Shims, runtime objects and images are never touched: the finding names
    the command to run. Needs the runtime (exit 3 without it, nothing removed).

    \b
    Examples:
      kubegc residue clean --pods-file pods.json --dry-run
      kubegc residue clean --pods-file pods.json --kind orphaned-pod-dir --yes
    """
    from kubegc_cli.commands.residue import residue_clean as run

    s = settings_from(ctx)
    if opts["dry_run"] and opts["yes"]:
        raise BadInput("--dry-run and --yes contradict each other; give one")
    act = act_options(opts)
    finish(run(s, ConsoleUi(s.verbose, s.output, s.limit), _residue_options(opts), act), s)


@cli.command("history")
@click.option("--runs", type=WholeRange(1, 10_000), default=20, show_default=True,
              help="How many recent runs to show.")  # fmt: skip
@global_options
@click.pass_context
def history(ctx: click.Context, /, runs: int) -> None:
    """List past runs that acted, and what each did, from the state store (--state-dir).

    \b
    Examples:
      kubegc history
      kubegc history --runs 1 -o json
    """
    from kubegc_cli.node.state import read_history
    from kubegc_cli.render import plan as render

    s = settings_from(ctx)
    items = read_history(s.state_dir, runs, ConsoleUi(s.verbose, s.output, s.limit).warn)
    if s.output in ("json", "yaml"):
        render.dump_document({"kind": "History", "items": items}, s.output)
        return
    if not items:
        click.echo(f"no runs recorded in {s.state_dir}")
        return
    for run in items:
        counts = ", ".join(f"{k} {v}" for k, v in sorted(run["by_result"].items())) or "nothing"
        click.echo(
            f"{run['at']}  {run['command']:<14} {counts}; freed {run['bytes_freed']} bytes  "
            f"(run {run['run_id']})"
        )
        if s.verbose:
            for a in run["actions"]:
                cells = (safe_text(str(a[k])) for k in ("kind", "id", "rule", "result"))
                kind, oid, rule, result = cells
                click.echo(f"    {kind:<11} {oid[:40]:<40} {rule:<22} {result}")


@cyclic_gc_paused
def emit_plan(plan: Any, s: Any) -> None:
    """Write the plan in the chosen output format to stdout (the cyclic garbage collector
    paused: it would rescan a big plan's objects for every few hundred rows written)."""
    from kubegc_cli.render import plan as render

    if s.output in ("json", "yaml"):
        render.dump_document(plan.to_dict(rows_as_json=s.output == "json"), s.output)
    elif plan.declined:
        return  # the table was shown right before the question
    elif s.quiet:
        render.render_ids(plan)
    else:
        render.render_plan(plan, verbose=s.verbose, limit=s.limit)


@cli.command("df")
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
    from kubegc_cli.commands.df import DfOptions, disk_usage

    s = settings_from(ctx)
    ui = ConsoleUi(s.verbose, s.output, s.limit)
    options = DfOptions(
        root_dir=opts["root_dir"],
        pod_logs_dir=opts["pod_logs_dir"],
        top=opts["top"],
        runtime=not opts["no_runtime"],
    )
    from kubegc_cli.render.df import walk_progress

    with walk_progress(sys.stderr.isatty()) as progress:
        report = disk_usage(s, ui, options, progress=progress)
    if s.output in ("json", "yaml"):
        from kubegc_cli.render import plan as render

        render.dump_document(report.to_dict(), s.output)
    else:
        from kubegc_cli.render.df import render_df

        render_df(report, verbose=s.verbose)
    sys.exit(report.exit_code())


@cli.command("snapshot")
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
    import io

    from kubegc_cli.commands.gc import snapshot_node
    from kubegc_cli.node.outfile import replace_file
    from kubegc_cli.render.plan import dump_document

    s = settings_from(ctx)
    snap = snapshot_node(s, ConsoleUi(s.verbose, s.output, s.limit))
    buf = io.StringIO()
    dump_document(snap.to_dict(), "yaml" if s.output == "yaml" else "json", buf)
    text = buf.getvalue()
    if path:
        try:
            replace_file(Path(path), text)  # a link at `path` is replaced, never followed
        except OSError as exc:
            raise BadInput(f"cannot write snapshot {path}: {exc.strerror or exc}") from None
        LOG.emit("info", f"wrote {len(snap.containers)} containers to {path}")
    else:
        sys.stdout.write(text)


cli.add_command(apply_cmd)
cli.add_command(config_group)
cli.add_command(completion_cmd)


def _fail(message: str, code: int) -> NoReturn:
    LOG.emit("error", message)
    sys.exit(code)


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM as `Terminated` (for a `main` called in a process kubegc's console script did
    not start; the console script installs `kubegc_cli.core.stop.first_stop` itself)."""
    raise Terminated


@reported_main
def main(argv: list[str] | None = None) -> None:
    """Entry point: run the command; every error is one line on stderr and its exit code."""
    os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # gRPC's C core must not write to stderr
    words = sys.argv[1:] if argv is None else argv  # errors before the options are read too
    pairs = itertools.pairwise(words)
    json_log = "--log-format=json" in words or ("--log-format", "json") in pairs
    LOG.configure("json" if json_log else "text", quiet=False)
    if (
        threading.current_thread() is threading.main_thread()
        and signal.getsignal(signal.SIGTERM) is not first_stop
    ):
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        cli.main(args=argv, prog_name="kubegc", standalone_mode=False)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc))
        sys.exit(2)
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        _fail(exc.format_message() + hint, 2)
    except click.ClickException as exc:
        _fail(exc.format_message(), exc.exit_code or 2)
    except click.exceptions.Abort as exc:
        # click turns a KeyboardInterrupt inside a command into Abort: a stop signal then
        # still says which it was, with its exit code.
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, KeyboardInterrupt):
            _fail(*ending(getattr(cause, "signal_name", "SIGINT")))
        _fail("aborted", 130)
    except KubegcError as exc:
        _fail(str(exc), exc.exit_code)
    except (Stopped, KeyboardInterrupt) as exc:  # (`Terminated` says SIGTERM)
        _fail(*ending(getattr(exc, "signal_name", "SIGINT")))
    except (BrokenPipeError, OutputClosed):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error while flushing at exit
        sys.exit(141)
    except MemoryError:
        _fail("out of memory (an input file too large for this machine?)", 1)
    finally:
        logs = sys.modules.get("kubegc_cli.node.host.logs")  # loaded only by runs that pinned
        if logs is not None:
            logs.release_pins()  # the directories held open from plan to removal
    sys.exit(0)
