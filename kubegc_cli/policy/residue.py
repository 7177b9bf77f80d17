"""Runtime-side residue: what the CRI runtime holds that nothing needs any more.

Pure functions over what the runtime listed (no I/O), each returning findings that
`kubegc residue clean` never acts on — other commands own these objects:

- dead sandboxes and containers (`DEAD_SANDBOX`, `DEAD_CONTAINER`): exactly what
  `kubegc gc all` would remove, planned by the same planners (`plan_containers`, then
  `plan_sandboxes` on the containers that stage leaves) with the kubelet's default policy;
- oversized runtime lists (`OVERSIZED_LIST`): the encoded size of the `ListPodSandbox` and
  `ListContainers` replies against gRPC's default 4 MiB receive limit, from 50% of it;
- unused images (`UNUSED_IMAGE`): images no container references (exited ones too), other
  than pinned ones and the sandbox image; `kubegc gc images` removes them by the kubelet's
  image GC rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kubegc_cli.core.model import Container, Image, Sandbox
from kubegc_cli.core.pods import PodInventory
from kubegc_cli.core.residue import (
    DEAD_CONTAINER,
    DEAD_SANDBOX,
    NOTHING,
    OVERSIZED_LIST,
    UNUSED_IMAGE,
    Finding,
)
from kubegc_cli.core.units import format_bytes
from kubegc_cli.policy.containers import ContainerGCPolicy, plan_containers
from kubegc_cli.policy.images import images_in_use, unpullable_reason
from kubegc_cli.policy.sandboxes import plan_sandboxes

MIB = 1024 * 1024
#: gRPC's default receive limit: crictl, kubelets before 1.11 and most CRI clients enforce it.
GRPC_DEFAULT_LIMIT = 4 * MIB
#: The kubelet's own CRI client limit (`maxMsgSize`, since Kubernetes 1.11).
KUBELET_LIMIT = 16 * MIB
#: A list reply at or above this fraction of `GRPC_DEFAULT_LIMIT` is a finding.
WARN_FRACTION = 0.5
#: What a client gets past its limit (gRPC status RESOURCE_EXHAUSTED).
TOO_LARGE = "received message larger than max"

GC_ALL = "removed by `kubegc gc all`"
GC_IMAGES = "removed by `kubegc gc images` (the kubelet's image GC rules)"
LIST_NOT_CLEANABLE = "a reply size, not an object; it shrinks as dead sandboxes and containers go"


def dead_objects(
    containers: Iterable[Container],
    sandboxes: Iterable[Sandbox],
    pods: PodInventory,
    now: int,
    *,
    command: str = "kubegc gc all",
    layers: Mapping[str, tuple[int | None, int | None]] | None = None,
) -> list[Finding]:
    """The containers and sandboxes `kubegc gc all` (default policy) would remove.

    `containers` should carry their status (log path and bytes, from `observe_node` with
    `statuses="dead"`); `now` is nanoseconds since the epoch. Without a pod source no pod is
    deleted, as in `gc all`. Each finding is one object, not safe (`residue clean` leaves them
    to `command`, its `manual` action), with the planner's rule and reason as evidence;
    `bytes` is what removing a container frees on disk, as `gc containers` expects it
    (`expected_bytes`, `core.sizes.container_bytes`: its logs' blocks and its writable layer
    from `layers`, CRI `ListContainerStats`; None: unknown, counted 0), None for sandboxes,
    whose disk use the runtime does not report.
    """
    containers = list(containers)
    pc = plan_containers(containers, ContainerGCPolicy(), pods, now, layers=layers)
    going = {a.id for a in pc.actions}
    left = [c for c in containers if c.id not in going]
    ps = plan_sandboxes(sandboxes, left, pods, now)
    out: list[Finding] = []
    for a in pc.actions:
        c = a.container
        out.append(
            Finding(
                type=DEAD_CONTAINER,
                target=c.id,
                evidence=f"{c.state.value} container {c.pod_namespace}/{c.pod_name} "
                f"{c.container_name}#{c.attempt}: {a.reason} ({a.rule})",
                bytes=a.planned_bytes,
                safe=False,
                action=NOTHING,
                manual=command,
                unsafe_reason=GC_ALL,
                details={
                    "rule": a.rule,
                    "state": c.state.value,
                    "pod_uid": c.pod_uid,
                    "pod_namespace": c.pod_namespace,
                    "pod_name": c.pod_name,
                    "name": c.container_name,
                    "attempt": c.attempt,
                    "pod_sandbox_id": c.pod_sandbox_id,
                },
            )
        )
    for sa in ps.actions:
        s = sa.sandbox
        pod = f"{s.namespace}/{s.name}" if s.name else f"(uid {s.uid})"
        out.append(
            Finding(
                type=DEAD_SANDBOX,
                target=s.id,
                evidence=f"{s.state.value} sandbox of {pod}#{s.attempt}: {sa.reason} ({sa.rule})",
                bytes=None,
                safe=False,
                action=NOTHING,
                manual=command,
                unsafe_reason=GC_ALL,
                details={
                    "rule": sa.rule,
                    "state": s.state.value,
                    "pod_uid": s.uid,
                    "pod_namespace": s.namespace,
                    "pod_name": s.name,
                    "attempt": s.attempt,
                },
            )
        )
    return out


def oversized_lists(
    sizes: Mapping[str, tuple[int, int]],
    *,
    limit: int = GRPC_DEFAULT_LIMIT,
    fraction: float = WARN_FRACTION,
) -> list[Finding]:
    """Runtime list replies at or above `fraction` of `limit`.

    `sizes` maps the call (`ListPodSandbox`, `ListContainers`) to (encoded reply bytes,
    items in it). `limit` is in bytes. A finding names the call (`target`), both sizes and
    what happens past the limit (the client fails with "received message larger than max"
    and, for the kubelet, its pod sync and garbage collection stop). Never safe; `bytes` is
    None (the reply is not disk); `details` has `encoded_bytes`, `items`, `limit_bytes`,
    `kubelet_limit_bytes` and `percent` (of `limit`, one decimal).
    """
    out: list[Finding] = []
    for call, (size, items) in sizes.items():
        if size < limit * fraction:
            continue
        pct = round(size * 100 / limit, 1)
        over = "over" if size > limit else f"{pct}% of"
        evidence = (
            f"the {call} reply is {size} bytes ({format_bytes(size)}, {items} item(s)): {over} "
            f"gRPC's default receive limit of {limit} bytes; clients with that limit (crictl, "
            f'kubelets before 1.11) fail past it with "{TOO_LARGE}", and the kubelet itself '
            f"(limit {KUBELET_LIMIT} bytes) does past {KUBELET_LIMIT}: pods stop syncing and "
            "garbage collection stops"
        )
        out.append(
            Finding(
                type=OVERSIZED_LIST,
                target=call,
                evidence=evidence,
                bytes=None,
                safe=False,
                action=NOTHING,
                manual="remove dead sandboxes and containers: kubegc gc all",
                unsafe_reason=LIST_NOT_CLEANABLE,
                details={
                    "encoded_bytes": size,
                    "items": items,
                    "limit_bytes": limit,
                    "kubelet_limit_bytes": KUBELET_LIMIT,
                    "percent": pct,
                },
            )
        )
    return out


def unused_images(
    images: Iterable[Image],
    containers: Iterable[Container],
    protected: Iterable[str] = (),
) -> list[Finding]:
    """Images no container the runtime has (exited ones too) references, other than pinned
    ones and `protected` references (the sandbox image: an ID, tag or digest).

    `bytes` is the runtime's image size (shared layers make a sum overstate what removing
    them frees). Never safe: `kubegc gc images` removes them by the kubelet's rules; one that
    cannot be pulled again (`unpullable_reason`) says so, and its manual action carries
    `--allow-unpullable`.
    """
    in_use = images_in_use(containers)
    keep = set(protected)
    out: list[Finding] = []
    for img in images:
        names = (img.id, *img.repo_tags, *img.repo_digests)
        if img.id in in_use or img.pinned or keep & set(names):
            continue
        tags = ", ".join(img.repo_tags) or "untagged"
        unpullable = unpullable_reason(img)
        evidence = f"no container uses this image ({tags})"
        manual = "kubegc gc images --prune-unused"
        if unpullable:
            evidence += f"; it {unpullable}"
            manual += " --allow-unpullable"
        out.append(
            Finding(
                type=UNUSED_IMAGE,
                target=img.id,
                evidence=evidence,
                bytes=img.size,
                safe=False,
                action=NOTHING,
                manual=manual,
                unsafe_reason=GC_IMAGES,
                details={
                    "repo_tags": list(img.repo_tags),
                    "repo_digests": list(img.repo_digests),
                },
            )
        )
    return out
