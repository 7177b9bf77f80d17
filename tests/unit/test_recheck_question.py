"""`commands.flow.recheck_after_question`: the plan a person said yes to, re-checked against
the plan made again from the node under the lock — table-driven, without a runtime (the real
containerd's case: tests/node/test_question.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubegc_cli.commands.flow import CHANGES_LISTED, recheck_after_question
from kubegc_cli.core.plan import ContainerAction, Plan, Result
from tests.unit.factories import NOW, ctr


class Said:
    """A `Ui` that keeps what it was told."""

    def __init__(self) -> None:
        self.warned: list[str] = []
        self.infos: list[str] = []

    def info(self, message: str) -> None:
        self.infos.append(message)

    def warn(self, message: str) -> None:
        self.warned.append(message)


def plan(*selected: str, kept: tuple[tuple[str, str], ...] = ()) -> Plan[ContainerAction]:
    return Plan(
        kind="ContainerGCPlan", policy={}, now=NOW,
        actions=[ContainerAction(ctr(c), "max-per-pod-container", "beyond the newest 1")
                 for c in selected],
        kept=[ContainerAction(ctr(c), rule, f"kept: {rule}", Result.KEPT) for c, rule in kept],
    )  # fmt: skip


def outcome(p: Plan[Any]) -> list[tuple[str, str, str]]:
    return [(a.id, a.result.value, a.error) for a in p.actions]


@pytest.mark.parametrize(
    ("fresh", "want", "new"),
    [
        # nothing changed: everything still planned, nothing said
        (plan("a", "b"), [("a", "planned", ""), ("b", "planned", "")], 0),
        # b was removed by another run meanwhile
        (plan("a"), [("a", "planned", ""), ("b", "skipped", "gone since the question")], 0),
        # b is kept now, by the rule that keeps it
        (
            plan("a", kept=(("b", "guard-newest-record"),)),
            [("a", "planned", ""),
             ("b", "skipped", "no longer selected since the question: kept: guard-newest-record")],
            0,
        ),
        # c is selected now: not asked about, not added
        (plan("a", "b", "c"), [("a", "planned", ""), ("b", "planned", "")], 1),
    ],
)  # fmt: skip
def test_a_plan_is_rechecked_against_the_node_now(
    fresh: Plan[ContainerAction], want: list[tuple[str, str, str]], new: int
) -> None:
    asked, ui = plan("a", "b"), Said()
    said = recheck_after_question(asked, fresh, ui)
    assert outcome(asked) == want
    notes = [n for n in asked.notes if "selected since the question" in n]
    assert len(notes) == (1 if new else 0)
    changed = sum(1 for _, result, _ in want if result == "skipped") + new
    assert len(said) == changed
    assert bool(ui.warned) is bool(changed)
    assert not ui.infos if changed else ui.infos


def test_what_was_done_or_held_back_is_not_touched() -> None:
    asked = plan("a", "b")
    asked.actions[1].result = Result.HELD_BACK
    recheck_after_question(asked, plan(), Said())
    assert outcome(asked) == [("a", "skipped", "gone since the question"), ("b", "held-back", "")]


def test_a_long_list_of_changes_is_cut_with_a_count() -> None:
    ids = [f"c{i:03}" for i in range(CHANGES_LISTED + 5)]
    ui = Said()
    said = recheck_after_question(plan(*ids), plan(), ui)
    assert len(said) == CHANGES_LISTED + 1 and said[-1].startswith("... and 5 more")
