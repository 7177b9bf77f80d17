"""Removing a directory tree without leaving it: fd-relative, never through a symlink, never
into another mount.

Used by `gc logs` (a gone pod's log directory) and `residue clean` (orphaned pod and pod log
directories). Two guards keep a removal on the tree's own mount: the mount table (by path)
before anything is touched, and, while walking, each directory's mount ID as the kernel
reports it for the open descriptor (`mount_id`) — a bind mount from the same filesystem has the
same device number, and a mount made after the table was read is not in it, but either has
another mount ID.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field

from kubegc_cli.core.sizes import on_disk
from kubegc_cli.node.host.bounded import hung_below
from kubegc_cli.node.host.mounts import OPEN_DIR, MountTable, mount_id


@dataclass(frozen=True, slots=True)
class Pin:
    """A directory held open from planning to acting: `path` (local, real), `fd` (an open
    descriptor of it, -1 when it could not be opened), `mnt`, its mount ID then (None when
    unknown), and `host`, the path messages show for it (its host path under `--host-root`;
    `path` when empty). Removals below it act relative to `fd`, so a symlink or a mount put on
    its path since the plan changes nothing about which directory is acted in, and a
    directory below it on another mount than `mnt` is never entered. `stalled` is "" or why
    it was not opened: resolving or opening it got no answer within `--timeout` (a hung
    mount); nothing below it is then touched or removed."""

    path: str
    fd: int = -1
    mnt: int | None = None
    host: str = ""
    stalled: str = ""

    @classmethod
    def open(cls, path: str, host: str = "") -> Pin:
        """Pin the directory at `path` now (a `Pin` with `fd` -1 if it cannot be opened);
        `host` is the path to show for it."""
        try:
            fd = os.open(path, OPEN_DIR)
        except OSError:
            return cls(path, host=host)
        return cls(path, fd, mount_id(fd), host)

    def show(self, local: str = "") -> str:
        """The path to show for `local`, a path at or below `path` (default: `path` itself):
        the same path below `host`. Any other path is returned as given."""
        local = local or self.path
        if not self.host or not self.path:
            return local
        if local == self.path:
            return self.host
        if local.startswith(self.path.rstrip("/") + "/"):
            return os.path.join(self.host, local[len(self.path.rstrip("/")) + 1 :])
        return local

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)

    def entry(self, local: str) -> tuple[str, os.stat_result]:
        """(name, lstat result) of `local`, which must be `<path>/<name>`, read relative to
        `fd`. Raises `Refused` when the pin is not usable, `local` is not an entry of it, or
        the entry is gone."""
        if why := self.usable():
            raise Refused(f"{why}; left")
        head, name = os.path.split(local.rstrip("/"))
        if head != self.path or name in ("", ".", ".."):
            raise Refused(f"{self.show(local)} is not an entry of {self.show()}; left")
        try:
            return name, os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            raise Refused("gone before removal") from None

    def usable(self) -> str:
        """ "" when removals may act below it, else why not."""
        if self.stalled:
            return self.stalled
        if self.fd < 0:
            return f"{self.show()} could not be opened when planned"
        if self.mnt is None:
            return f"cannot read the mount ID of {self.show()}"
        return ""


class Refused(Exception):
    """The object no longer qualifies (or can no longer be checked); it is left in place and
    the finding is skipped with this message."""


@dataclass(slots=True)
class TreeRemoval:
    """What `remove_tree` did: `bytes_freed` (allocated bytes of the entries removed, each
    inode once, measured right before each removal), `left` (local paths not entered or not
    removed: another filesystem, a mount point, a directory that changed under the walk) and
    `errors` (entries whose removal failed, with the reason). `size_freed` is the apparent
    size (`st_size`) of the regular files removed, each inode once, in bytes."""

    bytes_freed: int = 0
    size_freed: int = 0
    left: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _seen: set[tuple[int, int]] = field(default_factory=set)

    @property
    def complete(self) -> bool:
        """Everything was removed: nothing left, nothing failed."""
        return not self.left and not self.errors

    def problem(self, shown: Callable[[str], str]) -> str:
        """Why the removal is not complete, one line: "partly removed; left (another
        filesystem or a mount point): ...; could not remove: ...", at most five of each;
        `shown` turns a local path into the path to show (a host path)."""
        parts = []
        if self.left:
            names = ", ".join(shown(p) for p in self.left[:5])
            parts.append(f"left (another filesystem or a mount point): {names}")
        if self.errors:
            parts.append("could not remove: " + "; ".join(self.errors[:5]))
        return "partly removed; " + "; ".join(parts)

    def count(self, st: os.stat_result) -> None:
        """Add the allocated bytes of a removed entry (`lstat` result taken right before its
        removal), once per inode. A file with other hard links then (`st_nlink` > 1) frees
        nothing and is not counted (its last link, if removed too, is)."""
        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
            return
        key = (st.st_dev, st.st_ino)
        if key not in self._seen:
            self._seen.add(key)
            self.bytes_freed += on_disk(st.st_blocks)
            if stat.S_ISREG(st.st_mode):
                self.size_freed += st.st_size


def remove_tree(local: str, mounts: MountTable, parent: Pin) -> TreeRemoval:
    """Remove the directory `local`, an entry of the pinned directory `parent` (`local` is
    `<parent.path>/<name>`), and everything below it that lies on its filesystem, as
    `rm -r --one-file-system` would, but safer.

    Everything is done relative to `parent.fd`, the directory as it was when planned: a
    symlink or mount put on the path of `parent` since then is not followed. Raises `Refused`
    without touching anything when the mount table could not be read (`mounts.known` False:
    anything may be mounted), `parent` is not usable, or the entry is a symlink, not a
    directory, has a mount point (per `mounts`) at or below it, or is not on `parent`'s
    mount (`mount_id`: a bind mount of the same filesystem has another ID), or a walk of this
    run got no answer at or below it (`host.bounded.hung_below`). While walking,
    every directory is opened relative to its parent with `O_NOFOLLOW` and checked to be the
    one listed; a symlink is unlinked, never followed; a directory on another device or
    mount, named by `mounts`, or swapped under the walk is left with its contents (and so are
    its ancestors), and reported in `left`. Failed removals are reported in `errors`; the
    walk goes on. The walk is iterative and holds two descriptors at most besides `parent`'s
    (it climbs back with `..`, checked to be the directory it came from), so depth is not
    limited.
    """
    if not mounts.known:
        raise Refused(f"{mounts.error}; left")
    below = mounts.at_or_below(local)  # (before it is touched: a stale mount would hang)
    if below:
        raise Refused(f"mounted at or below it now: {', '.join(map(parent.show, below))}; left")
    if hung := hung_below(local):  # a walk of this run got no answer there: it would hang
        shown = parent.show(hung)
        raise Refused(f"{shown} gave no answer within --timeout (a hung mount?); left")
    name, top = parent.entry(local)
    if stat.S_ISLNK(top.st_mode):
        raise Refused(f"{parent.show(local)} is a symlink now; left")
    if not stat.S_ISDIR(top.st_mode):
        raise Refused(f"{parent.show(local)} is no longer a directory; left")
    out = TreeRemoval()
    fd = os.open(name, OPEN_DIR, dir_fd=parent.fd)
    if not _same(os.fstat(fd), top):
        os.close(fd)
        raise Refused(f"{parent.show(local)} changed while it was opened; left")
    mnt = mount_id(fd)
    if mnt is None or mnt != parent.mnt:
        os.close(fd)
        shown = parent.show(local)
        raise Refused(f"{shown} is not on the mount of {parent.show()} (a mount point now); left")
    if _clear(fd, local, top, mnt, mounts, out):
        try:
            os.rmdir(name, dir_fd=parent.fd)
            out.count(top)
        except OSError as exc:
            out.errors.append(f"{local}: {exc.strerror or exc}")
    return out


def _same(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@dataclass(slots=True)
class _Dir:
    """A directory being emptied by `_clear`: its `name` in its parent, local `path`, `st`
    as listed, the entry `names` still to handle, and whether all so far went."""

    name: str
    path: str
    st: os.stat_result
    names: list[str]
    complete: bool = True


def _clear(
    fd: int, path: str, top: os.stat_result, mnt: int, mounts: MountTable, out: TreeRemoval
) -> bool:
    """Empty the directory open as `fd` (local path `path`, `top` its lstat, `mnt` its mount
    ID); True if it is now empty. Takes ownership of `fd` (closed on return).

    Depth-first without recursion: only the directory being emptied is open. Going down, the
    child is opened relative to it (`O_NOFOLLOW`, checked against its listing) and the parent
    closed; coming back, `..` is opened from the child and must be the parent as first
    listed, else the walk stops there (the tree moved under it) and reports it.
    """
    try:
        stack = [_Dir("", path, top, _names(fd))]
    except OSError as exc:
        os.close(fd)
        out.errors.append(f"{path}: {exc.strerror or exc}")
        return False
    try:
        while True:
            cur = stack[-1]
            if cur.names:
                name = cur.names.pop()
                sub = _enter(fd, cur, name, (top.st_dev, mnt), mounts, out)
                if sub is not None:
                    child_fd, child = sub
                    os.close(fd)
                    fd = child_fd
                    stack.append(child)
                continue
            done = stack.pop()
            if not stack:
                return done.complete
            parent = stack[-1]
            try:
                up = os.open("..", OPEN_DIR, dir_fd=fd)
            except OSError as exc:
                out.errors.append(f"{done.path}/..: {exc.strerror or exc}")
                return False
            os.close(fd)
            fd = up
            if not _same(os.fstat(fd), parent.st):
                out.errors.append(f"{parent.path} moved while it was being removed; stopped")
                return False
            if not done.complete:
                parent.complete = False
                continue
            try:
                os.rmdir(done.name, dir_fd=fd)
                out.count(done.st)
            except FileNotFoundError:
                pass
            except OSError as exc:
                out.errors.append(f"{done.path}: {exc.strerror or exc}")
                parent.complete = False
    finally:
        os.close(fd)


def _names(fd: int) -> list[str]:
    with os.scandir(fd) as it:
        return [e.name for e in it]


def _enter(
    fd: int, cur: _Dir, name: str, home: tuple[int, int], mounts: MountTable, out: TreeRemoval
) -> tuple[int, _Dir] | None:
    """Handle the entry `name` of the directory `cur` (open as `fd`): unlink it if it is no
    directory; leave it if it is a mount point, on another device or mount than `home` (the
    tree's device and mount ID) or swapped since listed; else return its open descriptor and
    `_Dir` to descend into. Marks `cur` incomplete when the entry stays."""
    child = f"{cur.path.rstrip('/')}/{name}"

    def stays(exc: OSError | None = None) -> tuple[int, _Dir] | None:
        """The entry stays (nothing to descend into): left, not entered, without `exc`;
        failed with it — unless it is gone, which is fine."""
        if exc is None:
            out.left.append(child)
            cur.complete = False
        elif not isinstance(exc, FileNotFoundError):
            out.errors.append(f"{child}: {exc.strerror or exc}")
            cur.complete = False
        return None

    if mounts.is_mount_point(child):  # not even stat'ed: a stale mount would hang
        return stays()
    try:
        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError as exc:
        return stays(exc)
    if not stat.S_ISDIR(st.st_mode):
        try:
            os.unlink(name, dir_fd=fd)
            out.count(st)
        except OSError as exc:
            stays(exc)
        return None
    if st.st_dev != home[0]:
        return stays()
    try:
        sub = os.open(name, OPEN_DIR, dir_fd=fd)
    except OSError as exc:
        return stays(exc)
    try:
        # swapped or mounted over since listed, or another mount of the same filesystem
        if not _same(os.fstat(sub), st) or mount_id(sub) != home[1]:
            os.close(sub)
            return stays()
        names = _names(sub)
    except OSError as exc:
        os.close(sub)
        return stays(exc)
    return sub, _Dir(name, child, st, names)
