"""Finding the CRI runtime's socket the way crictl does.

Order (the first that gives an answer wins; `Endpoint.source` says which):

1. `--runtime-endpoint` / `-r`
2. the `CONTAINER_RUNTIME_ENDPOINT` environment variable
3. `runtime-endpoint` in `/etc/crictl.yaml` (crictl's config file), read under `--host-root`
4. the first of the well-known sockets that exists under `--host-root`: containerd, CRI-O,
   cri-dockerd, k3s/rke2's containerd, microk8s's containerd

Values from 1–2 are used as given; values from 3–4 are host paths and are looked up under
`--host-root` (so the same command works inside a DaemonSet pod with the host at `/host`).
The `unix://` prefix is optional everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.core.inputs import parse_yaml, present, read_text
from kubegc_cli.node.host.logs import on_host

ENV_VAR = "CONTAINER_RUNTIME_ENDPOINT"
UNIX_PATH_MAX = 107  # sun_path is 108 bytes with the terminating NUL
CRICTL_CONFIG = "/etc/crictl.yaml"
KNOWN_SOCKETS: tuple[str, ...] = (
    "/run/containerd/containerd.sock",
    "/run/crio/crio.sock",
    "/var/run/cri-dockerd.sock",
    "/run/k3s/containerd/containerd.sock",
    "/var/snap/microk8s/common/run/containerd.sock",
)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A resolved runtime endpoint.

    `path` is the socket path on this machine (under the host root where that applies),
    `address` the gRPC target (`unix:///...`), `source` where it came from, and `tried` the
    candidates looked at before it (for messages).
    """

    path: str
    source: str
    tried: tuple[str, ...] = field(default=())

    @property
    def address(self) -> str:
        return "unix://" + self.path

    @property
    def display(self) -> str:
        return "unix://" + self.path


def socket_path(value: str, *, what: str) -> str:
    """`unix:///x`, `unix://x` or `/x` → the socket path. Raises `BadInput` for other schemes."""
    v = value.strip()
    if v.startswith("unix://"):
        v = v[len("unix://") :]
    elif "://" in v:
        scheme = v.split("://", 1)[0]
        raise BadInput(f"{what} {value!r}: unsupported scheme {scheme!r} (use unix:///path)")
    if not v:
        raise BadInput(f"{what} {value!r}: empty socket path")
    if len(v.encode()) > UNIX_PATH_MAX:
        raise BadInput(
            f"{what} {value!r}: longer than a unix socket path can be ({UNIX_PATH_MAX} bytes)"
        )
    return v


def under_root(host_root: Path, host_path: str) -> str:
    """A host absolute path as seen from here, under `host_root` (`..` never leaves it):
    `kubegc_cli.node.host.logs.on_host`."""

    return on_host(host_root, host_path)


def _from_crictl_yaml(host_root: Path) -> str | None:
    path = Path(under_root(host_root, CRICTL_CONFIG))
    if not present(path):
        return None
    doc = parse_yaml(read_text(path, "crictl config"), path, "crictl config")
    if doc is None:
        return None
    if not isinstance(doc, dict):
        raise BadInput(f"crictl config {path}: expected a mapping with runtime-endpoint")
    value = doc.get("runtime-endpoint")
    if value is not None and not isinstance(value, str):
        raise BadInput(f"crictl config {path}: runtime-endpoint {value!r} is not a string")
    return value or None


def resolve_endpoint(
    flag: str | None,
    env: Mapping[str, str],
    host_root: Path,
    flag_source: str = "--runtime-endpoint",
) -> Endpoint:
    """Pick the runtime endpoint (see the module docstring for the order). `flag_source` names
    where `flag` was given (the option, or a config file's key) in errors.

    Raises `BadInput` for a malformed value and `RuntimeUnavailable` when nothing is given and
    none of the well-known sockets exists (the message lists what was tried).
    """
    if flag:
        return Endpoint(socket_path(flag, what=flag_source), flag_source)
    if env.get(ENV_VAR):
        return Endpoint(socket_path(env[ENV_VAR], what=ENV_VAR), ENV_VAR)
    from_cfg = _from_crictl_yaml(host_root)
    if from_cfg:
        path = under_root(
            host_root, socket_path(from_cfg, what=f"{CRICTL_CONFIG} runtime-endpoint")
        )
        return Endpoint(path, CRICTL_CONFIG)
    tried = []
    for sock in KNOWN_SOCKETS:
        path = under_root(host_root, sock)
        tried.append(path)
        if present(path):
            return Endpoint(path, "well-known socket", tuple(tried))
    raise RuntimeUnavailable(
        "no CRI runtime socket found: no -r/--runtime-endpoint, no CONTAINER_RUNTIME_ENDPOINT, "
        f"no runtime-endpoint in {under_root(host_root, CRICTL_CONFIG)}, and none of "
        + ", ".join(tried)
        + " exists"
    )
