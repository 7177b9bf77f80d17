"""What every unit test shares."""

from __future__ import annotations

from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _run_lock_released() -> Iterator[None]:
    """A test calling a command's core (not the command line, which always lets go) may end
    holding the node-wide run lock; the next test must find it free, as the next run would."""
    yield
    from kubegc_cli.node.state import release_run_lock

    release_run_lock()
