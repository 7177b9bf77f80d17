"""`evict check` reads the kubelet's effective configuration from its `/configz` through the
real API server's node proxy (`nodes/proxy`), and falls back to the kubelet's files on a 403.

No kubelet runs here: a stand-in HTTPS server answers `/configz` with the shape the kubelet
serves (`{"kubeletconfig": {...}}`) at the address and port a Node object names, and the real
kube-apiserver proxies to it as it proxies to a kubelet (it refuses loopback addresses, so the
stand-in listens on the host's first non-loopback IPv4 address).
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane import ControlPlane
from tests.unit.test_evict_check import by_signal, v1_node

CONFIGZ = {"kubeletconfig": {
    "evictionHard": {"memory.available": "950Mi", "nodefs.available": "10%"},
    "evictionPressureTransitionPeriod": "5m0s",
    "enforceNodeAllocatable": ["pods"],
}}  # fmt: skip


def _host_ip() -> str | None:
    """The host's first non-loopback IPv4 address (the API server does not proxy to
    loopback), or None."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("192.0.2.1", 9))  # no packet is sent for a UDP connect
            ip = s.getsockname()[0]
    except OSError:
        return None
    return None if ip.startswith("127.") else str(ip)


class _Configz(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps(CONFIGZ).encode() if self.path == "/configz" else b"{}"
        self.send_response(200 if self.path == "/configz" else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def kubelet(tmp_path: Path, admin: Any, node_name: str) -> Iterator[str]:
    """A stand-in kubelet serving /configz over TLS, and a Node `node_name` that points the
    API server's node proxy at it. Yields the node name."""
    from kubernetes import client

    ip = _host_ip()
    if ip is None:
        pytest.skip("no non-loopback IPv4 address for the stand-in kubelet")
    cert, key = tmp_path / "kubelet.crt", tmp_path / "kubelet.key"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=kubelet", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    server = ThreadingHTTPServer((ip, 0), _Configz)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    core = client.CoreV1Api(admin)
    core.create_node({"metadata": {"name": node_name}})
    core.patch_node_status(node_name, {"status": {
        "addresses": [{"type": "InternalIP", "address": ip}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": server.server_address[1]}},
    }})  # fmt: skip
    try:
        yield node_name
    finally:
        server.shutdown()
        core.delete_node(node_name)


def _check(
    root: Path, kubeconfig: Path, node: str, pod_source: str = "api"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), "-v",
         "-r", "unix:///nonexistent/kubegc-test.sock", "--kubeconfig", str(kubeconfig),
         "--node-name", node, "--pod-source", pod_source, "--kubelet-configz",
         "evict", "check", "--root-dir", "/var/lib/kubelet", "-o", "json"],
        capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": "/"},
    )  # fmt: skip


def test_configz_through_the_node_proxy_is_preferred_over_the_files(
    control_plane: ControlPlane, kubelet: str, tmp_path: Path
) -> None:
    root = tmp_path / "host"
    v1_node(root, available_mib=900)
    config = root / "var/lib/kubelet/config.yaml"
    config.write_text("kind: KubeletConfiguration\nevictionHard:\n  memory.available: 10Mi\n")
    res = _check(root, control_plane.kubeconfig("admin"), kubelet)
    doc = json.loads(res.stdout)
    rows = by_signal(doc)
    source = f"kubelet /configz of node {kubelet} (nodes/proxy): evictionHard"
    assert rows["memory.available"]["threshold"] == "950Mi", res.stderr
    assert rows["memory.available"]["source"] == source
    assert rows["memory.available"]["met"] is True and res.returncode == 5
    assert set(rows) == {"memory.available", "allocatableMemory.available", "nodefs.available",
                         "containerfs.available"}  # fmt: skip
    assert f"kubelet config: kubelet /configz of node {kubelet}" in res.stderr


def test_a_403_on_nodes_proxy_falls_back_to_the_files(
    control_plane: ControlPlane, deployed: list[str], kubelet: str, tmp_path: Path
) -> None:
    """kubegc's own RBAC (deploy/kubernetes/rbac.yaml) grants no nodes/proxy: refused, and
    the kubelet's config file is read instead (no pod source: the agent may not list pods
    through the API either)."""
    root = tmp_path / "host"
    v1_node(root, available_mib=900)
    config = root / "var/lib/kubelet/config.yaml"
    config.write_text("kind: KubeletConfiguration\nevictionHard:\n  memory.available: 10Mi\n")
    agent = control_plane.kubeconfig("kubegc-agent", tmp_path / "kubegc-agent")
    res = _check(root, agent, kubelet, pod_source="none")
    doc = json.loads(res.stdout)
    rows = by_signal(doc)
    assert rows["memory.available"]["threshold"] == "10Mi", res.stderr
    assert rows["memory.available"]["source"] == f"{config}: evictionHard"
    assert "403 Forbidden: reading it needs get on nodes/proxy" in res.stderr
    assert res.returncode == 0
