"""When the world misbehaves: a runtime that dies, hangs, refuses single objects or is slow
(`tests.unit.faultcri`), a socket kubegc may not use, a signal in the middle of removals, a
state store that is locked or full, a Kubernetes API that changes under a paged list.

The state store's own failures (read-only, damaged, locked by another process, concurrent
writers) are tested on the store in `tests/unit/test_state.py`; the API's timeout, 5xx,
401/403 and a failing second page in `tests/unit/test_pods_api.py`. Here they are driven
through whole `kubegc` runs.

The deadlines asserted below are behaviour, not speed: kubegc promises to give up on a
runtime within `--timeout` (plus one second of process exit), whatever the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from tests.unit.faultcri import (
    NOW_NS,
    FaultCri,
    Inventory,
    S,
    container_pb,
    dead_containers,
    sandbox_pb,
)
from tests.unit.memorycri import run_cli

NOW = "2027-01-15T08:00:00Z"  # tests.unit.faultcri.NOW_NS


def node_inventory(dead: int = 6, pods: int = 2) -> Inventory:
    """`pods` pods, each with a running `web` and `dead` exited attempts of `job` (all but the
    newest removable by the default policy)."""
    inv = Inventory()
    for p in range(pods):
        uid, name = f"uid-{p}", f"pod-{p}"
        inv.sandboxes[f"sb-{uid}"] = sandbox_pb(f"sb-{uid}", pod_uid=uid, pod_name=name)
        inv.containers[f"web-{p}"] = container_pb(
            f"web-{p}", pod_uid=uid, pod_name=name, name="web", state="RUNNING"
        )
        for a in range(dead):
            cid = f"job-{p}-{a}"
            inv.containers[cid] = container_pb(
                cid, pod_uid=uid, pod_name=name, name="job", attempt=a,
                created_at=inv.containers[f"web-{p}"].created_at + a * 1_000_000_000,
            )  # fmt: skip
    return inv


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short directory for unix sockets (pytest's tmp paths can exceed 107 bytes)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kgc-") as d:
        yield Path(d)


@pytest.fixture
def cri(sock_dir: Path) -> Iterator[FaultCri]:
    """A fault-injecting runtime serving `node_inventory()`."""
    with FaultCri(sock_dir / "cri.sock", node_inventory()) as server:
        yield server


def kubegc(cri: FaultCri | str, state: Path, *args: str) -> list[str]:
    """The argv of a `kubegc` run against `cri` (or an endpoint) with a scratch state dir."""
    endpoint = cri if isinstance(cri, str) else cri.endpoint
    return ["-r", endpoint, "--state-dir", str(state), "--pod-source", "none", "--now", NOW, *args]


def run_process(argv: list[str], timeout: float = 60) -> tuple[int, str, str, float]:
    """Run `python -m kubegc_cli argv`: (exit code, stdout, stderr, seconds)."""
    began = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", *argv], capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - began


def removed_in(doc: dict[str, Any]) -> set[str]:
    """IDs a JSON plan reports as removed."""
    return {a["id"] for a in doc["actions"] if a["result"] == "removed"}


def history(state: Path) -> list[dict[str, Any]]:
    """The runs `kubegc history -o json` lists for `state`, newest first."""
    code, out, err = run_cli(["--state-dir", str(state), "history", "-o", "json"])
    assert code == 0, err
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


# ---- the cases 3 and 4 ----


@pytest.mark.parametrize(
    ("dies_after", "concurrency"),
    [(1, 4), (2, 1), (2, 4), (2, 64)],
    ids=["observe", "re-list-before-acting-c1", "re-list-before-acting", "re-list-c64"],
)
def test_case_3_runtime_dies_after_listing(
    cri: FaultCri, tmp_path: Path, dies_after: int, concurrency: int
) -> None:
    """The runtime answers ListContainers, then dies: exit 3 within --timeout + 1 s, nothing
    removed and nothing reported as removed (the report says what was not attempted, and the
    audit has it). When it dies after the re-list right before
    removals start, the run halts after a few unanswered re-checks — or, with as many calls
    in flight as actions (`--concurrency 64`), every re-check fails before it can halt: still
    exit 3 (nothing was removed: no removal was sent), the report printed, every action
    accounted for."""
    cri.die_after["ListContainers"] = dies_after
    argv = ["--timeout", "3s", "gc", "containers", "--yes", "-o", "json"]
    code, out, err, took = run_process(
        kubegc(cri, tmp_path / "st", *argv, "--concurrency", str(concurrency))
    )
    assert took < 3 + 1
    assert cri.count("ListContainers") == dies_after and not cri.alive
    assert cri.removed == [] and cri.count("RemoveContainer") == 0
    assert err.startswith("kubegc: error: ") and "Traceback" not in err
    if dies_after == 1:  # the guard's last-moment re-list finds nobody: nothing attempted
        assert code == 3 and err.count("\n") == 1 and "cri.sock" in err, err
        assert "nothing removed" in err
        doc = json.loads(out)
        assert doc["actions"] and {(a["result"], a["error"]) for a in doc["actions"]} == {
            ("skipped", "not attempted: the runtime stopped answering")
        }
        assert [r["by_result"] for r in history(tmp_path / "st")] == [
            {"skipped": len(doc["actions"])}
        ]
        return
    assert code == 3, err
    assert "the runtime stopped answering before anything was removed" in err
    assert err.count("\n") == 1 and "nothing removed" in err
    doc = json.loads(out)
    assert removed_in(doc) == set()
    results = [(a["result"], a["error"]) for a in doc["actions"]]
    assert "failed" in {r for r, _ in results} <= {"failed", "skipped"}
    assert all("cri.sock" in e or e.startswith("not attempted") for _, e in results)


def test_case_4_not_found_on_removal_is_skipped_not_failed(cri: FaultCri, tmp_path: Path) -> None:
    gone = "job-0-0"
    cri.errors[("RemoveContainer", gone)] = (grpc.StatusCode.NOT_FOUND, "container not found")
    code, out, err = run_cli(kubegc(cri, tmp_path, "gc", "containers", "--yes", "-o", "json"))
    assert code == 0, err
    doc = json.loads(out)
    results = {a["id"]: (a["result"], a["error"]) for a in doc["actions"]}
    assert results.pop(gone) == ("skipped", "gone before removal")
    assert results and all(r == ("removed", "") for r in results.values())
    assert set(cri.removed) == set(results)


def test_not_found_on_a_stop_before_removal_is_skipped_not_failed(
    sock_dir: Path, tmp_path: Path
) -> None:
    """The kubelet (or anyone) removed the object between kubegc's re-check and its stop:
    `StopPodSandbox` of a dead sandbox, or `StopContainer` of an UNKNOWN container, answers
    NotFound. That object is already gone: skipped, exit 0, the others removed."""
    inv = node_inventory(dead=0, pods=0)
    for n in range(3):  # a pod's old sandbox attempts, NOTREADY, without containers
        sid = f"old-{n}"
        inv.sandboxes[sid] = sandbox_pb(
            sid, pod_uid="uid-s", pod_name="pod-s", attempt=n, ready=False,
            created_at=NOW_NS - (900 - n) * S,
        )  # fmt: skip
    inv.sandboxes["new"] = sandbox_pb("new", pod_uid="uid-s", pod_name="pod-s", attempt=3)
    for a in range(3):
        inv.containers[f"u-{a}"] = container_pb(
            f"u-{a}", pod_uid="uid-s", pod_name="pod-s", sandbox_id="new", attempt=a,
            state="UNKNOWN", created_at=NOW_NS - (600 - a) * S,
        )  # fmt: skip
    with FaultCri(sock_dir / "cri.sock", inv) as cri:
        cri.errors[("StopPodSandbox", "old-0")] = (grpc.StatusCode.NOT_FOUND, "not found")
        cri.errors[("StopContainer", "u-0")] = (grpc.StatusCode.NOT_FOUND, "not found")
        for what in ("sandboxes", "containers"):
            code, out, err = run_cli(kubegc(cri, tmp_path, "gc", what, "--yes", "-o", "json"))
            assert code == 0, err
            results = {a["id"]: (a["result"], a["error"]) for a in json.loads(out)["actions"]}
            gone = "old-0" if what == "sandboxes" else "u-0"
            assert results.pop(gone) == ("skipped", "gone before removal")
            assert results and all(r == ("removed", "") for r in results.values())
        assert sorted(cri.removed) == ["old-1", "u-1"]  # (old-2: the newest attempt stays)


# ---- a runtime that does not answer, or may not be used ----


def test_server_that_never_answers_is_exit_3_within_the_deadline(
    cri: FaultCri, tmp_path: Path
) -> None:
    """The deadline counts from the first call: from there kubegc is out within --timeout
    plus one second (the process's start-up before it, slow on a loaded machine, is not
    part of the promise)."""
    cri.hang.add("Version")
    code, out, err, took = run_process(
        kubegc(cri, tmp_path, "--timeout", "2s", "gc", "containers", "--yes")
    )
    ended = time.monotonic()
    assert code == 3 and out == ""
    assert cri.first_call_at is not None and ended - cri.first_call_at < 2 + 1
    assert took < 2 + 10  # (and no hang, whatever the load)
    assert "no CRI answer from" in err and "within 2s" in err and err.count("\n") == 1
    assert cri.removed == []


@pytest.mark.parametrize(
    ("sig", "code", "word"),
    [(signal.SIGTERM, 143, "terminated"), (signal.SIGINT, 130, "interrupted")],
)
def test_a_stop_signal_while_listing_exits_with_its_code(
    cri: FaultCri, tmp_path: Path, sig: int, code: int, word: str
) -> None:
    """SIGTERM (or Ctrl-C) while the runtime is being listed: exit 143 (130), saying which,
    no traceback, nothing removed."""
    cri.hang.add("ListContainers")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubegc_cli",
         *kubegc(cri, tmp_path, "--timeout", "30s", "gc", "containers", "--yes")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while ("ListContainers", "") not in cri.calls and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert f"kubegc: error: {word}" in err and "Traceback" not in err
    assert cri.removed == []


def test_socket_that_accepts_but_never_speaks_is_exit_3_within_the_deadline(
    sock_dir: Path, tmp_path: Path
) -> None:
    """A socket something listens on without ever answering (a wedged runtime)."""
    path = sock_dir / "mute.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(16)
    accepted: list[tuple[float, socket.socket]] = []

    def accept() -> None:
        with contextlib.suppress(OSError):  # (closed at the end)
            conn, _ = listener.accept()
            accepted.append((time.monotonic(), conn))

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        code, _, err, took = run_process(
            kubegc(f"unix://{path}", tmp_path, "--timeout", "2s", "gc", "containers", "--yes")
        )
        ended = time.monotonic()
    finally:
        listener.close()
        for _, conn in accepted:
            conn.close()
    assert code == 3 and took < 2 + 10
    assert accepted and ended - accepted[0][0] < 2 + 1  # the deadline counts from connecting
    assert str(path) in err and err.count("\n") == 1


def test_slow_answers_within_the_deadline_are_fine_beyond_it_are_failures(
    cri: FaultCri, tmp_path: Path
) -> None:
    """A slow RemoveContainer past --timeout fails that removal (the run halts after a few
    in a row); what is reported removed was removed."""
    cri.delay["ContainerStatus"] = 0.2
    code, out, err = run_cli(
        kubegc(cri, tmp_path, "--timeout", "2s", "gc", "containers", "--dry-run", "-o", "json")
    )
    assert code == 0, err
    planned = {a["id"] for a in json.loads(out)["actions"]}
    assert planned
    cri.delay["ContainerStatus"] = 0
    cri.delay["RemoveContainer"] = 1.5
    code, out, err = run_cli(
        kubegc(cri, tmp_path, "--timeout", "1s", "gc", "containers", "--yes", "-o", "json",
               "--concurrency", "2")
    )  # fmt: skip
    doc = json.loads(out)
    assert code == 1, err
    assert {a["result"] for a in doc["actions"]} <= {"failed", "skipped"}
    timed_out = [a["error"] for a in doc["actions"] if "timed out" in a["error"]]
    # the call was made and not answered: the runtime may still remove it
    assert timed_out and all("outcome unknown" in e for e in timed_out)
    assert any(a["error"].startswith("not attempted") for a in doc["actions"])  # halted
    assert removed_in(doc) <= set(cri.removed)


def test_runtime_killed_after_the_first_removals(cri: FaultCri, tmp_path: Path) -> None:
    """The runtime dies after two removals: exit 1, the two reported removed (and only they),
    the rest failed or not attempted, every action in the audit log."""
    cri.die_after["RemoveContainer"] = 2
    code, out, err, _ = run_process(
        kubegc(cri, tmp_path, "--timeout", "3s", "gc", "containers", "--yes", "-o", "json",
               "--concurrency", "1")
    )  # fmt: skip
    assert code == 1, err
    doc = json.loads(out)
    assert removed_in(doc) == set(cri.removed) and len(cri.removed) == 2
    others = [a for a in doc["actions"] if a["result"] != "removed"]
    assert others and {a["result"] for a in others} <= {"failed", "skipped"}
    [run] = history(tmp_path)
    assert {a["id"]: a["result"] for a in run["actions"]} == {
        a["id"]: a["result"] for a in doc["actions"]
    }


def test_errors_on_single_objects_fail_only_those(cri: FaultCri, tmp_path: Path) -> None:
    refused = "job-1-0"
    cri.errors[("RemoveContainer", refused)] = (grpc.StatusCode.FAILED_PRECONDITION, "busy")
    cri.errors[("ContainerStatus", "job-0-1")] = (grpc.StatusCode.INTERNAL, "boom")
    # A dry run plans from the list alone (log paths from the kubelet's layout): no status call.
    code, out, err = run_cli(kubegc(cri, tmp_path, "gc", "containers", "--dry-run", "-o", "json"))
    assert code == 0 and "job-0-1" in {a["id"] for a in json.loads(out)["actions"]}, err
    # --older-than needs finish times: every dead container's status is read, and one that
    # cannot be read leaves an unreadable inventory: no plan at all.
    code, out, err = run_cli(
        kubegc(cri, tmp_path, "gc", "containers", "--older-than", "1s", "--dry-run", "-o", "json")
    )
    assert code == 3 and "ContainerStatus" in err
    del cri.errors[("ContainerStatus", "job-0-1")]
    code, out, err = run_cli(kubegc(cri, tmp_path, "gc", "containers", "--yes", "-o", "json"))
    assert code == 1, err
    doc = json.loads(out)
    failed = {a["id"]: a["error"] for a in doc["actions"] if a["result"] == "failed"}
    assert list(failed) == [refused] and "FAILED_PRECONDITION" in failed[refused]
    assert removed_in(doc) == set(cri.removed) == {a["id"] for a in doc["actions"]} - {refused}


@pytest.mark.parametrize(
    ("dir_mode", "sock_mode"),
    [(0o711, 0o600), (0o700, 0o666)],
    ids=["socket-not-writable", "directory-not-searchable"],
)
def test_permission_denied_on_the_socket(sock_dir: Path, dir_mode: int, sock_mode: int) -> None:
    """A real socket this user may not connect to, or in a directory it may not enter (kubegc
    run as `nobody`): exit 3, one line saying permission denied (not "no such file"), and
    the runtime never hears from it."""
    import shutil

    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run kubegc as another user")
    sock_dir.chmod(dir_mode)
    with FaultCri(sock_dir / "cri.sock", node_inventory()) as server:
        server.socket.chmod(sock_mode)
        argv = kubegc(server, sock_dir / "state", "gc", "containers", "--dry-run")
        proc = subprocess.run(
            [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-m",
             "kubegc_cli", *argv],
            capture_output=True, text=True, timeout=60, cwd=Path(__file__).parents[2],
        )  # fmt: skip
        assert server.calls == [] and server.removed == []
    assert proc.returncode == 3, proc.stderr
    assert "permission denied" in proc.stderr and str(server.socket) in proc.stderr
    assert proc.stderr.count("\n") == 1


# ---- signals in the middle of removals ----


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_removals_reports_and_records_what_was_done(
    cri: FaultCri, tmp_path: Path, sig: int, code: int
) -> None:
    """Three removals done, the fourth in flight when the signal comes: the in-flight one
    finishes, nothing new starts, the report and the audit log say so, exit 130/143."""
    cri.gate, cri.gate_after = threading.Event(), 3
    argv = kubegc(cri, tmp_path, "gc", "containers", "--yes", "-o", "json", "--concurrency", "1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubegc_cli", *argv], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert cri.at_gate.wait(30), "removals never started"
        proc.send_signal(sig)
        time.sleep(0.5)  # the signal is taken while the fourth removal is in flight
        cri.gate.set()
        out, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    doc = json.loads(out)
    assert doc["interrupted"] is True
    assert removed_in(doc) == set(cri.removed) and len(cri.removed) == 4
    rest = [a for a in doc["actions"] if a["result"] != "removed"]
    assert rest and all(
        (a["result"], a["error"]) == ("skipped", "interrupted before removal") for a in rest
    )
    assert cri.count("RemoveContainer") == 4
    word = "terminated" if sig == signal.SIGTERM else "interrupted"
    assert f"kubegc: error: {word}; {len(rest)} planned removal(s) not attempted" in err
    [run] = history(tmp_path)
    assert run["by_result"] == {"removed": 4, "skipped": len(rest)}


def _ended(proc: subprocess.Popen[str]) -> str:
    """How a kubegc process that should still be running ended (for a failing assertion)."""
    if proc.poll() is None:
        return "still running"
    _, err = proc.communicate()
    return f"exit {proc.returncode}: {err.strip()}"


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_second_signal_exits_at_once(cri: FaultCri, tmp_path: Path, sig: int, code: int) -> None:
    """The first signal waits for the removal in flight; a second one exits at once, while
    that removal is still blocked in the runtime, with one line saying what is unknown. The
    audit rows record what was done: the removals before, the one in flight failed with its
    outcome unknown, the rest not attempted."""
    cri.gate, cri.gate_after = threading.Event(), 3
    argv = kubegc(cri, tmp_path, "gc", "containers", "--yes", "-o", "json", "--concurrency", "1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubegc_cli", *argv], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert cri.at_gate.wait(30), f"removals never started: {_ended(proc)}"
        proc.send_signal(sig)
        time.sleep(0.5)  # the first signal is taken; the fourth removal is still held
        assert proc.poll() is None  # it waits for the call in flight
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=10)
    finally:
        cri.gate.set()
        proc.kill()
    assert proc.returncode == code, err
    assert "again: exiting without waiting for the calls in flight" in err
    assert "audit rows written (kubegc history)" in err
    assert err.count("\n") == 1 and out == ""
    removed_at_exit = set(cri.removed)
    assert len(removed_at_exit) == 3  # the held removal never completed before the exit
    [run] = history(tmp_path)
    total = sum(run["by_result"].values())
    assert run["by_result"] == {"removed": 3, "failed": 1, "skipped": total - 4}
    assert {a["id"] for a in run["actions"] if a["result"] == "removed"} == removed_at_exit
    [in_flight] = [a for a in run["actions"] if a["result"] == "failed"]
    assert "second stop signal with the call in flight; outcome unknown" in in_flight["error"]


# ---- the state store, during whole runs ----


def test_locked_state_store_is_exit_4_and_nothing_is_removed(cri: FaultCri, tmp_path: Path) -> None:
    """Another run holds the node lock (its process here): exit 4 before the runtime is read."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; "
         "from kubegc_cli.node.state import node_lock\n"
         "with node_lock(Path(sys.argv[1])):\n print('held', flush=True); time.sleep(60)",
         str(tmp_path)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, out, err, _ = run_process(kubegc(cri, tmp_path, "gc", "containers", "--yes"))
    finally:
        holder.kill()
        holder.wait()
    assert code == 4 and out == ""
    assert f"(pid {holder.pid})" in err and err.count("\n") == 1
    assert cri.removed == [] and cri.calls == []


def test_read_only_state_store_stops_a_removing_run_before_the_plan(
    cri: FaultCri, tmp_path: Path
) -> None:
    from tests.unit.test_state import _read_only

    state = tmp_path / "st"
    state.mkdir()
    with _read_only(state):
        code, out, err = run_cli(kubegc(cri, state, "gc", "containers", "--yes"))
        dry = run_cli(kubegc(cri, state, "gc", "containers", "--dry-run", "-o", "json"))
    assert code == 2 and out == "" and "read-only" in err and err.count("\n") == 1
    assert cri.removed == [] and cri.count("ListContainers") == 1  # only the dry run listed
    assert dry[0] == 0 and json.loads(dry[1])["actions"]


def test_damaged_state_store_is_moved_aside_and_the_run_is_recorded(
    cri: FaultCri, tmp_path: Path
) -> None:
    (tmp_path / "state.db").write_bytes(b"not a database, not at all" * 100)
    code, _, err = run_cli(kubegc(cri, tmp_path, "gc", "containers", "--yes", "-o", "json"))
    assert code == 0, err
    assert "is damaged" in err and len(list(tmp_path.glob("state.db.corrupt-*"))) == 1
    [run] = history(tmp_path)
    assert run["by_result"] == {"removed": len(cri.removed)} and cri.removed


def test_full_state_filesystem_does_not_stop_a_run_that_frees_space(
    cri: FaultCri, tmp_path: Path
) -> None:
    """No byte left where the state store lives (a node under disk pressure): the lock is
    still taken, the removals happen, and the missing audit rows are one error line naming
    the state dir, and exit 1; the report is whole."""
    if os.geteuid() != 0:
        pytest.skip("needs root to mount a small tmpfs")
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(full)]
    ).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        fd = os.open(full / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass  # ENOSPC: the filesystem is full
        finally:
            os.close(fd)
        code, out, err = run_cli(kubegc(cri, full, "gc", "containers", "--yes", "-o", "json"))
    finally:
        subprocess.run(["umount", str(full)], check=True)
    assert code == 1, err
    doc = json.loads(out)
    assert removed_in(doc) == set(cri.removed) and cri.removed
    line = f"kubegc: error: audit rows of this run not written to --state-dir {full}: "
    assert err.count("\n") == 1 and err.startswith(line) and "disk is full" in err
    assert any(n.startswith("audit rows of this run not written") for n in doc["notes"])


# ---- the Kubernetes API changing under a paged list ----


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    from tests.unit.recorded_api import serve_recorded_api

    with serve_recorded_api(tmp_path) as served:
        yield served


def _api_pod(uid: str) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"uid": uid, "name": f"pod-{uid}", "namespace": "default"},
            "status": {"phase": "Running"}}  # fmt: skip


@pytest.mark.parametrize("explicit", [True, False], ids=["--pod-source-api", "found-kubeconfig"])
def test_gone_continue_token_never_makes_a_partial_pod_list(
    cri: FaultCri, api: tuple[Any, Path], tmp_path: Path, explicit: bool
) -> None:
    """Page 1 lists pod uid-0; page 2 answers 410 Gone (the continue token expired while the
    list changed). Pod uid-1 is on no page read, yet it is not deleted: kubegc treats the API
    as unavailable — exit 3 when the API was asked for, else no pod source (with a warning) —
    and never acts on the first page alone (that would remove all of uid-1's containers)."""
    recorded, kubeconfig = api
    recorded.pages = [[_api_pod("uid-0")], [_api_pod("uid-1")]]
    recorded.fail = {1: (410, "The provided continue parameter is too old")}
    argv = ["-r", cri.endpoint, "--state-dir", str(tmp_path / "st"), "--now", NOW,
            "--kubeconfig", str(kubeconfig), "--node-name", "node-a"]  # fmt: skip
    if explicit:
        argv += ["--pod-source", "api"]
    code, out, err = run_cli([*argv, "gc", "containers", "--yes", "-o", "json"])
    assert len(recorded.requests) == 2 and recorded.requests[1]["continue"] == ["1"]
    if explicit:
        assert code == 3 and out == "" and "410" in err and err.count("\n") == 1
        assert cri.removed == []
        return
    assert code == 0, err
    assert "410" in err and "without a pod source" in err
    doc = json.loads(out)
    assert doc["policy"]["pod_source"] == "none"
    assert {a["rule"] for a in doc["actions"]} == {"max-per-pod-container"}
    assert "job-1-5" in {k["id"] for k in doc["kept"]}  # uid-1's newest record stays
    assert "job-1-5" in dead_containers(cri) and "job-1-5" not in cri.removed


def test_a_removal_cut_off_may_have_happened_so_the_run_is_not_exit_3(
    cri: FaultCri, tmp_path: Path
) -> None:
    """RemoveContainer answered UNAVAILABLE (the runtime went away while the call was in
    flight: it may have removed the container first). Those removals are failed with
    "outcome unknown", and the run is exit 1, never "nothing was removed" (exit 3)."""
    for cid in list(cri.inventory.containers):
        cri.errors[("RemoveContainer", cid)] = (grpc.StatusCode.UNAVAILABLE, "Stream removed")
    code, out, err = run_cli(kubegc(cri, tmp_path, "gc", "containers", "--yes", "-o", "json"))
    assert code == 1, err
    failed = [a["error"] for a in json.loads(out)["actions"] if a["result"] == "failed"]
    assert failed and all("outcome unknown (the runtime may still remove it" in e for e in failed)


# ---- text from the runtime on stderr ----

OSC = "\x1b]0;owned\x07"  # sets a terminal's title; with a newline, a forged line after it


def test_runtime_text_on_stderr_is_escaped_as_in_tables(cri: FaultCri, tmp_path: Path) -> None:
    """Error details from the runtime reach stderr as tables show them — control characters
    written as escapes — in -vv lines and in error lines: nothing the runtime says reaches the
    terminal as a control sequence or starts a line of its own."""
    forged = "kubegc: error: forged"
    cri.errors[("RemoveContainer", "job-1-0")] = (
        grpc.StatusCode.FAILED_PRECONDITION, f"busy{OSC}\n{forged}")  # fmt: skip
    code, out, err = run_cli(kubegc(cri, tmp_path, "-vv", "gc", "containers", "--yes", "-o",
                                    "json"))  # fmt: skip
    assert code == 1, err
    assert "\x1b" not in err and "\x07" not in err, err
    assert "busy\\x1b]0;owned\\x07" in err
    assert not any(line.startswith(forged) for line in err.splitlines())
    [error] = [a["error"] for a in json.loads(out)["actions"] if a["result"] == "failed"]
    assert f"busy{OSC}" in error  # the document keeps the text (JSON escapes it)
    cri.errors[("ListContainers", "")] = (grpc.StatusCode.INTERNAL, f"down{OSC}\n{forged}")
    code, out, err = run_cli(kubegc(cri, tmp_path, "gc", "containers", "--dry-run"))
    assert code == 3 and out == "" and err.count("\n") == 1, err
    assert err.startswith("kubegc: error: ") and "\x1b" not in err and "\x07" not in err
    assert "down\\x1b]0;owned\\x07" in err
