"""`--kubelet-url`, `--pod-source kubelet` and the kubelet's replies as kubegc reads them, without
a kubelet: what is refused before any connection, and a kubelet that cannot be reached. The
real kubelet's answers and refusals are tests/node/test_kubelet.py's."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.node.kubeletapi import check_url
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:10250", "https://", "https://node:10250/pods", "https://node:x",
     "https://node:10250?a=b", "127.0.0.1:10250", "https://no\nde:10250"],
)  # fmt: skip
def test_a_kubelet_url_must_be_https_host_and_port(url: str) -> None:
    with pytest.raises(BadInput, match="--kubelet-url"):
        check_url(url)


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
