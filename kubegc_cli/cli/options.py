"""Options shared by every command, accepted before and after the subcommand.

`kubegc -o json gc containers` and `kubegc gc containers -o json` mean the same: each command
and group carries the global options; a value given explicitly on a later (deeper) command wins
over an earlier one, and defaults never override an explicit value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, TypeVar

import click
from click.core import ParameterSource

from kubegc_cli.core.plan import PRESSURE_CONCURRENCY, REMOVAL_CONCURRENCY

F = TypeVar("F", bound=Callable[..., Any])

_WHOLE = re.compile(r"[+-]?[0-9]+")


INT64_MAX = 2**63 - 1  # the kubelet's integer flags are Go int / int64


def _digits_only(
    kind: click.ParamType[Any], value: Any, param: click.Parameter | None, ctx: click.Context | None
) -> None:
    if isinstance(value, str) and not _WHOLE.fullmatch(value):
        why = f"{value!r} is not a whole number (digits 0-9, with a sign at most)"
        kind.fail(why, param, ctx)
    if isinstance(value, int):  # from a config file
        digits = str(abs(value)) if abs(value) > INT64_MAX else ""
    else:
        digits = value.lstrip("+-").lstrip("0") if isinstance(value, str) else ""
    if len(digits) > 19 or (digits and int(digits) > INT64_MAX):
        text = str(value) if len(str(value)) <= 40 else str(value)[:37] + "..."
        kind.fail(f"{text!r} is out of range (a 64-bit integer: at most {INT64_MAX})", param, ctx)


class WholeNumber(click.types.IntParamType):
    """An integer option written in ASCII digits, as the kubelet's flags take them (Go's
    ParseInt: a sign, no spaces): Python's `int()` would also take other scripts' digits
    (`٨٥`), underscores (`1_0`) and surrounding whitespace (`' 3'`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _digits_only(self, value, param, ctx)
        return super().convert(value, param, ctx)


class WholeRange(click.IntRange):
    """`click.IntRange` of `WholeNumber`s."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        _digits_only(self, value, param, ctx)
        return super().convert(value, param, ctx)


WHOLE = WholeNumber()


class Given(click.types.StringParamType):
    """A text option that, when given, is not empty: `--snapshot ''` or `--state-dir ''`
    (an unset shell variable) is bad input, never the option left out."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail("'' is empty", param, ctx)
        return super().convert(value, param, ctx)


GIVEN = Given()


class GivenPath(click.Path):
    """`click.Path` that, like `Given`, refuses the empty text (`Path('')` is `.`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if value == "":
            self.fail("'' is empty", param, ctx)
        return super().convert(value, param, ctx)


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
            "help": "Deadline of each CRI call, and of each filesystem call a walk makes.",
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
            "type": click.Choice(["table", "wide", "name", "json", "yaml"]),
            "default": "table",
            "help": "Output format: table; wide (the table with its extra columns: full "
            "image, pod UID, every tag); name (KIND/ID of each object listed, one a line); "
            "json; yaml.",
            "show_default": True,
        },
    ),
    (
        ("--no-headers",),
        {
            "is_flag": True,
            "help": "Tables without their titles and column header lines (a "
            "plan's table: the rows of what it removes alone, without kept objects, notes or "
            "summary).",
        },
    ),
    (
        ("-v", "--verbose"),
        {"count": True, "help": "Say more on stderr: -v what kubegc finds, -vv each action."},
    ),
    (
        ("--limit",),
        {
            "type": WholeRange(min=0),
            "default": 100,
            "metavar": "N",
            "help": "Rows a plan table lists per section, failed ones always (0 = all; -v too).",
            "show_default": True,
        },
    ),
    (
        ("-q", "--quiet"),
        {"is_flag": True, "help": "Only errors on stderr; with -o table, print only object IDs."},
    ),
    (
        ("--log-format",),
        {
            "type": click.Choice(["text", "json"]),
            "default": "text",
            "help": "stderr lines as text, or one JSON object each (time, level, message).",
            "show_default": True,
        },
    ),
    (
        ("--config",),
        {
            "metavar": "PATH",
            "help": "Config file with global options and per-command options "
            "[default: $KUBEGC_CONFIG, else /etc/kubegc/config.yaml if present].",
        },
    ),
    (
        ("--lock-timeout",),
        {
            "default": "0s",
            "metavar": "DURATION",
            "help": "How long a changing run waits for another run's node lock before exit 4.",
            "show_default": True,
        },
    ),
    (
        ("--pod-source",),
        {
            "type": click.Choice(["none", "file", "api", "kubelet"]),
            "help": "Where desired pods come from: kubelet is the node's kubelet's /pods "
            "(--kubelet-url) [default: file with --pods-file, else api when a kubeconfig or "
            "in-cluster account is found, else none].",
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
            "help": "kubegc's lock, audit log and cache.",
            "show_default": True,
        },
    ),
    (
        ("--metrics-file",),
        {
            "metavar": "PATH",
            "help": "After the run, write its metrics here for node_exporter's textfile "
            "collector (a *.prom file, replaced atomically).",
        },
    ),
    (
        ("--events",),
        {
            "is_flag": True,
            "help": "Record Kubernetes Events on this node's Node object for what the run did "
            "or found (at most one per reason per 10 minutes).",
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
            "help": "Kubelet config file [default: the kubelet's /configz when asked "
            "(--kubelet-url, --kubelet-configz) and readable, else the running kubelet's "
            "--config, else /var/lib/kubelet/config.yaml if present].",
        },
    ),
    (
        ("--kubelet-config-dir",),
        {
            "metavar": "DIR",
            "help": "Kubelet drop-in config directory: its *.conf files are merged onto the "
            "kubelet config as the kubelet merges them [default: the running kubelet's "
            "--config-dir, else none].",
        },
    ),
    (
        ("--kubelet-version",),
        {
            "metavar": "VERSION",
            "help": "The node's kubelet version (v1.30.2): the eviction defaults follow it "
            "[default: the Node's kubeletVersion from the pod source, else the newest kubegc "
            "knows].",
        },
    ),
    (
        ("--kubelet-url",),
        {
            "metavar": "URL",
            "help": "The node's kubelet, https://HOST:10250, read for /pods and /configz with "
            "the kubeconfig's credentials [default: none, the kubelet is not asked].",
        },
    ),
    (
        ("--kubelet-ca",),
        {
            "metavar": "PATH",
            "multiple": True,
            "help": "CA file for the kubelet's serving certificate; given more than once, "
            "each that exists is trusted (a self-signed kubelet's <cert-dir>/kubelet.crt, "
            "the cluster CA) [default: the API server's CA from the kubeconfig or in-cluster "
            "account].",
        },
    ),
    (
        ("--kubelet-server-name",),
        {
            "metavar": "NAME",
            "help": "The name the kubelet's serving certificate must be valid for, when it "
            "differs from --kubelet-url's host (a self-signed kubelet certificate names the "
            "node's hostname, not its IP) [default: the URL's host].",
        },
    ),
    (
        ("--kubelet-configz",),
        {
            "is_flag": True,
            "help": "Without --kubelet-url, read the kubelet's effective config from its "
            "/configz through the API server's node proxy first (needs get on nodes/proxy, "
            "which grants the whole kubelet API); a refusal falls back to the files.",
        },
    ),
    (
        ("--runtime-config",),
        {
            "metavar": "PATH",
            "help": "containerd's config file on the host, read for the sandbox and pinned "
            "images [default: the running containerd's --config/-c, else "
            "/etc/containerd/config.toml; under --host-root].",
        },
    ),
]

GLOBAL_NAMES = frozenset(decls[-1].lstrip("-").replace("-", "_") for decls, _ in GLOBAL_OPTIONS)


REMOVALS_HELP = f"Removals in flight at once ({PRESSURE_CONCURRENCY} on a node under pressure)."


def cap_flags(
    *, concurrency_help: str = REMOVALS_HELP, concurrency: int = REMOVAL_CONCURRENCY
) -> Callable[[F], F]:
    """How many removals run at once, `--concurrency` (default `concurrency`), and the
    blast-radius caps of unattended runs, `--max-delete N` and `--max-bytes SIZE`."""

    def wrap(f: F) -> F:
        for decorator in (
            click.option(
                "--max-bytes",
                metavar="SIZE",
                help="Remove at most this many planned bytes (100Mi, 2Gi); the rest is held back.",
            ),
            click.option(
                "--max-delete",
                type=WholeRange(min=0),
                metavar="N",
                help="Remove at most N objects; the rest of the plan is held back (shown, not "
                "done).",
            ),
            click.option(
                "--concurrency",
                type=WholeRange(1, 64),
                default=concurrency,
                show_default=True,
                help=concurrency_help,
            ),
        ):
            f = decorator(f)
        return f

    return wrap


def act_flags(
    *,
    dry_run_help: str = "Show the plan and stop.",
    concurrency_help: str = REMOVALS_HELP,
    concurrency: int = REMOVAL_CONCURRENCY,
) -> Callable[[F], F]:
    """How a removing command may act: `--dry-run`, `-y/--yes`, and `cap_flags`."""

    def wrap(f: F) -> F:
        f = cap_flags(concurrency_help=concurrency_help, concurrency=concurrency)(f)
        for decorator in (
            click.option("-y", "--yes", is_flag=True, help="Act without asking."),
            click.option("--dry-run", is_flag=True, help=dry_run_help),
        ):
            f = decorator(f)
        return f

    return wrap


#: The global options' `click.Option` objects, built once (`_global_params`).
_GLOBAL_PARAMS: list[click.Option] = []


def _global_params() -> list[click.Option]:
    """The global options, in `GLOBAL_OPTIONS` order. One set serves every command and group:
    an option holds no per-command state (values live in the context), and building a fresh
    set for each of the ~20 commands was most of the time spent building the command tree."""
    if not _GLOBAL_PARAMS:
        _GLOBAL_PARAMS.extend(
            click.Option(decls, expose_value=False, callback=_store, **_given(kwargs))
            for decls, kwargs in GLOBAL_OPTIONS
        )
    return _GLOBAL_PARAMS


def _given(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A global option taking text (no type of its own, not a flag) takes `GIVEN` text."""
    if "type" in kwargs or kwargs.get("is_flag") or kwargs.get("count"):
        return kwargs
    return {**kwargs, "type": GIVEN}


def global_options(f: F) -> F:
    """Attach the global options to a command or group (values go to the root context)."""
    for param in reversed(_global_params()):
        # what `click.option` does with the option it builds (click.decorators._param_memo)
        if isinstance(f, click.Command):
            f.params.append(param)
        else:
            f.__dict__.setdefault("__click_params__", []).append(param)
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
    return _gather(ctx, chain)[0]


def global_sources(ctx: click.Context) -> dict[str, str]:
    """Where each global option's value in `collected(ctx)` comes from: `flag`,
    `env <VAR>` (`ENV_OVER_FILE`), `config <path>` or `default`."""
    chain: list[click.Context] = []
    c: click.Context | None = ctx
    while c is not None:
        chain.append(c)
        c = c.parent
    return _gather(ctx, chain)[1]


#: Global options whose environment variable outranks the config file (flag > env > file).
ENV_OVER_FILE = {"runtime_endpoint": "CONTAINER_RUNTIME_ENDPOINT", "kubeconfig": "KUBECONFIG"}


def _gather(
    ctx: click.Context, chain: list[click.Context]
) -> tuple[dict[str, Any], dict[str, str]]:
    """(values, sources) of the global options along `chain` (the context and its parents),
    with the loaded config file (`kubegc_cli.cli.configfile`) filling what no flag gave."""
    root = ctx.find_root()
    levels: dict[int, dict[str, Any]] = root.meta.get(META_KEY, {})
    out: dict[str, Any] = {}
    explicit_names: set[str] = set()
    for depth, level_ctx in enumerate(reversed(chain)):
        for name, value in levels.get(depth, {}).items():
            source = level_ctx.get_parameter_source(name)
            explicit = source not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)
            if name == "verbose":
                out["verbose"] = out.get("verbose", 0) + (value or 0)
                if value:
                    explicit_names.add(name)
            elif explicit or name not in out:
                out[name] = value
            if explicit:
                explicit_names.add(name)
    sources = {name: "flag" if name in explicit_names else "default" for name in out}
    cfg = root.meta.get("kubegc.config")
    for name, value in getattr(cfg, "globals", {}).items():
        if name in explicit_names:
            continue
        var = ENV_OVER_FILE.get(name)
        if var and os.environ.get(var):
            sources[name] = f"env {var}"
            continue
        out[name] = value
        sources[name] = f"config {cfg.path}"  # type: ignore[union-attr]
    for name, var in ENV_OVER_FILE.items():
        if sources.get(name) == "default" and os.environ.get(var):
            sources[name] = f"env {var}"
    return out, sources
