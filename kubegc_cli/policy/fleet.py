"""The fleet's rules, pure: when an agent first runs, when it may apply, when it stops taking
apply slots, and when it writes its report.

- `first_delay`: the first cycle waits between half and one and a half intervals, so that the
  agents of a fleet started together (a DaemonSet rollout) never run in step.
- `Window` / `parse_window`: apply windows in days and hours of a named time zone.
- `breaker`: the fleet's circuit breaker over the `NodeGCReport`s' last applies.
- `should_write`: at most one report write per change, and one per heartbeat otherwise.

No clock and no socket: times come in as arguments (seconds since the epoch). The time zone
rules are the standard library's `zoneinfo` (the system's tz database, or the `tzdata`
package).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.fleet import FUTURE_SKEW, NodeReport
from kubegc_cli.core.units import NS_PER_SECOND, format_duration, rfc3339_to_ns

# --- the first run ----------------------------------------------------------------------------


def first_delay(interval: float, u: float) -> float:
    """Seconds before an agent's first cycle: `interval × (0.5 + u)`, in [interval/2,
    3·interval/2).

    `interval` is the cycle interval in seconds (≥ 0); `u` a uniform random number in [0, 1)
    (`random.random()`), passed in so that the rule stays pure. Raises `ValueError` for `u`
    outside [0, 1) or a negative interval.
    """
    if not 0.0 <= u < 1.0:
        raise ValueError(f"u must lie in [0, 1), not {u!r}")
    if interval < 0:
        raise ValueError(f"interval must not be negative, not {interval!r}")
    return interval * (0.5 + u)


# --- apply windows ----------------------------------------------------------------------------

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_DAY_SECONDS = 86_400
_TIME = re.compile(r"([0-9]{1,2}):([0-9]{2})")


@dataclass(frozen=True, slots=True)
class Span:
    """One window part: the weekdays it starts on (0 = Monday … 6 = Sunday), and its start
    and end in seconds of the local day (end 86,400 = 24:00). `end <= start` means the span
    runs past midnight into the next day, which still belongs to the day it started."""

    days: frozenset[int]
    start: int
    end: int

    def contains(self, weekday: int, second: float) -> bool:
        """Whether local `weekday` (0 = Monday) at `second` of the day lies in this span."""
        if self.start < self.end:
            return weekday in self.days and self.start <= second < self.end
        return (weekday in self.days and second >= self.start) or (
            (weekday - 1) % 7 in self.days and second < self.end
        )


@dataclass(frozen=True, slots=True)
class Window:
    """Apply windows: `spans` in the wall-clock time of the zone `tz` (an IANA name, `UTC`).

    `text` is the window as written (`Mon-Fri 01:00-05:00; Sat,Sun 00:00-24:00`). Made by
    `parse_window`.
    """

    text: str
    tz: str
    spans: tuple[Span, ...]

    def contains(self, epoch_seconds: float) -> bool:
        """Whether the instant `epoch_seconds` (seconds since the epoch) falls in a span.

        The instant is turned into the zone's wall-clock time first, so the windows follow
        daylight-saving changes: `Sun 01:00-04:00` lasts two real hours on the night the
        clocks go forward and four on the night they go back (both `01:30`s are inside).
        """
        local = datetime.fromtimestamp(epoch_seconds, ZoneInfo(self.tz))
        second = (
            local.hour * 3600 + local.minute * 60 + local.second + local.microsecond / 1_000_000
        )
        weekday = local.weekday()
        return any(s.contains(weekday, second) for s in self.spans)


def _day(name: str, *, part: str, where: str) -> int:
    try:
        return DAYS.index(name.strip().lower())
    except ValueError:
        raise BadInput(
            f"{where}: {name.strip()!r} in {part!r} is not a day (Mon, Tue, ..., Sun)"
        ) from None


def _days(text: str, *, part: str, where: str) -> frozenset[int]:
    days: set[int] = set()
    for item in text.split(","):
        if "-" in item:
            first, last = item.split("-", 1)
            a, b = _day(first, part=part, where=where), _day(last, part=part, where=where)
            days.update((a + i) % 7 for i in range((b - a) % 7 + 1))  # Fri-Mon wraps the week
        else:
            days.add(_day(item, part=part, where=where))
    return frozenset(days)


def _clock(text: str, *, part: str, where: str, end: bool) -> int:
    m = _TIME.fullmatch(text.strip())
    if m is None:
        raise BadInput(f"{where}: {text.strip()!r} in {part!r} is not a time (HH:MM, e.g. 01:00)")
    h, mi = int(m.group(1)), int(m.group(2))
    if mi > 59 or h > 24 or (h == 24 and (mi or not end)):
        raise BadInput(
            f"{where}: {text.strip()!r} in {part!r} is not a time of day "
            "(00:00 to 23:59; 24:00 as an end)"
        )
    return h * 3600 + mi * 60


def _span(part: str, where: str) -> Span:
    words = part.split()
    if len(words) == 1:
        days, hours = frozenset(range(7)), words[0]
    elif len(words) == 2:
        days, hours = _days(words[0], part=part, where=where), words[1]
    else:
        raise BadInput(f"{where}: {part!r} is not DAYS HH:MM-HH:MM (e.g. Mon-Fri 01:00-05:00)")
    if hours.count("-") != 1:
        raise BadInput(f"{where}: {hours!r} in {part!r} is not a time range (HH:MM-HH:MM)")
    first, last = hours.split("-")
    start = _clock(first, part=part, where=where, end=False)
    end = _clock(last, part=part, where=where, end=True)
    if start == end % _DAY_SECONDS and end != _DAY_SECONDS:
        raise BadInput(f"{where}: {hours!r} in {part!r} is empty (start and end are equal)")
    return Span(days, start, end)


def parse_window(
    text: str, tz: str, *, where: str = "--window", tz_where: str = "--window-timezone"
) -> Window:
    """Parse apply windows, `;`-separated: `DAYS HH:MM-HH:MM` each, in the zone `tz`.

    DAYS is a comma list of days and day ranges, English three-letter names in any case
    (`Mon-Fri`, `Sat,Sun`, `Fri-Mon` wraps the week), or left out for every day. The hours are
    wall-clock times of `tz`, 00:00 to 24:00; an end before the start (`22:00-04:00`) runs
    past midnight, and the part after midnight belongs to the day the window started
    (`Fri 22:00-04:00` covers Saturday 02:00, not Friday 02:00). `tz` is an IANA zone name
    (`Europe/Berlin`, `UTC`); "" means UTC. Raises `BadInput` with one line naming the bad
    text (and `where` it came from, `tz_where` for the zone): an unknown day or zone, a
    malformed or impossible time, an empty range.
    """
    zone = tz.strip() or "UTC"
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise BadInput(
            f"{tz_where}: {tz!r} is not a time zone kubegc knows "
            "(an IANA name such as Europe/Berlin, or UTC)"
        ) from None
    parts = [p.strip() for p in text.split(";")]
    if not any(parts):
        raise BadInput(f"{where}: {text!r} names no window (e.g. Mon-Fri 01:00-05:00)")
    spans = tuple(_span(p, where) for p in parts if p)
    return Window(text.strip(), zone, spans)


# --- the circuit breaker ----------------------------------------------------------------------

#: The fewest applies in the window that can open the breaker. With fewer, one unlucky node
#: (a runtime restarting under it) would stop the whole fleet: at the default 20%, one failure
#: in five applies keeps it closed and two open it.
MIN_APPLIED = 5


def _at(report: NodeReport) -> float | None:
    if report.last_apply is None or not report.last_apply.at:
        return None
    try:
        return rfc3339_to_ns(report.last_apply.at) / NS_PER_SECOND
    except BadInput:
        return None


def breaker(
    reports: Iterable[NodeReport],
    now: float,
    *,
    window: float,
    max_failed_percent: float,
    min_applied: int = MIN_APPLIED,
) -> str:
    """The fleet's circuit breaker: "" when closed, else why it is open (one line).

    Counts the reports whose last apply happened within `window` seconds before `now`
    (seconds since the epoch; an apply stamped up to `FUTURE_SKEW` seconds in the future
    counts too, as other nodes' clocks may run ahead; one stamped further ahead does not, so
    that a forged or broken `lastApply.at` cannot hold the breaker open; nor does a report
    without a readable `lastApply.at`). An apply
    failed when it had failures or an error. The breaker opens when at least `min_applied`
    applies count and more than `max_failed_percent` percent of them failed (strictly more:
    20% of 10 failed keeps it closed at 20). Raises `ValueError` for a negative window or a
    percentage outside 0..100.
    """
    if window < 0:
        raise ValueError(f"window must not be negative, not {window!r}")
    if not 0 <= max_failed_percent <= 100:
        raise ValueError(f"max_failed_percent must lie in 0..100, not {max_failed_percent!r}")
    applied = failed = 0
    for r in reports:
        at = _at(r)
        if at is None or not now - window <= at <= now + FUTURE_SKEW or r.last_apply is None:
            continue
        applied += 1
        if r.last_apply.failures > 0 or r.last_apply.error:
            failed += 1
    if applied < min_applied or failed * 100 <= max_failed_percent * applied:
        return ""
    return (
        f"{failed} of {applied} applies in the last {format_duration(window)} failed "
        f"({failed * 100 / applied:.0f}%, more than {max_failed_percent:g}%): "
        "no apply slot is taken"
    )


# --- report writes ----------------------------------------------------------------------------


def should_write(
    new: NodeReport,
    old: NodeReport | None,
    *,
    last_write: float | None,
    now: float,
    heartbeat: float,
) -> bool:
    """Whether the agent writes `new` over `old` (the report as last written, None when none
    is known).

    Writes when there is no `old` or no `last_write` (seconds since the epoch), when `new`
    says anything else than `old` but for `observed_at` and figures within their two leading
    digits (`NodeReport.same_as`), or
    when `heartbeat` seconds have passed since `last_write`, so that a report that has not
    changed still shows the agent alive.
    """
    if old is None or last_write is None:
        return True
    if not new.same_as(old):
        return True
    return now - last_write >= heartbeat
