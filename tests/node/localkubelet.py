"""A real kubelet on loopback for the node tests, as harmless to a shared machine as it can be.

`LocalKubelet.start(bin_dir, work, control_plane, node, name)` runs the kubelet built by
`scripts/build-control-plane` (pinned with the control plane in tools/k8s/go.mod):

- against `node`, a `LocalNode`'s containerd of its own: the kubelet stops and removes what
  runs in its runtime without a pod behind it, so it never talks to a containerd other
  tests use;
- registered as Node `name` with the control plane, as the user `system:node:<name>` (group
  `system:nodes`; the caller binds the ClusterRole `system:node` to it);
- serving https://127.0.0.1:<port> with the certificate a kubelet makes for itself when it is
  given none (`<cert-dir>/kubelet.crt`: valid for its hostname, `name`, and no IP address,
  signed by a CA of its own that follows it in the file), and checking every caller through
  the API server (webhook authentication: TokenReview; webhook authorization:
  SubjectAccessReview), as a kubelet in a cluster does;
- with its own --root-dir and volume plugin directory under `work`, the pods' logs under the
  node's directory, no read-only port, no healthz port, no eviction, no image GC, no QoS
  cgroups or node allocatable enforcement, no iptables chains;
- in a mount namespace of its own in which the six kernel settings the kubelet otherwise
  rewrites (vm.overcommit_memory, kernel.panic_on_oops, ...) read as the values it wants,
  with `protectKernelDefaults: true`: it changes no sysctl of the machine, and refuses to start
  rather than change one if those files could not be masked; and in which /var/lib is an empty
  tmpfs, for the one directory it writes at a fixed path (/var/lib/kubelet/device-plugins).

The process gets SIGKILL when the Python process that started it dies (PDEATHSIG), as the
control plane's do; `stop()` ends it (SIGTERM, then SIGKILL after 10 s).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import shlex
import socket
import ssl
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.controlplane import DIE_WITH_PARENT, ControlPlane, end_process, free_port
from tests.node.localnode import LocalNode

KUBELET = "kubelet"

# The sysctls the kubelet's container manager sets (pkg/kubelet/cm setupKernelTunables) and
# the values it wants; masked in its mount namespace so that it finds them already set.
KERNEL_TUNABLES = {
    "vm/overcommit_memory": 1,
    "vm/panic_on_oom": 0,
    "kernel/panic": 10,
    "kernel/panic_on_oops": 1,
    "kernel/keys/root_maxkeys": 1000000,
    "kernel/keys/root_maxbytes": 25000000,
}


# Paths the kubelet uses whatever its --root-dir: kept in its namespace or its work dir.
FIXED_PATHS = ("/var/lib/kubelet", "/usr/libexec/kubernetes")


def machine_state() -> dict[str, str | bool]:
    """The sysctls of KERNEL_TUNABLES and whether each of FIXED_PATHS exists."""
    state: dict[str, str | bool] = {
        key: Path("/proc/sys", key).read_text().strip() for key in KERNEL_TUNABLES
    }
    state.update({path: Path(path).exists() for path in FIXED_PATHS})
    return state


@dataclass
class LocalKubelet:
    """A running kubelet; see the module doc."""

    work: Path
    name: str
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None
    timings: dict[str, float] = field(default_factory=dict)
    # the machine as it was before the start: KERNEL_TUNABLES' values, and whether each of
    # FIXED_PATHS existed
    before: dict[str, str | bool] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def ca(self) -> Path:
        """The kubelet's self-signed serving certificate and its CA, as it wrote them."""
        return self.work / "pki" / "kubelet.crt"

    @property
    def flags(self) -> list[str]:
        """kubegc's options reaching this kubelet: its URL, its certificate as the CA, and the
        name that certificate is valid for."""
        return ["--kubelet-url", self.url, "--kubelet-ca", str(self.ca),
                "--kubelet-server-name", self.name]  # fmt: skip

    @property
    def log_path(self) -> Path:
        return self.work / "kubelet.log"

    @classmethod
    def start(
        cls,
        bin_dir: Path,
        work: Path,
        cp: ControlPlane,
        node: LocalNode,
        name: str,
        *,
        identity: str = "kubelet",
        timeout: float = 120,
    ) -> LocalKubelet:
        """Start it and wait until its /healthz answers the admin 200 (through the API
        server's TokenReview and SubjectAccessReview). Raises `RuntimeError` with the tail of
        its log when it exits or is not healthy within `timeout` seconds."""
        kl = cls(work=work, name=name)
        try:
            kl._start(bin_dir, cp, node, identity, timeout)
        except BaseException:
            kl.stop()
            raise
        return kl

    def _certs(self, cp: ControlPlane) -> None:
        """The CA the kubelet checks client certificates against (the control plane's)."""
        (self.work / "ca.crt").write_bytes((cp.work / "ca.crt").read_bytes())

    def _config(self, node: LocalNode) -> str:
        doc = {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": "127.0.0.1",
            "port": self.port,
            "readOnlyPort": 0,
            "healthzPort": 0,
            "serverTLSBootstrap": False,
            "rotateCertificates": False,
            "authentication": {
                "anonymous": {"enabled": False},
                "webhook": {"enabled": True, "cacheTTL": "1s"},
                "x509": {"clientCAFile": str(self.work / "ca.crt")},
            },
            "authorization": {
                "mode": "Webhook",
                # 0s would mean the defaults (2m, 5m, 30s): each caller's grant is asked
                # again after a second, so a test can change it
                "webhook": {"cacheAuthorizedTTL": "1s", "cacheUnauthorizedTTL": "1s"},
            },
            "containerRuntimeEndpoint": node.endpoint,
            "podLogsDir": str(node.pod_logs_dir),
            "volumePluginDir": str(self.work / "volume-plugins"),
            "cgroupDriver": "cgroupfs",
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": [],
            "failSwapOn": False,
            "failCgroupV1": False,
            "protectKernelDefaults": True,
            "makeIPTablesUtilChains": False,
            "oomScoreAdj": 0,
            "evictionHard": {},
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "localStorageCapacityIsolation": False,
            "registerNode": True,
            "resolvConf": "",
            "syncFrequency": "10s",
            "nodeStatusUpdateFrequency": "10s",
        }
        return json.dumps(doc, indent=1)

    def _start(
        self, bin_dir: Path, cp: ControlPlane, node: LocalNode, identity: str, timeout: float
    ) -> None:
        w = self.work
        w.mkdir(parents=True, exist_ok=True)
        self.before = machine_state()
        self._certs(cp)
        self.port = free_port()
        (w / "config.json").write_text(self._config(node))
        kubeconfig = cp.kubeconfig(identity, w / "kubelet.kubeconfig")
        masks = w / "sysctl"
        masks.mkdir(exist_ok=True)
        binds = []
        for key, value in KERNEL_TUNABLES.items():
            fake = masks / key.replace("/", ".")
            fake.write_text(f"{value}\n")
            binds.append(f"mount --bind {shlex.quote(str(fake))} /proc/sys/{key}")
        argv = [
            str(bin_dir / KUBELET), "--config", str(w / "config.json"),
            "--kubeconfig", str(kubeconfig), "--root-dir", str(w / "root"),
            "--cert-dir", str(w / "pki"), "--hostname-override", self.name, "--v=2",
        ]  # fmt: skip
        # /var/lib/kubelet/device-plugins is a fixed path: an empty /var/lib of its own
        binds.append("mount -t tmpfs -o mode=0755,size=16m kubegc-kubelet /var/lib")
        script = " && ".join([*binds, "exec " + shlex.join(argv)])
        began = time.monotonic()
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                [*DIE_WITH_PARENT, "unshare", "--mount", "--propagation", "private", "--",
                 "sh", "-c", script],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, cwd=w,
            )  # fmt: skip
        self._wait_healthy(cp.tokens["admin"], timeout)
        self.timings["start"] = time.monotonic() - began

    def _check_alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            tail = self.log_path.read_text(errors="replace")[-4000:]
            raise RuntimeError(f"kubelet exited with {self.proc.returncode}:\n{tail}")

    def get(self, path: str, token: str, *, timeout: float = 10) -> tuple[int, bytes]:
        """GET `path` from the kubelet with the bearer `token`: (status, body). Its certificate
        is checked against `ca` for its hostname; raises `OSError` when it cannot connect."""
        with self.ca.open("rb"):  # not written yet: the kubelet is still starting
            pass
        ctx = ssl.create_default_context(cafile=str(self.ca))
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        with ctx.wrap_socket(sock, server_hostname=self.name) as tls:
            tls.sendall(f"GET {path} HTTP/1.1\r\nHost: {self.name}\r\nAuthorization: Bearer "
                        f"{token}\r\nConnection: close\r\n\r\n".encode())  # fmt: skip
            resp = http.client.HTTPResponse(tls)
            resp.begin()
            return resp.status, resp.read()

    def _wait_healthy(self, token: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                status, body = self.get("/healthz", token, timeout=5)
                if status == 200:
                    return
                last = f"{status} {body[:200]!r}"
            except OSError as exc:
                last = str(exc)
            time.sleep(0.3)
        tail = self.log_path.read_text(errors="replace")[-3000:]
        raise RuntimeError(f"kubelet at {self.url} not healthy in {timeout:.0f} s: {last}\n{tail}")

    def stop(self) -> None:
        """End the kubelet; waits until it has exited."""
        proc, self.proc = self.proc, None
        if proc is not None:
            end_process(proc)

    def __enter__(self) -> LocalKubelet:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()
