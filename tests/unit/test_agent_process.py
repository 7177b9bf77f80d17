"""`kubegc agent` as a process: `python -m kubegc_cli agent ...` in a fresh interpreter, with
the cycle from `tests.unit.agentseam` (scripted timing, handed in through the edges) —
SIGTERM during a cycle ends the process cleanly within a few seconds with its documented
exit code; start-up errors (a malformed policy, a taken address) are one line and exit 2."""

from __future__ import annotations

import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROGRAM = """\
import runpy, sys
from pathlib import Path
from kubegc_cli.commands.edges import using
from tests.unit.agentseam import ScriptedCycle, Step
steps = [Step(**s) for s in {steps!r}]
sys.argv = ["kubegc", *{argv!r}]
with using(agent=lambda s, o, ui: ScriptedCycle(steps, marker=Path({marker!r}))):
    runpy.run_module("kubegc_cli", run_name="__main__")
"""


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in ("KUBEGC_CONFIG", "KUBECONFIG")}
    out["PYTHONPATH"] = str(ROOT)
    return out


def start(tmp_path: Path, steps: list[dict[str, Any]], *args: str) -> subprocess.Popen[str]:
    argv = ["--host-root", str(tmp_path), "--state-dir", str(tmp_path / "state"),
            "--pod-source", "none", "agent", "--listen", "127.0.0.1:0", *args]  # fmt: skip
    program = PROGRAM.format(steps=steps, argv=argv, marker=str(tmp_path / "marker"))
    return subprocess.Popen(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env=env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "stderr", "w"),
        text=True,
    )


def wait_for(path: Path, text: str, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not (path.exists() and text in path.read_text()):
        assert time.monotonic() < deadline, f"{text!r} not in {path}"
        time.sleep(0.02)


def get(port: int, path: str) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("absorb", "once", "code"),
    [(False, False, 0), (True, False, 0), (True, True, 143)],
    ids=["signal-leaves-the-cycle", "cycle-finishes-its-removal", "once-is-a-command"],
)
def test_sigterm_during_a_cycle_ends_the_agent_cleanly(
    tmp_path: Path, absorb: bool, once: bool, code: int
) -> None:
    """SIGTERM while a cycle runs: whether the signal leaves the cycle or the cycle finishes
    what it was doing (as `carry_out` does) and returns, the agent exits within a few seconds
    — 0, a DaemonSet pod's normal end; `--once` as a command, 143 — with one line, no
    traceback, and no cycle after it."""
    steps = [{"seconds": 0.05}, {"seconds": 60.0, "absorb": absorb}]
    args = ["--once"] if once else ["--interval", "1s"]
    if once:
        steps = steps[1:]
    proc = start(tmp_path, steps, *args)
    marker, stderr = tmp_path / "marker", tmp_path / "stderr"
    try:
        wait_for(marker, "started 1" if once else "started 2")
        if not once:
            said = stderr.read_text()
            port = int(re.search(r"on 127\.0\.0\.1:(\d+)", said).group(1))  # type: ignore[union-attr]
            assert get(port, "/healthz") == (200, "ok\n")
            assert get(port, "/readyz") == (200, "ok\n")  # the first cycle finished
            assert "kubegc_agent_loop_cycles_total 1\n" in get(port, "/metrics")[1]
        began = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=10) == code
        assert time.monotonic() - began < 5.0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = stderr.read_text()
    assert "Traceback" not in err, err
    lines = err.splitlines()
    if once:
        assert lines == ["kubegc: error: terminated"], lines
    else:
        assert lines[-1] == "kubegc: SIGTERM: stopped after 2 cycle(s); exit 0", lines
    expected = ["started 1", "interrupted 1", "ended 1"] if once else (
        ["started 1", "ended 1", "started 2"] + (["interrupted 2", "ended 2"] if absorb else [])
    )  # fmt: skip
    assert marker.read_text().splitlines() == expected


def test_once_exits_1_for_a_failed_cycle_with_one_line(tmp_path: Path) -> None:
    proc = start(tmp_path, [{"error": "runtime unreachable: no socket"}], "--once")
    assert proc.wait(timeout=30) == 1
    err = (tmp_path / "stderr").read_text().splitlines()
    assert len(err) == 1 and err[0].startswith("kubegc: error: cycle failed after "), err
    assert err[0].endswith(": runtime unreachable: no socket")  # --once retries nothing


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["--host-root", str(tmp_path), "--state-dir", str(tmp_path / "state"), "agent", *args]
    return subprocess.run(
        [sys.executable, "-m", "kubegc_cli", *argv],
        cwd=ROOT, env=env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_malformed_policy_at_start_up_is_one_line_and_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "config.yaml"
    bad.write_text("agent:\n  interval: often\n")
    proc = run(tmp_path, "--policy", str(bad), "--listen", "127.0.0.1:0")
    assert proc.returncode == 2
    assert proc.stderr == (
        f"kubegc: error: invalid value for agent.interval in {bad}: 'often' is not a duration "
        "(use e.g. 30s, 5m, 1h30m)\n"
    )
    bad.write_text("agent:\n  interval: 0s\n")
    proc = run(tmp_path, "--policy", str(bad))
    assert proc.returncode == 2
    assert proc.stderr == (
        f"kubegc: error: invalid value for --interval: '0s' is below 1s (set by agent.interval "
        f"in {bad})\n"
    )
    bad.write_text("agent: [1, 2\n")
    proc = run(tmp_path, "--policy", str(bad))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert str(bad) in proc.stderr and "Traceback" not in proc.stderr


def test_a_taken_listen_address_is_one_line_and_exit_2(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = run(tmp_path, "--listen", f"127.0.0.1:{port}")
    assert proc.returncode == 2
    assert proc.stderr == (
        f"kubegc: error: cannot listen on --listen 127.0.0.1:{port}: Address already in use\n"
    )
    proc = run(tmp_path, "--listen", "nowhere")
    assert proc.returncode == 2 and proc.stderr.startswith(
        "kubegc: error: invalid value for --listen: 'nowhere' (expected host:port"
    )


def test_sigterm_during_a_real_cycle_ends_the_agent_cleanly(tmp_path: Path) -> None:
    """kubegc's own cycle over a fixture host root and a runtime that answers slowly: a
    SIGTERM while the cycle waits on the runtime ends the agent within a few seconds, exit 0,
    its last line saying so."""
    pytest.importorskip("kubegc_cli.agent.cycle")  # (the cycle kubegc agent runs)
    from tests.unit.faultcri import FaultCri, synthetic_inventory
    from tests.unit.test_agent_cycle import host

    root = host(tmp_path / "root")
    with FaultCri(tmp_path / "c.sock", synthetic_inventory(20, 5, 3, pods=5)) as cri:
        cri.delay["ListImages"] = 60.0
        argv = [sys.executable, "-m", "kubegc_cli", "--host-root", str(root),
                "--state-dir", str(tmp_path / "state"), "-r", cri.endpoint,
                "--pod-source", "none", "--node-name", "node-1",
                "--kubelet-config", str(root / "var/lib/kubelet/config.yaml"),
                "agent", "--interval", "1s", "--listen", "127.0.0.1:0"]  # fmt: skip
        stderr = tmp_path / "stderr"
        with stderr.open("w") as err_file:
            proc = subprocess.Popen(
                argv, cwd=ROOT, env=env(), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=err_file, text=True,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + 20
            while cri.count("ListImages") == 0:  # the cycle is waiting on the runtime
                assert time.monotonic() < deadline and proc.poll() is None, stderr.read_text()
                time.sleep(0.05)
            began = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=10) == 0
            assert time.monotonic() - began < 5.0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    err = stderr.read_text()
    assert "Traceback" not in err, err
    assert err.splitlines()[-1] == "kubegc: SIGTERM: stopped after 1 cycle(s); exit 0", err


SLOW_START = """\
import runpy, sys, time
from pathlib import Path
from kubegc_cli.commands.edges import using
def slow(s, o, ui):  # fault injection: a start-up that takes long (a loaded node)
    Path({marker!r}).write_text("starting")
    time.sleep(30)
sys.argv = ["kubegc", *{argv!r}]
with using(agent=slow):
    runpy.run_module("kubegc_cli", run_name="__main__")
"""


@pytest.mark.parametrize(("once", "code"), [(False, 0), (True, 143)], ids=["running", "once"])
def test_sigterm_while_starting_ends_the_agent_as_it_would_later(
    tmp_path: Path, once: bool, code: int
) -> None:
    """A DaemonSet pod stopped before its agent's first cycle (a rollout right after a
    start): SIGTERM is its normal end, exit 0, as once it runs; `--once` is a command: 143."""
    argv = ["--host-root", str(tmp_path), "--state-dir", str(tmp_path / "state"),
            "--pod-source", "none", "agent", "--listen", "127.0.0.1:0",
            *(["--once"] if once else [])]  # fmt: skip
    marker = tmp_path / "marker"
    program = SLOW_START.format(argv=argv, marker=str(marker))
    proc = subprocess.Popen([sys.executable, "-c", program], cwd=ROOT, env=env(),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        wait_for(marker, "starting")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    assert proc.returncode == code, err
    if once:
        assert err.endswith("kubegc: error: terminated\n"), err
    else:
        assert "SIGTERM: stopped while starting, before the first cycle; exit 0" in err, err
        assert "Traceback" not in err


@pytest.mark.parametrize("delay", [0.15, 0.3, 0.6, 1.5])
def test_sigterm_at_any_moment_of_start_up_is_the_agents_normal_end(
    tmp_path: Path, delay: float
) -> None:
    """The real agent command (no stand-in), SIGTERM while Python imports kubegc, while click
    reads the options, while the agent starts or waits: always exit 0, never a traceback or
    `error: terminated` (a DaemonSet pod stopped right after it was started)."""
    argv = [sys.executable, "-m", "kubegc_cli", "--host-root", str(tmp_path), "--state-dir",
            str(tmp_path / "state"), "-r", "unix:///nonexistent/kubegc.sock", "--pod-source",
            "none", "agent", "--listen", "127.0.0.1:0"]  # fmt: skip
    proc = subprocess.Popen(argv, cwd=ROOT, env=env(), stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        time.sleep(delay)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "error" not in err and "Traceback" not in err, err


def test_a_cycle_says_an_unreachable_runtime_once(tmp_path: Path) -> None:
    """Every check of a cycle reads the runtime; an unreachable one is said once by the
    cycle (then by df's own note, and in the cycle's one-line error), not once per check."""
    for d in ("var/lib/kubelet", "var/log/pods"):
        (tmp_path / d).mkdir(parents=True)
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(tmp_path), "--state-dir",
         str(tmp_path / "state"), "-r", "unix:///nonexistent/kubegc.sock", "--pod-source",
         "none", "agent", "--once"],
        capture_output=True, text=True, timeout=120, cwd=ROOT, env=env(),
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert res.returncode == 1, res.stderr
    said = [ln for ln in res.stderr.splitlines() if "nonexistent/kubegc.sock" in ln]
    assert len([ln for ln in said if ln.startswith("kubegc: ") and ": no CRI" in ln
                and "error" not in ln and "images and" not in ln]) == 1, res.stderr  # fmt: skip
    assert said[-1].startswith("kubegc: error: cycle failed after"), res.stderr
