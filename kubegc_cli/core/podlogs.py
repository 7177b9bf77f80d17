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
    the name (last `_` field); `bytes` of regular files below (not following symlinks);
    `mount` is "" or a mount point at or below it (such a directory is never removed);
    `mounts_unknown` is "" or why the mount table could not be read (then it is never
    removed either: anything may be mounted below it); `stalled` is "" or the local path
    below it that gave no answer within `--timeout` when it was sized (a hung mount: `bytes`
    is partial, and it is never removed, as the removal would hang there)."""

    name: str
    path: str
    uid: str
    bytes: int
    is_symlink: bool
    mount: str = ""
    mounts_unknown: str = ""
    stalled: str = ""


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


def container_id_from_link(name: str) -> str:
    """The kubelet's legacy-symlink parse: last `-` field, minus `.log`, at least 6 characters.

    Returns "" when the name does not parse (such a dangling link is removed).
    """
    last = name.rsplit("-", 1)[-1]
    if not last.endswith(".log"):
        return ""
    cid = last[: -len(".log")]
    return cid if len(cid) >= 6 else ""
