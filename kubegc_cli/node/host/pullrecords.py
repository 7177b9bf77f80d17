"""The kubelet's image pull records (KEP-2535), read from the host for `gc images`.

Layout (kubelet `pkg/kubelet/images/pullmanager/fs_pullrecords.go`): under the kubelet root,
`image_manager/pulled/` holds one `ImagePulledRecord` per image the kubelet pulled and
`image_manager/pulling/` one `ImagePullIntent` per pull under way; each file is named
`sha256-<hex of SHA-256 of the key>`, the key being the record's `imageRef` (the image as the
runtime's PullImage named it: its ID) or the intent's `image` (a pod's `image` field). Files
ending `.tmp` are half-written. The JSON (`kubelet.config.k8s.io/v1alpha1`):

    {"kind": "ImagePulledRecord", "apiVersion": "kubelet.config.k8s.io/v1alpha1",
     "lastUpdatedTime": "...", "imageRef": "sha256:...",
     "credentialMapping": {"docker.io/library/nginx": {"nodePodsAccessible": true},
                           "quay.io/org/app": {"kubernetesSecrets": [{"uid": ..., ...}],
                                               "kubernetesServiceAccounts": [...]}}}

(early v1alpha1 records name the secrets `kubernetesSecretCoordinates`; both are read).

Reading is bounded and never follows a link: every path component below `--host-root` is
opened relative to its parent with `O_NOFOLLOW`, a record must be a regular file of at most
`MAX_RECORD_BYTES`, all of it under one `bounded` walk (a hung mount costs one timeout).
A record kubegc cannot read is UNREADABLE, never a reason to remove anything.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kubegc_cli.core.inputs import Malformed, decode_json
from kubegc_cli.core.model import Image
from kubegc_cli.core.pulls import (
    NO_RECORD,
    NODE_WIDE,
    NOT_KEPT,
    RECORDED,
    SECRET,
    SERVICE_ACCOUNT,
    UNREADABLE,
    PullRecord,
)
from kubegc_cli.node.host.bounded import Stalled, Watch, bounded, walk_timeout
from kubegc_cli.node.host.regular import read_regular

#: The kubelet's default --root-dir.
DEFAULT_ROOT_DIR = "/var/lib/kubelet"
PULLED_DIR = ("image_manager", "pulled")
#: A record names one image and a few credentials; the kubelet stops adding secrets to one at
#: 100. Anything larger is not one of its records.
MAX_RECORD_BYTES = 1024 * 1024
_OPEN_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def record_file_name(key: str) -> str:
    """The file name the kubelet gives the record of `key`: `sha256-` and the hex SHA-256 of
    its UTF-8 bytes (its `cacheFilename`)."""
    return "sha256-" + hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()


def credentials_of(doc: Any) -> tuple[str, ...]:
    """The credential kinds an `ImagePulledRecord` maps, in `KINDS` order. Raises
    `Malformed` for a `credentialMapping` of another shape than the kubelet writes."""
    mapping = doc.get("credentialMapping")
    if mapping is None:
        return ()
    if not isinstance(mapping, dict):
        raise Malformed("credentialMapping is not an object")
    found: set[str] = set()
    for name, creds in mapping.items():
        if not isinstance(creds, dict):
            raise Malformed(f"credentialMapping[{name!r}] is not an object")
        if creds.get("nodePodsAccessible") is True:
            found.add(NODE_WIDE)
        for key, kind in (
            ("kubernetesSecrets", SECRET),
            ("kubernetesSecretCoordinates", SECRET),
            ("kubernetesServiceAccounts", SERVICE_ACCOUNT),
        ):
            items = creds.get(key)
            if items is None:
                continue
            if not isinstance(items, list):
                raise Malformed(f"credentialMapping[{name!r}].{key} is not a list")
            if items:
                found.add(kind)
    return tuple(k for k in (NODE_WIDE, SECRET, SERVICE_ACCOUNT) if k in found)


def parse_pulled_record(data: bytes, key: str) -> PullRecord | None:
    """The `PullRecord` of a record file's bytes when it is the kubelet's record of `key`
    (its `imageRef`), None when it is another image's (a hash collision or a renamed file);
    an UNREADABLE one for anything that is not an `ImagePulledRecord` kubegc reads."""
    try:
        doc = decode_json(data, "pull record")
        if not isinstance(doc, dict) or doc.get("kind") != "ImagePulledRecord":
            raise Malformed("not an ImagePulledRecord")
        if doc.get("imageRef") != key:
            return None
        return PullRecord(RECORDED, credentials_of(doc))
    except Malformed as exc:
        return PullRecord(UNREADABLE, why=str(exc))


def _not_a_directory(dirfd: int, name: str) -> str:
    """What the entry `name` of `dirfd` is, that opening it as a directory without following
    a link failed with `ENOTDIR` or `ELOOP` (Linux gives `ENOTDIR` for a symbolic link
    opened with `O_DIRECTORY | O_NOFOLLOW`, and for a file)."""
    try:
        mode = os.stat(name, dir_fd=dirfd, follow_symlinks=False).st_mode
    except OSError as exc:
        return f"not a directory ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return "a symbolic link (not followed)"
    if stat.S_ISREG(mode):
        return "a regular file, not a directory"
    return "not a directory"


def _open_below(dirfd: int, parts: Iterable[str], watch: Watch, shown: str) -> int:
    """The directory `parts` below `dirfd`, each component opened with `O_NOFOLLOW`. A
    component that is no directory (a link, a file) raises `NotADirectoryError` whose
    `strerror` says what it is and `filename` is its path below `dirfd`."""
    fd = os.dup(dirfd)
    below = ""
    try:
        for part in parts:
            shown = f"{shown}/{part}"
            below = f"{below}/{part}"
            if not watch.may_enter(shown):  # stuck there before: not touched again
                raise Stalled(shown, walk_timeout())
            try:
                child = os.open(part, _OPEN_DIR, dir_fd=fd)
            except OSError as exc:
                if exc.errno not in (errno.ENOTDIR, errno.ELOOP):
                    raise
                what = _not_a_directory(fd, part)
                raise NotADirectoryError(errno.ENOTDIR, what, below) from None
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_record(dirfd: int, name: str) -> bytes | str | None:
    """The bytes of the regular file `name` in `dirfd` (`host.regular.read_regular`, never
    through a link); None when there is none; a reason (text) when it cannot be read as a
    record."""
    try:
        data = read_regular(name, MAX_RECORD_BYTES, dir_fd=dirfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "a symbolic link (not followed)"
        return exc.strerror or str(exc)
    if len(data) > MAX_RECORD_BYTES:
        return f"larger than {MAX_RECORD_BYTES // 1024} KiB"
    return data


def read_pull_records(
    host_root: Path, root_dir: str, images: Iterable[Image]
) -> dict[str, PullRecord]:
    """The kubelet's pull record of each image, by image ID, read under `host_root` from the
    kubelet root `root_dir` (a host path): the record keyed by the image's ID, else by one of
    its repo digests (`imageRef` is what the runtime's PullImage returned). NOT_KEPT for every
    image when there is no `image_manager/pulled/` (the kubelet keeps none); UNREADABLE ones
    (naming why) when the directory cannot be opened, is reached through a link, or the walk
    hangs. Never raises for what is on the host."""
    wanted = list(images)
    clean = os.path.normpath("/" + root_dir.lstrip("/"))  # `..` never climbs above the host's /
    parts = [p for p in clean.split("/") if p] + list(PULLED_DIR)
    shown = "/" + "/".join(parts)

    def walk(watch: Watch) -> dict[str, PullRecord]:
        # (its own dict, returned: a walk given up on may still run, and must not write into
        # what the caller already holds)
        found: dict[str, PullRecord] = {}
        watch.at(str(host_root))
        top = os.open(str(host_root), _OPEN_DIR & ~os.O_NOFOLLOW)
        try:
            try:
                pulled = _open_below(top, parts, watch, str(host_root).rstrip("/"))
            except FileNotFoundError:
                return {i.id: PullRecord(NOT_KEPT) for i in wanted}
            except NotADirectoryError as exc:
                why = f"{exc.filename} is {exc.strerror}"
                return {i.id: PullRecord(UNREADABLE, why=f"{shown}: {why}") for i in wanted}
            except OSError as exc:
                why = exc.strerror or str(exc)
                return {i.id: PullRecord(UNREADABLE, why=f"{shown}: {why}") for i in wanted}
        finally:
            os.close(top)
        try:
            for img in wanted:
                found[img.id] = _record_of(pulled, img, watch, shown)
        finally:
            os.close(pulled)
        return found

    try:
        return bounded(walk)
    except OSError as exc:  # Stalled (a hung mount), or the host root itself
        why = f"{shown}: {exc.strerror}" if isinstance(exc, Stalled) else (exc.strerror or str(exc))
        return {img.id: PullRecord(UNREADABLE, why=why) for img in wanted}


def _record_of(dirfd: int, img: Image, watch: Watch, shown: str) -> PullRecord:
    """The record of `img` in the open `pulled` directory: by its ID, else a repo digest."""
    for key in dict.fromkeys((img.id, *img.repo_digests)):
        name = record_file_name(key)
        watch.at(f"{shown}/{name}")
        data = _read_record(dirfd, name)
        if data is None:
            continue
        if isinstance(data, str):
            return PullRecord(UNREADABLE, why=f"{shown}/{name}: {data}")
        record = parse_pulled_record(data, key)
        if record is None:
            continue
        if record.why:
            return PullRecord(UNREADABLE, why=f"{shown}/{name}: {record.why}")
        return record
    return PullRecord(NO_RECORD)
