"""Every test under ``tests/api`` gets the ``api`` marker; their fixtures (the control plane
started once per session) are in ``tests/conftest.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

API_TESTS = Path(__file__).parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark ``tests/api`` items ``api``."""
    for item in items:
        if item.path.is_relative_to(API_TESTS):
            item.add_marker(pytest.mark.api)
