"""The one table layout every command's table goes through: numbers and IDs whole, at any width.

A `Grid` is a title, `Column`s and rows of plain text cells. `grid_lines` lays it out for a
width (a terminal's columns; None into a pipe or file, where nothing is ever cut or wrapped):

1. **One line a row** when every column fits (columns two spaces apart, numbers right-aligned).
2. **Long cells under their row** when not: the decorations (`decor`, a bar) are left out,
   then the text columns, widest first, then the short words, move to indented lines under
   each row, wrapped at spaces (a word longer than a whole line, a path, stays whole for the
   terminal to soft-wrap, as does a `whole` column: a command). The first column, IDs (`id`)
   and numbers (`num`) stay on the row's line, whole.
3. **One block per row** (as `kubectl describe` does) when even those do not fit: the first
   cell, then each other column as `NAME: value`, one a line.

No layout cuts a cell or writes an ellipsis, and a long cell never narrows its neighbours.
`Screen` writes lines to a terminal (styled through rich) or to a pipe (plain, rich not
loaded).
"""

from __future__ import annotations

import os
import sys
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Literal

#: How a column gives way on a narrow terminal: `id` and `num` never (whole, on the row's
#: line; `num` right-aligned); `text` and `word` move under the row (text first); `decor`
#: (a bar drawn from a number shown beside it) is left out.
ColumnKind = Literal["id", "num", "word", "text", "decor"]

#: Spaces between two columns.
GAP = 2
#: Indent of the lines under a row (and of a block's fields).
INDENT = 4


@dataclass(frozen=True)
class Column:
    """One column: its header `name`, its `kind` (`ColumnKind`), `wide` when it is shown only
    with `-o wide`, and `whole` for a text a user copies (a command): moved under its row it
    is never wrapped at its spaces (a long one is left to the terminal's soft wrap, which a
    copy from the screen joins again)."""

    name: str
    kind: ColumnKind = "text"
    wide: bool = False
    whole: bool = False


@dataclass
class Grid:
    """A table of plain text: `title` (may be ""), `columns`, and rows as (cells, style), a
    rich style name or None; `header` False: no line of column names (a table of name and
    value). Cells must already be safe to print (`core.units.safe_text`)."""

    title: str
    columns: Sequence[Column]
    rows: list[tuple[list[str], str | None]] = field(default_factory=list)
    header: bool = True

    def add(self, cells: Sequence[str], style: str | None = None) -> None:
        """Append a row of `cells`, one per column. Raises ValueError for a wrong count."""
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append((list(cells), style))


@dataclass(frozen=True)
class View:
    """How tables are shown: `wide` (`-o wide`: the `wide` columns too), `headers` False
    (`--no-headers`: no title or header line)."""

    wide: bool = False
    headers: bool = True


#: A (text, style) line: the style is a rich style name, or None for the terminal's default.
Line = tuple[str, str | None]


def width_function(texts: Sequence[str]) -> Callable[[str], int]:
    """`len` when every text is printable ASCII (one terminal cell a character), else rich's
    cell width (wide characters take two cells)."""
    joined = "".join(texts)
    if joined.isascii() and joined.isprintable():
        return len
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from rich.cells import cell_len

    return cell_len


def grid_lines(grid: Grid, width: int | None, view: View | None = None) -> list[Line]:
    """`grid` as lines no wider than `width` (None: unlimited), but for a word longer than a
    line and a long `whole` cell (left to the terminal's soft wrap), by the layouts of the
    module's docstring. An empty grid gives its title and header only."""
    view = view or View()
    keep = [i for i, c in enumerate(grid.columns) if view.wide or not c.wide]
    cols = [grid.columns[i] for i in keep]
    rows = [([cells[i] for i in keep], style) for cells, style in grid.rows]
    every = [c.name for c in cols] + [c for cells, _ in rows for c in cells]
    cell = width_function([grid.title, *every])
    natural = [max([cell(c.name)] + [cell(r[i]) for r, _ in rows]) for i, c in enumerate(cols)]

    def span(idx: list[int]) -> int:
        return sum(natural[i] for i in idx) + GAP * (len(idx) - 1)

    inline = list(range(len(cols)))
    below: list[int] = []
    if width is not None and span(inline) > width:
        yielding = [i for i in inline[1:] if cols[i].kind == "decor"]
        for kind in ("text", "word"):
            same = [i for i in inline[1:] if cols[i].kind == kind]
            yielding += sorted(same, key=lambda i: -natural[i])
        moved: list[int] = []
        for i in yielding:
            inline.remove(i)
            moved.append(i)
            if span(inline) <= width:
                break
        if span(inline) > width:
            return _blocks(grid.title, cols, rows, width, cell, view)
        for i in reversed(moved):  # what still fits after a wider one moved comes back
            if span(sorted([*inline, i])) <= width:
                inline = sorted([*inline, i])
        below = [i for i in moved if i not in inline and cols[i].kind != "decor"]
        below.sort()

    right = [cols[i].kind == "num" for i in inline]
    sizes = [natural[i] for i in inline]

    def line(cells: list[str]) -> str:
        parts = [cells[i] for i in inline]
        if cell is len:
            parts = [
                p.rjust(w) if r else p.ljust(w) for p, w, r in zip(parts, sizes, right, strict=True)
            ]
        else:
            pads = [" " * (w - cell(p)) for p, w in zip(parts, sizes, strict=True)]
            parts = [d + p if r else p + d for p, d, r in zip(parts, pads, right, strict=True)]
        return (" " * GAP).join(parts).rstrip()

    out: list[Line] = []
    if view.headers and grid.title:
        out += [(t, "bold") for t in prose(grid.title, width)]
    if view.headers and grid.header:
        out.append((line([c.name for c in cols]), "bold"))
        if len(below) == 1:
            out.append((" " * INDENT + cols[below[0]].name, "bold"))
    room = None if width is None else max(20, width - INDENT)
    for cells, style in rows:
        out.append((line(cells), style))
        pieces = [
            (cells[i] if len(below) == 1 else f"{cols[i].name}: {cells[i]}", cols[i].whole)
            for i in below
            if cells[i] not in ("", "-")
        ]
        out += [(" " * INDENT + text, style) for text in _pack(pieces, room, cell)]
    return out


def _pack(
    pieces: list[tuple[str, bool]], room: int | None, cell: Callable[[str], int]
) -> list[str]:
    """`pieces` (text, whole) on as few lines of `room` cells as they fit, two spaces apart; a
    piece wider than `room` gets lines of its own: wrapped at spaces (`_wrap`), or, `whole`,
    one line the terminal soft-wraps. Nothing joins the last line of a wider piece."""
    lines: list[str] = []
    joinable = False
    for piece, whole in pieces:
        fits = room is None or cell(piece) <= room
        if joinable and fits and room is not None and cell(lines[-1]) + GAP + cell(piece) <= room:
            lines[-1] += " " * GAP + piece
        elif fits or whole:
            lines.append(piece)
        else:
            lines += _wrap(piece, room or 1)
        joinable = fits
    return lines


def _wrap(text: str, room: int) -> list[str]:
    """`text` wrapped at spaces to `room` columns; a word longer than `room` (a path, a long
    name, an ID) stays whole on a line of its own, for the terminal to soft-wrap: a copy from
    the screen then gives it back in one piece."""
    return textwrap.wrap(
        text, room, break_long_words=False, break_on_hyphens=False, drop_whitespace=True
    ) or [text]


def _blocks(
    title: str,
    cols: list[Column],
    rows: list[tuple[list[str], str | None]],
    width: int,
    cell: Callable[[str], int],
    view: View,
) -> list[Line]:
    """One block a row: its first cell, then `NAME:  value` for every other non-empty cell,
    names aligned, values wrapped at spaces after the name."""
    out: list[Line] = [(t, "bold") for t in prose(title, width)] if view.headers and title else []
    label = max((cell(c.name) for c in cols[1:]), default=0) + 1
    room = max(20, width - 2 - label - 2)
    for cells, style in rows:
        out += [(text, style or "bold") for text in _wrap(cells[0], width)]
        for c, value in zip(cols[1:], cells[1:], strict=True):
            if value == "":
                continue
            name = (f"{c.name}:" if c.name else "").ljust(label)  # (a nameless cell: no label)
            whole = c.whole or (c.kind in ("id", "num") and cell(value) <= room)
            for n, text in enumerate([value] if whole else _wrap(value, room)):
                out.append((f"  {name if n == 0 else ' ' * label}  {text}", style))
    return out


def prose(text: str, width: int | None, indent: int = 0, *, whole: bool = False) -> list[str]:
    """`text` as lines: one whole line when `width` is None (a pipe) or `text` is `whole` (a
    command a user copies: the terminal soft-wraps it), else wrapped at spaces to `width` (a
    word longer than a line stays whole), each line indented by `indent`."""
    lead = " " * indent
    if width is None or whole or not text:
        return [lead + text]
    return [lead + t for t in _wrap(text, max(20, width - indent))]


def terminal_width(out: IO[str]) -> int | None:
    """The columns of the terminal `out` writes to ($COLUMNS when set to a number, as rich and
    the shells do), or None when `out` is not a terminal (a pipe, a file): no width there.
    `TERM=dumb` changes nothing here (rich would then assume 80)."""
    if not (hasattr(out, "isatty") and out.isatty()):
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(out.fileno()).columns or 80
    except (OSError, ValueError, AttributeError):
        return 80


def _writes_plain(out: IO[str]) -> bool:
    """True when rich would write plain text to `out`, which is not a terminal: neither
    `TTY_COMPATIBLE=1` nor `FORCE_COLOR` makes rich treat it as one (rich's own rules), and
    no Jupyter display or legacy Windows console is in the way."""
    import builtins

    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return False
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "0"
    return os.environ.get("FORCE_COLOR", "") == ""


class Screen:
    """Where tables and lines are written. On a terminal each line goes through a rich console
    (styles; never wrapped or cropped by rich: `grid_lines` fits them already, and prose is
    wrapped here at spaces); into a pipe or file it is written plain and whole, without rich.
    Each write is flushed at once; a closed pipe raises BrokenPipeError (exit 141)."""

    def __init__(self, out: IO[str] | None = None, view: View | None = None) -> None:
        self.out = out or sys.stdout
        self.view = view or View()
        self.width = terminal_width(self.out)
        self.colour = self.width is not None or not _writes_plain(self.out)
        self._console: Any = None

    @property
    def tty(self) -> bool:
        """True when writing to a terminal."""
        return self.width is not None

    def _rich(self) -> Any:
        if self._console is None:
            # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
            from rich.console import Console

            class PipeAwareConsole(Console):
                def on_broken_pipe(self) -> None:
                    raise BrokenPipeError  # kubegc's entry point: exit 141, like SIGPIPE

            self._console = PipeAwareConsole(
                file=self.out, width=self.width, soft_wrap=True, highlight=False, emoji=False
            )
        return self._console

    def _write(self, text: str) -> None:
        file = getattr(self.out, "rich_proxied_file", self.out)
        try:
            file.write(text)
            file.flush()
        except BrokenPipeError:  # one without an errno, which click passes on as exit 141
            raise BrokenPipeError from None

    def lines(self, lines: Sequence[Line]) -> None:
        """Write `lines` as they are (styled on a terminal, or where the environment forces
        colour: `_writes_plain`)."""
        if not self.colour:
            self._write("".join(f"{text}\n" for text, _ in lines))
            return
        # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
        from rich.text import Text

        console = self._rich()
        for text, style in lines:
            console.print(Text(text, style=style or ""), soft_wrap=True)

    def line(
        self, text: str, style: str | None = None, indent: int = 0, *, whole: bool = False
    ) -> None:
        """`text` (prose) as one line into a pipe; on a terminal wrapped at spaces to its
        width, every line indented by `indent` (`whole`, a command: one line, soft-wrapped by
        the terminal)."""
        self.lines([(t, style) for t in prose(text, self.width, indent, whole=whole)])

    def note(self, text: str, style: str | None = "dim") -> None:
        """A note: indented by two (wrapped on a terminal)."""
        self.line(text, style, indent=2)

    def grid(self, grid: Grid) -> None:
        """`grid` laid out for this screen's width (`grid_lines`)."""
        self.lines(grid_lines(grid, self.width, self.view))


def make_console(out: IO[str]) -> Any:
    """A rich console on `out` for a live view (`memory available --watch`): the terminal's
    width on a tty; into a file or pipe nothing wrapped or cropped (soft wrap)."""
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from rich.console import Console

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError  # kubegc's entry point turns it into exit 141, like SIGPIPE

    return PipeAwareConsole(
        file=out, width=terminal_width(out), soft_wrap=terminal_width(out) is None,
        highlight=False, emoji=False,
    )  # fmt: skip
