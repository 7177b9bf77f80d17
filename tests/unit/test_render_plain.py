"""Plan tables into a file or pipe are written without rich where rich would write the same
text: these tests hold the two equal, byte for byte, and check that a dry run into a pipe does
not import rich at all."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubegc_cli.core.plan import ContainerAction, Plan, Result
from kubegc_cli.render import plan as render
from kubegc_cli.render.plan import render_plan
from kubegc_cli.render.table import _writes_plain
from tests.unit.factories import NOW, ctr
from tests.unit.faultcri import FaultCri, synthetic_inventory

#: Plain ASCII mostly, with some of what sends a line through rich: wide and combining
#: characters, controls, long runs, blank notes.
TEXT = st.text(
    st.characters(codec="ascii") | st.sampled_from(["界", "é", "\u0301", "\t", " ", "[", "\x1b"]),
    max_size=12,
) | st.text(st.sampled_from("ab "), min_size=190, max_size=230)


def _plan(rows: list[tuple[str, str, str]], notes: list[str], n_kept: int) -> Plan[Any]:
    plan: Plan[ContainerAction] = Plan(kind="ContainerGCPlan", policy={}, now=NOW)
    for i, (pod, name, result) in enumerate(rows):
        c = ctr(f"c{i:013d}", uid=f"u{i % 3}", name=name, attempt=i, pod=pod, log_bytes=i * 999)
        a = ContainerAction(c, "max-per-pod-container", "older attempt")
        a.result = Result(result)
        a.error = "refused" if a.result is Result.FAILED else ""
        plan.actions.append(a)
    for i in range(n_kept):
        plan.kept.append(
            ContainerAction(ctr(f"k{i:013d}", name="kept"), "guard-newest-record", "x")
        )
    plan.notes.extend(notes)
    return plan


RESULTS = st.sampled_from([r.value for r in (Result.PLANNED, Result.HELD_BACK, Result.FAILED)])


@given(
    rows=st.lists(st.tuples(TEXT, TEXT, RESULTS), max_size=8),
    notes=st.lists(TEXT, max_size=3),
    n_kept=st.integers(0, 2),
    verbose=st.integers(0, 1),
)
def test_a_plan_into_a_pipe_is_one_whole_line_a_row(
    rows: list[tuple[str, str, str]], notes: list[str], n_kept: int, verbose: int
) -> None:
    """Into a pipe or file nothing is cut or wrapped at any width: each row is one line
    holding its cells whole (control characters escaped), and no escape code is written."""
    plan = _plan(rows, notes, n_kept)
    plan.dry_run = all(r == Result.PLANNED.value for _, _, r in rows)
    out = io.StringIO()
    render_plan(plan, verbose=verbose, out=out)
    text = out.getvalue()
    assert "\x1b[" not in text
    lines = text.splitlines()
    for a in plan.actions:
        row = [render.safe_text(c) for c in render.CONTAINERS.row(a, plan.now)]
        assert any(all(c in line for c in row[:9]) for line in lines), (row, text)
    for note in notes:
        assert render.safe_text(note) in text


@pytest.mark.parametrize(
    ("env", "plain"),
    [({}, True), ({"FORCE_COLOR": ""}, True), ({"FORCE_COLOR": "1"}, False),
     ({"TTY_COMPATIBLE": "1"}, False), ({"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"}, True)],
)  # fmt: skip
def test_colour_forced_by_the_environment_goes_through_rich(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], plain: bool
) -> None:
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert _writes_plain(io.StringIO()) is plain
    plan = _plan([("web", "app", Result.PLANNED.value)], [], 0)
    out = io.StringIO()
    render_plan(plan, out=out)
    from rich.console import Console

    expected = Console(file=io.StringIO()).is_terminal  # rich's own judgement of the env
    assert expected is not plain
    assert ("\x1b[" in out.getvalue()) is expected


def test_a_dry_run_table_into_a_pipe_does_not_import_rich(tmp_path: Path) -> None:
    inv = synthetic_inventory(60, 10, 5, pods=10)
    with FaultCri(tmp_path / "c.sock", inv) as cri:
        argv = ["-r", cri.endpoint, "--state-dir", str(tmp_path / "st"), "--pod-source", "none",
                "gc", "containers", "--dry-run"]  # fmt: skip
        code = (
            "import sys, runpy; sys.argv = ['kubegc', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('kubegc_cli', run_name='__main__')\n"
            "finally:\n    sys.stderr.write('rich imported: %s\\n' % any("
            "m == 'rich' or m.startswith('rich.') for m in sys.modules))\n"
        )
        env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
        proc = subprocess.run(
            [sys.executable, "-c", code, *argv],
            capture_output=True,
            text=True,
            env=env,
            stdin=subprocess.DEVNULL,
        )
    assert proc.returncode == 0, proc.stderr
    assert "Container GC (dry run)" in proc.stdout and "to remove" in proc.stdout
    assert "rich imported: False" in proc.stderr


def test_a_dry_run_with_actions_skipped_since_the_plan_counts_only_what_still_goes() -> None:
    """`apply --dry-run` re-checks a saved plan: what changed since is skipped, and the summary
    counts what would still be removed (and its bytes), naming the skipped ones apart."""
    plan = _plan(
        [("p", "a", "planned"), ("p", "b", "skipped"), ("p", "c", "planned"),
         ("p", "d", "skipped"), ("p", "e", "held-back")],
        [], 1,
    )  # fmt: skip
    plan.dry_run = True
    planned = sum(a.planned_bytes for a in plan.actions if a.result is Result.PLANNED)
    assert render.summary_line(plan) == (
        f"2 container(s) to remove, {render.format_bytes(planned)} expected, 1 held back by a "
        "cap, 2 skipped (changed since the plan); 1 kept."
    )
    plan.actions = [a for a in plan.actions if a.result is not Result.SKIPPED]
    assert render.summary_line(plan).startswith("2 container(s) to remove, ")


def test_the_kept_count_says_how_many_kept_objects_only_v_lists() -> None:
    """The headline's kept count agrees with what is listed: objects kept by a rule the
    table leaves to -v (the newest record of a container) are counted and said to be so."""
    plan = _plan([("p", "a", "planned")], [], 1)  # a guarded newest record: listed
    plan.dry_run = True
    for i in range(2):  # within the limits: left to -v
        c = ctr(f"w{i:013d}", name="within")
        plan.kept.append(ContainerAction(c, "within-limits", "newest of its pod"))

    def last(verbose: int) -> str:
        out = io.StringIO()
        render.render_plan(plan, verbose=verbose, out=out)
        return out.getvalue().splitlines()[-1]

    assert last(0).endswith("; 3 kept (-v lists 2 more).")
    assert last(1).endswith("; 3 kept.")
    plan.kept = plan.kept[1:]  # none of them listed without -v
    assert last(0).endswith("; 2 kept (listed with -v).")


def test_yaml_writes_an_enum_as_the_plain_value_it_is() -> None:
    """A document holding an `ExitCode` or a `Mode` is written as its number or string, as
    JSON writes it, and otherwise exactly as PyYAML's safe dumper does."""
    import yaml

    from kubegc_cli.commands.flow import Mode
    from kubegc_cli.core.errors import ExitCode

    doc = {"exit_code": ExitCode.UNAVAILABLE, "mode": Mode.DRY_RUN, "ok": True, "l": [1, "é"]}
    out = io.StringIO()
    render.dump_document(doc, "yaml", out)
    plain = {"exit_code": 3, "mode": "dry-run", "ok": True, "l": [1, "é"]}
    assert out.getvalue() == yaml.safe_dump(plain, sort_keys=False, default_flow_style=False)
