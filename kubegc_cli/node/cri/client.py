"""A small, typed CRI v1 client over gRPC (unix socket).

Every call has a deadline (`timeout` seconds). gRPC failures become `RuntimeUnavailable` with
one line naming the endpoint, except where a method documents otherwise (a container that is
gone is `None`, not an error). The receive limit defaults to 256 MiB, far above gRPC's 4 MiB,
because nodes that leaked sandboxes have list replies larger than that.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import grpc

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.inputs import Malformed, decode_json
from kubegc_cli.core.model import (
    ANNOTATION_RESTART_COUNT,
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    ContainerState,
    FilesystemUsage,
    Image,
    RuntimeInfo,
    Sandbox,
    SandboxState,
    make_container,
)
from kubegc_cli.core.units import format_seconds
from kubegc_cli.node.cri.endpoint import Endpoint
from kubegc_cli.node.cri.v1 import api_pb2, api_pb2_grpc

DEFAULT_MAX_RECV = 256 * 1024 * 1024
CRI_API_VERSION = "v1"

_CONTAINER_STATES = {
    api_pb2.CONTAINER_CREATED: ContainerState.CREATED,
    api_pb2.CONTAINER_RUNNING: ContainerState.RUNNING,
    api_pb2.CONTAINER_EXITED: ContainerState.EXITED,
    api_pb2.CONTAINER_UNKNOWN: ContainerState.UNKNOWN,
}
_SANDBOX_STATES = {
    api_pb2.SANDBOX_READY: SandboxState.READY,
    api_pb2.SANDBOX_NOTREADY: SandboxState.NOTREADY,
}


def describe_rpc_error(err: grpc.RpcError, endpoint: str, what: str, timeout: float) -> str:
    """One line for a failed call: the endpoint, the call, and what the status code means."""
    code = err.code() if hasattr(err, "code") else None
    details = (err.details() if hasattr(err, "details") else "") or ""
    details = details.splitlines()[0] if details else ""
    if code == grpc.StatusCode.UNIMPLEMENTED and (
        what == "Version" or "unknown service" in details
    ):
        return f"{endpoint} is not a CRI v1 runtime ({what}: {details or 'unimplemented'})"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        if what == "Version":
            return (
                f"no CRI answer from {endpoint} within {format_seconds(timeout)}: not a CRI v1 "
                "gRPC socket, or the runtime is hung"
            )
        return f"{what} on {endpoint} timed out after {format_seconds(timeout)} (raise --timeout)"
    if code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details:
        return f"{what} on {endpoint}: reply too large ({details}); raise --max-recv-size"
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"cannot reach the CRI runtime at {endpoint}: {details or 'unavailable'}"
    if code == grpc.StatusCode.CANCELLED:
        return f"{what} on {endpoint} was cut off by the runtime (CANCELLED: it stopped answering)"
    name = code.name if code is not None else "error"
    return f"{what} on {endpoint} failed: {name}: {details}"


Shared = dict[tuple[Any, ...], dict[str, str]]


def _shared(m: Any, shared: Shared) -> dict[str, str]:
    """The map as a dict, one dict object for every equal map seen through `shared`.

    The attempts of one container carry identical labels; sharing their dict (which nothing
    mutates) keeps 1,000,000 containers ~200 MB smaller and costs less than interning each.
    """
    items = tuple(m.items())
    d = shared.get(items)
    if d is None:
        d = {sys.intern(k): sys.intern(v) if len(v) <= 128 else v for k, v in items}
        shared[items] = d
    return d


def _labels(m: Any, shared: Shared) -> dict[str, str]:
    """`_shared` for a container's labels, faster for exactly the kubelet's four (four lookups
    instead of walking the map; keyed by the values, which cannot equal `_shared`'s keys)."""
    if len(m) == 4:
        uid, ns = m.get(LABEL_POD_UID), m.get(LABEL_POD_NAMESPACE)
        pod, name = m.get(LABEL_POD_NAME), m.get(LABEL_CONTAINER_NAME)
        if uid is not None and ns is not None and pod is not None and name is not None:
            key = (uid, ns, pod, name)
            d = shared.get(key)
            if d is None:
                d = {
                    LABEL_CONTAINER_NAME: sys.intern(name),
                    LABEL_POD_NAME: sys.intern(pod),
                    LABEL_POD_NAMESPACE: sys.intern(ns),
                    LABEL_POD_UID: sys.intern(uid),
                }
                shared[key] = d
            return d
    return _shared(m, shared)


def container_from_pb(c: Any, annotations: bool = True, shared: Shared | None = None) -> Container:
    """CRI `Container` message → `Container` (status-only fields left empty).

    With `annotations` False only the kubelet's restart-count annotation is kept (all a plan
    reads; the rest of a kubelet container's five or so cost a third of the conversion).
    `shared` (one dict per listing) lets equal label and annotation maps share one dict.
    """
    if shared is None:
        shared = {}
    if annotations:
        notes = _shared(c.annotations, shared)
    else:
        restarts = c.annotations.get(ANNOTATION_RESTART_COUNT)
        notes = {} if restarts is None else _shared({ANNOTATION_RESTART_COUNT: restarts}, shared)
    meta = c.metadata
    return make_container(
        c.id,
        sys.intern(c.pod_sandbox_id),
        sys.intern(meta.name),
        meta.attempt,
        _CONTAINER_STATES.get(c.state, ContainerState.UNKNOWN),
        c.created_at,
        _labels(c.labels, shared),
        notes,
        sys.intern(c.image.image),
        sys.intern(c.image_ref),
        sys.intern(c.image_id),
    )


class ContainerStatusInfo:
    """The fields of CRI `ContainerStatus` kubegc uses. Timestamps in nanoseconds."""

    __slots__ = ("created_at", "exit_code", "finished_at", "id", "labels", "log_path", "state")

    def __init__(self, s: Any) -> None:
        self.id: str = s.id
        self.state: ContainerState = _CONTAINER_STATES.get(s.state, ContainerState.UNKNOWN)
        self.created_at: int = s.created_at
        self.finished_at: int = s.finished_at
        self.exit_code: int = s.exit_code
        self.log_path: str = s.log_path
        self.labels: dict[str, str] = dict(s.labels)


class CriClient:
    """CRI v1 RuntimeService and ImageService on one unix socket.

    `timeout` is the per-call deadline in seconds; `max_recv_bytes` the largest reply accepted.
    Construction only checks the socket path; the first call connects. Use `check()` to
    verify the runtime answers and speaks CRI v1 (raises `RuntimeUnavailable` otherwise).
    """

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        timeout: float = 10.0,
        max_recv_bytes: int = DEFAULT_MAX_RECV,
    ) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._check_socket()
        self._channel = grpc.insecure_channel(
            endpoint.address,
            options=[
                ("grpc.max_receive_message_length", max_recv_bytes),
                ("grpc.max_send_message_length", 16 * 1024 * 1024),
                ("grpc.enable_http_proxy", 0),
            ],
        )
        stubs: Any = api_pb2_grpc
        self.runtime: Any = stubs.RuntimeServiceStub(self._channel)
        self.images: Any = stubs.ImageServiceStub(self._channel)

    def _check_socket(self) -> None:
        path = self.endpoint.path
        where = f"{self.endpoint.display} (from {self.endpoint.source})"
        try:
            os.stat(path)
        except PermissionError:  # a directory on the way that this user may not search
            raise RuntimeUnavailable(f"permission denied on CRI runtime socket {where}") from None
        except OSError:
            raise RuntimeUnavailable(f"no CRI runtime socket at {where}: no such file") from None
        if not os.access(path, os.R_OK | os.W_OK):
            raise RuntimeUnavailable(f"permission denied on CRI runtime socket {where}")

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> CriClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: Any, request: Any, what: str, timeout: float | None = None) -> Any:
        t = self.timeout if timeout is None else timeout
        try:
            return method(request, timeout=t)
        except grpc.RpcError as err:
            raise self._error(err, what, t) from None

    def _call_unless_gone(
        self, method: Any, request: Any, what: str, timeout: float | None = None
    ) -> bool:
        """`_call` for a call on one object: False when the runtime answers NotFound (the
        object is already gone), True when it succeeded; `RuntimeUnavailable` otherwise."""
        t = self.timeout if timeout is None else timeout
        try:
            method(request, timeout=t)
        except grpc.RpcError as err:
            if _is_not_found(err):
                return False
            raise self._error(err, what, t) from None
        return True

    # ---- runtime ----

    def version(self) -> RuntimeInfo:
        """`Version`: runtime name, version, CRI API version and the reply's own `version`
        (crictl's Version). Raises `RuntimeUnavailable` when the call fails."""
        r = self._call(
            self.runtime.Version, api_pb2.VersionRequest(version=CRI_API_VERSION), "Version"
        )
        return RuntimeInfo(r.runtime_name, r.runtime_version, r.runtime_api_version, r.version)

    def check(self) -> RuntimeInfo:
        """Call `Version`; raises `RuntimeUnavailable` if the runtime is not a CRI v1 server."""
        info = self.version()
        if info.api_version and info.api_version != CRI_API_VERSION:
            raise RuntimeUnavailable(
                f"{self.endpoint.display} speaks CRI {info.api_version}, kubegc needs v1"
            )
        return info

    def runtime_config(self) -> str | None:
        """`RuntimeConfig` (CRI v1, KEP-4033): the runtime's cgroup driver, "systemd" or
        "cgroupfs" (`linux.cgroup_driver`); None when the runtime does not implement the call
        (containerd 1.x answers Unimplemented) or sends no Linux section. Raises
        `RuntimeUnavailable` for any other failure."""
        try:
            r = self.runtime.RuntimeConfig(api_pb2.RuntimeConfigRequest(), timeout=self.timeout)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNIMPLEMENTED:
                return None
            raise self._error(err, "RuntimeConfig", self.timeout) from None
        if not r.HasField("linux"):
            return None
        return "cgroupfs" if r.linux.cgroup_driver == api_pb2.CGROUPFS else "systemd"

    def status_info(self) -> dict[str, str]:
        """`Status` with `verbose`: the runtime's extra information (JSON strings by key)."""
        r = self._call(self.runtime.Status, api_pb2.StatusRequest(verbose=True), "Status")
        return dict(r.info)

    def list_containers(
        self,
        sandbox_id: str = "",
        labels: Mapping[str, str] | None = None,
        *,
        annotations: bool = True,
    ) -> list[Container]:
        """`ListContainers`: every container in every state (of one sandbox, or matching all
        `labels`, if given), as new objects the caller owns. `annotations` False keeps only the
        restart count of each (see `container_from_pb`)."""
        wanted = sandbox_id or labels
        req = api_pb2.ListContainersRequest(
            filter=(
                api_pb2.ContainerFilter(pod_sandbox_id=sandbox_id, label_selector=labels or {})
                if wanted
                else None
            )
        )
        r = self._call(self.runtime.ListContainers, req, "ListContainers")
        shared: Shared = {}
        return [container_from_pb(c, annotations, shared) for c in r.containers]

    def writable_layers(self) -> dict[str, tuple[int | None, int | None]]:
        """`ListContainerStats`: container ID → (writable layer bytes, inodes), each None when
        the runtime does not say."""
        r = self._call(
            self.runtime.ListContainerStats, api_pb2.ListContainerStatsRequest(),
            "ListContainerStats",
        )  # fmt: skip
        out: dict[str, tuple[int | None, int | None]] = {}
        for st in r.stats:
            wl = st.writable_layer
            out[st.attributes.id] = (
                wl.used_bytes.value if wl.HasField("used_bytes") else None,
                wl.inodes_used.value if wl.HasField("inodes_used") else None,
            )
        return out

    def pod_sandbox_status(self, sandbox_id: str) -> tuple[SandboxState, int] | None:
        """`PodSandboxStatus`: (state, created_at ns), or None when the sandbox is gone."""
        req = api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sandbox_id)
        try:
            r = self.runtime.PodSandboxStatus(req, timeout=self.timeout)
        except grpc.RpcError as err:
            if _is_not_found(err):
                return None
            raise self._error(err, "PodSandboxStatus") from None
        state = _SANDBOX_STATES.get(r.status.state, SandboxState.NOTREADY)
        return state, r.status.created_at

    def stop_pod_sandbox(self, sandbox_id: str) -> bool:
        """`StopPodSandbox` (idempotent on the runtime side). False when the runtime says the
        sandbox is already gone (NotFound: removed meanwhile, e.g. by the kubelet)."""
        return self._call_unless_gone(
            self.runtime.StopPodSandbox,
            api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id),
            "StopPodSandbox",
        )

    def remove_pod_sandbox(self, sandbox_id: str) -> bool:
        """`RemovePodSandbox`. False when the runtime says the sandbox is already gone."""
        return self._call_unless_gone(
            self.runtime.RemovePodSandbox,
            api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id),
            "RemovePodSandbox",
        )

    def list_sandboxes(self, labels: Mapping[str, str] | None = None) -> list[Sandbox]:
        """`ListPodSandbox`: every sandbox (or those matching all `labels`, if given)."""
        return self.list_sandboxes_sized(labels)[0]

    def list_sandboxes_sized(
        self, labels: Mapping[str, str] | None = None
    ) -> tuple[list[Sandbox], int]:
        """`ListPodSandbox` as `list_sandboxes`, with the reply's encoded size in bytes
        (protobuf `ByteSize()`, what gRPC's receive limit is checked against)."""
        req = api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector=labels) if labels else None
        )
        r = self._call(self.runtime.ListPodSandbox, req, "ListPodSandbox")
        return [sandbox_from_pb(s) for s in r.items], r.ByteSize()

    def list_containers_sized(self) -> tuple[list[Container], int]:
        """`ListContainers` with no filter, with the reply's encoded size in bytes (protobuf
        `ByteSize()`)."""
        r = self._call(
            self.runtime.ListContainers, api_pb2.ListContainersRequest(), "ListContainers"
        )
        shared: Shared = {}
        return [container_from_pb(c, True, shared) for c in r.containers], r.ByteSize()

    def sandbox_netns(
        self, ids: Iterable[str], *, window: int = 64
    ) -> Iterator[tuple[str, str | None]]:
        """The network namespace path of each sandbox, from verbose `PodSandboxStatus`,
        `window` calls in flight at a time.

        Yields (id, path): the path the sandbox's runtime spec names for its network namespace
        (`netns_from_info`); "" when it has none (host network) or is gone; None when the
        runtime gives no verbose information to tell. Raises `RuntimeUnavailable` on any other
        error.
        """
        pending: list[tuple[str, Any]] = []

        def drain(batch: list[tuple[str, Any]]) -> Iterator[tuple[str, str | None]]:
            for sid, fut in batch:
                try:
                    yield sid, netns_from_info(fut.result().info)
                except grpc.RpcError as err:
                    if not _is_not_found(err):
                        raise self._error(err, "PodSandboxStatus") from None
                    yield sid, ""

        for sid in ids:
            req = api_pb2.PodSandboxStatusRequest(pod_sandbox_id=sid, verbose=True)
            pending.append((sid, self.runtime.PodSandboxStatus.future(req, timeout=self.timeout)))
            if len(pending) >= window:
                yield from drain(pending)
                pending = []
        yield from drain(pending)

    def _error(
        self, err: grpc.RpcError, what: str, timeout: float | None = None
    ) -> RuntimeUnavailable:
        t = self.timeout if timeout is None else timeout
        return RuntimeUnavailable(
            describe_rpc_error(err, self.endpoint.display, what, t), _code_name(err)
        )

    def container_status(self, container_id: str) -> ContainerStatusInfo | None:
        """`ContainerStatus`; None when the runtime says the container does not exist."""
        req = api_pb2.ContainerStatusRequest(container_id=container_id)
        try:
            r = self.runtime.ContainerStatus(req, timeout=self.timeout)
        except grpc.RpcError as err:
            if _is_not_found(err):
                return None
            raise self._error(err, "ContainerStatus") from None
        return ContainerStatusInfo(r.status)

    def container_statuses(
        self, ids: Iterable[str], *, window: int = 64
    ) -> Iterator[tuple[str, ContainerStatusInfo | None]]:
        """`ContainerStatus` for many containers, `window` calls in flight at a time.

        Yields (id, status or None if gone). Raises `RuntimeUnavailable` on any other error.
        """
        pending: list[tuple[str, Any]] = []

        def drain(batch: list[tuple[str, Any]]) -> Iterator[tuple[str, ContainerStatusInfo | None]]:
            for cid, fut in batch:
                try:
                    yield cid, ContainerStatusInfo(fut.result().status)
                except grpc.RpcError as err:
                    if not _is_not_found(err):
                        raise self._error(err, "ContainerStatus") from None
                    yield cid, None

        for cid in ids:
            req = api_pb2.ContainerStatusRequest(container_id=cid)
            pending.append((cid, self.runtime.ContainerStatus.future(req, timeout=self.timeout)))
            if len(pending) >= window:
                yield from drain(pending)
                pending = []
        yield from drain(pending)

    def stop_container(self, container_id: str, grace_seconds: int) -> bool:
        """`StopContainer` with `grace_seconds` before the runtime kills it. False when the
        runtime says the container is already gone (NotFound)."""
        return self._call_unless_gone(
            self.runtime.StopContainer,
            api_pb2.StopContainerRequest(container_id=container_id, timeout=grace_seconds),
            "StopContainer",
            timeout=self.timeout + grace_seconds,
        )

    def remove_container(self, container_id: str) -> bool:
        """`RemoveContainer`. False when the runtime says the container is already gone."""
        return self._call_unless_gone(
            self.runtime.RemoveContainer,
            api_pb2.RemoveContainerRequest(container_id=container_id),
            "RemoveContainer",
        )

    def reopen_container_log(self, container_id: str) -> bool:
        """`ReopenContainerLog`: the runtime opens the container's log file at its log path
        anew (after log rotation renamed the file there away; kubelet `rotateLatestLog`).
        False when the runtime says the container is gone (NotFound); `RuntimeUnavailable`
        for any other failure (a container that is not running is one: FailedPrecondition
        or Unknown, as the runtime answers)."""
        return self._call_unless_gone(
            self.runtime.ReopenContainerLog,
            api_pb2.ReopenContainerLogRequest(container_id=container_id),
            "ReopenContainerLog",
        )

    # ---- images ----

    def list_images(self) -> list[Image]:
        """`ListImages` with no filter."""
        r = self._call(self.images.ListImages, api_pb2.ListImagesRequest(), "ListImages")
        return [image_from_pb(i) for i in r.images]

    def image_status(self, image: str) -> Image | None:
        """`ImageStatus` of `image` (an ID, tag or digest): the image as the runtime reports
        it now, `pinned` included; None when the runtime has no such image."""
        r = self._call(
            self.images.ImageStatus,
            api_pb2.ImageStatusRequest(image=api_pb2.ImageSpec(image=image)),
            "ImageStatus",
        )
        return image_from_pb(r.image) if r.HasField("image") and r.image.id else None

    def image_exists(self, image_id: str) -> bool:
        """`ImageStatus`: whether the runtime still has the image."""
        return self.image_status(image_id) is not None

    def remove_image(self, image_id: str) -> bool:
        """`RemoveImage`. False when the runtime says the image is already gone."""
        req = api_pb2.RemoveImageRequest(image=api_pb2.ImageSpec(image=image_id))
        try:
            self.images.RemoveImage(req, timeout=self.timeout)
        except grpc.RpcError as err:
            if _is_not_found(err):
                return False
            raise self._error(err, "RemoveImage") from None
        return True

    def image_fs_info(self) -> tuple[list[FilesystemUsage], list[FilesystemUsage]]:
        """`ImageFsInfo`: (image filesystems, container filesystems)."""
        r = self._call(self.images.ImageFsInfo, api_pb2.ImageFsInfoRequest(), "ImageFsInfo")

        def conv(f: Any) -> FilesystemUsage:
            return FilesystemUsage(
                mountpoint=f.fs_id.mountpoint,
                used_bytes=f.used_bytes.value if f.HasField("used_bytes") else None,
                inodes_used=f.inodes_used.value if f.HasField("inodes_used") else None,
                timestamp=f.timestamp,
            )

        return [conv(f) for f in r.image_filesystems], [conv(f) for f in r.container_filesystems]


def image_from_pb(i: Any) -> Image:
    """A CRI `Image` message as an `Image`."""
    return Image(
        id=i.id,
        repo_tags=tuple(i.repo_tags),
        repo_digests=tuple(i.repo_digests),
        size=i.size,
        pinned=i.pinned,
    )


def sandbox_from_pb(s: Any) -> Sandbox:
    """CRI `PodSandbox` message → `Sandbox`."""
    return Sandbox(
        id=s.id,
        name=s.metadata.name,
        namespace=s.metadata.namespace,
        uid=s.metadata.uid,
        attempt=s.metadata.attempt,
        state=_SANDBOX_STATES.get(s.state, SandboxState.NOTREADY),
        created_at=s.created_at,
        labels=dict(s.labels),
        annotations=dict(s.annotations),
        runtime_handler=s.runtime_handler,
    )


def netns_from_info(info: Mapping[str, str]) -> str | None:
    """The network namespace path of a sandbox, from verbose `PodSandboxStatus` info.

    containerd and CRI-O put a JSON document under `info` whose `runtimeSpec` (the OCI spec)
    lists `linux.namespaces`; the entry of type `network` carries the path (containerd:
    `/var/run/netns/cni-<uuid>`). Returns that path; "" when the spec names no network
    namespace path (a host-network sandbox); None when no value holds a runtime spec (the
    runtime does not say). A value that is not JSON kubegc reads (`decode_json`: not JSON,
    nested too deeply, ...) holds no runtime spec.
    """
    for key, raw in info.items():
        try:
            doc = decode_json(raw, f"PodSandboxStatus info {key!r}")
        except Malformed:
            continue
        spec = doc.get("runtimeSpec") if isinstance(doc, dict) else None
        if not isinstance(spec, dict):
            continue
        linux = spec.get("linux")
        namespaces = linux.get("namespaces") if isinstance(linux, dict) else None
        for ns in namespaces if isinstance(namespaces, list) else ():
            if isinstance(ns, dict) and ns.get("type") == "network":
                path = ns.get("path")
                return path if isinstance(path, str) else ""
        return ""
    return None


def _code_name(err: grpc.RpcError) -> str:
    code = err.code() if hasattr(err, "code") else None
    return code.name if code is not None else "UNKNOWN"


def _is_not_found(err: grpc.RpcError) -> bool:
    code = err.code() if hasattr(err, "code") else None
    if code == grpc.StatusCode.NOT_FOUND:
        return True
    details = (err.details() if hasattr(err, "details") else "") or ""
    # containerd 1.6 reports some missing objects as UNKNOWN with "not found" text.
    return code == grpc.StatusCode.UNKNOWN and "not found" in details.lower()
