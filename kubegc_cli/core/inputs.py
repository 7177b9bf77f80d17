"""Reading the files a user hands kubegc (pods file, snapshot, kubelet config, crictl.yaml),
and decoding every document that comes from outside kubegc.

`decode_json` and `decode_yaml` are the only decoders of foreign bytes — files a user names,
the runtime's verbose info, Kubernetes API replies, files in the state directory — and refuse
the same things everywhere (`Malformed`, one line naming the document): each caller says what
a document it cannot read means there. For a file a user named (`parse_json`, `parse_yaml`,
`read_text`) every failure is a `BadInput` whose one line names what the file is for, the
path and why.
Regular files and pipes (`--pods-file <(kubectl get pods -o json)`) are read; directories and
devices are refused, and nothing larger than `MAX_INPUT_BYTES` is read.
"""

from __future__ import annotations

import json
import os
import re
import select
import stat
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kubegc_cli.core.errors import BadInput

MAX_INPUT_BYTES = 1 << 30
PIPE_WAIT_SECONDS = 60  # for each write to a pipe or FIFO input (the first, and every next)
PIPE_TOTAL_SECONDS = 600  # for the whole of one pipe or FIFO input (a writer that trickles)


def present(path: Path | str) -> bool:
    """`path` exists, or whether it does cannot be told (`EACCES` on a directory on the way,
    for a user other than root): a default file or socket is then used as if there, so that
    reading it fails with its own clear error instead of being silently passed over."""
    try:
        os.stat(path)
    except PermissionError:
        return True
    except (OSError, ValueError):
        return False
    return True


def too_large(what: str, path: Path | str, limit: int) -> BadInput:
    """The one-line error for an input past its bound of `limit` bytes."""
    return BadInput(f"cannot read {what} {path}: larger than {limit >> 20} MiB")


def read_text(path: Path, what: str, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of `path`, at most `limit` bytes (default `MAX_INPUT_BYTES`): a regular
    file larger is refused from its size, a pipe once `limit` + 1 bytes have come (read in
    chunks: never more than that is held). Raises `BadInput` ("cannot read <what> <path>:
    <why>")."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise BadInput(f"cannot read {what} {path}: it is a directory")
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise BadInput(f"cannot read {what} {path}: not a regular file or pipe")
        if stat.S_ISFIFO(st.st_mode):
            data = _read_pipe(path, what, limit)
        elif st.st_size > limit:
            raise too_large(what, path, limit)
        else:
            with open(path, "rb") as f:
                data = f.read(limit + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise too_large(what, path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(
            f"{what} {path} is not UTF-8 text: {exc.reason} at byte {exc.start}"
        ) from None


def _read_pipe(path: Path, what: str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes written to the pipe or FIFO `path` (`<(kubectl get pods -o json)`), up to
    `limit` + 1, until the writer closes it. Opening does not wait for a writer; the
    first byte (or the writer's close) must come within `PIPE_WAIT_SECONDS`, and so must each
    next one, and the whole within `PIPE_TOTAL_SECONDS`, else `BadInput` — a FIFO nothing
    writes to, a writer that stalls (a hung `kubectl`) or one that trickles a byte at a time,
    is an error, not a hang. Raises `OSError`."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    deadline = time.monotonic() + PIPE_TOTAL_SECONDS
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BadInput(
                    f"cannot read {what} {path}: the writer was still writing after "
                    f"{PIPE_TOTAL_SECONDS} s ({size} bytes)"
                )
            if not poller.poll(int(min(PIPE_WAIT_SECONDS, left) * 1000) + 1):
                if time.monotonic() >= deadline:
                    continue  # said above, with the total
                stalled = (
                    f"nothing more was written after {size} bytes for"
                    if chunks
                    else ("nothing was written to the pipe within")
                )
                raise BadInput(f"cannot read {what} {path}: {stalled} {PIPE_WAIT_SECONDS} s")
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            except BlockingIOError:  # woken with nothing to read yet
                continue
            if not chunk:  # the writer closed it (a writer was there: poll said so)
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


MAX_INT_DIGITS = 40  # no number kubegc reads needs more (2^64 has 20)

# An escape that can make a NUL or half of a surrogate pair (only then are strings checked).
_ODD_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


#: Levels of objects and lists any document kubegc reads may nest: far more than a Pod
#: (~15, managedFields included), an OCI runtime spec or a config file needs, far fewer than
#: Python's recursion limit, so that nothing that later walks a document can hit it.
MAX_NESTING = 100


class Malformed(ValueError):
    """A document kubegc does not read (`decode_json`); `str()` is one line naming it and why."""


def decode_json(
    data: str | bytes, what: str, *, path_bytes: bool = False, text_checked: bool = True
) -> Any:
    """The decoded JSON document `data` (text, or bytes in UTF-8) that `what` names ("pods
    file /tmp/p.json", "Kubernetes API https://...: the pod list"): the one reader of every
    JSON document from outside kubegc — a file a user names, a runtime's verbose info, an API
    reply, a file in the state directory.

    Raises `Malformed` ("<what> is not valid JSON: ...", one line) for: bytes that are not
    UTF-8, text that is not JSON (where), an object with one key twice (which one counts?), a
    number of more than `MAX_INT_DIGITS` digits, a string holding a NUL or half of a surrogate
    pair (no name or path can), more than `MAX_NESTING` levels of objects and lists (whatever
    the recursion limit: never a `RecursionError`).

    With `path_bytes`, a lone surrogate U+DC80–U+DCFF is allowed: it is how kubegc writes a
    path's byte that is not UTF-8 (`os.fsdecode`; a plan file it wrote holds them). Without
    `text_checked` the strings are left to the caller (`check_text`, item by item: a list
    whose one bad item must not cost the others)."""
    text = _utf8(data, what)

    def whole(digits: str) -> int:
        if len(digits.lstrip("-")) > MAX_INT_DIGITS:
            raise Malformed(
                f"{what}: the number {digits[:20]}... has {len(digits)} digits "
                f"(at most {MAX_INT_DIGITS})"
            )
        return int(digits)

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            seen: set[str] = set()
            for key, _ in pairs:
                if key in seen:
                    raise Malformed(f"{what}: key {key!r} appears twice in one object")
                seen.add(key)
        return obj

    try:
        doc = json.loads(text, parse_int=whole, object_pairs_hook=unique)
    except json.JSONDecodeError as exc:
        raise Malformed(f"{what} is not valid JSON: {exc}") from None
    except RecursionError:
        raise Malformed(_too_deep(what)) from None
    _check_nesting(doc, text.count("[") + text.count("{"), what)
    if text_checked and _ODD_ESCAPE.search(text):
        check_text(doc, what, path_bytes=path_bytes)
    return doc


def _utf8(data: str | bytes, what: str) -> str:
    """`data` as text: bytes decoded as UTF-8, else `Malformed` naming `what` and the byte."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Malformed(f"{what} is not UTF-8 text: {exc.reason} at byte {exc.start}") from None


def _unreadable_number(what: str, exc: ValueError) -> Malformed:
    """The error for a document holding a number Python will not read (an integer of more
    than 4,300 digits: `int()`'s limit), naming `what` and the first clause of `exc`."""
    return Malformed(f"{what} holds a number kubegc cannot read: {str(exc).split(';')[0]}")


def _too_deep(what: str) -> str:
    return (
        f"{what} is nested too deeply to be what kubegc reads (more than {MAX_NESTING} "
        "levels of objects and lists)"
    )


def _check_nesting(doc: Any, openers: int, what: str) -> None:
    """`Malformed` when `doc` nests objects and lists more than `MAX_NESTING` levels deep.
    `openers` bounds the levels the text can hold (its `[`, `{`, `- `...): at most
    `MAX_NESTING` of them need no walk. The walk goes level by level, without recursion,
    looking at each value once (~25 ns a value)."""
    if openers <= MAX_NESTING:
        return
    level = [doc]
    for _ in range(MAX_NESTING):
        below: list[Any] = []
        add = below.append
        for v in level:
            if type(v) in _NESTING:
                for child in v.values() if type(v) is dict else v:
                    if type(child) in _NESTING:
                        add(child)
        if not below:
            return
        level = below
    raise Malformed(_too_deep(what))


_NESTING = (dict, list)  # what a decoded document nests (exact types: a walk's hot loop)


def parse_json(text: str, path: Path, what: str, *, path_bytes: bool = False) -> Any:
    """`decode_json` of a file a user named: `BadInput` naming `what` and `path` for every
    problem it finds (see there)."""
    try:
        return decode_json(text, f"{what} {path}", path_bytes=path_bytes)
    except Malformed as exc:
        raise BadInput(str(exc)) from None


def check_text(doc: Any, what: str, *, path_bytes: bool = False) -> None:
    """`Malformed` for the first string (key or value) holding a NUL or a lone surrogate
    (with `path_bytes`: one that does not stand for a byte, see `decode_json`)."""
    for text in _strings(doc):
        if "\0" in text:
            raise Malformed(f"{what}: {text!r} holds a NUL character (no path or name can)")
        try:
            text.encode("utf-8", "surrogateescape" if path_bytes else "strict")
        except UnicodeEncodeError:
            shown = text.encode("utf-8", "backslashreplace").decode("ascii", "replace")
            raise Malformed(
                f"{what}: {shown!r} holds half of a surrogate pair (not text)"
            ) from None


def shown(value: Any) -> str:
    """A decoded JSON or YAML value as JSON text (`true`, `null`, `{"a": 1}`: near what the user
    wrote, never Python's `True`/`None`), cut to 60 characters; for error messages."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def decode_yaml(text: str, what: str, *, unique_keys: bool = False) -> Any:
    """The decoded YAML document `text` (safe loader) that `what` names: the one reader of
    every YAML document from outside kubegc (config files, kubeconfigs, snapshots).

    Raises `Malformed` (one line naming `what` and the first problem): not YAML, an integer
    Python cannot read, an alias inside its own anchor, aliases that expand to more than
    `ALIAS_EXPANSION_PER_BYTE` values per byte, more than `MAX_NESTING` levels of mappings and
    lists (never a `RecursionError`), a string holding a NUL; with `unique_keys` (kubegc's own
    files, as JSON is read), a mapping with one key twice (which one counts?). Without it a
    later key wins, as the YAML readers of the kubelet, crictl and kubectl have it. A merge
    key's (`<<`) values that the mapping overrides are no key given twice."""
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    import yaml

    try:
        doc = yaml.load(text, Loader=_unique_key_loader() if unique_keys else yaml.SafeLoader)
    except _KeyTwice as exc:
        key = repr(exc.key) if isinstance(exc.key, str) else shown(exc.key)  # as decode_json
        raise Malformed(
            f"{what}: key {key} appears twice in one mapping (line {exc.line})"
        ) from None
    except yaml.YAMLError as exc:
        raise Malformed(f"{what} is not valid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise Malformed(_too_deep(what)) from None
    except ValueError as exc:  # an integer of more than 4,300 digits (Python's int() limit)
        raise _unreadable_number(what, exc) from None
    if "*" in text:  # an alias: the document may be a graph, not a tree
        size = _expanded_size(
            doc, limit=ALIAS_EXPANSION_BASE + ALIAS_EXPANSION_PER_BYTE * len(text)
        )
        if size is None:
            raise Malformed(f"{what} refers to itself (a YAML alias inside its own anchor)")
        if size < 0:
            raise Malformed(
                f"{what}: its YAML aliases expand to more values than kubegc reads "
                f"(more than {ALIAS_EXPANSION_PER_BYTE} per byte of the file)"
            )
    _check_nesting(doc, len(text), what)  # (block style nests without brackets)
    # A NUL can only come from an escape (`"\0"`, `"\x00"`, `"\u0000"`): look for one only then.
    if any(e in text for e in ("\\0", "\\x00", "\\u0000", "\\U00000000")):
        check_text(doc, what)
    return doc


def decode_toml(data: str | bytes, what: str) -> dict[str, Any]:
    """The decoded TOML document `data` (text, or bytes in UTF-8) that `what` names: the one
    reader of every TOML document from outside kubegc (containerd's and CRI-O's config files).

    Raises `Malformed` (one line naming `what` and the first problem): bytes that are not
    UTF-8, text that is not TOML, an integer Python cannot read, more than `MAX_NESTING`
    levels of tables and arrays (whatever the recursion limit: never a `RecursionError`)."""
    text = _utf8(data, what)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise Malformed(f"{what} is not TOML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise Malformed(_too_deep(what)) from None
    except ValueError as exc:  # an integer of more than 4,300 digits (Python's int() limit)
        raise _unreadable_number(what, exc) from None
    # Each level below the document is a `[`, a `{` or a `.` of a dotted key or table header.
    _check_nesting(doc, 1 + sum(text.count(c) for c in "[{."), what)
    return doc


class _KeyTwice(Exception):
    def __init__(self, key: Any, line: int) -> None:
        self.key, self.line = key, line


def _unique_key_loader() -> Any:
    """The safe loader, refusing (`_KeyTwice`) a key given twice in one mapping."""
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    import yaml

    class UniqueKeyLoader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=deep)
                try:
                    twice = key in seen
                    seen.add(key)
                except TypeError:  # an unhashable key: the safe loader's own error says so
                    continue
                if twice:
                    raise _KeyTwice(key, key_node.start_mark.line + 1)
            return super().construct_mapping(node, deep=deep)

    return UniqueKeyLoader


def parse_yaml(text: str, path: Path, what: str, *, unique_keys: bool = False) -> Any:
    """`decode_yaml` of a file a user named: `BadInput` naming `what` and `path` for every
    problem it finds (see there)."""
    try:
        return decode_yaml(text, f"{what} {path}", unique_keys=unique_keys)
    except Malformed as exc:
        raise BadInput(str(exc)) from None


#: How many values (scalars, mappings, lists) a YAML document may expand to once its aliases
#: are followed: enough for any sharing a writer does, far below an alias bomb ("billion
#: laughs": 9 nested anchors of 9 aliases are 387 million values from ~300 bytes).
ALIAS_EXPANSION_BASE = 1_000_000
ALIAS_EXPANSION_PER_BYTE = 100


def _expanded_size(doc: Any, *, limit: int) -> int | None:
    """How many values `doc` holds with every shared value counted where it is used (what
    walking it, or writing it out, costs); -1 once more than `limit`, None for a cycle.
    Iterative, each distinct mapping or list sized once."""
    if not isinstance(doc, dict | list):
        return 1
    sizes: dict[int, int] = {}
    active = {id(doc)}
    frames: list[tuple[Any, Iterator[Any], int]] = [(doc, iter(_children(doc)), 1)]
    while frames:
        v, it, total = frames[-1]
        for child in it:
            if not isinstance(child, dict | list):
                total += 1
                continue
            key = id(child)
            if key in active:
                return None
            if key in sizes:
                total += sizes[key]
                continue
            frames[-1] = (v, it, total)
            active.add(key)
            frames.append((child, iter(_children(child)), 1))
            break
        else:
            frames.pop()
            active.discard(id(v))
            if total > limit:
                return -1
            sizes[id(v)] = total
            if frames:
                pv, pit, ptotal = frames[-1]
                frames[-1] = (pv, pit, ptotal + total)
    return sizes[id(doc)]


def _children(v: dict[Any, Any] | list[Any]) -> list[Any]:
    return [*v.keys(), *v.values()] if isinstance(v, dict) else v


def _strings(value: Any) -> Iterator[str]:
    """Every string (key or value) in a decoded document, without recursion."""
    pending = [value]
    while pending:
        v = pending.pop()
        if isinstance(v, str):
            yield v
        elif isinstance(v, dict):
            pending.extend(v.keys())
            pending.extend(v.values())
        elif isinstance(v, list):
            pending.extend(v)


_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def check_namespace(name: str, *, flag: str) -> str:
    """`name` as given when it can name a Kubernetes namespace: an RFC 1123 label (lower-case
    letters, digits and `-`, starting and ending with a letter or digit, at most 63
    characters; apimachinery `IsDNS1123Label`). Raises `BadInput` naming `flag` otherwise."""
    if not _DNS_LABEL.fullmatch(name):
        raise BadInput(
            f"invalid value for {flag}: {name!r} is no namespace name (lower-case letters, "
            "digits and '-', at most 63)"
        )
    return name
