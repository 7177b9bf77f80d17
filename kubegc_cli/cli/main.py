"""`kubegc`: the root command, and `main()`, which runs it and turns every error into one line
on stderr and its exit code (`kubegc_cli.core.errors.ExitCode`).

Each command group is a module of its own (`kubegc_cli.cli.gc`, `.evict`, `.memory`,
`.residue`, ...), named in `SUBCOMMANDS` and imported when a run needs it.

Start-up is part of the product: these modules import only click and kubegc's light modules;
grpc, the Kubernetes client and rich are imported where they are used.
"""

from __future__ import annotations

import itertools
import os
import signal
import sys
import threading

import click

from kubegc_cli import __version__
from kubegc_cli.cli.command import OutputClosed, RootGroup, Stopped, fail
from kubegc_cli.cli.options import global_options
from kubegc_cli.core.errors import ExitCode, KubegcError
from kubegc_cli.core.stop import STOPPED_STARTING, Terminated, ending, ends_normally, first_stop
from kubegc_cli.render.log import LOG
from kubegc_cli.report.run import reported_main

HELP_OPTIONS = ["-h", "--help"]
CONTEXT = {"help_option_names": HELP_OPTIONS, "max_content_width": 100}

#: Each subcommand of `kubegc`, by the module that makes it (imported when it is needed).
SUBCOMMANDS = {
    "gc": "kubegc_cli.cli.gc:gc",
    "images": "kubegc_cli.cli.images:images",
    "reclaim": "kubegc_cli.cli.reclaim:reclaim",
    "memory": "kubegc_cli.cli.memory:memory",
    "evict": "kubegc_cli.cli.evict:evict",
    "residue": "kubegc_cli.cli.residue:residue",
    "history": "kubegc_cli.cli.history:history",
    "df": "kubegc_cli.cli.df:df",
    "snapshot": "kubegc_cli.cli.snapshot:snapshot",
    "apply": "kubegc_cli.cli.apply:apply_cmd",
    "fleet": "kubegc_cli.cli.fleet:fleet",
    "config": "kubegc_cli.cli.config:config_group",
    "completion": "kubegc_cli.cli.completion:completion_cmd",
    "agent": "kubegc_cli.cli.agent:agent",
    "version": "kubegc_cli.cli.version:version",
}


#: `kubegc --help`'s list of commands: every command kubegc has, each once, under what it is
#: for (tests/unit/test_startup.py checks it against the command tree).
LISTING: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Disk space commands", (
        "df", "reclaim", "gc all", "gc containers", "gc sandboxes", "gc logs", "gc images",
        "residue scan", "residue clean", "images pin", "images unpin",
    )),
    ("Node pressure commands", ("evict check", "evict prune", "memory available")),
    ("Plan and record commands", ("snapshot", "apply", "history")),
    ("Fleet commands", ("agent", "fleet")),
    ("Setup commands", ("config view", "completion", "version")),
)  # fmt: skip

#: The first sentence of each listed command's help, for `kubegc --help`'s list without
#: importing the commands (tests/unit/test_startup.py checks each against the command's own).
SUMMARIES = {
    "df": "Show what fills the node's disks, and what kubegc can reclaim of it (read-only).",
    "reclaim": "Free disk space safely, in one step: everything kubegc may remove, one plan.",
    "gc all": "Containers, then sandboxes, then pod logs — the kubelet's order — as one plan.",
    "gc containers": "Remove dead containers as the kubelet's container GC would.",
    "gc sandboxes": "Remove dead pod sandboxes as the kubelet's sandbox GC would.",
    "gc logs": "Remove pod log directories of deleted pods and dangling /var/log/containers links.",
    "gc images": "Remove unused images as the kubelet's image GC would, remembering them across "
    "runs.",
    "images pin": "Pin the images matching the patterns: containerd's io.cri-containerd.pinned "
    "label.",
    "images unpin": "Undo kubegc's own pins of the images matching the patterns.",
    "residue scan": "Find what the kubelet and the runtime left behind, and say what is safe to "
    "remove.",
    "residue clean": "Remove the leftovers `residue scan` marks safe, re-checking each right "
    "before.",
    "evict check": "Check the eviction thresholds against the signals observed now.",
    "evict prune": "Delete the Evicted pod shells (phase Failed, reason Evicted) left in the API.",
    "memory available": "Show memory.available exactly as the kubelet computes it, with the "
    "breakdown.",
    "snapshot": "Write what kubegc observes on this node as JSON (for tickets and offline "
    "planning).",
    "apply": "Carry out a plan saved by a dry run with --plan-out, exactly as saved.",
    "history": "List past runs that acted, and what each did, from the state store (--state-dir).",
    "agent": "Run on every node (a DaemonSet): observe the node every --interval, report, act by "
    "policy.",
    "fleet": "Show the fleet from the nodes' NodeGCReports: reclaimable bytes, eviction, "
    "staleness.",
    "config view": "Print the configuration in force, with the source of every value.",
    "completion": "Print the shell completion script for bash, zsh or fish.",
    "version": "Print kubegc's version and the CRI runtime's: its name, version and CRI API "
    "version.",
}


@click.group(
    cls=RootGroup,
    context_settings=CONTEXT,
    subcommands=SUBCOMMANDS,
    listing=LISTING,
    summaries=SUMMARIES,
)
@click.version_option(__version__, "--version", prog_name="kubegc", message="%(prog)s %(version)s")
@global_options
def cli() -> None:
    """kubegc: the kubelet's garbage collection for one Kubernetes node, shown before it is done.

    Destructive commands print their plan first; --dry-run stops there, --yes acts, and
    without either a terminal is asked. `kubegc COMMAND --help` says more about each.

    Exit codes, the same on every command (kubegc(1), EXIT STATUS): 0 done, 1 part of the
    run failed, 2 bad input, 3 the runtime, the API or a signal could not be read, 4 another
    run holds the node lock, 5 evict check: a threshold is met, 130/143 stopped by
    SIGINT/SIGTERM, 141 stdout closed.

    \b
    Examples (a node under disk pressure):
      kubegc df
      kubegc reclaim --until 'nodefs.available>15%'
      kubegc df
    """


def _on_sigterm(signum: int, frame: object) -> None:
    """SIGTERM as `Terminated` (for a `main` called in a process kubegc's console script did
    not start; the console script installs `kubegc_cli.core.stop.first_stop` itself)."""
    raise Terminated


def _stopped(signal_name: str, words: list[str]) -> None:
    """End a run a stop signal ended: `terminated` 143 or `interrupted` 130 — or, for a
    long-running agent's SIGTERM (`core.stop.ends_normally`), its normal end, exit 0."""
    if ends_normally(signal_name, words):
        LOG.emit("info", STOPPED_STARTING)
        sys.exit(ExitCode.OK)
    fail(*ending(signal_name))


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
        sys.exit(ExitCode.BAD_INPUT)
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        fail(exc.format_message() + hint, ExitCode.BAD_INPUT)
    except click.ClickException as exc:  # click's word on the input: bad input, as a usage error
        fail(exc.format_message(), ExitCode.BAD_INPUT)
    except click.exceptions.Abort as exc:
        # click turns a KeyboardInterrupt inside a command into Abort: a stop signal then
        # still says which it was, with its exit code.
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, KeyboardInterrupt):
            _stopped(getattr(cause, "signal_name", "SIGINT"), words)
        fail("aborted", ExitCode.INTERRUPTED)
    except KubegcError as exc:
        fail(str(exc), exc.exit_code)
    except (Stopped, KeyboardInterrupt) as exc:  # (`Terminated` says SIGTERM)
        _stopped(getattr(exc, "signal_name", "SIGINT"), words)
    except (BrokenPipeError, OutputClosed):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # no second error while flushing at exit
        sys.exit(ExitCode.BROKEN_PIPE)
    except MemoryError:
        fail("out of memory (an input file too large for this machine?)", ExitCode.FAILED)
    finally:
        logs = sys.modules.get("kubegc_cli.node.host.logs")  # loaded only by runs that pinned
        if logs is not None:
            logs.release_pins()  # the directories held open from plan to removal
    sys.exit(ExitCode.OK)
