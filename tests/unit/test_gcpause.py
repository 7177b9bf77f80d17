"""`cyclic_gc_paused`: the collector off during a step, back on after, big results frozen."""

from __future__ import annotations

import gc

import pytest

from kubegc_cli.core.gcpause import FREEZE_AFTER, cyclic_gc_paused


@cyclic_gc_paused
def _build(n: int) -> tuple[bool, list[list[int]]]:
    return gc.isenabled(), [[i] for i in range(n)]  # one tracked list per item


def test_the_collector_is_off_during_the_step_and_on_after() -> None:
    assert gc.isenabled()
    enabled_inside, items = _build(10)
    assert not enabled_inside and len(items) == 10
    assert gc.isenabled()


def test_the_collector_stays_off_after_if_it_was_off_before() -> None:
    gc.disable()
    try:
        _build(FREEZE_AFTER + 1000)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_step_leaving_many_objects_alive_freezes_them_and_a_small_one_does_not() -> None:
    gc.collect()
    before = gc.get_freeze_count()
    try:
        _, small = _build(100)
        assert gc.get_freeze_count() == before
        _, big = _build(FREEZE_AFTER + 10_000)
        assert gc.get_freeze_count() >= before + FREEZE_AFTER + 10_000
        assert gc.isenabled()
        del small, big  # frozen objects are still freed by reference counting
    finally:
        gc.unfreeze()


def test_an_exception_in_the_step_still_turns_the_collector_back_on() -> None:
    @cyclic_gc_paused
    def fails() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        fails()
    assert gc.isenabled()
