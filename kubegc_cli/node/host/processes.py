"""The host's processes, read from procfs: the running kubelet's command line, whose flags
are eviction and image GC settings in force."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

#: A process as `process_table` yields it: (pid, name, argv — None when it cannot be read).
Process = tuple[int, str, list[str] | None]
#: A process of the node's: (pid, argv — None when it cannot be read).
NodeProcess = tuple[int, list[str] | None]


def _argv(data: bytes) -> list[str]:
    """`/proc/<pid>/cmdline` → argv, as psutil splits it: on NUL bytes, or on spaces when a
    process rewrote its title without NULs (setproctitle); empty for a zombie."""
    text = os.fsdecode(data)
    if not text:
        return []
    sep = "\0" if text.endswith("\0") else " "
    text = text.removesuffix(sep)
    argv = text.split(sep)
    if sep == "\0" and len(argv) == 1 and " " in text:
        argv = text.split(" ")
    return argv


def process_table(proc: str = "/proc") -> Iterator[Process]:
    """The processes under the procfs at `proc`, lowest pid first: (pid, name from `comm`,
    argv from `cmdline` or None when it cannot be read). A process that ends while read is
    left out. Raises `OSError` when `proc` cannot be listed."""
    pids = sorted(int(e) for e in os.listdir(proc) if e.isdigit())
    for pid in pids:
        try:
            with open(f"{proc}/{pid}/comm", "rb") as f:
                name = os.fsdecode(f.read().removesuffix(b"\n"))
        except OSError:
            continue  # gone (or not a process directory)
        try:
            with open(f"{proc}/{pid}/cmdline", "rb") as f:
                argv: list[str] | None = _argv(f.read())
        except (FileNotFoundError, ProcessLookupError):
            continue
        except OSError:
            argv = None
        yield pid, name, argv


def find_process_cmdline(host_root: Path | str, name: str) -> tuple[int, list[str]] | None:
    """The pid and argv of the running process called `name`, from the process table
    (`/proc`), or None.

    A process counts when its name (`comm`) or the basename of its `argv[0]` is `name` and it
    is one of the node's (`node_process`: root, in kubegc's PID namespace, as the kubelet
    and the runtimes run): a process another user, or a pod's container, started under that
    name is not the node's (its flags would otherwise set the policy of a kubegc run as
    root). The lowest pid wins. Only when `host_root` is `/`: from inside a container the
    host's processes are not ours to see. None as well when none runs or its command line
    cannot be read (permission denied, the process went away).
    """
    if Path(host_root).resolve() != Path("/"):
        return None
    try:
        pid, argv = next(_node_processes_named(name), (0, None))
    except OSError:
        return None
    return (pid, argv) if argv else None


def _node_processes_named(name: str) -> Iterator[NodeProcess]:
    """(pid, argv or None) of each process called `name` — its `comm` (15 bytes of the name)
    or the basename of its `argv[0]` — that is one of the node's (`node_process`), lowest pid
    first. Raises `OSError` when the process table cannot be read."""
    for pid, comm, argv in process_table():
        first = os.path.basename(argv[0]) if argv else ""
        if (comm == name[:15] or first == name) and node_process(pid):
            yield pid, argv


def node_process(pid: int, proc: str = "/proc") -> bool:
    """Whether process `pid` may be one of the node's own daemons (the kubelet, the runtime):
    it runs as root (`runs_as_root`) in kubegc's own PID namespace (`/proc/<pid>/ns/pid`).
    A process in a pod's container — root there or not — has a PID namespace of its own
    (unless the pod shares the host's, `hostPID`), so whatever it calls itself, its flags
    never set the policy of a kubegc run on the node."""
    if not runs_as_root(pid, proc):
        return False
    try:
        return os.readlink(f"{proc}/{pid}/ns/pid") == os.readlink(f"{proc}/self/ns/pid")
    except OSError:
        return False


def runs_as_root(pid: int, proc: str = "/proc") -> bool:
    """Whether process `pid` runs with real and effective uid 0 (`/proc/<pid>/status`'s `Uid:`
    line); False when it cannot be read (the process went away)."""
    try:
        with open(f"{proc}/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"Uid:"):
                    real, effective = line.split()[1:3]
                    return real == effective == b"0"
    except (OSError, ValueError):
        return False
    return False


def find_kubelet_cmdline(host_root: Path | str) -> tuple[int, list[str]] | None:
    """The running kubelet's pid and argv (`find_process_cmdline`), or None."""
    return find_process_cmdline(host_root, "kubelet")


def find_processes(host_root: Path | str, name: str) -> list[tuple[int, list[str]]]:
    """Every running process called `name` (as `find_process_cmdline` counts one: one of the
    node's, `node_process`) whose command line can be read, as (pid, argv), lowest pid
    first. Empty when `host_root` is not `/` (the host's processes are not ours to see) or the
    process table cannot be read."""
    if Path(host_root).resolve() != Path("/"):
        return []
    try:
        return [(pid, argv) for pid, argv in _node_processes_named(name) if argv]
    except OSError:
        return []


def socket_holders(path: str, pids: Iterable[int], proc: str = "/proc") -> list[int]:
    """Those of `pids` holding a Unix socket bound at `path` — or at the path it resolves to
    (`/var/run` is a link to `/run`) — (the socket's inode from `<proc>/net/unix`, matched
    against each process's `fd/*` links, `socket:[inode]`), in the order given. A process
    whose descriptors cannot be read is left out; empty when no socket is bound there or
    `net/unix` cannot be read."""
    try:
        with open(f"{proc}/net/unix", encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return []
    names = {path, os.path.realpath(path)}
    links = set()
    for line in lines:
        fields = line.split(None, 7)  # Num RefCount Protocol Flags Type St Inode Path
        if len(fields) == 8 and fields[7] in names:
            links.add(f"socket:[{fields[6]}]")
    if not links:
        return []
    out = []
    for pid in pids:
        try:
            fds = os.listdir(f"{proc}/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{proc}/{pid}/fd/{fd}") in links:
                    out.append(pid)
                    break
            except OSError:
                continue
    return out


def process_cwd(pid: int, proc: str = "/proc") -> str | None:
    """The working directory of process `pid` (`<proc>/<pid>/cwd`), or None when unreadable."""
    try:
        return os.readlink(f"{proc}/{pid}/cwd")
    except OSError:
        return None
