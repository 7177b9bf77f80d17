"""The Kubernetes API pod source (`--pod-source api`) against a real kube-apiserver.

The pods are made through the API as an admin, bound to a node name of the test's own; their
status (Evicted, containers running or stopped) is written through the status subresource,
and a pod being deleted is held by a finalizer, as the kubelet's own finalization would.
kubegc reads them with the identity the kubeconfig names, directly or through a SOCKS5 proxy.
Faults the real server will not produce on demand (a hang, a 500) stay on the stand-in in
tests/unit/test_pods_api.py.
"""

from __future__ import annotations

import base64
import json
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.commands.flow import load_pod_inventory
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.pods import api as pods_api
from kubegc_cli.node.pods.api import ApiSource, ApiUnavailable, load_api_inventory
from tests.controlplane import ControlPlane

FINALIZER = "kubegc.test/hold"


@pytest.fixture(scope="module")
def core(admin: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(admin)


@pytest.fixture
def namespace(core: Any) -> Iterator[str]:
    name = f"t-{uuid.uuid4().hex[:8]}"
    core.create_namespace({"metadata": {"name": name}})
    yield name


def make_pod(
    core: Any,
    namespace: str,
    name: str,
    node: str,
    *,
    running: bool = True,
    evicted: bool = False,
    deleting: bool = False,
) -> str:
    """Create a pod bound to `node`, set its status, optionally delete it (a finalizer keeps
    it, with its deletionTimestamp); returns its uid as the server assigned it."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if deleting:
        meta["finalizers"] = [FINALIZER]
    created = core.create_namespaced_pod(namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
    })  # fmt: skip
    state = {"running": {"startedAt": "2026-11-29T08:00:00Z"}} if running else {
        "terminated": {"exitCode": 0, "reason": "Completed",
                       "startedAt": "2026-11-29T08:00:00Z", "finishedAt": "2026-11-29T09:00:00Z"}
    }  # fmt: skip
    status: dict[str, Any] = {
        "phase": "Running",
        "containerStatuses": [{"name": "c", "image": "busybox", "imageID": "", "ready": running,
                               "restartCount": 0, "state": state}],
    }  # fmt: skip
    if evicted:
        status.update(phase="Failed", reason="Evicted", message="The node was low on memory.")
    core.patch_namespaced_pod_status(name, namespace, {"status": status})
    if deleting:
        core.delete_namespaced_pod(name, namespace)
        assert core.read_namespaced_pod(name, namespace).metadata.deletion_timestamp
    return str(created.metadata.uid)


class ListSpy:
    """Records the arguments of every pod list kubegc sends, then sends it unchanged."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, between_pages: Any = None) -> None:
        from kubernetes import client

        self.calls: list[dict[str, Any]] = []
        real = client.CoreV1Api.list_pod_for_all_namespaces

        def spy(api: Any, **kwargs: Any) -> Any:
            self.calls.append(kwargs)
            if between_pages is not None and len(self.calls) == 2:
                between_pages()
            return real(api, **kwargs)

        monkeypatch.setattr(client.CoreV1Api, "list_pod_for_all_namespaces", spy)


def test_the_pods_of_the_node_are_read_page_by_page(
    control_plane: ControlPlane, core: Any, namespace: str, node_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """Every page is read (the server's continue tokens followed to the end), the field
    selector keeps other nodes' pods out, and the deletion rules see the real objects."""
    uids = {
        "a": make_pod(core, namespace, "a", node_name),
        "evicted": make_pod(core, namespace, "evicted", node_name, running=False, evicted=True),
        "gone-stopped": make_pod(core, namespace, "gone-stopped", node_name, running=False,
                                 deleting=True),
        "gone-running": make_pod(core, namespace, "gone-running", node_name, deleting=True),
        "b": make_pod(core, namespace, "b", node_name),
    }  # fmt: skip
    elsewhere = make_pod(core, namespace, "elsewhere", f"{node_name}-other")
    monkeypatch.setattr(pods_api, "PAGE_SIZE", 2)
    spy = ListSpy(monkeypatch)
    kubeconfig = control_plane.kubeconfig("admin")
    inv = load_api_inventory(ApiSource(str(kubeconfig), None, node_name), timeout=10)
    assert set(inv.pods) == set(uids.values()) and elsewhere not in inv.pods
    assert len(spy.calls) == 3  # 5 pods, 2 a page
    assert all(c["field_selector"] == f"spec.nodeName={node_name}" for c in spy.calls)
    assert all(c["limit"] == 2 for c in spy.calls)
    assert spy.calls[0]["_continue"] is None and all(c["_continue"] for c in spy.calls[1:])
    assert not inv.is_deleted(uids["a"])
    assert inv.is_deleted(uids["evicted"])  # the kubelet: an evicted pod's content may go
    assert inv.is_deleted(uids["gone-stopped"])  # deleted, every container stopped
    assert not inv.is_deleted(uids["gone-running"])  # deleted but still running: not yet
    assert inv.is_deleted("never-listed")
    assert f"node {node_name}" in inv.source and control_plane.url.split("//")[1] in inv.source


def test_one_page_of_500_when_the_node_has_fewer(
    control_plane: ControlPlane, core: Any, namespace: str, node_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    uid = make_pod(core, namespace, "only", node_name)
    spy = ListSpy(monkeypatch)
    kubeconfig = control_plane.kubeconfig("admin")
    inv = load_api_inventory(ApiSource(str(kubeconfig), None, node_name), timeout=10)
    assert set(inv.pods) == {uid}
    assert [c["limit"] for c in spy.calls] == [500]


def _etcd(control_plane: ControlPlane, call: str, doc: dict[str, Any]) -> Any:
    """One call of etcd's JSON gateway (`/v3/kv/...`)."""
    request = urllib.request.Request(
        f"{control_plane.etcd_url}/v3/kv/{call}", data=json.dumps(doc).encode(), method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as resp:
        return json.load(resp)


def test_a_continue_token_expired_by_compaction_is_410_and_no_partial_list(
    control_plane: ControlPlane, core: Any, namespace: str, node_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """etcd compacted between two pages (as the API server's periodic compaction does): the
    server answers the continue with 410 Gone, and kubegc reports the list unavailable
    instead of acting on the pods of the first page. The pages come from etcd here (a second
    API server without the watch cache): the first one's cache keeps serving a continue from
    its own snapshot when etcd is compacted behind its back."""
    for name in ("a", "b", "c"):
        make_pod(core, namespace, name, node_name)

    def compact() -> None:
        core.create_namespaced_config_map(namespace, {"metadata": {"name": "bump"}})
        key = base64.b64encode(b"/registry").decode()
        revision = int(_etcd(control_plane, "range", {"key": key})["header"]["revision"])
        _etcd(control_plane, "compaction", {"revision": str(revision), "physical": True})

    monkeypatch.setattr(pods_api, "PAGE_SIZE", 1)
    spy = ListSpy(monkeypatch, between_pages=compact)
    url = control_plane.add_api_server("kube-apiserver-uncached", "--watch-cache=false")
    kubeconfig = control_plane.kubeconfig("admin", server=url)
    with pytest.raises(ApiUnavailable, match="410") as err:
        load_api_inventory(ApiSource(str(kubeconfig), None, node_name), timeout=10)
    assert "\n" not in str(err.value) and len(spy.calls) == 2


@pytest.mark.parametrize(
    ("identity", "needle"),
    [
        ("nobody", "403 Forbidden: kubegc needs permission to list pods"),
        ("unknown", "401 Unauthorized"),
    ],
)
def test_refusals_are_unavailable(
    control_plane: ControlPlane, tmp_path: Path, identity: str, needle: str
) -> None:
    """An identity RBAC grants nothing is refused 403; a token the server does not know, 401."""
    kubeconfig = control_plane.kubeconfig("nobody", tmp_path / "kubeconfig")
    if identity == "unknown":
        text = kubeconfig.read_text().replace(control_plane.tokens["nobody"], "not-a-token")
        kubeconfig.write_text(text)
    with pytest.raises(ApiUnavailable) as err:
        load_api_inventory(ApiSource(str(kubeconfig), None, "n"), timeout=10)
    assert needle in str(err.value) and "127.0.0.1" in str(err.value)
    assert "\n" not in str(err.value)


class QuietUi:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def info(self, message: str) -> None: ...
    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def show_plan(self, plan: Any) -> None: ...
    def interactive(self) -> bool:
        return False

    def confirm(self, question: str) -> bool:
        return False


def test_found_kubeconfig_is_the_default_source_and_falls_back(
    control_plane: ControlPlane, core: Any, namespace: str, node_name: str, tmp_path: Path
) -> None:
    """A kubeconfig found in KUBECONFIG is the pod source; when the API refuses it, kubegc
    goes on without a pod source and says so, unless `--pod-source api` was asked for."""
    uid = make_pod(core, namespace, "a", node_name)
    admin = control_plane.kubeconfig("admin")
    nobody = control_plane.kubeconfig("nobody", tmp_path / "nobody")
    ui: Any = QuietUi()
    inv = load_pod_inventory(Settings(node_name=node_name, env={"KUBECONFIG": str(admin)}), ui)
    assert inv.known and set(inv.pods) == {uid}
    fallback = load_pod_inventory(Settings(node_name=node_name, env={"KUBECONFIG": str(nobody)}),
                                  ui)  # fmt: skip
    assert not fallback.known
    assert any("without a pod source" in w for w in ui.warnings)
    with pytest.raises(ApiUnavailable):  # explicit: no fallback
        load_pod_inventory(
            Settings(pod_source="api", node_name=node_name, env={"KUBECONFIG": str(nobody)}), ui
        )


def test_case_6_forbidden_api_is_exit_3_and_nothing_is_touched(
    control_plane: ControlPlane, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--pod-source api` with an identity that may not list pods: exit 3, one line naming the
    API and the missing permission; kubegc never even reaches the runtime (whose socket here
    does not exist)."""
    from kubegc_cli.cli.main import main

    kubeconfig = control_plane.kubeconfig("nobody")
    with pytest.raises(SystemExit) as exc:
        main(["--pod-source", "api", "--kubeconfig", str(kubeconfig), "--node-name", "n1",
              "-r", "unix:///nonexistent.sock", "gc", "containers", "--yes"])  # fmt: skip
    out, err = capsys.readouterr()
    assert exc.value.code == 3 and out == ""
    assert err.count("\n") == 1 and "403 Forbidden" in err and "list pods" in err
    assert "127.0.0.1" in err and "nonexistent.sock" not in err


def _kubeconfig_via(control_plane: ControlPlane, path: Path, server: str, proxy_url: str) -> Path:
    """The admin's kubeconfig with `server` reached through `proxy_url`."""
    doc = json.loads(control_plane.kubeconfig("admin", path).read_text())
    doc["clusters"][0]["cluster"].update({"server": server, "proxy-url": proxy_url})
    path.write_text(json.dumps(doc))
    return path


def test_a_socks5_proxy_url_reaches_the_api_through_the_proxy_as_kubectl_does(
    control_plane: ControlPlane, core: Any, namespace: str, node_name: str, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    """`proxy-url: socks5://...` (an `ssh -D` tunnel): the pods are read through the proxy,
    TLS checked against the API's name, and that name goes to the proxy unresolved, as
    kubectl sends it (the name may resolve only on the far side)."""
    from tests.unit.recorded_api import serve_socks5

    uid = make_pod(core, namespace, "a", node_name)
    port = int(control_plane.url.rsplit(":", 1)[1])
    spy = ListSpy(monkeypatch)
    with serve_socks5({"kube-api.test": "127.0.0.1"}) as proxy:
        config = _kubeconfig_via(control_plane, tmp_path / "kubeconfig",
                                 f"https://kube-api.test:{port}",
                                 f"socks5://127.0.0.1:{proxy.port}")  # fmt: skip
        inv = load_api_inventory(ApiSource(str(config), None, node_name), timeout=10)
    assert set(inv.pods) == {uid}
    assert proxy.connects == [("kube-api.test", port)]
    assert [c["field_selector"] for c in spy.calls] == [f"spec.nodeName={node_name}"]


def test_a_socks5_proxy_url_works_from_the_command_line(
    control_plane: ControlPlane, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same through `kubegc`: the API pod source read through the proxy; the runtime's
    absence (exit 3) is the only error, nothing about the proxy."""
    from kubegc_cli.cli.main import main
    from tests.unit.recorded_api import serve_socks5

    with serve_socks5() as proxy:
        config = _kubeconfig_via(control_plane, tmp_path / "kubeconfig", control_plane.url,
                                 f"socks5://127.0.0.1:{proxy.port}")  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            main(["--pod-source", "api", "--kubeconfig", str(config), "--node-name", "n1",
                  "-r", "unix:///nonexistent.sock", "gc", "containers", "--dry-run"])  # fmt: skip
    out, err = capsys.readouterr()
    assert "Traceback" not in err and err.count("\n") == 1 and out == "", err
    assert exc.value.code == 3 and "nonexistent.sock" in err
    assert len(proxy.connects) == 1
