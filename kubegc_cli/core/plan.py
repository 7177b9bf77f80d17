"""The `Plan`: what a command will do, why, and (after acting) what happened.

One `Plan` object is both the dry-run output and the executor's work list, so a dry run is
exactly what `--yes` executes. Planners (`kubegc_cli.policy`) build plans without I/O; the
executor (`kubegc_cli.node.execute.actions`) fills in `result`, `error` and `bytes_freed`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from json.encoder import encode_basestring_ascii as _json_str  # json's own (C) encoder
from typing import Any, Generic, Protocol, TypeVar

from kubegc_cli.core.model import (
    API_VERSION,
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    Image,
    Sandbox,
)
from kubegc_cli.core.pulls import RepullRisk
from kubegc_cli.core.sizes import container_bytes
from kubegc_cli.core.units import ns_to_rfc3339

INTERRUPTED = "interrupted before removal"
GONE = "gone before removal"  # an object already gone when its turn came: skipped
# Why a CREATED container in a READY sandbox stays (the plan's `may-start`, the executor's skip).
MAY_START = "CREATED in a READY sandbox: the kubelet may be about to start it"
#: The rules that remove what a pod left because the pod is gone (deleted) or has finished
#: (terminated); such a removal waits for no pod that is alive on the node.
POD_RULES = ("deleted-pod", "terminated-pod")
# Why a removal planned for a deleted or terminated pod is skipped: the pod has a READY
# sandbox or a RUNNING container now (the kubelet keeps its records until it terminates it).
POD_ALIVE = "the pod is alive now"

#: `--concurrency` of the removing commands when not given: removals in flight at once. The
#: kubelet removes one container at a time (it runs beside the pods); crictl sends every
#: removal at once. Each kubegc removal makes about three calls (ContainerStatus, a pod
#: re-check shared among removals of one pod, RemoveContainer) where a bare loop makes one,
#: so it needs more in flight to keep the runtime as busy; past 8 the runtime's own CPU, or on
#: a fast runtime kubegc's own, is what limits a 2-core node: 8, 16 and 24 removed at rates
#: within each other's run-to-run spread (docs/PERFORMANCE.md §13, §17), and 8 loads the node
#: least.
REMOVAL_CONCURRENCY = 8
#: The `--concurrency` kubegc recommends for a node under pressure (disk filling, an eviction
#: near): the fastest value measured in some runs, never clearly slower than 8; at 32 the
#: client's threads and the runtime's locks cost more CPU than the overlap gains (§13).
PRESSURE_CONCURRENCY = 16
#: `--concurrency` of the unattended agent and of `evict` (API calls): a background run spares
#: the node, as the kubelet does.
GENTLE_CONCURRENCY = 4


class Result(StrEnum):
    """What became of an action. `kept` is used for objects the plan deliberately leaves;
    `held-back` for removals a blast-radius cap (`--max-delete`, `--max-bytes`) stopped."""

    PLANNED = "planned"
    REMOVED = "removed"
    SKIPPED = "skipped"
    FAILED = "failed"
    HELD_BACK = "held-back"
    KEPT = "kept"


class RawJSON(str):
    """Text that is already one JSON value (`render.json_text` writes it as it is)."""

    __slots__ = ()  # (no instance dict: not tracked by the cyclic collector)


def _json_row(item: Any, shared: dict[Any, str]) -> RawJSON:
    """One item of a plan's lists as JSON text: its own `json_row` if it has one (given
    `shared`, one dict per list written)."""
    row = getattr(item, "json_row", None)
    return row(shared) if row is not None else RawJSON(json.dumps(item.to_dict()))


@dataclass(slots=True)
class ContainerAction:
    """Remove one container (or, in `Plan.kept`, why it stays).

    `rule` is a short stable code for the rule that selected or kept it (`deleted-pod`,
    `max-per-pod-container`, `max-containers`, `guard-newest-record`, ...); `reason` the same
    in words. `stop_first` is set for UNKNOWN containers, which the kubelet stops before removing.
    `bytes_freed` counts log bytes actually removed (0 until acted on).
    """

    container: Container
    rule: str
    reason: str
    result: Result = Result.PLANNED
    error: str = ""
    stop_first: bool = False
    bytes_freed: int = 0
    log_note: str = ""
    layer_bytes: int | None = None
    log_changed_ns: int = 0  # its log files' latest mtime or ctime when sized (0: not read)

    kind = "container"

    @property
    def id(self) -> str:
        return self.container.id

    @property
    def planned_bytes(self) -> int:
        return container_bytes(self.container.log_bytes, self.layer_bytes)

    def to_dict(self) -> dict[str, Any]:
        c = self.container
        labels = c.labels  # (the Container properties, inlined: one call per action)
        return {
            "kind": self.kind,
            "id": c.id,
            "pod_uid": labels.get(LABEL_POD_UID, ""),
            "pod_namespace": labels.get(LABEL_POD_NAMESPACE, ""),
            "pod_name": labels.get(LABEL_POD_NAME, ""),
            "pod_sandbox_id": c.pod_sandbox_id,
            "name": labels.get(LABEL_CONTAINER_NAME) or c.name,
            "attempt": c.attempt,
            "state": c.state.value,
            "created_at": ns_to_rfc3339(c.created_at),
            "finished_at": ns_to_rfc3339(c.finished_at) if c.finished_at else None,
            "image": c.image,
            "log_path": c.log_path,
            "log_bytes": c.log_bytes,
            "writable_layer_bytes": self.layer_bytes,
            "expected_bytes": self.planned_bytes,
            "rule": self.rule,
            "reason": self.reason,
            "result": self.result.value,
            "error": self.error,
            "bytes_freed": self.bytes_freed,
            "log_note": self.log_note,
        }

    def json_row(self, shared: dict[Any, str] | None = None) -> RawJSON:
        """`json.dumps(self.to_dict())`, written directly (a plan can hold 100,000 of them:
        this takes a fraction of the time of building the dict and encoding it). The state
        and result enums are `StrEnum`s: encoded as the strings they are.

        `shared` (one dict for the rows written together, while their containers are alive)
        keeps what many rows repeat, encoded once: the pod fields by labels object (the
        attempts of a container share one labels dict), each sandbox ID, name and image by
        its text, and the rule-to-log_note tail by its values."""
        if shared is None:
            shared = {}
        c = self.container
        labels = c.labels
        e = _json_str
        pod = shared.get(id(labels))
        if pod is None:
            pod = shared[id(labels)] = (
                f'"pod_uid": {e(labels.get(LABEL_POD_UID, ""))}, '
                f'"pod_namespace": {e(labels.get(LABEL_POD_NAMESPACE, ""))}, '
                f'"pod_name": {e(labels.get(LABEL_POD_NAME, ""))}, '
            )
        said = (self.rule, self.reason, self.result, self.error, self.bytes_freed, self.log_note)
        tail = shared.get(said)
        if tail is None:
            tail = shared[said] = (
                f'"rule": {e(self.rule)}, "reason": {e(self.reason)}, '
                f'"result": {e(self.result)}, "error": {e(self.error)}, '
                f'"bytes_freed": {int(self.bytes_freed)}, "log_note": {e(self.log_note)}}}'
            )
        name = labels.get(LABEL_CONTAINER_NAME) or c.name
        sandbox, image = c.pod_sandbox_id, c.image
        fin = f'"{ns_to_rfc3339(c.finished_at)}"' if c.finished_at else "null"
        size = "null" if c.log_bytes is None else str(int(c.log_bytes))
        layer = "null" if self.layer_bytes is None else str(int(self.layer_bytes))
        expected = container_bytes(c.log_bytes, self.layer_bytes)
        return RawJSON(
            f'{{"kind": "container", "id": {e(c.id)}, {pod}'
            f'"pod_sandbox_id": {shared.get(sandbox) or _encoded(shared, sandbox)}, '
            f'"name": {shared.get(name) or _encoded(shared, name)}, '
            f'"attempt": {int(c.attempt)}, "state": {e(c.state)}, '
            f'"created_at": "{ns_to_rfc3339(c.created_at)}", "finished_at": {fin}, '
            f'"image": {shared.get(image) or _encoded(shared, image)}, '
            f'"log_path": {e(c.log_path)}, "log_bytes": {size}, '
            f'"writable_layer_bytes": {layer}, "expected_bytes": {int(expected)}, {tail}'
        )


def layer_of(layers: Mapping[str, tuple[int | None, int | None]], container_id: str) -> int | None:
    """The writable layer bytes of `container_id` in `layers` (`CriClient.writable_layers`:
    ID → (bytes, inodes)); None when the runtime did not report it."""
    return layers.get(container_id, (None, None))[0]


def attach_layers(
    actions: Iterable[Any], layers: Mapping[str, tuple[int | None, int | None]]
) -> None:
    """Give each container action of `actions` its writable layer from `layers` (see
    `layer_of`); other kinds are left alone."""
    for a in actions:
        if a.kind == "container":
            a.layer_bytes = layer_of(layers, a.id)


def _encoded(shared: dict[Any, str], text: str) -> str:
    """`text` as a JSON string, kept in `shared` under itself (for `ContainerAction.json_row`)."""
    out = shared[text] = _json_str(text)
    return out


@dataclass(slots=True)
class SandboxAction:
    """Remove one pod sandbox (StopPodSandbox, then RemovePodSandbox), or why it stays.

    `container_count` is how many containers the runtime lists in it at planning time.
    """

    sandbox: Sandbox
    rule: str
    reason: str
    container_count: int = 0
    result: Result = Result.PLANNED
    error: str = ""
    bytes_freed: int = 0
    log_note: str = ""

    kind = "sandbox"

    @property
    def id(self) -> str:
        return self.sandbox.id

    @property
    def planned_bytes(self) -> int:
        return 0

    def to_dict(self) -> dict[str, Any]:
        s = self.sandbox
        return {
            "kind": self.kind,
            "id": s.id,
            "pod_uid": s.uid,
            "pod_namespace": s.namespace,
            "pod_name": s.name,
            "attempt": s.attempt,
            "state": s.state.value,
            "created_at": ns_to_rfc3339(s.created_at),
            "container_count": self.container_count,
            "expected_bytes": 0,
            "rule": self.rule,
            "reason": self.reason,
            "result": self.result.value,
            "error": self.error,
        }


@dataclass(slots=True)
class LogAction:
    """Remove a pod log directory (`kind` "pod-log-dir") or a dangling legacy log symlink
    (`kind` "log-symlink"), or why it stays. `path` is the host path; `local_path` the same
    under `--host-root`; `bytes` what the directory holds (0 for a link)."""

    kind: str
    path: str
    local_path: str
    pod_uid: str
    rule: str
    reason: str
    bytes: int = 0
    result: Result = Result.PLANNED
    error: str = ""
    bytes_freed: int = 0
    log_note: str = ""
    changed_ns: int = 0  # the latest change below it when sized (`TreeUsage.changed_ns`)

    @property
    def id(self) -> str:
        return self.path

    @property
    def planned_bytes(self) -> int:
        return self.bytes

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.path,
            "path": self.path,
            "pod_uid": self.pod_uid,
            "bytes": self.bytes,
            "expected_bytes": self.planned_bytes,
            "rule": self.rule,
            "reason": self.reason,
            "result": self.result.value,
            "error": self.error,
            "bytes_freed": self.bytes_freed,
        }


@dataclass(slots=True)
class ImageAction:
    """Remove one image (`RemoveImage`), or why it stays. `first_detected` and `last_used` are
    nanoseconds since the epoch (`last_used` 0 = never seen in use). `used_by`: the
    containers (any state) that hold an image kept in use, as the runtime listed them (empty
    otherwise)."""

    image: Image
    first_detected: int
    last_used: int
    rule: str
    reason: str
    result: Result = Result.PLANNED
    error: str = ""
    bytes_freed: int = 0
    log_note: str = ""
    used_by: tuple[Container, ...] = ()
    repull: RepullRisk | None = None  # what pulling it again takes (`policy.images.repull_risk`)

    kind = "image"

    @property
    def id(self) -> str:
        return self.image.id

    @property
    def planned_bytes(self) -> int:
        return self.image.size

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.image.id,
            "repo_tags": list(self.image.repo_tags),
            "size": self.image.size,
            "pinned": self.image.pinned,
            "first_detected": ns_to_rfc3339(self.first_detected),
            "last_used": ns_to_rfc3339(self.last_used) if self.last_used else None,
            "expected_bytes": self.planned_bytes,
            "rule": self.rule,
            "reason": self.reason,
            "result": self.result.value,
            "error": self.error,
            "bytes_freed": self.bytes_freed,
            "used_by": [container_ref(c) for c in self.used_by],
            **({"repull": self.repull.to_dict()} if self.repull is not None else {}),
        }


def container_ref(c: Container) -> dict[str, Any]:
    """A container named for a reader: its ID, name, pod (namespace, name, UID) and state, as
    the runtime lists them (`""` for a label it does not carry)."""
    return {
        "id": c.id,
        "name": c.container_name,
        "pod_namespace": c.pod_namespace,
        "pod_name": c.pod_name,
        "pod_uid": c.pod_uid,
        "state": c.state.value,
    }


@dataclass(slots=True)
class PodAction:
    """Delete one Evicted pod from the API (or, in `Plan.kept`, why it stays).

    `evicted_at` is nanoseconds since the epoch (0 = unknown): the pod's DisruptionTarget
    condition's lastTransitionTime, else its Ready condition's, else `status.startTime`.
    `message` is the pod's `status.message` (what the kubelet said when evicting it).
    `owner_kind`/`owner_name` are the controller owner reference ("" for a bare pod).
    Pods hold no node bytes, so `planned_bytes` and `bytes_freed` are 0.
    """

    namespace: str
    name: str
    uid: str
    resource_version: str
    node: str
    owner_kind: str
    owner_name: str
    evicted_at: int
    message: str
    rule: str
    reason: str
    result: Result = Result.PLANNED
    error: str = ""
    bytes_freed: int = 0
    log_note: str = ""

    kind = "pod"

    @property
    def id(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def planned_bytes(self) -> int:
        return 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "namespace": self.namespace,
            "name": self.name,
            "uid": self.uid,
            "resource_version": self.resource_version,
            "node": self.node,
            "owner_kind": self.owner_kind,
            "owner_name": self.owner_name,
            "evicted_at": ns_to_rfc3339(self.evicted_at) if self.evicted_at else None,
            "message": self.message,
            "expected_bytes": 0,
            "rule": self.rule,
            "reason": self.reason,
            "result": self.result.value,
            "error": self.error,
            "log_note": self.log_note,
        }


class Action(Protocol):
    """What every kind of action has (`ContainerAction`, `SandboxAction`)."""

    kind: str
    rule: str
    reason: str
    result: Result
    error: str
    bytes_freed: int
    log_note: str

    @property
    def id(self) -> str: ...

    @property
    def planned_bytes(self) -> int: ...

    def to_dict(self) -> dict[str, Any]: ...


A = TypeVar("A", bound=Action)

#: The results whose objects a plan's expected bytes count: still to go (a dry run) or gone
#: (after acting). Skipped, failed and held-back objects free nothing.
GOING = (Result.PLANNED, Result.REMOVED)
#: Kinds whose expected bytes are an estimate: an image's size as CRI reports it (the
#: kubelet counts it so too) is its stored content — removing the image frees its unpacked
#: layers as well, and not the layers an image that stays shares: the disk regained may be
#: more or less.
ESTIMATED_KINDS = frozenset({"image"})
#: The note a plan removing images carries, saying why its expected bytes are an estimate.
ESTIMATE_NOTE = (
    "image bytes are the sizes the runtime reports (as the kubelet counts them): removing an "
    "image also frees its unpacked layers, and not the layers images that stay share, so the "
    "disk regained may be more or less"
)


def expected_bytes(actions: Iterable[Any]) -> int:
    """What `actions` are expected to free, bytes: the sum of `planned_bytes` over those that
    go (`GOING`). The one sum behind every command's "expected" figure."""
    return sum(a.planned_bytes for a in actions if a.result in GOING)


def expected_is_estimate(actions: Iterable[Any]) -> bool:
    """True when the expected bytes of `actions` count an object whose bytes are an estimate
    (`ESTIMATED_KINDS`) among those that go."""
    return any(a.kind in ESTIMATED_KINDS and a.result in GOING for a in actions)


def measured_bytes(filesystems: Iterable[Mapping[str, Any]]) -> int | None:
    """What a run measured, bytes: the sum of `regained` over `filesystems` (the entries of
    `Plan.filesystems`); None when none was measured (a dry run, nothing acted on)."""
    regained = [f["regained"] for f in filesystems if f.get("regained") is not None]
    return sum(regained) if regained else None


@dataclass(slots=True)
class Plan(Generic[A]):
    """A command's plan. `now` is the planning time in nanoseconds since the epoch.

    `actions` are the removals (always a list, possibly empty); `kept` the garbage candidates
    deliberately left, each with its reason; `notes` human lines explaining the plan as a whole.
    `out_of_scope` counts removals the policy selected that scope filters dropped.
    `filesystems`: one dict per filesystem the run touches — `roles` (nodefs: the kubelet
    root; logs: the pod log root; imagefs, containerfs: the runtime's), `path`, `capacity`,
    `available_before` (bytes, statvfs), `available_after` and `regained` (bytes, statvfs
    after acting, `regained` never < 0; None before). `summary()` sums it as `bytes_measured`.
    """

    kind: str
    policy: dict[str, Any]
    now: int
    actions: list[A] = field(default_factory=list)
    kept: list[A] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    out_of_scope: int = 0
    dry_run: bool = True
    source: str = ""
    interrupted: str = ""  # the signal that stopped the run: "SIGINT", "SIGTERM" or ""
    runtime_lost: str = ""  # why the run took the runtime to have stopped answering
    declined: bool = False
    shortfall: int = 0  # bytes a space target could not reach (image GC); > 0 is a failure
    filesystem: dict[str, Any] | None = None  # the filesystem a space target is measured on
    filesystems: list[dict[str, Any]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Counts of actions by result, every result present (0 when none)."""
        c = Counter(a.result.value for a in self.actions)
        return {r.value: c.get(r.value, 0) for r in Result if r is not Result.KEPT}

    def summary(self) -> dict[str, Any]:
        """The plan's totals, from its rows: counts by result and of kept objects; bytes
        `bytes_expected` (`expected_bytes`: what the objects that go are expected to free),
        `bytes_expected_is_estimate`, `bytes_measured` (`measured_bytes`: what the
        filesystems regained, None until measured), and `bytes_planned` / `bytes_held_back`
        (planned bytes not held back / held back by a cap), `bytes_freed` (the rows'
        `bytes_freed`), `shortfall`."""
        return {
            "total": len(self.actions),
            "by_result": self.counts(),
            "kept": len(self.kept),
            "kept_by_rule": dict(sorted(Counter(k.rule for k in self.kept).items())),
            "out_of_scope": self.out_of_scope,
            "bytes_planned": sum(
                a.planned_bytes for a in self.actions if a.result is not Result.HELD_BACK
            ),
            "bytes_held_back": sum(
                a.planned_bytes for a in self.actions if a.result is Result.HELD_BACK
            ),
            "bytes_freed": sum(a.bytes_freed for a in self.actions),
            "bytes_expected": expected_bytes(self.actions),
            "bytes_expected_is_estimate": expected_is_estimate(self.actions),
            "bytes_measured": measured_bytes(self.filesystems),
            "shortfall": self.shortfall,
        }

    def to_dict(self, *, rows_as_json: bool = False) -> dict[str, Any]:
        """The plan as the JSON/YAML document. `rows_as_json`: the items of `actions` and
        `kept` as `RawJSON` text (for `render.json_text`) instead of dicts."""
        shared: dict[Any, str] = {}  # (for `json_row`: alive only while the rows are made)
        item: Any = (lambda a: _json_row(a, shared)) if rows_as_json else (lambda a: a.to_dict())
        return {
            "kind": self.kind,
            "apiVersion": API_VERSION,
            "now": ns_to_rfc3339(self.now),
            "source": self.source,
            "dry_run": self.dry_run,
            "interrupted": bool(self.interrupted),
            "policy": self.policy,
            "actions": [item(a) for a in self.actions],
            "kept": [item(k) for k in self.kept],
            "notes": list(self.notes),
            "summary": self.summary(),
            **({"filesystem": self.filesystem} if self.filesystem is not None else {}),
            "filesystems": self.filesystems,
        }


def skip_planned(actions: Iterable[Action], why: str) -> None:
    """Mark every action of `actions` still `planned` `skipped` with `why` (a run that stops
    short: interrupted, or the runtime stopped answering)."""
    for a in actions:
        if a.result is Result.PLANNED:
            a.result, a.error = Result.SKIPPED, why


def apply_caps(plan: Plan[Any], max_delete: int | None, max_bytes: int | None) -> int:
    """Hold back the planned actions beyond a blast-radius cap; returns how many.

    Actions are taken in plan order (the order the rules rank them) while both caps allow:
    at most `max_delete` actions and at most `max_bytes` planned bytes (`planned_bytes`). The
    first action that would pass a cap and every one after it become `held-back`, with the
    cap named in `error` (`held back by --max-delete 5`). A note says what was held back.
    """
    taken = 0
    size = 0
    held = 0
    why = ""
    for a in plan.actions:
        if a.result is not Result.PLANNED:
            continue
        if not why:
            if max_delete is not None and taken + 1 > max_delete:
                why = f"held back by --max-delete {max_delete}"
            elif max_bytes is not None and size + a.planned_bytes > max_bytes:
                why = f"held back by --max-bytes {max_bytes}"
        if why:
            a.result, a.error = Result.HELD_BACK, why
            held += 1
        else:
            taken += 1
            size += a.planned_bytes
    if held:
        cap = why.removeprefix("held back by ")
        plan.notes.append(
            f"{held} removal(s) held back by {cap}: the cap lets {taken} of "
            f"{taken + held} go in this run."
        )
    return held
