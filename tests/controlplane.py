"""A real Kubernetes control plane on loopback for the API tests, as envtest starts one.

`ControlPlane.start(bin_dir, work)` runs, from the binaries `scripts/build-control-plane`
built into `bin_dir`:

- etcd, client and peer URLs on 127.0.0.1 (plain HTTP: nothing leaves the machine);
- kube-apiserver on https://127.0.0.1:<port> with its own CA and serving certificate (made
  with `openssl`), RBAC as the only authorizer, and a static token file naming one identity
  per caller: `admin` (group system:masters), `nobody` (authenticated, granted nothing), and
  the ServiceAccount identities of deploy/kubernetes/rbac.yaml (`kubegc-agent`, the node
  agent in kube-system; `kubegc-prune`), so the bindings of the manifests apply to them as
  to the real ServiceAccounts;
- optionally kube-controller-manager with the garbage collector only, which acts as its own
  ServiceAccount (kube-system/generic-garbage-collector) with the bootstrap RBAC role, as in
  a kubeadm cluster.

`kubeconfig(identity)` writes a kubeconfig (CA data, token) for the official client.
The API server writes an audit log (every request's stage ResponseComplete, at level
Metadata): `requests(identity)` reads back what an identity asked, to count a component's
calls on the real server.
`stop()` ends every process it started (SIGTERM, then SIGKILL after 10 s); each child also
gets SIGKILL from the kernel when the Python process that started it dies, so an interrupted
test session leaves nothing running.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager")
# built with them (scripts/build-control-plane) for the node tests' kubelet
KUBELET_NODE = "kubegc-kubelet"

# identity → (user name, groups) in the API server's token file
IDENTITIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "admin": ("kubegc-test-admin", ("system:masters",)),
    "nobody": ("kubegc-test-nobody", ()),
    "kube-controller-manager": ("system:kube-controller-manager", ()),
    # the node tests' kubelet (tests/node/localkubelet.py), registered as Node KUBELET_NODE
    "kubelet": (f"system:node:{KUBELET_NODE}", ("system:nodes",)),
    "kubegc-agent": (
        "system:serviceaccount:kube-system:kubegc-agent",
        ("system:serviceaccounts", "system:serviceaccounts:kube-system"),
    ),
    "kubegc-prune": (
        "system:serviceaccount:kubegc:kubegc-prune",
        ("system:serviceaccounts", "system:serviceaccounts:kubegc"),
    ),
}

# Every request once, when its response is complete; who, what, the verb and the code.
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted, Panic]
rules:
  - level: Metadata
"""


#: A command's prefix that has the kernel SIGKILL it when the thread that started it goes away
#: (`PR_SET_PDEATHSIG`, set by util-linux's setpriv, which then execs the command in place:
#: the pid is the command's). Not a `preexec_fn`: Python then forks without exec'ing at once,
#: and a fork while gRPC's threads run can abort the child (gRPC's fork handlers).
DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL", "--"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)


def make_certs(d: Path) -> None:
    """A CA, a serving certificate signed by it, and the RSA key that signs ServiceAccount
    tokens; PEM files in `d`. The certificate names 127.0.0.1, localhost and `kube-api.test`
    (a name no resolver knows: only a test's proxy resolves it, as on a proxy's far side)."""
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", "/CN=kubegc-test-ca", "-keyout", str(d / "ca.key"),
             "-out", str(d / "ca.crt"))  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=kube-apiserver",
             "-keyout", str(d / "serving.key"), "-out", str(d / "serving.csr"))  # fmt: skip
    (d / "serving.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc,DNS:kube-api.test\n"
        "extendedKeyUsage=serverAuth\n"
    )
    _openssl("x509", "-req", "-in", str(d / "serving.csr"), "-CA", str(d / "ca.crt"),
             "-CAkey", str(d / "ca.key"), "-CAcreateserial", "-days", "2",
             "-extfile", str(d / "serving.ext"), "-out", str(d / "serving.crt"))  # fmt: skip
    _openssl("genrsa", "-out", str(d / "sa.key"), "2048")


def end_process(proc: subprocess.Popen[Any]) -> None:
    """Terminate `proc` if it still runs (killed after 10 s); waits until it has exited."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@dataclass
class ControlPlane:
    """A running etcd + kube-apiserver (+ kube-controller-manager); see the module doc."""

    work: Path
    bin_dir: Path = Path()
    url: str = ""
    tokens: dict[str, str] = field(default_factory=dict)  # identity → bearer token
    etcd_url: str = ""
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @classmethod
    def start(
        cls, bin_dir: Path, work: Path, *, controller_manager: bool = True, timeout: float = 120
    ) -> ControlPlane:
        """Start it in `work` (certificates, data, logs); ready when `/readyz` answers 200.

        Raises `RuntimeError` naming the component and the tail of its log when one exits or
        the API is not ready within `timeout` seconds; whatever was started is stopped then.
        """
        cp = cls(work=work, bin_dir=bin_dir)
        try:
            cp._start(bin_dir, controller_manager, timeout)
        except BaseException:
            cp.stop()
            raise
        return cp

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.work / f"{name}.log").open("wb")
        self.procs[name] = subprocess.Popen(
            [*DIE_WITH_PARENT, *argv], stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, cwd=self.work,
        )  # fmt: skip
        log.close()

    def _check_alive(self) -> None:
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                tail = (self.work / f"{name}.log").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"{name} exited with {proc.returncode}:\n{tail}")

    def _start(self, bin_dir: Path, controller_manager: bool, timeout: float) -> None:
        w = self.work
        w.mkdir(parents=True, exist_ok=True)
        make_certs(w)
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        self._spawn("etcd", [
            str(bin_dir / "etcd"), "--data-dir", str(w / "etcd"),
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
            "--initial-cluster", f"default=http://127.0.0.1:{peer}",
            "--unsafe-no-fsync", "--log-level", "warn",
        ])  # fmt: skip
        lines = []
        for identity, (user, groups) in IDENTITIES.items():
            token = os.urandom(16).hex()
            self.tokens[identity] = token
            lines.append(f'{token},{user},uid-{identity},"{",".join(groups)}"')
        (w / "tokens.csv").write_text("\n".join(lines) + "\n")
        (w / "audit-policy.yaml").write_text(AUDIT_POLICY)
        self.url = self._spawn_api_server("kube-apiserver")
        self._wait_ready(timeout)
        if controller_manager:
            kubeconfig = self.kubeconfig("kube-controller-manager")
            self._spawn("kube-controller-manager", [
                str(bin_dir / "kube-controller-manager"), "--kubeconfig", str(kubeconfig),
                "--controllers", "garbagecollector", "--leader-elect=false",
                "--use-service-account-credentials=true",
                "--secure-port", "0", "--v=1",
            ])  # fmt: skip
            time.sleep(0.5)
            self._check_alive()

    def _spawn_api_server(self, name: str, *extra: str) -> str:
        w = self.work
        port = free_port()
        self._spawn(name, [
            str(self.bin_dir / "kube-apiserver"), "--etcd-servers", self.etcd_url,
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1",
            "--secure-port", str(port), "--cert-dir", str(w),
            "--tls-cert-file", str(w / "serving.crt"),
            "--tls-private-key-file", str(w / "serving.key"),
            "--client-ca-file", str(w / "ca.crt"),
            "--token-auth-file", str(w / "tokens.csv"),
            "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", str(w / "sa.key"),
            "--service-account-signing-key-file", str(w / "sa.key"),
            "--service-cluster-ip-range", "10.0.0.0/24",
            "--disable-admission-plugins", "ServiceAccount",
            "--allow-privileged=true", "--v=1",
            "--audit-policy-file", str(w / "audit-policy.yaml"),
            "--audit-log-path", str(w / f"{name}-audit.log"), "--audit-log-mode", "blocking",
            "--audit-log-format", "json", *extra,
        ])  # fmt: skip
        return f"https://127.0.0.1:{port}"

    def add_api_server(self, name: str, *extra: str, timeout: float = 120) -> str:
        """Start one more kube-apiserver `name` on the same etcd, certificates and tokens
        (as in a control plane of several), with `extra` flags; returns its URL once ready.
        It is stopped with the rest."""
        url = self._spawn_api_server(name, *extra)
        self._wait_ready(timeout, url)
        return url

    def _wait_ready(self, timeout: float, url: str | None = None) -> None:
        url = url or self.url
        ctx = ssl.create_default_context(cafile=str(self.work / "ca.crt"))
        request = urllib.request.Request(
            f"{url}/readyz", headers={"Authorization": f"Bearer {self.tokens['admin']}"}
        )
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                with urllib.request.urlopen(request, context=ctx, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.3)
        raise RuntimeError(f"kube-apiserver at {url} not ready in {timeout:.0f} s: {last}")

    def kubeconfig(
        self, identity: str, path: Path | None = None, *, server: str | None = None
    ) -> Path:
        """A kubeconfig for `identity` (a key of IDENTITIES) at `path` (default: in `work`),
        for the API server at `server` (default: the first)."""
        import base64

        ca = base64.b64encode((self.work / "ca.crt").read_bytes()).decode()
        path = path or self.work / f"{identity}.kubeconfig"
        doc = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": {
                "server": server or self.url, "certificate-authority-data": ca}}],
            "users": [{"name": identity, "user": {"token": self.tokens[identity]}}],
            "contexts": [{"name": identity, "context": {"cluster": "test", "user": identity}}],
            "current-context": identity,
        }  # fmt: skip
        path.write_text(json.dumps(doc, indent=1))
        return path

    def requests(self, identity: str, *, server: str = "kube-apiserver") -> list[dict[str, Any]]:
        """The audit events of `identity`'s requests so far on API server `server` (blocking
        audit: a request is in the log before its response is sent), oldest first. Each is the
        audit Event as JSON: `verb`, `objectRef` (resource, subresource, namespace, name),
        `responseStatus.code`, `requestURI`."""
        user = IDENTITIES[identity][0]
        log = self.work / f"{server}-audit.log"
        events = []
        for line in log.read_text().splitlines() if log.exists() else ():
            event = json.loads(line)
            if event.get("user", {}).get("username") == user:
                events.append(event)
        return events

    def stop(self) -> None:
        """End every process started, newest first; waits until each has exited."""
        for _name, proc in reversed(list(self.procs.items())):
            end_process(proc)
        self.procs.clear()

    def __enter__(self) -> ControlPlane:
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.stop()
