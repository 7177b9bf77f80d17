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
from kubegc_cli.core.stop import Terminated, ending, first_stop
from kubegc_cli.render.log import LOG
from kubegc_cli.report.run import reported_main

CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: Each subcommand of `kubegc`, by the module that makes it (imported when it is needed).
SUBCOMMANDS = {
    "gc": "kubegc_cli.cli.gc:gc",
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


#: The first paragraph of each subcommand's help, for `kubegc --help`'s table without importing
#: them (tests/unit/test_cli.py checks each against the command's own help).
SUMMARIES = {
    "gc": "Garbage-collect what the kubelet would: containers, then sandboxes, then pod logs.",
    "reclaim": "Free disk space safely, in one step: everything kubegc may remove, one plan.",
    "memory": "The kubelet's memory signals on this node (observe only).",
    "evict": "The kubelet's node-pressure eviction: check thresholds, prune Evicted pods.",
    "residue": "Leftovers of the kubelet and the runtime: find them (scan), remove the safe ones "
    "(clean).",
    "history": "List past runs that acted, and what each did, from the state store (--state-dir).",
    "df": "Show what fills the node's disks, and what kubegc can reclaim of it (read-only).",
    "snapshot": "Write what kubegc observes on this node as JSON (for tickets and offline "
    "planning).",
    "apply": "Carry out a plan saved by a dry run with --plan-out, exactly as saved.",
    "fleet": "Show the fleet from the nodes' NodeGCReports: reclaimable bytes, eviction, "
    "staleness.",
    "config": "kubegc's config file: global options and per-command options (see config view).",
    "completion": "Print the shell completion script for bash, zsh or fish.",
    "agent": "Run on every node (a DaemonSet): observe the node every --interval, report, act by "
    "policy.",
    "version": "Print kubegc's version and the CRI runtime's: its name, version and CRI API "
    "version.",
}


@click.group(cls=RootGroup, context_settings=CONTEXT, subcommands=SUBCOMMANDS, summaries=SUMMARIES)
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
    kubegc reclaim                  all of the above and safe residue: one plan, disk after
    kubegc residue scan             leftovers: orphaned pod dirs, netns, CNI IPs, cgroups, ...
    kubegc residue clean            remove the leftovers that are safe to remove
    kubegc df                       what fills the node's disks, and what can be reclaimed
    kubegc snapshot > node.json     what kubegc observes, for planning off the node
    kubegc history                  what past runs removed (from the state store)
    kubegc apply plan.json          carry out a plan a dry run saved with --plan-out
    kubegc fleet                    every node's NodeGCReport: reclaimable, eviction, stale
    kubegc config view              the configuration in force, with each value's source
    kubegc completion bash          the shell completion script (bash, zsh, fish)
    kubegc agent                    every node, as a DaemonSet: cycles, report, /metrics

    Destructive commands print their plan first; --dry-run stops there, --yes acts.
    Exit codes: 0 done, 1 some actions failed, 2 bad input, 3 runtime unreachable,
    4 another kubegc run holds the node lock.
    """


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
        sys.exit(ExitCode.BAD_INPUT)
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        fail(exc.format_message() + hint, ExitCode.BAD_INPUT)
    except click.ClickException as exc:
        fail(exc.format_message(), exc.exit_code or ExitCode.BAD_INPUT)
    except click.exceptions.Abort as exc:
        # click turns a KeyboardInterrupt inside a command into Abort: a stop signal then
        # still says which it was, with its exit code.
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, KeyboardInterrupt):
            fail(*ending(getattr(cause, "signal_name", "SIGINT")))
        fail("aborted", ExitCode.INTERRUPTED)
    except KubegcError as exc:
        fail(str(exc), exc.exit_code)
    except (Stopped, KeyboardInterrupt) as exc:  # (`Terminated` says SIGTERM)
        fail(*ending(getattr(exc, "signal_name", "SIGINT")))
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
