"""`kubegc agent`: the long-running form for a DaemonSet pod — the options and the policy file
resolved into `Settings` and `agent.options.AgentOptions`, the HTTP endpoints, and the loop
(`kubegc_cli.agent.loop`) around the cycle."""

from __future__ import annotations

import sys
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from kubegc_cli.agent.loop import CYCLE_TIMEOUT, Ending, LoopState, Policy, PolicyFile, run_loop
from kubegc_cli.agent.options import CHECKS, PLANS, AgentOptions
from kubegc_cli.agent.server import Endpoints, parse_listen
from kubegc_cli.cli.command import KubegcCommand, by_name, fail
from kubegc_cli.cli.common import ConsoleUi, settings_from
from kubegc_cli.cli.configfile import CONFIG_META, annotate, command_path, loaded, parse_config
from kubegc_cli.cli.gc import container_policy, container_policy_options, scope_from, scope_options
from kubegc_cli.cli.options import GIVEN, GLOBAL_NAMES, WholeRange, cap_flags, global_options
from kubegc_cli.commands.edges import edges
from kubegc_cli.commands.flow import ActOptions, check_pod_source
from kubegc_cli.core.errors import BadInput, ExitCode
from kubegc_cli.core.inputs import check_namespace, parse_yaml
from kubegc_cli.core.plan import GENTLE_CONCURRENCY
from kubegc_cli.core.stop import STOPPED_STARTING, ending
from kubegc_cli.core.units import parse_bytes, parse_duration
from kubegc_cli.policy.fleet import parse_window
from kubegc_cli.render.log import LOG

#: The agent's cycle, imported when an agent starts.
AGENT = "kubegc_cli.agent.build:build_agent"
#: The shortest interval and cycle timeout accepted.
MIN_SECONDS = 1.0
#: The longest interval, cycle timeout and heartbeat accepted: a week (a longer wait would
#: leave a node unwatched, and past ~290 years the clock's arithmetic overflows).
MAX_SECONDS = 7 * 86400.0
#: The most apply slots: Leases kubegc-apply-0 .. 99 (rbac.yaml names the first 10).
MAX_APPLY_SLOTS = 100
#: click's value of an option without a default (8.2 and later; None before).
NO_DEFAULT = getattr(click.core, "UNSET", None)
#: What the command line gave (kept over the policy file's values).
GIVEN_SOURCES = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT, ParameterSource.PROMPT)


@click.command("agent", cls=KubegcCommand)
@click.option("--interval", default="5m", show_default=True, metavar="DURATION", type=GIVEN,
              help="Time between cycle starts. The first cycle starts after a random delay "
                   "of 0.5 to 1.5 intervals, so a fleet never cycles in step.")  # fmt: skip
@click.option("--once", is_flag=True,
              help="Run one cycle now (no delay, no HTTP endpoints) and exit: 0 when it "
                   "succeeded, 1 when it failed.")  # fmt: skip
@click.option("--mode", type=click.Choice(["report", "apply"]), default="report",
              show_default=True,
              help="report: observe and report, remove nothing. apply: also carry out the "
                   "--plans while holding an apply slot, inside the --window.")  # fmt: skip
@click.option("--checks", default=",".join(CHECKS), show_default=True, metavar="LIST", type=GIVEN,
              help=f"Checks each cycle runs from its one observation, comma-separated: "
                   f"{', '.join(CHECKS)}.")  # fmt: skip
@click.option("--plans", default="containers,sandboxes,logs", show_default=True,
              metavar="LIST", type=GIVEN,
              help=f"gc plans a cycle computes (a dry run in report mode), comma-separated: "
                   f"{', '.join(PLANS)}.")  # fmt: skip
@click.option("--policy", type=GIVEN, metavar="PATH",
              help="kubegc's config file to run by (e.g. a mounted ConfigMap), read again "
                   "before every cycle: a changed content that is valid takes effect, one "
                   "that is not is rejected (log line, Event with --events, /readyz 503) and "
                   "the last good one stays [default: the --config file].")  # fmt: skip
@click.option("--listen", default=":9808", show_default=True, metavar="HOST:PORT", type=GIVEN,
              help="Address of /metrics, /healthz and /readyz (:PORT: every address; read "
                   "at start only).")  # fmt: skip
@click.option("--cycle-timeout", default="10m", show_default=True, metavar="DURATION",
              type=GIVEN,
              help="How long a cycle may run: /healthz fails when no cycle started for 2 "
                   "intervals plus this.")  # fmt: skip
@click.option("--apply-slots", type=WholeRange(1, MAX_APPLY_SLOTS), default=1, show_default=True,
              metavar="N",
              help="Nodes of the cluster applying at once: Leases kubegc-apply-0 .. N-1 in "
                   "--lease-namespace.")  # fmt: skip
@click.option("--lease-namespace", default="kubegc", show_default=True, metavar="NS",
              type=GIVEN, help="Namespace of the apply slots' Leases (kubegc's own: the "
                               "agent may create Leases there, and only there).")  # fmt: skip
@click.option("--max-failed-percent", type=click.FloatRange(0, 100), default=20.0,
              show_default=True, metavar="PCT",
              help="Circuit breaker: take no apply slot while more than this share of the "
                   "reports showing an apply in the last hour say it failed (judged from 5 "
                   "such applies on: with fewer the breaker stays closed).")  # fmt: skip
@click.option("--window", type=GIVEN, metavar="WINDOW",
              help="When apply mode may act: DAYS HH:MM-HH:MM, ';'-separated (e.g. "
                   "'Mon-Fri 01:00-05:00; Sat,Sun 22:00-06:00') [default: always].")  # fmt: skip
@click.option("--window-timezone", default="UTC", show_default=True, metavar="TZ", type=GIVEN,
              help="Time zone of --window (IANA name, e.g. Europe/Berlin).")  # fmt: skip
@click.option("--heartbeat", default="30m", show_default=True, metavar="DURATION", type=GIVEN,
              help="Write the node's NodeGCReport at least this often even when nothing "
                   "changed.")  # fmt: skip
@click.option("--root-dir", default="/var/lib/kubelet", show_default=True, metavar="PATH",
              type=GIVEN,
              help="The kubelet's root directory.")  # fmt: skip
@click.option("--pod-logs-dir", metavar="PATH", type=GIVEN,
              help="Pod log root on the host [default: the kubelet config's podLogsDir, "
                   "/var/log/pods].")  # fmt: skip
@container_policy_options
@scope_options
@cap_flags(
    concurrency_help="Removals in flight at once (apply mode).", concurrency=GENTLE_CONCURRENCY
)
@global_options
@click.pass_context
def agent(ctx: click.Context, /, **opts: Any) -> None:
    """Run on every node (a DaemonSet): observe the node every --interval, report, act by policy.

    Each cycle observes this node once and runs the --checks from that observation: eviction
    signals and thresholds (with the kubelet's grace periods and transition period kept
    across cycles), df, residue scan, and the gc --plans. It writes the node's NodeGCReport
    and serves the last cycle's metrics on /metrics. In --mode apply it also carries out the
    plans, under --max-delete and --max-bytes, only while it holds one of the cluster's
    --apply-slots and the circuit breaker is closed.

    A failed cycle (runtime or API down) is one error line and is retried next interval; the
    process keeps running. /healthz fails when the loop is stuck (no cycle started for 2 ×
    --interval + --cycle-timeout), /readyz while the policy file holds a content the agent
    rejected.

    SIGTERM (a rollout, a drain) stops it: a wait ends at once, a removal in flight finishes,
    none starts after; exit 0, since being stopped is how a DaemonSet pod ends normally.
    SIGINT exits 130. --once exits as a command does: 0, 1 for a failed cycle, 130/143.

    \b
    Examples:
      kubegc agent --host-root /host --policy /etc/kubegc/config.yaml --events
      kubegc agent --once --mode report -v                # one cycle now, for debugging
      kubegc agent --mode apply --apply-slots 5 --window 'Mon-Fri 01:00-05:00' \\
          --window-timezone Europe/Berlin --max-delete 200
    """
    try:
        _run(ctx, opts)
    except KeyboardInterrupt as exc:  # a stop signal during start-up, before the loop ran
        name = getattr(exc, "signal_name", "SIGINT")
        if opts.get("once") or name != "SIGTERM":
            raise  # as a command: `terminated` 143, `interrupted` 130
        LOG.emit("info", STOPPED_STARTING)
        sys.exit(ExitCode.OK)


def _run(ctx: click.Context, opts: dict[str, Any]) -> None:
    """The agent's body (see `agent`); exits with its code."""
    path = _policy_path(ctx, opts)
    watch = PolicyFile(path, resolver(ctx, path)) if path is not None else None
    policy = watch.load() if watch is not None else _policy(ctx, dict(opts))
    options = policy.options
    state = LoopState(options.interval, policy.cycle_timeout)
    endpoints = None if options.once else Endpoints(options.listen, state)
    if endpoints is not None:
        host, port = endpoints.address
        where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        LOG.emit("info", f"serving /metrics, /healthz and /readyz on {where}")
    try:
        s = policy.settings
        cycle = make_agent(s, options, ConsoleUi(s.verbose, s.output, s.limit))
        end = run_loop(cycle, policy, state, watch=watch)
    finally:
        if endpoints is not None:
            endpoints.close()
    code = exit_code(end, once=options.once)
    if end.signal and options.once:
        fail(ending(end.signal)[0], code)  # as a command says it: `terminated`, 143
    if end.signal:
        LOG.emit("info", f"{end.signal}: stopped after {end.cycles} cycle(s); exit {code}")
    sys.exit(code)


def make_agent(s: Any, options: AgentOptions, ui: Any) -> Any:
    """The agent's cycle: the edges' (`commands.edges.Edges.agent`) when a test names one,
    else kubegc's own (`AGENT`)."""
    factory = edges().agent or by_name(AGENT)
    return factory(s, options, ui)


def exit_code(end: Ending, *, once: bool) -> int:
    """The agent's exit code: with `--once` as a command's (0, 1 for a failed cycle, 130 or
    143 for a stop signal); running, 0 after SIGTERM — the normal end of a DaemonSet pod, in
    a rollout or a drain; a non-zero code would count as a failed container — and 130 after
    SIGINT (a person's Ctrl-C, as every kubegc command)."""
    if end.signal and (once or end.signal != "SIGTERM"):
        return ending(end.signal)[1]
    if once and end.failed:
        return ExitCode.FAILED
    return ExitCode.OK


def _policy_path(ctx: click.Context, opts: dict[str, Any]) -> Path | None:
    """The policy file: `--policy`, else the config file the run read (`--config`,
    `$KUBEGC_CONFIG`, the default), else none. Raises `BadInput` when `--policy` and
    `--config` name different files."""
    cfg = loaded(ctx)
    found = cfg.path if cfg is not None else None
    given = opts.get("policy")
    if given is None:
        return found
    if (
        found is not None
        and cfg is not None
        and cfg.origin == "--config"
        and (Path(given) != found)
    ):
        raise BadInput(f"--policy {given} and --config {found} name different files; give one")
    return Path(given)


def resolver(ctx: click.Context, path: Path) -> Callable[[str], Policy]:
    """`resolve(text) -> Policy` for the policy file at `path`: its content checked as the
    config file is (`cli.configfile.parse_config`), then the options resolved as at start-up,
    the command line's values kept over the file's. Raises `BadInput` naming the key and the
    file."""
    root_ctx = ctx.find_root()
    root = root_ctx.command
    assert isinstance(root, click.Group)

    def resolve(text: str) -> Policy:
        doc = parse_yaml(text, path, "config file", unique_keys=True)
        cfg = parse_config(doc, root, path, "--policy")
        in_force = root_ctx.meta.get(CONFIG_META)
        root_ctx.meta[CONFIG_META] = cfg  # the global options read it (`options.collected`)
        try:
            return _policy(ctx, _params(ctx, cfg.commands.get(command_path(ctx), {})))
        except BadInput as exc:
            error = annotate(exc, ctx)
            root_ctx.meta[CONFIG_META] = in_force  # (the last good one stays)
            raise error from None

    return resolve


def _params(ctx: click.Context, from_file: dict[str, Any]) -> dict[str, Any]:
    """The command's own option values: the command line's, else the file's, else defaults
    (each one's source noted in `ctx`, so that an error names the file's key)."""
    out: dict[str, Any] = {}
    for p in ctx.command.params:
        name = p.name
        if name is None or name in GLOBAL_NAMES or not p.expose_value:
            continue
        if ctx.get_parameter_source(name) in GIVEN_SOURCES:
            out[name] = ctx.params[name]
        elif name in from_file:
            out[name] = from_file[name]
            ctx.set_parameter_source(name, ParameterSource.DEFAULT_MAP)  # errors name the key
        else:
            ctx.set_parameter_source(name, ParameterSource.DEFAULT)
            default = p.get_default(ctx)
            unset = default is None or default is NO_DEFAULT  # (click 8.2 and later: UNSET)
            out[name] = (() if p.multiple else None) if unset else p.type_cast_value(ctx, default)
    return out


def _seconds(opts: dict[str, Any], name: str) -> float:
    flag = "--" + name.replace("_", "-")
    value = parse_duration(opts[name], flag=flag)
    if value < MIN_SECONDS:
        raise BadInput(f"invalid value for {flag}: {opts[name]!r} is below {MIN_SECONDS:g}s")
    if value > MAX_SECONDS:
        raise BadInput(f"invalid value for {flag}: {opts[name]!r} is above 7 days")
    return value


def _percent(value: Any) -> float:
    """--max-failed-percent as a number from 0 to 100. Raises `BadInput` for anything else
    (NaN among them, which every comparison would take as within bounds)."""
    number = float(value)
    if not 0 <= number <= 100:  # (False for NaN)
        raise BadInput(f"invalid value for --max-failed-percent: {value!r} (expected 0 to 100)")
    return number


def _names(opts: dict[str, Any], name: str, allowed: tuple[str, ...]) -> tuple[str, ...]:
    """A comma-separated list of `allowed` names, in `allowed`'s order. Raises `BadInput`."""
    flag = "--" + name
    given = [w.strip() for w in str(opts[name]).split(",") if w.strip()]
    bad = [w for w in given if w not in allowed]
    if bad:
        raise BadInput(
            f"invalid value for {flag}: {bad[0]!r} (expected a comma-separated list of "
            f"{', '.join(allowed)})"
        )
    return tuple(n for n in allowed if n in given)


def _policy(ctx: click.Context, opts: dict[str, Any]) -> Policy:
    """`Settings` and `AgentOptions` from the global options and `opts`. Raises `BadInput`."""
    s = settings_from(ctx)
    check_pod_source(s)  # a contradiction would fail every cycle: refused at once
    parse_listen(opts["listen"])
    zone, window = opts["window_timezone"], opts.get("window") or ""
    if window:
        parse_window(window, zone)
    else:
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
            raise BadInput(
                f"invalid value for --window-timezone: {zone!r} (expected an IANA time zone, "
                "e.g. UTC or Europe/Berlin)"
            ) from None
    raw_bytes = opts.get("max_bytes")
    options = AgentOptions(
        interval=_seconds(opts, "interval"),
        once=bool(opts["once"]),
        mode=opts["mode"],
        checks=_names(opts, "checks", CHECKS),
        plans=_names(opts, "plans", PLANS),
        act=ActOptions(
            yes=True,
            concurrency=opts["concurrency"],
            max_delete=opts.get("max_delete"),
            max_bytes=parse_bytes(raw_bytes, flag="--max-bytes") if raw_bytes is not None else None,
        ),
        container_policy=container_policy(opts),
        scope=scope_from(opts),
        root_dir=opts["root_dir"],
        pod_logs_dir=opts.get("pod_logs_dir"),
        apply_slots=opts["apply_slots"],
        lease_namespace=check_namespace(opts["lease_namespace"], flag="--lease-namespace"),
        max_failed_percent=_percent(opts["max_failed_percent"]),
        window=window,
        window_timezone=zone,
        heartbeat=_seconds(opts, "heartbeat"),
        listen=opts["listen"],
    )
    return Policy(s, options, _seconds(opts, "cycle_timeout") if opts.get("cycle_timeout")
                  else CYCLE_TIMEOUT)  # fmt: skip
