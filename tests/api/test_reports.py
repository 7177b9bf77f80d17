"""NodeGCReports against a real kube-apiserver (and kube-controller-manager's garbage
collector): the CRD as deploy/kubernetes ships it, `node.fleet.reports` writing and reading
through the status subresource, the printer columns as the server prints them, the
ownerReference to the Node, and `kubegc fleet` over the reports.

The Nodes are made through the API as the admin (no kubelet: a Node object is all a report
needs). Every test uses node names of its own; the reports of other tests of the run are
there too, and the checks over the whole list hold for them as well.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubegc_cli.core.fleet import (
    GROUP,
    PLURAL,
    TOP,
    VERSION,
    Category,
    EvictCandidate,
    LastApply,
    NodeReport,
    SignalMargin,
)
from kubegc_cli.core.units import format_bytes, ns_to_rfc3339
from kubegc_cli.node.fleet.reports import list_reports, read_report, write_report
from kubegc_cli.node.pods.api import ApiUnavailable
from tests.conftest import DEPLOY
from tests.controlplane import ControlPlane

CRD_FILE = DEPLOY / "crd-nodegcreport.yaml"
CRD_NAME = f"{PLURAL}.{GROUP}"
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
GiB = 1 << 30


def apply_crd(api_client: Any) -> dict[str, Any]:
    """Create the CRD from deploy/ (an existing one is kept) and wait until it is
    Established; returns it as the server holds it."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    ext: Any = client.ApiextensionsV1Api(api_client)
    try:
        ext.create_custom_resource_definition(yaml.safe_load(CRD_FILE.read_text()))
    except ApiException as exc:
        if exc.status != 409:
            raise
    deadline = time.monotonic() + 30
    while True:
        crd = api_client.sanitize_for_serialization(ext.read_custom_resource_definition(CRD_NAME))
        conditions = {c["type"]: c["status"] for c in crd.get("status", {}).get("conditions", [])}
        if conditions.get("Established") == "True" or time.monotonic() > deadline:
            return dict(crd)
        time.sleep(0.2)


@pytest.fixture(scope="module")
def crd(admin: Any) -> dict[str, Any]:
    return apply_crd(admin)


@pytest.fixture(scope="module")
def core(admin: Any) -> Any:
    from kubernetes import client

    return client.CoreV1Api(admin)


def make_node(core: Any, name: str) -> str:
    """A Node `name` (an object only); returns its uid."""
    return str(core.create_node({"metadata": {"name": name}}).metadata.uid)


@pytest.fixture
def node(core: Any, crd: dict[str, Any]) -> str:
    name = f"node-{uuid.uuid4().hex[:8]}"
    make_node(core, name)
    return name


def raw(admin: Any, name: str) -> dict[str, Any]:
    from kubernetes import client

    found = client.CustomObjectsApi(admin).get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
    assert isinstance(found, dict)
    return found


def full_report(node: str, *, observed: str = "2026-12-05T03:00:00Z", **changes: Any) -> NodeReport:
    """A report with every field set, nulls where the schema allows them."""
    fields: dict[str, Any] = {
        "node": node,
        "observed_at": observed,
        "mode": "apply",
        "version": "0.22.0",
        "categories": (
            Category("images", 40 * GiB, 12 * GiB),
            Category("writable-layers", None, None),
            Category("container-logs", 3 * GiB, 5 * 10**12),  # above 2^32: int64 kept whole
        ),
        "reclaimable": 12 * GiB + 5 * 10**12,
        "signals": (
            SignalMargin("nodefs.available", "10%", 9 * GiB, -1 * GiB, True),
            SignalMargin("nodefs.inodesFree", "5%", 900_000, 400_000, False),
            SignalMargin("imagefs.available", "15%", None, None, False, hard=False),
        ),
        "conditions": ("DiskPressure", "PIDPressure"),
        "evict_first": tuple(
            EvictCandidate("ns", f"pod-{i}", "nodefs.available") for i in range(TOP)
        ),
        "residue": {"orphaned-pod-dir": 3, "netns": 0},
        "last_apply": LastApply(
            "2026-12-05T02:55:00Z",
            ("gc containers", "gc images"),
            17,
            8 * GiB,
            1,
            "image sha256:ab in use",
        ),
        "error": "",
        "paused": "apply window closed",
    }
    fields.update(changes)
    return NodeReport(**fields)


# --- the CRD --------------------------------------------------------------------------------


def test_the_crd_from_deploy_is_established_with_a_structural_schema(crd: dict[str, Any]) -> None:
    conditions = {c["type"]: c for c in crd["status"]["conditions"]}
    assert conditions["Established"]["status"] == "True"
    assert conditions["NamesAccepted"]["status"] == "True"
    assert "NonStructuralSchema" not in conditions
    [version] = crd["spec"]["versions"]
    assert crd["spec"]["scope"] == "Cluster" and version["name"] == VERSION
    assert version["served"] and version["storage"] and "status" in version["subresources"]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]
    assert status["properties"]["evictFirst"]["maxItems"] == TOP  # the bound to_status keeps
    assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(status)


# --- write and read -------------------------------------------------------------------------


def test_a_report_reads_back_exactly_as_written(admin: Any, node: str) -> None:
    """Nothing is pruned or changed by the schema: the stored status is `to_status()`, key
    for key, nulls and 64-bit integers included, and reads back as the same report."""
    report = full_report(node)
    write_report(admin, report)
    assert raw(admin, node)["status"] == report.to_status()
    assert read_report(admin, node) == report
    bare = NodeReport(node, "2026-12-05T03:01:00Z")  # defaults: no lastApply, empty lists
    write_report(admin, bare)
    assert raw(admin, node)["status"] == bare.to_status()
    assert read_report(admin, node) == bare


def test_the_report_is_owned_by_its_node(admin: Any, core: Any, node: str) -> None:
    write_report(admin, full_report(node))
    meta = raw(admin, node)["metadata"]
    uid = core.read_node(node).metadata.uid
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}
    ]


def test_a_second_write_with_only_the_observation_time_changed_updates_the_status(
    admin: Any, node: str
) -> None:
    write_report(admin, full_report(node, observed="2026-12-05T03:00:00Z"))
    first = raw(admin, node)
    write_report(admin, full_report(node, observed="2026-12-05T03:05:00Z"))
    second = raw(admin, node)
    assert second["status"]["observedAt"] == "2026-12-05T03:05:00Z"
    assert second["metadata"]["uid"] == first["metadata"]["uid"]  # updated, not re-created
    assert second["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    assert {**second["status"], "observedAt": ""} == {**first["status"], "observedAt": ""}


def test_a_write_is_three_requests_the_first_four(
    admin: Any, node: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a write costs the API server (the fleet's arithmetic counts on it): GET the Node,
    GET the report, PUT the status; the first write also POSTs the report."""
    sent: list[tuple[str, str]] = []
    call_api = admin.call_api

    def spy(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        sent.append((method, url.rsplit("/", 1)[-1]))
        return call_api(method, url, *args, **kwargs)

    monkeypatch.setattr(admin, "call_api", spy)
    write_report(admin, full_report(node))
    assert [m for m, _ in sent] == ["GET", "GET", "POST", "PUT"] and sent[-1][1] == "status"
    sent.clear()
    write_report(admin, full_report(node, observed="2026-12-05T03:30:00Z"))
    assert [m for m, _ in sent] == ["GET", "GET", "PUT"] and sent[-1][1] == "status"


def test_a_report_of_a_node_that_does_not_exist_is_refused_in_one_line(admin: Any) -> None:
    with pytest.raises(ApiUnavailable) as err:
        write_report(admin, full_report(f"absent-{uuid.uuid4().hex[:6]}"))
    assert "\n" not in str(err.value) and "404" in str(err.value)
    assert str(err.value).startswith("Kubernetes API https://127.0.0.1:")


def test_an_identity_granted_nothing_cannot_list_and_says_what_it_needs(
    control_plane: ControlPlane, crd: dict[str, Any]
) -> None:
    from kubernetes import config

    nobody = config.new_client_from_config(str(control_plane.kubeconfig("nobody")))
    with pytest.raises(ApiUnavailable) as err:
        list_reports(nobody)
    assert "403 Forbidden: kubegc needs permission to list nodegcreports.kubegc.io" in str(
        err.value
    )


def test_list_reads_every_page(admin: Any, core: Any, crd: dict[str, Any]) -> None:
    names = [f"page-{uuid.uuid4().hex[:8]}" for _ in range(5)]
    for name in names:
        make_node(core, name)
        write_report(admin, full_report(name))
    listed = {r.node: r for r in list_reports(admin, page_size=2)}
    assert set(names) <= set(listed)
    assert all(listed[n] == full_report(n) for n in names)
    assert [r.node for r in list_reports(admin, page_size=2)] == [
        r.node for r in list_reports(admin)
    ]


class Interfering:
    """Wraps the client's status replace (the real call, unchanged) so that just before it,
    another writer changes the report through the real API: the server then answers 409
    Conflict, as it would to two agents racing. `times` such writes at most."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, admin: Any, times: int) -> None:
        from kubernetes import client

        self.calls = 0
        original = client.CustomObjectsApi.replace_cluster_custom_object_status

        def replace_status(api: Any, group: str, version: str, plural: str, name: str,
                           body: Any, **kw: Any) -> Any:  # fmt: skip
            self.calls += 1
            if self.calls <= times:
                other = client.CustomObjectsApi(admin)
                obj = other.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
                obj["status"]["error"] = f"written by another writer ({self.calls})"
                original(other, GROUP, VERSION, PLURAL, name, obj)
            return original(api, group, version, plural, name, body, **kw)

        monkeypatch.setattr(client.CustomObjectsApi, "replace_cluster_custom_object_status",
                            replace_status)  # fmt: skip


def test_a_conflicting_write_is_retried_once_from_a_fresh_read(
    admin: Any, node: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_report(admin, full_report(node))
    spy = Interfering(monkeypatch, admin, times=1)
    report = full_report(node, observed="2026-12-05T03:20:00Z")
    write_report(admin, report)
    assert spy.calls == 2
    assert raw(admin, node)["status"] == report.to_status()  # the other write replaced whole


def test_a_second_conflict_is_unavailable_in_one_line(
    admin: Any, node: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_report(admin, full_report(node))
    Interfering(monkeypatch, admin, times=2)
    with pytest.raises(ApiUnavailable) as err:
        write_report(admin, full_report(node, observed="2026-12-05T03:20:00Z"))
    assert "409 Conflict" in str(err.value) and str(err.value).endswith("(twice)")
    assert "\n" not in str(err.value) and f"NodeGCReport of node {node}" in str(err.value)
    assert raw(admin, node)["status"]["error"] == "written by another writer (2)"


# --- printer columns ------------------------------------------------------------------------


def get_table(control_plane: ControlPlane, **query: str) -> dict[str, Any]:
    """GET the reports in the Table form, as kubectl asks for them."""
    url = f"{control_plane.url}/apis/{GROUP}/{VERSION}/{PLURAL}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    ctx = ssl.create_default_context(cafile=str(control_plane.work / "ca.crt"))
    request = urllib.request.Request(url, headers={
        "Authorization": f"Bearer {control_plane.tokens['admin']}", "Accept": TABLE})  # fmt: skip
    with urllib.request.urlopen(request, context=ctx, timeout=30) as resp:
        doc = json.load(resp)
    assert doc["kind"] == "Table"
    return dict(doc)


def test_the_printer_columns_are_the_fleets_df(
    control_plane: ControlPlane, admin: Any, node: str
) -> None:
    report = full_report(node)
    write_report(admin, report)
    table = get_table(control_plane, fieldSelector=f"metadata.name={node}")
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names == ["Name", "Reclaimable", "Nearest signal", "Pressure", "Mode",
                     "Last apply", "Observed", "Age"]  # fmt: skip
    [row] = table["rows"]
    cell = dict(zip(names, row["cells"], strict=True))
    assert cell["Name"] == node and cell["Reclaimable"] == report.reclaimable
    assert cell["Nearest signal"] == "nodefs.available" and cell["Mode"] == "apply"
    # every condition, as text (a list would print as JSON, a JSON path to each element
    # would print the first only)
    assert cell["Pressure"] == "DiskPressure,PIDPressure"
    # dates as kubectl shows them: an age relative to now (the report's times are past)
    assert cell["Observed"].endswith(("d", "h", "m", "s")) and cell["Last apply"]


def test_sort_by_reclaimable_bytes_finds_the_field_in_every_report(
    control_plane: ControlPlane, admin: Any, core: Any, crd: dict[str, Any]
) -> None:
    """`kubectl get nodegcreports --sort-by=.status.reclaimableBytes` asks for the Table
    with each row's object and sorts by that JSON path: it must be in every report (kubectl
    fails on one without it)."""
    mine = {}
    for gib in (3, 1, 2):
        name = f"sort-{uuid.uuid4().hex[:8]}"
        make_node(core, name)
        write_report(admin, full_report(name, reclaimable=gib * GiB))
        mine[name] = gib * GiB
    table = get_table(control_plane, includeObject="Object")
    objects = [row["object"] for row in table["rows"]]
    assert all(isinstance(o["status"]["reclaimableBytes"], int) for o in objects)
    ranked = [o["metadata"]["name"] for o in
              sorted(objects, key=lambda o: o["status"]["reclaimableBytes"])]  # fmt: skip
    assert [n for n in ranked if n in mine] == sorted(mine, key=mine.__getitem__)


# --- owned by the Node ----------------------------------------------------------------------


def wait_gone(admin: Any, name: str, seconds: float) -> bool:
    from kubernetes.client.exceptions import ApiException

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            raw(admin, name)
        except ApiException as exc:
            assert exc.status == 404
            return True
        time.sleep(0.5)
    return False


def test_the_garbage_collector_deletes_the_report_with_its_node(
    admin: Any, core: Any, node: str
) -> None:
    """The Node deleted, kube-controller-manager's garbage collector deletes its report (it
    finds a new kind within its 30 s discovery resync: up to 90 s here)."""
    write_report(admin, full_report(node))
    core.delete_node(node)
    assert wait_gone(admin, node, 90), "the report outlived its Node by 90 s"


@pytest.fixture(scope="module")
def no_gc(control_plane: ControlPlane) -> Iterator[Any]:
    """A second control plane without the garbage collector (nothing races the write), as
    the admin; the CRD is not applied until a test applies it."""
    from kubernetes import config

    with tempfile.TemporaryDirectory(prefix="kubegc-nogc-") as work:
        cp = ControlPlane.start(control_plane.bin_dir, Path(work), controller_manager=False)
        try:
            yield config.new_client_from_config(str(cp.kubeconfig("admin")))
        finally:
            cp.stop()


def test_without_the_crd_writing_and_listing_say_to_apply_it(no_gc: Any) -> None:
    """(Before the next test applies the CRD to this control plane.)"""
    from kubernetes import client

    name = f"node-{uuid.uuid4().hex[:8]}"
    make_node(client.CoreV1Api(no_gc), name)
    for call in (lambda: write_report(no_gc, full_report(name)), lambda: list_reports(no_gc)):
        with pytest.raises(ApiUnavailable) as err:
            call()
        assert "404" in str(err.value) and "\n" not in str(err.value)
        assert str(err.value).endswith("apply deploy/kubernetes/crd-nodegcreport.yaml)")


def test_a_node_recreated_under_the_same_name_gets_the_owner_reference_fixed(
    no_gc: Any,
) -> None:
    from kubernetes import client

    apply_crd(no_gc)
    core: Any = client.CoreV1Api(no_gc)
    name = f"node-{uuid.uuid4().hex[:8]}"
    make_node(core, name)
    write_report(no_gc, full_report(name))
    before = raw(no_gc, name)
    core.delete_node(name)
    uid = make_node(core, name)
    write_report(no_gc, full_report(name, observed="2026-12-05T03:10:00Z"))
    after = raw(no_gc, name)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]  # fixed in place
    assert after["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}
    ]
    assert after["status"]["observedAt"] == "2026-12-05T03:10:00Z"


def test_a_report_deleted_with_its_node_comes_back_owned_by_the_new_node(
    admin: Any, core: Any, node: str
) -> None:
    """With the garbage collector running: whatever it did in between, after a write the
    re-created Node owns the report and the collector leaves it."""
    write_report(admin, full_report(node))
    core.delete_node(node)
    uid = make_node(core, node)
    write_report(admin, full_report(node))
    time.sleep(3)  # the collector has seen the old Node's deletion by now
    write_report(admin, full_report(node))
    assert raw(admin, node)["metadata"]["ownerReferences"][0]["uid"] == uid
    assert not wait_gone(admin, node, 5)


# --- kubegc fleet ---------------------------------------------------------------------------


def run_fleet(control_plane: ControlPlane, capsys: pytest.CaptureFixture[str],
              *args: str) -> tuple[int, str, str]:  # fmt: skip
    from kubegc_cli.cli.main import main

    config = control_plane.kubeconfig("admin")
    with pytest.raises(SystemExit) as exc:
        main(["--kubeconfig", str(config), "fleet", *args])
    out, err = capsys.readouterr()
    assert isinstance(exc.value.code, int)
    return exc.value.code, out, err


@pytest.fixture
def three(admin: Any, core: Any, crd: dict[str, Any]) -> dict[str, NodeReport]:
    """Three reports: fresh, stale (observed 2 h ago), and fresh with a failed cycle."""
    now = time.time_ns()
    tag = uuid.uuid4().hex[:6]
    reports = {
        "fresh": full_report(
            f"fresh-{tag}", observed=ns_to_rfc3339(now), reclaimable=10**15 + now // 1000
        ),  # the most, the newest
        "stale": full_report(f"stale-{tag}", observed=ns_to_rfc3339(now - 7200 * 10**9)),
        "failing": full_report(
            f"failing-{tag}",
            observed=ns_to_rfc3339(now),
            error="the runtime did not answer: unix:///run/c.sock",
        ),
    }
    for r in reports.values():
        make_node(core, r.node)
        write_report(admin, r)
    return reports


def test_kubegc_fleet_json_is_every_report_whole(
    control_plane: ControlPlane, capsys: pytest.CaptureFixture[str], three: dict[str, NodeReport]
) -> None:
    code, out, err = run_fleet(control_plane, capsys, "-o", "json", "--top", "0")
    assert code == 0, err
    doc = json.loads(out)
    nodes = {n["node"]: n for n in doc["nodes"]}
    for key, r in three.items():
        assert nodes[r.node]["status"] == r.to_status()
        assert nodes[r.node]["stale"] is (key == "stale")
        assert nodes[r.node]["failing"] is (key == "failing")
    assert doc["by_reclaimable"][0] == three["fresh"].node  # 10^15 bytes: the most
    assert {three["stale"].node, three["failing"].node} <= set(doc["not_current"])
    assert three["fresh"].node not in doc["not_current"]
    assert doc["summary"]["nodes"] == len(doc["nodes"])
    assert doc["summary"]["reclaimable_bytes"] == sum(
        n["status"]["reclaimableBytes"] for n in doc["nodes"]
    )
    code, out, err = run_fleet(control_plane, capsys, "-o", "yaml", "--top", "0")
    assert code == 0, err
    as_yaml = {n["node"]: n["status"] for n in yaml.safe_load(out)["nodes"]}
    assert all(as_yaml[r.node] == r.to_status() for r in three.values())


def test_kubegc_fleet_table_shows_the_three_lists(
    control_plane: ControlPlane, capsys: pytest.CaptureFixture[str], three: dict[str, NodeReport]
) -> None:
    code, out, err = run_fleet(control_plane, capsys, "--top", "1")
    assert code == 0, err
    by_reclaimable, nearest, not_current = out.split("\n\n")[:3]
    assert by_reclaimable.startswith("Nodes by reclaimable bytes (top 1 of ")
    assert three["fresh"].node in by_reclaimable
    assert format_bytes(three["fresh"].reclaimable) in by_reclaimable
    assert nearest.startswith("Nodes nearest to eviction (top 1 of ") and "MET" in nearest
    assert not_current.startswith("Reports not current (stale after 40m")
    stale_line = next(ln for ln in not_current.splitlines() if three["stale"].node in ln)
    assert "2h" in stale_line and "stale" in stale_line
    failing_line = next(ln for ln in not_current.splitlines() if three["failing"].node in ln)
    assert "failing" in failing_line and "the runtime did not answer" in failing_line
    assert out.splitlines()[-1].startswith(tuple(f"{n} node(s): " for n in range(1, 10_000)))


@pytest.mark.parametrize(("width", "height", "term"), [(80, 24, "dumb"), (160, 45, "xterm")])
def test_kubegc_fleet_in_a_terminal_cuts_no_figure_or_node_name(
    control_plane: ControlPlane, three: dict[str, NodeReport], width: int, height: int, term: str
) -> None:
    """`kubegc fleet` in a real terminal (tmux): every node name whole (folded only where the
    terminal would fold it), every reclaimable figure whole, no ellipsis."""
    import sys

    from tests.tmuxpane import run_in_pane

    config = control_plane.kubeconfig("admin")
    argv = [sys.executable, "-m", "kubegc_cli", "--kubeconfig", str(config), "fleet", "--top", "0"]
    code, screen = run_in_pane(argv, width, height, term=term)
    assert code == 0, screen
    assert "…" not in screen and all(len(r) <= width for r in screen.splitlines())
    words, whole = set(screen.split()), "".join(r.strip() for r in screen.splitlines())
    for r in three.values():
        assert r.node in whole and format_bytes(r.reclaimable) in words, (r.node, screen)
    assert "MET" in screen and "failing" in " ".join(words)


def test_kubegc_fleet_exit_codes(
    control_plane: ControlPlane, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    crd: dict[str, Any],
) -> None:  # fmt: skip
    from kubegc_cli.cli.main import main

    code, _, err = run_fleet(control_plane, capsys, "--stale", "soon")
    assert code == 2 and "--stale" in err and "Traceback" not in err
    nobody = control_plane.kubeconfig("nobody", tmp_path / "nobody")
    with pytest.raises(SystemExit) as exc:
        main(["--kubeconfig", str(nobody), "fleet"])
    _, err = capsys.readouterr()
    assert exc.value.code == 3 and err.count("\n") == 1
    assert "403 Forbidden" in err and "nodegcreports" in err


def test_forged_reports_neither_blind_the_fleet_nor_hold_the_breaker(
    control_plane: ControlPlane, capsys: pytest.CaptureFixture[str], admin: Any, core: Any,
    crd: dict[str, Any], deployed: list[str],
) -> None:  # fmt: skip
    """An agent's identity may create any report (RBAC cannot name its node). One holding a
    NUL, and "ghost" reports of no Node with a fresh successful apply: the list reads on,
    each forged report comes back observed never with why, `kubegc fleet` shows it as stale,
    and the breaker counts only the reports their Nodes own — 5 failed applies of 5 owned
    reports keep it open whatever 25 ghosts say."""
    from kubernetes import client, config

    from kubegc_cli.policy.fleet import breaker

    agent = client.CustomObjectsApi(
        config.new_client_from_config(str(control_plane.kubeconfig("kubegc-agent")))
    )
    tag = uuid.uuid4().hex[:6]
    made: list[str] = []
    try:
        now = time.time_ns()
        stamp = ns_to_rfc3339(now - 60 * 10**9)
        failed = []
        for i in range(5):
            name = f"owned-{tag}-{i}"
            made.append(name)
            make_node(core, name)
            write_report(admin, full_report(name, observed=stamp, last_apply=LastApply(
                stamp, ("gc all",), 0, 0, 3, "")))  # fmt: skip
            failed.append(name)
        ok = {"at": stamp, "plans": ["gc all"], "removed": 9, "bytesFreed": 1, "failures": 0,
              "error": ""}  # fmt: skip
        ghosts = [f"ghost-{tag}-{i}" for i in range(25)]
        for name in [*ghosts, f"nul-{tag}"]:
            made.append(name)
            agent.create_cluster_custom_object(GROUP, VERSION, PLURAL, {
                "apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeGCReport",
                "metadata": {"name": name}})  # fmt: skip
            status = {"observedAt": stamp, "lastApply": ok}
            if name.startswith("nul-"):
                status["error"] = "x\x00"
            body = agent.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
            body["status"] = status
            agent.replace_cluster_custom_object_status(GROUP, VERSION, PLURAL, name, body)

        listed = {r.node: r for r in list_reports(admin)}
        assert listed[f"nul-{tag}"].observed_at == "" and listed[f"nul-{tag}"].last_apply is None
        assert "report unreadable" in listed[f"nul-{tag}"].error
        assert "holds a NUL character" in listed[f"nul-{tag}"].error
        assert all(listed[g].error == f"report ignored: not owned by Node {g}" for g in ghosts)
        assert all(listed[g].last_apply is None for g in ghosts)
        mine = [listed[n] for n in (*failed, *ghosts, f"nul-{tag}")]
        assert breaker(mine, now / 1e9, window=3600, max_failed_percent=20).startswith(
            "5 of 5 applies in the last 1h failed")  # fmt: skip

        code, out, err = run_fleet(control_plane, capsys, "-o", "json", "--top", "0")
        assert code == 0, err
        nodes = {n["node"]: n for n in json.loads(out)["nodes"]}
        assert nodes[f"nul-{tag}"]["stale"] is True and nodes[ghosts[0]]["stale"] is True
        code, out, err = run_fleet(control_plane, capsys, "--top", "1")
        assert code == 0 and f"report ignored: not owned by Node {ghosts[0]}" in out, err
    finally:  # failed applies left in the API would open the breaker of later apply tests
        objects = client.CustomObjectsApi(admin)
        for name in made:
            with contextlib.suppress(client.ApiException):
                objects.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
            with contextlib.suppress(client.ApiException):
                core.delete_node(name)


def test_a_page_of_reports_too_large_to_be_kubegcs_is_not_read(
    admin: Any, crd: dict[str, Any], deployed: list[str], control_plane: ControlPlane,
) -> None:  # fmt: skip
    """Reports an agent's token can create but kubegc never writes (250 KiB of annotations
    and 10,000 finalizers each, about 850 KiB): a page of them over 16 MiB is refused in one
    line, not read into memory (an agent's memory limit is 512 MiB); in smaller pages they
    are read."""
    from kubernetes import client, config

    from kubegc_cli.node.fleet import reports

    agent = client.CustomObjectsApi(
        config.new_client_from_config(str(control_plane.kubeconfig("kubegc-agent")))
    )
    tag = uuid.uuid4().hex[:6]
    notes = {f"x.example/{i}": "y" * 1000 for i in range(250)}
    finalizers = [f"x.example/finalizer-{i:05d}-{'z' * 30}" for i in range(10_000)]
    names = [f"fat-{tag}-{i}" for i in range(25)]
    try:
        for name in names:
            agent.create_cluster_custom_object(GROUP, VERSION, PLURAL, {
                "apiVersion": f"{GROUP}/{VERSION}", "kind": "NodeGCReport",
                "metadata": {"name": name, "annotations": notes,
                             "finalizers": finalizers}})  # fmt: skip
        with pytest.raises(ApiUnavailable) as err:
            reports.list_reports(admin)
        assert "a page of 100 reports is larger than 16 MiB" in str(err.value)
        assert str(err.value).count("\n") == 0
        assert {r.node for r in reports.list_reports(admin, page_size=5)} >= set(names)
    finally:
        objects = client.CustomObjectsApi(admin)
        for name in names:
            with contextlib.suppress(client.ApiException):
                objects.patch_cluster_custom_object(
                    GROUP, VERSION, PLURAL, name, {"metadata": {"finalizers": None}}
                )
                objects.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
