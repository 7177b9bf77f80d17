"""The shared table layout (`render.table.grid_lines`): at any width no number or ID is cut,
no line is wider than the width, and a long text cell never narrows its neighbours."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubegc_cli.core.model import Image, NodeSnapshot
from kubegc_cli.core.plan import ImageAction, Plan, Result
from kubegc_cli.core.residue import POD_DIR, Finding
from kubegc_cli.render.plan import residue_summary, summary_line
from kubegc_cli.render.table import Column, Grid, Screen, View, grid_lines
from tests.unit.factories import NOW, ctr
from tests.unit.memorycri import run_cli

WORD = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz/-._"), min_size=1, max_size=14)
SHORT = st.text(st.sampled_from("0123456789abcdef.KMGiB%-"), min_size=1, max_size=12)
TEXT = st.lists(WORD, min_size=1, max_size=30).map(" ".join)
KINDS = st.sampled_from(["id", "num", "word", "text", "decor"])


@st.composite
def grids(draw: st.DrawFn) -> Grid:
    kinds = ["id", *draw(st.lists(KINDS, min_size=1, max_size=8))]
    cols = [Column(f"C{i}" + "X" * draw(st.integers(0, 8)), k) for i, k in enumerate(kinds)]  # type: ignore[arg-type]
    grid = Grid(draw(st.sampled_from(["", "Title"])), cols)
    for _ in range(draw(st.integers(0, 5))):
        grid.add([draw(TEXT if c.kind in ("text", "word") else SHORT) for c in cols])
    return grid


@given(grids(), st.integers(40, 220))
def test_no_line_is_wider_than_the_width_and_every_number_and_id_is_whole(
    grid: Grid, width: int
) -> None:
    lines = [text for text, _ in grid_lines(grid, width)]
    assert all(len(line) <= width for line in lines), "\n".join(lines)
    words = {w for line in lines for w in line.split()}
    for cells, _ in grid.rows:
        for c, cell in zip(grid.columns, cells, strict=True):
            if c.kind in ("id", "num"):
                assert cell in words, (cell, "\n".join(lines))
            elif c.kind != "decor":  # text and words: every word shown, in order
                joined = " ".join(lines)
                assert all(w in joined for w in cell.split()), (cell, "\n".join(lines))


@given(grids())
def test_into_a_pipe_each_row_is_one_whole_line(grid: Grid) -> None:
    lines = [text for text, _ in grid_lines(grid, None)]
    rows = lines[(1 if grid.title else 0) + 1 :]
    assert len(rows) == len(grid.rows)
    for line, (cells, _) in zip(rows, grid.rows, strict=True):
        assert all(cell in line for cell in cells)


def test_a_long_text_cell_moves_under_its_row_and_leaves_its_neighbours_whole() -> None:
    """One finding with a 600-character evidence: its row keeps the object, size and flag on
    one line; the evidence takes the lines under it at the full width, not a narrow column."""
    grid = Grid("residue", [Column("OBJECT"), Column("SIZE", "num"), Column("SAFE", "word"),
                            Column("EVIDENCE")])  # fmt: skip
    evidence = " ".join(["the pod is in no pod source and the runtime knows it not"] * 10)
    grid.add(["/var/lib/kubelet/pods/1f2e3d4c-aaaa-bbbb-cccc-0123456789ab", "23.4Gi", "yes",
              evidence])  # fmt: skip
    lines = [text for text, _ in grid_lines(grid, 80)]
    assert lines[0] == "residue"
    assert lines[1].split() == ["OBJECT", "SIZE", "SAFE"] and lines[2].strip() == "EVIDENCE"
    assert lines[3].split() == [
        "/var/lib/kubelet/pods/1f2e3d4c-aaaa-bbbb-cccc-0123456789ab", "23.4Gi", "yes"
    ]  # fmt: skip
    assert len(lines) <= 4 + len(evidence) // 60 + 1  # ~76 columns a line, not a thin column
    assert " ".join(ln.strip() for ln in lines[4:]) == evidence


def test_a_command_and_a_long_path_stay_one_line_each_for_the_terminal_to_soft_wrap() -> None:
    """What a user copies is never broken by kubegc: a `whole` cell (a command) moved under
    its row and a word longer than a line each take one line, which the terminal soft-wraps
    (a copy from the screen joins it again); prose around them still wraps at spaces."""
    command = "kubegc gc all --pods-file /var/lib/kubegc/a-long-pods-file-name.json -n kube-system"
    path = "/var/lib/kubelet/pods/" + "d" * 80
    grid = Grid("", [Column("OBJECT", "id"), Column("SIZE", "num"), Column("EVIDENCE"),
                     Column("BY HAND", whole=True)])  # fmt: skip
    grid.add(["abc", "1Ki", f"found at {path} and nowhere else", command])
    lines = [text.strip() for text, _ in grid_lines(grid, 60)]
    assert f"BY HAND: {command}" in lines and path in lines
    assert "EVIDENCE: found at" in lines


def test_when_even_the_numbers_do_not_fit_each_row_is_a_block() -> None:
    cols = [Column("SIGNAL", "id"), *(Column(f"N{i}", "num") for i in range(6))]
    grid = Grid("Eviction thresholds", cols)
    grid.add(["allocatableMemory.available", *(f"{i}023.9Gi" for i in range(6))])
    lines = [text for text, _ in grid_lines(grid, 60)]
    assert lines == ["Eviction thresholds", "allocatableMemory.available",
                     *(f"  N{i}:  {i}023.9Gi" for i in range(6))]  # fmt: skip


def test_a_nameless_cell_in_a_block_gets_no_label() -> None:
    """A column with no header (a figure beside another) is its value alone in a block, not
    `:  value`."""
    cols = [Column("POD", "id"), *(Column(f"N{i}", "num") for i in range(5)), Column("", "word")]
    grid = Grid("Pods", cols)
    grid.add(["ns/a-pod-with-a-long-name", *(f"{i}023.9Gi" for i in range(5)), "deleted"])
    lines = [text for text, _ in grid_lines(grid, 40)]
    assert lines[-1] == "       deleted" and not any(":  deleted" in x for x in lines)


def test_wide_columns_show_only_with_wide_and_no_headers_drops_title_and_header() -> None:
    grid = Grid("T", [Column("A", "id"), Column("B", "num"), Column("FULL", "id", wide=True)])
    grid.add(["a", "1", "a-full-id"])
    assert [t for t, _ in grid_lines(grid, None)] == ["T", "A  B", "a  1"]
    assert [t for t, _ in grid_lines(grid, None, View(wide=True))][1:] == [
        "A  B  FULL", "a  1  a-full-id"
    ]  # fmt: skip
    assert [t for t, _ in grid_lines(grid, None, View(headers=False))] == ["a  1"]


def test_a_screen_on_a_pipe_writes_plain_text_whatever_its_length() -> None:
    out = io.StringIO()
    screen = Screen(out)
    assert screen.width is None
    long = "x " * 400
    screen.line(long)
    screen.note(long)
    assert out.getvalue() == f"{long}\n  {long}\n"


# --- the command line: -o wide, -o name, --no-headers, and headlines from their rows --------


def _snapshot(tmp_path: Path) -> list[str]:
    """Options planning `gc containers` from a snapshot: pod u1's attempts 0-2 exited (0 and 1
    beyond MaxPerPodContainer), with logs."""
    cs = [ctr(f"{i:064x}", uid="u1", attempt=i, age_s=900 - i, log_bytes=1000 * (i + 1))
          for i in range(3)]  # fmt: skip
    f = tmp_path / "s.json"
    f.write_text(json.dumps(NodeSnapshot(captured_at=NOW, containers=tuple(cs)).to_dict()))
    return ["--snapshot", str(f), "--state-dir", str(tmp_path / "st"), "--pod-source", "none"]


def test_o_name_lists_kind_slash_id_of_what_the_plan_removes(tmp_path: Path) -> None:
    code, out, err = run_cli([*_snapshot(tmp_path), "gc", "containers", "-o", "name"])
    assert code == 0, err
    assert out.splitlines() == [f"container/{0:064x}", f"container/{1:064x}"]


def test_no_headers_writes_a_plans_rows_alone(tmp_path: Path) -> None:
    """`--no-headers`, as kubectl's: the rows alone, for a script (no title, header line,
    note or summary); with nothing to remove, nothing."""
    code, out, err = run_cli([*_snapshot(tmp_path), "gc", "containers", "--no-headers"])
    assert code == 0, err
    lines = out.splitlines()
    assert [ln.split()[0] for ln in lines] == [f"{0:064x}"[:13], f"{1:064x}"[:13]]
    assert "CONTAINER" not in out and "Container GC" not in out and "to remove" not in out
    code, out, err = run_cli([*_snapshot(tmp_path), "-v", "gc", "containers", "--no-headers"])
    assert [ln.split()[0] for ln in out.splitlines()] == [f"{0:064x}"[:13], f"{1:064x}"[:13]]
    assert "kept" not in out  # no kept object: a script reading the rows takes only these
    code, out, err = run_cli([*_snapshot(tmp_path), "gc", "sandboxes", "--no-headers"])
    assert (code, out) == (0, ""), err


def test_o_wide_adds_the_hidden_columns(tmp_path: Path) -> None:
    _, table, _ = run_cli([*_snapshot(tmp_path), "gc", "containers"])
    code, wide, err = run_cli([*_snapshot(tmp_path), "gc", "containers", "-o", "wide"])
    assert code == 0, err
    assert "POD UID" not in table and "POD UID" in wide.splitlines()[1]
    assert all(" u1" in ln for ln in wide.splitlines()[2:4])


@pytest.mark.parametrize("command", [["df"], ["evict", "check"], ["memory", "available"]])
def test_o_name_on_a_command_that_lists_no_objects_is_one_line_exit_2(
    tmp_path: Path, command: list[str]
) -> None:
    code, out, err = run_cli(["--host-root", str(tmp_path), *command, "-o", "name"])
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and "'name'" in err and command[0] in err


def test_a_residue_headline_counts_only_what_still_goes() -> None:
    """A saved residue plan re-checked (`apply --dry-run`) with findings changed since: the
    headline counts and sums the ones still planned, and names the skipped ones apart."""
    plan: Plan[Finding] = Plan(kind="ResiduePlan", policy={}, now=NOW)
    for i, result in enumerate([Result.PLANNED, Result.SKIPPED, Result.SKIPPED]):
        f = Finding(POD_DIR, f"/var/lib/kubelet/pods/{i}", "e", 1 << (20 + i), True, "rm -r")
        f.result = result
        plan.actions.append(f)
    plan.dry_run = True
    assert residue_summary(plan) == (
        "3 finding(s), 7Mi; 1 safe to clean (1Mi); 2 skipped (changed since the plan); 0 not safe."
    )


def test_the_image_gc_headline_has_its_byte_total() -> None:
    plan: Plan[ImageAction] = Plan(kind="ImageGCPlan", policy={}, now=NOW)
    for i in range(2):
        plan.actions.append(
            ImageAction(Image(f"sha256:{i:064x}", size=(i + 1) << 30), NOW, 0, "unused", "r")
        )
    plan.dry_run = True
    assert summary_line(plan).startswith(
        "2 image(s) to remove, about 3Gi expected (image sizes as the runtime reports them)"
    )
