"""The runtime's filesystem mountpoints, remembered between runs.

`kubegc evict check` needs to know which filesystem holds the runtime's images (and, when
reported apart, its containers' writable layers): CRI `ImageFsInfo` names their mountpoints.
The figures themselves come from statvfs of those mountpoints, as the kubelet's (through
cAdvisor) do, so only the mountpoints are worth remembering — and asking the runtime costs a
gRPC client, far more than the rest of the check.

The answer is kept in `<state-dir>/runtime-fs.json`, one entry per runtime endpoint, with the
identity of the runtime's socket file when the runtime gave it: (st_dev, st_ino, st_ctime_ns).
A runtime that restarts creates its socket anew, so its identity changes and the entry is no
longer used: the next run asks the runtime again and replaces it. An entry is also unused when
a mountpoint it names is no longer a directory.

Nothing here ever fails a check: a missing, unreadable or damaged file is no entry, and a
state dir that does not exist or cannot be written just means nothing is remembered (the
state dir is not created for this). The file is replaced atomically (write, then rename), so
concurrent runs never see half of it.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import Malformed, decode_json
from kubegc_cli.node.host.bounded import stat_of
from kubegc_cli.node.state import ensure_state_dir, open_in, safe_dir

CACHE_NAME = "runtime-fs.json"
DAMAGED = ", ignored"  # the end of a reason for a file or an entry kubegc does not read
CACHE_KIND = "RuntimeFilesystems"
CACHE_VERSION = 1
MAX_CACHE_BYTES = 64 * 1024
MAX_ENTRIES = 16

#: (st_dev, st_ino, st_ctime_ns) of a runtime socket file.
SocketIdentity = tuple[int, int, int]
#: (image filesystem mountpoints, container filesystem mountpoints), as host paths.
Mountpoints = tuple[list[str], list[str]]


def cache_path(state_dir: Path) -> Path:
    """Where the remembered mountpoints live under `state_dir`."""
    return state_dir / CACHE_NAME


def socket_identity(path: str) -> SocketIdentity | None:
    """The identity of the runtime socket at `path` (followed if a symlink), or None when it
    is missing, unreadable or not a socket."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISSOCK(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


def describe_identity(ident: SocketIdentity) -> str:
    """`dev D ino I ctime_ns C`, for messages."""
    return f"dev {ident[0]} ino {ident[1]} ctime_ns {ident[2]}"


def _read(path: Path) -> tuple[dict[str, Any], str]:
    """The cache file's `runtimes` mapping, and why it is empty ("" when read); a reason
    that ends in `DAMAGED` is a file whose content kubegc does not read. A link is not
    followed (nor is a state dir kubegc may not use read: `kubegc_cli.node.state.safe_dir`)."""

    try:
        real = safe_dir(path.parent)
        if real is None:
            return {}, "no cache file yet"
        with os.fdopen(open_in(real, path.name, os.O_RDONLY), "rb") as f:
            raw = f.read(MAX_CACHE_BYTES + 1)
    except FileNotFoundError:
        return {}, "no cache file yet"
    except BadInput as exc:
        return {}, str(exc)
    except OSError as exc:
        return {}, f"cannot read it ({exc.strerror or exc})"
    if len(raw) > MAX_CACHE_BYTES:
        return {}, f"larger than {MAX_CACHE_BYTES} bytes{DAMAGED}"
    try:
        doc = decode_json(raw, "it")
    except Malformed as exc:
        return {}, f"{exc}{DAMAGED}"
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != CACHE_KIND
        or doc.get("version") != CACHE_VERSION
        or not isinstance(doc.get("runtimes"), dict)
    ):
        return {}, f"not a version {CACHE_VERSION} {CACHE_KIND} document{DAMAGED}"
    return doc["runtimes"], ""


def _paths(value: Any) -> list[str] | None:
    """A list of absolute path strings, or None when `value` is anything else."""
    if not isinstance(value, list):
        return None
    if not all(isinstance(p, str) and p.startswith("/") and "\0" not in p for p in value):
        return None
    return list(value)


def lookup(
    state_dir: Path,
    endpoint: str,
    ident: SocketIdentity,
    host_root: Path,
    warn: Callable[[str], None] | None = None,
) -> tuple[Mountpoints | None, str]:
    """The mountpoints remembered for `endpoint` while its socket had identity `ident`:
    (mountpoints, "") on a hit; (None, why) otherwise — no file, another socket, a damaged
    file or entry, a mountpoint that is no longer a directory under `host_root`. Never
    raises: a damaged file or entry (not JSON kubegc reads, `decode_json`; not of the cache's
    shape) is also said through `warn`, as one line naming the file; the next `remember`
    replaces it."""
    path = cache_path(state_dir)
    found, why = _lookup(path, endpoint, ident, host_root)
    if why.endswith(DAMAGED) and warn is not None:
        warn(f"{path}: {why.removesuffix(DAMAGED)}; ignored, the runtime is asked instead")
    return found, why


def _lookup(
    path: Path, endpoint: str, ident: SocketIdentity, host_root: Path
) -> tuple[Mountpoints | None, str]:
    runtimes, why = _read(path)
    if why:
        return None, why
    entry = runtimes.get(endpoint)
    if entry is None:
        return None, f"nothing remembered for {endpoint}"
    if not isinstance(entry, dict):
        return None, f"the entry for {endpoint} is damaged{DAMAGED}"
    sock = entry.get("socket")
    images = _paths(entry.get("image_filesystems"))
    containers = _paths(entry.get("container_filesystems"))
    if (
        not isinstance(sock, list)
        or len(sock) != 3
        or not all(type(n) is int for n in sock)
        or images is None
        or containers is None
        or not images
    ):
        return None, f"the entry for {endpoint} is damaged{DAMAGED}"
    if tuple(sock) != ident:
        return None, (
            f"the socket changed since ({describe_identity((sock[0], sock[1], sock[2]))} "
            f"then, {describe_identity(ident)} now): the runtime restarted"
        )

    for mount in (*images, *containers):
        try:  # bounded: a hung mount there is never waited on
            is_dir = stat.S_ISDIR(stat_of(_on_host(host_root, mount), follow_symlinks=True).st_mode)
        except OSError:
            is_dir = False
        if not is_dir:
            return None, f"the remembered mountpoint {mount} is no longer a directory"
    return (images, containers), ""


def _on_host(host_root: Path, host_path: str) -> str:
    root = str(host_root)
    if root in ("", "/"):
        return host_path
    return os.path.join(root, host_path.lstrip("/"))


def remember(
    state_dir: Path,
    endpoint: str,
    ident: SocketIdentity,
    images: Sequence[str],
    containers: Sequence[str],
) -> str:
    """Remember the mountpoints the runtime at `endpoint` (socket identity `ident`) reported.
    Entries of other endpoints whose socket no longer exists are dropped, and at most
    `MAX_ENTRIES` are kept (the newest). A missing state dir is created (mode 0700); the file
    is written beside it and renamed over it, so a link there is replaced, never followed.
    Returns "" when written, else why not (the state dir is not a directory, is read-only,
    or another user could change it: `kubegc_cli.node.state.safe_dir`; ...). Never
    raises."""
    if _paths(list(images)) is None or _paths(list(containers)) is None or not images:
        return "the runtime named a mountpoint that is not an absolute path"

    try:
        real = ensure_state_dir(state_dir)  # created as every command that writes there does
    except BadInput as exc:  # (StateUnavailable too: read-only, permission denied)
        return str(exc)
    path = cache_path(state_dir)
    runtimes, _ = _read(path)
    kept = {
        ep: e
        for ep, e in runtimes.items()
        if ep != endpoint and isinstance(e, dict) and os.path.exists(ep.removeprefix("unix://"))
    }
    kept[endpoint] = {
        "socket": list(ident),
        "image_filesystems": list(images),
        "container_filesystems": list(containers),
        "recorded_at_ns": time.time_ns(),
    }
    if len(kept) > MAX_ENTRIES:
        newest = sorted(kept, key=lambda ep: _recorded(kept[ep]), reverse=True)[:MAX_ENTRIES]
        kept = {ep: kept[ep] for ep in newest}
    doc = {"kind": CACHE_KIND, "version": CACHE_VERSION, "runtimes": kept}
    data = (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()
    tmp = real / f".{CACHE_NAME}.{os.getpid()}.tmp"
    try:
        with suppress(FileNotFoundError):
            os.unlink(tmp)  # a leftover (or a link): created afresh below, never followed
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, real / CACHE_NAME)  # (replaces a link there, never follows it)
    except OSError as exc:
        with suppress(OSError):
            os.unlink(tmp)
        return f"cannot write {path} ({exc.strerror or exc})"
    return ""


def _recorded(entry: Any) -> int:
    value = entry.get("recorded_at_ns") if isinstance(entry, dict) else None
    return value if isinstance(value, int) else 0
