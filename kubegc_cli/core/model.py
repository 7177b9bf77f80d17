"""Plain data for what kubegc observes on a node (the `NodeSnapshot`).

Everything here is immutable data with no I/O. CRI timestamps are kept as integer nanoseconds
since the Unix epoch, sizes as integer bytes. The JSON form (`to_dict` / `from_dict`) is the
`kubegc snapshot` file format documented in docs/SNAPSHOT.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.inputs import shown
from kubegc_cli.core.units import ns_to_rfc3339, rfc3339_to_ns

# The kubelet's labels on every sandbox and container it creates.
LABEL_POD_NAME = "io.kubernetes.pod.name"
LABEL_POD_NAMESPACE = "io.kubernetes.pod.namespace"
LABEL_POD_UID = "io.kubernetes.pod.uid"
LABEL_CONTAINER_NAME = "io.kubernetes.container.name"
ANNOTATION_RESTART_COUNT = "io.kubernetes.container.restartCount"

SNAPSHOT_KIND = "NodeSnapshot"
API_VERSION = "kubegc.io/v1alpha1"


def _str_map(d: Mapping[str, Any], key: str) -> dict[str, str]:
    """Labels/annotations under `key` of a snapshot object: a mapping of strings to strings
    (empty when missing or null). `TypeError` naming the key and the value otherwise (a
    runtime's labels are strings: a number or null there is a damaged file)."""
    value = d.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise TypeError(f"{key} {shown(value)} is not a mapping of strings to strings")
    return dict(value)


def snap_text(d: Mapping[str, Any], key: str, *, required: bool = False) -> str:
    """The string under `key` of a snapshot object ("" when missing and not `required`).
    Raises `KeyError` when a required key is missing, `TypeError` when it is not a string."""
    value = d[key] if required else d.get(key, "")
    if not isinstance(value, str):
        raise TypeError(f"{key} {shown(value)} is not a string")
    return value


def _time(d: Mapping[str, Any], key: str, what: str, *, required: bool = False) -> int:
    """The RFC 3339 time under `key` of a snapshot object, in nanoseconds since the epoch (0
    when missing or null and not `required`); a YAML timestamp with a zone is taken as the
    time it is. `BadInput` naming `what` and the value when it is not a time; `KeyError` when
    a required key is missing."""
    value = d[key] if required else d.get(key)
    if value is None and not required:
        return 0
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.isoformat()
    if not isinstance(value, str):
        raise BadInput(f"invalid {what}: {shown(value)} is not an RFC 3339 time")
    return rfc3339_to_ns(value, what=what)


def snap_whole(d: Mapping[str, Any], key: str, *, bits: int = 64, signed: bool = False) -> int:
    """The integer under `key` of a snapshot object (0 when missing): a JSON number without a
    fraction, not a boolean, in the range of the CRI field (`bits` wide, `signed` or not:
    attempt uint32, exit code int32, sizes uint64). `ValueError` naming the key and the value
    otherwise."""
    value = d.get(key, 0)
    low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{key} {shown(value)} is not a whole number from {low} to {high}")
    return value


def _whole_or_none(d: Mapping[str, Any], key: str) -> int | None:
    """`snap_whole`, or None when the key is missing or null (not measured)."""
    return None if d.get(key) is None else snap_whole(d, key)


def _texts(d: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """The list of strings under `key` (empty when missing or null); `TypeError` otherwise."""
    value = d.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TypeError(f"{key} {shown(value)} is not a list of strings")
    return tuple(value)


def _flag(d: Mapping[str, Any], key: str) -> bool:
    """The boolean under `key` (false when missing); `TypeError` for anything else (`"false"`
    is a string, not false)."""
    value = d.get(key, False)
    if not isinstance(value, bool):
        raise TypeError(f"{key} {shown(value)} is not true or false")
    return value


E = TypeVar("E", bound=StrEnum)


def _state(d: Mapping[str, Any], kind: type[E]) -> E:
    """The `state` of a snapshot object, one of `kind`'s names; `KeyError` when missing,
    `ValueError` naming the value and the choices otherwise."""
    value = d["state"]
    if not isinstance(value, str) or value not in kind.__members__:
        raise ValueError(f"state {shown(value)} is not one of {', '.join(kind.__members__)}")
    return kind(value)


class ContainerState(StrEnum):
    """CRI `ContainerState`, named without the `CONTAINER_` prefix."""

    CREATED = "CREATED"
    RUNNING = "RUNNING"
    EXITED = "EXITED"
    UNKNOWN = "UNKNOWN"


class SandboxState(StrEnum):
    """CRI `PodSandboxState`, named without the `SANDBOX_` prefix."""

    READY = "READY"
    NOTREADY = "NOTREADY"


@dataclass(frozen=True, slots=True)
class Container:
    """One CRI container as `ListContainers` reports it, plus status facts kubegc needs.

    `created_at` and `finished_at` are nanoseconds since the epoch (`finished_at` 0 when unknown
    or not finished). `log_path` is the runtime's absolute host path of the container's log file
    (empty when the runtime has none); `log_bytes` the bytes that file and its rotated siblings
    take on disk — allocated blocks (`core.sizes.on_disk`), of the files kubegc may delete
    with the container — or None when kubegc did not read it.
    """

    id: str
    pod_sandbox_id: str
    name: str
    attempt: int
    state: ContainerState
    created_at: int
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    image: str = ""
    image_ref: str = ""
    image_id: str = ""
    finished_at: int = 0
    exit_code: int = 0
    log_path: str = ""
    log_bytes: int | None = None

    @property
    def pod_uid(self) -> str:
        """Pod UID from the kubelet's `io.kubernetes.pod.uid` label ("" when unlabelled)."""
        return self.labels.get(LABEL_POD_UID, "")

    @property
    def pod_name(self) -> str:
        return self.labels.get(LABEL_POD_NAME, "")

    @property
    def pod_namespace(self) -> str:
        return self.labels.get(LABEL_POD_NAMESPACE, "")

    @property
    def container_name(self) -> str:
        """The pod spec's container name: the kubelet label, else CRI metadata `name`."""
        return self.labels.get(LABEL_CONTAINER_NAME) or self.name

    def with_status(
        self,
        *,
        state: ContainerState | None = None,
        finished_at: int | None = None,
        exit_code: int | None = None,
        log_path: str,
        log_bytes: int | None,
    ) -> Container:
        """A copy with the status facts set (`dataclasses.replace` at a fifth of its cost:
        observing a node makes one per dead container). None keeps the field's value."""
        return make_container(
            self.id,
            self.pod_sandbox_id,
            self.name,
            self.attempt,
            self.state if state is None else state,
            self.created_at,
            self.labels,
            self.annotations,
            self.image,
            self.image_ref,
            self.image_id,
            self.finished_at if finished_at is None else finished_at,
            self.exit_code if exit_code is None else exit_code,
            log_path,
            log_bytes,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "pod_sandbox_id": self.pod_sandbox_id,
            "name": self.name,
            "attempt": self.attempt,
            "state": self.state.value,
            "created_at": ns_to_rfc3339(self.created_at),
            "finished_at": ns_to_rfc3339(self.finished_at) if self.finished_at else None,
            "exit_code": self.exit_code,
            "image": self.image,
            "image_ref": self.image_ref,
            "image_id": self.image_id,
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "log_path": self.log_path,
            "log_bytes": self.log_bytes,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Container:
        return cls(
            id=snap_text(d, "id", required=True),
            pod_sandbox_id=snap_text(d, "pod_sandbox_id"),
            name=snap_text(d, "name"),
            attempt=snap_whole(d, "attempt", bits=32),
            state=_state(d, ContainerState),
            created_at=_time(d, "created_at", "container created_at", required=True),
            finished_at=_time(d, "finished_at", "container finished_at"),
            exit_code=snap_whole(d, "exit_code", bits=32, signed=True),
            image=snap_text(d, "image"),
            image_ref=snap_text(d, "image_ref"),
            image_id=snap_text(d, "image_id"),
            labels=_str_map(d, "labels"),
            annotations=_str_map(d, "annotations"),
            log_path=snap_text(d, "log_path"),
            log_bytes=_whole_or_none(d, "log_bytes"),
        )


_new = object.__new__
# The slot setters, in field order (a field added or removed breaks this unpacking at import;
# test_model holds `make_container` equal to the constructor).
(_s_id, _s_sandbox, _s_name, _s_attempt, _s_state, _s_created, _s_labels, _s_annotations,
 _s_image, _s_image_ref, _s_image_id, _s_finished, _s_exit, _s_log_path, _s_log_bytes) = (
    Container.__dict__[f].__set__ for f in Container.__slots__
)  # fmt: skip


def make_container(
    id: str,
    pod_sandbox_id: str,
    name: str,
    attempt: int,
    state: ContainerState,
    created_at: int,
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    image: str,
    image_ref: str,
    image_id: str,
    finished_at: int = 0,
    exit_code: int = 0,
    log_path: str = "",
    log_bytes: int | None = None,
) -> Container:
    """`Container(...)` for the hot paths (one per listed container), ~3x faster: the frozen
    dataclass `__init__` sets each field through `object.__setattr__`; this sets the slots
    directly. Same fields, same result (`make_container(*a) == Container(*a)`).
    """
    c = _new(Container)
    _s_id(c, id)
    _s_sandbox(c, pod_sandbox_id)
    _s_name(c, name)
    _s_attempt(c, attempt)
    _s_state(c, state)
    _s_created(c, created_at)
    _s_labels(c, labels)
    _s_annotations(c, annotations)
    _s_image(c, image)
    _s_image_ref(c, image_ref)
    _s_image_id(c, image_id)
    _s_finished(c, finished_at)
    _s_exit(c, exit_code)
    _s_log_path(c, log_path)
    _s_log_bytes(c, log_bytes)
    return c


def fill_listed_log(c: Container, log_path: str, log_bytes: int | None) -> None:
    """Set the log fields of `c` in place: only for a container just made from a listing that
    nothing else holds yet (observing a node does it for each dead container). A copy
    (`with_status`) would keep two objects per dead container alive until the listing is
    dropped: ~150 MB more at 1,000,000 containers, and memory the allocator seldom returns.
    `log_bytes` None when not read."""
    _s_log_path(c, log_path)
    _s_log_bytes(c, log_bytes)


T = TypeVar("T")


def _each(
    d: Mapping[str, Any],
    key: str,
    make: Callable[[Mapping[str, Any]], T],
    missing: list[Any] | None = None,
) -> tuple[T, ...]:
    """`make` of each object in the list under `key` of a snapshot document (`_items`; a
    missing or null list is `missing` when given). `BadInput` naming the list, the index and
    the problem for an item that is not an object or does not fit."""
    items = missing if missing is not None and d.get(key) is None else _items(d, key)
    out = []
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise BadInput(f"{key}[{i}] is {json_type(item)}, not an object")
        try:
            out.append(make(item))
        except KeyError as exc:
            raise BadInput(f"{key}[{i}] has no {exc}") from None
        except (BadInput, TypeError, ValueError, OverflowError, AttributeError) as exc:
            raise BadInput(f"{key}[{i}]: {exc}") from None
    return tuple(out)


def json_type(value: Any) -> str:
    """What a decoded JSON value is, in JSON's words (`null`, `a string`, ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _items(d: Mapping[str, Any], key: str) -> list[Any]:
    """The list under `key` of a snapshot document; `BadInput` when it is missing or not a
    list (a snapshot always writes every list, empty or not: a missing one is a damaged
    file, and reading it as empty would plan as if the node had none)."""
    value = d.get(key)
    if not isinstance(value, list):
        got = "missing" if key not in d else f"{json_type(value)}, not a list"
        raise BadInput(f"{key!r} is {got}")
    return value


@dataclass(frozen=True, slots=True)
class Sandbox:
    """One CRI pod sandbox (`ListPodSandbox`). `created_at` in nanoseconds since the epoch."""

    id: str
    name: str
    namespace: str
    uid: str
    attempt: int
    state: SandboxState
    created_at: int
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    runtime_handler: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "namespace": self.namespace,
            "uid": self.uid,
            "attempt": self.attempt,
            "state": self.state.value,
            "created_at": ns_to_rfc3339(self.created_at),
            "labels": dict(self.labels),
            "annotations": dict(self.annotations),
            "runtime_handler": self.runtime_handler,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Sandbox:
        return cls(
            id=snap_text(d, "id", required=True),
            name=snap_text(d, "name"),
            namespace=snap_text(d, "namespace"),
            uid=snap_text(d, "uid"),
            attempt=snap_whole(d, "attempt", bits=32),
            state=_state(d, SandboxState),
            created_at=_time(d, "created_at", "sandbox created_at", required=True),
            labels=_str_map(d, "labels"),
            annotations=_str_map(d, "annotations"),
            runtime_handler=snap_text(d, "runtime_handler"),
        )


@dataclass(frozen=True, slots=True)
class Image:
    """One CRI image (`ListImages`). `size` in bytes; `pinned` is the runtime's GC exemption."""

    id: str
    repo_tags: tuple[str, ...] = ()
    repo_digests: tuple[str, ...] = ()
    size: int = 0
    pinned: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "repo_tags": list(self.repo_tags),
            "repo_digests": list(self.repo_digests),
            "size": self.size,
            "pinned": self.pinned,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Image:
        return cls(
            id=snap_text(d, "id", required=True),
            repo_tags=_texts(d, "repo_tags"),
            repo_digests=_texts(d, "repo_digests"),
            size=snap_whole(d, "size"),
            pinned=_flag(d, "pinned"),
        )


@dataclass(frozen=True, slots=True)
class FilesystemUsage:
    """CRI `FilesystemUsage` (`ImageFsInfo`): bytes and inodes used, None when not reported."""

    mountpoint: str
    used_bytes: int | None
    inodes_used: int | None
    timestamp: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "mountpoint": self.mountpoint,
            "used_bytes": self.used_bytes,
            "inodes_used": self.inodes_used,
            "timestamp": ns_to_rfc3339(self.timestamp) if self.timestamp else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> FilesystemUsage:
        return cls(
            mountpoint=snap_text(d, "mountpoint"),
            used_bytes=_whole_or_none(d, "used_bytes"),
            inodes_used=_whole_or_none(d, "inodes_used"),
            timestamp=_time(d, "timestamp", "filesystem timestamp"),
        )


@dataclass(frozen=True, slots=True)
class RuntimeInfo:
    """What the runtime's `Version` call says about itself: `name` (CRI `runtime_name`,
    crictl's RuntimeName), `version` (`runtime_version`, RuntimeVersion), `api_version`
    (`runtime_api_version`, RuntimeApiVersion) and `cri_version` (the reply's `version`,
    crictl's Version: the version of the kubelet runtime API the runtime serves)."""

    name: str = ""
    version: str = ""
    api_version: str = ""
    cri_version: str = ""

    def to_dict(self) -> dict[str, str]:
        """The snapshot's `runtime` object (name, version, api_version; `cri_version` is
        not part of a snapshot)."""
        return {"name": self.name, "version": self.version, "api_version": self.api_version}


@dataclass(frozen=True, slots=True)
class NodeSnapshot:
    """Everything kubegc observed on the node at `captured_at` (nanoseconds since the epoch)."""

    captured_at: int
    endpoint: str = ""
    runtime: RuntimeInfo = field(default_factory=RuntimeInfo)
    containers: tuple[Container, ...] = ()
    sandboxes: tuple[Sandbox, ...] = ()
    images: tuple[Image, ...] = ()
    image_filesystems: tuple[FilesystemUsage, ...] = ()
    container_filesystems: tuple[FilesystemUsage, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": SNAPSHOT_KIND,
            "apiVersion": API_VERSION,
            "captured_at": ns_to_rfc3339(self.captured_at),
            "endpoint": self.endpoint,
            "runtime": self.runtime.to_dict(),
            "containers": [c.to_dict() for c in self.containers],
            "sandboxes": [s.to_dict() for s in self.sandboxes],
            "images": [i.to_dict() for i in self.images],
            "image_filesystems": [f.to_dict() for f in self.image_filesystems],
            "container_filesystems": [f.to_dict() for f in self.container_filesystems],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], *, source: str = "snapshot") -> NodeSnapshot:
        """Build from the JSON form; raises `BadInput` naming `source` when it does not fit
        (including a container ID listed twice: a runtime lists each container once, and the
        planners count on it)."""
        if not isinstance(d, Mapping) or d.get("kind") != SNAPSHOT_KIND:
            raise BadInput(f"{source}: not a kubegc snapshot (expected kind {SNAPSHOT_KIND})")
        try:
            rt = {} if d.get("runtime") is None else d["runtime"]
            if not isinstance(rt, Mapping):
                raise BadInput(f"runtime {shown(rt)} is not an object")
            snap = cls(
                captured_at=_time(d, "captured_at", f"{source} captured_at", required=True),
                endpoint=snap_text(d, "endpoint"),
                runtime=RuntimeInfo(
                    name=snap_text(rt, "name"),
                    version=snap_text(rt, "version"),
                    api_version=snap_text(rt, "api_version"),
                ),
                containers=_each(d, "containers", Container.from_dict),
                sandboxes=_each(d, "sandboxes", Sandbox.from_dict),
                images=_each(d, "images", Image.from_dict),
                image_filesystems=_each(d, "image_filesystems", FilesystemUsage.from_dict, []),
                container_filesystems=_each(
                    d, "container_filesystems", FilesystemUsage.from_dict, []
                ),
            )
        except BadInput as exc:
            if source in str(exc):
                raise
            raise BadInput(f"{source}: {exc}") from None  # name the file, not just the field
        except KeyError as exc:
            raise BadInput(f"{source}: malformed snapshot: no {exc.args[0]!r} field") from None
        except (TypeError, ValueError, OverflowError, AttributeError) as exc:
            raise BadInput(f"{source}: malformed snapshot: {type(exc).__name__}: {exc}") from None
        for what, objects in (
            ("container", snap.containers),
            ("sandbox", snap.sandboxes),
            ("image", snap.images),
        ):
            seen: set[str] = set()
            for obj in objects:
                if obj.id in seen:
                    raise BadInput(f"{source}: {what} {obj.id!r} is listed twice")
                seen.add(obj.id)
        return snap


_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"{_LABEL}(?:\.{_LABEL})*"
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_REFERENCE = re.compile(
    rf"(?:(?P<domain>{_DOMAIN}(?::[0-9]+)?)/)?(?P<path>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[\w][\w.-]{0,127}))?"
    r"(?:@(?P<digest>[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9A-Fa-f]{32,}))?"
)


def reference_forms(ref: str) -> set[str]:
    """The names under which the runtime may list the image `ref` names: `ref` itself and its
    normalized form, as containerd normalizes a familiar name (`pause:3.9` →
    `docker.io/library/pause:3.9`; no tag → `:latest`). Empty when `ref` is not an image
    reference (distribution's reference grammar)."""
    m = _REFERENCE.fullmatch(ref)
    if m is None:
        return set()
    domain, path, tag, digest = m.group("domain", "path", "tag", "digest")
    if domain is None and "/" in path:
        first, rest = path.split("/", 1)
        if first == "localhost":
            domain, path = first, rest
    if domain is not None and "." not in domain and ":" not in domain and domain != "localhost":
        path, domain = f"{domain}/{path}", None  # `library/x`: a path, not a host
    if domain is None:
        domain = "docker.io"
        if "/" not in path:
            path = f"library/{path}"
    name = f"{domain}/{path}"
    if tag is None and digest is None:
        tag = "latest"
    full = name + (f":{tag}" if tag else "") + (f"@{digest}" if digest else "")
    return {ref, full}


@dataclass(frozen=True, slots=True)
class ImageRecord:
    """What is remembered of an image: nanoseconds since the epoch; `last_used` 0 = never."""

    first_detected: int
    last_used: int = 0


def image_refs_in_use(containers: Iterable[Container]) -> set[str]:
    """Every name by which a container the runtime has (any state) refers to its image: the
    `image_id`, the `image_ref` and the image it was created from (`image`, a tag or digest as
    given). An image any of whose ID, tags or digests is among them is used by a container:
    a wider net than `policy.images.images_in_use` (the kubelet's rule, which plans), for the
    re-check right before `RemoveImage` (`node.execute.actions.ImageRemover`)."""
    return {ref for c in containers for ref in (c.image_id, c.image_ref, c.image) if ref}
