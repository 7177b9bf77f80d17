"""Mount points from `/proc/self/mountinfo` (proc(5)), for the "never delete into a mount" rule."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
# open a directory, never through a symlink at the last component
OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


_OCTAL = re.compile(r"\\([0-7]{3})")


def _unescape(field: str) -> str:
    # The kernel escapes space, tab, newline and backslash in a path as octal (`\040`); every
    # other byte is written as it is.
    return _OCTAL.sub(lambda m: chr(int(m[1], 8)), field) if "\\" in field else field


def _fields(text: str) -> Iterator[list[str]]:
    """The fields of each mountinfo line. Lines end with `\n` only and fields are separated by
    one space only: a path may hold any other byte (a vertical tab, U+0085, U+00A0 ...),
    which `str.split()` / `splitlines()` would take for a separator."""
    for line in text.split("\n"):
        if line:
            yield line.split(" ")


def decode(raw: bytes) -> str:
    """A mountinfo file's bytes as this process's `str` paths are spelled (`os.fsdecode`,
    surrogateescape): a mount point with a non-UTF-8 byte compares equal to the same path
    from `os.scandir`."""
    return os.fsdecode(raw)


def parse_mountinfo(text: str) -> frozenset[str]:
    """The mount points (5th field) of a mountinfo text (`decode`d), unescaped."""
    return frozenset(_unescape(parts[4]) for parts in _fields(text) if len(parts) >= 5)


def parse_mount_filesystems(text: str) -> list[tuple[str, str, str]]:
    """`(mount point, filesystem type, super options)` of each mountinfo line, in file order.

    The mount point (5th field) is unescaped; the type and super options are the first and
    third fields after the `-` separator that ends the optional fields (proc(5)). Lines
    without a separator or with too few fields are skipped.
    """
    out: list[tuple[str, str, str]] = []
    for parts in _fields(text):
        try:
            sep = parts.index("-", 6)
        except ValueError:
            continue
        if len(parts) < sep + 4:
            continue
        out.append((_unescape(parts[4]), parts[sep + 1], parts[sep + 3]))
    return out


class MountTable:
    """The mount points visible to this process, read once.

    `is_mount_point(p)` and `has_mount_below(p)` take real (symlink-free) absolute paths and
    answer from the points the table lists. A table that could not be read (`known` False,
    `error` says why) lists none, so its "not mounted" means nothing: every deletion path
    checks `known` first and refuses (anything may be mounted). Measuring code may still use
    it, with its own device checks.
    """

    def __init__(self, points: frozenset[str], error: str = "") -> None:
        self.points = points
        self.error = error

    @property
    def known(self) -> bool:
        """The table was read: its points are the mounts ("not listed" means "not mounted")."""
        return not self.error

    @classmethod
    def read(cls, path: Path = MOUNTINFO) -> MountTable:
        """Read `/proc/self/mountinfo`. An unreadable file, or one that lists no mount point
        (a real one always lists `/`), yields an unknown table (`known` False)."""
        try:
            text = decode(path.read_bytes())
        except OSError as exc:
            return cls.unreadable(f"cannot read the mount table {path} ({exc.strerror or exc})")
        points = parse_mountinfo(text)
        if not points:
            return cls.unreadable(f"the mount table {path} lists no mount point")
        return cls(points)

    @classmethod
    def unreadable(cls, why: str) -> MountTable:
        """An unknown table: `why` the mount table could not be read."""
        return cls(frozenset(), error=f"{why}: anything may be mounted")

    def is_mount_point(self, path: str) -> bool:
        return os.path.normpath(path) in self.points

    def has_mount_below(self, path: str) -> bool:
        prefix = os.path.normpath(path).rstrip("/") + "/"
        return any(p.startswith(prefix) for p in self.points)

    def at_or_below(self, path: str) -> list[str]:
        """The mount points at `path` or below it (real absolute paths), sorted."""
        top = os.path.normpath(path)
        prefix = top.rstrip("/") + "/"
        return sorted(p for p in self.points if p == top or p.startswith(prefix))


def mount_id(fd: int) -> int | None:
    """The mount ID of the open file `fd` (`mnt_id` in `/proc/self/fdinfo/<fd>`, Linux 3.15+),
    as `/proc/self/mountinfo` numbers mounts; None when it cannot be read. Two directories
    with the same mount ID are on the same mount: a bind mount shows another ID even when its
    source is on the same filesystem (same `st_dev`)."""
    try:
        info = os.open(f"/proc/self/fdinfo/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(info, 4096)  # a few short lines: pos, flags, mnt_id, ino
    except OSError:
        return None
    finally:
        os.close(info)
    at = data.find(b"\nmnt_id:")
    if at < 0:
        return None
    end = data.find(b"\n", at + 1)
    try:
        return int(data[at + 8 : end if end > 0 else None])
    except ValueError:
        return None


def dir_mount_id(path: str) -> int | None:
    """`mount_id` of the directory at `path` (opened without following a symlink at its last
    component); None when it cannot be opened or read."""
    try:
        fd = os.open(path, OPEN_DIR)
    except OSError:
        return None
    try:
        return mount_id(fd)
    finally:
        os.close(fd)
