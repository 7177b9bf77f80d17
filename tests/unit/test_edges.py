"""The commands' edges (`commands.edges`): swapped for a block, put back after it."""

from __future__ import annotations

import pytest

from kubegc_cli.commands.edges import edges, using


def test_a_block_swaps_the_clock_and_puts_kubegcs_own_back() -> None:
    own = edges()
    with using(clock=lambda: 1) as inner:
        assert edges() is inner and edges().clock() == 1
    assert edges() is own


def test_blocks_ended_out_of_order_leave_the_newest_open_one_in_force() -> None:
    own = edges()
    a = using(clock=lambda: 1)
    b = using(clock=lambda: 2)
    a.__enter__()
    b.__enter__()
    assert edges().clock() == 2
    a.__exit__(None, None, None)  # the older block ends first
    assert edges().clock() == 2  # the newer one is still open
    b.__exit__(None, None, None)
    assert edges() is own


def test_a_block_left_by_an_exception_puts_the_edges_back() -> None:
    own = edges()
    with pytest.raises(RuntimeError), using(clock=lambda: 3):
        raise RuntimeError("boom")
    assert edges() is own
