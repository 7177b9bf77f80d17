"""`kubegc config view`: the configuration in force, with the source of every value."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from kubegc_cli.cli.command import KubegcCommand, KubegcGroup
from kubegc_cli.cli.common import ConsoleUi, act_options, settings_from, table_view
from kubegc_cli.cli.configfile import annotate, global_params, loaded, own_options
from kubegc_cli.cli.gc import container_policy, image_gc_options
from kubegc_cli.cli.memory import watch_interval
from kubegc_cli.cli.options import collected, global_options, global_sources
from kubegc_cli.commands.evict import EVICTION_OPTIONS, kubelet_eviction_settings
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import API_VERSION
from kubegc_cli.core.units import format_go_duration, parse_bytes, parse_duration, safe_text
from kubegc_cli.node.host.kubelet import CONFIG_FIELDS, kubelet_config_for, validate_pod_logs_dir
from kubegc_cli.policy.eviction.thresholds import SOURCE_DEFAULT
from kubegc_cli.render import plan as render
from kubegc_cli.render.table import Column, Grid, Screen, View


@click.group("config", cls=KubegcGroup)
@global_options
def config_group() -> None:
    """kubegc's config file: global options and per-command options (see config view)."""


def _value_text(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _target(root: click.Group, words: list[str]) -> tuple[click.Command, list[str], list[str]]:
    """(command, its path, the rest of the words) for `config view COMMAND... [OPTIONS]`.
    Raises `BadInput` for a path that is not a command."""
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
    file: --config, $KUBEGC_CONFIG, else /etc/kubegc/config.yaml), default, and the
    kubelet's configuration for what kubegc takes from it (the image GC settings, the pod log
    root, evict check's eviction thresholds): kubelet config FILE: FIELD (its config file or
    a drop-in), kubelet /configz: FIELD, the running kubelet's flag, or kubelet default — a
    row per source where the keys of one map come from several. Without a command: the
    global options and what the config file sets for each command. With a command and its
    options as you would run it: every option of that command as that run would see it, and
    for the commands that judge log rotation, kubelet.containerLogMaxSize and
    kubelet.containerLogMaxFiles. Nothing is observed or changed.

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
        kubelet, kubelet_only = _kubelet_values(cmd, tuple(path), s)
        for key, param in own_options(cmd).items():
            assert param.name is not None
            src = sub.get_parameter_source(param.name)
            dotted = ".".join((*path, key))
            if src is ParameterSource.COMMANDLINE:
                source = "flag"
            elif src is ParameterSource.ENVIRONMENT:
                source = "env"
            elif src is ParameterSource.DEFAULT_MAP:
                source = cfg.source
            elif param.name in kubelet:  # one row per source: each key of a map names its own
                rows += [{"key": dotted, "value": v, "source": w} for v, w in kubelet[param.name]]
                continue
            else:
                source = "default"
            rows.append({"key": dotted, "value": _value_text(sub.params.get(param.name)),
                         "source": source})  # fmt: skip
        rows += kubelet_only
    else:
        for trail, opts in sorted(cfg.commands.items()):
            cmd, _, _ = _target(root, list(trail))
            _checked(ctx, cmd, trail, None, s)
            for name, value in opts.items():
                rows.append({"key": cfg.key(trail, name), "value": _value_text(value),
                             "source": cfg.source})  # fmt: skip
    _print_rows(rows, s.output, cfg.path, table_view(s, "config view", names=False))


def _checked(
    ctx: click.Context, cmd: click.Command, path: tuple[str, ...], args: list[str] | None, s: Any
) -> click.Context:
    """The context `kubegc PATH ARGS` would run in (`args` None: no command line), with the
    config file's values filled in, after the checks that run makes of its options
    (`check_options`): a value the run refuses is refused here too, with
    the same message. Raises `BadInput`."""
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


#: The commands whose runs judge container log rotation by the kubelet's containerLogMaxSize
#: and containerLogMaxFiles (no option of theirs sets them): `config view` shows both.
LOG_ROTATION_READERS = frozenset({("residue", "scan"), ("residue", "clean"), ("reclaim",),
                                  ("df",)})  # fmt: skip


def _kubelet_source(where: str, field: str = "") -> str:
    """How `config view` names where the kubelet's configuration set a value: `kubelet config
    FILE: field` (the base file or a drop-in), `kubelet /configz: field`, the running
    kubelet's command line with its flag, or the kubelet's default, as `where` (a source
    `node.host.kubelet` or `policy.eviction.thresholds` records) says; `field` is added where
    `where` does not name it already (a flag does; a default is the field's own)."""
    if field and not where.startswith(("kubelet command line", SOURCE_DEFAULT)):
        where = f"{where}: {field}"
    return where if where.startswith("kubelet ") else f"kubelet config {where}"


def _kubelet_values(
    cmd: click.Command, path: tuple[str, ...], s: Any
) -> tuple[dict[str, list[tuple[Any, str]]], list[dict[str, Any]]]:
    """What the kubelet's configuration gives the command at `path`: option name → its
    (value, source) rows, for the options of `cmd` the kubelet's settings stand behind when
    kubegc's flags and config file leave them unset (the image GC settings, the pod log root,
    `evict check`'s eviction maps: a row per source, each key of a map named by the file,
    drop-in, flag or default that set it); and the rows of the kubelet's settings no option
    of the command sets but its run reads (`LOG_ROTATION_READERS`)."""
    names = {p.name for p in cmd.params}
    rotation = path in LOG_ROTATION_READERS
    gc_or_logs = {"image_gc_high_threshold", "pod_logs_dir"} & names
    eviction = EVICTION_OPTIONS.keys() <= names  # (read by `eviction_config`, its own way)
    out: dict[str, list[tuple[Any, str]]] = {}
    extra: list[dict[str, Any]] = []
    if gc_or_logs or rotation:
        kcfg = kubelet_config_for(s)
        if kcfg.fallback:
            ConsoleUi(0, s.output).warn(
                f"{kcfg.fallback}; the kubelet's config file is shown instead"
            )
        for name, value in kcfg.image_gc.items():
            if name in names:
                shown = value if "threshold" in name else format_go_duration(value)
                where = kcfg.sources.get(name, kcfg.source)
                out[name] = [(shown, _kubelet_source(where, CONFIG_FIELDS[name]))]
        if "pod_logs_dir" in names:  # unset in every file: the kubelet's default
            where = kcfg.sources.get("pod_logs_dir", SOURCE_DEFAULT)
            out["pod_logs_dir"] = [(kcfg.pod_logs_dir, _kubelet_source(where, "podLogsDir"))]
        if rotation:
            r = kcfg.log_rotation
            for name, value in (("container_log_max_size", r.max_size),
                                ("container_log_max_files", r.max_files)):  # fmt: skip
                field = CONFIG_FIELDS[name]
                where = _kubelet_source(kcfg.sources.get(name, SOURCE_DEFAULT), field)
                extra.append({"key": f"kubelet.{field}", "value": value, "source": where})
    if eviction:
        for name, entries in kubelet_eviction_settings(s, ConsoleUi(s.verbose, s.output)).items():
            groups: dict[str, list[str]] = {}
            for text, where in entries:
                groups.setdefault(_kubelet_source(where), []).append(text)
            if groups:
                out[name] = [(texts, where) for where, texts in groups.items()]
    return out, extra


def _print_rows(rows: list[dict[str, Any]], output: str, path: Path | None, view: View) -> None:
    if output in ("json", "yaml"):
        doc = {"kind": "Config", "apiVersion": API_VERSION, "file": str(path) if path else None,
               "values": rows}  # fmt: skip
        render.dump_document(doc, output)
        return
    grid = Grid("", [Column("KEY", "id"), Column("VALUE", "word"), Column("SOURCE")])
    for r in rows:  # control characters escaped, as in every table
        grid.add([safe_text(r["key"]), safe_text(_show(r["value"])), safe_text(r["source"])])
    Screen(view=view).grid(grid)


def _show(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "-"
    return str(value)


def check_options(path: tuple[str, ...], ctx: click.Context, s: Any) -> None:
    """The checks the command at `path` makes of its option values (in `ctx.params`) before
    it observes anything, made the same way with the same messages — for `config view`, so
    that it refuses what the run would refuse. Raises `BadInput`."""
    opts = ctx.params
    if path == ("gc", "images"):
        image_gc_options(ctx, opts, s, ConsoleUi(0, s.output))
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
        watch_interval(opts["watch"])
