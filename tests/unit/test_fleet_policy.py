"""The fleet's rules (`policy.fleet`): first-run jitter, apply windows, the circuit breaker,
report writes. Tables worked out by hand, and properties."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.fleet import Category, LastApply, NodeReport, SignalMargin, leading
from kubegc_cli.policy.fleet import (
    MIN_APPLIED,
    breaker,
    first_delay,
    parse_window,
    should_write,
)

HOUR = 3600.0


def at(text: str, tz: str = "UTC") -> float:
    """Epoch seconds of a wall-clock time `YYYY-MM-DD HH:MM[:SS]` in `tz` (the first of two
    when the clocks go back)."""
    return datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(tz)).timestamp()


# --- first_delay ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("interval", "u", "expected"),
    [(300, 0.0, 150.0), (300, 0.5, 300.0), (300, 0.999, 449.7), (0, 0.3, 0.0)],
)
def test_first_delay_table(interval: float, u: float, expected: float) -> None:
    assert first_delay(interval, u) == pytest.approx(expected)


@pytest.mark.parametrize(("interval", "u"), [(300, 1.0), (300, -0.1), (-1, 0.5)])
def test_first_delay_refuses_what_it_cannot_mean(interval: float, u: float) -> None:
    with pytest.raises(ValueError):
        first_delay(interval, u)


@given(
    interval=st.floats(min_value=0, max_value=86_400 * 7),
    u=st.floats(min_value=0, max_value=1, exclude_max=True),
)
def test_first_delay_stays_between_half_and_one_and_a_half_intervals(
    interval: float, u: float
) -> None:
    d = first_delay(interval, u)
    assert interval * 0.5 <= d <= interval * 1.5
    assert d < interval * 1.5 or interval == 0 or d == pytest.approx(interval * 1.5)


# --- windows ----------------------------------------------------------------------------------

# 2026-12-07 is a Monday.
WINDOWS = [
    ("Mon-Fri 01:00-05:00", "UTC", "2026-12-07 01:00", True),
    ("Mon-Fri 01:00-05:00", "UTC", "2026-12-07 04:59:59", True),
    ("Mon-Fri 01:00-05:00", "UTC", "2026-12-07 05:00", False),  # the end is not inside
    ("Mon-Fri 01:00-05:00", "UTC", "2026-12-07 00:59:59", False),
    ("Mon-Fri 01:00-05:00", "UTC", "2026-12-12 02:00", False),  # Saturday
    ("Sat,Sun 00:00-24:00", "UTC", "2026-12-12 00:00", True),
    ("Sat,Sun 00:00-24:00", "UTC", "2026-12-13 23:59:59", True),
    ("Sat,Sun 00:00-24:00", "UTC", "2026-12-14 00:00", False),  # Monday
    # past midnight: the early hours belong to the day the window started
    ("Mon-Fri 22:00-04:00", "UTC", "2026-12-07 23:00", True),  # Monday night
    ("Mon-Fri 22:00-04:00", "UTC", "2026-12-08 03:59", True),  # ...Tuesday morning
    ("Mon-Fri 22:00-04:00", "UTC", "2026-12-07 03:00", False),  # Monday morning: Sunday's
    ("Mon-Fri 22:00-04:00", "UTC", "2026-12-12 03:00", True),  # Saturday morning: Friday's
    ("Mon-Fri 22:00-04:00", "UTC", "2026-12-12 22:00", False),  # Saturday night
    ("Mon-Fri 22:00-04:00", "UTC", "2026-12-08 04:00", False),
    # several windows, day ranges that wrap the week, every day, any case
    ("Mon 01:00-02:00; Wed 03:00-04:00", "UTC", "2026-12-09 03:30", True),
    ("Mon 01:00-02:00; Wed 03:00-04:00", "UTC", "2026-12-09 01:30", False),
    ("Fri-Mon 10:00-11:00", "UTC", "2026-12-13 10:30", True),  # Sunday
    ("Fri-Mon 10:00-11:00", "UTC", "2026-12-08 10:30", False),  # Tuesday
    ("02:00-03:00", "UTC", "2026-12-09 02:30", True),
    ("mon-FRI 01:00-05:00", "UTC", "2026-12-07 02:00", True),
    # a zone: 01:00-05:00 in Berlin (UTC+1 in December) is 00:00-04:00 UTC
    ("Mon-Fri 01:00-05:00", "Europe/Berlin", "2026-12-07 00:30", True),
    ("Mon-Fri 01:00-05:00", "Europe/Berlin", "2026-12-07 04:30", False),
    ("Mon 01:00-05:00", "Europe/Berlin", "2026-12-07 00:30", True),  # Monday in Berlin
    ("Sun 01:00-05:00", "Europe/Berlin", "2026-12-07 00:30", False),  # ... not Sunday
    ("Mon 07:00-09:00", "Asia/Tokyo", "2026-12-06 23:00", True),  # UTC+9: Sunday in UTC
]


@pytest.mark.parametrize(("text", "tz", "utc", "inside"), WINDOWS)
def test_window_contains(text: str, tz: str, utc: str, inside: bool) -> None:
    w = parse_window(text, tz)
    assert w.contains(at(utc)) is inside


def window_hours(text: str, tz: str, day: str) -> float:
    """Real hours the window is open from `day` 00:00 UTC for 36 h, minute by minute."""
    start = at(f"{day} 00:00")
    w = parse_window(text, tz)
    return sum(w.contains(start + 60 * m) for m in range(36 * 60)) / 60


@pytest.mark.parametrize(
    ("text", "tz", "day", "hours"),
    [
        # New York springs forward at 02:00 on 2026-03-08: 01:00-04:00 lasts two real hours
        ("Sun 01:00-04:00", "America/New_York", "2026-03-08", 2.0),
        # ... and falls back at 02:00 on 2026-11-01: 01:00-03:00 lasts three (01:xx twice)
        ("Sun 01:00-03:00", "America/New_York", "2026-11-01", 3.0),
        ("Sun 01:00-03:00", "America/New_York", "2026-10-25", 2.0),  # an ordinary Sunday
        # Berlin goes back at 03:00 on 2026-10-25: 22:00-04:00 Saturday night lasts seven
        ("Sat 22:00-04:00", "Europe/Berlin", "2026-10-24", 7.0),
    ],
)
def test_windows_follow_daylight_saving(text: str, tz: str, day: str, hours: float) -> None:
    assert window_hours(text, tz, day) == hours


def test_both_half_past_ones_of_a_fall_back_night_are_inside() -> None:
    w = parse_window("Sun 01:00-02:00", "America/New_York")
    first = at("2026-11-01 05:30")  # 01:30 EDT
    second = first + HOUR  # 01:30 EST
    assert w.contains(first) and w.contains(second) and not w.contains(second + HOUR)


@pytest.mark.parametrize(
    ("text", "tz", "needle"),
    [
        ("Mon-Fry 01:00-05:00", "UTC", "'Fry'"),
        ("Mon-Fri 1-5", "UTC", "'1' in 'Mon-Fri 1-5'"),
        ("Mon-Fri 01:00-25:00", "UTC", "'25:00'"),
        ("Mon-Fri 01:60-05:00", "UTC", "'01:60'"),
        ("Mon-Fri 24:00-05:00", "UTC", "'24:00'"),
        ("Mon-Fri 05:00-05:00", "UTC", "'05:00-05:00'"),
        ("Mon-Fri 01:00-05:00-06:00", "UTC", "'01:00-05:00-06:00'"),
        ("Mon Fri 01:00-05:00", "UTC", "'Mon Fri 01:00-05:00'"),
        ("Mon,,Tue 01:00-05:00", "UTC", "''"),
        ("", "UTC", "names no window"),
        (" ; ", "UTC", "names no window"),
        ("Mon-Fri 01:00-05:00", "Mars/Olympus", "'Mars/Olympus'"),
        ("Mon-Fri 01:00-05:00", "../../etc/passwd", "'../../etc/passwd'"),
    ],
)
def test_a_bad_window_is_one_line_naming_it(text: str, tz: str, needle: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_window(text, tz)
    msg = str(err.value)
    assert "\n" not in msg and needle in msg, msg
    assert msg.startswith("--window-timezone: " if tz != "UTC" else "--window: ")


def test_where_names_the_source_of_a_bad_window() -> None:
    with pytest.raises(BadInput, match=r"^policy\.yaml: window: 'Sonday'"):
        parse_window("Sonday 01:00-02:00", "UTC", where="policy.yaml: window")


def test_an_empty_zone_is_utc() -> None:
    assert parse_window("Mon 01:00-02:00", "").tz == "UTC"


DAY_NAMES = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
hhmm = st.integers(min_value=0, max_value=23 * 60 + 59).map(lambda m: f"{m // 60:02d}:{m % 60:02d}")
zones = st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe"])
instants = st.floats(min_value=at("2026-01-01 00:00"), max_value=at("2028-01-01 00:00"))


@settings(max_examples=300, deadline=None)
@given(
    day=st.integers(min_value=0, max_value=6),
    start=hhmm,
    end=hhmm,
    tz=zones,
    t=instants,
)
def test_a_window_past_midnight_is_its_two_halves(
    day: int, start: str, end: str, tz: str, t: float
) -> None:
    """`D a-b` with b before a is `D a-24:00` and `D+1 00:00-b`."""
    if end >= start:
        start, end = end, start
    if start == end:
        return
    whole = parse_window(f"{DAY_NAMES[day]} {start}-{end}", tz)
    second = f"; {DAY_NAMES[(day + 1) % 7]} 00:00-{end}" if end != "00:00" else ""
    halves = parse_window(f"{DAY_NAMES[day]} {start}-24:00{second}", tz)
    assert whole.contains(t) == halves.contains(t)


@settings(max_examples=300, deadline=None)
@given(
    days=st.lists(st.integers(min_value=0, max_value=6), min_size=1, max_size=7),
    start=hhmm,
    end=hhmm,
    tz=zones,
    t=instants,
)
def test_a_window_is_read_on_the_local_wall_clock(
    days: list[int], start: str, end: str, tz: str, t: float
) -> None:
    """Against the obvious model: the local weekday and HH:MM of `t` in `tz`."""
    if start == end:
        return
    w = parse_window(f"{','.join(DAY_NAMES[d] for d in days)} {start}-{end}", tz)
    local = datetime.fromtimestamp(t, ZoneInfo(tz))
    now = local.strftime("%H:%M")
    today, yesterday = local.weekday() in days, (local.weekday() - 1) % 7 in days
    if start < end:
        expected = today and start <= now < end
    else:
        expected = (today and now >= start) or (yesterday and now < end)
    assert w.contains(t) is expected


@settings(max_examples=100, deadline=None)
@given(tz=zones, t=instants)
def test_every_day_all_day_holds_every_instant(tz: str, t: float) -> None:
    assert parse_window("Mon-Sun 00:00-24:00", tz).contains(t)
    assert parse_window("00:00-24:00", tz).contains(t)


# --- the breaker ------------------------------------------------------------------------------

NOW = at("2026-12-07 12:00")


def rfc(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node(i: int, *, ago: float | None, failures: int = 0, error: str = "") -> NodeReport:
    """Node `i`'s report with its last apply `ago` seconds before NOW (None: no apply)."""
    last = (
        None
        if ago is None
        else LastApply(rfc(NOW - ago), ("gc containers",), 3, 1 << 20, failures, error)
    )
    return NodeReport(f"node-{i}", rfc(NOW), mode="apply", last_apply=last)


def fleet(ok: int, failed: int, *, ago: float = 60, errored: int = 0) -> list[NodeReport]:
    reports = [node(i, ago=ago) for i in range(ok)]
    reports += [node(ok + i, ago=ago, failures=2) for i in range(failed)]
    reports += [node(ok + failed + i, ago=ago, error="runtime gone") for i in range(errored)]
    return reports


@pytest.mark.parametrize(
    ("reports", "pct", "reason"),
    [
        (fleet(10, 2), 20, ""),  # 2/12 = 16.7%
        (fleet(8, 2), 20, ""),  # exactly 20%: not more than
        (fleet(7, 3), 20, "3 of 10 applies in the last 1h failed (30%, more than 20%)"),
        (fleet(8, 0, errored=2) + fleet(0, 1), 20, "3 of 11 applies"),  # an error is a failure
        (fleet(0, 4), 20, ""),  # 4 applies: too few to judge
        (fleet(0, 5), 20, "5 of 5 applies in the last 1h failed (100%, more than 20%)"),
        (fleet(3, 2), 20, "2 of 5 applies"),
        (fleet(4, 1), 20, ""),
        (fleet(9, 1), 0, "1 of 10 applies in the last 1h failed (10%, more than 0%)"),
        (fleet(0, 10), 100, ""),
        # applies older than the window do not count; nor do reports without one
        (fleet(5, 0) + fleet(0, 5, ago=HOUR + 1), 20, ""),
        (fleet(5, 0) + fleet(0, 5, ago=HOUR), 20, "5 of 10 applies"),
        (fleet(2, 3) + [node(99, ago=None)] * 20, 20, "3 of 5 applies"),
        # a node whose clock runs ahead still counts
        ([*fleet(2, 2), node(99, ago=-30, failures=1)], 20, "3 of 5 applies"),
        ([*fleet(2, 2), node(99, ago=-300, failures=1)], 20, "3 of 5 applies"),
        # but not one stamped more than 5 minutes ahead: a forged or broken time
        ([*fleet(2, 2), node(99, ago=-301, failures=1)], 20, ""),
        ([], 20, ""),
    ],
)
def test_breaker_table(reports: list[NodeReport], pct: float, reason: str) -> None:
    got = breaker(reports, NOW, window=HOUR, max_failed_percent=pct)
    assert (got == "") == (reason == "") and reason in got, got
    assert "\n" not in got
    if got:
        assert got.endswith("no apply slot is taken")


def test_a_report_with_an_unreadable_apply_time_is_not_counted() -> None:
    unreadable = LastApply("yesterday", ("gc containers",), 0, 0, 1)
    bad = [replace(r, last_apply=unreadable) for r in fleet(0, 5)]
    assert breaker(bad + fleet(0, 4), NOW, window=HOUR, max_failed_percent=20) == ""


def test_failed_applies_stamped_far_in_the_future_never_hold_the_breaker_open() -> None:
    # year 9999: without the bound these five would count in every window until then
    forged = [replace(r, last_apply=replace(r.last_apply, at="9999-12-31T23:59:59Z"))
              for r in fleet(0, 5) if r.last_apply is not None]  # fmt: skip
    assert breaker(forged, NOW, window=HOUR, max_failed_percent=20) == ""
    assert breaker(forged + fleet(0, 5), NOW, window=HOUR, max_failed_percent=20)


def test_the_minimum_sample_can_be_set() -> None:
    assert MIN_APPLIED == 5
    assert breaker(fleet(0, 1), NOW, window=HOUR, max_failed_percent=20, min_applied=1)
    assert not breaker(fleet(0, 9), NOW, window=HOUR, max_failed_percent=20, min_applied=10)


@pytest.mark.parametrize(("window", "pct"), [(-1, 20), (HOUR, -1), (HOUR, 101)])
def test_breaker_refuses_impossible_settings(window: float, pct: float) -> None:
    with pytest.raises(ValueError):
        breaker([], NOW, window=window, max_failed_percent=pct)


@settings(max_examples=300, deadline=None)
@given(
    ok=st.integers(min_value=0, max_value=40),
    failed=st.integers(min_value=0, max_value=40),
    old=st.integers(min_value=0, max_value=40),
    pct=st.integers(min_value=0, max_value=100),
)
def test_breaker_opens_exactly_above_the_percentage(
    ok: int, failed: int, old: int, pct: int
) -> None:
    reports = fleet(ok, failed) + fleet(0, old, ago=2 * HOUR)
    got = breaker(reports, NOW, window=HOUR, max_failed_percent=pct)
    applied = ok + failed
    assert bool(got) == (applied >= MIN_APPLIED and failed * 100 > pct * applied)
    if got:
        assert got.startswith(f"{failed} of {applied} applies")
        # one more failure never closes it
        assert breaker(reports + fleet(0, 1), NOW, window=HOUR, max_failed_percent=pct)


# --- report writes ----------------------------------------------------------------------------

REPORT = NodeReport(
    "node-a",
    "2026-12-07T12:00:00Z",
    signals=(SignalMargin("memory.available", "100Mi", 1 << 30, (1 << 30) - (100 << 20), False),),
)
LATER = replace(REPORT, observed_at="2026-12-07T12:05:00Z")
CHANGED = replace(LATER, conditions=("DiskPressure",))


@pytest.mark.parametrize(
    ("new", "old", "last_write", "now", "write"),
    [
        (REPORT, None, None, NOW, True),  # nothing written yet
        (REPORT, REPORT, None, NOW, True),  # written by someone, not by us: write
        (LATER, REPORT, NOW - 300, NOW, False),  # only the time changed
        (LATER, REPORT, NOW - 1799, NOW, False),
        (LATER, REPORT, NOW - 1800, NOW, True),  # heartbeat
        (CHANGED, REPORT, NOW - 1, NOW, True),  # a change is written at once
        (replace(LATER, error="runtime down"), REPORT, NOW - 1, NOW, True),
    ],
)
def test_should_write_table(
    new: NodeReport, old: NodeReport | None, last_write: float | None, now: float, write: bool
) -> None:
    assert should_write(new, old, last_write=last_write, now=now, heartbeat=1800) is write


@given(
    since=st.integers(min_value=0, max_value=36_000),
    heartbeat=st.integers(min_value=1, max_value=3600),
    observed=st.integers(min_value=0, max_value=10**6),
)
def test_an_unchanged_report_is_written_once_per_heartbeat(
    since: int, heartbeat: int, observed: int
) -> None:
    new = replace(REPORT, observed_at=rfc(NOW + observed))
    got = should_write(new, REPORT, last_write=NOW - since, now=NOW, heartbeat=heartbeat)
    assert got == (since >= heartbeat)


@pytest.mark.parametrize(
    ("n", "rounded"),
    [
        (None, None),
        (0, 0),
        (7, 7),
        (42, 42),
        (964, 960),
        (-964, -960),
        (1_234_567, 1_200_000),
        (10_000_000_999, 10_000_000_000),
        (5_368_709_120, 5_400_000_000),
    ],
)
def test_leading_keeps_two_leading_digits(n: int | None, rounded: int | None) -> None:
    assert leading(n) == rounded


def _live(available: int, margin: int, *, met: bool = False, layers: int = 5 << 30) -> NodeReport:
    return NodeReport(
        node="n1",
        observed_at="2026-12-05T04:00:00Z",
        categories=(Category("writable-layers", layers, 0),),
        signals=(SignalMargin("nodefs.available", "10%", available, margin, met),),
    )


@pytest.mark.parametrize(
    ("new", "writes"),
    [
        # free space moved by a few KiB: the same report (no write before the heartbeat)
        (_live(20_000_004_096, 9_000_004_096), False),
        (replace(_live(20_000_000_000, 9_000_000_000), observed_at="2026-12-05T04:05:00Z"), False),
        # a move the fleet view shows: a write
        (_live(20_000_000_000, 9_000_000_000, layers=6 << 30), True),
        (_live(12_000_000_000, 1_000_000_000), True),
        # a threshold met, however small the move: a write
        (_live(20_000_000_000, -1, met=True), True),
    ],
)
def test_a_live_nodes_small_moves_are_not_a_write(new: NodeReport, writes: bool) -> None:
    old = _live(20_000_000_000, 9_000_000_000)
    assert should_write(new, old, last_write=1000.0, now=1300.0, heartbeat=1800.0) is writes
    assert should_write(new, old, last_write=1000.0, now=2800.0, heartbeat=1800.0)


def test_the_nearest_signal_compares_margins_as_shares_of_their_thresholds() -> None:
    """60 GB to spare over a 10 GB threshold is nearer than 900,000 inodes over 100,000: the
    raw margins (bytes against inodes) would pick the inodes."""
    disk = SignalMargin("nodefs.available", "10Gi", 70_000_000_000, 60_000_000_000, False)
    inodes = SignalMargin("nodefs.inodesFree", "5%", 1_000_000, 900_000, False)
    report = NodeReport(node="n1", observed_at="2026-12-05T04:00:00Z", signals=(inodes, disk))
    assert disk.relative == 6.0 and inodes.relative == 9.0
    assert report.nearest() == disk
    past = SignalMargin("memory.available", "100Mi", 50_000_000, -50_000_000, True)
    assert replace(report, signals=(inodes, disk, past)).nearest() == past
    assert SignalMargin("pid.available", "0", 10, 10, False).relative == float("inf")
    assert SignalMargin("pid.available", "x", None, None, False).relative is None
