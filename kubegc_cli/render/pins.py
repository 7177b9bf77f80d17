"""`kubegc images pin|unpin` shown: the images a pin plan changes and those it leaves, as a
table (IDs whole), JSON or YAML, or `-o name`."""

from __future__ import annotations

from typing import IO

from kubegc_cli.core.pins import DONE, PLANNED, STILL_PINNED, PinAction, PinPlan
from kubegc_cli.core.units import format_bytes, safe_text
from kubegc_cli.render.plan import dump_document
from kubegc_cli.render.table import Column, Grid, Screen, View


def pinned_cell(a: PinAction) -> str:
    """The PINNED cell: what the runtime reported once acted on (`pinned_after`), else as
    listed for the plan; `?` for an image acted on the runtime said nothing of."""
    if a.pinned_after is not None:
        return "yes" if a.pinned_after else "no"
    if a.result in (DONE[a.op], STILL_PINNED):
        return "?"
    return "yes" if a.image.pinned else "no"


def _row(a: PinAction, acted: bool) -> list[str]:
    tag = a.image.repo_tags[0] if a.image.repo_tags else "<none>"
    if a.result == PLANNED:
        result = "planned" if not acted else "not attempted"
    else:
        result = f"{a.result.value}: {a.error}" if a.error else a.result.value
    return [
        a.image.id.removeprefix("sha256:")[:13],
        safe_text(tag),
        format_bytes(a.image.size),
        pinned_cell(a),
        safe_text(a.reason),
        safe_text(result),
        safe_text(" ".join([*a.image.repo_tags, *a.image.repo_digests]) or "-"),
    ]


def render_pins(plan: PinPlan, output: str, *, out: IO[str] | None = None,
                view: View | None = None, asking: bool = False,
                quiet: bool = False) -> None:  # fmt: skip
    """Print `plan` as `output` says: `json`/`yaml` (its `to_dict`), `name` (`image/<id>` of
    each action), else with `quiet` (`-q`) the IDs alone, as `render.plan.render_ids` (the
    images to change in a dry run; once acted on, those pinned or unpinned), else a table
    of the actions and the matched images left as they are (the PINNED column as the
    runtime reports each image: once acted on, its answer then, `pinned_cell`), and a
    summary line (`asking`: the plan a person is about to be asked about)."""
    if output in ("json", "yaml"):
        dump_document(plan.to_dict(), output)
        return
    screen = Screen(out, view)
    if output == "name":
        for a in plan.actions:
            screen.line(f"image/{safe_text(a.id)}")
        return
    if quiet:
        shown = PLANNED if plan.dry_run else DONE[plan.op]
        for a in plan.actions:
            if a.result == shown:
                screen.line(safe_text(a.id))
        return
    acted = not plan.dry_run
    verb = "Pin" if plan.op == "pin" else "Unpin"
    grid = Grid(f"{verb} images ({plan.source})" if plan.source else f"{verb} images", [
        Column("IMAGE", "id"), Column("TAG"), Column("SIZE", "num"), Column("PINNED", "word"),
        Column("REASON"), Column("RESULT"), Column("TAGS", wide=True),
    ])  # fmt: skip
    for a in [*plan.actions, *plan.kept]:
        grid.add(_row(a, acted))
    if grid.rows:
        screen.grid(grid)
    for note in plan.notes:
        screen.note(safe_text(note))
    counts = plan.counts()
    done = counts.get(DONE[plan.op], 0)
    if asking:
        summary = (f"{len(plan.actions)} image(s) to be {DONE[plan.op]}, "
                   f"{len(plan.kept)} left as they are")  # fmt: skip
    elif acted:
        still = counts.get(STILL_PINNED.value, 0)
        held = f", {still} still pinned by another pin" if still else ""
        summary = (f"{done} image(s) {DONE[plan.op]}{held}, {counts['skipped']} skipped, "
                   f"{counts['failed']} failed, {len(plan.kept)} left as they are")  # fmt: skip
    else:
        summary = (f"dry run: {len(plan.actions)} image(s) would be {DONE[plan.op]}, "
                   f"{len(plan.kept)} left as they are")  # fmt: skip
    screen.line(summary)
