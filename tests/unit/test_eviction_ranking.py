"""The kubelet's eviction ranking and pod requests, as tables (and one property test)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cmp_to_key
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kubegc_cli.core.errors import BadInput
from kubegc_cli.policy.eviction.ranking import (
    PodResources,
    PodStats,
    Ranked,
    compare_disk,
    compare_memory,
    compare_pid,
    pod_resources,
    qos_class,
    rank_disk,
    rank_memory,
    rank_pid,
)

MI = 1024**2
GI = 1024**3


def p(
    name: str,
    *,
    priority: int = 0,
    mem: int = 0,
    eph: int = 0,
    critical: str = "",
    ns: str = "default",
) -> PodResources:
    return PodResources(
        uid=f"uid-{name}",
        namespace=ns,
        name=name,
        priority=priority,
        memory_request=mem,
        ephemeral_request=eph,
        critical=bool(critical),
        critical_reason=critical,
    )


def names(ranked: Sequence[Ranked]) -> list[str]:
    return [r.pod.name for r in ranked]


# --- memory -----------------------------------------------------------------------------------


@dataclass
class RankCase:
    name: str
    pods: list[tuple[PodResources, PodStats]]
    order: list[str]


MEMORY_CASES = [
    RankCase(
        "usage above requests first (strictly above)",
        [
            (p("below", mem=GI), PodStats(working_set=500 * MI)),
            (p("equal", mem=GI), PodStats(working_set=GI)),
            (p("above", mem=GI), PodStats(working_set=GI + 1)),
        ],
        ["above", "equal", "below"],  # equal: not above; excess 0 > -524Mi
    ),
    RankCase(
        "then lower priority first, whatever the usage",
        [
            (p("high", priority=1000), PodStats(working_set=2 * GI)),
            (p("low", priority=-10), PodStats(working_set=MI)),
            (p("mid", priority=0), PodStats(working_set=GI)),
        ],
        ["low", "mid", "high"],
    ),
    RankCase(
        "then the largest usage above request",
        [
            (p("small", mem=100 * MI), PodStats(working_set=150 * MI)),
            (p("large", mem=100 * MI), PodStats(working_set=900 * MI)),
            (p("besteffort", mem=0), PodStats(working_set=400 * MI)),
        ],
        ["large", "besteffort", "small"],
    ),
    RankCase(
        "exceeds, priority, excess together (QoS is not consulted)",
        [
            (p("d-low-under", priority=0, mem=GI), PodStats(working_set=900 * MI)),
            (p("e-high-under", priority=100, mem=GI), PodStats(working_set=100 * MI)),
            (p("c-high-over-big", priority=100, mem=100 * MI), PodStats(working_set=900 * MI)),
            (p("b-low-over-small", priority=0, mem=100 * MI), PodStats(working_set=150 * MI)),
            (p("a-low-over", priority=0, mem=100 * MI), PodStats(working_set=200 * MI)),
            (p("f-besteffort-idle", priority=0, mem=0), PodStats(working_set=0)),
        ],
        [
            "a-low-over",
            "b-low-over-small",
            "c-high-over-big",
            "f-besteffort-idle",
            "d-low-under",
            "e-high-under",
        ],
    ),
    RankCase(
        "pods without stats first, then the usual order among them",
        [
            (p("over", mem=0), PodStats(working_set=GI)),
            (p("nostats-high", priority=100), PodStats()),
            (p("nostats-low", priority=1), PodStats(processes=5)),
        ],
        ["nostats-low", "nostats-high", "over"],
    ),
    RankCase(
        "ties by namespace then name",
        [
            (p("b", ns="x"), PodStats(working_set=MI)),
            (p("a", ns="y"), PodStats(working_set=MI)),
            (p("a", ns="x"), PodStats(working_set=MI)),
        ],
        ["a", "b", "a"],
    ),
]


@pytest.mark.parametrize("case", MEMORY_CASES, ids=lambda c: c.name)
def test_rank_memory(case: RankCase) -> None:
    assert names(rank_memory(case.pods)) == case.order


def test_rank_memory_details() -> None:
    ranked = rank_memory(
        [
            (p("over", mem=100 * MI), PodStats(working_set=300 * MI)),
            (p("under", mem=GI), PodStats(working_set=GI - 1)),
            (p("none"), PodStats()),
        ]
    )
    assert [(r.pod.name, r.exceeds, r.excess) for r in ranked] == [
        ("none", False, None),
        ("over", True, 200 * MI),
        ("under", False, -1),
    ]
    assert ranked[1].stats == PodStats(working_set=300 * MI)


def test_critical_pods_stay_in_place_flagged() -> None:
    ranked = rank_memory(
        [
            (p("static", critical="static pod (config source file)"), PodStats(working_set=GI)),
            (p("normal"), PodStats(working_set=MI)),
            (p("sys", priority=2_000_000_000, critical="priority"), PodStats(working_set=GI)),
        ]
    )
    assert names(ranked) == ["static", "normal", "sys"]
    assert [r.skipped for r in ranked] == [True, False, True]
    assert "static pod" in ranked[0].skipped_reason
    assert ranked[1].skipped_reason == ""
    first_evicted = next(r for r in ranked if not r.skipped)
    assert first_evicted.pod.name == "normal"


# --- PID --------------------------------------------------------------------------------------

PID_CASES = [
    RankCase(
        "priority first, then more processes first",
        [
            (p("few-low"), PodStats(processes=10)),
            (p("many-high", priority=100), PodStats(processes=1000)),
            (p("many-low"), PodStats(processes=50)),
        ],
        ["many-low", "few-low", "many-high"],
    ),
    RankCase(
        "no requests step: a pod far over its memory request gains nothing",
        [
            (p("over-mem", mem=0), PodStats(working_set=10 * GI, processes=1)),
            (p("busy", mem=10 * GI), PodStats(working_set=MI, processes=2)),
        ],
        ["busy", "over-mem"],
    ),
    RankCase(
        "no stats first only within a priority",
        [
            (p("stats-low"), PodStats(processes=3)),
            (p("nostats-high", priority=5), PodStats()),
            (p("nostats-low"), PodStats()),
            (p("stats-high", priority=5), PodStats(processes=300)),
        ],
        ["nostats-low", "stats-low", "nostats-high", "stats-high"],
    ),
]


@pytest.mark.parametrize("case", PID_CASES, ids=lambda c: c.name)
def test_rank_pid(case: RankCase) -> None:
    ranked = rank_pid(case.pods)
    assert names(ranked) == case.order
    assert not any(r.exceeds for r in ranked)
    assert [r.excess for r in ranked] == [r.stats.processes for r in ranked]


# --- disk -------------------------------------------------------------------------------------

DISK_CASES = [
    RankCase(
        "bytes: above the ephemeral-storage request first",
        [
            (p("under", eph=10 * GI), PodStats(disk_usage=5 * GI)),
            (p("over", eph=GI), PodStats(disk_usage=2 * GI)),
            (p("besteffort"), PodStats(disk_usage=MI)),
        ],
        ["over", "besteffort", "under"],
    ),
    RankCase(
        "bytes: priority, then usage minus request",
        [
            (p("a-high", priority=10), PodStats(disk_usage=9 * GI)),
            (p("b-low-small"), PodStats(disk_usage=GI)),
            (p("c-low-big", eph=GI), PodStats(disk_usage=4 * GI)),
            (p("d-nostats", priority=99), PodStats(inodes=5)),
        ],
        ["d-nostats", "c-low-big", "b-low-small", "a-high"],
    ),
]


@pytest.mark.parametrize("case", DISK_CASES, ids=lambda c: c.name)
def test_rank_disk_bytes(case: RankCase) -> None:
    assert names(rank_disk(case.pods, inodes=False)) == case.order


def test_rank_disk_inodes_subtracts_ephemeral_request() -> None:
    pods = [
        (p("a-idle"), PodStats(disk_usage=9 * GI, inodes=0)),
        (p("b-requested", eph=500), PodStats(inodes=1000)),
        (p("c-plain"), PodStats(inodes=1000)),
        (p("d-big-request", eph=GI), PodStats(inodes=5000)),
        (p("e-high", priority=7), PodStats(inodes=10**6)),
    ]
    ranked = rank_disk(pods, inodes=True)
    assert [(r.pod.name, r.exceeds, r.excess) for r in ranked] == [
        ("c-plain", True, 1000),
        ("b-requested", True, 500),  # the ephemeral-storage request, subtracted from inodes
        ("d-big-request", True, 5000 - GI),  # any inode use "exceeds": inodes have no request
        ("e-high", True, 10**6),
        ("a-idle", False, 0),
    ]
    # by bytes the same pods rank differently: disk_usage None is "no stats"
    assert names(rank_disk(pods, inodes=False)) == [
        "b-requested",
        "c-plain",
        "d-big-request",
        "e-high",
        "a-idle",
    ]


# --- comparators ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((p("x"), PodStats()), (p("y"), PodStats(working_set=GI)), -1),  # no stats first
        ((p("x"), PodStats(working_set=GI)), (p("y"), PodStats()), 1),
        ((p("x", mem=GI), PodStats(working_set=GI)), (p("y"), PodStats(working_set=1)), 1),
        ((p("x", priority=1), PodStats(working_set=5)), (p("y"), PodStats(working_set=5)), 1),
        ((p("x"), PodStats(working_set=6)), (p("y"), PodStats(working_set=5)), -1),
        ((p("x"), PodStats(working_set=5)), (p("y"), PodStats(working_set=5)), -1),  # by name
        ((p("x"), PodStats(working_set=5)), (p("x"), PodStats(working_set=5)), 0),
    ],
)
def test_compare_memory(
    a: tuple[PodResources, PodStats], b: tuple[PodResources, PodStats], expected: int
) -> None:
    assert compare_memory(a, b) == expected
    assert compare_memory(b, a) == -expected


def test_compare_pid_and_disk_signs() -> None:
    busy = (p("busy"), PodStats(processes=9, disk_usage=1, inodes=0))
    idle = (p("idle"), PodStats(processes=1, disk_usage=5, inodes=3))
    assert compare_pid(busy, idle) == -1
    assert compare_disk(busy, idle, inodes=False) == 1
    assert compare_disk(busy, idle, inodes=True) == 1  # idle uses inodes, busy none


# --- requests from a v1 Pod -------------------------------------------------------------------


def pod(
    containers: list[dict[str, Any]] | None = None,
    init: list[dict[str, Any]] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": containers or [], **spec}
    if init is not None:
        body["initContainers"] = init
    return {"metadata": {"name": "web", "namespace": "shop", "uid": "u1"}, "spec": body}


def c(name: str, memory: Any = None, eph: Any = None, **extra: Any) -> dict[str, Any]:
    requests = {}
    if memory is not None:
        requests["memory"] = memory
    if eph is not None:
        requests["ephemeral-storage"] = eph
    return {"name": name, "resources": {"requests": requests}, **extra}


def sidecar(name: str, memory: str) -> dict[str, Any]:
    return c(name, memory, restartPolicy="Always")


@pytest.mark.parametrize(
    ("body", "memory", "eph"),
    [
        (pod([c("a", "100Mi"), c("b", "200Mi")]), 300 * MI, 0),
        (pod([c("a", "100Mi", "1Gi"), c("b", eph="2Gi")]), 100 * MI, 3 * GI),
        (pod([c("a", "300Mi")], [c("init", "500Mi")]), 500 * MI, 0),
        (pod([c("a", "300Mi")], [c("init", "200Mi")]), 300 * MI, 0),
        # a sidecar runs beside the app and every later init container: 300+50 vs 400+50
        (pod([c("a", "300Mi")], [sidecar("proxy", "50Mi"), c("init", "400Mi")]), 450 * MI, 0),
        # an init container that runs before the sidecar does not count it: 300+50 vs 400
        (pod([c("a", "300Mi")], [c("init", "400Mi"), sidecar("proxy", "50Mi")]), 400 * MI, 0),
        (
            pod(
                [c("a", "100Mi")], [sidecar("s1", "100Mi"), sidecar("s2", "100Mi"), c("i", "50Mi")]
            ),
            300 * MI,
            0,
        ),
        # overhead only on a non-zero total
        (pod([c("a", "300Mi")], overhead={"memory": "10Mi"}), 310 * MI, 0),
        (pod([c("a")], overhead={"memory": "10Mi", "ephemeral-storage": "1Gi"}), 0, 0),
        # pod-level resources replace the containers' (ephemeral storage is not among them)
        (
            pod([c("a", "300Mi", "1Gi")], resources={"requests": {"memory": "1Gi"}}),
            GI,
            0,
        ),
        (pod([c("a", "300Mi")], resources={"limits": {"cpu": "1"}}), 0, 0),
        (pod([c("a", "300Mi")], resources={"requests": {"ephemeral-storage": "1Gi"}}), 300 * MI, 0),
        (pod([c("a", "128m")]), 1, 0),  # 0.128 bytes, rounded up
        (pod([c("a", 1024)]), 1024, 0),  # an unquoted number in YAML
        (pod([{"name": "a"}]), 0, 0),
    ],
)
def test_pod_requests(body: dict[str, Any], memory: int, eph: int) -> None:
    r = pod_resources(body)
    assert (r.memory_request, r.ephemeral_request) == (memory, eph)
    assert (r.uid, r.namespace, r.name) == ("u1", "shop", "web")


@pytest.mark.parametrize(
    ("meta", "priority", "critical", "why"),
    [
        ({}, None, False, ""),
        ({}, 1000, False, ""),
        ({}, 2_000_000_000, True, "priority 2000000000"),
        ({}, 1_999_999_999, False, ""),
        ({"annotations": {"kubernetes.io/config.source": "file"}}, None, True, "static pod"),
        ({"annotations": {"kubernetes.io/config.source": "api"}}, None, False, ""),
        ({"annotations": {"kubernetes.io/config.mirror": "abc"}}, None, True, "mirror pod"),
    ],
)
def test_pod_priority_and_critical(
    meta: dict[str, Any], priority: int | None, critical: bool, why: str
) -> None:
    body = pod([c("a")])
    body["metadata"].update(meta)
    if priority is not None:
        body["spec"]["priority"] = priority
    r = pod_resources(body)
    assert r.priority == (priority or 0)
    assert r.critical is critical
    assert why in r.critical_reason and bool(r.critical_reason) is critical


def test_pod_owner() -> None:
    body = pod([c("a")])
    body["metadata"]["ownerReferences"] = [
        {"kind": "ReplicaSet", "name": "web-5d9c"},
        {"kind": "Other", "name": "x"},
    ]
    r = pod_resources(body)
    assert (r.owner_kind, r.owner_name) == ("ReplicaSet", "web-5d9c")
    assert pod_resources(pod([c("a")])).owner_kind == ""


def resized(body: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    return {**body, "status": status}


def allocated(name: str, memory: str | None = None, **more: str) -> dict[str, Any]:
    """A container status reporting its allocation (`allocatedResources`, 1.33+)."""
    alloc = {"memory": memory, **more} if memory is not None else dict(more)
    return {"name": name, "allocatedResources": alloc}


PENDING = {"type": "PodResizePending", "status": "True", "reason": "Deferred"}
IN_PROGRESS = {"type": "PodResizeInProgress", "status": "True"}


@pytest.mark.parametrize(
    ("body", "memory", "eph", "resize"),
    [
        # kubelet allocation (updatePodFromAllocation, getAllocatedPods): the eviction manager
        # ranks a container by its allocated requests, which the status reports
        (resized(pod([c("a", "1Gi")]), {"containerStatuses": [allocated("a", "512Mi")],
                                         "conditions": [PENDING]}),
         512 * MI, 0, "PodResizePending: ranked by the allocated requests (a: memory 512Mi "
                      "allocated, 1Gi in the spec)"),
        # a resize being applied: the allocation is already the new figure
        (resized(pod([c("a", "2Gi")]), {"containerStatuses": [allocated("a", "2Gi")],
                                         "conditions": [IN_PROGRESS]}),
         2 * GI, 0, "PodResizeInProgress: ranked by the allocated requests"),
        # allocation = spec and no resize condition: nothing to mark
        (resized(pod([c("a", "1Gi", "5Gi")]),
                 {"containerStatuses": [allocated("a", "1Gi", **{"ephemeral-storage": "5Gi"})]}),
         GI, 5 * GI, ""),
        # the allocation replaces every request, also those it does not name
        (resized(pod([c("a", "1Gi", "5Gi")]), {"containerStatuses": [allocated("a", "1Gi")]}),
         GI, 0, "in-place resize not yet applied: ranked by the allocated requests (a: "
                "ephemeral-storage 0 allocated, 5Gi in the spec)"),
        # init containers (a sidecar) and containers without a reported allocation
        (resized(pod([c("a", "300Mi"), c("b", "100Mi")], [sidecar("proxy", "200Mi")]),
                 {"initContainerStatuses": [allocated("proxy", "50Mi")],
                  "containerStatuses": [{"name": "a"}]}),
         450 * MI, 0, "in-place resize not yet applied: ranked by the allocated requests "
                      "(proxy: memory 50Mi allocated, 200Mi in the spec)"),
        # a condition False, or none: the pod is not marked; the deprecated status.resize is read
        (resized(pod([c("a", "1Gi")]), {"conditions": [{**PENDING, "status": "False"}]}),
         GI, 0, ""),
        (resized(pod([c("a", "1Gi")]), {"resize": "Infeasible"}),
         GI, 0, "resize Infeasible: ranked by the allocated requests"),
        # a status of the same name in the other list does not count
        (resized(pod([c("a", "1Gi")]), {"initContainerStatuses": [allocated("a", "1Mi")]}),
         GI, 0, ""),
    ],
)  # fmt: skip
def test_pod_requests_follow_the_allocation_while_a_resize_is_pending(
    body: dict[str, Any], memory: int, eph: int, resize: str
) -> None:
    r = pod_resources(body)
    assert (r.memory_request, r.ephemeral_request) == (memory, eph)
    assert r.resize.startswith(resize) and bool(r.resize) is bool(resize), r.resize
    if resize.endswith(")"):
        assert r.resize == resize


@pytest.mark.parametrize(
    ("status", "text"),
    [
        ({"containerStatuses": {"a": 1}}, "status.containerStatuses must be a list"),
        ({"containerStatuses": [{"name": "a", "allocatedResources": ["1Gi"]}]},
         "status.containerStatuses[a].allocatedResources must be a mapping"),
        ({"containerStatuses": [allocated("a", "lots")]}, "allocatedResources.memory 'lots'"),
        ({"conditions": "PodResizePending"}, "status.conditions must be a list"),
    ],
)  # fmt: skip
def test_a_status_of_the_wrong_shape_is_named(status: dict[str, Any], text: str) -> None:
    with pytest.raises(BadInput) as err:
        pod_resources(resized(pod([c("a", "1Gi")]), status))
    assert text in str(err.value) and "pod shop/web" in str(err.value)


@pytest.mark.parametrize(
    ("body", "texts"),
    [
        (pod([c("app", "lots")]), ["spec.containers[app].resources.requests.memory", "'lots'"]),
        (
            pod([c("app")], [c("setup", eph="1Gb")]),
            ["spec.initContainers[setup].resources.requests.ephemeral-storage", "'1Gb'"],
        ),
        (pod([c("a", "1Gi")], overhead={"memory": "x1"}), ["spec.overhead.memory", "'x1'"]),
        (pod([c("a")], resources={"requests": {"memory": "?"}}), ["spec.resources", "'?'"]),
        (pod([c("a")], priority="high"), ["spec.priority", "'high'"]),
        (pod([c("a", True)]), ["requests.memory", "True"]),
    ],
)
def test_pod_requests_rejected(body: dict[str, Any], texts: list[str]) -> None:
    with pytest.raises(BadInput) as err:
        pod_resources(body)
    msg = str(err.value)
    assert "\n" not in msg and "pod shop/web" in msg
    for text in texts:
        assert text in msg


# --- property: a permutation, in the comparator's order ---------------------------------------

entries = st.lists(
    st.tuples(
        st.integers(-3, 3),  # priority
        st.integers(0, 5),  # memory request (MiB)
        st.one_of(st.none(), st.integers(0, 8)),  # working set (MiB)
        st.sampled_from(["a", "b"]),  # namespace
        st.sampled_from(["x", "y", "z"]),  # name
    ),
    max_size=12,
)


def build(raw: list[tuple[int, int, int | None, str, str]]) -> list[tuple[PodResources, PodStats]]:
    return [
        (
            PodResources(f"uid-{i}", ns, name, prio, req * MI),
            PodStats(working_set=None if ws is None else ws * MI),
        )
        for i, (prio, req, ws, ns, name) in enumerate(raw)
    ]


def reference_key(e: tuple[PodResources, PodStats]) -> tuple[Any, ...]:
    """The memory order written independently as a sort key."""
    pod_, stats = e
    ws = stats.working_set
    group = 0 if ws is None else (1 if ws > pod_.memory_request else 2)
    excess = 0 if ws is None else -(ws - pod_.memory_request)
    return (group, pod_.priority, excess, pod_.namespace, pod_.name, pod_.uid)


@settings(max_examples=300, deadline=None)
@given(entries)
def test_memory_ranking_is_a_consistent_permutation(
    raw: list[tuple[int, int, int | None, str, str]],
) -> None:
    pods = build(raw)
    ranked = rank_memory(pods)
    assert sorted(r.pod.uid for r in ranked) == sorted(e[0].uid for e in pods)
    pairs = [(r.pod, r.stats) for r in ranked]
    for i in range(len(pairs)):
        for j in range(i + 1, len(pairs)):
            assert compare_memory(pairs[i], pairs[j]) <= 0
    assert pairs == sorted(pods, key=reference_key)


@settings(max_examples=100, deadline=None)
@given(entries)
def test_pid_and_disk_rankings_are_permutations(
    raw: list[tuple[int, int, int | None, str, str]],
) -> None:
    pods = [
        (pod_, PodStats(processes=s.working_set, disk_usage=s.working_set, inodes=s.working_set))
        for pod_, s in build(raw)
    ]
    rankers: list[Callable[[Sequence[tuple[PodResources, PodStats]]], list[Ranked]]] = [
        rank_pid,
        lambda ps: rank_disk(ps, inodes=False),
        lambda ps: rank_disk(ps, inodes=True),
    ]
    cmps: list[Callable[[Any, Any], int]] = [
        compare_pid,
        lambda a, b: compare_disk(a, b, inodes=False),
        lambda a, b: compare_disk(a, b, inodes=True),
    ]
    for rank, cmp in zip(rankers, cmps, strict=True):
        ranked = [(r.pod, r.stats) for r in rank(pods)]
        assert sorted(e[0].uid for e in ranked) == sorted(e[0].uid for e in pods)
        assert ranked == sorted(pods, key=cmp_to_key(cmp))
        for i in range(len(ranked) - 1):
            assert cmp(ranked[i], ranked[i + 1]) <= 0


def lim(name: str, requests: dict[str, str], limits: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "resources": {"requests": requests, "limits": limits}}


CPU_MEM = {"cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("body", "want"),
    [
        # pkg/apis/core/v1/helper/qos GetPodQOS: the status's class when the pod has one
        ({**pod([c("a")]), "status": {"qosClass": "Guaranteed"}}, "Guaranteed"),
        # ComputePodQOS over the containers
        (pod([c("a")]), "BestEffort"),
        (pod([lim("a", CPU_MEM, CPU_MEM)]), "Guaranteed"),
        (pod([lim("a", CPU_MEM, CPU_MEM), c("b")]), "Burstable"),  # b has no limits
        (pod([lim("a", {"cpu": "1", "memory": "512Mi"}, CPU_MEM)]), "Burstable"),
        (pod([lim("a", {"cpu": "0"}, {"cpu": "0"})]), "BestEffort"),  # zero is not set
        (pod([lim("a", CPU_MEM, CPU_MEM)], [lim("i", CPU_MEM, CPU_MEM)]), "Guaranteed"),
        (pod([lim("a", CPU_MEM, CPU_MEM)], [c("i", "10Mi")]), "Burstable"),
        # only cpu and memory count
        (pod([lim("a", {"ephemeral-storage": "1Gi"}, {"ephemeral-storage": "1Gi"})]),
         "BestEffort"),
        # pod-level resources (1.36): when the section is present it decides alone
        (pod([c("a", "1Gi")], resources={"requests": CPU_MEM, "limits": CPU_MEM}), "Guaranteed"),
        (pod([c("a", "1Gi")], resources={"requests": CPU_MEM}), "Burstable"),
        (pod([lim("a", CPU_MEM, CPU_MEM)], resources={"limits": {"memory": "1Gi"}}),
         "Burstable"),
        # present but empty: from 1.36 the containers decide (kubernetes/kubernetes#137150)
        (pod([lim("a", CPU_MEM, CPU_MEM)], resources={}), "Guaranteed"),
        (pod([c("a", "1Gi")], resources=None), "Burstable"),  # absent (null): the containers
    ],
)  # fmt: skip
def test_qos_class(body: dict[str, Any], want: str) -> None:
    assert qos_class(body) == want
    assert pod_resources(body).qos == want


MEM_100 = {"memory": "100Mi"}


@pytest.mark.parametrize(
    ("resources", "version", "want"),
    [
        # kubernetes/kubernetes#137150 (the fix of #135082, feature gate
        # PodLevelResourcesFixKubeletQOSClass, beta and on from 1.36): empty pod-level
        # resources no longer decide the QoS class; the containers do
        ({}, (1, 36), "Burstable"),
        ({"requests": {}}, (1, 36), "Burstable"),
        ({"limits": {}}, (1, 36), "Burstable"),
        ({"requests": {}, "limits": {}}, (1, 37), "Burstable"),
        ({}, None, "Burstable"),  # no version known: the newest kubelet's rule
        # before 1.36 a present section decided even empty: nothing in it, BestEffort
        ({}, (1, 35), "BestEffort"),
        ({"requests": {}}, (1, 32), "BestEffort"),
        ({"limits": {}}, (1, 35), "BestEffort"),
        # a section naming a resource decides on every version
        ({"requests": CPU_MEM, "limits": CPU_MEM}, (1, 36), "Guaranteed"),
        ({"requests": CPU_MEM, "limits": CPU_MEM}, (1, 35), "Guaranteed"),
        ({"requests": {"cpu": "1"}}, (1, 36), "Burstable"),
    ],
)
def test_qos_class_empty_pod_level_resources_by_kubelet_version(
    resources: dict[str, Any], version: tuple[int, int] | None, want: str
) -> None:
    body = pod([lim("a", MEM_100, MEM_100)], resources=resources)
    assert qos_class(body, version=version) == want
    assert pod_resources(body, version=version).qos == want


def test_qos_class_empty_pod_level_resources_guaranteed_containers() -> None:
    body = pod([lim("a", CPU_MEM, CPU_MEM)], resources={"limits": {}})
    assert qos_class(body, version=(1, 36)) == "Guaranteed"
    assert qos_class(body, version=(1, 35)) == "BestEffort"


POD_LEVEL_100 = {"requests": MEM_100}


@pytest.mark.parametrize(
    ("status", "memory", "resize"),
    [
        # kubelet allocation (updatePodFromAllocation): the pod-level resources are replaced
        # by the pod-level allocation, which status.allocatedResources reports
        ({"allocatedResources": {"memory": "1Gi"}, "conditions": [IN_PROGRESS]}, GI,
         "PodResizeInProgress: ranked by the allocated requests (pod: memory 1Gi allocated, "
         "100Mi in the spec)"),
        ({"allocatedResources": {"memory": "1Gi"}}, GI,
         "in-place resize not yet applied: ranked by the allocated requests (pod: memory 1Gi "
         "allocated, 100Mi in the spec)"),
        # allocation = spec, no resize: nothing to mark
        ({"allocatedResources": {"memory": "100Mi"}}, 100 * MI, ""),
        ({"conditions": [PENDING]}, 100 * MI, "PodResizePending: ranked by the allocated"),
    ],
)  # fmt: skip
def test_pod_level_requests_follow_the_pod_level_allocation(
    status: dict[str, Any], memory: int, resize: str
) -> None:
    body = resized(pod([c("a", "50Mi")], resources=POD_LEVEL_100), status)
    r = pod_resources(body)
    assert r.memory_request == memory
    assert r.resize.startswith(resize) and bool(r.resize) is bool(resize), r.resize
    if resize.endswith(")"):
        assert r.resize == resize


def test_pod_level_allocation_without_pod_level_resources_is_not_read() -> None:
    body = resized(pod([c("a", "50Mi")]), {"allocatedResources": {"memory": "1Gi"}})
    assert (pod_resources(body).memory_request, pod_resources(body).resize) == (50 * MI, "")


def test_pod_level_allocation_of_the_wrong_shape_is_named() -> None:
    body = resized(pod([c("a")], resources=POD_LEVEL_100), {"allocatedResources": ["1Gi"]})
    with pytest.raises(BadInput, match=r"status\.allocatedResources must be a mapping"):
        pod_resources(body)
