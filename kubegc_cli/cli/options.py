"""Options shared by every command, accepted before and after the subcommand.

`kubegc -o json gc containers` and `kubegc gc containers -o json` mean the same: each command
and group carries the global options; a value given explicitly on a later (deeper) command wins
over an earlier one, and defaults never override an explicit value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

F = TypeVar("F", bound=Callable[..., Any])
META_KEY = "kubegc.globals"


def _depth(ctx: click.Context) -> int:
    n = 0
    while ctx.parent is not None:
        ctx, n = ctx.parent, n + 1
    return n


def _store(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    assert param.name is not None
    levels: dict[int, dict[str, Any]] = ctx.find_root().meta.setdefault(META_KEY, {})
    levels.setdefault(_depth(ctx), {})[param.name] = value
    return value


GLOBAL_OPTIONS: list[tuple[tuple[str, ...], dict[str, Any]]] = [
    (
        ("-r", "--runtime-endpoint"),
        {
            "metavar": "ENDPOINT",
            "help": "CRI socket, e.g. unix:///run/containerd/containerd.sock "
            "[default: $CONTAINER_RUNTIME_ENDPOINT, /etc/crictl.yaml, well-known sockets]",
        },
    ),
    (
        ("--timeout",),
        {
            "default": "10s",
            "metavar": "DURATION",
            "help": "Deadline of each CRI call.",
            "show_default": True,
        },
    ),
    (
        ("--max-recv-size",),
        {
            "default": "256Mi",
            "metavar": "QUANTITY",
            "help": "Largest CRI reply accepted (big sandbox/container lists).",
            "show_default": True,
        },
    ),
    (
        ("--host-root",),
        {
            "default": "/",
            "metavar": "PATH",
            "help": "Where the host's / is (e.g. /host in a DaemonSet pod).",
            "show_default": True,
        },
    ),
    (
        ("-o", "--output"),
        {
            "type": click.Choice(["table", "json", "yaml"]),
            "default": "table",
            "help": "Output format.",
            "show_default": True,
        },
    ),
    (("-v", "--verbose"), {"count": True, "help": "Say more on stderr (repeatable)."}),
    (("-q", "--quiet"), {"is_flag": True, "help": "Print only object IDs."}),
    (
        ("--pod-source",),
        {
            "type": click.Choice(["none", "file", "api"]),
            "help": "Where desired pods come from [default: file with --pods-file, else api "
            "when a kubeconfig or in-cluster account is found, else none].",
        },
    ),
    (
        ("--pods-file",),
        {
            "metavar": "PATH",
            "help": "PodList JSON (kubectl get pods -o json); pods not in it are deleted.",
        },
    ),
    (
        ("--kubeconfig",),
        {"metavar": "PATH", "help": "kubeconfig for the API pod source [default: as kubectl]."},
    ),
    (("--context",), {"metavar": "NAME", "help": "kubeconfig context for the API pod source."}),
    (
        ("--node-name",),
        {"metavar": "NAME", "help": "This node's name in the API [default: hostname, lower-case]."},
    ),
    (
        ("--state-dir",),
        {
            "default": "/var/lib/kubegc",
            "metavar": "PATH",
            "help": "kubegc's lock and audit log.",
            "show_default": True,
        },
    ),
    (
        ("--snapshot",),
        {"metavar": "FILE", "help": "Plan from a `kubegc snapshot` file instead of the runtime."},
    ),
    (
        ("--now",),
        {"metavar": "RFC3339", "help": "Planning time [default: snapshot time, else now]."},
    ),
    (
        ("--kubelet-config",),
        {
            "metavar": "PATH",
            "help": "Kubelet config file [default: /var/lib/kubelet/config.yaml if present].",
        },
    ),
]

GLOBAL_NAMES = frozenset(decls[-1].lstrip("-").replace("-", "_") for decls, _ in GLOBAL_OPTIONS)


def global_options(f: F) -> F:
    """Attach the global options to a command or group (values go to the root context)."""
    for decls, kwargs in reversed(GLOBAL_OPTIONS):
        f = click.option(*decls, expose_value=False, callback=_store, **kwargs)(f)
    return f


def collected(ctx: click.Context) -> dict[str, Any]:
    """The global option values gathered from every level of the command line.

    Walks from the root to `ctx`: an explicitly given value replaces what a higher level said;
    a default only fills a gap. `-v` counts add up across levels.
    """
    chain: list[click.Context] = []
    c: click.Context | None = ctx
    while c is not None:
        chain.append(c)
        c = c.parent
    levels: dict[int, dict[str, Any]] = ctx.find_root().meta.get(META_KEY, {})
    out: dict[str, Any] = {}
    for depth, level_ctx in enumerate(reversed(chain)):
        for name, value in levels.get(depth, {}).items():
            source = level_ctx.get_parameter_source(name)
            explicit = source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
            if name == "verbose":
                out["verbose"] = out.get("verbose", 0) + (value or 0)
            elif explicit or name not in out:
                out[name] = value
    return out


class KubegcCommand(click.Command):
    """A command whose help lists its own options first and the global ones after."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        own: list[tuple[str, str]] = []
        glob: list[tuple[str, str]] = []
        for p in self.get_params(ctx):
            rec = p.get_help_record(ctx)
            if rec is None:
                continue
            (glob if p.name in GLOBAL_NAMES else own).append(rec)
        if own:
            with formatter.section("Options"):
                formatter.write_dl(own)
        if glob:
            with formatter.section("Global options"):
                formatter.write_dl(glob)


class KubegcGroup(click.Group):
    """A group whose subcommands and subgroups use the kubegc help layout."""

    command_class = KubegcCommand

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        KubegcCommand.format_options(self, ctx, formatter)  # type: ignore[arg-type]
        self.format_commands(ctx, formatter)


KubegcGroup.group_class = KubegcGroup
