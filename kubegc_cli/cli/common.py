"""What every command module of the command line shares: the global options read into
`Settings`, the terminal side of `commands.flow.Ui`, the `--dry-run`/`--yes` options read
into `ActOptions`, and `finish`, which prints a plan and turns its outcome into the exit code.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any

import click

from kubegc_cli.cli.command import fail
from kubegc_cli.cli.configfile import loaded
from kubegc_cli.cli.options import collected, global_sources
from kubegc_cli.commands.apply import save_plan
from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.core.errors import BadInput, PartialFailure, RuntimeUnavailable
from kubegc_cli.core.gcpause import cyclic_gc_paused
from kubegc_cli.core.plan import INTERRUPTED
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.stop import ending
from kubegc_cli.core.units import parse_bytes, parse_duration, rfc3339_to_ns
from kubegc_cli.node.execute.actions import OUTCOME_UNKNOWN
from kubegc_cli.node.host.bounded import set_walk_timeout
from kubegc_cli.node.kubeletapi import check_server_name, check_url
from kubegc_cli.render import plan as render
from kubegc_cli.render.log import LOG
from kubegc_cli.render.table import View
from kubegc_cli.report.run import metrics_file_option, outcome, reported_settings

MAX_TIMEOUT_SECONDS = 24 * 3600
MAX_RECV_BYTES = 2**31 - 1


@reported_settings
def settings_from(ctx: click.Context) -> Settings:
    """Global option values → `core.settings.Settings`. Raises `BadInput` for bad values."""
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
        no_headers=bool(g.get("no_headers")),
        verbose=g.get("verbose", 0),
        quiet=bool(g.get("quiet")),
        limit=100 if g.get("limit") is None else int(g["limit"]),
        pod_source=g.get("pod_source"),
        pods_file=Path(g["pods_file"]) if g.get("pods_file") else None,
        state_dir=Path(g["state_dir"]),
        snapshot=Path(g["snapshot"]) if g.get("snapshot") else None,
        now=rfc3339_to_ns(g["now"], what="--now") if g.get("now") else None,
        kubelet_config=Path(g["kubelet_config"]) if g.get("kubelet_config") else None,
        kubelet_config_dir=Path(g["kubelet_config_dir"]) if g.get("kubelet_config_dir") else None,
        kubelet_version=g.get("kubelet_version") or None,
        kubelet_configz=bool(g.get("kubelet_configz")),
        kubelet_url=check_url(g["kubelet_url"]) if g.get("kubelet_url") else None,
        kubelet_ca=tuple(g.get("kubelet_ca") or ()),
        kubelet_server_name=(
            check_server_name(g["kubelet_server_name"]) if g.get("kubelet_server_name") else None
        ),
        runtime_config=runtime_config_option(g.get("runtime_config")),
        kubeconfig=g.get("kubeconfig") or None,
        context=g.get("context") or None,
        node_name=g.get("node_name") or None,
        env=dict(os.environ),
        lock_timeout=lock_timeout,
        metrics_file=metrics_file_option(g.get("metrics_file")),
        events=bool(g.get("events")),
    )


def runtime_config_option(value: str | None) -> Path | None:
    """`--runtime-config` as `Settings.runtime_config`: None when not given, else an absolute
    host path. Raises `BadInput` naming the value for an empty or relative one (it is read
    under --host-root; whether a file is there is checked when it is read)."""
    if value is None:
        return None
    if not value.strip() or not value.startswith("/") or "\0" in value:
        raise BadInput(
            f"invalid value for --runtime-config: {value!r} must be an absolute path on the host"
        )
    return Path(value)


class ConsoleUi:
    """The terminal side of `commands.flow.Ui`: diagnostics on stderr, prompts on a tty."""

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
        out = sys.stdout if self.output in ("table", "wide") else sys.stderr
        view = View(wide=self.output == "wide")
        render.render_plan(plan, verbose=self.verbose, out=out, limit=self.limit, view=view)

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


def act_options(opts: dict[str, Any]) -> Any:
    """`ActOptions` from `--dry-run`, `--yes`, `--concurrency`, the caps and `--plan-out`.

    `--plan-out` makes the run a dry run. Raises `BadInput` for `--dry-run` with `--yes`,
    `--plan-out` with `--yes` or an empty path, and a `--max-bytes` that is not a size.
    """
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


#: The plan's policy fields that `apply` takes only from its own command line, and the flag.
APPLY_FLAGS = (
    ("match_kubelet", "--match-kubelet"),
    ("include_terminated_pods", "--include-terminated-pods"),
    ("allow_unpullable", "--allow-unpullable"),
)


def apply_command(
    s: Settings,
    plan_file: str,
    policy: dict[str, Any] | None = None,
    config: Path | None = None,
    pod_logs_dir: str | None = None,
) -> str:
    """The command that carries out the plan saved to `plan_file` as it was planned: `kubegc
    apply FILE --yes` with the options the plan was made under that `apply` reads too — the
    config file (`config`: its `gc.images.keep` protects images), the runtime, the host root,
    the state dir, the kubelet config, the pod source and its credentials, the node, the pod
    log root — and the opt-ins of the plan's `policy` (`APPLY_FLAGS`, also nested under
    `containers` as `gc all` writes it), each quoted for a POSIX shell."""
    words = ["kubegc"]
    if config is not None:
        words += ["--config", str(config)]
    if s.runtime_endpoint and s.runtime_endpoint_source == "--runtime-endpoint":
        words += ["-r", s.runtime_endpoint]
    if os.path.normpath(s.host_root) != "/":
        words += ["--host-root", str(s.host_root)]
    if s.state_dir != Settings().state_dir:
        words += ["--state-dir", str(s.state_dir)]
    for flag, value in (("--kubelet-config", s.kubelet_config),
                        ("--kubelet-config-dir", s.kubelet_config_dir),
                        ("--pod-source", s.pod_source), ("--pods-file", s.pods_file),
                        ("--kubeconfig", s.kubeconfig), ("--context", s.context),
                        ("--node-name", s.node_name)):  # fmt: skip
        if value:
            words += [flag, str(value)]
    words += ["apply", plan_file, "--yes"]
    if pod_logs_dir:
        words += ["--pod-logs-dir", pod_logs_dir]
    policy = policy or {}
    nested = policy.get("containers")
    said = {**policy, **nested} if isinstance(nested, dict) else policy
    words += [flag for key, flag in APPLY_FLAGS if said.get(key) is True]
    return shlex.join(words)


def _apply_hint(s: Settings, plan_out: str, plan: Any, ctx: click.Context | None) -> str:
    """`apply_command` for the plan just saved, with the config file in force and the
    command's `--pod-logs-dir`."""
    cfg = loaded(ctx) if ctx is not None else None
    logs = ctx.params.get("pod_logs_dir") if ctx is not None else None
    return apply_command(
        s, plan_out, plan.policy, Path(os.path.abspath(cfg.path)) if cfg and cfg.path else None,
        logs if isinstance(logs, str) else None,
    )  # fmt: skip


def finish(plan: Any, s: Any) -> None:
    """Print the plan (or its results), save it with `--plan-out`, and turn its outcome into
    the exit code."""
    outcome(plan)
    emit_plan(plan, s)
    ctx = click.get_current_context(silent=True)
    plan_out = ctx.params.get("plan_out") if ctx is not None else None
    if plan_out:
        save_plan(plan, Path(plan_out), s)
        LOG.emit("warning", f"plan saved to {plan_out}; carry it out with: "
                 f"{_apply_hint(s, plan_out, plan, ctx)}")  # fmt: skip
    if plan.interrupted:
        skipped = sum(1 for a in plan.actions if a.error == INTERRUPTED)
        why, code = ending(plan.interrupted)
        fail(f"{why}; {skipped} planned removal(s) not attempted", code)
    counts = plan.counts()
    failed = counts["failed"]
    if plan.runtime_lost:
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
    return any(OUTCOME_UNKNOWN in a.error for a in plan.actions if a.error)


@cyclic_gc_paused
def emit_plan(plan: Any, s: Any) -> None:
    """Write the plan in the chosen output format to stdout (the cyclic garbage collector
    paused: it would rescan a big plan's objects for every few hundred rows written)."""
    if s.output in ("json", "yaml"):
        render.dump_document(plan.to_dict(rows_as_json=s.output == "json"), s.output)
    elif plan.declined:
        return  # the table was shown right before the question
    elif s.output == "name":
        render.render_names(plan)
    elif s.quiet:
        render.render_ids(plan)
    else:
        render.render_plan(plan, verbose=s.verbose, limit=s.limit, view=table_view(s, ""))


def table_view(s: Settings, command: str, *, names: bool = True) -> View:
    """How tables are shown: `-o wide` (their extra columns), `--no-headers`. Raises
    `BadInput` for `-o name` on `command`, which lists no objects (`names` False): check it
    before observing anything."""
    if s.output == "name" and not names:
        raise BadInput(
            f"invalid value for -o: 'name' lists objects and {command} lists none; "
            "use table, wide, json or yaml"
        )
    return View(wide=s.output == "wide", headers=not s.no_headers)
