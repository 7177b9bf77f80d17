"""Parsing and formatting of durations, byte sizes and timestamps.

Durations use Go's `time.ParseDuration` grammar, as the kubelet's flags do (`90s`, `2m`,
`1h30m`, `1.5h`, `300ms`); a bare `0` is accepted, as in Go. Timestamps from CRI are integer
nanoseconds since the Unix epoch.
"""

from __future__ import annotations

import math
import re
import time
from datetime import datetime
from typing import TYPE_CHECKING

from kubegc_cli.core.errors import BadInput

if TYPE_CHECKING:
    from fractions import Fraction  # imported when a quantity needs it (it pulls in decimal)

_UNIT_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)")
_MAX_DURATION_NS = 2**63 - 1  # Go's time.Duration maximum (a negative one may reach -2**63)

NS_PER_SECOND = 1_000_000_000
MAX_TIMESTAMP_NS = 253_402_300_800 * NS_PER_SECOND  # 10000-01-01T00:00:00Z


def parse_duration(text: str, *, flag: str = "duration", allow_negative: bool = False) -> float:
    """Parse a Go duration string into seconds (float).

    The value is Go's `time.ParseDuration` one, in whole nanoseconds: each part's fraction is
    truncated to a nanosecond as Go does, and more than 2**63-1 ns (about 292 years) is an
    overflow. `flag` names the option in the error. Raises `BadInput` for anything Go would
    reject (`"5"`, `"1d"`, `""`, `"1h-2m"`, `" 1s"`, `"1s "`) and for negative values unless
    `allow_negative`.
    """
    orig = text
    if not text:
        raise BadInput(
            f"invalid value for {flag}: {text!r} is an empty duration (use e.g. 30s, 5m, 1h30m)"
        )
    s = text
    negative = s[0] == "-"
    if s[0] in "+-":
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise BadInput(f"invalid value for {flag}: {orig!r} is not a duration")
    pos = 0
    total_ns = 0
    while pos < len(s):
        m = _PART.match(s, pos)
        whole, fraction = (m.group(1), m.group(2)) if m else ("", None)
        if not m or not (whole or fraction):
            raise BadInput(
                f"invalid value for {flag}: {orig!r} is not a duration (use e.g. 30s, 5m, 1h30m)"
            )
        unit = _UNIT_NS[m.group(3)]
        total_ns += int(whole or "0") * unit
        if fraction and fraction.strip("0"):
            digits = fraction[:18]  # (Go stops reading a fraction's digits before overflow)
            total_ns += int(int(digits) * (unit / 10 ** len(digits)))
        if total_ns > _MAX_DURATION_NS + negative:
            raise BadInput(
                f"invalid value for {flag}: {orig!r} is too large (at most about 292 years)"
            )
        pos = m.end()
    if negative and total_ns and not allow_negative:
        raise BadInput(f"invalid value for {flag}: {orig!r} must not be negative")
    return (-total_ns if negative else total_ns) / NS_PER_SECOND


def format_duration(seconds: float) -> str:
    """Render seconds compactly the way kubectl shows ages: `45s`, `12m`, `3h4m`, `2d5h`."""
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m" if s == 0 or m >= 10 else f"{m}m{s}s"
    h, m = divmod(m, 60)
    if h < 48:
        return f"{h}h" if m == 0 else f"{h}h{m}m"
    d, h = divmod(h, 24)
    return f"{d}d" if h == 0 else f"{d}d{h}h"


def format_go_duration(seconds: float) -> str:
    """Render seconds as Go's `time.Duration.String()` would for whole seconds: `0s`, `1h0m0s`."""
    s = round(seconds)
    if s == 0:
        return "0s"
    sign = "-" if s < 0 else ""
    s = abs(s)
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    if h:
        return f"{sign}{h}h{m}m{sec}s"
    if m:
        return f"{sign}{m}m{sec}s"
    return f"{sign}{sec}s"


def format_seconds(seconds: float) -> str:
    """A timeout for messages: `10s`, `1.5s`, `250ms`, `1µs`."""
    if seconds >= 1:
        return f"{seconds:g}s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:g}ms"
    return f"{seconds * 1e6:g}µs"


def format_bytes(n: int) -> str:
    """Binary units as kubectl prints quantities: `0`, `512B`, `1.5Ki`, `20Mi`, `3.1Gi`."""
    if n == 0:
        return "0B"
    value = float(n)
    for unit in ("B", "Ki", "Mi", "Gi", "Ti"):
        if abs(value) < 1024 or unit == "Ti":
            if unit == "B":
                return f"{int(value)}B"
            return f"{value:.1f}{unit}".replace(".0" + unit, unit)
        value /= 1024
    return f"{n}B"


def escaped_char(ch: str) -> str:
    """One character written as an escape for a screen or a log: a byte `os.fsdecode` could
    not decode (a lone surrogate U+DC80–U+DCFF) as that byte, `\\xff`; any other character
    below U+0100 as `\\xNN`, others as `\\uNNNN` / `\\UNNNNNNNN`."""
    n = ord(ch)
    if 0xDC80 <= n <= 0xDCFF:
        return f"\\x{n - 0xDC00:02x}"
    if n < 0x100:
        return f"\\x{n:02x}"
    return f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def safe_text(value: str) -> str:
    """Text from outside kubegc (a runtime, the API, a file) made harmless for a terminal or a
    log: every character that is not printable — control characters (escape sequences,
    newlines), separators such as U+2028, format characters such as bidi overrides — is
    written as its escape (`\\x1b`, `\\u2028`; a name's undecodable byte as `\\xff`,
    `escaped_char`), so the text stays on its line and shows as what it is."""
    if value.isprintable():
        return value
    return "".join(ch if ch.isprintable() else escaped_char(ch) for ch in value)


_DATES: dict[int, str] = {}  # day number since the epoch -> "YYYY-MM-DDT"
_CLOCKS: dict[int, str] = {}  # second of the day -> "HH:MM:SS" (at most 86,400)


def ns_to_rfc3339(ns: int) -> str:
    """CRI nanoseconds since the epoch → RFC 3339 UTC with nanosecond precision (`...Z`);
    clamped to 1970-01-01T00:00:00Z .. 9999-12-31T23:59:59.999999999Z.

    A plan writes one or two per container (100,000s): the date of each day and the clock
    text of each second of the day are made once (UTC days are 86,400 s: no leap seconds in
    Unix time), ~3x `time.strftime(time.gmtime(...))` per call.
    """
    secs, frac = divmod(min(max(ns, 0), MAX_TIMESTAMP_NS - 1), NS_PER_SECOND)
    day, second = divmod(secs, 86_400)
    date = _DATES.get(day)
    if date is None:
        if len(_DATES) >= 10_000:
            _DATES.clear()
        date = _DATES[day] = time.strftime("%Y-%m-%dT", time.gmtime(day * 86_400))
    clock = _CLOCKS.get(second)
    if clock is None:
        clock = _CLOCKS[second] = f"{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}"
    return f"{date}{clock}.{frac:09d}Z" if frac else f"{date}{clock}Z"


_RFC3339 = re.compile(
    r"^([0-9]{4}-[0-9]{2}-[0-9]{2})[Tt ]([0-9]{2}:[0-9]{2}:[0-9]{2})(?:\.([0-9]{1,9}))?"
    r"(Z|z|[+-][0-9]{2}:[0-9]{2})$"
)


def rfc3339_to_ns(text: str, *, what: str = "timestamp") -> int:
    """RFC 3339 text (`2026-11-29T10:00:00.5Z`, offsets allowed) → nanoseconds since the epoch.

    Raises `BadInput` naming `what` when the text is not RFC 3339.
    """
    m = _RFC3339.match(text.strip())
    if not m:
        raise BadInput(f"invalid {what}: {text!r} is not an RFC 3339 time (2026-01-02T15:04:05Z)")
    date, clock, frac, zone = m.groups()
    zone = "+00:00" if zone in ("Z", "z") else zone
    try:
        dt = datetime.fromisoformat(f"{date}T{clock}{zone}")
    except ValueError as exc:
        why = "the UTC offset is out of range" if "offset" in str(exc) else str(exc)
        raise BadInput(f"invalid {what}: {text!r}: {why}") from None
    ns = int(dt.timestamp()) * NS_PER_SECOND + int((frac or "0").ljust(9, "0"))
    if not 0 <= ns < MAX_TIMESTAMP_NS:
        raise BadInput(f"invalid {what}: {text!r} is outside 1970-01-01 .. 9999-12-31 UTC")
    return ns


_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]{1,4})?$"
)
MAX_QUANTITY = 2**63 - 1  # what a Kubernetes quantity's Value() can hold (int64)
MAX_QUANTITY_DIGITS = 64  # the longest number a quantity may be written with (sign, dot included)
_SUFFIX_FACTOR: dict[str, int] = {
    "Ki": 1024,
    "Mi": 1024**2,
    "Gi": 1024**3,
    "Ti": 1024**4,
    "Pi": 1024**5,
    "Ei": 1024**6,
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_SUFFIX_DIVISOR = {"n": 10**9, "u": 10**6, "m": 1000}


def parse_quantity(text: str, *, flag: str = "quantity") -> Fraction:
    """Parse a Kubernetes resource quantity (`100Mi`, `1.5Gi`, `5000`, `1e3`, `500m`) exactly.

    Returns a `Fraction` (no rounding). Raises `BadInput` naming `flag` and the value, also for
    a magnitude above 2^63−1 (an int64, as Kubernetes holds quantities).
    """
    from fractions import Fraction

    return Fraction(_quantity(text, flag))


def _quantity(text: str, flag: str) -> int | Fraction:
    """`parse_quantity`'s value, as an int when it is a whole number with a whole suffix (the
    same value, without `fractions`)."""
    m = _QUANTITY.match(text.strip())
    if not m:
        raise BadInput(f"invalid value for {flag}: {text!r} is not a quantity (e.g. 100Mi, 1Gi)")
    number, suffix = m.group(1), m.group(2) or ""
    if len(number) > MAX_QUANTITY_DIGITS:  # (int() refuses above 4,300 digits anyway)
        raise BadInput(
            f"invalid value for {flag}: {text[:24]!r}... ({len(number)} digits) has too many "
            f"digits (at most {MAX_QUANTITY_DIGITS})"
        )
    if suffix in _SUFFIX_FACTOR and number.lstrip("+-").isdigit():
        whole = int(number) * _SUFFIX_FACTOR[suffix]
        if abs(whole) > MAX_QUANTITY:
            raise _too_large(text, flag)
        return whole
    from fractions import Fraction

    value = Fraction(number)
    if suffix[:1] in ("e", "E") and suffix not in ("E", "Ei"):
        exponent = int(suffix[1:])
        value = value * Fraction(10) ** exponent if exponent < 40 else Fraction(MAX_QUANTITY + 1)
    elif suffix in _SUFFIX_FACTOR:
        value *= _SUFFIX_FACTOR[suffix]
    else:
        value *= Fraction(1, _SUFFIX_DIVISOR[suffix])
    if abs(value) > MAX_QUANTITY:
        raise _too_large(text, flag)
    return value


def _too_large(text: str, flag: str) -> BadInput:
    return BadInput(
        f"invalid value for {flag}: {text!r} is too large (at most 2^63-1 = {MAX_QUANTITY})"
    )


def parse_bytes(text: str, *, flag: str = "size", whole: bool = False) -> int:
    """A quantity as whole bytes, rounded up as Kubernetes' `Quantity.Value()` does; must be > 0.
    With `whole`, a fraction of a byte (`0.5`, `100m`) is refused instead of rounded up.
    Raises `BadInput` naming `flag` and the text."""
    q = _quantity(text, flag)
    if q <= 0:
        raise BadInput(f"invalid value for {flag}: {text!r} must be positive")
    if whole and q != math.floor(q):
        raise BadInput(f"invalid value for {flag}: {text!r} is not a whole number of bytes")
    return math.ceil(q)
