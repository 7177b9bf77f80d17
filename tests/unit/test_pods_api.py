"""The Kubernetes API pod source where no real API server can play the part: faults it will not
produce on demand (`test_fault_*`: a 500, a hang, a page refused mid-list), with the official
`kubernetes` client talking to a local stand-in that serves recorded API objects and records
the requests it gets (`tests.unit.recorded_api`); and kubeconfigs or proxies that are unusable
before any request. Everything
else about `--pod-source api` runs against a real kube-apiserver in tests/api/test_pods_api.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.node.pods.api import ApiSource, ApiUnavailable, load_api_inventory
from tests.unit.recorded_api import RecordedApi, serve_recorded_api


def pod(uid: str, *, reason: str = "", deleting: bool = False, running: bool = False) -> Any:
    state = {"running": {}} if running else {"terminated": {"exitCode": 0}}
    meta: dict[str, Any] = {"uid": uid, "name": f"p-{uid}", "namespace": "ns"}
    if deleting:
        meta["deletionTimestamp"] = "2026-11-29T10:00:00Z"
    status: dict[str, Any] = {"phase": "Running", "containerStatuses": [{"state": state}]}
    if reason:
        status["reason"] = reason
    return {"kind": "Pod", "metadata": meta, "status": status}


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[RecordedApi, Path]]:
    with serve_recorded_api(tmp_path) as served:
        yield served


def test_fault_a_500_is_unavailable(api: tuple[RecordedApi, Path]) -> None:
    """An API server whose storage failed answers 500 (not produced on demand by the real one
    without stopping its etcd for every other test)."""
    recorded, kubeconfig = api
    recorded.pages = [[pod("a")]]
    recorded.fail = {0: (500, "etcd is sad")}
    with pytest.raises(ApiUnavailable) as err:
        load_api_inventory(ApiSource(str(kubeconfig), None, "n"), timeout=5)
    assert "500" in str(err.value) and "127.0.0.1" in str(err.value)
    assert "\n" not in str(err.value)


def test_fault_a_failing_second_page_is_not_a_partial_list(
    api: tuple[RecordedApi, Path],
) -> None:
    recorded, kubeconfig = api
    recorded.pages = [[pod("a")], [pod("b")]]
    recorded.fail = {1: (410, "continue token expired")}
    with pytest.raises(ApiUnavailable, match="410"):
        load_api_inventory(ApiSource(str(kubeconfig), None, "n"), timeout=5)


def test_fault_an_answer_slower_than_the_timeout_is_unreachable(
    api: tuple[RecordedApi, Path],
) -> None:
    """A hung API server: kubegc gives up after --timeout."""
    recorded, kubeconfig = api
    recorded.pages = [[pod("a")]]
    recorded.delay = 3
    began = time.monotonic()
    with pytest.raises(ApiUnavailable, match="unreachable"):
        load_api_inventory(ApiSource(str(kubeconfig), None, "n"), timeout=0.5)
    assert time.monotonic() - began < 2.5


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("just some text\n", "not a kubeconfig"),
        ("a: [1\n", "while parsing"),
        ("apiVersion: v1\nclusters: 7\n", "kubeconfig"),
        ("\xff\xfe binary", "kubeconfig"),
    ],
)
def test_unusable_kubeconfig_is_one_line_bad_input(tmp_path: Path, text: str, needle: str) -> None:
    from kubegc_cli.core.errors import BadInput

    path = tmp_path / "kubeconfig"
    path.write_text(text, encoding="latin-1")
    with pytest.raises(BadInput) as exc:
        load_api_inventory(ApiSource(str(path), None, "node-a"), 5)
    assert needle in str(exc.value) and str(path) in str(exc.value)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("locked", ["home", "kubeconfig"])
def test_unreadable_home_kubeconfig_is_skipped_by_every_command(
    tmp_path: Path, locked: str
) -> None:
    """~/.kube/config that kubegc may not read — in a home it may not enter, or itself mode
    000 — is no kubeconfig, as when it is missing: no pod source, never a traceback, for
    `gc containers` and `df` alike (permissions enforced even for root). Named explicitly
    with --kubeconfig, it is a one-line error (exit 2)."""
    import subprocess
    import sys

    from tests.unit.test_df import without_permission_override

    home = tmp_path / "home"
    config = home / ".kube/config"
    config.parent.mkdir(parents=True)
    config.write_text("apiVersion: v1\nkind: Config\n")
    (config if locked == "kubeconfig" else home).chmod(0)
    (tmp_path / "host/var/lib/kubelet").mkdir(parents=True)
    prefix = without_permission_override()

    def kubegc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*prefix, sys.executable, "-m", "kubegc_cli", "--host-root", str(tmp_path / "host"),
             "-r", "unix:///nonexistent/kubegc.sock", *args],
            capture_output=True, text=True, timeout=60,
            env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
        )  # fmt: skip

    try:
        gc = kubegc("gc", "containers", "--dry-run")
        assert gc.returncode == 3, gc.stderr  # the runtime's absence, not the kubeconfig
        assert "Traceback" not in gc.stderr and gc.stderr.count("\n") == 1
        assert "nonexistent/kubegc.sock" in gc.stderr and "kubeconfig" not in gc.stderr
        df = kubegc("df", "--no-runtime", "-o", "json")
        assert df.returncode == 0, df.stderr
        assert '"pod_source": "none"' in df.stdout
        named = kubegc("--kubeconfig", str(config), "gc", "containers", "--dry-run")
        assert named.returncode == 2, named.stderr
        assert "Traceback" not in named.stderr and named.stderr.count("\n") == 1
        assert f"kubeconfig {config}" in named.stderr
    finally:
        home.chmod(0o755)
        config.chmod(0o644)


def _kubeconfig_via(tmp_path: Path, server: str, proxy_url: str) -> Path:
    path = tmp_path / "proxied-kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}', proxy-url: '{proxy_url}'}}}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    return path


@pytest.mark.parametrize(
    ("proxy_url", "code", "needle"),
    [
        ("ftp://127.0.0.1:1", 2, "proxy-url 'ftp://127.0.0.1:1'"),
        ("socks4://127.0.0.1:1", 2, "proxy-url 'socks4://127.0.0.1:1'"),
        ("127.0.0.1:1080", 2, "proxy-url '127.0.0.1:1080'"),
        ("socks5://127.0.0.1:1", 3, "unreachable"),  # nothing listens there
    ],
)
def test_a_proxy_url_kubectl_would_not_use_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], proxy_url: str, code: int, needle: str
) -> None:
    from kubegc_cli.cli.main import main

    config = _kubeconfig_via(tmp_path, "https://127.0.0.1:6443", proxy_url)
    with pytest.raises(SystemExit) as exc:
        main(["--pod-source", "api", "--kubeconfig", str(config), "--timeout", "5s",
              "-r", "unix:///nonexistent.sock", "gc", "containers", "--dry-run"])  # fmt: skip
    out, err = capsys.readouterr()
    assert "Traceback" not in err and err.count("\n") == 1 and out == "", err
    assert exc.value.code == code and needle in err, err
    if code == 2:
        assert str(config) in err


def test_a_socks_proxy_url_without_pysocks_installed_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installation that lacks PySocks (kubegc depends on it) names the proxy-url and what
    is missing, exit 2, instead of urllib3's ImportError."""
    import sys

    from kubegc_cli.core.errors import BadInput

    monkeypatch.setitem(sys.modules, "socks", None)
    monkeypatch.delitem(sys.modules, "urllib3.contrib.socks", raising=False)
    config = _kubeconfig_via(tmp_path, "https://127.0.0.1:6443", "socks5://127.0.0.1:1080")
    with pytest.raises(BadInput) as exc:
        load_api_inventory(ApiSource(str(config), None, "node-a"), 5)
    assert "proxy-url 'socks5://127.0.0.1:1080'" in str(exc.value)
    assert "PySocks" in str(exc.value) and str(config) in str(exc.value)
