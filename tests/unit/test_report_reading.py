"""A NodeGCReport as `node.fleet.reports` reads it back: a status of a shape the CRD's schema
would refuse (written into the API server's storage past it) is one unreadable report, never
an exception that stops the list, the breaker or `kubegc fleet`. (The reports written and read
through a real API server: tests/api/test_reports.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from kubegc_cli.node.fleet.reports import _report_of


def stored(status: Any, name: str = "node-1") -> dict[str, Any]:
    owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": "u"}
    return {"metadata": {"name": name, "ownerReferences": [owner]}, "status": status}


@pytest.mark.parametrize(
    "status",
    [{"categories": [1]}, {"signals": ["x"]}, {"lastApply": {"plans": 5}},
     {"evictFirst": [None]}, {"residue": [1]}, {"conditions": 7}],
)  # fmt: skip
def test_a_status_of_another_shape_is_one_unreadable_report(status: Any) -> None:
    report = _report_of(stored(status))
    assert report.node == "node-1" and report.observed_at == "" and report.last_apply is None
    assert report.error.startswith("report unreadable: status."), report.error


def test_a_status_as_written_reads_back() -> None:
    report = _report_of(stored({"observedAt": "2026-12-05T03:00:00Z", "reclaimableBytes": 7}))
    assert (report.observed_at, report.reclaimable, report.error) == (
        "2026-12-05T03:00:00Z", 7, "")  # fmt: skip
