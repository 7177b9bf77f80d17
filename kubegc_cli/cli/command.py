"""The click classes every kubegc command and group is made of.

A command's help lists its own options first and the global ones after; before it runs, the
config file fills the options the command line left unset; a closed stdout and a stop signal
leave it as `OutputClosed` and `Stopped`, which `kubegc_cli.cli.main` turns into their exit
codes; the node's run lock is released when it ends.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any, NoReturn

import click

from kubegc_cli.cli.configfile import annotate, apply_config
from kubegc_cli.cli.options import GLOBAL_NAMES
from kubegc_cli.core import stop
from kubegc_cli.core.errors import BadInput, KubegcError
from kubegc_cli.node.state import release_run_lock
from kubegc_cli.render.log import LOG


def fail(message: str, code: int) -> NoReturn:
    """End the run: `message` as one error line on stderr, then exit with `code`."""
    LOG.emit("error", message)
    sys.exit(code)


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


#: Long enough for any first sentence: a command list shows it whole, wrapped, never cut.
WHOLE = 10_000


class KubegcGroup(click.Group):
    """A group whose subcommands and subgroups use the kubegc help layout: its commands first,
    each with the first sentence of its help wrapped to the terminal (never cut short), then
    its options, then the global ones."""

    command_class = KubegcCommand

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self.format_commands(ctx, formatter)
        KubegcCommand.format_options(self, ctx, formatter)  # type: ignore[arg-type]

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(WHOLE)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


KubegcGroup.group_class = KubegcGroup


class RootGroup(KubegcGroup):
    """The root group: each subcommand is named by the module that makes it
    (`subcommands`: name -> "module:attribute"), imported when that subcommand is first
    needed, so a run loads its own command group and no other. The help lists every command,
    subcommands of groups included (`listing`: (heading, command paths) in the order shown;
    `summaries`: path -> the first sentence of its help), without importing any; reading
    `commands` (the generated docs, `config view`) imports them all."""

    def __init__(
        self,
        *args: Any,
        subcommands: Mapping[str, str] = {},
        listing: Sequence[tuple[str, Sequence[str]]] = (),
        summaries: Mapping[str, str] = {},
        **kwargs: Any,
    ) -> None:
        self._named = dict(subcommands)
        self._listing = tuple((heading, tuple(paths)) for heading, paths in listing)
        self._summaries = dict(summaries)
        self._loaded: dict[str, click.Command] = {}
        super().__init__(*args, **kwargs)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Every command under its heading, with its first sentence (`summaries`), aligned
        as one list: `kubegc --help` imports no command group."""
        sections = [
            (heading, [(path, self._summaries[path]) for path in paths])
            for heading, paths in self._listing
        ]
        width = max((len(path) for _, rows in sections for path, _ in rows), default=0)
        for heading, rows in sections:
            with formatter.section(heading):
                formatter.write_dl([(path.ljust(width), text) for path, text in rows])

    @property
    def commands(self) -> MutableMapping[str, click.Command]:
        for name in list(self._named):
            self._load(name)
        return self._loaded

    @commands.setter
    def commands(self, value: MutableMapping[str, click.Command]) -> None:
        self._loaded = dict(value)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self._loaded, *self._named})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self._named:
            self._load(cmd_name)
        return self._loaded.get(cmd_name)

    def _load(self, name: str) -> None:
        self._loaded[name] = by_name(self._named.pop(name))


def by_name(spec: str) -> Any:
    """The attribute a `"module:attribute"` constant names, its module imported now (the
    constant counts as the import, tests/unit/test_layers.py)."""
    module, _, attr = spec.partition(":")
    # deferred: tests/unit/test_startup.py::test_a_command_loads_its_own_group_only
    return getattr(importlib.import_module(module), attr)
