"""Mount points from `/proc/self/mountinfo` (proc(5)), for the "never delete into a mount" rule."""

from __future__ import annotations

import os
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")


def _unescape(field: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal (\040 ...).
    if "\\" not in field:
        return field
    out = []
    i = 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) + 0 and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> frozenset[str]:
    """The mount points (5th field) of a mountinfo text, unescaped."""
    points = set()
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 5:
            points.add(_unescape(parts[4]))
    return frozenset(points)


def parse_mount_filesystems(text: str) -> list[tuple[str, str, str]]:
    """`(mount point, filesystem type, super options)` of each mountinfo line, in file order.

    The mount point (5th field) is unescaped; the type and super options are the first and
    third fields after the `-` separator that ends the optional fields (proc(5)). Lines
    without a separator or with too few fields are skipped.
    """
    out: list[tuple[str, str, str]] = []
    for line in text.splitlines():
        parts = line.split()
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
            text = path.read_text(encoding="utf-8", errors="replace")
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
