"""Pod log directories and legacy container-log symlinks as data, and the kubelet's parses of
their names.

Layout (the kubelet's): `<podLogsDir>/<namespace>_<pod>_<uid>/<container>/<n>.log`
(a bare `<uid>` directory is the legacy form) and `/var/log/containers/*.log` symlinks named
`<pod>_<namespace>_<container>-<containerID>.log`. Reading and removing them: `node.host.podlogs`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PodLogDir:
    """One entry of the pod log root. `path` is local (under the host root); `uid` parsed from
    the name (last `_` field); `bytes` on disk below it (`core.sizes.on_disk` of every inode,
    the directories' own included; not following symlinks);
    `mount` is "" or a mount point at or below it (such a directory is never removed);
    `mounts_unknown` is "" or why the mount table could not be read (then it is never
    removed either: anything may be mounted below it); `stalled` is "" or the local path
    below it that gave no answer within `--timeout` when it was sized (a hung mount: `bytes`
    is partial, and it is never removed, as the removal would hang there). `changed_ns`: the
    latest change below it when it was sized (`TreeUsage.changed_ns`; 0 not sized)."""

    name: str
    path: str
    uid: str
    bytes: int
    is_symlink: bool
    mount: str = ""
    mounts_unknown: str = ""
    stalled: str = ""
    changed_ns: int = 0


@dataclass(frozen=True, slots=True)
class LegacyLink:
    """A `/var/log/containers/*.log` symlink: dangling, or (`into` set) one whose target lies in
    `into`, the host path of a pod log directory. `container_id` is the parsed ID ("" if the
    name does not parse); `state` the runtime's answer for it: a `ContainerState` value, ""
    when the runtime does not know the container, or "none" when it answered with nothing."""

    name: str
    path: str
    container_id: str
    state: str
    into: str = ""


NOT_A_POD = "not named like a pod (a pod UID: a dashed UUID, or 32 hex characters)"

_POD_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32}")


def is_pod_uid(name: str) -> bool:
    """`name` is spelled as the kubelet names pod directories: a pod UID, which is a dashed
    lower-case UUID (pods from the API) or 32 lower-case hex characters (static pods: a
    hash of the manifest). Anything else was not made by the kubelet for a pod."""
    return _POD_UID.fullmatch(name) is not None


def pod_uid_from_dir(name: str) -> str:
    """The kubelet's parse: the last `_`-separated field; a name without `_` is all UID."""
    return name.rsplit("_", 1)[-1]


_LIVE_LOG = re.compile(r"[0-9]+\.log")


def live_log_of(name: str) -> str:
    """The live log a file of a container log directory belongs to: `name` itself for a
    `<n>.log` (the kubelet's `<restartCount>.log`), `<n>.log` for a `<n>.log.<anything>` (its
    rotated files: container_log_manager.go globs `<log>.*`), "" for any other name."""
    if _LIVE_LOG.fullmatch(name):
        return name
    head, dot, rest = name.partition(".log.")
    if dot and rest and _LIVE_LOG.fullmatch(head + ".log"):
        return head + ".log"
    return ""


def container_id_from_link(name: str) -> str:
    """The kubelet's legacy-symlink parse: last `-` field, minus `.log`, at least 6 characters.

    Returns "" when the name does not parse (such a dangling link is removed).
    """
    last = name.rsplit("-", 1)[-1]
    if not last.endswith(".log"):
        return ""
    cid = last[: -len(".log")]
    return cid if len(cid) >= 6 else ""


#: The kubelet's defaults for `containerLogMaxSize` and `containerLogMaxFiles`
#: (KubeletConfiguration v1beta1 defaults).
DEFAULT_CONTAINER_LOG_MAX_SIZE = 10 * 1024 * 1024
DEFAULT_CONTAINER_LOG_MAX_FILES = 5


@dataclass(frozen=True, slots=True)
class LogRotation:
    """The kubelet's container log rotation policy (kubelet `LogRotatePolicy`): `max_size`
    in bytes of a live log before it is rotated (negative: rotation disabled, the kubelet
    runs no log manager), `max_files` the most log files a container keeps, its live log
    included (the kubelet requires more than 1). `source` names where the values came from
    (a config file, `/configz`, the kubelet command line, `defaults`)."""

    max_size: int = DEFAULT_CONTAINER_LOG_MAX_SIZE
    max_files: int = DEFAULT_CONTAINER_LOG_MAX_FILES
    source: str = "defaults"

    @property
    def enabled(self) -> bool:
        """The kubelet rotates logs (`max_size` not negative)."""
        return self.max_size >= 0

    @property
    def budget(self) -> int:
        """`max_size` × `max_files`: the most a container's logs hold while rotation keeps up
        (0 when rotation is disabled)."""
        return self.max_size * self.max_files if self.enabled else 0


@dataclass(frozen=True, slots=True)
class LogFile:
    """One entry of a container log directory: `name`; `size` (apparent bytes) and
    `blocks` (allocated bytes); `mtime` (seconds since the epoch); `regular` (a regular
    file: nothing else is ever acted on); `dev` and `ino` (which file it was, checked again
    before acting)."""

    name: str
    size: int
    blocks: int
    mtime: float
    regular: bool = True
    dev: int = 0
    ino: int = 0


@dataclass(frozen=True, slots=True)
class ContainerLogDir:
    """A container's log directory `<podLogsDir>/<namespace>_<pod>_<uid>/<container>` as
    read: `host` its host path, `uid` its pod's UID, `container` the container's name,
    `files` the entries named as the kubelet names a container's logs (`<n>.log` and
    `<n>.log.<suffix>`)."""

    host: str
    uid: str
    container: str
    files: tuple[LogFile, ...] = ()


@dataclass(frozen=True, slots=True)
class LogOwner:
    """The container of the runtime whose live log a `<n>.log` is: its ID and whether it is
    running (only a running container's log is rotated: kubelet `rotateLogs`)."""

    container_id: str
    running: bool


@dataclass(frozen=True, slots=True)
class LinkedLog:
    """A `/var/log/containers/*.log` symlink whose target exists: `name`, `host` (its host
    path), `target` (as written), `container_id` (parsed from the name, "" when it does not
    parse), `mtime` (the link's own, seconds since the epoch)."""

    name: str
    host: str
    target: str
    container_id: str
    mtime: float = 0.0
