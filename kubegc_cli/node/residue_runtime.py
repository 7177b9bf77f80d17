"""What `residue scan` and `residue clean` read from the CRI runtime: `observe_runtime` reads
it into `RuntimeFacts` (lists, reply sizes, dead containers' statuses, images, the sandboxes'
network namespaces), and `with_runtime` adds what the runtime knows to a `ScanContext`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.model import (
    LABEL_POD_UID,
    Container,
    ContainerState,
    Image,
    Sandbox,
    SandboxState,
)
from kubegc_cli.core.residue import (
    DEAD_CONTAINER,
    DEAD_SANDBOX,
    NETNS,
    UNUSED_IMAGE,
)
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.host.logrotation import log_owners
from kubegc_cli.node.host.logs import LogRoots, foreign_log, log_bytes, on_host
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.scan import ScanContext
from kubegc_cli.node.sandboximages import runtime_sandbox_images

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient


@dataclass
class RuntimeFacts:
    """What the runtime said: its lists (with dead containers' statuses when dead objects are
    scanned), reply sizes by call (encoded bytes, items), images and sandbox image (when
    images are scanned; `images_unknown` says why no image was listed when the sandbox image
    could not be read; `protected_images` the IDs of the images the runtimes keep for
    themselves, `sandboximages.runtime_sandbox_images`), the sandboxes' network namespace
    paths (both `/run` and `/var/run` spellings; only asked when a `cni-*` namespace exists
    on the host) and how many sandboxes did not say; `layers`, the writable layers (CRI
    `ListContainerStats`, ID → (bytes, inodes)) when dead containers are scanned (None:
    not read)."""

    endpoint: str
    containers: list[Container] = field(default_factory=list)
    sandboxes: list[Sandbox] = field(default_factory=list)
    sizes: dict[str, tuple[int, int]] = field(default_factory=dict)
    images: list[Image] = field(default_factory=list)
    sandbox_image: str | None = None
    protected_images: frozenset[str] = frozenset()
    images_unknown: str = ""
    netns: frozenset[str] = frozenset()
    netns_unknown: int = 0
    layers: dict[str, tuple[int | None, int | None]] | None = None


def _netns_spellings(path: str) -> set[str]:
    """`path` and its twin under the `/var/run` → `/run` symlink."""
    path = os.path.normpath(path)
    out = {path}
    if path.startswith("/var/run/"):
        out.add(path.removeprefix("/var"))
    elif path.startswith("/run/"):
        out.add("/var" + path)
    return out


def _netns_on_host(host_root: Path, dirs: Iterable[str]) -> bool:
    """Whether any `cni-*` entry exists in the host's netns directories: only then are the
    sandboxes' network namespaces asked for (one verbose status call per sandbox)."""
    # deferred: tests/unit/test_evict_check_cache.py::test_a_second_run_uses_the_cache_and_never_imports_grpc  # noqa: E501
    from kubegc_cli.node.host.residue import NETNS_PREFIX

    for d in dirs:
        try:
            with os.scandir(on_host(host_root, d)) as it:
                if any(e.name.startswith(NETNS_PREFIX) for e in it):
                    return True
        except OSError:
            continue
    return False


def observe_runtime(
    client: CriClient,
    s: Settings,
    types: Iterable[str],
    pod_logs_dir: str,
    mounts: MountTable,
    warn: Callable[[str], None],
) -> RuntimeFacts:
    """Read what the scanners of `types` need from the runtime. Every list is read in full
    (the IDs it yields decide safety); statuses, images and netns paths only when a chosen
    type needs them; a runtime config file that cannot be read is a warning (`warn`). Raises
    `RuntimeUnavailable` when any call fails."""
    wanted = set(types)
    client.check()
    containers, c_size = client.list_containers_sized()
    sandboxes, s_size = client.list_sandboxes_sized()
    facts = RuntimeFacts(
        client.endpoint.display,
        containers,
        sandboxes,
        {
            "ListPodSandbox": (s_size, len(sandboxes)),
            "ListContainers": (c_size, len(containers)),
        },
    )
    if wanted & {DEAD_CONTAINER, DEAD_SANDBOX}:
        dead = [c.id for c in containers if c.state is not ContainerState.RUNNING]
        if dead:  # a dead container frees its writable layer too (`gc containers` counts it)
            try:
                facts.layers = client.writable_layers()
            except RuntimeUnavailable as exc:
                warn(f"writable layers unknown ({exc}): dead containers' bytes count their logs")
        roots = LogRoots(s.host_root, pod_logs_dir)
        found = dict(client.container_statuses(dead))
        facts.containers = []
        for c in containers:
            if c.id not in found:
                facts.containers.append(c)
                continue
            st = found[c.id]
            if st is None:
                continue  # gone since the list
            own = not foreign_log(pod_logs_dir, c, st.log_path)
            size = log_bytes(roots, st.log_path, mounts) if own or not st.log_path else 0
            facts.containers.append(
                replace(c, state=st.state, finished_at=st.finished_at, log_path=st.log_path,
                        exit_code=st.exit_code, log_bytes=size)
            )  # fmt: skip
    if UNUSED_IMAGE in wanted:
        kept = runtime_sandbox_images(client, s.host_root, s.runtime_config, warn)
        if kept.status_error:  # no image can be called unused: none listed
            facts.images_unknown = kept.status_error
        else:
            facts.sandbox_image = kept.status_image
            facts.images = client.list_images()
            facts.protected_images = frozenset(kept.protected_ids(facts.images))
    if NETNS in wanted and _netns_on_host(s.host_root, ScanContext(s.host_root).netns_dirs):
        paths: set[str] = set()
        for _sid, path in client.sandbox_netns([sb.id for sb in sandboxes]):
            if path is None:
                facts.netns_unknown += 1
            elif path:
                paths |= _netns_spellings(path)
        facts.netns = frozenset(paths)
    return facts


def with_runtime(ctx: ScanContext, facts: RuntimeFacts) -> ScanContext:
    """`ctx` with what the runtime knows: every sandbox and container ID (and which
    sandboxes are not READY), the pod UIDs of every sandbox (metadata and label) and
    container, the sandboxes' netns paths, and whose live log each container's is
    (`host.logrotation.log_owners`, under `ctx.pod_logs_dir`)."""
    uids = {sb.uid for sb in facts.sandboxes}
    uids |= {sb.labels.get(LABEL_POD_UID, "") for sb in facts.sandboxes}
    uids |= {c.pod_uid for c in facts.containers}
    uids.discard("")
    owners, unsure = log_owners(ctx.pod_logs_dir, facts.containers)
    return replace(
        ctx,
        log_owners=owners,
        log_unsure=unsure,
        runtime_known=True,
        runtime_pod_uids=frozenset(uids),
        sandbox_ids=frozenset(sb.id for sb in facts.sandboxes),
        notready_sandbox_ids=frozenset(
            sb.id for sb in facts.sandboxes if sb.state is not SandboxState.READY
        ),
        container_ids=frozenset(c.id for c in facts.containers),
        sandbox_netns=facts.netns,
    )
