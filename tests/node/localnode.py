"""A throwaway local CRI node: a private containerd with kubelet-shaped pods, logs and images.

There is no kubelet here. ``LocalNode`` starts its own ``containerd`` (root, state, sockets and
runc root all under one work directory), imports locally built images (no registry is reachable),
and then creates pod sandboxes and containers through the CRI v1 gRPC API labelled and laid out
exactly the way the kubelet does it: the ``io.kubernetes.*`` labels, the
``io.kubernetes.container.restartCount`` annotation, ``<podLogsDir>/<ns>_<name>_<uid>/<container>/
<attempt>.log`` files and the legacy ``/var/log/containers`` symlinks.

Use it from tests::

    with LocalNode(tmp_path / "node") as node:
        pod = node.run_pod("web")
        cid = node.add_container(pod, "app", state="exited")

or from a shell (the node keeps running after the command returns)::

    python -m tests.node.localnode up /tmp/kgc-demo --populate --pods-file /tmp/pods.json
    eval "$(python -m tests.node.localnode env /tmp/kgc-demo)"
    python -m tests.node.localnode down /tmp/kgc-demo

``stop()`` (and ``down``) leaves nothing behind: sandboxes are removed through CRI, the
containerd process and the shims that name this node's socket are killed by pid, every mount
under the work directory is lazily unmounted (deepest first), and the directory is deleted.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import gzip
import hashlib
import io
import json
import os
import platform
import random
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import grpc

from kubegc_cli.node.cri.v1 import api_pb2, api_pb2_grpc
from kubegc_cli.node.host.mounts import decode, parse_mount_filesystems, parse_mountinfo

__all__ = [
    "ANNOTATION_RESTART_COUNT",
    "BUSYBOX_IMAGE",
    "CRI_NAMESPACE",
    "LABEL_CONTAINER_NAME",
    "LABEL_POD_NAME",
    "LABEL_POD_NAMESPACE",
    "LABEL_POD_UID",
    "PAUSE_IMAGE",
    "TEST_LOG_LINE",
    "ContainerState",
    "DemoNode",
    "LocalNode",
    "LocalNodeError",
    "Pod",
    "main",
    "missing_requirements",
    "overlayfs_works",
    "pod_list",
    "populate_demo",
]

PAUSE_IMAGE = "registry.k8s.io/pause:3.9"
"""The sandbox ("pause") image reference; containerd is configured to use it."""

BUSYBOX_IMAGE = "docker.io/library/busybox:kubegc-test"
"""The default image of containers made by :meth:`LocalNode.add_container`."""

CRI_NAMESPACE = "k8s.io"
"""The containerd namespace the CRI plugin works in."""

ContainerState = Literal["exited", "running", "created"]
"""The states :meth:`LocalNode.add_container` can leave a container in."""

LABEL_POD_NAME = "io.kubernetes.pod.name"
LABEL_POD_NAMESPACE = "io.kubernetes.pod.namespace"
LABEL_POD_UID = "io.kubernetes.pod.uid"
LABEL_CONTAINER_NAME = "io.kubernetes.container.name"
ANNOTATION_RESTART_COUNT = "io.kubernetes.container.restartCount"

TEST_LOG_LINE = "kubegc-test-log"
"""What an ``exited`` container prints before it exits."""

_BUSYBOX_BINARY = Path("/bin/busybox")
_APPLETS = ("sh", "sleep", "true", "false", "echo", "cat")
_LAYER_MTIME = 946_684_800  # 2000-01-01: fixed, so equal content gives equal digests
_CREATED = "2000-01-01T00:00:00Z"
_EXT4_MAX_FILENAME = 255
_MNT_DETACH = 2
_SHIM_NAME = "containerd-shim-runc-v2"
_SHIM_SOCKET_DIR = Path("/run/containerd/s")
_MAX_UNIX_SOCKET_PATH = 107
_RPC_TIMEOUT = 30.0

_MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
_MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
_MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"
_MEDIA_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
_MEDIA_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"

# The generated gRPC module is untyped; reach its stub classes through Any (strict mypy).
_STUBS: Any = api_pb2_grpc

_REQUIRED_BINARIES = ("containerd", "ctr", "runc", _SHIM_NAME)


class LocalNodeError(RuntimeError):
    """The local node could not be started, driven or torn down."""


@functools.cache
def containerd_version() -> tuple[int, int]:
    """(major, minor) of the `containerd` on PATH (`containerd --version`: Debian's 1.6, or the
    2.x `scripts/build-control-plane runtime` builds, put first on PATH by `scripts/test`)."""
    out = subprocess.run(
        [shutil.which("containerd") or "containerd", "--version"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    major, minor = out[2].removeprefix("v").split(".")[:2]
    return int(major), int(minor)


def missing_requirements() -> list[str]:
    """Say what this machine lacks to run a :class:`LocalNode` (empty when nothing)."""
    missing: list[str] = []
    if os.geteuid() != 0:
        missing.append("root")
    missing.extend(name for name in _REQUIRED_BINARIES if shutil.which(name) is None)
    return missing


# ---------------------------------------------------------------------------------------------
# Images: OCI image-layout tarballs built from /bin/busybox
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Blob:
    media_type: str
    data: bytes
    diff_id: str = ""

    @functools.cached_property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    def descriptor(self) -> dict[str, Any]:
        return {"mediaType": self.media_type, "digest": self.digest, "size": len(self.data)}


@dataclass(frozen=True)
class _ImageBuild:
    ref: str
    config: _Blob
    manifest: _Blob
    layers: tuple[_Blob, ...]

    @property
    def image_id(self) -> str:
        return self.config.digest


def _tar_info(name: str, kind: bytes, *, size: int = 0, mode: int = 0o755) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.size = size
    info.mode = mode
    info.mtime = _LAYER_MTIME
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _layer(raw: bytes, *, compress: bool) -> _Blob:
    diff_id = "sha256:" + hashlib.sha256(raw).hexdigest()
    if compress:
        return _Blob(_MEDIA_LAYER_GZIP, gzip.compress(raw, compresslevel=6, mtime=0), diff_id)
    return _Blob(_MEDIA_LAYER_TAR, raw, diff_id)


@functools.cache
def _base_layer() -> _Blob:
    """The busybox layer shared by every image (built once per process)."""
    if not _BUSYBOX_BINARY.is_file():
        raise LocalNodeError(f"{_BUSYBOX_BINARY} is missing: install busybox-static")
    binary = _BUSYBOX_BINARY.read_bytes()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for directory in ("bin", "dev", "etc", "proc", "sys", "tmp"):
            tar.addfile(_tar_info(directory, tarfile.DIRTYPE))
        tar.addfile(_tar_info("bin/busybox", tarfile.REGTYPE, size=len(binary)), io.BytesIO(binary))
        for applet in _APPLETS:
            link = _tar_info(f"bin/{applet}", tarfile.SYMTYPE, mode=0o777)
            link.linkname = "busybox"
            tar.addfile(link)
    return _layer(buf.getvalue(), compress=True)


def _padding_layer(pad_bytes: int, seed: str) -> _Blob:
    """An uncompressed layer holding ``pad_bytes`` bytes drawn from ``seed``."""
    data = random.Random(seed).randbytes(pad_bytes)
    name = "pad/" + hashlib.sha256(seed.encode()).hexdigest()[:16] + ".bin"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
        tar.addfile(_tar_info("pad", tarfile.DIRTYPE))
        tar.addfile(_tar_info(name, tarfile.REGTYPE, size=pad_bytes, mode=0o644), io.BytesIO(data))
    return _layer(buf.getvalue(), compress=False)


def _go_arch() -> str:
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm"}.get(machine, machine)


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _build_image(
    ref: str, *, cmd: Sequence[str], pad_bytes: int = 0, seed: str = ""
) -> _ImageBuild:
    layers = [_base_layer()]
    if pad_bytes > 0:
        layers.append(_padding_layer(pad_bytes, seed))
    config = {
        "architecture": _go_arch(),
        "os": "linux",
        "created": _CREATED,
        "config": {
            "Cmd": list(cmd),
            "Env": ["PATH=/bin"],
            "Labels": {"io.kubegc.test.seed": seed} if seed else {},
        },
        "rootfs": {"type": "layers", "diff_ids": [layer.diff_id for layer in layers]},
        "history": [{"created": _CREATED, "created_by": "kubegc tests/node/localnode.py"}],
    }
    config_blob = _Blob(_MEDIA_CONFIG, _json_bytes(config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": _MEDIA_MANIFEST,
        "config": config_blob.descriptor(),
        "layers": [layer.descriptor() for layer in layers],
    }
    return _ImageBuild(
        ref, config_blob, _Blob(_MEDIA_MANIFEST, _json_bytes(manifest)), tuple(layers)
    )


def _repository(ref: str) -> str:
    """``ref`` without its tag (``registry.k8s.io/pause:3.9`` → ``registry.k8s.io/pause``)."""
    name, _, tag = ref.rpartition(":")
    return name if name and "/" not in tag else ref


def _write_oci_archive(path: Path, builds: Sequence[_ImageBuild], *, pullable: bool) -> None:
    """Write one OCI image-layout tarball holding every image in ``builds``. With
    ``pullable``, each image is also named by its digest (``repo@sha256:…``), as a pull
    through CRI names it: CRI then lists a repo digest, and kubegc takes the image for one
    that can be pulled again. Without, the image has its tag alone, as an image loaded from a
    tarball has."""
    names = [
        (build, name)
        for build in builds
        for name in (
            [build.ref, f"{_repository(build.ref)}@{build.manifest.digest}"]
            if pullable
            else [build.ref]
        )
    ]
    index = {
        "schemaVersion": 2,
        "mediaType": _MEDIA_INDEX,
        "manifests": [
            {
                **build.manifest.descriptor(),
                "annotations": {"io.containerd.image.name": name},
                "platform": {"architecture": _go_arch(), "os": "linux"},
            }
            for build, name in names
        ],
    }
    files: dict[str, bytes] = {
        "oci-layout": _json_bytes({"imageLayoutVersion": "1.0.0"}),
        "index.json": _json_bytes(index),
    }
    for build in builds:
        for blob in (build.config, build.manifest, *build.layers):
            files["blobs/sha256/" + blob.digest.removeprefix("sha256:")] = blob.data
    with tarfile.open(path, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for directory in ("blobs", "blobs/sha256"):
            tar.addfile(_tar_info(directory, tarfile.DIRTYPE))
        for name, data in files.items():
            info = _tar_info(name, tarfile.REGTYPE, size=len(data), mode=0o644)
            tar.addfile(info, io.BytesIO(data))


# ---------------------------------------------------------------------------------------------
# Processes and mounts (teardown helpers)
# ---------------------------------------------------------------------------------------------


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _stat_fields(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return []
    # comm may hold spaces and parentheses: the fields after it start past the last ")".
    return raw[raw.rfind(")") + 2 :].split()


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, waiting for a parent that never reaps, counts as dead)."""
    fields = _stat_fields(pid)
    return bool(fields) and fields[0] not in ("Z", "X")


def _all_pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


def _descendants(root: int) -> list[int]:
    """Every process below ``root`` in the process tree, children before grandchildren."""
    parents: dict[int, list[int]] = {}
    for pid in _all_pids():
        fields = _stat_fields(pid)
        if len(fields) > 1:
            parents.setdefault(int(fields[1]), []).append(pid)
    found: list[int] = []
    queue = [root]
    while queue:
        kids = parents.get(queue.pop(0), [])
        found.extend(kids)
        queue.extend(kids)
    return found


def _kill_and_wait(pids: Iterable[int], sig: int, timeout: float) -> list[int]:
    """Send ``sig`` to each pid, wait up to ``timeout`` s; return the pids still alive."""
    pids = [pid for pid in pids if _alive(pid)]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while pids and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)  # reap it when it is our own child
        pids = [pid for pid in pids if _alive(pid)]
        if pids:
            time.sleep(0.02)
    return pids


def _mountinfo() -> str:
    """This mount namespace's mount table, decoded as kubegc reads it ("" if unreadable)."""
    try:
        return decode(Path("/proc/self/mountinfo").read_bytes())
    except OSError:
        return ""


def _mounts_under(directory: Path) -> list[Path]:
    """Mount points at or below ``directory`` (in this mount namespace), deepest first."""
    found = {
        Path(p) for p in parse_mountinfo(_mountinfo())
        if Path(p) == directory or Path(p).is_relative_to(directory)
    }  # fmt: skip
    return sorted(found, key=lambda p: (len(p.parts), str(p)), reverse=True)


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(source: str, target: Path, fstype: str, options: str) -> None:
    rc = _libc().mount(source.encode(), str(target).encode(), fstype.encode(), 0, options.encode())
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount -t {fstype} {target}: {os.strerror(err)}")


def _umount_lazy(target: Path) -> bool:
    """``umount -l target``; True when it worked."""
    return bool(_libc().umount2(str(target).encode(), _MNT_DETACH) == 0)


def _cgroup_mount_points() -> list[Path]:
    """Where cgroup (v1 hierarchies) and cgroup2 file systems are mounted."""
    return [
        Path(point) for point, fstype, _ in parse_mount_filesystems(_mountinfo())
        if fstype in ("cgroup", "cgroup2")
    ]  # fmt: skip


def _remove_cgroup_tree(relative: str) -> None:
    """Kill what runs in cgroup ``relative`` (in every hierarchy) and rmdir it, leaves first."""
    for mount_point in _cgroup_mount_points():
        top = mount_point / relative.strip("/")
        if not top.is_dir():
            continue
        tasks: set[int] = set()
        for procs in top.rglob("cgroup.procs"):
            with contextlib.suppress(OSError, ValueError):
                tasks.update(int(line) for line in procs.read_text().split())
        _kill_and_wait(tasks, signal.SIGKILL, 5.0)
        for directory, _dirs, _files in os.walk(top, topdown=False):
            with contextlib.suppress(OSError):
                os.rmdir(directory)


def overlayfs_works(directory: Path) -> bool:
    """Whether an overlay mount with upper and work dirs in ``directory`` succeeds."""
    probe = directory / ".overlay-probe"
    try:
        for sub in ("lower", "upper", "work", "merged"):
            (probe / sub).mkdir(parents=True, exist_ok=True)
        options = f"lowerdir={probe / 'lower'},upperdir={probe / 'upper'},workdir={probe / 'work'}"
        _mount("overlay", probe / "merged", "overlay", options)
    except OSError:
        return False
    else:
        _umount_lazy(probe / "merged")
        return True
    finally:
        shutil.rmtree(probe, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The node
# ---------------------------------------------------------------------------------------------


@dataclass
class Pod:
    """A pod sandbox made by :meth:`LocalNode.run_pod`."""

    sandbox_id: str
    name: str
    namespace: str
    uid: str
    config: api_pb2.PodSandboxConfig
    log_directory: Path
    container_ids: list[str] = field(default_factory=list)
    """Ids of the containers :meth:`LocalNode.add_container` made in this pod, oldest first."""


def _legacy_symlink_name(pod_name: str, namespace: str, container: str, container_id: str) -> str:
    """The kubelet's ``/var/log/containers`` file name (``logSymlink`` in kuberuntime)."""
    stem = f"{pod_name}_{namespace}_{container}-{container_id}"
    return stem[: _EXT4_MAX_FILENAME - len(".log")] + ".log"


class LocalNode:
    """A private containerd with the CRI plugin, driven over CRI v1 like a kubelet would.

    Everything lives under ``workdir``: ``containerd/{root,state}``, ``containerd.sock`` (gRPC),
    ``ttrpc.sock``, ``config.toml``, ``containerd.log``, ``runc/``, ``cni/`` (empty),
    ``var/log/pods/``, ``var/log/containers/``, ``kubelet-config.yaml`` and, once started from
    the command line, ``node.json``.

    ``imagefs_bytes`` mounts a tmpfs of that size on the containerd root before the start, a
    small image filesystem for disk-pressure scenarios.
    """

    def __init__(self, workdir: Path, *, imagefs_bytes: int | None = None) -> None:
        self.workdir: Path = Path(workdir).absolute()
        self.imagefs_bytes: int | None = imagefs_bytes
        self.snapshotter: str = ""
        self.pid: int | None = None
        self.timings: dict[str, float] = {}
        """Seconds spent in ``containerd_start`` and ``image_import`` by :meth:`start`."""
        self._process: subprocess.Popen[bytes] | None = None
        self._channel: grpc.Channel | None = None
        self._runtime: api_pb2_grpc.RuntimeServiceStub | None = None
        self._images: api_pb2_grpc.ImageServiceStub | None = None
        self._made_run_dir = False

    @property
    def cgroup_parent(self) -> str:
        """The cgroup every pod of this node goes under (``<this>/pod<uid>``, as the kubelet).

        Derived from :attr:`workdir`, so :meth:`stop` can remove the whole tree afterwards.
        """
        tag = hashlib.sha256(str(self.workdir).encode()).hexdigest()[:12]
        return f"/kubegc-localnode-{tag}"

    # -- layout -------------------------------------------------------------------------------

    @property
    def socket(self) -> Path:
        """The containerd gRPC socket."""
        return self.workdir / "containerd.sock"

    @property
    def endpoint(self) -> str:
        """The CRI endpoint, ``unix://`` + :attr:`socket`."""
        return f"unix://{self.socket}"

    @property
    def ttrpc_socket(self) -> Path:
        """The containerd ttrpc socket."""
        return self.workdir / "ttrpc.sock"

    @property
    def root(self) -> Path:
        """containerd's ``root`` (content store, snapshots, metadata)."""
        return self.workdir / "containerd" / "root"

    @property
    def state(self) -> Path:
        """containerd's ``state`` directory (bundles, sandbox shm, FIFOs)."""
        return self.workdir / "containerd" / "state"

    @property
    def config_path(self) -> Path:
        """The containerd ``config.toml``."""
        return self.workdir / "config.toml"

    @property
    def log_path(self) -> Path:
        """containerd's own stdout and stderr."""
        return self.workdir / "containerd.log"

    @property
    def cni_conf_dir(self) -> Path:
        """The (empty) CNI configuration directory."""
        return self.workdir / "cni"

    @property
    def runc_root(self) -> Path:
        """runc's state root for this node's containers."""
        return self.workdir / "runc"

    @property
    def pod_logs_dir(self) -> Path:
        """The kubelet's ``podLogsDir`` (``/var/log/pods`` on a real node)."""
        return self.workdir / "var" / "log" / "pods"

    @property
    def container_logs_dir(self) -> Path:
        """Where the kubelet's legacy log symlinks go (``/var/log/containers``)."""
        return self.workdir / "var" / "log" / "containers"

    @property
    def kubelet_config(self) -> Path:
        """A minimal ``KubeletConfiguration`` file naming :attr:`pod_logs_dir`."""
        return self.workdir / "kubelet-config.yaml"

    @property
    def node_json(self) -> Path:
        """Where ``up`` records the containerd pid and the paths, for ``down`` and ``env``."""
        return self.workdir / "node.json"

    # -- gRPC ---------------------------------------------------------------------------------

    @property
    def channel(self) -> grpc.Channel:
        """The gRPC channel to :attr:`endpoint` (opened on first use)."""
        if self._channel is None:
            self._channel = grpc.insecure_channel(
                self.endpoint,
                options=[
                    ("grpc.initial_reconnect_backoff_ms", 50),
                    ("grpc.min_reconnect_backoff_ms", 50),
                    ("grpc.max_reconnect_backoff_ms", 500),
                    ("grpc.enable_http_proxy", 0),
                    ("grpc.max_receive_message_length", 256 * 1024 * 1024),
                ],
            )
        return self._channel

    @property
    def runtime(self) -> api_pb2_grpc.RuntimeServiceStub:
        """The CRI ``RuntimeService`` client."""
        if self._runtime is None:
            self._runtime = _STUBS.RuntimeServiceStub(self.channel)
        return self._runtime

    @property
    def images(self) -> api_pb2_grpc.ImageServiceStub:
        """The CRI ``ImageService`` client."""
        if self._images is None:
            self._images = _STUBS.ImageServiceStub(self.channel)
        return self._images

    def _close_channel(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._channel = self._runtime = self._images = None

    # -- lifecycle ----------------------------------------------------------------------------

    @classmethod
    def attach(cls, workdir: Path) -> Self:
        """Reattach to a node started earlier in ``workdir`` (by ``up`` or another process).

        Reads ``node.json`` when there is one; without it the node can still be stopped, as
        :meth:`stop` also finds this node's containerd by the config path on its command line.
        """
        node = cls(workdir)
        if node.node_json.is_file():
            data = json.loads(node.node_json.read_text())
            node.pid = int(data["pid"]) if data.get("pid") else None
            node.snapshotter = str(data.get("snapshotter", ""))
            node._made_run_dir = bool(data.get("made_run_dir", False))
        return node

    def start(self, *, timeout: float = 20.0) -> None:
        """Write the configuration, start containerd, wait for CRI, import the base images."""
        if self.running():
            raise LocalNodeError(f"a containerd for {self.workdir} already runs (pid {self.pid})")
        if len(str(self.socket)) > _MAX_UNIX_SOCKET_PATH - 4:
            raise LocalNodeError(f"{self.socket}: too long for a unix socket; use a shorter dir")
        self.workdir.mkdir(mode=0o700, parents=True, exist_ok=True)  # this user's alone
        for directory in (
            self.root,
            self.state,
            self.cni_conf_dir,
            self.runc_root,
            self.pod_logs_dir,
            self.container_logs_dir,
        ):
            directory.mkdir(parents=True, exist_ok=True)
        if self.imagefs_bytes is not None and self.root not in _mounts_under(self.root):
            _mount("tmpfs", self.root, "tmpfs", f"size={self.imagefs_bytes},mode=0711")
        self.snapshotter = "overlayfs" if overlayfs_works(self.root) else "native"
        self._made_run_dir = not _SHIM_SOCKET_DIR.parent.exists()
        self.config_path.write_text(self._containerd_config())
        self.kubelet_config.write_text(
            "apiVersion: kubelet.config.k8s.io/v1beta1\n"
            "kind: KubeletConfiguration\n"
            f"podLogsDir: {json.dumps(str(self.pod_logs_dir))}\n"
        )

        began = time.monotonic()
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                [shutil.which("containerd") or "containerd", "--config", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                close_fds=True,
            )
        self.pid = self._process.pid
        try:
            self._wait_for_cri(timeout)
            self.timings["containerd_start"] = time.monotonic() - began
            began = time.monotonic()
            self._import(
                [
                    _build_image(PAUSE_IMAGE, cmd=["/bin/sleep", "infinity"]),
                    _build_image(BUSYBOX_IMAGE, cmd=["/bin/sh"]),
                ]
            )
            self.timings["image_import"] = time.monotonic() - began
        except BaseException:
            self.stop()
            raise

    def _containerd_config(self) -> str:
        def q(value: object) -> str:
            return json.dumps(str(value))

        cri = '[plugins."io.containerd.grpc.v1.cri"'
        disabled = [
            "io.containerd.internal.v1.opt",
            "io.containerd.internal.v1.tracing",
            "io.containerd.tracing.processor.v1.otlp",
            "io.containerd.snapshotter.v1.aufs",
            "io.containerd.snapshotter.v1.btrfs",
            "io.containerd.snapshotter.v1.devmapper",
            "io.containerd.snapshotter.v1.zfs",
        ]
        return "\n".join(
            [
                "# Written by tests/node/localnode.py: a private containerd for kubegc tests.",
                "version = 2",
                f"root = {q(self.root)}",
                f"state = {q(self.state)}",
                f"disabled_plugins = [{', '.join(q(name) for name in disabled)}]",
                "",
                "[grpc]",
                f"  address = {q(self.socket)}",
                "[ttrpc]",
                f"  address = {q(self.ttrpc_socket)}",
                "[debug]",
                '  address = ""',
                "[metrics]",
                '  address = ""',
                "",
                f"{cri}]",
                f"  sandbox_image = {q(PAUSE_IMAGE)}",
                "  restrict_oom_score_adj = true",
                "  disable_tcp_service = true",
                '  stream_server_address = "127.0.0.1"',
                '  stream_server_port = "0"',
                f"{cri}.containerd]",
                f"  snapshotter = {q(self.snapshotter)}",
                '  default_runtime_name = "runc"',
                f"{cri}.containerd.runtimes.runc]",
                '  runtime_type = "io.containerd.runc.v2"',
                f"{cri}.containerd.runtimes.runc.options]",
                f"  Root = {q(self.runc_root)}",
                f"{cri}.cni]",
                '  bin_dir = "/usr/lib/cni"',
                f"  conf_dir = {q(self.cni_conf_dir)}",
                "",
            ]
        )

    def _log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no containerd.log)"

    def _wait_for_cri(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error = "socket never appeared"
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise LocalNodeError(
                    f"containerd exited with {self._process.returncode} while starting; "
                    f"{self.log_path}:\n{self._log_tail()}"
                )
            if self.socket.exists():
                try:
                    self.runtime.Version(api_pb2.VersionRequest(version="v1"), timeout=1.0)
                except grpc.RpcError as exc:
                    last_error = f"{exc.code()}: {exc.details()}"
                else:
                    return
            time.sleep(0.02)
        raise LocalNodeError(
            f"containerd did not answer CRI Version within {timeout:.0f}s ({last_error}); "
            f"{self.log_path}:\n{self._log_tail()}"
        )

    def running(self) -> bool:
        """Whether this node's containerd process is alive."""
        return bool(self._containerd_pids())

    def _containerd_pids(self) -> list[int]:
        """This node's containerd processes: the recorded pid and any naming our config."""
        config = str(self.config_path)
        pids = {
            pid
            for pid in _all_pids()
            if (args := _cmdline(pid)) and Path(args[0]).name == "containerd" and config in args
        }
        if self._process is not None and self._process.poll() is None:
            pids.add(self._process.pid)
        return sorted(pid for pid in pids if _alive(pid))

    def _shim_pids(self) -> list[int]:
        """``containerd-shim-runc-v2`` processes whose command line names this node."""
        marks = (str(self.socket), str(self.workdir) + os.sep)
        return [
            pid
            for pid in _all_pids()
            if (args := _cmdline(pid))
            and Path(args[0]).name == _SHIM_NAME
            and any(mark in arg for arg in args[1:] for mark in marks)
            and _alive(pid)
        ]

    def stop(self) -> None:
        """Tear the node down completely; safe to call more than once.

        Stops and removes every sandbox through CRI (errors ignored), SIGTERMs containerd
        (SIGKILL after 10 s), SIGKILLs the shims naming this node's socket and their
        container processes, lazily unmounts everything under :attr:`workdir` (deepest first)
        and removes the directory.
        """
        if self.running() and self.socket.exists():
            try:
                sandbox_ids = self.list_sandboxes()
            except grpc.RpcError:
                sandbox_ids = []
            self._remove_sandboxes(sandbox_ids, ignore_errors=True)
        self._close_channel()

        pids = self._containerd_pids()
        leftovers = _kill_and_wait(pids, signal.SIGTERM, 10.0)
        _kill_and_wait(leftovers, signal.SIGKILL, 5.0)
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(timeout=5.0)
            self._process = None

        shims = self._shim_pids()
        shim_sockets = [self._shim_socket(pid) for pid in shims]
        for shim in shims:
            _kill_and_wait(_descendants(shim), signal.SIGKILL, 5.0)
        _kill_and_wait(shims, signal.SIGKILL, 5.0)
        for shim_socket in shim_sockets:
            if shim_socket is not None:
                with contextlib.suppress(OSError):
                    shim_socket.unlink()

        _remove_cgroup_tree(self.cgroup_parent)
        if self._made_run_dir:  # only when no other runtime had /run/containerd before us
            for directory in (_SHIM_SOCKET_DIR, _SHIM_SOCKET_DIR.parent):
                with contextlib.suppress(OSError):
                    directory.rmdir()

        for _ in range(5):
            mounts = _mounts_under(self.workdir)
            if not mounts:
                break
            for mount_point in mounts:
                _umount_lazy(mount_point)
        if self.workdir.exists():
            shutil.rmtree(self.workdir, ignore_errors=True)
        if self.workdir.exists():
            raise LocalNodeError(f"could not remove {self.workdir}")
        self.pid = None

    def _shim_socket(self, pid: int) -> Path | None:
        """The socket a shim serves on: ``/run/containerd/s/sha256(address/ns/id)``."""
        args = _cmdline(pid)
        options = dict(zip(args[1::2], args[2::2], strict=False))
        if not {"-namespace", "-id", "-address"} <= options.keys():
            return None
        name = os.path.join(options["-address"], options["-namespace"], options["-id"])
        return _SHIM_SOCKET_DIR / hashlib.sha256(name.encode()).hexdigest()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def describe(self) -> dict[str, Any]:
        """What ``node.json`` holds: the containerd pid, the endpoint and the paths."""
        return {
            "pid": self.pid,
            "workdir": str(self.workdir),
            "endpoint": self.endpoint,
            "socket": str(self.socket),
            "kubelet_config": str(self.kubelet_config),
            "pod_logs_dir": str(self.pod_logs_dir),
            "container_logs_dir": str(self.container_logs_dir),
            "snapshotter": self.snapshotter,
            "cgroup_parent": self.cgroup_parent,
            "made_run_dir": self._made_run_dir,
            "containerd_log": str(self.log_path),
        }

    # -- images -------------------------------------------------------------------------------

    def _import(self, builds: Sequence[_ImageBuild], *, pullable: bool = True) -> list[str]:
        archive = self.workdir / f"import-{uuid.uuid4().hex[:12]}.tar"
        try:
            _write_oci_archive(archive, builds, pullable=pullable)
            ctr = shutil.which("ctr") or "ctr"
            command = [ctr, "-a", str(self.socket), "-n", CRI_NAMESPACE, "images", "import"]
            command += ["--snapshotter", self.snapshotter, str(archive)]
            result = subprocess.run(command, capture_output=True, text=True, check=False)
            if result.returncode != 0:
                raise LocalNodeError(f"{' '.join(command)} failed: {result.stderr.strip()}")
        finally:
            archive.unlink(missing_ok=True)
        return [self._wait_for_image(build.ref, digest=pullable) for build in builds]

    def _wait_for_image(self, ref: str, timeout: float = 10.0, *, digest: bool = False) -> str:
        """Wait until CRI knows ``ref`` — and, with ``digest``, its name by digest too (CRI's
        image cache follows containerd's events, one per name: the digest's may come later)."""
        deadline = time.monotonic() + timeout
        while True:
            status = self.images.ImageStatus(
                api_pb2.ImageStatusRequest(image=api_pb2.ImageSpec(image=ref)),
                timeout=_RPC_TIMEOUT,
            )
            if status.image.id and (not digest or status.image.repo_digests):
                return str(status.image.id)
            if time.monotonic() > deadline:
                raise LocalNodeError(f"CRI does not list the imported image {ref}")
            time.sleep(0.02)

    def import_image(
        self, ref: str, *, pad_bytes: int = 0, seed: str = "", pullable: bool = True
    ) -> str:
        """Build an image from busybox and import it as ``ref``; return its CRI image id.

        ``pad_bytes`` adds an uncompressed layer of that many bytes, so the image size is about
        ``pad_bytes`` plus ~1 MiB. Without a ``seed`` every call gives a new image id; with one,
        the same ``seed`` and ``pad_bytes`` give the same id (another tag of one image).
        ``pullable`` (the default) names it by its digest too, as a pulled image is; without,
        it has no repo digest, as an image loaded from a tarball.
        """
        build = _build_image(
            ref, cmd=["/bin/sh"], pad_bytes=pad_bytes, seed=seed or uuid.uuid4().hex
        )
        return self._import([build], pullable=pullable)[0]

    def list_images(self) -> list[api_pb2.Image]:
        """The images CRI lists."""
        return list(
            self.images.ListImages(api_pb2.ListImagesRequest(), timeout=_RPC_TIMEOUT).images
        )

    # -- pods and containers ------------------------------------------------------------------

    def run_pod(
        self,
        name: str,
        namespace: str = "default",
        uid: str | None = None,
        attempt: int = 0,
        labels: Mapping[str, str] | None = None,
    ) -> Pod:
        """Run a host-network pod sandbox labelled like the kubelet does: the pod's `labels`
        and the kubelet's own io.kubernetes.pod.name/namespace/uid."""
        uid = uid or str(uuid.uuid4())
        log_directory = self.pod_logs_dir / f"{namespace}_{name}_{uid}"
        log_directory.mkdir(parents=True, exist_ok=True)
        labels = {
            **(labels or {}),
            LABEL_POD_NAME: name,
            LABEL_POD_NAMESPACE: namespace,
            LABEL_POD_UID: uid,
        }
        config = api_pb2.PodSandboxConfig(
            metadata=api_pb2.PodSandboxMetadata(
                name=name, uid=uid, namespace=namespace, attempt=attempt
            ),
            log_directory=str(log_directory),
            labels=labels,
            annotations={"kubernetes.io/config.source": "api"},
            linux=api_pb2.LinuxPodSandboxConfig(
                cgroup_parent=f"{self.cgroup_parent}/pod{uid}",
                security_context=api_pb2.LinuxSandboxSecurityContext(
                    namespace_options=api_pb2.NamespaceOption(network=api_pb2.NODE)
                ),
            ),
        )
        response = self.runtime.RunPodSandbox(
            api_pb2.RunPodSandboxRequest(config=config), timeout=_RPC_TIMEOUT
        )
        return Pod(response.pod_sandbox_id, name, namespace, uid, config, log_directory)

    def add_container(
        self,
        pod: Pod,
        name: str,
        *,
        attempt: int = 0,
        state: ContainerState = "exited",
        exit_code: int = 3,
        image: str = BUSYBOX_IMAGE,
        symlink: bool = True,
        command: Sequence[str] | None = None,
    ) -> str:
        """Create a container in ``pod`` and leave it ``exited``, ``running`` or ``created``.

        ``exited`` runs ``echo kubegc-test-log; exit <exit_code>`` and waits for CONTAINER_EXITED,
        ``running`` runs ``sleep 3600`` and waits for CONTAINER_RUNNING, ``created`` is never
        started; ``command`` replaces that command (it must end the way ``state`` says). The
        log goes to ``<pod.log_directory>/<name>/<attempt>.log``; with ``symlink`` the
        kubelet's legacy symlink is made in :attr:`container_logs_dir`. Returns the id.
        """
        if state == "exited":
            argv = ["/bin/sh", "-c", f"echo {TEST_LOG_LINE}; exit {exit_code}"]
        elif state in ("running", "created"):
            argv = ["/bin/sleep", "3600"]
        else:
            raise ValueError(f"unknown container state {state!r}")
        if command is not None:
            argv = list(command)
        (pod.log_directory / name).mkdir(parents=True, exist_ok=True)
        config = api_pb2.ContainerConfig(
            metadata=api_pb2.ContainerMetadata(name=name, attempt=attempt),
            image=api_pb2.ImageSpec(image=image),
            command=argv,
            labels={
                LABEL_CONTAINER_NAME: name,
                LABEL_POD_NAME: pod.name,
                LABEL_POD_NAMESPACE: pod.namespace,
                LABEL_POD_UID: pod.uid,
            },
            annotations={
                ANNOTATION_RESTART_COUNT: str(attempt),
                "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
            },
            log_path=f"{name}/{attempt}.log",
        )
        container_id = str(
            self.runtime.CreateContainer(
                api_pb2.CreateContainerRequest(
                    pod_sandbox_id=pod.sandbox_id, config=config, sandbox_config=pod.config
                ),
                timeout=_RPC_TIMEOUT,
            ).container_id
        )
        pod.container_ids.append(container_id)
        if symlink:
            link = self.container_logs_dir / _legacy_symlink_name(
                pod.name, pod.namespace, name, container_id
            )
            link.symlink_to(pod.log_directory / name / f"{attempt}.log")
        if state != "created":
            self.runtime.StartContainer(
                api_pb2.StartContainerRequest(container_id=container_id), timeout=_RPC_TIMEOUT
            )
            wanted = api_pb2.CONTAINER_EXITED if state == "exited" else api_pb2.CONTAINER_RUNNING
            self._wait_for_state(container_id, wanted, timeout=10.0)
        return container_id

    def container_status(self, container_id: str) -> api_pb2.ContainerStatus:
        """CRI ``ContainerStatus`` of one container."""
        status: api_pb2.ContainerStatus = self.runtime.ContainerStatus(
            api_pb2.ContainerStatusRequest(container_id=container_id), timeout=_RPC_TIMEOUT
        ).status
        return status

    def _wait_for_state(self, container_id: str, wanted: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        pause = 0.005
        while True:
            status = self.container_status(container_id)
            if status.state == wanted:
                return
            if time.monotonic() > deadline:
                raise LocalNodeError(
                    f"container {container_id} is {api_pb2.ContainerState.Name(status.state)}, "
                    f"not {api_pb2.ContainerState.Name(wanted)}, after {timeout:.0f}s "
                    f"(reason {status.reason!r}, message {status.message!r})"
                )
            time.sleep(pause)
            pause = min(pause * 1.5, 0.05)

    def stop_pod(self, pod: Pod) -> None:
        """StopPodSandbox: the sandbox becomes NOTREADY; its containers stay listed, exited."""
        self.runtime.StopPodSandbox(
            api_pb2.StopPodSandboxRequest(pod_sandbox_id=pod.sandbox_id), timeout=_RPC_TIMEOUT
        )

    def remove_pod(self, pod: Pod) -> None:
        """Stop and remove the sandbox and (through the runtime) all its containers."""
        self._remove_sandboxes([pod.sandbox_id])

    def _remove_sandboxes(self, sandbox_ids: Iterable[str], *, ignore_errors: bool = False) -> None:
        for sandbox_id in sandbox_ids:
            try:
                self.runtime.StopPodSandbox(
                    api_pb2.StopPodSandboxRequest(pod_sandbox_id=sandbox_id), timeout=_RPC_TIMEOUT
                )
                self.runtime.RemovePodSandbox(
                    api_pb2.RemovePodSandboxRequest(pod_sandbox_id=sandbox_id),
                    timeout=_RPC_TIMEOUT,
                )
            except grpc.RpcError:
                if not ignore_errors:
                    raise

    def remove_namespace(self, namespace: str, *, logs: bool = True) -> None:
        """Remove every sandbox of pods in ``namespace``; with ``logs`` also their log files.

        Removes ``<podLogsDir>/<namespace>_*`` and the legacy symlinks of that namespace, as the
        kubelet does once a pod is gone.
        """
        self._remove_sandboxes(self.list_sandboxes(labels={LABEL_POD_NAMESPACE: namespace}))
        if not logs:
            return
        for directory in self.pod_logs_dir.glob(f"{namespace}_*"):
            shutil.rmtree(directory, ignore_errors=True)
        for link in self.container_logs_dir.glob(f"*_{namespace}_*"):
            if link.name.split("_")[1] == namespace:
                link.unlink(missing_ok=True)

    def list_sandboxes(self, *, labels: Mapping[str, str] | None = None) -> list[str]:
        """Ids of the pod sandboxes CRI lists (optionally only those with ``labels``)."""
        request = api_pb2.ListPodSandboxRequest(
            filter=api_pb2.PodSandboxFilter(label_selector=dict(labels or {}))
        )
        return [
            item.id for item in self.runtime.ListPodSandbox(request, timeout=_RPC_TIMEOUT).items
        ]

    def list_containers(
        self,
        *,
        pod: Pod | None = None,
        state: int | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> list[api_pb2.Container]:
        """The raw CRI ``ListContainers`` answer, optionally filtered."""
        container_filter = api_pb2.ContainerFilter(label_selector=dict(labels or {}))
        if pod is not None:
            container_filter.pod_sandbox_id = pod.sandbox_id
        if state is not None:
            container_filter.state.state = state  # type: ignore[assignment]
        request = api_pb2.ListContainersRequest(filter=container_filter)
        return list(self.runtime.ListContainers(request, timeout=_RPC_TIMEOUT).containers)

    def container_ids(
        self,
        *,
        pod: Pod | None = None,
        state: int | None = None,
        namespace: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> set[str]:
        """Ids of the containers the runtime lists, filtered like :meth:`list_containers`.

        ``namespace`` is a shorthand for the ``io.kubernetes.pod.namespace`` label; ``state`` is
        an ``api_pb2.CONTAINER_*`` value.
        """
        selector = dict(labels or {})
        if namespace is not None:
            selector[LABEL_POD_NAMESPACE] = namespace
        return {c.id for c in self.list_containers(pod=pod, state=state, labels=selector)}


# ---------------------------------------------------------------------------------------------
# A realistic messy node
# ---------------------------------------------------------------------------------------------


@dataclass
class _DemoPod:
    namespace: str
    name: str
    app: str
    crashing: str
    crash_attempts: int
    init: str
    created: str | None = None


_DEMO_PODS = (
    _DemoPod(
        "shop",
        "frontend-7c9d8b6f4-x2vqk",
        "nginx",
        "metrics-agent",
        6,
        "wait-for-db",
        created="log-shipper",
    ),
    _DemoPod("shop", "cart-5f7b9c8d6-9hq2m", "cart", "cache-warmer", 4, "migrate"),
    _DemoPod("batch", "report-28391040-7kxzt", "report", "uploader", 3, "fetch-input"),
    _DemoPod("batch", "indexer-0", "indexer", "compactor", 2, "init-perms"),
)


@dataclass
class DemoNode:
    """What :func:`populate_demo` made: the live pods and the one the API server forgot."""

    pods: list[Pod]
    """Pods the pods file lists (their sandboxes are READY)."""
    gone: Pod
    """``gone-pod``: its sandbox is stopped and its uid is in no pods file."""
    containers: dict[str, list[str]] = field(default_factory=dict)
    """Pod uid -> regular container names (init containers are in ``init_containers``)."""
    init_containers: dict[str, list[str]] = field(default_factory=dict)
    """Pod uid -> init container names."""

    def pod_list(self) -> dict[str, Any]:
        """A ``kubectl get pods -o json`` style PodList of :attr:`pods` (``gone`` left out)."""
        return pod_list(self.pods, self.containers, self.init_containers)


def pod_list(
    pods: Iterable[Pod],
    containers: Mapping[str, Sequence[str]] | None = None,
    init_containers: Mapping[str, Sequence[str]] | None = None,
) -> dict[str, Any]:
    """A ``kubectl get pods -o json`` style List of Running ``pods``."""

    def spec_containers(names: Sequence[str]) -> list[dict[str, str]]:
        return [{"name": name, "image": BUSYBOX_IMAGE} for name in names]

    items = []
    for pod in pods:
        spec: dict[str, Any] = {
            "nodeName": platform.node(),
            "containers": spec_containers((containers or {}).get(pod.uid, [])),
        }
        if init_names := (init_containers or {}).get(pod.uid):
            spec["initContainers"] = spec_containers(init_names)
        items.append(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
                "spec": spec,
                "status": {"phase": "Running"},
            }
        )
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": items}


def populate_demo(node: LocalNode) -> DemoNode:
    """Make a realistic messy node: 4 live pods in ``shop`` and ``batch`` plus ``gone-pod``.

    Each live pod has its app container running, a crash-looping container with several exited
    attempts (6, 4, 3 and 2), an init container with exited attempts 0 and 1; one pod also has
    a CREATED container that never started. ``gone-pod`` (namespace ``shop``) has an exited init
    and app container and a stopped sandbox, and must stay out of any pods file. 26 dead
    containers in all. Pods are filled in parallel; attempts of one container are made in order.
    """

    def fill(spec: _DemoPod) -> tuple[Pod, list[str], list[str]]:
        pod = node.run_pod(spec.name, spec.namespace)
        for attempt in range(2):
            node.add_container(pod, spec.init, attempt=attempt, exit_code=1 - attempt)
        node.add_container(pod, spec.app, state="running")
        for attempt in range(spec.crash_attempts):
            node.add_container(pod, spec.crashing, attempt=attempt, exit_code=2)
        names = [spec.app, spec.crashing]
        if spec.created:
            node.add_container(pod, spec.created, state="created")
            names.append(spec.created)
        return pod, names, [spec.init]

    def fill_gone() -> Pod:
        pod = node.run_pod("gone-pod", "shop")
        node.add_container(pod, "setup", exit_code=0)
        node.add_container(pod, "app", exit_code=137)
        node.stop_pod(pod)
        return pod

    with ThreadPoolExecutor(max_workers=len(_DEMO_PODS) + 1) as pool:
        filled = [pool.submit(fill, spec) for spec in _DEMO_PODS]
        gone_future = pool.submit(fill_gone)
        demo = DemoNode(pods=[], gone=gone_future.result())
        for future in filled:
            pod, names, init_names = future.result()
            demo.pods.append(pod)
            demo.containers[pod.uid] = names
            demo.init_containers[pod.uid] = init_names
    return demo


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------


def _foreign(workdir: Path) -> str:
    """Why ``workdir`` is not a directory this tool may fill or remove ("" when it may): it
    must be absent, empty, or hold a node's own files (its ``config.toml``, ``node.json``), and
    be this user's alone: not a symbolic link, owned by this user, not writable by group or
    others (its files — the pods file, kubegc's state dir — must not be another user's to
    plant or swap)."""
    try:
        st = workdir.lstat()
    except FileNotFoundError:
        return ""
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        return (
            f"another user can change it (owner uid {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):04o})"
        )
    node = LocalNode(workdir)
    if node.config_path.exists() or node.node_json.exists() or not any(workdir.iterdir()):
        return ""
    return "it holds files that are not a node's"


def _made_safely(workdir: Path) -> str:
    """Make ``workdir`` (0700) as kubegc makes its state dir, or check the one there, and say
    why it may not be used ("" when it may): a link another user owns on the way, a directory
    above it another user can change, or one they made at its name between the look and the
    making (the check after the making sees it; once this user's directory stands in a
    sticky /tmp, nobody else can swap it)."""
    from kubegc_cli.core.errors import BadInput
    from kubegc_cli.node.state import StateUnavailable, safe_dir

    try:
        safe_dir(workdir, "the node directory", create=True)
    except (BadInput, StateUnavailable) as exc:
        return str(exc)
    return ""


def _cmd_up(args: argparse.Namespace) -> int:
    node = LocalNode(Path(args.dir))
    if node.running():
        print(f"a node already runs in {node.workdir}", file=sys.stderr)
        return 1
    why = _foreign(node.workdir)
    if not why:
        why = _made_safely(node.workdir)
    if why:
        print(f"not starting a node in {node.workdir}: {why}", file=sys.stderr)
        return 1
    node.start()
    try:
        timings = dict(node.timings)
        if args.populate or args.pods_file:
            began = time.monotonic()
            demo = populate_demo(node)
            timings["populate_demo"] = time.monotonic() - began
            if args.pods_file:
                Path(args.pods_file).write_text(json.dumps(demo.pod_list(), indent=2) + "\n")
        node.node_json.write_text(json.dumps(node.describe(), indent=2) + "\n")
    except BaseException:
        node.stop()
        raise
    # containerd must outlive this process: forget the Popen so nothing waits for or kills it.
    node._process = None
    node._close_channel()
    summary = ", ".join(f"{key} {value:.2f}s" for key, value in timings.items())
    print(f"node up: {node.endpoint} (containerd pid {node.pid}; {summary})", file=sys.stderr)
    print(f"export CONTAINER_RUNTIME_ENDPOINT={node.endpoint}")
    return 0


def _cmd_down(args: argparse.Namespace) -> int:
    why = _foreign(Path(args.dir))
    if why:  # never remove what this tool did not make
        print(f"not removing {Path(args.dir).absolute()}: {why}", file=sys.stderr)
        return 1
    LocalNode.attach(Path(args.dir)).stop()
    print(f"node down: nothing left of {Path(args.dir).absolute()}", file=sys.stderr)
    return 0


def _cmd_env(args: argparse.Namespace) -> int:
    node = LocalNode.attach(Path(args.dir))
    print(f"export CONTAINER_RUNTIME_ENDPOINT={node.endpoint}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m tests.node.localnode {up,down,env} DIR``."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.node.localnode",
        description="Start, describe and tear down a throwaway local CRI node (root only).",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    up = commands.add_parser("up", help="start a node in DIR that keeps running")
    up.add_argument("dir")
    up.add_argument("--populate", action="store_true", help="add the demo pods and containers")
    up.add_argument(
        "--pods-file",
        help="write a PodList JSON of the demo pods, gone-pod left out (implies --populate)",
    )
    up.set_defaults(run=_cmd_up)
    down = commands.add_parser("down", help="tear the node in DIR down and remove DIR")
    down.add_argument("dir")
    down.set_defaults(run=_cmd_down)
    env = commands.add_parser("env", help="print shell exports for the node in DIR")
    env.add_argument("dir")
    env.set_defaults(run=_cmd_env)
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] = args.run
    try:
        return run(args)
    except LocalNodeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
