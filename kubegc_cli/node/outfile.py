"""Files kubegc writes where a user named them (`snapshot -f`, `--plan-out`, `--metrics-file`).

Each is replaced whole, never written in place: a temporary file in the same directory, made
with `mkstemp` (O_EXCL: never through a link planted at its name), given its mode through its
descriptor (never by name, which another user of a shared directory could swap for a link),
fsync'ed, then renamed over the path. A path that is anything but a regular file — a link
planted there, `/dev/stdout`, a device — is refused (neither followed nor replaced), and a
reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Any


def replace_file(path: Path, data: str, mode: int = 0o644) -> None:
    """Replace `path` with the UTF-8 text `data`, file mode `mode` (see the module doc).

    Raises `OSError` (the directory is missing or not writable, a full disk; `path` is
    something other than a regular file — a symbolic link, such as `/dev/stdout` or one
    planted in a shared directory, a device, a FIFO, a directory: replacing that name would
    break what others use it for); the temporary file is never left behind."""
    _refuse_special(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), mode)
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)


def _refuse_special(path: Path) -> None:
    """`OSError` (EINVAL) when `path` exists and is not a regular file: a symbolic link (one
    planted in a shared directory, or `/dev/stdout`'s), a device, a FIFO, a directory. A
    missing path or a regular file is fine."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISREG(st.st_mode):
        return
    what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file"
    raise OSError(
        errno.EINVAL,
        f"is {what} (kubegc writes a new file or replaces a regular one; never through or "
        "over a link, a device, a pipe or a directory)",
        str(path),
    )


def yaml_text(doc: Any) -> str:
    """`doc` (plain dicts, lists, strings, numbers, booleans, None) as a block-style YAML
    document, keys in the document's order, with PyYAML's safe dumper: a subclass of int or str
    (an `ExitCode`, a `Mode`) is written as the plain number or string it is, as JSON writes
    it; a string YAML would read as another type (`'2024-01-01T00:00:00Z'`, `'yes'`, `'null'`)
    is quoted, and a character that is not printable (a path's byte that is not UTF-8, kept by
    `os.fsdecode` as a lone surrogate) is escaped (`"\\uDCFF"`), so that
    `core.inputs.decode_yaml` reads back the very values written."""
    # deferred: tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package
    import yaml

    dumper: Any = type("KubegcDumper", (yaml.SafeDumper,), {})
    dumper.add_multi_representer(int, lambda d, v: d.represent_int(int(v)))
    dumper.add_multi_representer(str, lambda d, v: d.represent_str(str(v)))
    dumper.default_flow_style = False
    text: str = yaml.dump(doc, Dumper=dumper, sort_keys=False)
    return text
