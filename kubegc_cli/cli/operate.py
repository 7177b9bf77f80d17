"""Commands for running kubegc on a node: `apply`, `config view`, `completion`.

Like the rest of the command line, this module imports only click and light kubegc modules;
the core is imported inside each command.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from kubegc_cli.cli.options import (
    GIVEN,
    GivenPath,
    KubegcCommand,
    KubegcGroup,
    act_flags,
    collected,
    global_options,
    global_sources,
)
from kubegc_cli.core.units import safe_text


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
@global_options
@click.pass_context
def apply_cmd(ctx: click.Context, /, plan_file: str, **opts: Any) -> None:
    """Carry out a plan saved by a dry run with --plan-out, exactly as saved.

    Only the actions in FILE are carried out (delete some to do less; nothing is added).
    FILE is not trusted: every object is re-read from the node now (a container, sandbox or
    image from the runtime, a log path rebuilt under podLogsDir or /var/log/containers) and
    skipped with the reason when it is gone, running, re-created, in use, pinned or no longer
    garbage; a file naming a path elsewhere, another command or an unknown rule is exit 2.
    Removals for deleted pods need a pod source now (--pods-file or the API); kubegc's guard
    on the newest dead container of a live pod is re-applied unless --match-kubelet. Actions
    the plan held back stay held back; --max-delete and --max-bytes hold back more. A plan
    applies only on the node it was made on.

    \b
    Examples:
      kubegc gc all --pods-file pods.json --plan-out /root/gc-plan.json
      less /root/gc-plan.json                   # review, delete what should stay
      kubegc apply /root/gc-plan.json --pods-file pods.json --yes
    """
    from kubegc_cli.cli.main import ConsoleUi, act_options, finish, settings_from
    from kubegc_cli.commands.apply import apply_plan

    s = settings_from(ctx)
    act = act_options(opts)
    ui = ConsoleUi(s.verbose, s.output)
    plan = apply_plan(
        s, Path(plan_file), act, ui,
        pod_logs_dir=opts["pod_logs_dir"], match_kubelet=opts["match_kubelet"],
    )  # fmt: skip
    finish(plan, s)


@click.group("config", cls=KubegcGroup)
@global_options
def config_group() -> None:
    """kubegc's config file: global options and per-command options (see config view)."""


def _value_text(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _target(root: click.Group, words: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """(command, its path, the rest of the words) for `config view COMMAND... [OPTIONS]`.
    Raises `BadInput` for a path that is not a command."""
    from kubegc_cli.core.errors import BadInput

    cmd: click.Command = root
    path: list[str] = []
    rest = list(words)
    while isinstance(cmd, click.Group) and rest and not rest[0].startswith("-"):
        name = rest.pop(0)
        sub = cmd.commands.get(name)
        if sub is None:
            known = ", ".join(sorted(cmd.commands))
            raise BadInput(f"no command '{' '.join(['kubegc', *path, name])}' (known: {known})")
        cmd, path = sub, [*path, name]
    if isinstance(cmd, click.Group) and path:
        known = ", ".join(sorted(cmd.commands))
        raise BadInput(f"'{' '.join(['kubegc', *path])}' is a group; name one of: {known}")
    return cmd, path, rest


@config_group.command(
    "view",
    cls=KubegcCommand,
    context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
)
@click.argument("words", nargs=-1, type=click.UNPROCESSED, metavar="[COMMAND [OPTIONS]]")
@global_options
@click.pass_context
def config_view(ctx: click.Context, /, words: tuple[str, ...]) -> None:
    """Print the configuration in force, with the source of every value.

    Sources: flag, env VAR (CONTAINER_RUNTIME_ENDPOINT, KUBECONFIG), config FILE (the config
    file: --config, $KUBEGC_CONFIG, else /etc/kubegc/config.yaml), kubelet config FILE (the
    image GC settings), default. Without a command: the global options and what the config
    file sets for each command. With a command and its options as you would run it: every
    option of that command as that run would see it. Nothing is observed or changed.

    \b
    The config file (YAML): global options at the top, a command's options under its path,
    by their long names:
      timeout: 30s
      lock-timeout: 5m
      gc:
        containers:
          maximum-dead-containers-per-container: 2
          max-delete: 100

    \b
    Examples:
      kubegc config view
      kubegc config view gc containers --maximum-dead-containers-per-container 3
      kubegc --config ./kubegc.yaml config view gc images -o json
    """
    from kubegc_cli.cli.config import global_params, loaded, own_options
    from kubegc_cli.cli.main import settings_from

    root = ctx.find_root().command
    assert isinstance(root, click.Group)
    s = settings_from(ctx)
    cfg = loaded(ctx)
    assert cfg is not None
    rows: list[dict[str, Any]] = []
    values, sources = collected(ctx), global_sources(ctx)
    for key, param in global_params(root).items():
        assert param.name is not None
        if param.name in values:
            source = sources.get(param.name, "default")
            value = values[param.name]
            if source.startswith("env "):
                value = os.environ.get(source.removeprefix("env "))
            rows.append({"key": key, "value": _value_text(value), "source": source})
    config_source = (
        "flag" if cfg.origin == "--config" else f"env {cfg.origin}"
        if cfg.origin not in ("", "default") else "default"
    )  # fmt: skip
    rows.append(
        {"key": "config", "value": str(cfg.path) if cfg.path else None, "source": config_source}
    )
    if words:
        cmd, path, rest = _target(root, list(words))
        sub = _checked(ctx, cmd, tuple(path), rest, s)
        kubelet = _kubelet_values(cmd, s, sub)
        for key, param in own_options(cmd).items():
            assert param.name is not None
            src = sub.get_parameter_source(param.name)
            if src is ParameterSource.COMMANDLINE:
                source = "flag"
            elif src is ParameterSource.ENVIRONMENT:
                source = "env"
            elif src is ParameterSource.DEFAULT_MAP:
                source = cfg.source
            elif param.name in kubelet:
                source = kubelet[param.name][1]
            else:
                source = "default"
            value = sub.params.get(param.name)
            if param.name in kubelet and source.startswith("kubelet config"):
                value = kubelet[param.name][0]
            rows.append({"key": ".".join((*path, key)), "value": _value_text(value),
                         "source": source})  # fmt: skip
    else:
        for trail, opts in sorted(cfg.commands.items()):
            cmd, _, _ = _target(root, list(trail))
            _checked(ctx, cmd, trail, None, s)
            for name, value in opts.items():
                rows.append({"key": cfg.key(trail, name), "value": _value_text(value),
                             "source": cfg.source})  # fmt: skip
    _print_rows(rows, s.output, cfg.path)


def _checked(
    ctx: click.Context, cmd: click.Command, path: tuple[str, ...], args: list[str] | None, s: Any
) -> click.Context:
    """The context `kubegc PATH ARGS` would run in (`args` None: no command line), with the
    config file's values filled in, after the checks that run makes of its options
    (`kubegc_cli.cli.main.check_options`): a value the run refuses is refused here too, with
    the same message. Raises `BadInput`."""
    from kubegc_cli.cli.config import annotate, loaded
    from kubegc_cli.cli.main import check_options
    from kubegc_cli.core.errors import BadInput

    cfg = loaded(ctx)
    assert cfg is not None
    # `config view` alone: no command line, so a command's own arguments are not checked
    sub = cmd.make_context(path[-1], args or [], parent=ctx, resilient_parsing=args is None)
    sub.meta.update(ctx.meta)
    for name, value in cfg.commands.get(path, {}).items():
        if sub.get_parameter_source(name) in (None, ParameterSource.DEFAULT):
            sub.params[name] = value
            sub.set_parameter_source(name, ParameterSource.DEFAULT_MAP)
    try:
        check_options(path, sub, s)
    except BadInput as exc:
        raise annotate(exc, sub, path) from None
    return sub


def _kubelet_values(cmd: click.Command, s: Any, sub: click.Context) -> dict[str, tuple[Any, str]]:
    """Option name → (value, `kubelet config FILE`) for the options of `cmd` the kubelet
    config file sets (image GC settings, the pod log root)."""
    from kubegc_cli.node.host.kubelet import load_kubelet_config

    names = {p.name for p in cmd.params}
    wanted = {"image_gc_high_threshold", "pod_logs_dir"} & names
    if not wanted:
        return {}
    kcfg = load_kubelet_config(s.kubelet_config, s.host_root)
    if kcfg.source == "defaults":
        return {}
    out: dict[str, tuple[Any, str]] = {}
    source = f"kubelet config {kcfg.source}"
    for name, value in kcfg.image_gc.items():
        if name in names:
            shown = value
            if "threshold" not in name:
                from kubegc_cli.core.units import format_go_duration

                shown = format_go_duration(value)
            out[name] = (shown, source)
    if "pod_logs_dir" in names and kcfg.pod_logs_dir:
        out["pod_logs_dir"] = (kcfg.pod_logs_dir, source)
    return out


def _print_rows(rows: list[dict[str, Any]], output: str, path: Path | None) -> None:
    if output in ("json", "yaml"):
        from kubegc_cli.core.model import API_VERSION
        from kubegc_cli.render import plan as render

        doc = {"kind": "Config", "apiVersion": API_VERSION, "file": str(path) if path else None,
               "values": rows}  # fmt: skip
        render.dump_document(doc, output)
        return
    width = max(len("KEY"), *(len(r["key"]) for r in rows))
    vwidth = min(40, max(len("VALUE"), *(len(safe_text(_show(r["value"]))) for r in rows)))
    click.echo(f"{'KEY':<{width}}  {'VALUE':<{vwidth}}  SOURCE")
    for r in rows:
        value, source = safe_text(_show(r["value"])), safe_text(r["source"])  # as in tables
        click.echo(f"{r['key']:<{width}}  {value:<{vwidth}}  {source}")


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


@click.command("completion")
@click.argument("shell", metavar="SHELL", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion_cmd(ctx: click.Context, /, shell: str) -> None:
    """Print the shell completion script for bash, zsh or fish.

    Commands and options complete from the command tree; -n/--exclude-namespace and --pod
    complete from the pods in --pods-file when one is on the line, else from the pod log
    directories on this node (/var/log/pods). The same scripts are in completions/.

    \b
    Examples:
      kubegc completion bash > /etc/bash_completion.d/kubegc
      kubegc completion zsh > "${fpath[1]}/_kubegc"
      kubegc completion fish > ~/.config/fish/completions/kubegc.fish
      source <(kubegc completion bash)
    """
    from kubegc_cli.cli.completion import script

    sys.stdout.write(script(ctx.find_root().command, shell))
