"""The executor's re-checks and failure handling, with a scripted runtime for fault injection.

(The same executor runs against a real containerd in tests/node/test_gc_containers.py.)
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.model import LABEL_POD_UID, Container, ContainerState, Sandbox, SandboxState
from kubegc_cli.core.plan import INTERRUPTED, POD_ALIVE, ContainerAction, Result
from kubegc_cli.node.execute.actions import (
    LOG_NOT_REMOVED,
    MAY_START,
    UNKNOWN_STOP_GRACE_SECONDS,
    ContainerRemover,
)
from kubegc_cli.node.host.logs import LogRoots
from kubegc_cli.node.host.mounts import MountTable
from tests.unit.factories import ctr, disk, owner


@dataclass
class Status:
    state: ContainerState
    created_at: int
    log_path: str = ""


@dataclass
class ScriptedCri:
    """Answers ContainerStatus from `statuses`; fails the calls named in `fail`."""

    statuses: dict[str, Status]
    fail: set[tuple[str, str]] = field(default_factory=set)
    fail_code: str = "INTERNAL"
    calls: list[tuple[str, str]] = field(default_factory=list)
    gone_at_stop: set[str] = field(default_factory=set)  # StopContainer answers NotFound
    sandboxes: dict[str, SandboxState] = field(default_factory=dict)  # PodSandboxStatus
    # ListPodSandbox / ListContainers by pod UID label: the states of that pod's sandboxes and
    # containers (the pod liveness re-check of deleted and terminated pods' removals)
    pod_sandboxes: dict[str, list[SandboxState]] = field(default_factory=dict)
    pod_containers: dict[str, list[ContainerState]] = field(default_factory=dict)
    log_at_remove: dict[str, bool] = field(default_factory=dict)  # cid -> log file existed
    watch_log: Path | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _record(self, call: str, cid: str) -> None:
        with self.lock:
            self.calls.append((call, cid))
        if (call, cid) in self.fail:
            raise RuntimeUnavailable(f"{call} {cid}: injected failure", self.fail_code)

    def container_status(self, cid: str) -> Status | None:
        self._record("status", cid)
        return self.statuses.get(cid)

    def pod_sandbox_status(self, sid: str) -> tuple[SandboxState, int] | None:
        self._record("sandbox-status", sid)
        return (self.sandboxes[sid], 0) if sid in self.sandboxes else None

    def stop_container(self, cid: str, grace: int) -> bool:
        assert grace == UNKNOWN_STOP_GRACE_SECONDS
        self._record("stop", cid)
        return cid not in self.gone_at_stop

    def remove_container(self, cid: str) -> bool:
        if self.watch_log is not None:
            self.log_at_remove[cid] = self.watch_log.exists()
        self._record("remove", cid)
        return self.statuses.pop(cid, None) is not None

    def list_sandboxes(self, labels: dict[str, str] | None = None) -> list[Sandbox]:
        uid = (labels or {}).get(LABEL_POD_UID, "")
        self._record("list-sandboxes", uid)
        return [
            Sandbox(f"sb-{u}" if i == 0 else f"sb-{u}-{i}", "p", "default", u, i, st, 0)
            for u, states in self.pod_sandboxes.items()
            if not uid or u == uid
            for i, st in enumerate(states)
        ]

    def list_containers(
        self, labels: dict[str, str] | None = None, *, annotations: bool = True
    ) -> list[Container]:
        uid = (labels or {}).get(LABEL_POD_UID, "")
        self._record("list-containers", uid)
        return [
            ctr(f"{u}-{i}", uid=u, attempt=i, state=st.value)
            for u, states in self.pod_containers.items()
            if not uid or u == uid
            for i, st in enumerate(states)
        ]


def remover(cri: ScriptedCri, tmp_path: Path, concurrency: int = 4) -> ContainerRemover:
    client: Any = cri
    return ContainerRemover(
        client,
        concurrency=concurrency,
        log_roots=LogRoots(tmp_path, "/var/log/pods"),
        mounts=MountTable(frozenset()),
    )


def action(c: Container) -> ContainerAction:
    return ContainerAction(
        c, "max-per-pod-container", "test", stop_first=c.state.value == "UNKNOWN"
    )


def test_removes_and_frees_log_bytes(tmp_path: Path) -> None:
    log = tmp_path / "var/log/pods/default_p_u/app/0.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"x" * 42)
    blocks = disk(log)  # what it takes on disk: what its removal frees
    c = owner("a0", "/var/log/pods/default_p_u/app/0.log")
    cri = ScriptedCri(
        {"a0": Status(ContainerState.EXITED, c.created_at, "/var/log/pods/default_p_u/app/0.log")}
    )
    a = action(c)
    remover(cri, tmp_path).run([a])
    assert (a.result, a.bytes_freed, a.error) == (Result.REMOVED, blocks, "")
    assert not log.exists()
    assert cri.calls == [("status", "a0"), ("remove", "a0")]


def test_rechecks_skip_gone_running_and_changed(tmp_path: Path) -> None:
    gone, running, changed = ctr("gone"), ctr("run", attempt=1), ctr("chg", attempt=2)
    cri = ScriptedCri(
        {
            "run": Status(ContainerState.RUNNING, running.created_at),
            "chg": Status(ContainerState.EXITED, changed.created_at + 1),
        }
    )
    acts = [action(gone), action(running), action(changed)]
    remover(cri, tmp_path).run(acts)
    assert [a.result for a in acts] == [Result.SKIPPED] * 3
    assert "gone" in acts[0].error and "running" in acts[1].error and "changed" in acts[2].error
    assert not [c for c in cri.calls if c[0] == "remove"]


@pytest.mark.parametrize(
    ("sandbox", "removed"),
    [(SandboxState.READY, False), (SandboxState.NOTREADY, True), (None, True)],
)
def test_created_container_in_a_ready_sandbox_is_left(
    tmp_path: Path, sandbox: SandboxState | None, removed: bool
) -> None:
    """A CREATED container may be started by the kubelet at any moment while its sandbox is
    READY, and RemoveContainer would remove it running: left. In a sandbox that is not READY
    (or gone) it can never start: removed. An EXITED one needs no sandbox call."""
    c, e = ctr("c0", state="CREATED"), ctr("e0", attempt=1)
    cri = ScriptedCri(
        {
            "c0": Status(ContainerState.CREATED, c.created_at),
            "e0": Status(ContainerState.EXITED, e.created_at),
        },
        sandboxes={} if sandbox is None else {c.pod_sandbox_id: sandbox},
    )
    acts = [action(c), action(e)]
    remover(cri, tmp_path, concurrency=1).run(acts)
    assert acts[0].result is (Result.REMOVED if removed else Result.SKIPPED)
    assert acts[0].error == ("" if removed else MAY_START)
    assert acts[1].result is Result.REMOVED
    assert ("remove", "c0") in cri.calls if removed else ("remove", "c0") not in cri.calls
    assert [c for c in cri.calls if c[0] == "sandbox-status"] == [
        ("sandbox-status", c.pod_sandbox_id)
    ]


def test_unknown_is_stopped_before_removal(tmp_path: Path) -> None:
    c = ctr("u0", state="UNKNOWN")
    cri = ScriptedCri({"u0": Status(ContainerState.UNKNOWN, c.created_at)})
    a = action(c)
    remover(cri, tmp_path).run([a])
    assert a.result is Result.REMOVED
    assert cri.calls == [("status", "u0"), ("stop", "u0"), ("remove", "u0")]


def test_failed_stop_of_unknown_leaves_it(tmp_path: Path) -> None:
    c = ctr("u0", state="UNKNOWN")
    cri = ScriptedCri({"u0": Status(ContainerState.UNKNOWN, c.created_at)}, fail={("stop", "u0")})
    a = action(c)
    remover(cri, tmp_path).run([a])
    assert a.result is Result.FAILED and "stop" in a.error
    assert ("remove", "u0") not in cri.calls


def test_unremovable_log_leaves_the_container(tmp_path: Path, monkeypatch: Any) -> None:
    """A log that cannot be removed leaves its container too, as the kubelet's removeContainer:
    the container stays for a later run to plan again (log and all), never the other way round."""
    log = tmp_path / "var/log/pods/default_p_u/app/0.log"
    log.parent.mkdir(parents=True)
    log.write_text("x")
    c = owner("a0", "/var/log/pods/default_p_u/app/0.log")
    cri = ScriptedCri(
        {"a0": Status(ContainerState.EXITED, c.created_at, "/var/log/pods/default_p_u/app/0.log")}
    )
    import os

    def refuse(path: str, *, dir_fd: int | None = None) -> None:
        raise PermissionError(13, "Permission denied", path)

    monkeypatch.setattr(os, "unlink", refuse)
    a = action(c)
    remover(cri, tmp_path).run([a])
    assert a.result is Result.FAILED and a.bytes_freed == 0
    assert a.error.startswith(LOG_NOT_REMOVED) and "Permission denied" in a.error
    assert cri.calls == [("status", "a0")]  # no RemoveContainer
    assert log.exists()


LOG = "/var/log/pods/default_p_u/app/0.log"


def _logged(tmp_path: Path, cid: str = "a0", **kw: Any) -> tuple[Container, Path]:
    log = tmp_path / LOG.lstrip("/")
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_bytes(b"y" * 7)
    return owner(cid, LOG, **kw), log


def test_the_log_goes_before_the_container(tmp_path: Path) -> None:
    """As the kubelet: the log first, then RemoveContainer, so a crash between the two leaves
    a container a later run plans again, never a log nothing plans again."""
    c, log = _logged(tmp_path)
    blocks = disk(log)
    cri = ScriptedCri({"a0": Status(ContainerState.EXITED, c.created_at, LOG)}, watch_log=log)
    a = action(c)
    remover(cri, tmp_path).run([a])
    assert (a.result, a.bytes_freed) == (Result.REMOVED, blocks)
    assert cri.log_at_remove == {"a0": False}  # gone before RemoveContainer was called


@pytest.mark.parametrize("code", ["INTERNAL", "DEADLINE_EXCEEDED"])
def test_a_failed_removal_after_the_log_reports_the_bytes_freed(tmp_path: Path, code: str) -> None:
    c, log = _logged(tmp_path)
    blocks = disk(log)
    cri = ScriptedCri(
        {"a0": Status(ContainerState.EXITED, c.created_at, LOG)},
        fail={("remove", "a0")}, fail_code=code,
    )  # fmt: skip
    a = action(c)
    remover(cri, tmp_path).run([a])
    assert (a.result, a.bytes_freed) == (Result.FAILED, blocks) and not log.exists()
    assert "injected failure" in a.error


@pytest.mark.parametrize(
    ("state", "sandbox"),
    [(ContainerState.RUNNING, None), (ContainerState.CREATED, SandboxState.READY)],
)
def test_every_recheck_comes_before_the_log(
    tmp_path: Path, state: ContainerState, sandbox: SandboxState | None
) -> None:
    """A container that is running now, or may start, keeps its log: the re-checks come
    before anything is removed."""
    c, log = _logged(tmp_path)
    cri = ScriptedCri(
        {"a0": Status(state, c.created_at, LOG)},
        sandboxes={} if sandbox is None else {c.pod_sandbox_id: sandbox},
    )
    a = action(c)
    remover(cri, tmp_path).run([a])
    assert a.result is Result.SKIPPED and log.read_bytes() == b"y" * 7


@pytest.mark.parametrize(
    ("sandboxes", "containers", "alive"),
    [
        ([SandboxState.NOTREADY, SandboxState.READY], [], True),  # a new READY sandbox
        ([SandboxState.NOTREADY], [ContainerState.EXITED, ContainerState.RUNNING], True),
        ([SandboxState.NOTREADY], [ContainerState.EXITED, ContainerState.CREATED], False),
        ([], [], False),
    ],
)
@pytest.mark.parametrize("rule", ["deleted-pod", "terminated-pod"])
def test_a_pod_that_comes_back_alive_keeps_its_containers(
    tmp_path: Path,
    sandboxes: list[SandboxState],
    containers: list[ContainerState],
    alive: bool,
    rule: str,
) -> None:
    """Right before removing a container planned for a deleted or terminated pod, the pod is
    asked about again: a READY sandbox or a RUNNING container of its UID keeps the container
    and its log ("the pod is alive now"). Other rules do not ask."""
    c, log = _logged(tmp_path)
    cri = ScriptedCri(
        {"a0": Status(ContainerState.EXITED, c.created_at, LOG)},
        pod_sandboxes={c.pod_uid: sandboxes},
        pod_containers={c.pod_uid: containers},
    )
    a = ContainerAction(c, rule, "t")
    remover(cri, tmp_path).run([a])
    if alive:
        assert (a.result, a.error) == (Result.SKIPPED, POD_ALIVE)
        assert ("remove", "a0") not in cri.calls and log.exists()
    else:
        assert a.result is Result.REMOVED and not log.exists()
    # the pod is asked about after the container's own re-check, right before the removal
    assert cri.calls[0] == ("status", "a0")
    assert ("list-sandboxes", c.pod_uid) in cri.calls

    other = ScriptedCri(
        {"a0": Status(ContainerState.EXITED, c.created_at, LOG)},
        pod_sandboxes={c.pod_uid: sandboxes},
        pod_containers={c.pod_uid: containers},
    )
    _logged(tmp_path)
    b = action(c)  # max-per-pod-container: the pod is known to exist; not asked
    remover(other, tmp_path).run([b])
    assert b.result is Result.REMOVED
    assert not [k for k, _ in other.calls if k.startswith("list-")]


def test_a_pod_without_uid_is_not_taken_for_gone(tmp_path: Path) -> None:
    c = ctr("n0", uid="")
    cri = ScriptedCri({"n0": Status(ContainerState.EXITED, c.created_at)})
    a = ContainerAction(c, "deleted-pod", "t")
    remover(cri, tmp_path).run([a])
    assert a.result is Result.SKIPPED and "no pod UID" in a.error
    assert ("remove", "n0") not in cri.calls


def test_one_failure_never_stops_the_run(tmp_path: Path) -> None:
    cs = [ctr(f"c{i}", attempt=i) for i in range(20)]
    cri = ScriptedCri(
        {c.id: Status(ContainerState.EXITED, c.created_at) for c in cs},
        fail={("remove", "c3"), ("status", "c7")},
    )
    acts = [action(c) for c in cs]
    remover(cri, tmp_path, concurrency=3).run(acts)
    results = {a.id: a.result for a in acts}
    assert results.pop("c3") is Result.FAILED and results.pop("c7") is Result.FAILED
    assert set(results.values()) == {Result.REMOVED}
    assert "injected failure" in next(a.error for a in acts if a.id == "c3")


def test_concurrency_is_bounded(tmp_path: Path) -> None:
    in_flight, peak = 0, 0
    guard = threading.Lock()
    barrier = threading.Event()

    class Slow(ScriptedCri):
        def remove_container(self, cid: str) -> bool:
            nonlocal in_flight, peak
            with guard:
                in_flight += 1
                peak = max(peak, in_flight)
            barrier.wait(0.02)
            with guard:
                in_flight -= 1
            return True

    cs = [ctr(f"c{i}", attempt=i) for i in range(16)]
    cri = Slow({c.id: Status(ContainerState.EXITED, c.created_at) for c in cs})
    remover(cri, tmp_path, concurrency=3).run([action(c) for c in cs])
    assert 1 < peak <= 3


CTRL_C_SCRIPT = """
import json, os, signal, sys, time
from pathlib import Path
from kubegc_cli.cli.main import _on_sigterm
from kubegc_cli.node.execute.actions import Interrupted
from kubegc_cli.core.model import ContainerState
from tests.unit.factories import ctr
from tests.unit.test_execute import ScriptedCri, Status, action, remover

class InterruptAtC2(ScriptedCri):
    def remove_container(self, cid):
        time.sleep(0.05)  # a real RemoveContainer takes milliseconds
        existed = super().remove_container(cid)
        if cid == "c2":
            os.kill(os.getpid(), getattr(signal, sys.argv[2]))
        return existed

signal.signal(signal.SIGTERM, _on_sigterm)  # as kubegc's entry point does
cs = [ctr(f"c{i}", attempt=i) for i in range(10)]
cri = InterruptAtC2({c.id: Status(ContainerState.EXITED, c.created_at) for c in cs})
acts = [action(c) for c in cs]
try:
    remover(cri, Path(sys.argv[1]), concurrency=1).run(acts)
    raised = ""
except Interrupted as exc:
    raised = exc.signal_name
print(json.dumps({"raised": raised, "results": [a.result.value for a in acts],
                  "errors": [a.error for a in acts],
                  "removes": [c for k, c in cri.calls if k == "remove"]}))
"""


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM"])
def test_ctrl_c_finishes_in_flight_and_starts_nothing_new(tmp_path: Path, signame: str) -> None:
    """A real SIGINT/SIGTERM in a separate process: in-flight removals finish, queued ones
    never start, and the signal is named."""
    import json
    import subprocess
    import sys

    from kubegc_cli.core.plan import INTERRUPTED

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", CTRL_C_SCRIPT, str(tmp_path), signame],
        capture_output=True, text=True, cwd=root, timeout=60, check=True,
    )  # fmt: skip
    out = json.loads(proc.stdout)
    assert out["raised"] == signame
    results = out["results"]
    done = results.count("removed")
    # c0-c2, plus at most the one the single worker had already started when Ctrl-C landed.
    assert done in (3, 4)
    assert results == ["removed"] * done + ["skipped"] * (10 - done)
    assert out["errors"][done:] == [INTERRUPTED] * (10 - done)
    assert out["removes"] == [f"c{i}" for i in range(done)]


@pytest.mark.parametrize("code", ["DEADLINE_EXCEEDED", "UNAVAILABLE", "CANCELLED"])
def test_a_runtime_that_stops_answering_halts_the_run(tmp_path: Path, code: str) -> None:
    """After max(3, concurrency) unreachable calls in a row, nothing new is started. A call
    the runtime cut off (CANCELLED: a runtime shutting down with calls in flight) is one."""
    from kubegc_cli.node.execute.actions import HALTED

    cs = [ctr(f"c{i}", attempt=i) for i in range(50)]
    cri = ScriptedCri(
        {c.id: Status(ContainerState.EXITED, c.created_at) for c in cs},
        fail={("status", c.id) for c in cs[5:]},
        fail_code=code,
    )
    acts = [action(c) for c in cs]
    r = remover(cri, tmp_path, concurrency=1)
    r.run(acts)
    assert r.halted and r.runtime_gone
    assert [a.result for a in acts[:5]] == [Result.REMOVED] * 5
    assert [a.result for a in acts[5:8]] == [Result.FAILED] * 3
    assert all(a.result is Result.SKIPPED and a.error == HALTED for a in acts[8:])
    assert len(cri.calls) == 5 * 2 + 3


def test_refusals_do_not_halt_the_run(tmp_path: Path) -> None:
    """Per-object refusals (not an unreachable runtime) never stop the others."""
    cs = [ctr(f"c{i}", attempt=i) for i in range(10)]
    cri = ScriptedCri(
        {c.id: Status(ContainerState.EXITED, c.created_at) for c in cs},
        fail={("remove", c.id) for c in cs[:6]},
        fail_code="FAILED_PRECONDITION",
    )
    acts = [action(c) for c in cs]
    r = remover(cri, tmp_path, concurrency=1)
    r.run(acts)
    assert not r.halted
    assert [a.result for a in acts] == [Result.FAILED] * 6 + [Result.REMOVED] * 4


def test_removed_meanwhile_is_skipped_not_failed(tmp_path: Path) -> None:
    """Another remover (the kubelet, a second kubegc) got there between the re-check and us."""

    class Racing(ScriptedCri):
        def remove_container(self, cid: str) -> bool:
            self._record("remove", cid)
            if cid == "busy":
                raise RuntimeUnavailable(
                    "RemoveContainer busy: already in removing state", "UNKNOWN"
                )
            return False  # NOT_FOUND

    cs = [ctr("gone"), ctr("busy", attempt=1)]
    cri = Racing({c.id: Status(ContainerState.EXITED, c.created_at) for c in cs})
    acts = [action(c) for c in cs]
    remover(cri, tmp_path).run(acts)
    assert [(a.result, a.error) for a in acts] == [
        (Result.SKIPPED, "gone before removal"),
        (Result.SKIPPED, "already being removed by someone else"),
    ]


class ScriptedSandboxes:
    """A runtime answering PodSandboxStatus/ListContainers from dicts; records calls."""

    def __init__(self, states: dict[str, tuple[Any, int]], members: dict[str, int], fail_stop=()):
        self.states, self.members, self.fail_stop = states, members, set(fail_stop)
        self.calls: list[tuple[str, str]] = []

    def pod_sandbox_status(self, sid: str) -> tuple[Any, int] | None:
        self.calls.append(("status", sid))
        return self.states.get(sid)

    def list_containers(self, sandbox_id: str = "") -> list[str]:
        return ["c"] * self.members.get(sandbox_id, 0)

    def stop_pod_sandbox(self, sid: str) -> bool:
        self.calls.append(("stop", sid))
        if sid in self.fail_stop:
            raise RuntimeUnavailable("StopPodSandbox: injected failure", "INTERNAL")
        return sid in self.states

    def remove_pod_sandbox(self, sid: str) -> bool:
        self.calls.append(("remove", sid))
        return self.states.pop(sid, None) is not None


def test_a_sandbox_of_a_pod_that_comes_back_alive_is_kept() -> None:
    """A deleted pod's old sandbox is kept when the pod has a READY sandbox again, or a
    RUNNING container, right before its removal."""
    from dataclasses import replace

    from kubegc_cli.core.model import Sandbox
    from kubegc_cli.core.plan import SandboxAction
    from kubegc_cli.node.execute.actions import SandboxRemover

    nr = SandboxState.NOTREADY

    class Pods(ScriptedSandboxes):
        def __init__(self, *args: Any, pods: dict[str, Any]) -> None:
            super().__init__(*args)
            self.pods = pods

        def list_sandboxes(self, labels: dict[str, str] | None = None) -> list[Sandbox]:
            uids = [labels[LABEL_POD_UID]] if labels else list(self.pods)
            return [
                Sandbox(f"new-{uid}", "p", "ns", uid, 1, state, 200)
                for uid in uids
                for state in [SandboxState.READY if self.pods[uid] == "ready" else nr]
            ]

        def list_containers(
            self, sandbox_id: str = "", labels: Any = None, annotations: bool = True
        ) -> list[Any]:
            if sandbox_id:
                return super().list_containers(sandbox_id)
            uids = [labels[LABEL_POD_UID]] if labels else list(self.pods)
            return [
                replace(ctr(f"c-{uid}", uid=uid, state=state), pod_sandbox_id=f"new-{uid}")
                for uid in uids
                for state in ["RUNNING" if self.pods[uid] == "running" else "EXITED"]
            ]

    cri = Pods(
        {"a": (nr, 100), "b": (nr, 100), "c": (nr, 100), "d": (nr, 100)}, {},
        pods={"ua": "ready", "ub": "running", "uc": "dead", "ud": "ready"},
    )  # fmt: skip
    rules = {"a": "deleted-pod", "b": "terminated-pod", "c": "deleted-pod", "d": "older-sandbox"}
    acts = [
        SandboxAction(Sandbox(i, "p", "ns", f"u{i}", 0, nr, 100), rules[i], "t") for i in "abcd"
    ]
    client: Any = cri
    SandboxRemover(client, concurrency=1).run(acts)
    assert [(a.id, a.result, a.error) for a in acts] == [
        ("a", Result.SKIPPED, POD_ALIVE),
        ("b", Result.SKIPPED, POD_ALIVE),
        ("c", Result.REMOVED, ""),
        ("d", Result.REMOVED, ""),  # older-sandbox: the pod is known to exist; not asked
    ]
    assert ("stop", "a") not in cri.calls and ("stop", "b") not in cri.calls


def test_sandbox_remover_rechecks_and_stops_before_removing() -> None:
    from kubegc_cli.core.model import Sandbox, SandboxState
    from kubegc_cli.core.plan import SandboxAction
    from kubegc_cli.node.execute.actions import SandboxRemover

    def sbx(sid: str) -> Sandbox:
        return Sandbox(sid, "p", "ns", "u", 0, SandboxState.NOTREADY, 100)

    nr, ready = SandboxState.NOTREADY, SandboxState.READY
    cri = ScriptedSandboxes(
        {"ok": (nr, 100), "ready": (ready, 100), "busy": (nr, 100), "nostop": (nr, 100)},
        {"busy": 1},
        fail_stop={"nostop"},
    )
    acts = [
        SandboxAction(sbx(i), "older-sandbox", "t")
        for i in ("ok", "ready", "busy", "nostop", "gone")
    ]
    client: Any = cri
    SandboxRemover(client, concurrency=1).run(acts)
    got = {a.id: (a.result, a.error.split(":")[0]) for a in acts}
    assert got == {
        "ok": (Result.REMOVED, ""),
        "ready": (Result.SKIPPED, "READY now; no longer garbage"),
        "busy": (Result.SKIPPED, "has containers now; active"),
        "nostop": (Result.FAILED, "StopPodSandbox"),
        "gone": (Result.SKIPPED, "gone before removal"),
    }
    assert ("stop", "ok") in cri.calls and cri.calls.index(("stop", "ok")) < cri.calls.index(
        ("remove", "ok")
    )
    assert ("remove", "nostop") not in cri.calls


class ScriptedImages:
    """A runtime whose image store is a set and whose containers use `used` images (a list
    read at each `ListContainers`, which a test may change at any time); records calls."""

    def __init__(self, ids: set[str], used: list[Container] | None = None) -> None:
        self.ids = ids
        self.used = used or []
        self.calls: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def image_exists(self, iid: str) -> bool:
        with self.lock:
            self.calls.append(("status", iid))
        return iid in self.ids

    def list_containers(self, *, annotations: bool = True) -> list[Container]:
        with self.lock:
            self.calls.append(("list", ""))
        return list(self.used)

    def remove_image(self, iid: str) -> bool:
        with self.lock:
            self.calls.append(("remove", iid))
        if iid not in self.ids:
            return False
        self.ids.discard(iid)
        return True


def _user(cid: str, **image: str) -> Container:
    from dataclasses import replace

    return replace(ctr(cid), **image)


def test_image_remover_rechecks_use_and_existence() -> None:
    """Each image is re-checked right before its RemoveImage: gone → skipped; used by any
    container the runtime has at that moment (any state; by ID, tag or digest) → skipped."""
    from kubegc_cli.core.model import Image
    from kubegc_cli.core.plan import ImageAction
    from kubegc_cli.node.execute.actions import ImageRemover

    images = {
        "free": Image("free", size=10),
        "busy": Image("busy", size=10),
        "tagged": Image("tagged", repo_tags=("r/t:1",), size=10),
        "digest": Image("digest", repo_digests=("r/d@sha256:1",), size=10),
        "gone": Image("gone", size=10),
    }
    users = [
        _user("e", image_id="busy"),
        _user("t", image="r/t:1"),
        _user("d", image_ref="r/d@sha256:1"),
    ]
    cri = ScriptedImages(set(images) - {"gone"}, users)
    acts = [ImageAction(img, 1, 0, "space", "t") for img in images.values()]
    client: Any = cri
    ImageRemover(client, concurrency=1).run(acts)
    assert [(a.id, a.result, a.error, a.bytes_freed) for a in acts] == [
        ("free", Result.REMOVED, "", 10),
        ("busy", Result.SKIPPED, "used by a container now", 0),
        ("tagged", Result.SKIPPED, "used by a container now", 0),
        ("digest", Result.SKIPPED, "used by a container now", 0),
        ("gone", Result.SKIPPED, "gone before removal", 0),
    ]
    assert cri.ids == {"busy", "tagged", "digest"}
    # the list is read after the image's status, right before its removal
    assert cri.calls[:3] == [("status", "free"), ("list", ""), ("remove", "free")]


def test_an_image_a_container_takes_during_the_stage_is_kept() -> None:
    """A container created with a planned image while the stage runs (after earlier removals)
    protects it: containerd would remove the image of a running container without complaint."""
    from kubegc_cli.core.model import Image
    from kubegc_cli.core.plan import ImageAction
    from kubegc_cli.node.execute.actions import ImageRemover

    class Taker(ScriptedImages):
        def remove_image(self, iid: str) -> bool:
            if iid == "first":  # a pod starts with "second" while "first" is being removed
                self.used.append(_user("new", image_id="second"))
            return super().remove_image(iid)

    cri = Taker({"first", "second"})
    acts = [ImageAction(Image(i, size=1), 1, 0, "space", "t") for i in ("first", "second")]
    client: Any = cri
    ImageRemover(client, concurrency=1).run(acts)
    assert [(a.id, a.result) for a in acts] == [
        ("first", Result.REMOVED),
        ("second", Result.SKIPPED),
    ]
    assert cri.ids == {"second"}


def test_a_shared_reading_is_never_older_than_the_asking() -> None:
    """Callers that arrive while a reading is in flight wait for the next one, which they
    share: each gets a reading begun after it asked; many callers, few calls."""
    from kubegc_cli.node.execute.actions import SharedReading

    clock = [0]
    began: list[int] = []
    release = threading.Event()
    lock = threading.Lock()

    def read() -> int:
        with lock:
            clock[0] += 1
            stamp = clock[0]
            began.append(stamp)
        release.wait(0.05)
        return stamp

    shared = SharedReading(read)
    asked: dict[int, int] = {}
    got: dict[int, int] = {}

    def caller(i: int) -> None:
        with lock:
            asked[i] = clock[0]  # readings begun before this call
        got[i] = shared.get()

    threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[i] > asked[i] for i in range(8))  # begun after the caller asked
    assert shared.calls == len(began) < 8

    def fail() -> int:
        raise RuntimeUnavailable("ListContainers: down", "UNAVAILABLE")

    with pytest.raises(RuntimeUnavailable, match="down"):
        SharedReading(fail).get()


def _stop_at_third_submit(monkeypatch: pytest.MonkeyPatch, stop: Callable[[], None]) -> list[int]:
    """Make `ThreadPoolExecutor.submit` call `stop` as the third action is queued; returns a
    one-item list counting the actions queued."""
    from concurrent.futures import ThreadPoolExecutor

    real_submit = ThreadPoolExecutor.submit
    queued = [0]

    def submit(self: ThreadPoolExecutor, fn: Any, /, *args: Any) -> Any:
        queued[0] += 1
        if queued[0] == 3:
            stop()
        return real_submit(self, fn, *args)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", submit)
    return queued


def _raise_interrupt() -> None:
    raise KeyboardInterrupt


def test_a_stop_signal_while_a_large_run_is_queued_cancels_the_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the actions are still being handed to the workers: nothing queued after it
    starts, every action not attempted is `skipped`, and `Interrupted` is raised (so the run
    reports and audits what was done)."""
    from kubegc_cli.node.execute.actions import Interrupted

    cs = [ctr(f"c{i:04d}") for i in range(200)]
    cri = ScriptedCri({c.id: Status(c.state, c.created_at) for c in cs})
    _stop_at_third_submit(monkeypatch, _raise_interrupt)
    actions = [action(c) for c in cs]
    with pytest.raises(Interrupted):
        remover(cri, tmp_path, concurrency=1).run(actions)
    results = [a.result for a in actions]
    assert results.count(Result.REMOVED) <= 2
    assert results[2:] == [Result.SKIPPED] * 198
    removes = [c for c in cri.calls if c[0] == "remove"]
    assert len(removes) <= 2  # nothing after the signal ran


def test_no_removal_starts_once_a_stop_signals_handler_has_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stop signal's handler (`core.stop.first_stop`) runs in the main thread while a
    worker is between two removals: the worker starts no further removal, even before the
    handler's exception reaches `run` and cancels the queue."""
    import signal

    from kubegc_cli.core import stop

    class HandledMidRun(ScriptedCri):
        def remove_container(self, cid: str) -> bool:
            removed = super().remove_container(cid)
            monkeypatch.setattr(stop, "received", signal.SIGTERM)  # what the handler records
            return removed

    cs = [ctr(f"c{i:04d}") for i in range(5)]
    cri = HandledMidRun({c.id: Status(c.state, c.created_at) for c in cs})
    actions = [action(c) for c in cs]
    remover(cri, tmp_path, concurrency=1).run(actions)
    assert [a.result for a in actions] == [Result.REMOVED] + [Result.SKIPPED] * 4
    assert {a.error for a in actions[1:]} == {INTERRUPTED}
    assert [c for c in cri.calls if c[0] == "remove"] == [("remove", "c0000")]


def test_a_stop_signal_while_queueing_is_held_until_the_queue_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real SIGINT while the actions are handed to the workers is not raised inside the
    pool's `submit` (it could leave the pool's locks held: a hang); it is raised once all are
    queued, the rest are cancelled, and the run ends `Interrupted` with every action decided."""
    import signal

    from kubegc_cli.node.execute.actions import Interrupted

    cs = [ctr(f"c{i:04d}") for i in range(300)]
    cri = ScriptedCri({c.id: Status(c.state, c.created_at) for c in cs})
    # its handler runs in `submit`, mid-queueing
    counted = _stop_at_third_submit(monkeypatch, lambda: os.kill(os.getpid(), signal.SIGINT))
    actions = [action(c) for c in cs]
    with pytest.raises(Interrupted):
        remover(cri, tmp_path, concurrency=1).run(actions)
    assert counted == [300]  # the signal waited for the queue
    results = [a.result for a in actions]
    assert set(results) <= {Result.REMOVED, Result.SKIPPED} and Result.SKIPPED in results


def test_pod_liveness_asks_one_list_per_question_after_its_baseline() -> None:
    """`PodLiveness`: a pod dead at the baseline (NOTREADY sandbox, EXITED containers) is asked
    with one filtered ListPodSandbox per question, and is alive as soon as it has a READY
    sandbox or any sandbox new since the baseline (which may have run a container). A pod
    alive at the baseline, or with a container in a sandbox not its own, is asked in full."""
    from dataclasses import replace

    from kubegc_cli.node.execute.actions import PodLiveness
    from tests.unit.memorycri import MemoryCri

    def sb(sid: str, uid: str, state: SandboxState) -> Sandbox:
        return Sandbox(sid, "p", "ns", uid, 0, state, 0, labels={LABEL_POD_UID: uid})

    nr, ready = SandboxState.NOTREADY, SandboxState.READY

    class Counting(MemoryCri):
        calls: list[str]

        def list_sandboxes(self, labels: Any = None) -> list[Sandbox]:
            self.calls.append("sandboxes")
            return super().list_sandboxes(labels)

        def list_containers(self, *args: Any, **kwargs: Any) -> list[Container]:
            self.calls.append("containers")
            return super().list_containers(*args, **kwargs)

    cri = Counting(
        {
            "x0": ctr("x0", uid="x"),
            "y0": ctr("y0", uid="y", state="RUNNING"),
            "z0": replace(ctr("z0", uid="z"), pod_sandbox_id="sb-y"),  # not in its own sandbox
        },
        {"sb-x": sb("sb-x", "x", nr), "sb-y": sb("sb-y", "y", nr), "sb-z": sb("sb-z", "z", nr)},
    )
    cri.calls = []
    client: Any = cri
    pods = PodLiveness(client)
    assert pods.alive("x") is False
    assert cri.calls == ["sandboxes", "containers", "sandboxes"]  # baseline, then one list
    cri.calls.clear()
    assert pods.alive("x") is False and cri.calls == ["sandboxes"]

    cri.sandboxes["sb-x2"] = sb("sb-x2", "x", nr)  # run and stopped since: it may hold a
    assert pods.alive("x") is True  # running container
    del cri.sandboxes["sb-x2"]
    cri.sandboxes["sb-x"] = sb("sb-x", "x", ready)
    assert pods.alive("x") is True

    cri.calls.clear()
    assert pods.alive("y") is True  # RUNNING at the baseline: asked in full, every time
    cri.containers["y0"] = ctr("y0", uid="y")
    assert pods.alive("y") is False
    assert cri.calls == ["sandboxes", "containers"] * 2
    cri.calls.clear()
    assert pods.alive("z") is False and cri.calls == ["sandboxes", "containers"]
    assert pods.alive("gone") is False  # no sandbox, no container: dead


def test_pod_liveness_shares_one_reading_among_questions_about_the_same_pod() -> None:
    """Concurrent questions about one pod (removals of its containers at --concurrency 8)
    share readings begun after each asked: fewer filtered lists than questions, and a pod that
    became alive before a question is alive in its answer (no reading older than the question
    serves it). Another pod's question gets a reading of its own."""
    import threading

    from kubegc_cli.node.execute.actions import PodLiveness
    from tests.unit.memorycri import MemoryCri

    def sb(sid: str, uid: str, state: SandboxState) -> Sandbox:
        return Sandbox(sid, "p", "ns", uid, 0, state, 0, labels={LABEL_POD_UID: uid})

    class Slow(MemoryCri):
        filtered: list[str]

        def list_sandboxes(self, labels: Any = None) -> list[Sandbox]:
            if labels:
                self.filtered.append(labels[LABEL_POD_UID])
                threading.Event().wait(0.05)  # a call in flight while others ask
            return super().list_sandboxes(labels)

    cri = Slow(
        {"x0": ctr("x0", uid="x"), "w0": ctr("w0", uid="w")},
        {
            "sb-x": sb("sb-x", "x", SandboxState.NOTREADY),
            "sb-w": sb("sb-w", "w", SandboxState.NOTREADY),
        },
    )
    cri.filtered = []
    client: Any = cri
    pods = PodLiveness(client)
    answers: list[bool] = []

    def ask() -> None:
        answers.append(pods.alive("x"))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [False] * 8
    assert 1 <= cri.filtered.count("x") < 8
    assert pods.alive("w") is False and cri.filtered.count("w") == 1

    cri.sandboxes["sb-x"] = sb("sb-x", "x", SandboxState.READY)
    assert pods.alive("x") is True  # asked after the change: a reading begun after it
