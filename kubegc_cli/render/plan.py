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
    expected_bytes,
)
from kubegc_cli.core.units import NS_PER_SECOND, format_bytes, format_duration, safe_text
from kubegc_cli.node.outfile import yaml_text
from kubegc_cli.render.table import Column, Grid, Screen, View

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
        out.write(yaml_text(doc))
    out.flush()  # a reader that closed the pipe is seen here (exit 141), not at exit


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
    return [
        _short(c.id),
        pod,
        c.container_name,
        str(c.attempt),
        c.state.value,
        format_duration((now - c.created_at) / NS_PER_SECOND),
        a.rule,
        _container_bytes(a),
        _result_text(a),
        "-" if a.layer_bytes is None else format_bytes(a.layer_bytes),
        "-" if c.log_bytes is None else format_bytes(c.log_bytes),
        c.image or c.image_ref or "-",
        c.pod_uid or "-",
    ]


def _container_bytes(a: ContainerAction) -> str:
    """A container row's EXPECTED cell: its writable layer and logs (`planned_bytes`), "-"
    when neither is known."""
    if a.container.log_bytes is None and a.layer_bytes is None:
        return "-"
    return format_bytes(a.planned_bytes)


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
        s.uid or "-",
    ]


@dataclass(frozen=True)
class Layout:
    """How one kind of plan is shown: title, noun, columns (name, wraps) and a row builder.

    `show_kept` picks the kept objects shown without -v; `counts_bytes` adds the bytes
    expected and measured to the summary line (`summary_line`); `footer` gives the tables
    printed after the notes, before the summary line (default: the filesystems measured,
    once a run measured them: `filesystems_grid`). How the columns give way on a narrow terminal is
    their `Column.kind` (`render.table.grid_lines`).
    """

    title: str
    noun: str
    columns: tuple[Column, ...]
    row: Callable[[Any, int], list[str]]
    show_kept: Callable[[Any], bool]
    counts_bytes: bool
    footer: Callable[[Any], list[Grid]] | None = None


CONTAINERS = Layout(
    "Container GC",
    "container",
    (
        Column("CONTAINER", "id"),
        Column("POD"),
        Column("NAME"),
        Column("ATT", "num"),
        Column("STATE", "word"),
        Column("AGE", "num"),
        Column("REASON"),
        Column("EXPECTED", "num"),
        Column("RESULT"),
        Column("LAYER", "num", wide=True),
        Column("LOG", "num", wide=True),
        Column("IMAGE", wide=True),
        Column("POD UID", "id", wide=True),
    ),
    _container_row,
    lambda k: k.rule == "guard-newest-record",
    True,
)
SANDBOXES = Layout(
    "Sandbox GC",
    "sandbox",
    (
        Column("SANDBOX", "id"),
        Column("POD"),
        Column("ATT", "num"),
        Column("STATE", "word"),
        Column("AGE", "num"),
        Column("CONTAINERS", "num"),
        Column("REASON"),
        Column("RESULT"),
        Column("POD UID", "id", wide=True),
    ),
    _sandbox_row,
    lambda k: False,
    False,
)


def _log_row(a: LogAction, now: int) -> list[str]:
    return [
        a.kind,
        a.path,
        "-" if a.kind == "log-symlink" else format_bytes(a.planned_bytes),
        a.rule,
        _result_text(a),
    ]


LOGS = Layout(
    "Log GC",
    "log path",
    (
        Column("KIND", "word"),
        Column("PATH"),
        Column("EXPECTED", "num"),
        Column("REASON"),
        Column("RESULT"),
    ),
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
        size = _container_bytes(a)
    elif isinstance(a, SandboxAction):
        sb = a.sandbox
        obj = f"{_short(sb.id)} #{sb.attempt}"
        pod, state, born, size = f"{sb.namespace}/{sb.name}", sb.state.value, sb.created_at, "-"
    else:
        obj, pod, state, born = a.path, "-", "-", 0
        size = "-" if a.kind == "log-symlink" else format_bytes(a.planned_bytes)
    age = format_duration((now - born) / NS_PER_SECOND) if born else "-"
    return [a.kind, obj, pod, state, age, a.rule, size, _result_text(a)]


ALL = Layout(
    "GC (containers, sandboxes, logs)",
    "object",
    (
        Column("KIND", "word"),
        Column("OBJECT"),
        Column("POD"),
        Column("STATE", "word"),
        Column("AGE", "num"),
        Column("REASON"),
        Column("EXPECTED", "num"),
        Column("RESULT"),
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
        a.repull.summary if a.repull else "-",
        _result_text(a),
        " ".join([*a.image.repo_tags, *a.image.repo_digests]) or "-",
        ("yes" if a.repull.digest else "no") if a.repull else "-",
        (a.repull.registry or "-") if a.repull else "-",
        a.repull.credentials if a.repull else "-",
    ]


IMAGES = Layout(
    "Image GC",
    "image",
    (
        Column("IMAGE", "id"),
        Column("TAG"),
        Column("EXPECTED", "num"),
        Column("SEEN", "num"),
        Column("LAST USED", "num"),
        Column("REASON"),
        Column("REPULL"),
        Column("RESULT"),
        Column("TAGS", wide=True),
        Column("DIGEST", "word", wide=True),
        Column("REGISTRY", "word", wide=True),
        Column("CREDENTIALS", "word", wide=True),
    ),
    _image_row,
    # in-use and not-needed images are many and self-explanatory; protected ones (the sandbox
    # image, --keep, pinned), MinAge and images that cannot be pulled again are what an
    # operator asks "why not?" about
    lambda k: k.rule in ("min-age", "protected", "pinned", "unpullable"),
    True,
)


def _reclaim_row(a: Any, now: int) -> list[str]:
    """One row of `reclaim`: kind, ID, object, reason, bytes expected, result. IDs stay whole
    in a column of their own: a user copies them."""
    ident, obj, size = "-", "", format_bytes(a.planned_bytes)
    kind = a.kind
    if isinstance(a, ContainerAction):
        c = a.container
        ident, obj = _short(c.id), f"{c.pod_namespace}/{c.pod_name} {c.container_name}#{c.attempt}"
        size = _container_bytes(a)
    elif isinstance(a, SandboxAction):
        sb = a.sandbox
        ident, obj, size = _short(sb.id), f"{sb.namespace}/{sb.name} #{sb.attempt}", "-"
    elif isinstance(a, ImageAction):
        ident = _short(a.image.id.removeprefix("sha256:"))
        obj = a.image.repo_tags[0] if a.image.repo_tags else "<none>"
    elif isinstance(a, LogAction):
        obj = a.path
        size = "-" if a.kind == "log-symlink" else size
    else:  # a residue finding
        kind, obj = a.type, a.target
        size = "-" if a.bytes is None else size
    return [kind, ident, obj, a.rule, size, _result_text(a)]


def reclaim_footer(plan: Any) -> list[Grid]:
    """The totals of a reclaim plan by kind (from its rows: `by_kind`) and its filesystems,
    before and after (measured: statvfs: `filesystems_grid`), as two tables."""
    kinds = Grid("", [Column("BY KIND", "word"), Column("OBJECTS", "num"),
                      Column("EXPECTED", "num"), Column("HELD BACK", "num")])  # fmt: skip
    for k in plan.by_kind():
        if k["count"] or k["held_back"]:
            kinds.add([k["kind"], str(k["count"]), format_bytes(k["bytes"]), str(k["held_back"])])
    return [kinds, filesystems_grid(plan)]


def filesystems_grid(plan: Any) -> Grid:
    """The filesystems a run touches (`Plan.filesystems`): capacity, available before and
    after acting, regained (measured by statvfs; "-" until measured), path."""
    disk = Grid("", [Column("FILESYSTEM", "word"), Column("CAPACITY", "num"),
                     Column("AVAIL BEFORE", "num"), Column("AVAIL AFTER", "num"),
                     Column("REGAINED", "num"), Column("PATH")])  # fmt: skip
    for f in plan.filesystems:
        after, regained = f["available_after"], f["regained"]
        disk.add(
            [
                ",".join(f["roles"]),
                format_bytes(f["capacity"]),
                format_bytes(f["available_before"]),
                "-" if after is None else format_bytes(after),
                "-" if regained is None else format_bytes(regained),
                safe_text(f["path"]),
            ]
        )
    return disk


def _measured_footer(plan: Any) -> list[Grid]:
    """The default footer: the filesystems once a run measured them (none before)."""
    if any(f.get("regained") is not None for f in plan.filesystems):
        return [filesystems_grid(plan)]
    return []


RECLAIM = Layout(
    "Reclaim (containers and sandboxes, logs and residue, then images)",
    "object",
    (
        Column("KIND", "word"),
        Column("ID", "id"),
        Column("OBJECT"),
        Column("REASON"),
        Column("BYTES", "num"),
        Column("RESULT"),
    ),
    _reclaim_row,
    lambda k: (
        k.kind != "finding"
        and k.rule in ("guard-newest-record", "mount-point", "min-age", "protected", "pinned")
    ),
    True,
    reclaim_footer,
)


def _evicted_pod_row(a: PodAction, now: int) -> list[str]:
    owner = f"{a.owner_kind}/{a.owner_name}" if a.owner_kind else "-"
    age = format_duration((now - a.evicted_at) / NS_PER_SECOND) if a.evicted_at else "-"
    message = a.message or "-"
    result = f"kept: {a.reason}" if a.result is Result.KEPT else _result_text(a)
    return [a.namespace, a.name, owner, age, message, result]


EVICTED_PODS = Layout(
    "Evicted pods",
    "evicted pod",
    (
        Column("NAMESPACE", "word"),
        Column("POD"),
        Column("OWNER"),
        Column("EVICTED", "num"),
        Column("MESSAGE"),
        Column("RESULT"),
    ),
    _evicted_pod_row,
    lambda k: False,
    False,
)


def _finding_row(a: Finding, now: int) -> list[str]:
    """One residue finding: object, size, safe, evidence (and why not safe), what `residue
    clean` does (nothing when not safe), what an operator could run instead, result."""
    size = "-" if a.bytes is None else format_bytes(a.bytes)
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
        Column("OBJECT"),
        Column("SIZE", "num"),
        Column("SAFE", "word"),
        Column("EVIDENCE"),
        Column("CLEAN DOES", whole=True),
        Column("BY HAND", whole=True),
        Column("RESULT"),
    ),
    _finding_row,
    lambda k: True,
    True,
)
#: Rows shown per finding type without -v (a node may hold thousands of dead containers).
RESIDUE_ROWS = 20


def render_residue(
    plan: Plan[Any], *, verbose: int = 0, out: IO[str] | None = None, view: View | None = None
) -> None:
    """A residue plan: one table per finding type (its safe findings first), each closed by
    its totals (count, bytes, how many safe); then the notes that are not per-type totals,
    and a summary line. Without `verbose` at most `RESIDUE_ROWS` rows per type are listed,
    with how many more there are. The object (a path, an ID) is never cut; evidence and
    actions move under their row when the terminal is narrow (`render.table`).
    """
    screen = Screen(out, view)
    findings = [*plan.actions, *plan.kept]
    types: list[str] = list(getattr(plan, "types", ()))
    for f in findings:
        if f.type not in types:
            types.append(f.type)
    acted = any(f.result not in (Result.PLANNED, Result.KEPT) for f in findings)
    scan_only = getattr(plan, "scan_only", False)
    suffix = " (dry run)" if plan.dry_run and plan.actions and not scan_only else ""
    if not findings:
        screen.line(f"{RESIDUE.title}{suffix}: nothing found.", style="bold")
    for t in types:
        group = [f for f in findings if f.type == t]
        if not group:
            continue
        shown = group if verbose else group[:RESIDUE_ROWS]
        wanted = [
            i
            for i, col in enumerate(RESIDUE.columns)
            if (col.name != "RESULT" or acted)
            and (col.name != "BY HAND" or any(f.manual for f in shown))
        ]
        grid = Grid(f"{t}{suffix}", [RESIDUE.columns[i] for i in wanted])
        for f in shown:
            cells = RESIDUE.row(f, plan.now)
            style = RESULT_STYLE[f.result] if acted else (None if f.safe else "dim")
            grid.add([safe_text(cells[i]) for i in wanted], style)
        screen.grid(grid)
        more = len(group) - len(shown)
        sized = sum(f.bytes or 0 for f in group)
        safe = [f for f in group if f.safe and f.result is not Result.SKIPPED]
        size = format_bytes(sized) if any(f.bytes is not None for f in group) else "size n/a"
        line = (
            f"  {t}: {len(group)} finding(s), {size}; {len(safe)} safe to clean "
            f"({format_bytes(sum(f.planned_bytes for f in safe))})"
        )
        if more:
            line += f"; {more} more not listed (-v lists all)"
        screen.line(line, style="bold")
    empty = [t for t in types if not any(f.type == t for f in findings)]
    if findings and empty:
        screen.line(f"  nothing found: {', '.join(empty)}")
    for note in plan.notes:
        if any(note.startswith(f"{t}: ") for t in types):
            continue  # the per-type totals, shown under each table
        screen.note(safe_text(note))
    screen.line(residue_summary(plan))


def residue_summary(plan: Plan[Any]) -> str:
    """`5 finding(s), 1.2Gi; 2 safe to clean (40Ki).` before acting; results after."""
    findings = [*plan.actions, *plan.kept]
    total = sum(f.bytes or 0 for f in findings)
    if plan.dry_run or all(a.result is Result.PLANNED for a in plan.actions):
        going = [a for a in plan.actions if a.result is Result.PLANNED]
        skipped = sum(1 for a in plan.actions if a.result is Result.SKIPPED)
        changed = f"; {skipped} skipped (changed since the plan)" if skipped else ""
        return (
            f"{len(findings)} finding(s), {format_bytes(total)}; {len(going)} safe to "
            f"clean ({format_bytes(expected_bytes(going))}){changed}; "
            f"{len(plan.kept)} not safe."
        )
    by = plan.counts()
    return (
        f"removed {by['removed']}, skipped {by['skipped']}, failed {by['failed']}; "
        f"{bytes_said(plan.summary())}; {len(plan.kept)} not safe, left alone."
    )


LAYOUTS = {
    "ResiduePlan": RESIDUE,
    "EvictedPodPlan": EVICTED_PODS,
    "ImageGCPlan": IMAGES,
    "ContainerGCPlan": CONTAINERS,
    "SandboxGCPlan": SANDBOXES,
    "LogGCPlan": LOGS,
    "GCPlan": ALL,
    "ReclaimPlan": RECLAIM,
}


#: Rows a plan table lists without -v (a node can hold tens of thousands of dead containers;
#: a table of them scrolls past every screen); failed ones always are.
PLAN_ROWS = 100


def render_plan(
    plan: Plan[Any],
    layout: Layout | None = None,
    *,
    verbose: int = 0,
    out: IO[str] | None = None,
    limit: int = PLAN_ROWS,
    view: View | None = None,
) -> None:
    """A plan (or its results) as a table, then kept objects worth showing, notes and a summary.

    Tables are laid out by `render.table` (no number or ID cut at any width; into a pipe or
    file each row is one whole line); `view` without headers (`--no-headers`) writes the rows
    alone: no title, header line, kept object, note, footer or summary. Runtime-supplied text
    is never parsed as markup (pod names may contain `[`) and control characters are escaped.
    With `verbose`, every kept object is listed with its reason. Without it each table lists at
    most `limit` rows (`--limit`, default `PLAN_ROWS`; 0 = no limit) and every failed one,
    says how many more there are, and the summary line is printed before it too.
    """
    layout = layout or LAYOUTS[plan.kind]
    if layout is RESIDUE:
        render_residue(plan, verbose=verbose, out=out, view=view)
        return
    screen = Screen(out, view)
    acted = any(a.result not in _NOT_ACTED for a in plan.actions)
    title = layout.title + (" (dry run)" if plan.dry_run else "")

    shown, more = _capped(plan.actions, verbose, limit)
    worth = [k for k in plan.kept if verbose or layout.show_kept(k)]
    shown_kept, more_kept = _capped(worth, verbose, limit)
    unlisted = len(plan.kept) - len(shown_kept)
    prose = screen.view.headers  # --no-headers: the rows alone, for a script to read
    summary = summary_line(plan, layout, unlisted_kept=unlisted)
    if (more or more_kept) and prose:  # a long table: the totals first, where they are seen
        screen.line(summary)

    def style_of(a: Any) -> str | None:
        return RESULT_STYLE[a.result] if acted or a.result is Result.HELD_BACK else None

    shows = [screen.view.wide or not c.wide for c in layout.columns]

    def grid(name: str, rows: list[Any], style: Callable[[Any], str | None]) -> Grid:
        g = Grid(name, layout.columns)
        for a in rows:  # (a column -o wide alone shows is not escaped for nothing)
            cells = layout.row(a, plan.now)
            g.add(
                [safe_text(v) if on else "" for v, on in zip(cells, shows, strict=True)], style(a)
            )
        return g

    if not prose:  # (--no-headers: the plan's own rows, none a script may mistake)
        if plan.actions:
            screen.grid(grid(title, shown, style_of))
        return
    if plan.actions:
        screen.grid(grid(title, shown, style_of))
        if more:
            screen.line(f"  {more} {_NOT_LISTED}")
    else:
        screen.line(f"{title}: nothing to remove.", style="bold")
    if shown_kept:
        screen.grid(grid("Kept (not removed)", shown_kept, lambda k: "dim"))
        if more_kept:
            screen.line(f"  {more_kept} {_NOT_LISTED}")
    for note in plan.notes:
        screen.note(safe_text(note))
    for extra in (layout.footer or _measured_footer)(plan):
        screen.line("")
        screen.grid(extra)
    screen.line(summary, style="bold")


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


def summary_line(plan: Plan[Any], layout: Layout | None = None, *, unlisted_kept: int = 0) -> str:
    """`3 container(s) to remove, 1.2Mi expected; 5 kept.` before acting; after it the counts,
    the bytes expected of what was removed and what the filesystems regained (`bytes_said`).
    Every figure is `Plan.summary`'s, summed from the rows the table lists; `unlisted_kept`
    of the kept objects are in no table (listed with -v), and the line says so."""
    layout = layout or LAYOUTS[plan.kind]
    s = plan.summary()
    by = s["by_result"]
    targeted = any(a.error.startswith("held back: ") for a in plan.actions)  # (`--until`)
    by_what = "the target" if targeted else "a cap"
    held = f", {by['held-back']} held back by {by_what}" if by["held-back"] else ""
    if plan.dry_run or all(a.result in _NOT_ACTED for a in plan.actions):
        expected = f", {expected_said(s)}" if layout.counts_bytes else ""
        if by["skipped"]:  # (apply's re-checks before acting): what still goes, what not
            held += f", {by['skipped']} skipped (changed since the plan)"
        going = by["planned"]
        kept = f"{s['kept']} kept"
        if 0 < unlisted_kept < s["kept"]:
            kept += f" (-v lists {unlisted_kept} more)"
        elif unlisted_kept:
            kept += " (listed with -v)"
        return f"{going} {layout.noun}(s) to remove{expected}{held}; {kept}."
    done = f"; {bytes_said(s)}" if layout.counts_bytes else ""
    return f"removed {by['removed']}, skipped {by['skipped']}, failed {by['failed']}{held}{done}."


def expected_said(summary: dict[str, Any]) -> str:
    """`1.2Mi expected` from a `Plan.summary()`; `about 1.2Mi expected (image sizes as the
    runtime reports them)` when the figure is an estimate (images: `ESTIMATED_KINDS`)."""
    if summary["bytes_expected_is_estimate"]:
        return (
            f"about {format_bytes(summary['bytes_expected'])} expected (image sizes as the "
            "runtime reports them)"
        )
    return f"{format_bytes(summary['bytes_expected'])} expected"


def bytes_said(summary: dict[str, Any]) -> str:
    """`1.2Mi expected, 1.1Mi regained (measured)` from a `Plan.summary()` after acting (the
    filesystems not measured: "not measured")."""
    measured = summary["bytes_measured"]
    regained = (
        "not measured" if measured is None else f"{format_bytes(measured)} regained (measured)"
    )
    return f"{expected_said(summary)}, {regained}"


_NOT_ACTED = (Result.PLANNED, Result.HELD_BACK)


def render_names(plan: Plan[Any], out: IO[str] | None = None) -> None:
    """`-o name`: `KIND/ID` of each object the table lists first, one a line, as `kubectl get
    -o name` writes them: what a dry run would remove (every finding of a residue scan), what
    was removed after acting. KIND is the action's kind (a residue finding's type)."""
    out = out or sys.stdout
    rows = [*plan.actions, *plan.kept] if getattr(plan, "scan_only", False) else plan.actions
    acted = not plan.dry_run and not getattr(plan, "scan_only", False)
    for a in rows:
        if acted and a.result is not Result.REMOVED:
            continue
        if not acted and a.result not in (Result.PLANNED, Result.KEPT):
            continue
        kind = getattr(a, "type", "") or a.kind
        out.write(f"{safe_text(kind)}/{safe_text(a.id)}\n")


def render_ids(plan: Plan[Any], out: IO[str] | None = None) -> None:
    """`-q`: the IDs of the plan's actions, one a line (removed ones only after acting)."""
    out = out or sys.stdout
    acted = not plan.dry_run
    for a in plan.actions:
        if (not acted and a.result is Result.PLANNED) or a.result is Result.REMOVED:
            out.write(safe_text(a.id) + "\n")
