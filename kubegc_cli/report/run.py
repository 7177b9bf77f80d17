"""One hook for reporting every command run: `--metrics-file` and `--events`.

The command line (`kubegc_cli.cli.main`, `kubegc_cli.cli.common`) uses these from here:

- `reported_main` wraps `main()`: it starts a `Run` (wall and monotonic start), lets the
  command run to its exit — normally, with an error, interrupted — and then reports it with
  the exit code. A metrics file that cannot be written and an Event that cannot be posted are
  each a warning line on stderr: they never change the exit code (the run did its work; a
  stale `kubegc_last_run_timestamp_seconds` is what an alert sees).
- `reported_settings` wraps `settings_from()` (`kubegc_cli.cli.common`): it notes the
  command (`gc containers`, ...) and its `Settings` the moment a command has parsed its
  global options. A run that never got that far (`--help`, a usage error) is not reported:
  there is no command to report.
- `outcome(result)`: a command hands over what it produced — a `Plan` (with results after
  acting) or an `EvictionReport` — in one call; commands that produce neither report only
  their exit code and duration.
- `metrics_file_option(value)`: the `--metrics-file` value checked into a Path (exit 2 for
  a value that cannot be a textfile-collector file).
- `audit_unwritten(message)`: a run that acted could not write its audit rows (a full disk
  under `--state-dir`). Reported as one error line after the command's own output, and exit
  0 becomes 1 (a failing exit code is kept), before the metrics and Events see the code.
  `reported_main` puts it in the commands' edges (`commands.edges.using`) while the command
  runs: commands say it there, and never import this module.

A run that fails before its command parsed its global options (a bad `--timeout`, a bad
`--metrics-file`) writes no metrics: alert on a stale `kubegc_last_run_timestamp_seconds`.

Neither this module nor the reporters import grpc or the Kubernetes client at load time
(`commands.edges`, which `reported_main` hands `audit_unwritten` to, is standard library
only): `--help` stays free of them; the Kubernetes client is imported when an Event is posted.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, TypeVar

from kubegc_cli.commands.edges import using
from kubegc_cli.core.errors import ExitCode
from kubegc_cli.render.log import LOG
from kubegc_cli.report.events import record_events
from kubegc_cli.report.metrics import RunFacts, check_metrics_path, write_metrics

C = TypeVar("C")


@dataclass
class Run:
    """One command run: `started` (seconds since the epoch) and `started_mono` (monotonic
    seconds, for the duration); `command` the subcommand path without the program name
    (`gc containers`, "" until known); `settings` its `commands.flow.Settings` (None until
    known); `result` what it produced (`Plan`, `EvictionReport`, or None); `audit_error` why
    its audit rows could not be written ("" when they were, or there were none)."""

    started: float
    started_mono: float
    command: str = ""
    settings: Any = None
    result: Any = None
    audit_error: str = ""


_current: contextvars.ContextVar[Run | None] = contextvars.ContextVar("kubegc_run", default=None)


def command_name(command_path: str) -> str:
    """`kubegc gc containers` → `gc containers` (click's command path, program name dropped)."""
    parts = command_path.split()
    return " ".join(parts[1:]) if len(parts) > 1 else ""


def outcome(result: Any) -> None:
    """Hand what the command produced (a `Plan` or an `EvictionReport`) to the reporters.
    Outside a reported run (a test calling a command's core) it does nothing."""
    run = _current.get()
    if run is not None:
        run.result = result


def audit_unwritten(message: str) -> None:
    """Note that this run's audit rows could not be written (`message`: one line naming the
    state dir and the error); the run then ends with that line and exit 1 unless its exit code
    already says failure. Outside a reported run it does nothing."""
    run = _current.get()
    if run is not None:
        run.audit_error = message


def reported_settings(fn: Callable[[Any], C]) -> Callable[[Any], C]:
    """Decorate `settings_from(ctx)`: note the command path and the `Settings` it returns."""

    @functools.wraps(fn)
    def wrapper(ctx: Any) -> C:
        settings = fn(ctx)
        run = _current.get()
        if run is not None:
            run.command = command_name(ctx.command_path)
            run.settings = settings
        return settings

    return wrapper


def exit_code_of(code: Any) -> int:
    """`SystemExit.code` as the process exit status (None → 0, a message → 1)."""
    if code is None:
        return ExitCode.OK
    if isinstance(code, int):
        return code
    return ExitCode.FAILED


class Main(Protocol):
    """The shape of `kubegc_cli.cli.main.main` once wrapped: `main(argv=None)`, never returns."""

    def __call__(self, argv: list[str] | None = None) -> NoReturn: ...


def reported_main(fn: Callable[[list[str] | None], None]) -> Main:
    """Decorate `main(argv)` (which ends with `SystemExit`): report the run, then exit with
    its exit code (1 instead of 0 when its audit rows could not be written)."""

    @functools.wraps(fn)
    def wrapper(argv: list[str] | None = None) -> NoReturn:
        run = Run(started=time.time(), started_mono=time.monotonic())
        token = _current.set(run)
        try:
            with using(audit_unwritten=audit_unwritten):
                fn(argv)
            code: int = ExitCode.OK
        except SystemExit as exc:
            code = exit_code_of(exc.code)
        finally:
            _current.reset(token)
        try:
            final = report_run(run, code)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM while reporting: the run itself is over
            final = code or ExitCode.INTERRUPTED
        sys.exit(final)

    return wrapper


def _say(level: str, message: str) -> None:
    """One stderr line at `level` (`warning`, `error`), in the run's log format."""
    with contextlib.suppress(OSError, ValueError):  # stderr closed: nothing more to say
        LOG.emit(level, message)


def report_run(run: Run, code: int, *, say: Callable[[str, str], None] = _say) -> int:
    """Say why the run's audit rows are missing, write the metrics file and post the Events
    a finished run asks for; returns the exit code to end with: `code`, or 1 when it was 0
    and the audit rows could not be written (the record of what the run removed is lost).

    Never raises: every failure here is one line through `say(level, message)` (the audit
    rows' at level `error`; the metrics file's and an Event's at `warning`, which never
    change the exit code)."""
    if run.audit_error:
        say("error", run.audit_error)
        code = code or ExitCode.FAILED
    s = run.settings
    if s is None or not run.command:
        return code
    end = time.time()
    duration = max(0.0, time.monotonic() - run.started_mono)
    metrics_file = getattr(s, "metrics_file", None)
    if metrics_file is not None:
        facts = RunFacts(run.command, code, run.started, end, duration, run.result)
        try:
            write_metrics(metrics_file, facts)
        except Exception as exc:  # a warning: the run's own outcome decides the exit code
            say("warning", str(exc))
    if getattr(s, "events", False):
        try:
            record_events(
                s, run.command, run.result, code, warn=lambda m: say("warning", m), now=end
            )
        except Exception as exc:  # events are advisory: they never fail the run
            say("warning", f"events not recorded: {type(exc).__name__}: {exc}")
    return code


def metrics_file_option(value: str | None) -> Any:
    """`--metrics-file` → Path (None when not given). Raises `BadInput` (exit 2) naming a
    value that cannot be a textfile-collector file (see `metrics.check_metrics_path`)."""
    if value is None:
        return None
    return check_metrics_path(value)
