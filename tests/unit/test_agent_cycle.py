"""`kubegc agent`'s cycle (`agent.cycle.Agent`) over a fixture host root and the in-memory
runtime (`tests/unit/memorycri.py`, put in force through the edges): one observation per
cycle, report mode removing nothing, apply mode removing what `gc all` would within its caps
while holding a slot, a runtime that is down failing one cycle only, and the eviction
manager's memory across cycles. tests/node/test_agent.py runs a cycle against a real
containerd."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from kubegc_cli.agent.cycle import Agent, _Cycle
from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.commands.edges import using
from kubegc_cli.commands.flow import ActOptions
from kubegc_cli.core import stop
from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.fleet import NodeReport
from kubegc_cli.core.model import Container, Image
from kubegc_cli.core.plan import LogAction, Plan, Result, apply_caps
from kubegc_cli.core.settings import Settings
from kubegc_cli.core.stop import Terminated
from kubegc_cli.node.cri.observed import ObservedCri, RemovalRefused
from kubegc_cli.report.metrics import series
from tests.unit.factories import NOW, owner
from tests.unit.hostfixtures import (
    MOUNTINFO_V2,
    V2_ROOT,
    pod_dirs_settled,
    put,
    write_meminfo,
    write_mountinfo,
    write_pid_files,
    write_v2_cgroup,
    write_v2_root,
)
from tests.unit.memorycri import MemoryCri, Status
from tests.unit.test_df import QuietUi

MiB = 1 << 20
NODE = "node-1"
CONFIG = """kind: KubeletConfiguration
evictionHard:
  memory.available: 100Mi
evictionSoft:
  memory.available: 1Gi
evictionSoftGracePeriod:
  memory.available: 90s
"""


@pytest.fixture(autouse=True)
def _pod_dirs_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    pod_dirs_settled(monkeypatch)


def host(root: Path, *, available_mib: int = 512) -> Path:
    """A cgroup v2 node: MemTotal 4 GiB, root working set 4 GiB − `available_mib` (so
    memory.available is exactly `available_mib` MiB), kubepods limited to 3 GiB with 1400 MiB
    in use; the kubelet root, the pod log root and a kubelet config with a hard
    memory.available<100Mi and a soft memory.available<1Gi (grace period 90 s)."""
    write_mountinfo(root, MOUNTINFO_V2)
    write_meminfo(root, 4 * 1024 * 1024)
    write_v2_root(root, anon=(3584 - available_mib) * MiB, file=512 * MiB, inactive_file=0)
    write_v2_cgroup(root, f"{V2_ROOT}/kubepods.slice", current=1400 * MiB, inactive_file=0,
                    max_=str(3 * 1024 * MiB))  # fmt: skip
    write_pid_files(root, pid_max=32768, threads_max=100_000, loadavg="0.1 0.2 0.3 2/1000 42")
    put(root, "/var/lib/kubelet/config.yaml", CONFIG)
    (root / "var/log/pods").mkdir(parents=True, exist_ok=True)
    return root


def settings(tmp_path: Path, root: Path) -> Settings:
    return Settings(
        host_root=root,
        state_dir=tmp_path / "state",
        runtime_endpoint="unix:///nonexistent/kubegc-test.sock",
        kubelet_config=root / "var/lib/kubelet/config.yaml",
        env={"HOME": "/", "PATH": "/usr/bin:/bin"},
        pod_source="none",
        node_name=NODE,
    )


class CountingCri(MemoryCri):
    """The in-memory runtime, counting every call that reads it (by CRI method) and naming
    each container's own log path in its status, as containerd does."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.calls: Counter[str] = Counter()
        self.endpoint = mock.Mock(display="unix:///memory.sock", path="/memory.sock")

    def list_containers(self, *args: Any, **kw: Any) -> list[Container]:
        self.calls["ListContainers"] += 1
        return super().list_containers(*args, **kw)

    def list_sandboxes(self, *args: Any, **kw: Any) -> Any:
        self.calls["ListPodSandbox"] += 1
        return super().list_sandboxes(*args, **kw)

    def list_images(self) -> list[Image]:
        self.calls["ListImages"] += 1
        return super().list_images()

    def image_fs_info(self) -> Any:
        self.calls["ImageFsInfo"] += 1
        return super().image_fs_info()

    def writable_layers(self) -> Any:
        self.calls["ListContainerStats"] += 1
        return super().writable_layers()

    def container_status(self, cid: str) -> Status | None:
        self.calls["ContainerStatus"] += 1
        with self.lock:
            c = self.containers.get(cid)
        if c is None:
            return None
        st = Status(c)
        st.log_path = c.log_path
        return st


LOGS = "/var/log/pods/default_web_uid-p/app"


def runtime(root: Path | None = None, log_bytes: int = 0) -> CountingCri:
    """Three dead attempts of one container (no pod source: the two oldest are garbage, as
    `gc all` plans it), each with its log (`log_bytes` written under `root`), and an image no
    container uses."""
    cs = []
    for i in range(3):
        path = f"{LOGS}/{i}.log"
        c = owner(f"dead000{i}", path, attempt=i, age_s=900 - 100 * i)
        cs.append(replace(c, log_path=path))
        if root is not None:
            put(root, path, "x" * log_bytes)
    images = {
        "sha256:old": Image("sha256:old", ("old:1",), ("old@sha256:" + "0" * 64,), size=5 * MiB)
    }
    return CountingCri({c.id: c for c in cs}, {}, images=images)


@contextmanager
def in_force(cri: Any) -> Iterator[None]:
    """`cri` is the runtime every command opens; the planning clock is the factories' NOW."""

    def open_client(*_: Any) -> Any:
        if cri is None:
            raise RuntimeUnavailable("no CRI runtime (test)", "UNAVAILABLE")
        return cri

    with using(cri=open_client, clock=lambda: NOW):
        yield


class SlotsStandIn:
    """Stands in for the Lease-backed `node.fleet.leases.ApplySlots` (which the API tests
    cover): `free` slots, every call recorded."""

    def __init__(self, free: int = 1) -> None:
        self.free = free
        self.calls: list[str] = []
        self.held: set[str] = set()

    def acquire(self) -> str | None:
        self.calls.append("acquire")
        if len(self.held) >= self.free:
            return None
        name = f"kubegc-apply-{len(self.held)}"
        self.held.add(name)
        return name

    def renew(self, name: str) -> bool:
        self.calls.append(f"renew {name}")
        return name in self.held

    def release(self, name: str) -> None:
        self.calls.append(f"release {name}")
        self.held.discard(name)


def samples_of(result: Any, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {tuple(sorted(labels.items())): v for labels, v in series(result.samples, name)}


def test_report_mode_plans_but_removes_nothing(tmp_path: Path) -> None:
    root = host(tmp_path / "host")
    cri = runtime()
    written: list[NodeReport] = []
    agent = Agent(settings(tmp_path, root), AgentOptions(plans=("containers", "sandboxes",
                  "logs", "images")), QuietUi(), write_report=written.append)  # fmt: skip
    with in_force(cri):
        result = agent.cycle()
    assert result.error == "" and result.ok, result.error
    assert cri.removed == [] and set(cri.containers) == {"dead0000", "dead0001", "dead0002"}
    assert set(cri.images) == {"sha256:old"}
    report = result.report
    assert written == [report] and result.written
    assert report.node == NODE and report.mode == "report" and report.paused == ""
    assert report.last_apply is None and report.error == ""
    # the plans were made: gc all's dry run plans the two oldest attempts
    planned = samples_of(result, "kubegc_last_run_objects")
    key = (("command", "gc all"), ("kind", "container"), ("result", "planned"))
    assert planned[key] == 2
    # df's categories, summed over its filesystems; the unused image is reclaimable
    cats = {c.name: c for c in report.categories}
    assert cats["images"].bytes == 5 * MiB and cats["images"].reclaimable == 5 * MiB
    assert report.reclaimable == sum(c.reclaimable or 0 for c in report.categories)
    assert report.reclaimable >= 5 * MiB
    # every threshold's margin: memory.available is 512 MiB
    margins = {(m.signal, m.threshold): m for m in report.signals}
    hard = margins[("memory.available", "100Mi")]
    assert (hard.available, hard.margin, hard.met, hard.hard) == (512 * MiB, 412 * MiB, False,
                                                                  True)  # fmt: skip
    soft = margins[("memory.available", "1Gi")]
    assert soft.margin == -512 * MiB and soft.hard is False
    assert report.residue and all(n >= 0 for n in report.residue.values())
    text = result.metrics_text()
    assert 'kubegc_eviction_margin{signal="memory.available",type="hard"} 432013312' in text
    assert 'kubegc_agent_cycles_total{result="ok"} 1' in text
    assert 'kubelet_image_garbage_collected_total{command="gc images",reason="space"} 0' in text
    assert "kubelet_image_gc_attempts_total" not in text  # report mode: no image GC attempt
    assert 'kubegc_runs_total{command="residue scan",result="success"} 1' in text


def test_one_cri_listing_per_cycle(tmp_path: Path) -> None:
    """df, residue scan, evict check's image filesystem and the gc dry runs (gc all, gc
    images) read one observation: each CRI list is asked once per cycle."""
    root = host(tmp_path / "host")
    cri = runtime()
    opts = AgentOptions(plans=("containers", "sandboxes", "logs", "images"))
    agent = Agent(settings(tmp_path, root), opts, QuietUi())
    with in_force(cri):
        first = agent.cycle()
        assert first.ok, first.error
        once = dict(cri.calls)
        second = agent.cycle()
        assert second.ok, second.error
    for method in ("ListContainers", "ListPodSandbox", "ListImages", "ListContainerStats"):
        assert once[method] == 1, (method, once)
        assert cri.calls[method] == 2, (method, cri.calls)
    assert once.get("ImageFsInfo", 0) <= 1


@pytest.fixture
def tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A host root on a tmpfs of its own: statvfs there sees only what the test writes (the
    state dir stays outside it). Mounting needs root."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    root = tmp_path / "host"
    root.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(root)], check=True)
    try:
        yield host(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], check=False)


def test_apply_removes_what_gc_all_would_within_its_caps_and_measures_it(
    tmp_path: Path, tmpfs: Path
) -> None:
    """gc all would remove dead0000 and dead0001; --max-delete 1 lets the first go only. Its
    log (1 MiB) goes with it: the bytes freed are the host filesystem's regained space. The
    slot is taken, renewed between plans, and released."""
    root = tmpfs
    cri = runtime(root, log_bytes=MiB)
    slots = SlotsStandIn()
    opts = AgentOptions(mode="apply", plans=("containers", "sandboxes", "logs", "images"))
    opts = replace(opts, act=replace(opts.act, max_delete=1))
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=slots)
    with in_force(cri):
        result = agent.cycle()
    assert result.ok, result.error
    assert cri.removed == ["dead0000"]
    assert set(cri.containers) == {"dead0001", "dead0002"}
    assert not (root / LOGS.lstrip("/") / "0.log").exists()
    assert slots.calls[0] == "acquire" and slots.calls[-1] == "release kubegc-apply-0"
    assert set(slots.calls[1:-1]) == {"renew kubegc-apply-0"}  # before each plan and removal
    applied = result.report.last_apply
    assert applied is not None and result.report.paused == ""
    assert applied.plans == ("gc all", "gc images") and applied.removed == 1
    assert applied.failures == 0 and applied.error == ""
    # one 1 MiB log on a tmpfs holding the whole host: what statvfs regained, to the page
    assert MiB <= applied.bytes_freed <= MiB + 8192, applied.bytes_freed
    # the image is not old enough for image GC (usage under the high threshold): kept
    assert set(cri.images) == {"sha256:old"}
    removed = samples_of(result, "kubegc_objects_total")
    assert removed[(("command", "gc all"), ("kind", "container"), ("result", "removed"))] == 1
    freed = samples_of(result, "kubegc_agent_apply_freed_bytes_total")
    assert freed[()] == applied.bytes_freed
    # the apply's gc images is an image GC attempt of the agent's periodic GC that freed nothing
    attempts = samples_of(result, "kubelet_image_gc_attempts_total")
    attempt = (("command", "gc images"), ("operation", "garbage_collect"),
               ("reason", "threshold"), ("result", "noop"), ("trigger", "periodic"))  # fmt: skip
    assert attempts == {attempt: 1}
    rows = (tmp_path / "state").glob("*")
    assert any(rows)  # the audit rows of the CLI's own flow


@pytest.mark.parametrize(
    ("slots", "breaker", "window", "paused"),
    [
        (SlotsStandIn(free=0), None, "", "all 1 apply slot(s) held"),
        (SlotsStandIn(), lambda: "3 of 10 applies failed in the last window", "", "3 of 10"),
        (None, None, "", "without apply slots"),
        (SlotsStandIn(), None, "Mon-Fri 02:00-04:00", "apply window"),
    ],
)
def test_apply_mode_takes_no_slot_while_paused(
    tmp_path: Path, slots: Any, breaker: Any, window: str, paused: str
) -> None:
    root = host(tmp_path / "host")
    cri = runtime()
    opts = AgentOptions(mode="apply", window=window)
    friday_8am = 1_800_000_000.0  # 2027-01-15T08:00:00Z: outside a 02:00-04:00 window
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=slots, breaker=breaker,
                  clock=lambda: friday_8am)  # fmt: skip
    with in_force(cri):
        result = agent.cycle()
    assert result.ok, result.error
    assert paused in result.report.paused
    assert cri.removed == [] and result.report.last_apply is None
    if slots is not None:
        assert slots.held == set()  # none kept
        # the breaker is read holding a slot (only nodes about to act read every report),
        # which is given back at once when it is open
        expected = ["acquire", "release kubegc-apply-0"] if breaker is not None else []
        if window or slots.free == 0:
            expected = [] if window else ["acquire"]
        assert slots.calls == expected


FRIDAY_3_59 = 1_799_985_540.0  # 2027-01-15T03:59:00Z: inside a 02:00-04:00 window


def test_the_window_is_judged_again_right_before_acquiring(tmp_path: Path) -> None:
    root = host(tmp_path / "host")
    cri = runtime()
    slots = SlotsStandIn()
    times = iter([FRIDAY_3_59])  # the cycle begins inside the window; then it has ended
    opts = AgentOptions(mode="apply", window="Mon-Fri 02:00-04:00")
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=slots,
                  clock=lambda: next(times, FRIDAY_3_59 + 120))  # fmt: skip
    with in_force(cri):
        result = agent.cycle()
    assert "apply window" in result.report.paused
    assert slots.calls == [] and cri.removed == []


class WindowEndsMidRemoval(CountingCri):
    """Fault injection: the apply window ends while the first removal is in flight."""

    now = FRIDAY_3_59

    def remove_container(self, cid: str) -> bool:
        self.now = FRIDAY_3_59 + 120
        return super().remove_container(cid)


def test_an_apply_stops_starting_removals_at_the_windows_end(tmp_path: Path) -> None:
    root = host(tmp_path / "host")
    base = runtime()
    cri = WindowEndsMidRemoval(base.containers, {}, images=base.images)
    slots = SlotsStandIn()
    opts = AgentOptions(mode="apply", window="Mon-Fri 02:00-04:00",
                        act=ActOptions(yes=True, concurrency=1))  # fmt: skip
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=slots, clock=lambda: cri.now)
    with in_force(cri):
        result = agent.cycle()
    assert cri.removed == ["dead0000"]
    applied = result.report.last_apply
    assert applied is not None and "outside the apply window" in applied.error, applied
    assert slots.held == set()


@pytest.mark.parametrize(
    ("max_delete", "max_bytes", "removed", "caps"),
    [
        (4, None, 4, [(4, None), (1, None)]),
        (None, 250, 2, [(None, 250), (None, 50)]),
    ],
)
def test_the_caps_bound_the_whole_apply_not_each_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_delete: Any, max_bytes: Any,
    removed: int, caps: list[Any],
) -> None:  # fmt: skip
    seen: list[tuple[Any, Any]] = []

    def carry(act: ActOptions) -> Plan[Any]:  # three 100-byte removals, within the caps given
        seen.append((act.max_delete, act.max_bytes))
        actions = [LogAction("pod-log-dir", f"/l/{i}", f"/l/{i}", "uid", "r", "why", bytes=100)
                   for i in range(3)]  # fmt: skip
        plan: Plan[Any] = Plan("gc logs", {}, NOW, actions=actions, dry_run=False)
        apply_caps(plan, act.max_delete, act.max_bytes)
        for a in plan.actions:
            if a.result is Result.PLANNED:
                a.result = Result.REMOVED
        return plan

    monkeypatch.setattr(_Cycle, "plans", lambda self: [("gc a", carry), ("gc b", carry)])
    root = host(tmp_path / "host")
    opts = AgentOptions(mode="apply", act=ActOptions(max_delete=max_delete, max_bytes=max_bytes))
    run = _Cycle(settings(tmp_path, root), opts, QuietUi())
    applied = run.apply(lambda: "", time.time())
    assert seen == caps
    assert applied.removed == removed and applied.error == ""


def test_the_last_apply_before_a_restart_is_reported_until_the_next_apply(
    tmp_path: Path,
) -> None:
    from tests.unit.test_agent_slots import FAILED_APPLY

    root = host(tmp_path / "host")
    agent = Agent(settings(tmp_path, root), AgentOptions(), QuietUi(), last_apply=FAILED_APPLY)
    with in_force(runtime()):
        result = agent.cycle()
    assert result.report.last_apply == FAILED_APPLY


def test_a_runtime_that_is_down_fails_the_cycle_and_the_next_one_succeeds(
    tmp_path: Path,
) -> None:
    root = host(tmp_path / "host")
    cri = runtime()
    written: list[NodeReport] = []
    slots = SlotsStandIn()
    opts = AgentOptions(mode="apply")
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), write_report=written.append,
                  slots=slots)  # fmt: skip
    with in_force(None):
        down = agent.cycle()
    assert not down.ok and down.error.startswith("runtime: no CRI runtime (test)"), down.error
    assert "\n" not in down.error and down.report.error == down.error
    assert slots.calls == []  # nothing is carried out after a failed observation
    assert written == [down.report]
    failed = samples_of(down, "kubegc_agent_cycles_total")
    assert failed[(("result", "failed"),)] == 1 and failed[(("result", "ok"),)] == 0
    # the host was still read: memory signals are in the failed cycle's report
    assert any(m.signal == "memory.available" for m in down.report.signals)
    with in_force(cri):
        back = agent.cycle()
    assert back.ok and back.report.error == "", back.error
    assert back.report.last_apply is not None and sorted(cri.removed) == ["dead0000", "dead0001"]
    assert written[-1] == back.report and len(written) == 2
    counted = samples_of(back, "kubegc_agent_cycles_total")
    assert counted[(("result", "failed"),)] == 1 and counted[(("result", "ok"),)] == 1


def test_a_soft_threshold_is_met_only_after_its_grace_period(tmp_path: Path) -> None:
    """memory.available 512 MiB < 1Gi (soft, 90 s): crossed from the first cycle, met from
    the cycle 90 s later on (kubelet eviction: `thresholdsMetGracePeriod`); the condition is
    reported from the first cycle (`nodeConditions` of the thresholds crossed)."""
    pytest.importorskip("kubegc_cli.policy.eviction.memory")
    root = host(tmp_path / "host")
    now = [1_800_000_000.0]
    agent = Agent(settings(tmp_path, root), AgentOptions(checks=("evict",)), QuietUi(),
                  clock=lambda: now[0])  # fmt: skip

    def soft() -> Any:
        with in_force(runtime()):
            result = agent.cycle()
        assert result.ok, result.error
        return next(m for m in result.report.signals if m.threshold == "1Gi"), result

    for elapsed, met in ((0, False), (60, False), (89, False), (90, True), (150, True)):
        now[0] = 1_800_000_000.0 + elapsed
        margin, result = soft()
        assert margin.met is met, elapsed
        assert "MemoryPressure" in result.report.conditions
        if not met:
            assert result.pending == {"memory.available<1Gi": 90 - elapsed}
    hard = next(m for m in result.report.signals if m.threshold == "100Mi")
    assert hard.met is False


class StoppedMidRemoval(CountingCri):
    """Fault injection: SIGTERM reaches the process while the first removal is in flight;
    the removal finishes once the signal's handler (`core.stop.first_stop`, which the test
    installs) has run in the main thread."""

    def remove_container(self, cid: str) -> bool:
        if not self.removed:
            os.kill(os.getpid(), signal.SIGTERM)
            deadline = time.monotonic() + 30
            while stop.received is None and time.monotonic() < deadline:
                time.sleep(0.01)
            assert stop.received == signal.SIGTERM
        return super().remove_container(cid)


def test_sigterm_mid_apply_finishes_the_removal_releases_the_slot_and_passes_through(
    tmp_path: Path,
) -> None:
    root = host(tmp_path / "host")
    base = runtime()
    cri = StoppedMidRemoval(base.containers, {}, images=base.images)
    slots = SlotsStandIn()
    opts = AgentOptions(mode="apply", act=ActOptions(yes=True, concurrency=1))
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=slots)
    signal.signal(signal.SIGTERM, stop.first_stop)  # the handler `kubegc` runs with
    with in_force(cri), pytest.raises(Terminated):
        agent.cycle()
    assert cri.removed == ["dead0000"]  # the removal in flight finished, the next never began
    assert slots.calls[0] == "acquire" and slots.calls[-1] == "release kubegc-apply-0"
    assert slots.held == set()


def test_sigterm_mid_apply_records_the_apply_and_writes_the_report(tmp_path: Path) -> None:
    root = host(tmp_path / "host")
    base = runtime()
    cri = StoppedMidRemoval(base.containers, {}, images=base.images)
    written: list[NodeReport] = []
    opts = AgentOptions(mode="apply", act=ActOptions(yes=True, concurrency=1))
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=SlotsStandIn(),
                  write_report=written.append)  # fmt: skip
    signal.signal(signal.SIGTERM, stop.first_stop)  # the handler `kubegc` runs with
    with in_force(cri), pytest.raises(Terminated):
        agent.cycle()
    assert cri.removed == ["dead0000"]
    assert written and written[-1].last_apply is not None
    applied = written[-1].last_apply
    assert applied.error == "interrupted by SIGTERM" and applied.removed == 1
    assert applied.plans == ("gc all",)


class SlotLostMidRemoval(CountingCri):
    """Fault injection: the apply slot is lost while the first removal is in flight."""

    slots: SlotsStandIn

    def remove_container(self, cid: str) -> bool:
        self.slots.held.clear()
        return super().remove_container(cid)


def test_a_slot_lost_mid_plan_starts_no_further_removal_and_says_why(tmp_path: Path) -> None:
    root = host(tmp_path / "host")
    base = runtime()
    cri = SlotLostMidRemoval(base.containers, {}, images=base.images)
    cri.slots = slots = SlotsStandIn()
    opts = AgentOptions(mode="apply", act=ActOptions(yes=True, concurrency=1))
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=slots)
    with in_force(cri):
        result = agent.cycle()
    assert cri.removed == ["dead0000"]  # the removal in flight finished, the next never began
    applied = result.report.last_apply
    assert applied is not None and applied.removed == 1
    assert "the apply slot was lost" in applied.error, applied.error
    assert "the apply slot was lost" in result.error


class SlotLostDuringRecheck(CountingCri):
    """Fault injection: the apply slot is lost while the first removal's re-check asks the
    runtime (a slow runtime: the re-checks can take several calls of --timeout each)."""

    slots: SlotsStandIn

    def container_status(self, cid: str) -> Any:
        self.slots.held.clear()
        return super().container_status(cid)


def test_a_slot_lost_during_a_removals_recheck_removes_nothing(tmp_path: Path) -> None:
    """The executors ask again right before the first change of each action, after its
    re-checks: a slot lost meanwhile starts no removal, not even the one being re-checked."""
    root = host(tmp_path / "host")
    base = runtime()
    cri = SlotLostDuringRecheck(base.containers, {}, images=base.images)
    cri.slots = slots = SlotsStandIn()
    opts = AgentOptions(mode="apply", act=ActOptions(yes=True, concurrency=1))
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=slots)
    with in_force(cri):
        result = agent.cycle()
    assert cri.removed == [] and len(cri.containers) == 3
    applied = result.report.last_apply
    assert applied is not None and applied.removed == 0
    assert "the apply slot was lost" in applied.error, applied.error


class StoppedBetweenPlans(CountingCri):
    """Fault injection: SIGTERM arrives while `gc images` lists the images, after `gc all`
    removed containers."""

    def list_images(self) -> list[Image]:
        if self.removed:
            raise Terminated()
        return super().list_images()


def test_a_stop_between_plans_records_the_apply_before_passing_through(tmp_path: Path) -> None:
    root = host(tmp_path / "host")
    base = runtime()
    cri = StoppedBetweenPlans(base.containers, {}, images=base.images)
    written: list[NodeReport] = []
    opts = AgentOptions(mode="apply", plans=("containers", "sandboxes", "logs", "images"))
    agent = Agent(settings(tmp_path, root), opts, QuietUi(), slots=SlotsStandIn(),
                  write_report=written.append)  # fmt: skip
    with in_force(cri), pytest.raises(Terminated):
        agent.cycle()
    assert cri.removed  # gc all removed before the stop
    assert written and written[-1].last_apply is not None
    last = written[-1].last_apply
    assert last.removed == len(cri.removed) and "interrupted by SIGTERM" in last.error


def test_the_observation_refuses_every_removal_and_keeps_a_failure(tmp_path: Path) -> None:
    cri = runtime()
    seen = ObservedCri(cri)
    assert [c.id for c in seen.list_containers()] == ["dead0000", "dead0001", "dead0002"]
    assert seen.list_containers(labels={"io.kubernetes.container.name": "none"}) == []
    seen.list_containers(annotations=False)
    assert cri.calls["ListContainers"] == 1
    for remove in (seen.remove_container, seen.remove_pod_sandbox, seen.remove_image):
        with pytest.raises(RemovalRefused):
            remove("dead0000")
    with pytest.raises(RemovalRefused):
        seen.stop_container("dead0000", 0)
    assert cri.removed == [] and len(cri.containers) == 3

    class Down(CountingCri):
        def list_images(self) -> list[Image]:
            self.calls["ListImages"] += 1
            raise RuntimeUnavailable("ListImages: deadline exceeded", "DEADLINE_EXCEEDED")

    down = Down({}, {})
    seen = ObservedCri(down)
    for _ in range(2):
        with pytest.raises(RuntimeUnavailable, match="deadline exceeded"):
            seen.list_images()
    with pytest.raises(RuntimeUnavailable, match="deadline exceeded"):
        seen.list_sandboxes()  # one timeout per cycle, not one per call
    assert down.calls == Counter({"ListImages": 1})


def test_apply_mode_with_nothing_to_remove_takes_no_slot_and_reads_no_breaker(
    tmp_path: Path,
) -> None:
    """A node whose gc dry runs plan nothing does not ask for a slot (a Lease write) nor read
    every node's report for the breaker: an idle fleet in apply mode costs what report mode
    costs."""
    root = host(tmp_path / "host")
    cri = CountingCri({}, {}, images={})
    slots = SlotsStandIn()
    read: list[str] = []
    agent = Agent(settings(tmp_path, root), AgentOptions(mode="apply"), QuietUi(),
                  slots=slots, breaker=lambda: read.append("breaker") or "")  # fmt: skip
    with in_force(cri):
        result = agent.cycle()
    assert result.ok, result.error
    assert slots.calls == [] and read == []
    assert result.report.paused == "" and result.report.last_apply is None
    # the same node with a dead container to remove asks for both
    busy = runtime()
    with in_force(busy):
        agent.cycle()
    assert slots.calls[0] == "acquire" and read == ["breaker"]
    assert slots.calls[-1] == "release kubegc-apply-0"
