"""`--kubelet-url`, `--pod-source kubelet` and the kubelet's replies as kubegc reads them, without
a kubelet: what is refused before any connection, a kubelet that cannot be reached, and
(`test_fault_*`, a TLS stand-in) the faults a real kubelet will not produce on demand: one that
never answers, a reply over the bound. The real kubelet's answers and refusals are
tests/node/test_kubelet.py's."""

from __future__ import annotations

import contextlib
import json
import socket
import time
from pathlib import Path

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.node.kubeletapi import check_server_name, check_url
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:10250", "https://", "https://node:10250/pods", "https://node:x",
     "https://node:10250?a=b", "127.0.0.1:10250", "https://no\nde:10250",
     "https://a..b:10250", f"https://{'a' * 64}.node:10250", "https://-node:10250",
     "https://user@node:10250", "https://user:secret@node:10250",
     "https://u:secret@h:99999", "https://u:secret@h:abc", "https://u:secret@[::1"],
)  # fmt: skip
def test_a_kubelet_url_must_be_https_host_and_port(url: str) -> None:
    with pytest.raises(BadInput, match="--kubelet-url") as err:
        check_url(url)
    assert "secret" not in str(err.value)  # a password is never echoed


def test_a_kubelet_url_is_kept_without_its_slash() -> None:
    assert check_url("https://10.0.0.5:10250/") == "https://10.0.0.5:10250"


def kubeconfig(tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    return path


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_pod_source_kubelet_needs_a_kubelet_url(tmp_path: Path) -> None:
    with use_runtime(MemoryCri({}, {})):
        code, _, err = run_cli(["--kubeconfig", str(kubeconfig(tmp_path)), "--pod-source",
                                "kubelet", "gc", "containers", "--dry-run"])  # fmt: skip
    assert code == 2
    assert (
        err.strip() == "kubegc: error: --pod-source kubelet needs --kubelet-url https://HOST:10250"
    )


def test_an_unreachable_kubelet_named_as_the_pod_source_is_exit_3_in_one_line(
    tmp_path: Path,
) -> None:
    url = f"https://127.0.0.1:{closed_port()}"
    with use_runtime(MemoryCri({}, {})):
        args = ["--kubeconfig", str(kubeconfig(tmp_path)), "--kubelet-url", url]
        code, _, err = run_cli([*args, "--pod-source", "kubelet", "gc", "containers", "--dry-run"])
    assert code == 3, err
    assert err.count("\n") == 1
    assert f"kubelet {url}/pods unreachable: ConnectionRefusedError" in err


class StandIn:
    """A TLS server on 127.0.0.1 standing in for a kubelet, for the faults a real one will
    not produce on demand: `hang` reads the request and never answers; `huge` answers 200
    with a JSON body of `size` bytes; `drip` sends the headers, then a byte at a time,
    never reaching the length it announced. Its certificate is signed by `ca`."""

    def __init__(self, certs: Path, mode: str, size: int = 0) -> None:
        import ssl
        import threading

        self.mode, self.size = mode, size
        self.requests = 0
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(certs / "serving.crt", certs / "serving.key")
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"https://127.0.0.1:{self.sock.getsockname()[1]}"
        self.stop = threading.Event()
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self) -> None:
        import ssl

        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
                tls = self.ctx.wrap_socket(conn, server_side=True)
                tls.recv(65536)
            except (OSError, ssl.SSLError):
                continue
            self.requests += 1
            if self.mode == "hang":
                self.stop.wait(30)
            elif self.mode == "drip":  # headers, then a byte every 0.3 s
                with contextlib.suppress(OSError):
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                    while not self.stop.wait(0.3):
                        tls.sendall(b" ")
            else:
                body = b'{"kubeletconfig": {"x": "' + b"a" * self.size + b'"}}'
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
                with contextlib.suppress(OSError):
                    tls.sendall(head + body)
            tls.close()


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.controlplane import make_certs

    d = tmp_path_factory.mktemp("certs")
    make_certs(d)
    return d


def test_fault_a_kubelet_that_never_answers_is_given_up_after_the_timeout(
    tmp_path: Path, certs: Path
) -> None:
    kubelet = StandIn(certs, "hang")
    try:
        args = ["--kubeconfig", str(kubeconfig(tmp_path)), "--kubelet-url", kubelet.url,
                "--kubelet-ca", str(certs / "ca.crt"), "--timeout", "1s"]  # fmt: skip
        began = time.monotonic()
        with use_runtime(MemoryCri({}, {})):
            code, _, err = run_cli([*args, "--pod-source", "kubelet", "gc", "containers",
                                    "--dry-run"])  # fmt: skip
        assert time.monotonic() - began < 10
    finally:
        kubelet.stop.set()
    assert code == 3, err
    assert err.count("\n") == 1
    assert f"kubelet {kubelet.url}/pods unreachable: TimeoutError" in err


def test_fault_a_configz_reply_over_the_bound_is_not_read_and_the_file_is(
    tmp_path: Path, certs: Path
) -> None:
    kubelet = StandIn(certs, "huge", size=5 << 20)
    host = tmp_path / "host"
    (host / "var/lib/kubelet").mkdir(parents=True)
    config = host / "var/lib/kubelet/config.yaml"
    config.write_text("imageGCHighThresholdPercent: 77\nimageGCLowThresholdPercent: 55\n")
    try:
        code, out, err = run_cli(["--kubeconfig", str(kubeconfig(tmp_path)), "--host-root",
                                  str(host), "--kubelet-url", kubelet.url, "--kubelet-ca",
                                  str(certs / "ca.crt"), "-o", "json", "config", "view", "gc",
                                  "images"])  # fmt: skip
    finally:
        kubelet.stop.set()
    assert code == 0, err
    assert f"kubelet {kubelet.url}/configz: the reply is larger than 4 MiB" in err
    rows = {r["key"]: r for r in json.loads(out)["values"]}
    assert (
        rows["gc.images.image-gc-high-threshold"]["source"]
        == f"kubelet config {config}: imageGCHighThresholdPercent"
    )


@pytest.mark.parametrize(
    "command",
    [["config", "view", "gc", "images"],
     ["--pod-source", "kubelet", "gc", "containers", "--dry-run"]],
)  # fmt: skip
def test_an_unusable_kubelet_ca_is_exit_2_in_one_line(tmp_path: Path, command: list[str]) -> None:
    url = f"https://127.0.0.1:{closed_port()}"
    missing = tmp_path / "no-ca.crt"
    with use_runtime(MemoryCri({}, {})):
        code, _, err = run_cli(["--kubeconfig", str(kubeconfig(tmp_path)), "--kubelet-url", url,
                                "--kubelet-ca", str(missing), *command])  # fmt: skip
    assert code == 2, err
    assert err == f"kubegc: error: cannot use --kubelet-ca {missing}: No such file or directory\n"


@pytest.mark.parametrize("size", [10, 5 << 20])
def test_fault_one_run_asks_configz_once_whether_it_answers_or_not(
    tmp_path: Path, certs: Path, size: int
) -> None:
    from kubegc_cli.node import kubeletapi
    from kubegc_cli.node.pods.api import ApiSource, ApiUnavailable

    kubelet = StandIn(certs, "huge", size=size)
    src = kubeletapi.KubeletSource(
        kubelet.url, (str(certs / "ca.crt"),), ApiSource(str(kubeconfig(tmp_path)), None, "n")
    )
    try:
        for _ in range(3):
            try:
                assert kubeletapi.read_configz(src, 5)["x"] == "a" * size
            except ApiUnavailable as exc:
                assert "larger than 4 MiB" in str(exc)
                assert size > kubeletapi.MAX_CONFIGZ_BYTES
    finally:
        kubelet.stop.set()
    assert kubelet.requests == 1


def test_configz_is_asked_one_way_and_named_by_the_way_it_was_reached(tmp_path: Path) -> None:
    from kubegc_cli.core.settings import Settings
    from kubegc_cli.node.kubeletapi import KubeletSource, configz_route, configz_source
    from kubegc_cli.node.pods.api import ApiSource

    kc = str(kubeconfig(tmp_path))
    url = "https://10.0.0.5:10250"
    base = {"kubeconfig": kc, "node_name": "n1", "env": {}}
    direct = configz_route(Settings(**base, kubelet_url=url, kubelet_configz=True))
    assert isinstance(direct, KubeletSource) and direct.url == url
    assert configz_source(direct) == "kubelet /configz"
    proxy = configz_route(Settings(**base, kubelet_configz=True))
    assert proxy == ApiSource(kc, None, "n1")
    assert configz_source(proxy) == "kubelet /configz of node n1 (nodes/proxy)"
    named = Settings(**base, kubelet_url=url, kubelet_config=tmp_path / "config.yaml")
    assert configz_route(named) is None
    assert configz_route(Settings(**base)) is None


def test_a_refused_configz_through_the_node_proxy_falls_back_to_the_files_and_says_why(
    tmp_path: Path,
) -> None:
    host = tmp_path / "host"
    (host / "var/lib/kubelet").mkdir(parents=True)
    config = host / "var/lib/kubelet/config.yaml"
    config.write_text("imageGCHighThresholdPercent: 77\nimageGCLowThresholdPercent: 55\n")
    code, out, err = run_cli(["--kubeconfig", str(kubeconfig(tmp_path)), "--host-root", str(host),
                              "--node-name", "n1", "--kubelet-configz", "-o", "json", "config",
                              "view", "gc", "images"])  # fmt: skip
    assert code == 0, err
    assert "kubegc: Kubernetes API https://127.0.0.1:1 unreachable: MaxRetryError; " in err
    rows = {r["key"]: r for r in json.loads(out)["values"]}
    assert (
        rows["gc.images.image-gc-high-threshold"]["source"]
        == f"kubelet config {config}: imageGCHighThresholdPercent"
    )


def configz_with(certs: Path, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """`config view gc images` asking a stand-in kubelet's /configz (a 200 with a small
    reply, its certificate for 127.0.0.1, localhost and kube-api.test) with `args`."""
    kubelet = StandIn(certs, "huge", size=10)
    try:
        return run_cli(["--kubeconfig", str(kubeconfig(tmp_path)), "--kubelet-url",
                        kubelet.url, *args, "-v", "-o", "json", "config", "view", "gc",
                        "images"])  # fmt: skip
    finally:
        kubelet.stop.set()


def test_the_serving_certificate_is_checked_for_the_server_name_given(
    tmp_path: Path, certs: Path
) -> None:
    ca = ["--kubelet-ca", str(certs / "ca.crt")]
    code, _, err = configz_with(certs, tmp_path, *ca, "--kubelet-server-name", "kube-api.test")
    assert code == 0, err
    assert "/configz" not in err, err  # read: no fallback line
    code, _, err = configz_with(certs, tmp_path, *ca, "--kubelet-server-name", "node-7.test")
    assert code == 0, err  # refused: the files are read instead, and the run says why
    assert "configz unreachable: SSLCertVerificationError" in err, err
    assert "Hostname mismatch, certificate is not valid for 'node-7.test'" in err, err


def test_each_kubelet_ca_that_exists_is_trusted_and_none_existing_is_exit_2(
    tmp_path: Path, certs: Path
) -> None:
    other = tmp_path / "other-ca.crt"  # a CA that signed nothing here
    other.write_bytes((certs / "serving.crt").read_bytes())
    missing = tmp_path / "pki/kubelet.crt"
    code, _, err = configz_with(certs, tmp_path, "--kubelet-ca", str(missing), "--kubelet-ca",
                                str(other), "--kubelet-ca", str(certs / "ca.crt"))  # fmt: skip
    assert code == 0, err
    assert "/configz" not in err, err
    code, _, err = configz_with(certs, tmp_path, "--kubelet-ca", str(missing), "--kubelet-ca",
                                str(other))  # fmt: skip
    assert code == 0, err
    assert "certificate verify failed" in err, err
    code, _, err = configz_with(certs, tmp_path, "--kubelet-ca", str(missing), "--kubelet-ca",
                                str(tmp_path / "nor-this.crt"))  # fmt: skip
    assert code == 2, err
    assert err == (f"kubegc: error: cannot use --kubelet-ca: none of {missing}, "
                   f"{tmp_path / 'nor-this.crt'} exists\n")  # fmt: skip


@pytest.mark.parametrize(
    "name", ["", "-node", "node 1", "node/1", "a" * 254, "nöde", "a..b", "a" * 64, "node-", ":"]
)
def test_a_kubelet_server_name_must_be_a_dns_name_or_an_ip(name: str) -> None:
    with pytest.raises(BadInput, match="--kubelet-server-name"):
        check_server_name(name)


@pytest.mark.parametrize("name", ["ip-10-0-0-5.ec2.internal", "node-1", "10.0.0.5", "fd00::5"])
def test_a_kubelet_server_name_is_kept_as_given(name: str) -> None:
    assert check_server_name(name) == name


def test_a_kubelet_ca_that_is_no_regular_file_is_exit_2_at_once(
    tmp_path: Path, certs: Path
) -> None:
    """A FIFO named as a CA would block the read forever (and a cycle with it)."""
    import os

    fifo = tmp_path / "ca.fifo"
    os.mkfifo(fifo)
    for given in ([str(fifo)], [str(fifo), str(certs / "ca.crt")]):
        args = [a for f in given for a in ("--kubelet-ca", f)]
        code, _, err = configz_with(certs, tmp_path, *args)
        assert code == 2, err
        assert err == f"kubegc: error: cannot use --kubelet-ca {fifo}: not a regular file\n"


def test_fault_a_kubelet_dripping_its_reply_is_given_up_after_three_timeouts(
    tmp_path: Path, certs: Path
) -> None:
    """Each byte comes within the timeout, the whole reply never: the read ends after three
    timeouts, in one line, the pod source unreadable (exit 3)."""
    kubelet = StandIn(certs, "drip")
    try:
        args = ["--kubeconfig", str(kubeconfig(tmp_path)), "--kubelet-url", kubelet.url,
                "--kubelet-ca", str(certs / "ca.crt"), "--timeout", "1s"]  # fmt: skip
        began = time.monotonic()
        with use_runtime(MemoryCri({}, {})):
            code, _, err = run_cli([*args, "--pod-source", "kubelet", "gc", "containers",
                                    "--dry-run"])  # fmt: skip
        took = time.monotonic() - began
    finally:
        kubelet.stop.set()
    assert code == 3, err
    assert 2.5 < took < 10, took
    assert "TimeoutError: the reply took longer than 3s" in err and err.count("\n") == 1
