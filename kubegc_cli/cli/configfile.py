"""The config file: any global option and per-command options, read before a command runs.

Where it is: `--config PATH`, else `$KUBEGC_CONFIG`, else `/etc/kubegc/config.yaml` when that
file exists (not under `--host-root`: it is kubegc's own file). A file named by `--config` or
`KUBEGC_CONFIG` must exist.

Shape: a YAML mapping. Global options sit at the top, by their long names; a command's own
options sit under its path, by their long names::

    timeout: 30s
    state-dir: /var/lib/kubegc
    lock-timeout: 5m
    gc:
      containers:
        maximum-dead-containers-per-container: 2
        max-delete: 100
      images:
        image-gc-high-threshold: 80

Precedence, highest first: a flag on the command line; the environment (only
`CONTAINER_RUNTIME_ENDPOINT` for `runtime-endpoint` and `KUBECONFIG` for `kubeconfig`, as
crictl and kubectl read them); the config file; the kubelet config file (the settings kubegc
reads from it); the defaults. `yes` and `config` cannot be set in the file.

Errors (all `BadInput`, exit 2, naming the key and the file): a key that is no option of that
place, a value of the wrong type or out of range (`timeout: soon`), a file that is not a
mapping or not YAML, a named file that cannot be read.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from kubegc_cli.cli.options import GLOBAL_NAMES, collected, global_sources
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import parse_yaml, present, read_text, shown
from kubegc_cli.core.units import parse_bytes, parse_duration, rfc3339_to_ns

DEFAULT_PATH = "/etc/kubegc/config.yaml"
ENV_VAR = "KUBEGC_CONFIG"
CONFIG_META = "kubegc.config"
#: Options a config file cannot set (`policy` and `once` of `kubegc agent`: which file it
#: reads and whether it keeps running are the command line's).
NOT_CONFIGURABLE = frozenset({"config", "yes", "plan_out", "help", "version", "policy", "once"})


def long_name(param: click.Parameter) -> str:
    """The option's long name without dashes (`--max-delete` → `max-delete`)."""
    longs = [o for o in param.opts if o.startswith("--")]
    return (longs[-1] if longs else param.opts[-1]).lstrip("-")


@dataclass
class ConfigFile:
    """A loaded config file. `path` is None when there is none; `origin` says how it was
    found (`--config`, `KUBEGC_CONFIG`, `default`). `globals` maps a global option's parameter
    name to its value; `commands` maps a command path (`("gc", "containers")`) to its
    parameter values; `keys` gives the dotted key of each (`gc.containers.max-delete`)."""

    path: Path | None = None
    origin: str = ""
    globals: dict[str, Any] = field(default_factory=dict)
    commands: dict[tuple[str, ...], dict[str, Any]] = field(default_factory=dict)
    keys: dict[tuple[tuple[str, ...], str], str] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """How `config view` names a value from this file: `config <path>`."""
        return f"config {self.path}"

    def key(self, path: tuple[str, ...], name: str) -> str:
        return self.keys.get((path, name), ".".join((*path, name)))


def locate(given: str | None, env: Mapping[str, str]) -> tuple[Path | None, str]:
    """(path, origin) of the config file to read, or (None, "") when there is none."""
    if given:
        return Path(given), "--config"
    if env.get(ENV_VAR):
        return Path(env[ENV_VAR]), ENV_VAR
    default = Path(DEFAULT_PATH)
    return (default, "default") if present(default) else (None, "")


def own_options(cmd: click.Command) -> dict[str, click.Option]:
    """A command's configurable options (not the global ones) by long name."""
    return {
        long_name(p): p
        for p in cmd.params
        if isinstance(p, click.Option)
        and p.name not in GLOBAL_NAMES
        and p.name not in NOT_CONFIGURABLE
        and not p.hidden
    }


def global_params(root: click.Command) -> dict[str, click.Option]:
    """The configurable global options by long name."""
    return {
        long_name(p): p
        for p in root.params
        if isinstance(p, click.Option) and p.name in GLOBAL_NAMES and p.name not in NOT_CONFIGURABLE
    }


def _expected(param: click.Option) -> str:
    """What an option takes, for an error message: `one of table, json, yaml`, `an integer`."""
    if isinstance(param.type, click.Choice):
        return "one of " + ", ".join(map(str, param.type.choices))
    name = param.type.name
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


def _convert(param: click.Option, value: Any, where: str) -> Any:
    """A YAML value as the option would have it from the command line. Raises `BadInput`."""

    def one(v: Any) -> Any:
        if isinstance(v, (dict, list)) or v is None:
            raise BadInput(f"invalid value for {where}: {shown(v)} (expected a single value)")
        if param.is_flag and not param.count:
            if not isinstance(v, bool):
                raise BadInput(f"invalid value for {where}: {shown(v)} (expected true or false)")
            return v
        if isinstance(v, bool):
            raise BadInput(f"invalid value for {where}: {shown(v)} (expected {_expected(param)})")
        if param.count:
            if not isinstance(v, int) or v < 0:
                raise BadInput(
                    f"invalid value for {where}: {shown(v)} (expected a count, 0 or more)"
                )
            return v
        if isinstance(v, float) and isinstance(param.type, click.types.IntParamType):
            v = repr(v)  # as the flag would have it: click's int() must not truncate 2.5 to 2
        try:
            out = param.type.convert(v, param, None)
        except click.BadParameter as exc:
            raise BadInput(f"invalid value for {where}: {exc.message}") from None
        metavar = (param.metavar or "").upper()
        if "DURATION" in metavar:
            parse_duration(str(out), flag=where)
        elif metavar in ("QUANTITY", "SIZE"):
            parse_bytes(str(out), flag=where)
        elif metavar == "RFC3339":
            rfc3339_to_ns(str(out), what=where)
        return out

    if param.multiple:
        items = value if isinstance(value, list) else [value]
        return tuple(one(v) for v in items)
    return one(value)


def parse_config(doc: Any, root: click.Group, path: Path, origin: str) -> ConfigFile:
    """Check a decoded config document against the command tree. Raises `BadInput` naming the
    first bad key (dotted) and the file."""
    cfg = ConfigFile(path=path, origin=origin)
    if doc is None:
        return cfg
    if not isinstance(doc, dict):
        raise BadInput(f"config file {path}: expected a mapping of options and commands")

    def walk(node: dict[Any, Any], cmd: click.Command, trail: tuple[str, ...]) -> None:
        options = own_options(cmd) if trail else global_params(cmd)
        ctx = click.Context(cmd)
        # (by name: only the groups the file names are loaded, `cli.command.RootGroup`)
        subs = cmd.list_commands(ctx) if isinstance(cmd, click.Group) else []
        for raw_key, value in node.items():
            # YAML 1.1 reads an unquoted yes/no/on/off key as a boolean
            key = ("yes" if raw_key else "no") if isinstance(raw_key, bool) else str(raw_key)
            dotted = ".".join((*trail, key))
            where = f"{dotted} in {path}"
            if key in options:
                param = options[key]
                assert param.name is not None
                converted = _convert(param, value, where)
                if trail:
                    cfg.commands.setdefault(trail, {})[param.name] = converted
                else:
                    cfg.globals[param.name] = converted
                cfg.keys[(trail, param.name)] = dotted
            elif key in subs:
                if not isinstance(value, dict):
                    raise BadInput(
                        f"config file {path}: {dotted} must be a mapping of the options of "
                        f"'{' '.join(('kubegc', *trail, key))}'"
                    )
                assert isinstance(cmd, click.Group)
                sub = cmd.get_command(ctx, key)
                assert sub is not None
                walk(value, sub, (*trail, key))
            else:
                if key in ("yes", "config"):
                    why = f"{key} cannot be set in a config file (give --{key})"
                else:
                    valid = sorted({*options, *subs})
                    why = f"unknown key {dotted!r}; here the file takes: {', '.join(valid)}"
                raise BadInput(f"config file {path}: {why}")

    walk(doc, root, ())
    return cfg


def load_config(root: click.Group, given: str | None, env: Mapping[str, str]) -> ConfigFile:
    """Find, read and check the config file (see the module doc). No file → an empty config."""
    path, origin = locate(given, env)
    if path is None:
        return ConfigFile()
    if origin == "default" and os.path.exists(path) and not os.path.isfile(path):
        return ConfigFile()
    doc = parse_yaml(read_text(path, "config file"), path, "config file", unique_keys=True)
    return parse_config(doc, root, path, origin)


def loaded(ctx: click.Context) -> ConfigFile | None:
    """The config file already loaded for this command line, if any."""
    cfg = ctx.find_root().meta.get(CONFIG_META)
    return cfg if isinstance(cfg, ConfigFile) else None


def image_keep(ctx: click.Context) -> tuple[tuple[str, ...], str]:
    """The config file's `gc.images.keep` patterns (the `--keep` list `gc images` runs with)
    and where they come from (`gc.images.keep in PATH`); ((), "") when it names none."""
    cfg = loaded(ctx)
    keep = tuple(cfg.commands.get(("gc", "images"), {}).get("keep") or ()) if cfg else ()
    if not keep or cfg is None:
        return (), ""
    return keep, f"{cfg.key(('gc', 'images'), 'keep')} in {cfg.path}"


def command_path(ctx: click.Context) -> tuple[str, ...]:
    """The command's path below `kubegc` (`("gc", "containers")`)."""
    names: list[str] = []
    c: click.Context | None = ctx
    while c is not None and c.parent is not None:
        names.append(c.info_name or "")
        c = c.parent
    return tuple(reversed(names))


def apply_config(ctx: click.Context) -> ConfigFile:
    """Load the config file (once per command line) and fill the command's own options that
    the command line left at their defaults; their source becomes `DEFAULT_MAP`. Global
    options are filled by `kubegc_cli.cli.options.collected`. Raises `BadInput`."""
    cfg = loaded(ctx)
    if cfg is None:
        given = collected(ctx).get("config")
        root = ctx.find_root().command
        assert isinstance(root, click.Group)
        cfg = load_config(root, given, os.environ)
        ctx.find_root().meta[CONFIG_META] = cfg
    values = cfg.commands.get(command_path(ctx), {})
    for name, value in values.items():
        if ctx.get_parameter_source(name) in (None, ParameterSource.DEFAULT):
            ctx.params[name] = value
            ctx.set_parameter_source(name, ParameterSource.DEFAULT_MAP)
    return cfg


def annotate(exc: BadInput, ctx: click.Context, path: tuple[str, ...] | None = None) -> BadInput:
    """`exc` with the config key and file added when its message names an option whose value
    came from the config file (a value only the command could judge, like a timeout above
    24h). `path` is the command's (default: `ctx`'s own)."""
    cfg = loaded(ctx)
    if cfg is None or cfg.path is None or str(cfg.path) in str(exc):
        return exc
    path = command_path(ctx) if path is None else path
    from_file = global_sources(ctx)
    candidates: list[tuple[tuple[str, ...], str]] = [
        ((), n) for n in cfg.globals if from_file.get(n, "").startswith("config ")
    ]
    candidates += [
        (path, n)
        for n in cfg.commands.get(path, {})
        if ctx.get_parameter_source(n) is ParameterSource.DEFAULT_MAP
    ]
    message = str(exc)
    for trail, name in candidates:
        flag = "--" + cfg.key(trail, name).rsplit(".", 1)[-1]
        if f"{flag}:" in message or f"{flag} " in message or message.endswith(flag):
            return type(exc)(f"{message} (set by {cfg.key(trail, name)} in {cfg.path})")
    return exc
