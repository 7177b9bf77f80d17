"""`kubegc agent`'s HTTP endpoints (kubegc_cli.agent.server), over real HTTP on 127.0.0.1
with the real loop in a thread: `/metrics`, `/healthz`, `/readyz`, 404 and 405, readiness
while the policy file is malformed (resolved by `kubegc agent`'s own resolver) and again
once fixed, liveness when the loop is stuck — with `tests.unit.agentseam`'s scripted cycle."""

from __future__ import annotations

import http.client
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import click
import pytest

from kubegc_cli.agent.loop import LoopState, Policy, PolicyFile, run_loop
from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.agent.server import Endpoints, parse_listen
from kubegc_cli.cli.agent import resolver
from kubegc_cli.cli.main import cli
from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.settings import Settings
from tests.unit.agentseam import ScriptedCycle, Step


def get(addr: tuple[str, int], path: str, method: str = "GET") -> tuple[int, str, dict[str, str]]:
    conn = http.client.HTTPConnection(addr[0], addr[1], timeout=5)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(), dict(resp.getheaders())
    finally:
        conn.close()


def until(check: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@contextmanager
def serving(state: LoopState) -> Iterator[tuple[str, int]]:
    ep = Endpoints("127.0.0.1:0", state)
    try:
        yield ep.address
    finally:
        ep.close()


@contextmanager
def looping(
    seam: ScriptedCycle, policy: Policy, state: LoopState, watch: PolicyFile | None = None
) -> Iterator[None]:
    """The real loop in a thread (as the main thread runs it), stopped after the block."""
    thread = threading.Thread(
        target=run_loop,
        args=(seam, policy, state),
        kwargs={
            "watch": watch,
            "draw": lambda: 0.0,
            "received": lambda: None,
            "say": lambda *_: None,
        },
        daemon=True,
    )
    thread.start()
    try:
        yield
    finally:
        state.stop()
        thread.join(10)
        assert not thread.is_alive()


def test_the_three_endpoints_404_and_405() -> None:
    state = LoopState(0.2)
    seam = ScriptedCycle([Step(seconds=0.01)])
    with serving(state) as addr:
        code, body, headers = get(addr, "/readyz")
        assert (code, body) == (200, "ok\n")  # from the start: a rollout waits on it
        assert get(addr, "/healthz")[:2] == (200, "ok\n")
        with looping(seam, Policy(Settings(), AgentOptions(interval=0.2)), state):
            until(lambda: "kubegc_cycle_seen" in get(addr, "/metrics")[1])  # a cycle ran
            code, body, headers = get(addr, "/metrics")
            assert code == 200
            assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            assert body.startswith("# TYPE kubegc_cycle_seen gauge\nkubegc_cycle_seen 1\n")
            family = "kubegc_agent_loop_cycles_total"
            assert f"\n# TYPE {family} counter\n{family} " in body
            assert get(addr, "/healthz")[:2] == (200, "ok\n")
            code, body, headers = get(addr, "/metrics", "HEAD")
            assert code == 200 and body == "" and int(headers["Content-Length"]) > 100
            assert get(addr, "/readyz?verbose")[:2] == (200, "ok\n")
        code, body, _ = get(addr, "/")
        assert code == 404 and "try /metrics, /healthz, /readyz" in body
        assert get(addr, "/metricsx")[0] == 404
        code, _, headers = get(addr, "/metrics", "POST")
        assert code == 405 and headers["Allow"] == "GET, HEAD"
        assert get(addr, "/healthz")[:2] == (503, "the agent's loop has ended\n")


def test_healthz_fails_when_the_loop_is_stuck_and_requests_still_answer() -> None:
    """A cycle that hangs: after 2 × interval + cycle timeout /healthz is 503 with the
    reason; every request meanwhile answers at once (none waits on the cycle)."""
    state = LoopState(0.2, cycle_timeout=0.3)
    hang = threading.Event()
    seam = ScriptedCycle([Step(hang=hang)])
    with serving(state) as addr, looping(seam, Policy(Settings(), AgentOptions(interval=0.2)),
                                         state):  # fmt: skip
        until(lambda: len(seam.starts) == 1)
        assert get(addr, "/healthz")[0] == 200
        began = time.monotonic()
        until(lambda: get(addr, "/healthz")[0] == 503)
        waited = time.monotonic() - began
        assert 0.5 < waited < 3.0  # 2 × 0.2 s + 0.3 s after the cycle started
        code, body, _ = get(addr, "/healthz")
        assert code == 503 and "the last cycle started" in body and "the loop is stuck" in body
        t0 = time.monotonic()
        assert get(addr, "/metrics")[0] == 200 and get(addr, "/readyz")[0] == 200
        assert time.monotonic() - t0 < 1.0
        hang.set()
        until(lambda: get(addr, "/healthz")[0] == 200)


def agent_context(tmp_path: Path, policy: Path, *flags: str) -> click.Context:
    """`kubegc --host-root <tmp> agent --policy <file> <flags>` parsed, as the command sees
    it."""
    root = cli.make_context("kubegc", ["--host-root", str(tmp_path), "--state-dir",
                                        str(tmp_path / "state")])  # fmt: skip
    command = cli.get_command(root, "agent")
    assert command is not None
    return command.make_context("agent", ["--policy", str(policy), *flags], parent=root)


def test_readiness_fails_while_the_policy_is_malformed_and_recovers_when_fixed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("agent:\n  interval: 1s\n  max-delete: 10\n")
    watch = PolicyFile(path, resolver(agent_context(tmp_path, path), path))
    first = watch.load()
    assert (first.options.interval, first.options.act.max_delete) == (1.0, 10)
    first = replace(first, options=replace(first.options, interval=0.2))
    state = LoopState(0.2)
    seam = ScriptedCycle([Step(seconds=0.01)])
    with serving(state) as addr, looping(seam, first, state, watch):
        until(lambda: get(addr, "/readyz")[0] == 200)
        path.write_text("agent:\n  interval: 1s\n  max-delete: lots\n")
        until(lambda: get(addr, "/readyz")[0] == 503)
        _, body, _ = get(addr, "/readyz")
        assert body == (
            f"policy {path}: invalid value for agent.max-delete in {path}: 'lots' is not a "
            "whole number (digits 0-9, with a sign at most); keeping the last good policy\n"
        ), body
        assert "\nkubegc_agent_policy_in_force 0\n" in get(addr, "/metrics")[1]
        assert get(addr, "/healthz")[0] == 200  # alive: the last good policy runs
        path.write_text("agent:\n  interval: 1s\n  max-delete: 3\n")
        until(lambda: get(addr, "/readyz")[0] == 200)
        assert seam.reconfigured[-1][1].act.max_delete == 3
        assert "\nkubegc_agent_policy_in_force 1\n" in get(addr, "/metrics")[1]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (":9808", ("", 9808)),
        ("127.0.0.1:0", ("127.0.0.1", 0)),
        ("[::1]:9808", ("::1", 9808)),
        ("localhost:65535", ("localhost", 65535)),
    ],
)
def test_listen_addresses(text: str, want: tuple[str, int]) -> None:
    assert parse_listen(text) == want


@pytest.mark.parametrize("text", ["9808", "host:", ":65536", ":port", "::9808", "a:b:1"])
def test_a_listen_address_that_is_not_host_port_is_bad_input(text: str) -> None:
    with pytest.raises(BadInput, match=f"invalid value for --listen: {text!r}"):
        parse_listen(text)


def test_a_taken_address_is_bad_input_naming_it() -> None:
    state = LoopState(1.0)
    with serving(state) as (host, port):
        taken = f"cannot listen on --listen {host}:{port}: Address already in use"
        with pytest.raises(BadInput, match=taken):
            Endpoints(f"{host}:{port}", state)


def test_a_reload_keeps_the_flags_and_returns_dropped_keys_to_their_defaults(
    tmp_path: Path,
) -> None:
    """Flag > policy file > default, at start-up and at every reload; global options in the
    file (`timeout`) reach the `Settings`; a bad value names its key and file."""
    path = tmp_path / "config.yaml"
    path.write_text("timeout: 30s\nagent:\n  interval: 2m\n  mode: apply\n  max-delete: 5\n")
    resolve = resolver(agent_context(tmp_path, path, "--max-delete", "7"), path)
    p = resolve(path.read_text())
    assert (p.settings.timeout, p.options.interval, p.options.mode) == (30.0, 120.0, "apply")
    assert p.options.act.max_delete == 7  # the flag wins
    p = resolve("agent:\n  max-delete: 1\n  checks: evict,df\n  window-timezone: Europe/Berlin\n")
    assert (p.settings.timeout, p.options.interval, p.options.mode) == (10.0, 300.0, "report")
    assert p.options.act.max_delete == 7
    assert p.options.checks == ("evict", "df") and p.options.window_timezone == "Europe/Berlin"
    with pytest.raises(BadInput) as bad:
        resolve("agent:\n  heartbeat: 0s\n")
    assert str(bad.value) == (
        f"invalid value for --heartbeat: '0s' is below 1s (set by agent.heartbeat in {path})"
    )
    with pytest.raises(BadInput) as bad:
        resolve("agent:\n  window: Mon-Fry 01:00-05:00\n")
    assert "'Fry'" in str(bad.value) and f"agent.window in {path}" in str(bad.value), bad.value
    with pytest.raises(BadInput, match=f"config file {path}: unknown key 'agent.once'"):
        resolve("agent:\n  once: true\n")


def test_a_port_alone_serves_every_address() -> None:
    """`:PORT` (the default's form) answers on IPv4 — and on IPv6 where the host has it."""
    ep = Endpoints(":0", LoopState(1.0))
    try:
        port = ep.address[1]
        assert get(("127.0.0.1", port), "/healthz")[:2] == (200, "ok\n")
        if ep.address[0] == "::":
            assert get(("::1", port), "/healthz")[:2] == (200, "ok\n")
    finally:
        ep.close()


def test_a_client_going_away_early_writes_no_traceback(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ep = Endpoints("127.0.0.1:0", LoopState(0.2))
    try:
        for gone in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset")):
            try:
                raise gone
            except OSError:
                ep.server.handle_error(None, ("10.0.0.9", 40000))
        assert capsys.readouterr().err == ""
        for _ in range(3):  # another failure: one line, and not again within the minute
            try:
                raise ValueError("bad request line\nsecond line")
            except ValueError:
                ep.server.handle_error(None, ("10.0.0.9", 40000))
        err = capsys.readouterr().err
        assert (
            err == "kubegc agent: HTTP request from 10.0.0.9 failed: ValueError: bad request line\n"
        )
    finally:
        ep.close()


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("agent:\n  max-failed-percent: .nan\n", "--max-failed-percent: nan (expected 0 to 100)"),
        ("agent:\n  interval: 2562047h\n", "--interval: '2562047h' is above 7 days"),
        ("agent:\n  heartbeat: 169h\n", "--heartbeat: '169h' is above 7 days"),
        ("agent:\n  cycle-timeout: 200h\n", "--cycle-timeout: '200h' is above 7 days"),
        ("agent:\n  apply-slots: 100000000\n", "apply-slots"),
        ("agent:\n  lease-namespace: BAD_NS\n", "'BAD_NS' is no namespace name"),
    ],
)
def test_a_policy_beyond_what_the_agent_can_run_is_rejected(
    tmp_path: Path, policy: str, message: str
) -> None:
    """Values the parser would take but the agent cannot run by (NaN compares as within any
    bound; a wait of centuries overflows the clock; 10^8 slots is 10^8 Leases to try): the
    policy is refused, naming the key, and the last good one stays."""
    path = tmp_path / "config.yaml"
    path.write_text("agent:\n  interval: 2m\n")
    resolve = resolver(agent_context(tmp_path, path), path)
    with pytest.raises(BadInput) as bad:
        resolve(policy)
    assert message in str(bad.value) and str(path) in str(bad.value), bad.value


@pytest.mark.parametrize(
    ("flags", "message"),
    [(("--pod-source", "api"), "--pods-file given with --pod-source api; drop one of them"),
     (("--pod-source", "none"), "--pods-file given with --pod-source none; drop one of them")],
)  # fmt: skip
def test_pod_source_options_that_contradict_each_other_are_refused_at_start(
    tmp_path: Path, flags: tuple[str, str], message: str
) -> None:
    """A contradiction the agent would otherwise meet in every cycle (and retry forever):
    one line, exit 2, before anything runs — as every command says it."""
    pods = tmp_path / "pods.json"
    pods.write_text('{"kind": "PodList", "items": []}')
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(tmp_path), "--pods-file",
         str(pods), *flags, "agent", "--once"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert res.returncode == 2, res.stderr
    assert res.stderr == f"kubegc: error: {message}\n"
