"""Show: a plan as a rich table, JSON or YAML. Into a pipe the table is written plain, and rich
(which only render/ imports) is not loaded.

stdout carries the result (the table or the document); diagnostics go to stderr elsewhere.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, cast

from kubegc_cli.core.plan import (
    Action,
    ContainerAction,
    ImageAction,
    LogAction,
    Plan,
    RawJSON,
    Result,
    SandboxAction,
)
from kubegc_cli.core.units import NS_PER_SECOND, format_bytes, format_duration, safe_text

if TYPE_CHECKING:
    from kubegc_cli.core.plan import PodAction
    from kubegc_cli.core.residue import Finding

RESULT_STYLE = {
    Result.PLANNED: "yellow",
    Result.REMOVED: "green",
    Result.SKIPPED: "cyan",
    Result.FAILED: "bold red",
    Result.HELD_BACK: "magenta",
    Result.KEPT: "dim",
}


def json_text(doc: Any) -> str:
    """`doc` as JSON text: indented by 2, except that every object inside a top-level list of
    objects (`actions`, `kept`, `findings`...) takes one line of its own. `RawJSON` items of
    such a list (already encoded: `Plan.to_dict(rows_as_json=True)`) are written as they are.

    One object per line keeps a plan of 100,000 actions greppable and fast to write (Python's C
    encoder does each line; `indent` would send everything through the pure-Python one, ~10×
    slower). Key order is the document's.
    """
    return "".join(_json_pieces(doc))


_ROWS_PER_WRITE = 2048


def _json_pieces(doc: Any) -> Iterator[str]:
    """`json_text(doc)` in pieces (a long list of rows in runs of `_ROWS_PER_WRITE`), so that a
    100,000-row document is written without first being joined into one string."""
    if not isinstance(doc, dict) or not doc:
        yield json.dumps(doc, indent=2)
        return
    sep = "{\n"
    for key, value in doc.items():
        name = json.dumps(key)
        if isinstance(value, list) and value and all(isinstance(v, dict | RawJSON) for v in value):
            yield f"{sep}  {name}: [\n    "
            for at in range(0, len(value), _ROWS_PER_WRITE):
                run = value[at : at + _ROWS_PER_WRITE]
                rows = [v if isinstance(v, RawJSON) else json.dumps(v) for v in run]
                yield (",\n    " if at else "") + ",\n    ".join(rows)
            yield "\n  ]"
        else:
            text = json.dumps(value, indent=2).replace("\n", "\n  ")
            yield f"{sep}  {name}: {text}"
        sep = ",\n"
    yield "\n}"


def dump_document(doc: Any, fmt: str, out: IO[str] | None = None) -> None:
    """Write `doc` as JSON (`json_text`, written as it is made) or YAML."""
    out = out or sys.stdout
    if fmt == "json":
        for piece in _json_pieces(doc):
            out.write(piece)
        out.write("\n")
    else:
        # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
        import yaml

        out.write(yaml.dump(doc, Dumper=_yaml_dumper(yaml), sort_keys=False))
    out.flush()  # a reader that closed the pipe is seen here (exit 141), not at exit


def _yaml_dumper(yaml: Any) -> Any:
    """PyYAML's safe dumper, block style, writing a subclass of int or str (an `ExitCode`, a
    `Mode`) as the plain number or string it is, as JSON does."""
    dumper: Any = type("KubegcDumper", (yaml.SafeDumper,), {})
    dumper.add_multi_representer(int, lambda d, v: d.represent_int(int(v)))
    dumper.add_multi_representer(str, lambda d, v: d.represent_str(str(v)))
    dumper.default_flow_style = False
    return dumper


def _short(cid: str) -> str:
    return cid[:13]


def _result_text(a: Action) -> str:
    result = a.result.value
    if a.result is Result.HELD_BACK and a.error:
        return a.error  # "held back by --max-delete 5"
    if a.error:
        return f"{result}: {a.error}"
    if a.log_note:
        return f"{result} ({a.log_note})"
    return result


def _container_row(a: ContainerAction, now: int) -> list[str]:
    c = a.container
    pod = f"{c.pod_namespace}/{c.pod_name}" if c.pod_name else f"(sandbox {c.pod_sandbox_id[:13]})"
    logs = "-" if c.log_bytes is None else format_bytes(c.log_bytes)
    if a.result is Result.REMOVED:
        logs = format_bytes(a.bytes_freed)
    return [
        _short(c.id),
        pod,
        c.container_name,
        str(c.attempt),
        c.state.value,
        format_duration((now - c.created_at) / NS_PER_SECOND),
        a.rule,
        logs,
        _result_text(a),
    ]


def _sandbox_row(a: SandboxAction, now: int) -> list[str]:
    s = a.sandbox
    return [
        _short(s.id),
        f"{s.namespace}/{s.name}" if s.name else f"(uid {s.uid})",
        str(s.attempt),
        s.state.value,
        format_duration((now - s.created_at) / NS_PER_SECOND),
        str(a.container_count),
        a.rule,
        _result_text(a),
    ]


@dataclass(frozen=True)
class Layout:
    """How one kind of plan is shown: title, noun, columns (name, wraps) and a row builder.

    `show_kept` picks the kept objects shown without -v; `counts_bytes` adds log bytes to the
    summary line.
    """

    title: str
    noun: str
    columns: tuple[tuple[str, bool], ...]
    row: Callable[[Any, int], list[str]]
    show_kept: Callable[[Any], bool]
    counts_bytes: bool


CONTAINERS = Layout(
    "Container GC",
    "container",
    (
        ("CONTAINER", False),
        ("POD", True),
        ("NAME", True),
        ("ATT", False),
        ("STATE", False),
        ("AGE", False),
        ("REASON", True),
        ("LOG", False),
        ("RESULT", True),
    ),
    _container_row,
    lambda k: k.rule == "guard-newest-record",
    True,
)
SANDBOXES = Layout(
    "Sandbox GC",
    "sandbox",
    (
        ("SANDBOX", False),
        ("POD", True),
        ("ATT", False),
        ("STATE", False),
        ("AGE", False),
        ("CONTAINERS", False),
        ("REASON", True),
        ("RESULT", True),
    ),
    _sandbox_row,
    lambda k: False,
    False,
)


def _log_row(a: LogAction, now: int) -> list[str]:
    return [
        a.kind,
        a.path,
        "-" if a.kind == "log-symlink" else format_bytes(a.bytes_freed or a.bytes),
        a.rule,
        _result_text(a),
    ]


LOGS = Layout(
    "Log GC",
    "log path",
    (("KIND", False), ("PATH", True), ("SIZE", False), ("REASON", True), ("RESULT", True)),
    _log_row,
    lambda k: k.rule == "mount-point",
    True,
)


def _mixed_row(a: Any, now: int) -> list[str]:
    """One row of `gc all`: kind, object, pod, state, age, reason, bytes, result."""
    if isinstance(a, ContainerAction):
        c = a.container
        obj = f"{_short(c.id)} {c.container_name}#{c.attempt}"
        pod, state, born = f"{c.pod_namespace}/{c.pod_name}", c.state.value, c.created_at
        size = "-" if c.log_bytes is None else format_bytes(a.bytes_freed or c.log_bytes)
    elif isinstance(a, SandboxAction):
        sb = a.sandbox
        obj = f"{_short(sb.id)} #{sb.attempt}"
        pod, state, born, size = f"{sb.namespace}/{sb.name}", sb.state.value, sb.created_at, "-"
    else:
        obj, pod, state, born = a.path, "-", "-", 0
        size = "-" if a.kind == "log-symlink" else format_bytes(a.bytes_freed or a.bytes)
    age = format_duration((now - born) / NS_PER_SECOND) if born else "-"
    return [a.kind, obj, pod, state, age, a.rule, size, _result_text(a)]


ALL = Layout(
    "GC (containers, sandboxes, logs)",
    "object",
    (
        ("KIND", False),
        ("OBJECT", True),
        ("POD", True),
        ("STATE", False),
        ("AGE", False),
        ("REASON", True),
        ("SIZE", False),
        ("RESULT", True),
    ),
    _mixed_row,
    lambda k: k.rule in ("guard-newest-record", "mount-point"),
    True,
)


def _image_row(a: ImageAction, now: int) -> list[str]:
    tag = a.image.repo_tags[0] if a.image.repo_tags else "<none>"
    last = format_duration((now - a.last_used) / NS_PER_SECOND) + " ago" if a.last_used else "never"
    return [
        _short(a.image.id.removeprefix("sha256:")),
        tag,
        format_bytes(a.image.size),
        format_duration((now - a.first_detected) / NS_PER_SECOND),
        last,
        f"{a.rule}: {a.reason}" if a.result is Result.KEPT else a.rule,
        _result_text(a),
    ]


IMAGES = Layout(
    "Image GC",
    "image",
    (
        ("IMAGE", False),
        ("TAG", True),
        ("SIZE", False),
        ("SEEN", False),
        ("LAST USED", False),
        ("REASON", True),
        ("RESULT", True),
    ),
    _image_row,
    # in-use and not-needed images are many and self-explanatory; protected ones (the sandbox
    # image, --keep, pinned), MinAge and images that cannot be pulled again are what an
    # operator asks "why not?" about
    lambda k: k.rule in ("min-age", "protected", "pinned", "unpullable"),
    False,
)


def _evicted_pod_row(a: PodAction, now: int) -> list[str]:
    owner = f"{a.owner_kind}/{a.owner_name}" if a.owner_kind else "-"
    age = format_duration((now - a.evicted_at) / NS_PER_SECOND) if a.evicted_at else "-"
    message = a.message if len(a.message) <= 60 else a.message[:59] + "…"
    result = f"kept: {a.reason}" if a.result is Result.KEPT else _result_text(a)
    return [a.namespace, a.name, owner, age, message, result]


EVICTED_PODS = Layout(
    "Evicted pods",
    "evicted pod",
    (
        ("NAMESPACE", False),
        ("POD", True),
        ("OWNER", True),
        ("EVICTED", False),
        ("MESSAGE", True),
        ("RESULT", True),
    ),
    _evicted_pod_row,
    lambda k: False,
    False,
)


def _finding_row(a: Finding, now: int) -> list[str]:
    """One residue finding: object, size, safe, evidence (and why not safe), what `residue
    clean` does (nothing when not safe), what an operator could run instead, result."""
    size = "-" if a.bytes is None else format_bytes(a.bytes)
    if a.result is Result.REMOVED and a.bytes_freed:
        size = format_bytes(a.bytes_freed)
    return [
        a.target,
        size,
        "yes" if a.safe else "no",
        a.reason,
        a.clean_action,
        a.manual,
        "" if a.result in (Result.PLANNED, Result.KEPT) else _result_text(cast(Action, a)),
    ]


RESIDUE = Layout(
    "Residue",
    "finding",
    (
        ("OBJECT", True),
        ("SIZE", False),
        ("SAFE", False),
        ("EVIDENCE", True),
        ("CLEAN DOES", True),
        ("BY HAND", True),
        ("RESULT", True),
    ),
    _finding_row,
    lambda k: True,
    True,
)
#: Rows shown per finding type without -v (a node may hold thousands of dead containers).
RESIDUE_ROWS = 20


def render_residue(plan: Plan[Any], *, verbose: int = 0, out: IO[str] | None = None) -> None:
    """A residue plan: one table per finding type (its safe findings first), each closed by
    its totals (count, bytes, how many safe); then the notes that are not per-type totals,
    and a summary line. Without `verbose` at most `RESIDUE_ROWS` rows per type are listed,
    with how many more there are.
    """
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from rich.padding import Padding
    from rich.text import Text

    out = out or sys.stdout
    console = make_console(out)
    findings = [*plan.actions, *plan.kept]
    types: list[str] = list(getattr(plan, "types", ()))
    for f in findings:
        if f.type not in types:
            types.append(f.type)
    acted = any(f.result not in (Result.PLANNED, Result.KEPT) for f in findings)
    scan_only = getattr(plan, "scan_only", False)
    suffix = " (dry run)" if plan.dry_run and plan.actions and not scan_only else ""
    if not findings:
        console.print(Text(f"{RESIDUE.title}{suffix}: nothing found.", style="bold"))
    for t in types:
        group = [f for f in findings if f.type == t]
        if not group:
            continue
        shown = group if verbose else group[:RESIDUE_ROWS]
        wanted = [
            i
            for i, (col, _) in enumerate(RESIDUE.columns)
            if (col != "RESULT" or acted) and (col != "BY HAND" or any(f.manual for f in shown))
        ]
        table = _residue_table(f"{t}{suffix}", tuple(RESIDUE.columns[i] for i in wanted))
        for f in shown:
            cells = RESIDUE.row(f, plan.now)
            row = [Text(safe_text(cells[i])) for i in wanted]
            style = RESULT_STYLE[f.result] if acted else (None if f.safe else "dim")
            table.add_row(*row, style=style)
        console.print(table)
        more = len(group) - len(shown)
        sized = sum(f.bytes or 0 for f in group)
        safe = [f for f in group if f.safe]
        size = format_bytes(sized) if any(f.bytes is not None for f in group) else "size n/a"
        line = (
            f"  {t}: {len(group)} finding(s), {size}; {len(safe)} safe to clean "
            f"({format_bytes(sum(f.bytes or 0 for f in safe))})"
        )
        if more:
            line += f"; {more} more not listed (-v lists all)"
        console.print(Text(line, style="bold"))
    empty = [t for t in types if not any(f.type == t for f in findings)]
    if findings and empty:
        console.print(Text(f"  nothing found: {', '.join(empty)}"))
    for note in plan.notes:
        if any(note.startswith(f"{t}: ") for t in types):
            continue  # the per-type totals, shown under each table
        console.print(Padding(Text(safe_text(note), style="dim"), (0, 0, 0, 2), expand=False))
    console.print(Text(residue_summary(plan)))


def _residue_table(title: str, columns: tuple[tuple[str, bool], ...]) -> Any:
    """A residue table: objects and sizes never wrap (a path must stay one string to copy);
    evidence, actions and result wrap at words, into pipes too (rows per type are few)."""
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from rich.table import Table

    table = Table(
        title=title, title_justify="left", title_style="bold", box=None, header_style="bold",
        pad_edge=False, collapse_padding=True,
    )  # fmt: skip
    for col, wraps in columns:
        if col == "OBJECT":
            table.add_column(col, no_wrap=True, overflow="ignore")
        elif wraps:
            table.add_column(col, overflow="fold", ratio=2 if col == "EVIDENCE" else 1)
        else:
            table.add_column(col, no_wrap=True)
    return table


def residue_summary(plan: Plan[Any]) -> str:
    """`5 finding(s), 1.2Gi; 2 safe to clean (40Ki).` before acting; results after."""
    findings = [*plan.actions, *plan.kept]
    total = sum(f.bytes or 0 for f in findings)
    safe = sum(f.planned_bytes for f in plan.actions)
    if plan.dry_run or all(a.result is Result.PLANNED for a in plan.actions):
        return (
            f"{len(findings)} finding(s), {format_bytes(total)}; {len(plan.actions)} safe to "
            f"clean ({format_bytes(safe)}); {len(plan.kept)} not safe."
        )
    by = plan.counts()
    freed = format_bytes(sum(a.bytes_freed for a in plan.actions))
    return (
        f"removed {by['removed']}, skipped {by['skipped']}, failed {by['failed']}; freed "
        f"{freed}; {len(plan.kept)} not safe, left alone."
    )


LAYOUTS = {
    "ResiduePlan": RESIDUE,
    "EvictedPodPlan": EVICTED_PODS,
    "ImageGCPlan": IMAGES,
    "ContainerGCPlan": CONTAINERS,
    "SandboxGCPlan": SANDBOXES,
    "LogGCPlan": LOGS,
    "GCPlan": ALL,
}


def make_console(out: IO[str]) -> Any:
    """A rich console: the terminal's width on a tty; 200 columns into files, pipes and logs."""
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from rich.console import Console

    class PipeAwareConsole(Console):
        def on_broken_pipe(self) -> None:
            raise BrokenPipeError  # kubegc's entry point turns it into exit 141, like SIGPIPE

    isatty = hasattr(out, "isatty") and out.isatty()
    return PipeAwareConsole(
        file=out,
        width=None if isatty else PIPE_WIDTH,
        soft_wrap=False,
        highlight=False,
        emoji=False,
    )


#: The width of a `make_console` that is not writing to a terminal.
PIPE_WIDTH = 200


def _rich_writes_plain(out: IO[str]) -> bool:
    """True when a `make_console` on `out`, which is not a terminal, writes text as it is: no
    escape codes, since neither `TTY_COMPATIBLE=1` nor `FORCE_COLOR` makes rich treat `out` as
    a terminal (rich's own rules), and no Jupyter display or legacy Windows console."""
    import builtins
    import os

    if sys.platform == "win32" or hasattr(builtins, "get_ipython"):
        return False
    compatible = os.environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "0"
    return os.environ.get("FORCE_COLOR", "") == ""


def _plain_line(text: str, width: int = PIPE_WIDTH) -> bool:
    """True for a line a `make_console` writes unchanged when it is not a terminal: printable
    ASCII (one terminal cell a character) that fits `width`, so nothing wraps or is cropped."""
    return len(text) <= width and text.isascii() and text.isprintable()


class _Printer:
    """Where `render_plan` prints. Into a file or pipe that rich would not colour, a line it
    would write unchanged (`_plain_line`) is written directly, so a plan table into a pipe
    needs no rich at all; anything else goes through a rich console (`make_console`), as on a
    terminal. Each print is written and flushed at once, as rich does."""

    def __init__(self, out: IO[str], *, plain: bool) -> None:
        self.out = out
        self.plain = plain and _rich_writes_plain(out)
        self._console: Any = None

    def console(self) -> Any:
        """The rich console on `out`, made when first needed."""
        if self._console is None:
            self._console = make_console(self.out)
        return self._console

    def _write(self, text: str) -> None:
        file = getattr(self.out, "rich_proxied_file", self.out)
        try:
            file.write(text)
            file.flush()
        except BrokenPipeError:  # as the rich console does (`make_console`): one without an errno,
            raise BrokenPipeError from None  # which click passes on to kubegc's exit 141

    def line(self, text: str, style: str | None = None) -> None:
        """`text` as one line (`style` on a terminal)."""
        if self.plain and _plain_line(text):
            self._write(text + "\n")
            return
        # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
        from rich.text import Text

        self.console().print(Text(text, style=style or ""))

    def note(self, text: str) -> None:
        """A note: dim, indented by two."""
        if self.plain and text.strip() == text != "" and _plain_line(text, PIPE_WIDTH - 2):
            self._write(f"  {text}\n")
            return
        # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
        from rich.padding import Padding
        from rich.text import Text

        self.console().print(Padding(Text(text, style="dim"), (0, 0, 0, 2), expand=False))

    def table(self, table: Any) -> None:
        """A rich `Table`, or an `_AlignedTable`."""
        if self.plain and isinstance(table, _AlignedTable):
            lines = table.lines()
            if all(_plain_line(line) for line in lines):
                self._write("".join(f"{line}\n" for line in lines))
                return
        self.console().print(table)


class _AlignedTable:
    """A borderless table drawn as aligned lines (a rich renderable): the columns rich's `Table`
    draws into a file or pipe, where nothing wraps, at a tenth of its cost (~2 ms a row there).
    Each cell is padded to its column's width (terminal cells) and cells are joined by one
    space; the title and header are bold; a row's style applies to the whole line. Nothing is
    cropped here (a console prints it cropped to its width)."""

    def __init__(self, title: str, columns: list[str]) -> None:
        self.title = title
        self.columns = columns
        self.rows: list[tuple[list[str], str | None]] = []

    def add_row(self, *cells: Any, style: str | None = None) -> None:
        self.rows.append(([c.plain if hasattr(c, "plain") else str(c) for c in cells], style))

    def lines(self) -> list[str]:
        """The title, the header and each row, as lines without their line ends."""
        every = [self.columns, *(cells for cells, _ in self.rows)]
        width_of: Callable[[str], int] = len  # a terminal cell per printable ASCII character
        if not all(c.isascii() and c.isprintable() for cells in every for c in cells):
            # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
            from rich.cells import cell_len as width_of

        widths = [width_of(c) for c in self.columns]
        for cells, _ in self.rows:
            widths = [max(w, width_of(c)) for w, c in zip(widths, cells, strict=True)]

        def line(cells: list[str]) -> str:
            padded = [c + " " * (w - width_of(c)) for c, w in zip(cells, widths, strict=True)]
            return " ".join(padded).rstrip()

        return [self.title, *(line(cells) for cells in every)]

    def __rich_console__(self, console: Any, options: Any) -> Any:
        # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
        from rich.segment import Segment

        title, header, *rows = self.lines()
        bold = console.get_style("bold")
        yield Segment(title, bold)
        yield Segment.line()
        yield Segment(header, bold)
        yield Segment.line()
        for text, (_, style) in zip(rows, self.rows, strict=True):
            yield Segment(text, console.get_style(style) if style else None)
            yield Segment.line()


def _table(title: str, layout: Layout, *, wrap: bool = True) -> Any:
    """A borderless rich table on a terminal (long cells fold to its width); into files and
    pipes (`wrap` False) an `_AlignedTable`, the same columns without rich's costly layout."""
    if not wrap:
        return _AlignedTable(title, [col for col, _ in layout.columns])
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    from rich.table import Table

    table = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        box=None,
        header_style="bold",
        pad_edge=False,
        collapse_padding=True,
    )
    for col, wraps in layout.columns:
        if wrap and wraps:
            table.add_column(col, overflow="fold", min_width=7)
        else:
            table.add_column(col, no_wrap=True)
    return table


#: Rows a plan table lists without -v (a node can hold tens of thousands of dead containers;
#: a rich table of them takes minutes and scrolls past every screen); failed ones always are.
PLAN_ROWS = 100


def render_plan(
    plan: Plan[Any],
    layout: Layout | None = None,
    *,
    verbose: int = 0,
    out: IO[str] | None = None,
    limit: int = PLAN_ROWS,
) -> None:
    """A plan (or its results) as a table, then kept objects worth showing, notes and a summary.

    Runtime-supplied text is never parsed as markup (pod names may contain `[`) and control
    characters are escaped. With `verbose`, every kept object is listed with its reason.
    Without it each table lists at most `limit` rows (`--limit`, default `PLAN_ROWS`; 0 = no
    limit) and every failed one, says how many more there are, and the summary line is
    printed before it too.
    """
    layout = layout or LAYOUTS[plan.kind]
    if layout is RESIDUE:
        render_residue(plan, verbose=verbose, out=out)
        return
    out = out or sys.stdout
    wrap = hasattr(out, "isatty") and out.isatty()
    printer = _Printer(out, plain=not wrap)
    acted = any(a.result not in _NOT_ACTED for a in plan.actions)
    title = layout.title + (" (dry run)" if plan.dry_run else "")

    if wrap:
        # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
        from rich.text import Text

    def cells(a: Any) -> list[Any]:
        texts = [safe_text(v) for v in layout.row(a, plan.now)]
        return [Text(t) for t in texts] if wrap else texts  # Text: never parsed as markup

    shown, more = _capped(plan.actions, verbose, limit)
    worth = [k for k in plan.kept if verbose or layout.show_kept(k)]
    shown_kept, more_kept = _capped(worth, verbose, limit)
    if more or more_kept:  # a long table: the totals first, where they are seen
        printer.line(summary_line(plan, layout))
    if plan.actions:
        table = _table(title, layout, wrap=wrap)
        for a in shown:
            held = a.result is Result.HELD_BACK
            table.add_row(*cells(a), style=RESULT_STYLE[a.result] if acted or held else None)
        printer.table(table)
        if more:
            printer.line(f"  {more} {_NOT_LISTED}")
    else:
        printer.line(f"{title}: nothing to remove.", style="bold")
    if shown_kept:
        kept = _table("Kept (not removed)", layout, wrap=wrap)
        for k in shown_kept:
            kept.add_row(*cells(k), style="dim")
        printer.table(kept)
        if more_kept:
            printer.line(f"  {more_kept} {_NOT_LISTED}")
    for note in plan.notes:
        printer.note(safe_text(note))
    printer.line(summary_line(plan, layout))


_NOT_LISTED = "more not listed (--limit 0 or -v lists all; -o json has every one)"


def _capped(rows: list[Any], verbose: int, limit: int = PLAN_ROWS) -> tuple[list[Any], int]:
    """(the rows a table lists, how many it leaves out): every row with `verbose` or a `limit`
    of 0, else the first `limit` and every failed one."""
    if verbose or limit == 0 or len(rows) <= limit:
        return rows, 0
    shown = [a for i, a in enumerate(rows) if i < limit or a.result is Result.FAILED]
    return shown, len(rows) - len(shown)


def render_container_plan(
    plan: Plan[ContainerAction], *, verbose: int = 0, out: IO[str] | None = None
) -> None:
    """The container GC plan as a table (see `render_plan`)."""
    render_plan(plan, CONTAINERS, verbose=verbose, out=out)


def summary_line(plan: Plan[Any], layout: Layout | None = None) -> str:
    """`3 container(s) to remove, 1.2Mi of logs; 5 kept.` before acting, counts after."""
    layout = layout or LAYOUTS[plan.kind]
    s = plan.summary()
    logs = f", {format_bytes(s['bytes_planned'])} of logs" if layout.counts_bytes else ""
    by = s["by_result"]
    held = f", {by['held-back']} held back by a cap" if by["held-back"] else ""
    if plan.dry_run or all(a.result in _NOT_ACTED for a in plan.actions):
        if by["skipped"]:  # (apply's re-checks before acting): what still goes, what not
            planned = sum(a.planned_bytes for a in plan.actions if a.result is Result.PLANNED)
            logs = f", {format_bytes(planned)} of logs" if layout.counts_bytes else ""
            held += f", {by['skipped']} skipped (changed since the plan)"
        going = by["planned"]
        return f"{going} {layout.noun}(s) to remove{logs}{held}; {s['kept']} kept."
    freed = f"; freed {format_bytes(s['bytes_freed'])} of logs" if layout.counts_bytes else ""
    return f"removed {by['removed']}, skipped {by['skipped']}, failed {by['failed']}{held}{freed}."


_NOT_ACTED = (Result.PLANNED, Result.HELD_BACK)


def render_ids(plan: Plan[Any], out: IO[str] | None = None) -> None:
    """`-q`: the IDs of the plan's actions, one a line (removed ones only after acting)."""
    out = out or sys.stdout
    acted = not plan.dry_run
    for a in plan.actions:
        if (not acted and a.result is Result.PLANNED) or a.result is Result.REMOVED:
            out.write(safe_text(a.id) + "\n")
