"""Durations (Go syntax), quantities (Kubernetes syntax) and timestamps."""

from __future__ import annotations

import datetime
import math
import os
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.units import (
    format_bytes,
    format_duration,
    format_go_duration,
    ns_to_rfc3339,
    parse_bytes,
    parse_duration,
    parse_quantity,
    rfc3339_to_ns,
    safe_text,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0),
        ("0s", 0),
        ("90s", 90),
        ("2m", 120),
        ("1h30m", 5400),
        ("1.5h", 5400),
        ("300ms", 0.3),
        ("1m30.5s", 90.5),
        ("2h0m0s", 7200),
        ("+5s", 5),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "5",
        "1d",
        "1h-2m",
        "abc",
        "m",
        "1.h2",
        "-5s",
        "1s ",
        " 1s",
        "\t1s",
        "1s\n",
        ".s",
        "-",
        "1e3s",
    ],
)
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(BadInput) as err:
        parse_duration(text, flag="--older-than")
    assert "--older-than" in str(err.value)


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("2562047h47m16.854775807s", 2**63 - 1),
        ("2562047h47m16.8547758071s", 2**63 - 1),  # the fraction's tail is below 1ns
        ("-2562047h47m16.854775808s", -(2**63)),
        ("9223372036854775807ns", 2**63 - 1),
    ],
)
def test_durations_up_to_go_maximum(text: str, ns: int) -> None:
    """Go's time.Duration holds -2**63..2**63-1 ns; the boundary values are accepted exactly."""
    assert parse_duration(text, allow_negative=True) == ns / 1e9


@pytest.mark.parametrize(
    "text",
    ["2562047h47m16.854775808s", "9223372036854775808ns", "2562048h", "1h2562047h", "-2562048h"],
)
def test_durations_past_go_maximum_are_too_large(text: str) -> None:
    with pytest.raises(BadInput, match="too large"):
        parse_duration(text, flag="--timeout", allow_negative=True)


def test_negative_duration_allowed_when_asked() -> None:
    assert parse_duration("-5s", allow_negative=True) == -5


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("100Mi", 100 * 2**20),
        ("1Gi", 2**30),
        ("1.5Gi", 3 * 2**29),
        ("5000", 5000),
        ("1e3", 1000),
        ("1E3", 1000),
        ("2E", 2 * 10**18),
        ("500m", Fraction(1, 2)),
        ("1k", 1000),
        ("1M", 10**6),
        ("1Ei", 2**60),
        ("7Ei", 7 * 2**60),
        ("1e-400", Fraction(1, 10**400)),
    ],
)
def test_parse_quantity(text: str, value: Fraction | int) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    "text", ["", "Mi", "1.2.3", "1mi", "1KB", "ten", "8Ei", "1e400", "9223372036854775808"]
)
def test_parse_quantity_rejects(text: str) -> None:
    with pytest.raises(BadInput) as exc:
        parse_quantity(text, flag="--max-recv-size")
    assert repr(text) in str(exc.value) and "\n" not in str(exc.value)


def test_parse_bytes_rounds_up_and_must_be_positive() -> None:
    assert parse_bytes("1500m") == 2
    with pytest.raises(BadInput):
        parse_bytes("0")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("1ns", 1e-9), ("1.5ns", 1e-9), ("500us", 5e-4), ("500µs", 5e-4), ("300ms", 0.3),
     ("0.9999999ns", 0.0), ("0.0001ns", 0.0), ("1h1ns", 3600 + 1e-9)],
)  # fmt: skip
def test_durations_below_a_nanosecond_are_zero(text: str, seconds: float) -> None:
    """Less than a nanosecond is 0, as Go's ParseDuration (whole nanoseconds) has it, so
    `--timeout 0.5ns` is refused as 0; a part's fraction of a nanosecond is dropped."""
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12, abs=0)


def test_rfc3339_round_trip() -> None:
    ns = 1_700_000_000_123_456_789
    text = ns_to_rfc3339(ns)
    assert text == "2023-11-14T22:13:20.123456789Z"
    assert rfc3339_to_ns(text) == ns
    assert rfc3339_to_ns("2023-11-14T23:13:20+01:00") == 1_700_000_000 * 10**9
    with pytest.raises(BadInput):
        rfc3339_to_ns("yesterday", what="--now")


@given(st.integers(-(2**63), 2**64))
def test_rfc3339_text_is_the_calendar_time(ns: int) -> None:
    """Any nanosecond count gives datetime's UTC calendar time, clamped to years 1970-9999."""
    clamped = min(max(ns, 0), 253_402_300_800 * 10**9 - 1)
    secs, frac = divmod(clamped, 10**9)
    when = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=secs)
    text = when.strftime("%Y-%m-%dT%H:%M:%S") + (f".{frac:09d}Z" if frac else "Z")
    assert ns_to_rfc3339(ns) == text
    assert rfc3339_to_ns(text) == clamped


def test_formatting() -> None:
    assert format_go_duration(0) == "0s"
    assert format_go_duration(3600) == "1h0m0s"
    assert format_go_duration(90) == "1m30s"
    assert format_duration(45) == "45s"
    assert format_duration(3 * 3600 + 240) == "3h4m"
    assert format_duration(2 * 86400 + 5 * 3600) == "2d5h"
    assert format_bytes(0) == "0B"
    assert format_bytes(512) == "512B"
    assert format_bytes(1536) == "1.5Ki"
    assert format_bytes(20 * 2**20) == "20Mi"


def _quantity_by_fractions(text: str) -> Fraction | None:
    """A quantity's value computed wholly with fractions (None: not a quantity, too large)."""
    import re

    m = re.match(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))" + SUFFIXES + "$", text.strip())
    if not m:
        return None
    number, suffix = m.group(1), m.group(2) or ""
    factors = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
               "n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000),
               "": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
               "E": 10**18}  # fmt: skip
    value = Fraction(number)
    if suffix[:1] in ("e", "E") and suffix not in ("E", "Ei"):
        exponent = int(suffix[1:])
        value = value * Fraction(10) ** exponent if exponent < 40 else Fraction(2**63)
    else:
        value *= factors[suffix]
    return None if abs(value) > 2**63 - 1 else value


SUFFIXES = r"(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]{1,2})?"
QUANTITY_TEXT = st.from_regex(
    r"\A ?[+-]?([0-9]{1,20}(\.[0-9]{0,3})?|\.[0-9]{1,3})" + SUFFIXES + r"\Z"
)


@given(QUANTITY_TEXT)
def test_whole_quantities_read_without_fractions_have_the_same_value(text: str) -> None:
    """`parse_bytes` reads a whole number with a whole suffix as an int: the value (and every
    error) is what the exact fraction arithmetic gives."""
    expected = _quantity_by_fractions(text)
    if expected is None:
        with pytest.raises(BadInput, match="too large"):
            parse_quantity(text)
        with pytest.raises(BadInput, match="too large"):
            parse_bytes(text)
        return
    assert parse_quantity(text) == expected and type(parse_quantity(text)) is Fraction
    if expected <= 0:
        with pytest.raises(BadInput, match="must be positive"):
            parse_bytes(text)
    else:
        assert parse_bytes(text) == math.ceil(expected)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("plain name", "plain name"),
        ("p\x1b]0;t\x07", "p\\x1b]0;t\\x07"),
        ("line\nbreak\r", "line\\x0abreak\\x0d"),
        ("nel\u0085", "nel\\x85"),
        ("ls\u2028ps\u2029", "ls\\u2028ps\\u2029"),
        (os.fsdecode(b"ns\xff_p"), "ns\\xff_p"),  # a name's undecodable byte, as that byte
        (os.fsdecode(b"\x80\xfe"), "\\x80\\xfe"),
        ("\udcfe", "\\xfe"),
        ("\ud800", "\\ud800"),  # half a pair, not from a name
        ("tag\U000e0041", "tag\\U000e0041"),
        ("界é", "界é"),
    ],
)
def test_runtime_text_is_escaped_for_the_screen(text: str, shown: str) -> None:
    assert safe_text(text) == shown
