"""Reading an apply slot's Lease record (`node.fleet.leases.ApplySlots.holder`): who holds
it, as client-go's `tryAcquireOrRenew` judges a record, on records as the API returns them
and on damaged ones. The API calls themselves are tested in tests/api/test_leases.py."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from kubegc_cli.node.fleet.leases import ApplySlots, micro_time

NOW = 1_796_000_000.25


def record(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "kubegc-apply-0", "resourceVersion": "7"}, "spec": spec}


LIVE = {"holderIdentity": "agent-b", "leaseDurationSeconds": 60}
RENEWED = micro_time(NOW)
SQUAT = {"holderIdentity": "x", "leaseDurationSeconds": 2147483647}
PLUS_ONE_HOUR = datetime.fromtimestamp(NOW - 10, timezone(timedelta(hours=1))).isoformat()


@pytest.mark.parametrize(
    ("lease", "holder"),
    [
        (record(**LIVE, renewTime=micro_time(NOW - 59.9)), "agent-b"),
        (record(**LIVE, renewTime=micro_time(NOW - 60)), ""),  # renewTime + duration is past
        (record(**LIVE, renewTime=micro_time(NOW + 30)), "agent-b"),  # its clock runs ahead
        # squatting, clamped: a renewTime up to our duration (60 s) ahead counts as now, one
        # further ahead is not believed; a duration above ours counts as ours
        (record(**LIVE, renewTime=micro_time(NOW + 60)), "agent-b"),
        (record(**LIVE, renewTime=micro_time(NOW + 61)), ""),
        (record(**LIVE, renewTime="9999-12-31T23:59:59.000000Z"), ""),
        (record(**SQUAT, renewTime=micro_time(NOW - 59.9)), "x"),
        (record(**SQUAT, renewTime=micro_time(NOW - 60)), ""),
        (record(holderIdentity="x", leaseDurationSeconds=30, renewTime=micro_time(NOW - 31)), ""),
        (record(**LIVE, renewTime="2026-01-01T00:00:00.5+01:00"), ""),  # an offset, long ago
        (record(**LIVE, renewTime=PLUS_ONE_HOUR), "agent-b"),  # 10 s ago, written at +01:00
        (record(leaseDurationSeconds=60, renewTime=micro_time(NOW)), ""),  # no holder
        (record(**{**LIVE, "holderIdentity": ""}, renewTime=micro_time(NOW)), ""),
        (record(**LIVE), ""),  # never renewed
        (record(**LIVE, renewTime="yesterday"), ""),
        (record(holderIdentity="agent-b", renewTime=micro_time(NOW)), ""),  # no duration
        (record(holderIdentity="agent-b", leaseDurationSeconds=True, renewTime=RENEWED), ""),
        ({"metadata": {}, "spec": None}, ""),
        ({"metadata": {}}, ""),
    ],
)
def test_holder(lease: dict[str, Any], holder: str) -> None:
    slots = ApplySlots(object(), "kube-system", "agent-a", 1)
    assert slots.holder(lease, NOW) == holder


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"slots": 0}, "slots"), ({"identity": ""}, "identity"), ({"lease_seconds": 0.5}, "lease")],
)
def test_settings_that_cannot_be_meant(kwargs: dict[str, Any], needle: str) -> None:
    args: dict[str, Any] = {"identity": "agent-a", "slots": 1, **kwargs}
    lease_seconds = args.pop("lease_seconds", 60)
    with pytest.raises(ValueError, match=needle):
        ApplySlots(object(), "kube-system", args["identity"], args["slots"],
                   lease_seconds=lease_seconds)  # fmt: skip
