"""`--events`: which Events a run warrants, the Event kubegc posts (as the kubelet's own Node
events, checked against the core/v1 schema), the rate limit, and that failing to post never
fails a run — against the recorded API server with the official client where a fault must be
injected (`test_fault_*`); posting, the rate limit and refusals against the real kube-apiserver
are in tests/api/test_events.py."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import kubernetes_validate
import pytest

from kubegc_cli.cli.main import main
from kubegc_cli.commands.residue import ResiduePlan
from kubegc_cli.core.model import Image
from kubegc_cli.core.plan import ContainerAction, ImageAction, LogAction, Plan, Result
from kubegc_cli.core.residue import Finding
from kubegc_cli.core.settings import Settings
from kubegc_cli.report.events import (
    MAX_MESSAGE,
    NodeEvent,
    event_body,
    events_for,
    record_events,
)
from tests.unit.factories import NOW, ctr
from tests.unit.recorded_api import RecordedApi, api_pod, serve_recorded_api

T = 1_800_000_000.0
MiB = 1 << 20


def container(i: int, result: Result, freed: int = 0, error: str = "") -> ContainerAction:
    a = ContainerAction(ctr(f"c{i:02d}" * 8), "deleted-pod", "gone", result, error=error)
    a.bytes_freed = freed
    return a


def plan_of(actions: list[Any], *, dry_run: bool = False, **kw: Any) -> Plan[Any]:
    return Plan(kind="GCPlan", policy=kw.pop("policy", {}), now=NOW, actions=actions,
                dry_run=dry_run, **kw)  # fmt: skip


def image(result: Result, size: int = 1000, error: str = "") -> ImageAction:
    a = ImageAction(Image(id=f"sha256:{size}", repo_tags=("x:1",), size=size), 0, 0, "space",
                    "lru", result, error=error)  # fmt: skip
    a.bytes_freed = size if result is Result.REMOVED else 0
    return a


def reasons(events: list[NodeEvent]) -> list[tuple[str, str]]:
    return [(e.reason, e.type) for e in events]


# --- which Events ---------------------------------------------------------------------------


def test_container_gc_succeeded_and_failed() -> None:
    log = LogAction("pod-log-dir", "/var/log/pods/a_b_c", "/var/log/pods/a_b_c", "c", "deleted-pod",
                    "gone", result=Result.REMOVED)  # fmt: skip
    ok = plan_of([container(0, Result.REMOVED, 2048), container(1, Result.SKIPPED), log])
    log.bytes = 2048
    ok.filesystems = [
        {
            "roles": ["logs"],
            "path": "/var/log",
            "capacity": 9 * MiB,
            "available_before": MiB,
            "available_after": 2 * MiB,
            "regained": MiB,
        }
    ]
    [ev] = events_for("gc all", ok, 0)
    assert (ev.reason, ev.type) == ("ContainerGCSucceeded", "Normal")
    assert ev.message == (
        "removed 1 container(s), 1 pod log dir(s); 2Ki expected, 1Mi regained (measured)"
    )  # the summary's figures: what the removed rows expected, what statvfs measured
    bad = plan_of([container(0, Result.REMOVED), container(1, Result.FAILED, error="rpc: boom")])
    [ev] = events_for("gc containers", bad, 1)
    assert (ev.reason, ev.type) == ("ContainerGCFailed", "Warning")
    assert ev.message.startswith("1 of 2 removal(s) failed: rpc: boom")


def test_dry_runs_and_empty_runs_post_nothing() -> None:
    assert events_for("gc all", plan_of([container(0, Result.PLANNED)], dry_run=True), 0) == []
    assert events_for("gc all", plan_of([]), 0) == []
    assert events_for("gc all", None, 3) == []
    assert events_for("history", object(), 0) == []


def test_image_gc_freed_failed_and_free_disk_space_failed() -> None:
    freed = plan_of([image(Result.REMOVED, 3 * MiB)],
                    filesystem={"bytes_to_free": 100, "regained": 2 * MiB})  # fmt: skip
    freed.filesystems = [{"roles": ["imagefs"], "path": "/i", "capacity": 9 * MiB,
                          "available_before": MiB, "available_after": 3 * MiB,
                          "regained": 2 * MiB}]  # fmt: skip
    assert reasons(events_for("gc images", freed, 0)) == [("ImageGCFreed", "Normal")]
    assert events_for("gc images", freed, 0)[0].message == (
        "removed 1 image(s); about 3Mi expected (image sizes as the runtime reports them), 2Mi "
        "regained (measured)"
    )
    short = plan_of([image(Result.REMOVED, 600), image(Result.FAILED, 5, error="in use")],
                    filesystem={"bytes_to_free": 1000}, shortfall=400)  # fmt: skip
    evs = events_for("gc images", short, 1)
    assert reasons(evs) == [("ImageGCFailed", "Warning"), ("FreeDiskSpaceFailed", "Warning")]
    assert evs[1].message == (
        "Failed to garbage collect required amount of images. Attempted to free 1000 bytes, "
        "but only found 600 bytes eligible to free."
    )


def test_free_disk_space_failed_when_no_image_is_eligible() -> None:
    """Short of the target with nothing to remove: the kubelet's FreeDiskSpaceFailed all the
    same (the plan has no action to tell its kind by)."""
    none = Plan(kind="ImageGCPlan", policy={}, now=NOW, dry_run=False, shortfall=1000,
                filesystem={"bytes_to_free": 1000})  # fmt: skip
    [ev] = events_for("gc images", none, 1)
    assert (ev.reason, ev.type) == ("FreeDiskSpaceFailed", "Warning")
    assert "Attempted to free 1000 bytes, but only found 0 bytes eligible" in ev.message
    none.dry_run = True
    assert events_for("gc images", none, 0) == []


def test_evicted_pods_pruned() -> None:
    from kubegc_cli.core.plan import PodAction

    def pod(name: str, result: Result) -> PodAction:
        return PodAction("ns", name, "u", "1", "node-a", "", "", 0, "", "evicted", "", result,
                         error="403 Forbidden" if result is Result.FAILED else "")  # fmt: skip

    p = plan_of([pod("a", Result.REMOVED), pod("b", Result.REMOVED), pod("c", Result.FAILED)],
                policy={"all_nodes": False})  # fmt: skip
    evs = events_for("evict prune", p, 1)
    assert reasons(evs) == [("EvictedPodsPruned", "Normal"), ("EvictedPodsPruneFailed", "Warning")]
    assert evs[0].message == "deleted 2 Evicted pod(s) on this node"


def test_residue_found_counts_what_is_left() -> None:
    def finding(t: str, safe: bool, size: int | None, result: Result = Result.PLANNED) -> Finding:
        return Finding(t, f"/x/{t}/{size}", "why", size, safe, "rm", result=result)

    scan = ResiduePlan(kind="ResiduePlan", policy={}, now=NOW,
                       actions=[finding("orphaned-pod-dir", True, MiB)],
                       kept=[finding("leaked-netns", False, None),
                             finding("orphaned-pod-dir", False, MiB)],
                       types=("orphaned-pod-dir", "leaked-netns"))  # fmt: skip
    [ev] = events_for("residue scan", scan, 0)
    assert (ev.reason, ev.type) == ("ResidueFound", "Warning")
    assert ev.message == (
        "3 residue finding(s), 2Mi on disk: 2 orphaned-pod-dir, 1 leaked-netns; "
        "1 safe to clean (kubegc residue clean)"
    )
    scan.actions[0].result = Result.REMOVED  # residue clean removed the safe one
    scan.dry_run = False
    [ev] = events_for("residue clean", scan, 0)
    assert ev.message.startswith("2 residue finding(s)")
    clean = ResiduePlan(kind="ResiduePlan", policy={}, now=NOW, types=("leaked-netns",))
    assert events_for("residue scan", clean, 0) == []


def test_eviction_threshold_met() -> None:
    def row(signal: str, text: str, met: bool, avail: int, hard: bool = True) -> Any:
        return SimpleNamespace(
            met=met, condition="MemoryPressure" if signal.startswith("memory") else "DiskPressure",
            threshold=SimpleNamespace(signal=signal, text=text, hard=hard),
            observation=SimpleNamespace(available=avail),
        )  # fmt: skip

    rows = [row("memory.available", "100Mi", True, 80 * MiB),
            row("nodefs.inodesFree", "5%", True, 1234, hard=False),
            row("nodefs.available", "10%", False, 10**12)]  # fmt: skip
    report = SimpleNamespace(results=rows, met=lambda: [r for r in rows if r.met])
    [ev] = events_for("evict check", report, 5)
    assert (ev.reason, ev.type) == ("EvictionThresholdMet", "Warning")
    assert ev.message == (
        "thresholds met: memory.available<100Mi (hard, MemoryPressure): observed 80Mi; "
        "nodefs.inodesFree<5% (soft, DiskPressure): observed 1234"
    )
    none = SimpleNamespace(results=rows[2:], met=lambda: [])
    assert events_for("evict check", none, 0) == []


def test_event_body_is_the_kubelets_node_event_and_valid_core_v1() -> None:
    body = event_body("node-a", NodeEvent("ContainerGCSucceeded", "Normal", "removed 3"), T)
    assert body["metadata"] == {"name": f"node-a.{int(T * 1e9):x}", "namespace": "default"}
    assert body["involvedObject"] == {"apiVersion": "v1", "kind": "Node", "name": "node-a",
                                      "uid": "node-a"}  # fmt: skip
    assert body["source"] == {"component": "kubegc", "host": "node-a"}
    assert body["firstTimestamp"] == body["lastTimestamp"] == "2027-01-15T08:00:00Z"
    assert body["count"] == 1
    kubernetes_validate.validate(body, "1.30", strict=True)


def test_long_messages_are_cut_to_one_line_of_the_limit() -> None:
    p = plan_of([container(0, Result.FAILED, error="x\n" * 2000)])
    [ev] = events_for("gc all", p, 1)
    assert len(ev.message) == MAX_MESSAGE and "\n" not in ev.message


# --- posting --------------------------------------------------------------------------------


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[RecordedApi, Path]]:
    with serve_recorded_api(tmp_path) as served:
        yield served


def settings(kubeconfig: Path | None, tmp_path: Path, **kw: Any) -> Settings:
    return Settings(kubeconfig=str(kubeconfig) if kubeconfig else None, node_name="Node-A",
                    state_dir=tmp_path / "state", timeout=5, env={}, **kw)  # fmt: skip


GC_DONE = plan_of([container(0, Result.REMOVED, 10)])


def test_fault_an_unreachable_api_is_one_warning(
    api: tuple[RecordedApi, Path], tmp_path: Path
) -> None:
    recorded, kubeconfig = api
    recorded.down = True
    warnings: list[str] = []
    evs = plan_of([image(Result.FAILED, error="x")], filesystem={"bytes_to_free": 9}, shortfall=9)
    t0 = time.monotonic()
    assert record_events(settings(kubeconfig, tmp_path), "gc images", evs, 1,
                         warn=warnings.append, now=T) == []  # fmt: skip
    assert time.monotonic() - t0 < 30
    assert len(warnings) == 1 and "unreachable" in warnings[0]  # the second is not tried
    assert recorded.dropped == 1


def test_no_credentials_is_a_warning(tmp_path: Path) -> None:
    warnings: list[str] = []
    record_events(settings(None, tmp_path), "gc all", GC_DONE, 0, warn=warnings.append, now=T)
    assert len(warnings) == 1 and "no Kubernetes API credentials" in warnings[0]


# --- the command line -----------------------------------------------------------------------


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def test_fault_cli_a_refused_event_does_not_fail_the_run(
    api: tuple[RecordedApi, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An Event the API refuses with a 500: exit 0, one warning line."""
    recorded, kubeconfig = api
    recorded.honor_selectors = True
    recorded.pages = [[api_pod("web-3")]]
    recorded.event_answer = (500, "etcd timeout")
    base = ["--kubeconfig", str(kubeconfig), "--node-name", "node-a",
            "--state-dir", str(tmp_path / "state"), "--events"]  # fmt: skip
    code, _, err = run([*base, "evict", "prune", "--yes", "-o", "json"], capsys)
    assert code == 0
    assert err == ("kubegc: event EvictedPodsPruned on node node-a not recorded: 500 Internal "
                   "Server Error: etcd timeout\n")  # fmt: skip
    assert [d.name for d in recorded.deletes] == ["web-3"]


def test_fault_cli_a_refusal_from_the_api_is_one_escaped_warning_line(
    api: tuple[RecordedApi, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The API's words in a warning are escaped as in tables: an OSC title sequence and a
    newline (a forged line after it) show as escapes, on the warning's one line."""
    recorded, kubeconfig = api
    recorded.honor_selectors = True
    recorded.pages = [[api_pod("web-1")]]
    recorded.event_answer = (500, "etcd\x1b]0;owned\x07\nkubegc: error: forged")
    code, _, err = run(["--kubeconfig", str(kubeconfig), "--node-name", "node-a", "--state-dir",
                        str(tmp_path / "state"), "--events", "evict", "prune", "--yes", "-o",
                        "json"], capsys)  # fmt: skip
    assert code == 0
    assert err == ("kubegc: event EvictedPodsPruned on node node-a not recorded: 500 Internal "
                   "Server Error: etcd\\x1b]0;owned\\x07\\x0akubegc: error: forged\n")  # fmt: skip
