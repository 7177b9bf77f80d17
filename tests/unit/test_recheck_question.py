"""`commands.flow.recheck_after_question`: the plan a person said yes to, re-checked against
the plan made again from the node under the lock — table-driven, without a runtime (the real
containerd's case: tests/node/test_question.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kubegc_cli.commands.flow import (
    CHANGES_LISTED,
    Mode,
    changed_since,
    may_act,
    recheck_after_question,
)
from kubegc_cli.core.model import Image
from kubegc_cli.core.plan import ContainerAction, ImageAction, LogAction, Plan, Result
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


def _image(*names: str) -> ImageAction:
    tags = tuple(n for n in names if "@" not in n)
    digests = tuple(n for n in names if "@" in n)
    return ImageAction(Image("sha256:aa", tags, digests, size=4096), NOW, 0, "prune-unused", "")


def _log_dir(size: int) -> LogAction:
    return LogAction("pod-log-dir", "/var/log/pods/ns_p_u", "/h/var/log/pods/ns_p_u", "u",
                     "deleted-pod", "pod gone", bytes=size)  # fmt: skip


def _one(kind: str, *actions: Any) -> Plan[Any]:
    return Plan(kind=kind, policy={}, now=NOW, actions=list(actions))


@pytest.mark.parametrize(
    ("asked", "now", "why"),
    [
        # a name added to the image asked about: removing it would take that name too
        (_image("a.example/x:1"), _image("a.example/x:1", "a.example/prod:1"),
         "changed since the question: now also named a.example/prod:1"),
        (_image("a.example/x:1"), _image("a.example/x:1", "a.example/x@sha256:bb"),
         "changed since the question: now also named a.example/x@sha256:bb"),
        # a name gone, or none added: the same image
        (_image("a.example/x:1", "a.example/y:1"), _image("a.example/x:1"), ""),
        # a directory written to, emptied or refilled since: something still uses it
        (_log_dir(12288), _log_dir(52441088),
         "changed since the question: 12Ki then, 50Mi now"),
        (_log_dir(40960), _log_dir(4096), "changed since the question: 40Ki then, 4Ki now"),
        (_log_dir(12288), _log_dir(12288), ""),
    ],
)  # fmt: skip
def test_an_object_that_changed_while_asked_is_skipped(asked: Any, now: Any, why: str) -> None:
    """`changed_since`: the same kind and ID planned again, but not the object asked about."""
    assert changed_since(asked, now) == why
    kind = "ImageGCPlan" if asked.kind == "image" else "LogGCPlan"
    plan_asked, ui = _one(kind, asked), Said()
    recheck_after_question(plan_asked, _one(kind, now), ui)
    assert outcome(plan_asked) == [(asked.id, "skipped" if why else "planned", why)]
    assert bool(ui.warned) is bool(why)


def test_a_container_whose_layer_is_reported_late_is_the_same_container() -> None:
    """containerd measures writable layers every 10 s: a dead container reported with 0 bytes
    at the question and 8Ki after it is the one asked about, not a changed one; one whose log
    grew since (something writes to it) is not."""
    asked, now = plan("a"), plan("a")
    asked.actions[0].layer_bytes, now.actions[0].layer_bytes = 0, 8192
    recheck_after_question(asked, now, Said())
    assert outcome(asked) == [("a", "planned", "")]
    asked = Plan(kind="ContainerGCPlan", policy={}, now=NOW, actions=[
        ContainerAction(ctr("a", log_bytes=4096), "max-per-pod-container", "")])  # fmt: skip
    now = Plan(kind="ContainerGCPlan", policy={}, now=NOW, actions=[
        ContainerAction(ctr("a", log_bytes=286720), "max-per-pod-container", "")])  # fmt: skip
    recheck_after_question(asked, now, Said())
    assert outcome(asked) == [
        ("a", "skipped", "changed since the question: its log grew from 4Ki to 280Ki")
    ]


def test_the_api_is_named_where_it_changed() -> None:
    ui = Said()
    recheck_after_question(plan("a"), plan(), ui, "the API")
    assert ui.warned[0] == "the API changed while the question waited:"


def test_a_run_that_would_ask_but_has_nothing_to_ask_about_is_no_dry_run() -> None:
    """Asked on a terminal with nothing left to remove (a target met, everything held back):
    no question, and the result is that run's, not a dry run's (its title and exit code are
    those of the same run with --yes)."""
    asked = plan("a")
    asked.actions[0].result = Result.HELD_BACK
    asked.dry_run = True
    assert may_act(Mode.ASK, asked, Said(), "container") is False
    assert asked.dry_run is False
    dry = plan("a")
    dry.dry_run = True
    assert may_act(Mode.DRY_RUN, dry, Said(), "container") is False and dry.dry_run


def test_a_directory_written_to_within_its_blocks_is_changed() -> None:
    """The same bytes on disk, but a later latest change below it (`changed_ns`): written to
    while the question waited (a line appended to a log, a file replaced by one as large)."""
    asked, now = _log_dir(12288), _log_dir(12288)
    asked.changed_ns, now.changed_ns = 1_000, 2_000
    assert changed_since(asked, now) == "changed since the question: written to since"
    now.changed_ns = 1_000
    assert changed_since(asked, now) == ""
