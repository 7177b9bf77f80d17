"""Runtime-side residue without a runtime: list-size thresholds on real protobuf replies,
netns paths from verbose sandbox status, dead objects as `gc all` plans them, unused images,
the residue plan's JSON and table, and `--kind` validation."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.commands.residue import ResidueOptions, ResiduePlan
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import Image, Sandbox, SandboxState
from kubegc_cli.core.plan import Result
from kubegc_cli.core.pods import NO_POD_SOURCE, PodInfo, inventory_of
from kubegc_cli.core.residue import (
    DEAD_CONTAINER,
    DEAD_SANDBOX,
    OVERSIZED_LIST,
    POD_DIR,
    TYPES,
    UNUSED_IMAGE,
    Finding,
)
from kubegc_cli.node.cri.client import CriClient, netns_from_info
from kubegc_cli.node.cri.endpoint import Endpoint
from kubegc_cli.node.cri.v1 import api_pb2
from kubegc_cli.node.residue_runtime import _netns_spellings
from kubegc_cli.policy.residue import (
    GRPC_DEFAULT_LIMIT,
    KUBELET_LIMIT,
    TOO_LARGE,
    dead_objects,
    oversized_lists,
    unused_images,
)
from tests.unit.factories import NOW, ctr

MIB = 1024 * 1024


def sandbox_reply(target: int) -> Any:
    """A ListPodSandbox reply whose encoded size is `target` bytes (±1), built from real
    kubelet-shaped items padded with an annotation."""
    items = []
    for i in range(8):
        items.append(
            api_pb2.PodSandbox(
                id=f"{i:064x}",
                metadata=api_pb2.PodSandboxMetadata(name=f"p{i}", uid=f"u{i}", namespace="ns"),
                state=api_pb2.SANDBOX_NOTREADY,
                labels={"io.kubernetes.pod.uid": f"u{i}"},
            )
        )
    reply = api_pb2.ListPodSandboxResponse(items=items)
    pad = target - reply.ByteSize()
    # An annotation entry costs key + value + a few bytes of framing; grow until exact.
    reply.items[0].annotations["pad"] = "x" * max(0, pad - 12)
    while reply.ByteSize() < target:
        reply.items[0].annotations["pad"] += "x"
    while reply.ByteSize() > target:
        reply.items[0].annotations["pad"] = reply.items[0].annotations["pad"][:-1]
    return reply


class FakeRuntime:
    """The two list calls of a CRI RuntimeService stub, answering canned replies."""

    def __init__(self, sandboxes: Any, containers: Any) -> None:
        self.sandboxes, self.containers = sandboxes, containers

    def ListPodSandbox(self, request: Any, timeout: float) -> Any:
        return self.sandboxes

    def ListContainers(self, request: Any, timeout: float) -> Any:
        return self.containers


def fake_client(sandboxes: Any, containers: Any) -> CriClient:
    client = CriClient.__new__(CriClient)
    client.endpoint = Endpoint("/run/fake.sock", "test")
    client.timeout = 1.0
    client.runtime = FakeRuntime(sandboxes, containers)
    return client


@pytest.mark.parametrize(
    ("size", "found"),
    [
        (2 * MIB - 1, False),  # just under half of 4 MiB
        (2 * MIB, True),  # exactly half: warn
        (2 * MIB + 4096, True),
    ],
)
def test_sandbox_list_near_half_the_limit(size: int, found: bool) -> None:
    reply = sandbox_reply(size)
    assert reply.ByteSize() == size
    client = fake_client(reply, api_pb2.ListContainersResponse())
    sandboxes, measured = client.list_sandboxes_sized()
    containers, c_measured = client.list_containers_sized()
    assert measured == size and len(sandboxes) == 8 and containers == [] and c_measured == 0
    sizes = {"ListPodSandbox": (measured, len(sandboxes)), "ListContainers": (c_measured, 0)}
    findings = oversized_lists(sizes)
    assert [f.target for f in findings] == (["ListPodSandbox"] if found else [])
    for f in findings:
        assert f.type == OVERSIZED_LIST and not f.safe and f.bytes is None
        assert f.unsafe_reason and "kubegc gc all" in f.manual and f.clean_action == "nothing"
        assert str(size) in f.evidence and str(GRPC_DEFAULT_LIMIT) in f.evidence
        assert TOO_LARGE in f.evidence and str(KUBELET_LIMIT) in f.evidence
        assert f.details["encoded_bytes"] == size and f.details["items"] == 8
        assert f.details["limit_bytes"] == GRPC_DEFAULT_LIMIT
        assert f.details["percent"] == round(size * 100 / GRPC_DEFAULT_LIMIT, 1)


def test_list_over_the_limit_says_over() -> None:
    (f,) = oversized_lists({"ListContainers": (5 * MIB, 40_000)})
    assert "over gRPC's default receive limit" in f.evidence
    assert f.details["percent"] == 125.0


def test_custom_limit_and_fraction() -> None:
    assert oversized_lists({"ListContainers": (799, 1)}, limit=1000, fraction=0.8) == []
    assert len(oversized_lists({"ListContainers": (800, 1)}, limit=1000, fraction=0.8)) == 1


def containerd_info(namespaces: list[dict[str, str]]) -> dict[str, str]:
    """Verbose PodSandboxStatus info as containerd 1.6 gives it (trimmed)."""
    doc = {
        "pid": 4242,
        "processStatus": "running",
        "netNamespaceClosed": False,
        "runtimeSpec": {"ociVersion": "1.0.2", "linux": {"namespaces": namespaces}},
    }
    return {"info": json.dumps(doc)}


def test_netns_path_from_verbose_status() -> None:
    path = "/var/run/netns/cni-1b2c3d4e-0000-1111-2222-333344445555"
    info = containerd_info([{"type": "pid"}, {"type": "network", "path": path}])
    assert netns_from_info(info) == path
    host_network = containerd_info([{"type": "pid"}, {"type": "ipc"}, {"type": "mount"}])
    assert netns_from_info(host_network) == ""
    assert netns_from_info({}) is None  # a runtime that gives no verbose info
    assert netns_from_info({"info": "not json", "other": "{}"}) is None
    assert netns_from_info(containerd_info([{"type": "network"}])) == ""


def test_netns_spellings_cover_the_var_run_symlink() -> None:
    assert _netns_spellings("/var/run/netns/cni-a") == {"/var/run/netns/cni-a", "/run/netns/cni-a"}
    assert _netns_spellings("/run/netns/cni-a") == {"/var/run/netns/cni-a", "/run/netns/cni-a"}
    assert _netns_spellings("/proc/42/ns/net") == {"/proc/42/ns/net"}


def sandbox(sid: str, uid: str, state: str = "NOTREADY", age_s: int = 60) -> Sandbox:
    return Sandbox(
        id=sid, name=f"pod-{uid}", namespace="default", uid=uid, attempt=0,
        state=SandboxState(state), created_at=NOW - age_s * 1_000_000_000,
    )  # fmt: skip


def test_dead_objects_are_what_gc_all_removes_and_never_safe() -> None:
    live = PodInfo("uid-live", "default", "pod-uid-live")
    pods = inventory_of([live], source="file:pods.json")
    containers = [
        ctr("a" * 64, uid="uid-live", name="app", state="RUNNING"),
        ctr("b" * 64, uid="uid-live", name="job", attempt=0, age_s=900, log_bytes=10),
        ctr("c" * 64, uid="uid-live", name="job", attempt=1, age_s=800, log_bytes=20),
        ctr("d" * 64, uid="uid-gone", name="app", log_bytes=300),
    ]
    sandboxes = [
        sandbox("sb-uid-live", "uid-live", "READY"),
        sandbox("sb-uid-gone", "uid-gone"),  # its only container goes in the same run
        sandbox("sb-old-live", "uid-live", age_s=3600),
    ]
    found = dead_objects(containers, sandboxes, pods, NOW, command="kubegc gc all --pods-file x")
    by_id = {f.target: f for f in found}
    assert set(by_id) == {"b" * 64, "d" * 64, "sb-uid-gone", "sb-old-live"}
    assert by_id["d" * 64].type == DEAD_CONTAINER and by_id["d" * 64].bytes == 300
    assert by_id["d" * 64].details["rule"] == "deleted-pod"
    assert by_id["b" * 64].details["rule"] == "max-per-pod-container"
    assert by_id["sb-uid-gone"].type == DEAD_SANDBOX and by_id["sb-uid-gone"].bytes is None
    assert by_id["sb-uid-gone"].details["rule"] == "deleted-pod"
    assert by_id["sb-old-live"].details["rule"] == "older-sandbox"
    for f in found:
        assert not f.safe and f.unsafe_reason == "removed by `kubegc gc all`"
        assert f.clean_action == "nothing" and f.manual == "kubegc gc all --pods-file x"


def test_dead_objects_without_a_pod_source_treat_no_pod_as_deleted() -> None:
    found = dead_objects(
        [ctr("d" * 64, uid="uid-gone")], [sandbox("sb", "uid-gone")], NO_POD_SOURCE, NOW
    )
    assert found == []  # the newest record of each unit and the newest sandbox stay


def test_unused_images_skip_used_pinned_and_the_sandbox_image() -> None:
    used = replace(ctr("a" * 64), image_id="sha256:used")
    images = [
        Image("sha256:used", ("busybox:1",), size=10),
        Image("sha256:pinned", ("pinned:1",), size=20, pinned=True),
        Image("sha256:pause", ("registry.k8s.io/pause:3.9",), size=30),
        Image("sha256:idle", ("idle:1", "idle:latest"), size=40),
        Image("sha256:untagged", (), size=50),
    ]
    found = unused_images(images, [used], ["registry.k8s.io/pause:3.9"])
    assert [(f.target, f.bytes) for f in found] == [("sha256:idle", 40), ("sha256:untagged", 50)]
    assert all(f.type == UNUSED_IMAGE and not f.safe and "gc images" in f.manual for f in found)
    assert all(f.to_dict()["action"] == "nothing" for f in found)
    assert "idle:1, idle:latest" in found[0].evidence and "untagged" in found[1].evidence


def test_kind_names_are_validated() -> None:
    assert ResidueOptions().selected() == TYPES
    assert ResidueOptions(frozenset({UNUSED_IMAGE, POD_DIR})).selected() == (POD_DIR, UNUSED_IMAGE)
    with pytest.raises(BadInput, match="unknown --kind 'pod-dirs'"):
        ResidueOptions(frozenset({"pod-dirs"})).selected()


def finding(t: str, target: str, size: int | None, safe: bool) -> Finding:
    return Finding(
        type=t, target=target, evidence=f"evidence of {target}", bytes=size, safe=safe,
        action=f"rm -r {target}", unsafe_reason="" if safe else "mounted below it: /x",
        result=Result.PLANNED if safe else Result.KEPT,
    )  # fmt: skip


def sample_plan() -> ResiduePlan:
    safe = finding(POD_DIR, "/var/lib/kubelet/pods/1111", 12288, True)
    kept = [
        finding(POD_DIR, "/var/lib/kubelet/pods/2222", 4096, False),
        finding(UNUSED_IMAGE, "sha256:idle", 40, False),
    ]
    return ResiduePlan(
        kind="ResiduePlan", policy={}, now=NOW, actions=[safe], kept=kept,
        notes=["orphaned-pod-dir: 2 finding(s)", "CNI network cbr0: 1 of 2 reserved leaked."],
        types=(POD_DIR, UNUSED_IMAGE, OVERSIZED_LIST),
    )  # fmt: skip


def test_plan_json_has_findings_and_totals() -> None:
    doc = sample_plan().to_dict()
    assert doc["kind"] == "ResiduePlan"
    assert [a["kind"] for a in doc["actions"] + doc["kept"]] == ["finding"] * 3
    assert doc["actions"][0]["safe_to_clean"] is True and doc["kept"][0]["unsafe_reason"]
    assert doc["totals"][POD_DIR] == {"count": 2, "bytes": 16384, "safe": 1, "safe_bytes": 12288}
    assert doc["totals"][OVERSIZED_LIST] == {"count": 0, "bytes": 0, "safe": 0, "safe_bytes": 0}
    assert doc["runtime"] == {"known": True, "error": None}
    assert doc["summary"]["bytes_planned"] == 12288


def test_table_groups_by_type_with_totals() -> None:
    from kubegc_cli.render.plan import render_plan

    out = io.StringIO()
    render_plan(sample_plan(), out=out)
    text = out.getvalue()
    assert text.index("orphaned-pod-dir") < text.index("/var/lib/kubelet/pods/1111")
    assert text.index("/var/lib/kubelet/pods/2222") < text.index("unused-image")
    assert "orphaned-pod-dir: 2 finding(s), 16Ki; 1 safe to clean (12Ki)" in text
    assert "unused-image: 1 finding(s), 40B; 0 safe to clean (0B)" in text
    assert "not safe: mounted below it: /x" in text
    assert "CNI network cbr0: 1 of 2" in text
    assert "orphaned-pod-dir: 2 finding(s)\n" not in text  # totals notes not repeated
    assert "3 finding(s), 16Ki; 1 safe to clean (12Ki); 2 not safe." in text


def test_unsafe_rows_say_clean_does_nothing_and_what_to_run_by_hand() -> None:
    """An unsafe finding's row shows what `residue clean` does with it (nothing), and,
    separately, what an operator could run; a safe one shows the action clean takes."""
    from kubegc_cli.render.plan import render_plan

    plan = sample_plan()
    plan.kept[1].manual = "kubegc gc images --prune-unused"
    doc = plan.to_dict()
    assert doc["actions"][0]["action"] == "rm -r /var/lib/kubelet/pods/1111"
    assert [k["action"] for k in doc["kept"]] == ["nothing", "nothing"]
    assert [k["manual_action"] for k in doc["kept"]] == [None, "kubegc gc images --prune-unused"]
    out = io.StringIO()
    render_plan(plan, out=out)
    text = out.getvalue()
    assert "rm -r /var/lib/kubelet/pods/1111" in text
    assert "rm -r /var/lib/kubelet/pods/2222" not in text
    assert "CLEAN DOES" in text and "BY HAND" in text
    assert "kubegc gc images --prune-unused" in text


def test_scan_table_is_not_a_dry_run() -> None:
    """`residue scan` is a report: its sections are not titled "(dry run)"; a `residue clean
    --dry-run` plan's are."""
    from kubegc_cli.render.plan import render_plan

    scan = sample_plan()
    scan.scan_only = True
    out = io.StringIO()
    render_plan(scan, out=out)
    assert "(dry run)" not in out.getvalue() and "orphaned-pod-dir" in out.getvalue()
    out = io.StringIO()
    render_plan(sample_plan(), out=out)
    assert "orphaned-pod-dir (dry run)" in out.getvalue()


def test_with_runtime_marks_notready_sandboxes() -> None:
    from kubegc_cli.node.host.scan import ScanContext
    from kubegc_cli.node.residue_runtime import RuntimeFacts, with_runtime

    facts = RuntimeFacts(
        "test", sandboxes=[sandbox("sb-ready", "u1", "READY"), sandbox("sb-dead", "u2")]
    )
    ctx = with_runtime(ScanContext(Path("/")), facts)
    assert ctx.sandbox_ids == {"sb-ready", "sb-dead"}
    assert ctx.notready_sandbox_ids == {"sb-dead"}


def test_table_lists_at_most_20_rows_per_type_without_verbose() -> None:
    from kubegc_cli.render.plan import render_plan

    many = [finding(DEAD_CONTAINER, f"{i:064x}", None, False) for i in range(25)]
    plan = ResiduePlan(kind="ResiduePlan", policy={}, now=NOW, kept=many, types=(DEAD_CONTAINER,))
    out = io.StringIO()
    render_plan(plan, out=out)
    assert "5 more not listed (-v lists all)" in out.getvalue()
    out = io.StringIO()
    render_plan(plan, verbose=1, out=out)
    assert "more not listed" not in out.getvalue() and f"{24:064x}" in out.getvalue()


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from kubegc_cli.cli.main import main

    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def orphan(root: Path) -> Path:
    d = root / "pods" / "1111" / "volumes" / "kubernetes.io~empty-dir" / "cache"
    d.mkdir(parents=True)
    (d / "f").write_bytes(b"x" * 5000)
    return root / "pods" / "1111"


def test_scan_without_runtime_reports_the_host_and_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = orphan(tmp_path / "kubelet")
    (tmp_path / "cni").mkdir()
    pods = tmp_path / "pods.json"
    pods.write_text('{"kind": "PodList", "items": []}')
    argv = [
        "-r", "unix:///nonexistent.sock", "--pods-file", str(pods), "residue", "scan",
        "--root-dir", str(tmp_path / "kubelet"), "--cni-dir", str(tmp_path / "cni"),
        "--kind", "orphaned-pod-dir", "--kind", "dead-container", "-o", "json",
    ]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 3 and err.count("\n") == 1 and "nonexistent.sock" in err
    doc = json.loads(out)
    assert doc["runtime"]["known"] is False and "nonexistent.sock" in doc["runtime"]["error"]
    (f,) = doc["kept"]
    assert f["id"] == str(gone) and f["safe_to_clean"] is False
    assert "runtime" in f["unsafe_reason"] and doc["actions"] == []
    assert doc["totals"]["dead-container"]["count"] == 0


def test_clean_without_runtime_is_exit_3_and_removes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = orphan(tmp_path / "kubelet")
    argv = [
        "-r", "unix:///nonexistent.sock", "--pod-source", "none", "--state-dir",
        str(tmp_path / "state"), "residue", "clean", "--root-dir", str(tmp_path / "kubelet"),
        "--yes",
    ]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 3 and out == "" and err.count("\n") == 1
    assert "nothing was removed" in err and gone.is_dir()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["residue", "scan", "--kind", "pod-dirs"], "'pod-dirs'"),
        (["residue", "clean", "--kind", "leaked-ips", "--yes"], "'leaked-ips'"),
        (["residue", "scan", "--root-dir", "var/lib/kubelet"], "--root-dir"),
        (["residue", "scan", "--cni-dir", "/"], "--cni-dir"),
        (["residue", "scan", "--pod-logs-dir", "logs"], "--pod-logs-dir"),
        (["residue", "clean", "--dry-run", "--yes"], "contradict"),
        (["--snapshot", "x.json", "residue", "scan"], "--snapshot"),
    ],
)
def test_bad_residue_input_is_one_line_exit_2(
    args: list[str], needle: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_cli(["-r", "unix:///nonexistent.sock", *args], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert needle in err


@pytest.mark.parametrize(
    ("flag", "what"),
    [("--root-dir", "the kubelet root"),
     ("--pod-logs-dir", "the pod log directory (--pod-logs-dir)"),
     ("--cni-dir", "the CNI directory (--cni-dir)")],
)  # fmt: skip
def test_a_directory_that_is_not_there_is_exit_3_naming_it_never_nothing_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str, what: str
) -> None:
    """A mistyped flag (or a wrong --host-root) fails as df does, naming the directory."""
    for d in ("kubelet", "logs", "cni"):
        (tmp_path / d).mkdir()
    dirs = {"--root-dir": tmp_path / "kubelet", "--pod-logs-dir": tmp_path / "logs",
            "--cni-dir": tmp_path / "cni"}  # fmt: skip
    dirs[flag] = tmp_path / "missing"
    argv = ["-r", "unix:///nonexistent.sock", "--pod-source", "none", "residue", "scan",
            *(a for f, p in dirs.items() for a in (f, str(p)))]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert code == 3, err
    assert out == "" and "nothing found" not in out + err
    said = f"kubegc: error: cannot read {what} {tmp_path / 'missing'}: No such file or directory"
    assert err.startswith(said) and err.count("\n") == 1, err
    # the kubelet root names the flag to give (and the running kubelet's, when there is one)
    assert ("give --root-dir" in err) is (flag == "--root-dir"), err


@pytest.mark.parametrize(
    "command",
    [
        ["gc", "logs", "--dry-run"],
        ["gc", "all", "--dry-run"],
        ["reclaim", "--dry-run"],
        ["df"],
    ],
)
def test_every_command_given_a_pod_log_directory_that_is_not_there_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """gc logs, gc all and df as residue and reclaim: a --pod-logs-dir that is not there is
    exit 3 in one line naming it, before the runtime is asked — never "nothing to remove"."""
    (tmp_path / "kubelet").mkdir()
    missing = tmp_path / "missing"
    root = ["--root-dir", str(tmp_path / "kubelet")] if command[0] in ("reclaim", "df") else []
    argv = ["-r", "unix:///nonexistent.sock", "--pod-source", "none", "--state-dir",
            str(tmp_path / "s"), *command, *root, "--pod-logs-dir", str(missing)]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert (code, out) == (3, ""), err
    assert err == (
        f"kubegc: error: cannot read the pod log directory (--pod-logs-dir) {missing}: "
        "No such file or directory\n"
    )


def test_gc_images_given_a_kubelet_root_that_is_not_there_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gc images --root-dir` (where the kubelet's pull records are) mistyped is exit 3 in one
    line naming it, before the runtime is asked: never a plan with no pull record read."""
    missing = tmp_path / "nope"
    argv = ["-r", "unix:///nonexistent.sock", "--state-dir", str(tmp_path / "s"), "gc",
            "images", "--dry-run", "--root-dir", str(missing)]  # fmt: skip
    code, out, err = run_cli(argv, capsys)
    assert (code, out) == (3, ""), err
    assert err.startswith(f"kubegc: error: cannot read the kubelet root {missing}: No such file")
    assert err.count("\n") == 1 and "give --root-dir" in err
