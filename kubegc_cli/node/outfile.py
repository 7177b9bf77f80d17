"""Files kubegc writes where a user named them (`snapshot -f`, `--plan-out`, `--metrics-file`).

Each is replaced whole, never written in place: a temporary file in the same directory, made
with `mkstemp` (O_EXCL: never through a link planted at its name), given its mode through its
descriptor (never by name, which another user of a shared directory could swap for a link),
fsync'ed, then renamed over the path. A link planted at the path is replaced, never followed,
and a reader sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any


def replace_file(path: Path, data: str, mode: int = 0o644) -> None:
    """Replace `path` with the UTF-8 text `data`, file mode `mode` (see the module doc).

    Raises `OSError` (the directory is missing or not writable, a full disk); the temporary
    file is never left behind."""
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
