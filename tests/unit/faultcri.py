"""A CRI v1 server for tests that serves a made-up inventory and misbehaves on request.

It speaks kubegc's own protocol stubs (`kubegc_cli.node.cri.v1`, wire-compatible with
`runtime.v1`) on a unix socket, so kubegc's real client, observer and executors talk to it
exactly as to containerd. What it serves is an `Inventory` of CRI messages — built by hand,
or by `synthetic_inventory` for a node of any size — and every call is recorded in `calls`.

Faults, all settable while the server runs:

- `die_after[method] = n`: once the n-th call of `method` has been answered, the server
  stops (as a runtime that crashes): calls in flight are cut, later ones find nobody.
- `hang`: methods that never answer (the client's deadline is what ends the call).
- `errors[(method, object_id)] = (grpc.StatusCode, details)`: answer that call with an error
  (`object_id` "*" for every object); e.g. NotFound for one `RemoveContainer`.
- `delay[method] = seconds`: answer slowly.
- `gate`: an event that `RemoveContainer` calls past the first `gate_after` wait on;
  `at_gate` is set while one waits there (so a test knows removals are under way).

Run from a shell, it serves a synthetic node until interrupted::

    python -m tests.unit.faultcri /tmp/cri.sock --containers 100000 --sandboxes 20000 \\
        --images 5000 [--pods 10000]

It prints `ready <ListContainers bytes> <ListPodSandbox bytes>` once it serves. Its containers
are created up to 2027-01-15 (give kubegc `--now 2027-01-15T08:00:00Z`), and it reports its
image filesystem at /var/lib/containerd: for `gc images` give `--host-root` a directory with
`var/lib/containerd` in it (kubegc measures that filesystem with statvfs).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, NoReturn, Self

import grpc

from kubegc_cli.node.cri.v1 import api_pb2, api_pb2_grpc

NOW_NS = 1_800_000_000 * 1_000_000_000  # the same "now" as tests/unit/factories.py
S = 1_000_000_000
SANDBOX_IMAGE = "registry.k8s.io/pause:3.9"
LABEL_POD_NAME = "io.kubernetes.pod.name"
LABEL_POD_NAMESPACE = "io.kubernetes.pod.namespace"
LABEL_POD_UID = "io.kubernetes.pod.uid"
LABEL_CONTAINER_NAME = "io.kubernetes.container.name"

# The generated stubs are untyped; reach them through Any (strict mypy).
_PB: Any = api_pb2
_STUBS: Any = api_pb2_grpc


@dataclass
class Inventory:
    """What the fake runtime has: CRI messages by ID. `log_paths` gives a container's
    `ContainerStatus.log_path` ("" when absent); `finished_at` its finish time (ns);
    `status_info` replaces the verbose `Status` info (default: a `config` naming the sandbox
    image); `sandbox_info` is a sandbox's verbose `PodSandboxStatus` info, by ID; `layers`
    the writable layer bytes `ListContainerStats` reports, by container ID (a container not
    in it is not reported, as by a runtime that has no stats for it)."""

    containers: dict[str, Any] = field(default_factory=dict)
    sandboxes: dict[str, Any] = field(default_factory=dict)
    images: dict[str, Any] = field(default_factory=dict)
    log_paths: dict[str, str] = field(default_factory=dict)
    finished_at: dict[str, int] = field(default_factory=dict)
    image_fs_mountpoint: str = "/var/lib/containerd"
    status_info: dict[str, str] | None = None
    sandbox_info: dict[str, dict[str, str]] = field(default_factory=dict)
    layers: dict[str, int] = field(default_factory=dict)


def container_pb(
    cid: str,
    *,
    pod_uid: str,
    pod_name: str,
    namespace: str = "default",
    name: str = "app",
    attempt: int = 0,
    state: str = "EXITED",
    created_at: int = NOW_NS - 600 * S,
    sandbox_id: str = "",
    image_id: str = "sha256:" + "1" * 64,
) -> Any:
    """A kubelet-labelled CRI `Container` message (`state` CREATED, RUNNING, EXITED, UNKNOWN)."""
    return _PB.Container(
        id=cid,
        pod_sandbox_id=sandbox_id or f"sb-{pod_uid}",
        metadata=_PB.ContainerMetadata(name=name, attempt=attempt),
        image=_PB.ImageSpec(image="docker.io/library/busybox:1"),
        image_ref=image_id,
        image_id=image_id,
        state=getattr(_PB, f"CONTAINER_{state}"),
        created_at=created_at,
        labels={
            LABEL_POD_NAME: pod_name,
            LABEL_POD_NAMESPACE: namespace,
            LABEL_POD_UID: pod_uid,
            LABEL_CONTAINER_NAME: name,
        },
        annotations={"io.kubernetes.container.restartCount": str(attempt)},
    )


def sandbox_pb(
    sid: str,
    *,
    pod_uid: str,
    pod_name: str,
    namespace: str = "default",
    attempt: int = 0,
    ready: bool = True,
    created_at: int = NOW_NS - 900 * S,
) -> Any:
    """A kubelet-labelled CRI `PodSandbox` message, with the annotations a kubelet sets."""
    return _PB.PodSandbox(
        id=sid,
        metadata=_PB.PodSandboxMetadata(
            name=pod_name, uid=pod_uid, namespace=namespace, attempt=attempt
        ),
        state=_PB.SANDBOX_READY if ready else _PB.SANDBOX_NOTREADY,
        created_at=created_at,
        labels={
            LABEL_POD_NAME: pod_name,
            LABEL_POD_NAMESPACE: namespace,
            LABEL_POD_UID: pod_uid,
            "io.kubernetes.container.name": "POD",
            "app.kubernetes.io/name": pod_name.rsplit("-", 2)[0],
            "pod-template-hash": "7d4b9c6f8d",
        },
        annotations={
            "kubernetes.io/config.seen": "2026-11-29T22:50:00.123456789Z",
            "kubernetes.io/config.source": "api",
            "kubectl.kubernetes.io/default-container": "app",
        },
        runtime_handler="",
    )


def image_pb(iid: str, tag: str, size: int, *, pinned: bool = False) -> Any:
    """A CRI `Image` message."""
    return _PB.Image(id=iid, repo_tags=[tag], repo_digests=[], size=size, pinned=pinned)


def synthetic_inventory(
    containers: int,
    sandboxes: int,
    images: int,
    *,
    pods: int | None = None,
    seed: int = 1,
    now: int = NOW_NS,
) -> Inventory:
    """A busy node: `pods` pods (default: one per sandbox) in 40 namespaces, each with a
    newest sandbox (70% READY); the sandboxes beyond one per pod are older NOTREADY attempts
    of the same pods (leaked, as on nodes whose lists outgrow 4 MiB). `containers` containers
    spread over the pods — per pod, containers of up to 3 names with several attempts, the
    newest of a name RUNNING in a READY pod, the rest EXITED — point at their pod's newest
    sandbox and use `images` images (the first 5% pinned), each with a writable layer of
    4 KiB to 1 MiB (`Inventory.layers`). Deterministic for a given `seed`."""
    rng = random.Random(seed)
    inv = Inventory()
    image_ids = [f"sha256:{rng.getrandbits(256):064x}" for _ in range(max(images, 1))]
    for i, iid in enumerate(image_ids[:images]):
        tag = f"registry.example/team-{i % 40:02d}/app-{i}:v{i % 7}"
        inv.images[iid] = image_pb(iid, tag, 10_000_000 + i * 1000, pinned=i < images // 20)
    n_pods = max(1, min(sandboxes, pods if pods is not None else sandboxes))
    node_pods: list[tuple[str, str, str, bool]] = []
    sandbox_of: dict[str, str] = {}
    for p in range(n_pods):
        uid = f"{rng.getrandbits(128):032x}"
        uid = f"{uid[:8]}-{uid[8:12]}-{uid[12:16]}-{uid[16:20]}-{uid[20:]}"
        ns = f"team-{p % 40:02d}"
        name = f"app-{p % 997}-{rng.getrandbits(32):08x}-{rng.getrandbits(20):05x}"
        ready = rng.random() < 0.7
        node_pods.append((uid, ns, name, ready))
        if p < sandboxes:
            sid = sandbox_of[uid] = f"{rng.getrandbits(256):064x}"
            inv.sandboxes[sid] = sandbox_pb(
                sid, pod_uid=uid, pod_name=name, namespace=ns, ready=ready, attempt=9,
                created_at=now - rng.randint(3600, 86400) * S,
            )  # fmt: skip
    for k in range(sandboxes - len(inv.sandboxes)):
        uid, ns, name, _ = node_pods[k % n_pods]
        sid = f"{rng.getrandbits(256):064x}"
        inv.sandboxes[sid] = sandbox_pb(
            sid, pod_uid=uid, pod_name=name, namespace=ns, ready=False, attempt=k // n_pods,
            created_at=now - rng.randint(2 * 86400, 30 * 86400) * S,
        )  # fmt: skip
    made = 0
    while made < containers:
        uid, ns, pod, ready = node_pods[rng.randrange(len(node_pods))]
        name = rng.choice(("app", "sidecar", "init-db"))
        attempts = min(rng.randint(1, 6), containers - made)
        born = now - rng.randint(600, 20 * 86400) * S
        for a in range(attempts):
            cid = f"{rng.getrandbits(256):064x}"
            running = ready and a == attempts - 1 and name != "init-db"
            inv.containers[cid] = container_pb(
                cid, pod_uid=uid, pod_name=pod, namespace=ns, name=name, attempt=a,
                state="RUNNING" if running else "EXITED", created_at=born + a * 60 * S,
                sandbox_id=sandbox_of.get(uid, f"{uid}-gone"),
                image_id=image_ids[rng.randrange(len(image_ids))],
            )  # fmt: skip
            if not running:
                inv.finished_at[cid] = born + a * 60 * S + 30 * S
            inv.layers[cid] = 4096 * rng.randint(1, 256)
            made += 1
    return inv


def _handlers_of(runtime: Any) -> dict[str, Any]:
    """The generated RuntimeService method handlers for `runtime`, by method name."""

    class Capture:
        def __init__(self) -> None:
            self.handlers: dict[str, Any] = {}

        def add_generic_rpc_handlers(self, _: Any) -> None:
            pass

        def add_registered_method_handlers(self, _: str, handlers: dict[str, Any]) -> None:
            self.handlers = dict(handlers)

    capture = Capture()
    _STUBS.add_RuntimeServiceServicer_to_server(runtime, capture)
    return capture.handlers


class FaultCri:
    """The server (see the module docstring). `socket` is the unix socket path it listens on;
    `start()`/`stop()` or `with FaultCri(...) as cri:`; `endpoint` is what `-r` takes."""

    def __init__(
        self,
        socket: Path | str,
        inventory: Inventory | None = None,
        *,
        workers: int = 32,
        cache_lists: bool = False,
    ) -> None:
        self.socket = Path(socket)
        # With `cache_lists`, an unfiltered ListContainers reply is serialized once and sent
        # again until a container changes through an RPC (as a runtime answers from memory;
        # rebuilding 100,000 messages in Python per call is ~1.4 s of this fake's own CPU).
        # Only for an inventory nothing changes but RPCs (`serve`).
        self.cache_lists = cache_lists
        self._list_reply: bytes | None = None
        self._stats_reply: bytes | None = None
        self.inventory = inventory or Inventory()
        self.workers = workers
        self.die_after: dict[str, int] = {}
        self.hang: set[str] = set()
        self.errors: dict[tuple[str, str], tuple[grpc.StatusCode, str]] = {}
        self.delay: dict[str, float] = {}
        self.gate: threading.Event | None = None
        self.gate_after = 0
        self.at_gate = threading.Event()
        self.calls: list[tuple[str, str]] = []
        self.first_call_at: float | None = None  # time.monotonic() when the first call came
        self.removed: list[str] = []
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._server: grpc.Server | None = None

    @property
    def endpoint(self) -> str:
        """The `unix://` address of the socket."""
        return f"unix://{self.socket}"

    @property
    def alive(self) -> bool:
        """Whether the server still answers (not stopped, not died)."""
        return self._server is not None and not self._stopped.is_set()

    def start(self) -> None:
        """Listen on the socket and serve both CRI services."""
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=self.workers),
            options=[
                ("grpc.max_send_message_length", 1 << 30),
                ("grpc.max_receive_message_length", 1 << 30),
            ],
        )
        runtime = _Runtime(self)
        if self.cache_lists:
            handlers = _handlers_of(runtime)
            handlers["ListContainers"] = grpc.unary_unary_rpc_method_handler(
                runtime.list_containers_bytes,
                request_deserializer=_PB.ListContainersRequest.FromString,
                response_serializer=bytes,  # already serialized
            )
            handlers["ListContainerStats"] = grpc.unary_unary_rpc_method_handler(
                runtime.list_container_stats_bytes,
                request_deserializer=_PB.ListContainerStatsRequest.FromString,
                response_serializer=bytes,  # already serialized
            )
            server.add_registered_method_handlers("runtime.v1.RuntimeService", handlers)
        else:
            _STUBS.add_RuntimeServiceServicer_to_server(runtime, server)
        _STUBS.add_ImageServiceServicer_to_server(_Images(self), server)
        server.add_insecure_port(self.endpoint)
        server.start()
        self._stopped.clear()
        self._server = server

    def stop(self) -> None:
        """Stop serving at once (calls in flight are cut, hanging ones are released)."""
        self._stopped.set()
        if self.gate is not None:
            self.gate.set()
        server, self._server = self._server, None
        if server is not None:
            server.stop(grace=None).wait(5)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:  # fmt: skip
        self.stop()

    def count(self, method: str) -> int:
        """How many calls of `method` arrived so far."""
        with self._lock:
            return self._counts.get(method, 0)

    # ---- what every call goes through ----

    def enter(self, method: str, object_id: str, context: Any) -> None:
        """Record the call and apply the faults set for it; aborts the call for an error."""
        with self._lock:
            if self.first_call_at is None:
                self.first_call_at = time.monotonic()
            self.calls.append((method, object_id))
            n = self._counts[method] = self._counts.get(method, 0) + 1
        if method in self.hang:
            self._stopped.wait()
            context.abort(grpc.StatusCode.UNAVAILABLE, "runtime went away")
        if method in self.delay:
            self._stopped.wait(self.delay[method])
        if method == "RemoveContainer" and self.gate is not None and n > self.gate_after:
            self.at_gate.set()
            self.gate.wait()
        if self._stopped.is_set():
            context.abort(grpc.StatusCode.UNAVAILABLE, "runtime went away")
        error = self.errors.get((method, object_id)) or self.errors.get((method, "*"))
        if error is not None:
            context.abort(*error)
        limit = self.die_after.get(method)
        if limit is not None and n >= limit:
            self._stopped.set()  # this answer is the last: later calls find the runtime gone
            context.add_callback(self._die)

    def _die(self) -> None:
        threading.Thread(target=self.stop, daemon=True).start()


def _not_found(context: Any, what: str) -> NoReturn:
    context.abort(grpc.StatusCode.NOT_FOUND, f"{what}: not found")
    raise AssertionError("grpc's abort returned")  # pragma: no cover


def _matches(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


class _Runtime(_STUBS.RuntimeServiceServicer):  # type: ignore[misc]
    """RuntimeService over the fake's inventory."""

    def __init__(self, cri: FaultCri) -> None:
        self.cri = cri
        self.inv = cri.inventory

    def Version(self, request: Any, context: Any) -> Any:
        self.cri.enter("Version", "", context)
        return _PB.VersionResponse(
            version="0.1.0", runtime_name="faultcri", runtime_version="1.0",
            runtime_api_version="v1",
        )  # fmt: skip

    def Status(self, request: Any, context: Any) -> Any:
        self.cri.enter("Status", "", context)
        info = self.inv.status_info
        if info is None:
            info = {"config": json.dumps({"sandboxImage": SANDBOX_IMAGE})}
        return _PB.StatusResponse(info=info)

    def ListContainers(self, request: Any, context: Any) -> Any:
        self.cri.enter("ListContainers", "", context)
        f = request.filter
        with self.cri._lock:
            items = [
                c
                for c in self.inv.containers.values()
                if (not f.pod_sandbox_id or c.pod_sandbox_id == f.pod_sandbox_id)
                and _matches(c.labels, f.label_selector)
            ]
        return _PB.ListContainersResponse(containers=items)

    def ContainerStatus(self, request: Any, context: Any) -> Any:
        cid = request.container_id
        self.cri.enter("ContainerStatus", cid, context)
        c = self.inv.containers.get(cid)
        if c is None:
            _not_found(context, f"container {cid}")
        status = _PB.ContainerStatus(
            id=c.id, metadata=c.metadata, state=c.state, created_at=c.created_at,
            finished_at=self.inv.finished_at.get(cid, 0), image=c.image, image_ref=c.image_ref,
            image_id=c.image_id, labels=c.labels, annotations=c.annotations,
            log_path=self.inv.log_paths.get(cid, ""),
        )  # fmt: skip
        return _PB.ContainerStatusResponse(status=status)

    def list_containers_bytes(self, request: Any, context: Any) -> bytes:
        """ListContainers, serialized; an unfiltered reply is kept until a container changes."""
        f = request.filter
        if f.pod_sandbox_id or f.label_selector:
            return bytes(self.ListContainers(request, context).SerializeToString())
        self.cri.enter("ListContainers", "", context)
        with self.cri._lock:
            reply = self.cri._list_reply
            if reply is None:
                items = list(self.inv.containers.values())
                reply = _PB.ListContainersResponse(containers=items).SerializeToString()
                self.cri._list_reply = reply
        return bytes(reply)

    def StopContainer(self, request: Any, context: Any) -> Any:
        cid = request.container_id
        self.cri.enter("StopContainer", cid, context)
        c = self.inv.containers.get(cid)
        if c is None:
            _not_found(context, f"container {cid}")
        c.state = _PB.CONTAINER_EXITED
        self.cri._list_reply = self.cri._stats_reply = None
        return _PB.StopContainerResponse()

    def RemoveContainer(self, request: Any, context: Any) -> Any:
        cid = request.container_id
        self.cri.enter("RemoveContainer", cid, context)
        with self.cri._lock:
            gone = self.inv.containers.pop(cid, None)
            if gone is not None:
                self.cri.removed.append(cid)
                self.cri._list_reply = self.cri._stats_reply = None
        if gone is None:
            _not_found(context, f"container {cid}")
        return _PB.RemoveContainerResponse()

    def ListContainerStats(self, request: Any, context: Any) -> Any:
        """Stats of the containers `Inventory.layers` names: attributes as containerd gives
        them (ID, metadata, labels, annotations) and the writable layer."""
        self.cri.enter("ListContainerStats", "", context)
        return self._stats()

    def _stats(self) -> Any:
        with self.cri._lock:
            stats = [
                _PB.ContainerStats(
                    attributes=_PB.ContainerAttributes(
                        id=c.id, metadata=c.metadata, labels=c.labels, annotations=c.annotations
                    ),
                    writable_layer=_PB.FilesystemUsage(
                        timestamp=NOW_NS,
                        fs_id=_PB.FilesystemIdentifier(mountpoint=self.inv.image_fs_mountpoint),
                        used_bytes=_PB.UInt64Value(value=self.inv.layers[c.id]),
                        inodes_used=_PB.UInt64Value(value=1),
                    ),
                )
                for c in self.inv.containers.values()
                if c.id in self.inv.layers
            ]
        return _PB.ListContainerStatsResponse(stats=stats)

    def list_container_stats_bytes(self, request: Any, context: Any) -> bytes:
        """ListContainerStats, serialized; kept until a container changes (`cache_lists`)."""
        self.cri.enter("ListContainerStats", "", context)
        with self.cri._lock:
            reply = self.cri._stats_reply
        if reply is None:
            reply = self._stats().SerializeToString()
            with self.cri._lock:
                self.cri._stats_reply = reply
        return bytes(reply)

    def ListPodSandbox(self, request: Any, context: Any) -> Any:
        self.cri.enter("ListPodSandbox", "", context)
        selector = request.filter.label_selector
        with self.cri._lock:
            items = [s for s in self.inv.sandboxes.values() if _matches(s.labels, selector)]
        return _PB.ListPodSandboxResponse(items=items)

    def PodSandboxStatus(self, request: Any, context: Any) -> Any:
        sid = request.pod_sandbox_id
        self.cri.enter("PodSandboxStatus", sid, context)
        s = self.inv.sandboxes.get(sid)
        if s is None:
            _not_found(context, f"sandbox {sid}")
        status = _PB.PodSandboxStatus(
            id=s.id, metadata=s.metadata, state=s.state, created_at=s.created_at,
            labels=s.labels, annotations=s.annotations,
        )  # fmt: skip
        info = self.inv.sandbox_info.get(sid, {}) if request.verbose else {}
        return _PB.PodSandboxStatusResponse(status=status, info=info)

    def StopPodSandbox(self, request: Any, context: Any) -> Any:
        sid = request.pod_sandbox_id
        self.cri.enter("StopPodSandbox", sid, context)
        s = self.inv.sandboxes.get(sid)
        if s is not None:
            s.state = _PB.SANDBOX_NOTREADY
        return _PB.StopPodSandboxResponse()

    def RemovePodSandbox(self, request: Any, context: Any) -> Any:
        sid = request.pod_sandbox_id
        self.cri.enter("RemovePodSandbox", sid, context)
        with self.cri._lock:
            gone = self.inv.sandboxes.pop(sid, None)
            if gone is not None:
                self.cri.removed.append(sid)
        if gone is None:
            _not_found(context, f"sandbox {sid}")
        return _PB.RemovePodSandboxResponse()


class _Images(_STUBS.ImageServiceServicer):  # type: ignore[misc]
    """ImageService over the fake's inventory."""

    def __init__(self, cri: FaultCri) -> None:
        self.cri = cri
        self.inv = cri.inventory

    def ListImages(self, request: Any, context: Any) -> Any:
        self.cri.enter("ListImages", "", context)
        with self.cri._lock:
            return _PB.ListImagesResponse(images=list(self.inv.images.values()))

    def ImageStatus(self, request: Any, context: Any) -> Any:
        ref = request.image.image
        self.cri.enter("ImageStatus", ref, context)
        img = self.inv.images.get(ref)
        return _PB.ImageStatusResponse(image=img) if img else _PB.ImageStatusResponse()

    def RemoveImage(self, request: Any, context: Any) -> Any:
        ref = request.image.image
        self.cri.enter("RemoveImage", ref, context)
        with self.cri._lock:
            gone = self.inv.images.pop(ref, None)
            if gone is not None:
                self.cri.removed.append(ref)
        return _PB.RemoveImageResponse()

    def ImageFsInfo(self, request: Any, context: Any) -> Any:
        self.cri.enter("ImageFsInfo", "", context)
        usage = _PB.FilesystemUsage(
            timestamp=time.time_ns(),
            fs_id=_PB.FilesystemIdentifier(mountpoint=self.inv.image_fs_mountpoint),
        )
        return _PB.ImageFsInfoResponse(image_filesystems=[usage])


def dead_containers(
    cri_or_inventory: FaultCri | Inventory, ids: Iterable[str] | None = None
) -> list[str]:
    """IDs of the containers the fake has that are not RUNNING (of `ids`, if given)."""
    inv = cri_or_inventory.inventory if isinstance(cri_or_inventory, FaultCri) else cri_or_inventory
    wanted = set(ids) if ids is not None else None
    return [
        cid
        for cid, c in inv.containers.items()
        if c.state != _PB.CONTAINER_RUNNING and (wanted is None or cid in wanted)
    ]


def serve(argv: Sequence[str] | None = None) -> int:
    """`python -m tests.unit.faultcri SOCKET [--containers N --sandboxes N --images N]`:
    serve a synthetic node until SIGINT or SIGTERM; prints `ready <size of ListContainers and
    ListPodSandbox replies in bytes>` on stdout once listening."""
    p = argparse.ArgumentParser(prog="python -m tests.unit.faultcri", description=serve.__doc__)
    p.add_argument("socket", type=Path)
    p.add_argument("--containers", type=int, default=1000)
    p.add_argument("--sandboxes", type=int, default=200)
    p.add_argument("--images", type=int, default=50)
    p.add_argument("--pods", type=int, help="pods [default: one per sandbox]")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    inv = synthetic_inventory(
        args.containers, args.sandboxes, args.images, pods=args.pods, seed=args.seed
    )
    with FaultCri(args.socket, inv, cache_lists=True):
        sizes = (
            _PB.ListContainersResponse(containers=list(inv.containers.values())).ByteSize(),
            _PB.ListPodSandboxResponse(items=list(inv.sandboxes.values())).ByteSize(),
        )
        print(f"ready {sizes[0]} {sizes[1]}", flush=True)
        done = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: done.set())
        done.wait()
    if args.socket.exists():
        os.unlink(args.socket)
    return 0


if __name__ == "__main__":
    raise SystemExit(serve())
