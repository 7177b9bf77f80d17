"""Label selectors in kubectl's grammar (`-l/--selector`).

    selector     = requirement ("," requirement)*          comma: every requirement holds
    requirement  = key ("=" | "==" | "!=") value            equality
                 | key ("in" | "notin") "(" values ")"      set-based
                 | key                                      the label exists
                 | "!" key                                  the label does not exist
    values       = value ("," value)*

Blanks around tokens are ignored. Keys follow Kubernetes' rules for label keys: an optional
prefix, a DNS subdomain (lower-case, at most 253 characters) followed by `/`, and a name of
1–63 characters of `[A-Za-z0-9-_.]` that starts and ends alphanumeric. Values are at most 63
such characters and may be empty. As on Kubernetes, `in`/`notin` need at least one value,
`k!=v` and `k notin (...)` hold for an object without the label, and `k=v`, `k in (...)`
need it. Kubernetes' `<`/`>` operators are not accepted.

`parse(text)` gives an immutable `Selector`; any text it cannot use is `BadInput` (exit 2)
with one line naming the text. The module needs only the standard library.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kubegc_cli.core.errors import BadInput

#: Operators, as `Requirement.operator` holds them.
EQUALS = "="
NOT_EQUALS = "!="
IN = "in"
NOT_IN = "notin"
EXISTS = "exists"
DOES_NOT_EXIST = "!"

MAX_NAME = 63
MAX_PREFIX = 253
MAX_VALUE = 63
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", re.ASCII)
_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?", re.ASCII)
_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUBDOMAIN = re.compile(rf"{_DNS_LABEL}(\.{_DNS_LABEL})*", re.ASCII)

#: Characters that end an identifier (besides blanks).
_SPECIAL = "=!(),<>"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement on one label: `operator` is one of `EQUALS`, `NOT_EQUALS`, `IN`,
    `NOT_IN`, `EXISTS`, `DOES_NOT_EXIST`; `values` is sorted and without repeats (one value for
    the equality operators, none for the existence ones)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` (label key → value) satisfy this requirement."""
        if self.operator == EXISTS:
            return self.key in labels
        if self.operator == DOES_NOT_EXIST:
            return self.key not in labels
        value = labels.get(self.key)
        if self.operator in (EQUALS, IN):
            return value is not None and value in self.values
        return value is None or value not in self.values

    def __str__(self) -> str:
        if self.operator == EXISTS:
            return self.key
        if self.operator == DOES_NOT_EXIST:
            return f"!{self.key}"
        if self.operator in (EQUALS, NOT_EQUALS):
            return f"{self.key}{self.operator}{self.values[0]}"
        joined = ",".join(self.values) if self.values != ("",) else ","  # (,) is the empty value
        return f"{self.key} {self.operator} ({joined})"


@dataclass(frozen=True, slots=True)
class Selector:
    """Requirements that must all hold, in canonical order (by key, then as written).

    `str()` is the canonical text: requirements sorted by key, `==` written `=`, set values
    sorted without repeats (`app=web,tier in (a,b)`); parsing it gives an equal `Selector`.
    """

    requirements: tuple[Requirement, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether `labels` (label key → value) satisfy every requirement."""
        return all(r.matches(labels) for r in self.requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


def _bad(text: str, why: str) -> BadInput:
    return BadInput(f"invalid label selector {text!r}: {why}")


def key_problem(key: str) -> str:
    """Why `key` is not a valid label key ("" when it is): Kubernetes' qualified-name rules."""
    if not key:
        return "empty key"
    prefix, slash, name = key.rpartition("/")
    if slash:
        if not prefix:
            return f"key {key!r}: the prefix before '/' is empty"
        if "/" in prefix:
            return f"key {key!r}: more than one '/'"
        if len(prefix) > MAX_PREFIX:
            return f"key {key!r}: prefix longer than {MAX_PREFIX} characters"
        if not _SUBDOMAIN.fullmatch(prefix):
            return (
                f"key {key!r}: prefix {prefix!r} is not a DNS subdomain (lower-case a-z, 0-9, "
                "'-' and '.', alphanumeric at both ends of each part)"
            )
    if not name:
        return f"key {key!r}: empty name"
    if len(name) > MAX_NAME:
        return f"key {key!r}: name longer than {MAX_NAME} characters"
    if not _NAME.fullmatch(name):
        return f"key {key!r}: a name is A-Z, a-z, 0-9, '-', '_' and '.', alphanumeric at both ends"
    return ""


def value_problem(value: str) -> str:
    """Why `value` is not a valid label value ("" when it is; the empty value is valid)."""
    if len(value) > MAX_VALUE:
        return f"value {value!r} longer than {MAX_VALUE} characters"
    if not _VALUE.fullmatch(value):
        return (
            f"value {value!r}: a value is A-Z, a-z, 0-9, '-', '_' and '.', alphanumeric at "
            "both ends"
        )
    return ""


def _tokens(text: str) -> list[str]:
    """Split into identifiers and the operators `=`, `==`, `!=`, `!`, `(`, `)`, `,`, `<`, `>`.
    Blanks separate tokens and are dropped."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
        elif ch in _SPECIAL:
            two = text[i : i + 2]
            if two in ("==", "!="):
                out.append(two)
                i += 2
            else:
                out.append(ch)
                i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in _SPECIAL:
                j += 1
            out.append(text[i:j])
            i = j
    return out


def _is_identifier(token: str | None) -> bool:
    return token is not None and token[0] not in _SPECIAL


class _Parser:
    """A parser over the tokens of one selector text (the grammar is flat: no recursion)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str | None:
        token = self.peek()
        self.pos += 1
        return token

    def fail(self, expected: str) -> BadInput:
        """`expected` where the next token stands (or the end)."""
        found = self.tokens[self.pos - 1] if 0 < self.pos <= len(self.tokens) else None
        at = "at the end" if found is None else f"found {found!r}"
        return _bad(self.text, f"expected {expected}, {at}")

    def key(self) -> str:
        token = self.take()
        if not _is_identifier(token) or token in (IN, NOT_IN):
            raise self.fail("a label key")
        assert token is not None
        why = key_problem(token)
        if why:
            raise _bad(self.text, why)
        return token

    def value(self) -> str:
        """A value after `=`, `==`, `!=` or in a set: an identifier, or nothing (empty)."""
        token = self.peek()
        if token in (None, ",", ")"):
            return ""
        self.take()
        if not _is_identifier(token):
            raise self.fail("a label value")
        assert token is not None
        why = value_problem(token)
        if why:
            raise _bad(self.text, why)
        return token

    def value_set(self) -> tuple[str, ...]:
        if self.take() != "(":
            raise self.fail("'(' after in/notin")
        values = [self.value()]
        while True:
            token = self.take()
            if token == ")":
                break
            if token != ",":
                raise self.fail("',' or ')' in a value list")
            values.append(self.value())
        if values == [""] and self.tokens[self.pos - 2] == "(":
            raise _bad(self.text, "in/notin need at least one value")
        return tuple(sorted(set(values)))

    def requirement(self) -> Requirement:
        if self.peek() == "!":
            self.take()
            key = self.key()
            if self.peek() not in (None, ","):
                self.take()
                raise self.fail(f"',' or the end after !{key}")
            return Requirement(key, DOES_NOT_EXIST)
        key = self.key()
        op = self.peek()
        if op in (None, ","):
            return Requirement(key, EXISTS)
        self.take()
        if op in ("=", "=="):
            return Requirement(key, EQUALS, (self.value(),))
        if op == "!=":
            return Requirement(key, NOT_EQUALS, (self.value(),))
        if op in (IN, NOT_IN):
            return Requirement(key, op, self.value_set())
        if op in ("<", ">"):
            raise _bad(self.text, f"operator {op!r} is not supported (use =, ==, !=, in, notin, "
                                  "a key alone, or !key)")  # fmt: skip
        raise self.fail("=, ==, !=, in, notin, ',' or the end")

    def selector(self) -> Selector:
        if not self.tokens:
            raise _bad(self.text, "empty selector (give at least one requirement)")
        found = [self.requirement()]
        while self.peek() is not None:
            if self.take() != ",":
                raise self.fail("',' between requirements")
            found.append(self.requirement())
        return Selector(tuple(sorted(found, key=lambda r: r.key)))


def parse(text: str) -> Selector:
    """Parse a label selector (kubectl's grammar, see the module doc) into a `Selector`.

    Raises `BadInput` (exit 2) with one line naming `text` and what is wrong with it: an
    empty or blank text, a syntax error, a key or value Kubernetes would not accept, an
    in/notin with no values, or the `<`/`>` operators.
    """
    return _Parser(text).selector()
