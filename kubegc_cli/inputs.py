"""Reading the files a user hands kubegc (pods file, snapshot, kubelet config, crictl.yaml).

Every failure is a `BadInput` whose one line names what the file is for, the path and why.
Regular files and pipes (`--pods-file <(kubectl get pods -o json)`) are read; directories and
devices are refused, and nothing larger than `MAX_INPUT_BYTES` is read.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from kubegc_cli.errors import BadInput

MAX_INPUT_BYTES = 1 << 30


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of `path`. Raises `BadInput` ("cannot read <what> <path>: <why>")."""
    try:
        st = os.stat(path)
        if stat.S_ISDIR(st.st_mode):
            raise BadInput(f"cannot read {what} {path}: it is a directory")
        if not (stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode)):
            raise BadInput(f"cannot read {what} {path}: not a regular file or pipe")
        with open(path, "rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise BadInput(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise BadInput(f"cannot read {what} {path}: larger than {MAX_INPUT_BYTES >> 20} MiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(
            f"{what} {path} is not UTF-8 text: {exc.reason} at byte {exc.start}"
        ) from None


def parse_json(text: str, path: Path, what: str) -> Any:
    """Decoded JSON, or `BadInput` ("<what> <path> is not valid JSON: <where>")."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{what} {path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadInput(f"{what} {path} is nested too deeply to be what kubegc reads") from None


def parse_yaml(text: str, path: Path, what: str) -> Any:
    """Decoded YAML (safe loader), or `BadInput` naming the file and the first problem."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadInput(f"{what} {path} is not valid YAML: {str(exc).splitlines()[0]}") from None
    except RecursionError:
        raise BadInput(f"{what} {path} is nested too deeply to be what kubegc reads") from None
    # A NUL can only come from an escape (`"\0"`, `"\x00"`, `"\u0000"`): look for one only then.
    if any(e in text for e in ("\\0", "\\x00", "\\u0000", "\\U00000000")):
        bad = _with_nul(doc)
        if bad is not None:
            raise BadInput(f"{what} {path}: {bad!r} holds a NUL character (no path or name can)")
    return doc


def _with_nul(value: Any) -> str | None:
    """The first string (key or value) in a decoded document that holds a NUL, or None."""
    pending = [value]
    while pending:
        v = pending.pop()
        if isinstance(v, str):
            if "\0" in v:
                return v
        elif isinstance(v, dict):
            pending.extend(v.keys())
            pending.extend(v.values())
        elif isinstance(v, list):
            pending.extend(v)
    return None
