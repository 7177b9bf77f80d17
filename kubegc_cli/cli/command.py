"""The click classes every kubegc command and group is made of.

A command's help lists its own options first and the global ones after; before it runs, the
config file fills the options the command line left unset; a closed stdout and a stop signal
leave it as `OutputClosed` and `Stopped`, which `kubegc_cli.cli.main` turns into their exit
codes; the node's run lock is released when it ends.
"""

from __future__ import annotations

from typing import Any

import click

from kubegc_cli.cli.configfile import annotate, apply_config
from kubegc_cli.cli.options import GLOBAL_NAMES
from kubegc_cli.core import stop
from kubegc_cli.core.errors import BadInput, KubegcError
from kubegc_cli.node.state import release_run_lock


class OutputClosed(Exception):
    """stdout was closed by its reader (`| head`): the command ends with exit 141, as a
    process killed by SIGPIPE, and writes nothing more. Not an `OSError`, so that click
    lets it through to kubegc's entry point."""


class Stopped(Exception):
    """A stop signal ended the command (`signal_name` "SIGINT" or "SIGTERM"): exit 130/143
    with one line. Not a `KeyboardInterrupt`, so that click lets it through as it is."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


class KubegcCommand(click.Command):
    """A command whose help lists its own options first and the global ones after.

    Before its callback runs, the config file is read and fills the options the command line
    left unset (`kubegc_cli.cli.configfile.apply_config`); a `BadInput` about such a value is
    told with its key and file. The node's run lock, if this run took one, is released when
    the callback ends.
    """

    def invoke(self, ctx: click.Context) -> Any:
        try:
            apply_config(ctx)
            return super().invoke(ctx)
        except BadInput as exc:
            raise annotate(exc, ctx) from None
        except KubegcError:
            raise
        except BrokenPipeError:  # (click would make a closed stdout exit 1, silently)
            raise OutputClosed from None
        except KeyboardInterrupt as exc:  # (click would print an empty line first)
            raise Stopped(getattr(exc, "signal_name", "SIGINT")) from None
        except Exception:  # one a stop signal's exception became (see `kubegc_cli.core.stop`)
            if stop.received is None:
                raise
            raise Stopped(stop.name_of(stop.received)) from None
        finally:
            release_run_lock()

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
