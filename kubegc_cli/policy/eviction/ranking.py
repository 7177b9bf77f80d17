"""The kubelet's ranking of pods for eviction, and the pod requests it ranks by.

Source of the rules: kubelet eviction (`pkg/kubelet/eviction/helpers.go`: `rankMemoryPressure`,
`rankPIDPressure`, `rankDiskPressureFunc`, `exceedMemoryRequests`, `memory`, `process`,
`exceedDiskRequests`, `disk`, `priority`, `cmpBool`), the request helper it calls
(`pkg/api/v1/resource` `GetResourceRequestQuantity` over component-helpers `PodRequests`) and
`kubelettypes.IsCriticalPod`. Each ranking is a chain of comparators; the first that tells two
pods apart decides:

- memory: usage above request first (working set > memory request, strictly), then lower
  priority first, then larger `working set − memory request` first;
- PID: lower priority first, then more processes first;
- disk: usage above request first (for inodes, which pods cannot request, any non-zero usage
  counts), then lower priority first, then larger `usage − ephemeral-storage request` first —
  the ephemeral-storage request is subtracted from an inode count too.

The requests are the ones the kubelet has allocated, not the spec's while an in-place resize
is pending: the eviction manager ranks the pods `getAllocatedPods` gives it
(`pkg/kubelet/kubelet_pods.go`), each container's resources replaced by its allocation
(`pkg/kubelet/allocation` `updatePodFromAllocation`), which the API shows as the container's
`status.containerStatuses[].allocatedResources` (and `initContainerStatuses`; reported from
1.33, set to the allocated container's requests). Such a pod is marked (`PodResources.resize`).

A pod without stats sorts before every pod with stats in each stats comparator. Critical pods
(static, mirror, or priority ≥ 2,000,000,000) keep their place in the ranking but are flagged:
the kubelet skips them and tries the next pod. The kubelet's sort is unstable; kubegc breaks
the remaining ties by namespace, then name, then UID, so its output is deterministic.

Units: bytes for memory and disk, a count for inodes and processes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cmp_to_key
from typing import Any

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.units import parse_quantity
from kubegc_cli.policy.eviction.thresholds import NEWEST_KUBELET, KubeletVersion

SYSTEM_CRITICAL_PRIORITY = 2_000_000_000
ANNOTATION_CONFIG_SOURCE = "kubernetes.io/config.source"
ANNOTATION_CONFIG_MIRROR = "kubernetes.io/config.mirror"
CONFIG_SOURCE_API = "api"
RESOURCE_MEMORY = "memory"
RESOURCE_EPHEMERAL_STORAGE = "ephemeral-storage"


@dataclass(frozen=True, slots=True)
class PodResources:
    """What the kubelet's ranking needs to know about one pod.

    `priority` is `spec.priority` (0 when missing); `memory_request` and `ephemeral_request`
    are the pod's requests in bytes as the kubelet computes them (see `pod_resources`),
    rounded up to whole bytes. `critical` marks a pod the kubelet never evicts, and
    `critical_reason` says why (`static pod`, `mirror pod`, `priority ...`). `owner_kind` and
    `owner_name` come from the first owner reference ("" when there is none). `resize` is ""
    unless an in-place resize is pending or in progress: then it says so, and that the
    requests are the allocated ones (`allocated_spec`). `qos` is its QoS class (`qos_class`).
    """

    uid: str
    namespace: str
    name: str
    priority: int = 0
    memory_request: int = 0
    ephemeral_request: int = 0
    critical: bool = False
    owner_kind: str = ""
    owner_name: str = ""
    critical_reason: str = ""
    resize: str = ""
    qos: str = ""

    @property
    def ref(self) -> str:
        """`namespace/name`."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class PodStats:
    """A pod's usage from the node's stats, each None when the stats have no figure.

    `working_set` (bytes) ranks memory, `processes` ranks PIDs, `disk_usage` (bytes) and
    `inodes` rank disk — summed over what the filesystem layout measures for the signal
    (kubelet eviction: `podDiskUsage` with the layout's fs stats). A None in the figure a
    ranking reads counts as "no stats" there.
    """

    working_set: int | None = None
    processes: int | None = None
    disk_usage: int | None = None
    inodes: int | None = None


@dataclass(frozen=True, slots=True)
class Ranked:
    """One pod in eviction order.

    `exceeds`: its usage is above its request (memory: working set > memory request; disk:
    usage > ephemeral-storage request, or any inode use; always False for PIDs). `excess`: the
    figure the last comparator orders by, larger first — `working set − memory request`,
    `usage − ephemeral-storage request`, or the process count; None without stats.
    `skipped_reason` is "" for a pod the kubelet would evict, else why it skips it.
    """

    pod: PodResources
    stats: PodStats
    exceeds: bool
    excess: int | None
    skipped_reason: str = ""

    @property
    def skipped(self) -> bool:
        """The kubelet passes over this pod (a critical pod)."""
        return bool(self.skipped_reason)


PodEntry = tuple[PodResources, PodStats]


# --- requests ---------------------------------------------------------------------------------


def _mapping(value: Any, *, who: str, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise BadInput(f"{who}: {path} must be a mapping, got {value!r}")
    return value


def _list(value: Any, *, who: str, path: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(x, Mapping) for x in value):
        raise BadInput(f"{who}: {path} must be a list of mappings")
    return value


def _quantity(value: Any, *, who: str, path: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise BadInput(f"{who}: {path} {value!r} is not a quantity")
    try:
        return parse_quantity(str(value))
    except BadInput:
        raise BadInput(f"{who}: {path} {value!r} is not a quantity (e.g. 128Mi, 1Gi)") from None


def _container_request(c: Mapping[str, Any], resource: str, *, who: str, path: str) -> Fraction:
    resources = _mapping(c.get("resources"), who=who, path=f"{path}.resources")
    requests = _mapping(resources.get("requests"), who=who, path=f"{path}.resources.requests")
    if resource not in requests:
        return Fraction(0)
    return _quantity(requests[resource], who=who, path=f"{path}.resources.requests.{resource}")


def _supported_pod_level(resource: str) -> bool:
    return resource in ("cpu", RESOURCE_MEMORY) or resource.startswith("hugepages-")


def _pod_request(spec: Mapping[str, Any], resource: str, *, who: str) -> Fraction:
    pod_level = _mapping(spec.get("resources"), who=who, path="spec.resources")
    pod_requests = _mapping(pod_level.get("requests"), who=who, path="spec.resources.requests")
    pod_limits = _mapping(pod_level.get("limits"), who=who, path="spec.resources.limits")
    if any(_supported_pod_level(r) for r in (*pod_requests, *pod_limits)):
        # Pod-level resources replace the containers' (supported resources only).
        total = Fraction(0)
        if _supported_pod_level(resource) and resource in pod_requests:
            path = f"spec.resources.requests.{resource}"
            total = _quantity(pod_requests[resource], who=who, path=path)
    else:
        total = Fraction(0)
        for i, c in enumerate(_list(spec.get("containers"), who=who, path="spec.containers")):
            path = f"spec.containers[{c.get('name', i)}]"
            total += _container_request(c, resource, who=who, path=path)
        sidecars = Fraction(0)
        init_peak = Fraction(0)
        inits = _list(spec.get("initContainers"), who=who, path="spec.initContainers")
        for i, c in enumerate(inits):
            path = f"spec.initContainers[{c.get('name', i)}]"
            request = _container_request(c, resource, who=who, path=path)
            if c.get("restartPolicy") == "Always":
                # A sidecar runs alongside the app containers and every later init container.
                total += request
                sidecars += request
                init_peak = max(init_peak, sidecars)
            else:
                init_peak = max(init_peak, request + sidecars)
        total = max(total, init_peak)
    overhead = _mapping(spec.get("overhead"), who=who, path="spec.overhead")
    if resource in overhead and total != 0:
        total += _quantity(overhead[resource], who=who, path=f"spec.overhead.{resource}")
    return total


RESIZE_CONDITIONS = ("PodResizePending", "PodResizeInProgress")


def allocated_spec(
    spec: Mapping[str, Any], status: Mapping[str, Any], *, who: str
) -> tuple[Mapping[str, Any], str]:
    """`spec` as the kubelet ranks it — each container and init container whose status
    reports `allocatedResources` with those as its requests, and pod-level `spec.resources`
    with the pod's `status.allocatedResources` as its requests when both are present
    (kubelet allocation: `updatePodFromAllocation` replaces a container's resources, and the
    pod-level resources, with their allocation; the status reports the allocation's
    requests) — and why it differs from the spec ("" when it
    does not and no resize is pending): the `PodResizePending`/`PodResizeInProgress`
    condition (1.33+) or the deprecated `status.resize`, with the allocated memory and
    ephemeral-storage requests that differ from the spec's. Raises `BadInput` naming the pod
    and the field for a status of the wrong shape."""
    allocated: dict[tuple[str, str], Mapping[str, Any]] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for i, cs in enumerate(_list(status.get(key), who=who, path=f"status.{key}")):
            if cs.get("allocatedResources") is not None:
                path = f"status.{key}[{cs.get('name', i)}].allocatedResources"
                alloc = _mapping(cs["allocatedResources"], who=who, path=path)
                allocated[(key, str(cs.get("name")))] = alloc
    conditions = _list(status.get("conditions"), who=who, path="status.conditions")
    pending = [
        str(c["type"])
        for c in conditions
        if c.get("type") in RESIZE_CONDITIONS and str(c.get("status")) == "True"
    ]
    if not pending and status.get("resize"):
        pending = [f"resize {status['resize']}"]
    changed: list[str] = []
    out = dict(spec)
    for key, status_key in (("containers", "containerStatuses"),
                            ("initContainers", "initContainerStatuses")):  # fmt: skip
        if key not in spec:
            continue
        containers: list[Mapping[str, Any]] = []
        for i, c in enumerate(_list(spec.get(key), who=who, path=f"spec.{key}")):
            given = allocated.get((status_key, str(c.get("name"))))
            if given is None:
                containers.append(c)
            else:
                path = f"spec.{key}[{c.get('name', i)}]"
                containers.append(_with_requests(c, given, changed, who=who, path=path))
        out[key] = containers
    pod_alloc = status.get("allocatedResources")
    if pod_alloc is not None and spec.get("resources") is not None:
        # Pod-level resources (InPlacePodLevelResourcesVerticalScaling): the kubelet replaces
        # `spec.resources` with the pod-level allocation, which the status reports.
        alloc = _mapping(pod_alloc, who=who, path="status.allocatedResources")
        level = _mapping(spec["resources"], who=who, path="spec.resources")
        asked = _mapping(level.get("requests"), who=who, path="spec.resources.requests")
        spec_memory = _pod_request(spec, RESOURCE_MEMORY, who=who)
        out["resources"] = {**level, "requests": dict(alloc)}
        got = _pod_request(out, RESOURCE_MEMORY, who=who)
        if got != spec_memory:
            changed.append(
                f"pod: {RESOURCE_MEMORY} {alloc.get(RESOURCE_MEMORY, 0)} allocated, "
                f"{asked.get(RESOURCE_MEMORY, 0)} in the spec"
            )
    if not pending and not changed:
        return spec, ""
    why = ", ".join(pending) or "in-place resize not yet applied"
    detail = f" ({'; '.join(changed)})" if changed else ""
    return out, f"{why}: ranked by the allocated requests{detail}"


def _with_requests(
    c: Mapping[str, Any], alloc: Mapping[str, Any], changed: list[str], *, who: str, path: str
) -> Mapping[str, Any]:
    """Container `c` with `alloc` as its requests; appends to `changed` each memory or
    ephemeral-storage request that differs from its spec's."""
    resources = dict(_mapping(c.get("resources"), who=who, path=f"{path}.resources"))
    requests = _mapping(resources.get("requests"), who=who, path=f"{path}.resources.requests")
    for resource in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE):
        asked = _container_request(c, resource, who=who, path=path)
        where = f"{path} allocatedResources.{resource}"
        got = _quantity(alloc[resource], who=who, path=where) if resource in alloc else Fraction(0)
        if asked != got:
            changed.append(
                f"{c.get('name')}: {resource} {alloc.get(resource, 0)} allocated, "
                f"{requests.get(resource, 0)} in the spec"
            )
    resources["requests"] = dict(alloc)
    return {**c, "resources": resources}


QOS_RESOURCES = ("cpu", RESOURCE_MEMORY)


def _positive(values: Mapping[str, Any], *, who: str, path: str) -> dict[str, Fraction]:
    """The cpu and memory quantities above zero in a requests or limits map."""
    out = {}
    for name in QOS_RESOURCES:
        if name in values:
            q = _quantity(values[name], who=who, path=f"{path}.{name}")
            if q > 0:
                out[name] = q
    return out


#: From kubelet 1.36 (feature gate `PodLevelResourcesFixKubeletQOSClass`, beta and on by
#: default; kubernetes/kubernetes#137150, the fix of #135082) empty pod-level resources
#: (`{}`, `{requests: {}}`, `{limits: {}}`) no longer decide the QoS class; before, a present
#: `spec.resources` decided it even empty (`ComputePodQOS`: gate `PodLevelResources` on and
#: `spec.resources` not nil). A kubelet with `PodLevelResources` off (alpha 1.32-1.33, off by
#: default; beta and on from 1.34) rejects a pod with pod-level resources, so a pod it runs
#: has none: kubegc does not model the gate.
EMPTY_POD_LEVEL_IGNORED_SINCE: KubeletVersion = (1, 36)


def pod_level_decides_qos(
    resources: Mapping[str, Any], version: KubeletVersion | None = None, *, who: str = "pod"
) -> bool:
    """Whether a present pod-level `spec.resources` (a mapping) decides the QoS class for
    kubelet `version` (None: the newest kubegc knows): before 1.36 always; from 1.36 only
    when its `requests` or `limits` names a resource (`EMPTY_POD_LEVEL_IGNORED_SINCE`).
    Raises `BadInput` naming the pod for a `requests`/`limits` that is not a mapping."""
    if (version or NEWEST_KUBELET) < EMPTY_POD_LEVEL_IGNORED_SINCE:
        return True
    asked = _mapping(resources.get("requests"), who=who, path="spec.resources.requests")
    capped = _mapping(resources.get("limits"), who=who, path="spec.resources.limits")
    return bool(asked) or bool(capped)


def qos_class(
    pod: Mapping[str, Any], *, who: str = "pod", version: KubeletVersion | None = None
) -> str:
    """The pod's QoS class, `Guaranteed`, `Burstable` or `BestEffort`, as kubelet `version`
    (None: the newest kubegc knows) takes it (`pkg/apis/core/v1/helper/qos` `GetPodQOS`):
    `status.qosClass` when the pod has one, else computed (`ComputePodQOS`) from cpu and
    memory above zero — from the pod-level `spec.resources` when that section decides
    (`pod_level_decides_qos`: present, and from 1.36 not empty; its containers are then not
    looked at), else summed over the containers and init containers. BestEffort without
    requests and limits; Guaranteed when every limit set has cpu and memory and the requests
    equal the limits, resource by resource; else Burstable. Raises `BadInput` naming the
    pod and the field for a bad quantity."""
    status = _mapping(pod.get("status"), who=who, path="status")
    if status.get("qosClass"):
        return str(status["qosClass"])
    spec = _mapping(pod.get("spec"), who=who, path="spec")
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    sections: list[tuple[Mapping[str, Any], str]]
    pod_level = (
        _mapping(spec["resources"], who=who, path="spec.resources")
        if spec.get("resources") is not None
        else None
    )
    if pod_level is not None and pod_level_decides_qos(pod_level, version, who=who):
        sections = [(pod_level, "spec.resources")]
    else:
        sections = []
        for key in ("containers", "initContainers"):
            for i, c in enumerate(_list(spec.get(key), who=who, path=f"spec.{key}")):
                path = f"spec.{key}[{c.get('name', i)}].resources"
                sections.append((_mapping(c.get("resources"), who=who, path=path), path))
    for resources, path in sections:
        asked = _mapping(resources.get("requests"), who=who, path=f"{path}.requests")
        capped = _mapping(resources.get("limits"), who=who, path=f"{path}.limits")
        for name, q in _positive(asked, who=who, path=f"{path}.requests").items():
            requests[name] = requests.get(name, Fraction(0)) + q
        found = _positive(capped, who=who, path=f"{path}.limits")
        for name, q in found.items():
            limits[name] = limits.get(name, Fraction(0)) + q
        pod_level_without_limits = path == "spec.resources" and not capped
        if not pod_level_without_limits and set(found) != set(QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if (
        guaranteed
        and requests.keys() == limits.keys()
        and all(limits[n] == q for n, q in requests.items())
    ):
        return "Guaranteed"
    return "Burstable"


def pod_resources(pod: Mapping[str, Any], *, version: KubeletVersion | None = None) -> PodResources:
    """A decoded v1 Pod (a mapping, as `kubectl get pod -o json` prints it) → `PodResources`.

    Requests per resource, as the kubelet's eviction computes them: the sum over the regular
    containers and restartable (sidecar, `restartPolicy: Always`) init containers, or the
    largest need of any init container — a regular init container needs its own request plus
    the sidecars started before it — whichever is larger; with pod-level resources set
    (`spec.resources`, PodLevelResources), `spec.resources.requests` replaces the containers'
    for memory (and the ephemeral-storage request is then 0, as pod-level resources do not
    cover it); then `spec.overhead` is added when the total is not zero. Fractional bytes
    round up. Critical: annotation `kubernetes.io/config.source` present and not `api`
    (static pod), annotation `kubernetes.io/config.mirror` (mirror pod), or priority
    >= 2,000,000,000. The QoS class is kubelet `version`'s (`qos_class`; None: the newest
    kubegc knows). Raises `BadInput` naming the pod and the field for a bad quantity or a
    field of the wrong type.
    """
    if not isinstance(pod, Mapping):
        raise BadInput("pod: expected a mapping (a decoded v1 Pod)")
    meta = _mapping(pod.get("metadata"), who="pod", path="metadata")
    namespace = str(meta.get("namespace") or "")
    name = str(meta.get("name") or "")
    who = f"pod {namespace}/{name}"
    spec = _mapping(pod.get("spec"), who=who, path="spec")
    status = _mapping(pod.get("status"), who=who, path="status")
    spec, resize = allocated_spec(spec, status, who=who)
    annotations = _mapping(meta.get("annotations"), who=who, path="metadata.annotations")
    priority = spec.get("priority")
    if priority is None:
        priority = 0
    if isinstance(priority, bool) or not isinstance(priority, int):
        raise BadInput(f"{who}: spec.priority {priority!r} must be an integer")
    reason = ""
    config_source = annotations.get(ANNOTATION_CONFIG_SOURCE)
    if config_source is not None and config_source != CONFIG_SOURCE_API:
        reason = f"static pod (config source {config_source})"
    elif ANNOTATION_CONFIG_MIRROR in annotations:
        reason = "mirror pod"
    elif priority >= SYSTEM_CRITICAL_PRIORITY:
        reason = f"priority {priority} >= {SYSTEM_CRITICAL_PRIORITY} (system critical)"
    owners = _list(meta.get("ownerReferences"), who=who, path="metadata.ownerReferences")
    owner = owners[0] if owners else {}
    return PodResources(
        uid=str(meta.get("uid") or ""),
        namespace=namespace,
        name=name,
        priority=priority,
        memory_request=math.ceil(_pod_request(spec, RESOURCE_MEMORY, who=who)),
        ephemeral_request=math.ceil(_pod_request(spec, RESOURCE_EPHEMERAL_STORAGE, who=who)),
        critical=bool(reason),
        owner_kind=str(owner.get("kind") or ""),
        owner_name=str(owner.get("name") or ""),
        critical_reason=reason,
        resize=resize,
        qos=qos_class(pod, who=who, version=version),
    )


# --- comparators ------------------------------------------------------------------------------


def _cmp_bool(a: bool, b: bool) -> int:
    """True before False."""
    if a == b:
        return 0
    return -1 if a else 1


def _cmp_int(a: int, b: int) -> int:
    return (a > b) - (a < b)


def _tiebreak(a: PodEntry, b: PodEntry) -> int:
    ka = (a[0].namespace, a[0].name, a[0].uid)
    kb = (b[0].namespace, b[0].name, b[0].uid)
    return (ka > kb) - (ka < kb)


def _priority(a: PodEntry, b: PodEntry) -> int:
    return _cmp_int(a[0].priority, b[0].priority)


def _chain(a: PodEntry, b: PodEntry, *cmps: Callable[[PodEntry, PodEntry], int]) -> int:
    for cmp in cmps:
        result = cmp(a, b)
        if result:
            return result
    return _tiebreak(a, b)


def _memory_exceeds(e: PodEntry) -> bool:
    ws = e[1].working_set
    return ws is not None and ws > e[0].memory_request


def _exceed_memory(a: PodEntry, b: PodEntry) -> int:
    wa, wb = a[1].working_set, b[1].working_set
    if wa is None or wb is None:
        return _cmp_bool(wa is None, wb is None)
    return _cmp_bool(_memory_exceeds(a), _memory_exceeds(b))


def _memory(a: PodEntry, b: PodEntry) -> int:
    wa, wb = a[1].working_set, b[1].working_set
    if wa is None or wb is None:
        return _cmp_bool(wa is None, wb is None)
    return _cmp_int(wb - b[0].memory_request, wa - a[0].memory_request)


def _process(a: PodEntry, b: PodEntry) -> int:
    pa, pb = a[1].processes, b[1].processes
    if pa is None or pb is None:
        return _cmp_bool(pa is None, pb is None)
    return _cmp_int(pb, pa)


def _disk_usage(e: PodEntry, inodes: bool) -> int | None:
    return e[1].inodes if inodes else e[1].disk_usage


def _disk_exceeds(e: PodEntry, inodes: bool) -> bool:
    usage = _disk_usage(e, inodes)
    request = 0 if inodes else e[0].ephemeral_request  # pods cannot request inodes
    return usage is not None and usage > request


def compare_memory(a: PodEntry, b: PodEntry) -> int:
    """The kubelet's memory-pressure order: -1 when `a` is evicted before `b`, 1 after.

    Chain: no stats first, then working set > memory request first, then lower priority
    first, then larger `working set − memory request` first; ties by namespace/name/UID
    (kubelet eviction: `rankMemoryPressure`).
    """
    return _chain(a, b, _exceed_memory, _priority, _memory)


def compare_pid(a: PodEntry, b: PodEntry) -> int:
    """The kubelet's PID-pressure order: lower priority first, then (no stats first) more
    processes first; ties by namespace/name/UID (kubelet eviction: `rankPIDPressure`).
    """
    return _chain(a, b, _priority, _process)


def compare_disk(a: PodEntry, b: PodEntry, *, inodes: bool) -> int:
    """The kubelet's disk-pressure order for bytes (`inodes=False`) or inodes.

    Chain: no stats first, then usage above request first (inodes: any non-zero usage), then
    lower priority first, then larger `usage − ephemeral-storage request` first — for inodes
    too; ties by namespace/name/UID (kubelet eviction: `rankDiskPressureFunc`).
    """

    def exceed(x: PodEntry, y: PodEntry) -> int:
        ux, uy = _disk_usage(x, inodes), _disk_usage(y, inodes)
        if ux is None or uy is None:
            return _cmp_bool(ux is None, uy is None)
        return _cmp_bool(_disk_exceeds(x, inodes), _disk_exceeds(y, inodes))

    def disk(x: PodEntry, y: PodEntry) -> int:
        ux, uy = _disk_usage(x, inodes), _disk_usage(y, inodes)
        if ux is None or uy is None:
            return _cmp_bool(ux is None, uy is None)
        return _cmp_int(uy - y[0].ephemeral_request, ux - x[0].ephemeral_request)

    return _chain(a, b, exceed, _priority, disk)


# --- ranking ----------------------------------------------------------------------------------


def _skip_reason(pod: PodResources) -> str:
    if not pod.critical:
        return ""
    return f"critical pod ({pod.critical_reason or 'critical'}): the kubelet never evicts it"


def _ranked(
    pods: Sequence[PodEntry],
    cmp: Callable[[PodEntry, PodEntry], int],
    describe: Callable[[PodEntry], tuple[bool, int | None]],
) -> list[Ranked]:
    ordered = sorted(pods, key=cmp_to_key(cmp))
    result: list[Ranked] = []
    for entry in ordered:
        exceeds, excess = describe(entry)
        result.append(Ranked(entry[0], entry[1], exceeds, excess, _skip_reason(entry[0])))
    return result


def rank_memory(pods: Sequence[PodEntry]) -> list[Ranked]:
    """`(pod, stats)` pairs in the kubelet's eviction order under memory pressure.

    See `compare_memory`. `excess` is `working set − memory request` in bytes; critical pods
    stay in place, flagged with `skipped_reason`.
    """

    def describe(e: PodEntry) -> tuple[bool, int | None]:
        ws = e[1].working_set
        return _memory_exceeds(e), None if ws is None else ws - e[0].memory_request

    return _ranked(pods, compare_memory, describe)


def rank_pid(pods: Sequence[PodEntry]) -> list[Ranked]:
    """`(pod, stats)` pairs in the kubelet's eviction order under PID pressure.

    See `compare_pid`. `exceeds` is always False (no requests step); `excess` is the process
    count; critical pods stay in place, flagged with `skipped_reason`.
    """
    return _ranked(pods, compare_pid, lambda e: (False, e[1].processes))


def rank_disk(pods: Sequence[PodEntry], *, inodes: bool) -> list[Ranked]:
    """`(pod, stats)` pairs in the kubelet's eviction order under disk pressure.

    Ranks by `disk_usage` (bytes) or, with `inodes`, by the inode count. See `compare_disk`.
    `excess` is `usage − ephemeral-storage request` (the same subtraction for inodes, as the
    kubelet does); critical pods stay in place, flagged with `skipped_reason`.
    """

    def describe(e: PodEntry) -> tuple[bool, int | None]:
        usage = _disk_usage(e, inodes)
        return _disk_exceeds(e, inodes), None if usage is None else usage - e[0].ephemeral_request

    def cmp(a: PodEntry, b: PodEntry) -> int:
        return compare_disk(a, b, inodes=inodes)

    return _ranked(pods, cmp, describe)
