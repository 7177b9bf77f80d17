"""`kubegc gc containers` end to end against a real containerd (tests/node/localnode.py).

Each test builds its own small node state in a namespace of its own, runs the real command,
and then asks the runtime itself which containers are left.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest

from kubegc_cli.core.plan import Result
from kubegc_cli.core.units import format_bytes
from kubegc_cli.node.cri.v1 import api_pb2
from tests.node.localnode import LocalNode, Pod


def kubegc(node: LocalNode, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run the real `kubegc` command against the test node."""
    return subprocess.run(
        [
            sys.executable, "-m", "kubegc_cli",
            "-r", node.endpoint,
            "--kubelet-config", str(node.kubelet_config),
            "--state-dir", str(tmp_path / "state"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def ids(node: LocalNode, ns: str) -> set[str]:
    return node.container_ids(namespace=ns)


def pod_with_init(node: LocalNode, ns: str) -> tuple[Pod, str, str, str]:
    """Case 1's node: init exited attempts 0 and 1, app running."""
    p = node.run_pod("p", namespace=ns)
    init0 = node.add_container(p, "init", attempt=0)
    init1 = node.add_container(p, "init", attempt=1)
    app = node.add_container(p, "app", state="running")
    return p, init0, init1, app


def test_default_policy_keeps_newest_init_record(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 1: attempt 0 of init goes, attempt 1 (the newest record) stays, app untouched."""
    _, init0, init1, app = pod_with_init(node, ns)
    log0 = Path(node.container_status(init0).log_path)
    assert log0.exists()

    dry = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--dry-run", "-o", "json")
    assert dry.returncode == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["dry_run"] is True
    assert [(a["id"], a["rule"], a["result"]) for a in plan["actions"]] == [
        (init0, "max-per-pod-container", "planned")
    ]
    assert plan["actions"][0]["log_bytes"] > 0
    # The dry run reads no ContainerStatus: its log path, from the kubelet's layout, is the
    # runtime's own.
    assert plan["actions"][0]["log_path"] == str(log0)
    assert ids(node, ns) == {init0, init1, app}  # a dry run removes nothing

    done = kubegc(node, tmp_path, "-v", "gc", "containers", "-n", ns, "--yes", "-o", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [(a["id"], a["result"]) for a in result["actions"]] == [(init0, "removed")]
    # -v says how long the removals took, and at what rate.
    assert re.search(
        r"container: 1 acted on in [0-9.]+ s \([0-9.]+/s, 1 removed\) at --concurrency 8",
        done.stderr,
    ), done.stderr
    # its log, unlinked, and the writable layer the runtime removed with it
    removed = result["actions"][0]
    layer = removed["writable_layer_bytes"] or 0
    assert result["summary"]["bytes_freed"] == plan["actions"][0]["log_bytes"] + layer
    assert ids(node, ns) == {init1, app}
    assert not log0.exists()
    assert Path(node.container_status(init1).log_path).exists()


def test_maximum_dead_containers_zero_and_the_guard(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Case 2: with MaxContainers 0 the guard keeps init's newest record; --match-kubelet not."""
    _, init0, init1, app = pod_with_init(node, ns)
    guarded = kubegc(
        node, tmp_path, "gc", "containers", "-n", ns, "--maximum-dead-containers", "0", "--yes",
        "-o", "json",
    )  # fmt: skip
    assert guarded.returncode == 0, guarded.stderr
    doc = json.loads(guarded.stdout)
    assert {a["id"] for a in doc["actions"]} == {init0}
    kept = {k["id"]: k["rule"] for k in doc["kept"]}
    assert kept[init1] == "guard-newest-record"
    assert ids(node, ns) == {init1, app}

    table = kubegc(
        node, tmp_path, "gc", "containers", "-n", ns, "--maximum-dead-containers", "0",
        "--dry-run",
    )  # fmt: skip
    assert "guard-newest-record" in table.stdout and init1[:13] in table.stdout

    exact = kubegc(
        node, tmp_path, "gc", "containers", "-n", ns, "--maximum-dead-containers", "0",
        "--match-kubelet", "--yes", "-o", "json",
    )  # fmt: skip
    assert exact.returncode == 0, exact.stderr
    assert [a["id"] for a in json.loads(exact.stdout)["actions"]] == [init1]
    assert ids(node, ns) == {app}


def write_pods_file(path: Path, *pods: Pod) -> Path:
    items = [
        {
            "metadata": {"name": p.name, "namespace": p.namespace, "uid": p.uid},
            "status": {"phase": "Running"},
        }
        for p in pods
    ]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def test_deleted_pod_loses_all_dead_containers(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 3: pod Q is not in --pods-file. While it is alive (a running container, a READY
    sandbox) it is not treated as deleted: the limits take its older record, a note names it.
    Once stopped, all its dead containers go as a deleted pod's."""
    p, p_init0, p_init1, p_app = pod_with_init(node, ns)
    q = node.run_pod("q", namespace=ns)
    q0 = node.add_container(q, "work", attempt=0)
    q1 = node.add_container(q, "work", attempt=1)
    qc = node.add_container(q, "never", state="created")
    qr = node.add_container(q, "web", state="running")
    pods = write_pods_file(tmp_path / "pods.json", p)
    args = ("--pods-file", str(pods), "gc", "containers", "-n", ns, "--yes", "-o", "json")

    res = kubegc(node, tmp_path, *args)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    limit = "max-per-pod-container"
    assert {a["id"]: a["rule"] for a in doc["actions"]} == {q0: limit, p_init0: limit}
    assert any(f"{ns}/q" in n and "alive on this node" in n for n in doc["notes"])
    assert ids(node, ns) == {p_init1, p_app, q1, qc, qr}

    node.stop_pod(q)  # its running container stops with it
    res = kubegc(node, tmp_path, *args)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert {a["id"]: a["rule"] for a in doc["actions"]} == {
        q1: "deleted-pod",
        qc: "deleted-pod",
        qr: "deleted-pod",
    }
    assert ids(node, ns) == {p_init1, p_app}


def test_invalid_pods_file_removes_nothing(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 4: a pods file with invalid JSON: exit 2, one line naming the file, nothing removed."""
    _, init0, init1, app = pod_with_init(node, ns)
    bad = tmp_path / "pods.json"
    bad.write_text('{"items": [')
    res = kubegc(node, tmp_path, "--pods-file", str(bad), "gc", "containers", "-n", ns, "--yes")
    assert res.returncode == 2
    assert res.stdout == ""
    assert res.stderr.count("\n") == 1 and str(bad) in res.stderr
    assert ids(node, ns) == {init0, init1, app}


def test_min_age_plans_nothing_and_says_why(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 5: MinAge 1h on seconds-old containers: nothing planned, exit 0, the table says why."""
    _, init0, init1, app = pod_with_init(node, ns)
    res = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--yes",
                 "--minimum-container-ttl-duration", "1h")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "nothing to remove" in res.stdout
    assert "younger than MinAge" in res.stdout and "1h0m0s" in res.stdout
    assert ids(node, ns) == {init0, init1, app}


def test_container_that_starts_between_plan_and_act_is_skipped(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Case 6: the executor re-reads each container right before removing it: one running now
    is skipped, not removed; one still CREATED in its READY sandbox is skipped too (the
    kubelet may start it: a plan file or a race can hold such an action, though a plan made
    now keeps it, `may-start`)."""
    from kubegc_cli.core.plan import ContainerAction
    from kubegc_cli.node.cri.client import CriClient, Endpoint
    from kubegc_cli.node.execute.actions import MAY_START, ContainerRemover
    from kubegc_cli.node.host.logs import LogRoots
    from kubegc_cli.node.host.mounts import MountTable

    p = node.run_pod("p", namespace=ns)
    c0 = node.add_container(p, "app", attempt=0, state="created")
    c1 = node.add_container(p, "app", attempt=1, state="created")
    c2 = node.add_container(p, "app", attempt=2)
    with CriClient(Endpoint(str(node.socket), "test")) as client:
        listed = {c.id: c for c in client.list_containers()}
        actions = [ContainerAction(listed[c], "max-per-pod-container", "t") for c in (c0, c1)]
        node.runtime.StartContainer(api_pb2.StartContainerRequest(container_id=c0), timeout=10)
        ContainerRemover(
            client, concurrency=1, log_roots=LogRoots(Path("/"), "/var/log/pods"),
            mounts=MountTable.read(),
        ).run(actions)  # fmt: skip
    assert [(a.result, a.error) for a in actions] == [
        (Result.SKIPPED, "running now; no longer garbage"),
        (Result.SKIPPED, MAY_START),
    ]
    assert ids(node, ns) == {c0, c1, c2}
    assert node.container_status(c0).state == api_pb2.CONTAINER_RUNNING


def test_created_container_is_left_while_its_sandbox_is_ready(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A CREATED container in a READY sandbox may be started by the kubelet at any moment, and
    containerd's RemoveContainer removes a running container by force: it is kept
    (`may-start`, exit 0). Once the sandbox is stopped the runtime refuses to start it, and it
    goes."""
    p = node.run_pod("p", namespace=ns)
    c0 = node.add_container(p, "app", attempt=0, state="created")
    c1 = node.add_container(p, "app", attempt=1)
    args = ("gc", "containers", "-n", ns, "--yes", "-o", "json")
    res = kubegc(node, tmp_path, *args)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["actions"] == []
    assert [(k["id"], k["rule"]) for k in doc["kept"]] == [(c0, "may-start"), (c1, "within-limits")]
    assert "CREATED in a READY sandbox" in doc["kept"][0]["reason"]
    assert ids(node, ns) == {c0, c1}

    node.stop_pod(p)
    with pytest.raises(grpc.RpcError):  # what makes the removal below safe
        node.runtime.StartContainer(api_pb2.StartContainerRequest(container_id=c0), timeout=10)
    res = kubegc(node, tmp_path, *args)
    assert res.returncode == 0, res.stderr
    assert [(a["id"], a["result"]) for a in json.loads(res.stdout)["actions"]] == [(c0, "removed")]
    assert ids(node, ns) == {c1}


def test_unreachable_runtime_is_exit_3(tmp_path: Path) -> None:
    """Case 7: -r unix:///nonexistent.sock: exit 3 and one line naming the endpoint."""
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "-r", "unix:///nonexistent.sock", "gc", "containers"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 3
    assert res.stderr.count("\n") == 1 and "unix:///nonexistent.sock" in res.stderr


def test_runtime_that_dies_is_exit_3_and_removes_nothing(tmp_path: Path) -> None:
    """A runtime that stops answering: exit 3 naming the endpoint, nothing planned or removed."""
    with LocalNode(tmp_path / "dying") as dying:
        p = dying.run_pod("p", namespace="ns1")
        dying.add_container(p, "app", attempt=0)
        dying.add_container(p, "app", attempt=1)
        endpoint = dying.endpoint
        import os
        import signal

        assert dying.pid is not None
        os.kill(dying.pid, signal.SIGSTOP)  # alive but silent: every call times out
        try:
            res = subprocess.run(
                [sys.executable, "-m", "kubegc_cli", "-r", endpoint, "--timeout", "1s",
                 "--state-dir", str(tmp_path / "state"), "gc", "containers", "--yes"],
                capture_output=True, text=True, timeout=60,
            )  # fmt: skip
        finally:
            os.kill(dying.pid, signal.SIGCONT)
        assert res.returncode == 3, res.stderr
        assert "within 1s" in res.stderr and "hung" in res.stderr
        assert res.stderr.count("\n") == 1
        assert len(dying.container_ids(namespace="ns1")) == 2


def test_snapshot_then_plan_offline(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """`kubegc snapshot` captures the node; `--snapshot` plans the same as the live dry run."""
    _, init0, _, _ = pod_with_init(node, ns)
    snap = tmp_path / "node.json"
    res = kubegc(node, tmp_path, "snapshot", "-f", str(snap))
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(snap.read_text())
    assert doc["kind"] == "NodeSnapshot" and doc["runtime"]["api_version"] == "v1"
    mine = [c for c in doc["containers"] if c["labels"].get("io.kubernetes.pod.namespace") == ns]
    assert {c["state"] for c in mine} == {"EXITED", "RUNNING"}
    assert all(c["log_path"] for c in mine)
    assert any(i["repo_tags"] for i in doc["images"])
    assert doc["image_filesystems"] and doc["image_filesystems"][0]["mountpoint"]

    off = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--snapshot", str(snap), "gc", "containers",
         "-n", ns, "-o", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert off.returncode == 0, off.stderr
    assert [a["id"] for a in json.loads(off.stdout)["actions"]] == [init0]


@pytest.mark.skipif(not Path("/usr/bin/unshare").exists(), reason="needs util-linux unshare")
def test_legacy_symlink_goes_with_the_container(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """The kubelet's /var/log/containers symlink is removed with the container.

    kubegc looks for it at the kubelet's fixed path, so the command runs in a private mount
    namespace where /var/log/containers is the test node's own directory.
    """
    p = node.run_pod("p", namespace=ns)
    c0 = node.add_container(p, "app", attempt=0)
    c1 = node.add_container(p, "app", attempt=1)
    links = {path.name: path for path in node.container_logs_dir.iterdir() if ns in path.name}
    assert len(links) == 2
    Path("/var/log/containers").mkdir(parents=True, exist_ok=True)
    script = (
        f"mount --bind {node.container_logs_dir} /var/log/containers && "
        f"exec {sys.executable} -m kubegc_cli -r {node.endpoint} "
        f"--kubelet-config {node.kubelet_config} --state-dir {tmp_path / 'state'} "
        f"gc containers -n {ns} --yes -o json"
    )
    res = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert [a["id"] for a in json.loads(res.stdout)["actions"]] == [c0]
    left = {path.name for path in node.container_logs_dir.iterdir() if ns in path.name}
    assert len(left) == 1 and c1 in next(iter(left))
    assert ids(node, ns) == {c1}


def test_list_bigger_than_grpc_default_is_read(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """A container list over gRPC's 4 MiB default is still listed (the default limit is 256Mi);
    a too-small --max-recv-size is a clear exit 3 that says what to raise."""
    p = node.run_pod("big", namespace=ns)
    bulky = {"kubegc.test/padding": "x" * (600 * 1024)}
    made = []
    for attempt in range(8):  # 8 x 600 KiB of annotations: about 4.7 MiB in one ListContainers
        cfg = api_pb2.ContainerConfig(
            metadata=api_pb2.ContainerMetadata(name="bulky", attempt=attempt),
            image=api_pb2.ImageSpec(image="docker.io/library/busybox:kubegc-test"),
            command=["/bin/true"],
            labels={
                "io.kubernetes.container.name": "bulky",
                "io.kubernetes.pod.name": p.name,
                "io.kubernetes.pod.namespace": ns,
                "io.kubernetes.pod.uid": p.uid,
            },
            annotations=bulky,
            log_path=f"bulky/{attempt}.log",
        )
        made.append(
            node.runtime.CreateContainer(
                api_pb2.CreateContainerRequest(
                    pod_sandbox_id=p.sandbox_id, config=cfg, sandbox_config=p.config
                ),
                timeout=30,
            ).container_id
        )
    node.stop_pod(p)  # (CREATED containers in a READY sandbox are kept: they may start)
    res = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--dry-run", "-o", "json")
    assert res.returncode == 0, res.stderr
    planned = {a["id"] for a in json.loads(res.stdout)["actions"]}
    assert planned == set(made[:-1])  # CREATED attempts 0-6 go, the newest stays

    small = kubegc(node, tmp_path, "--max-recv-size", "1Mi", "gc", "containers", "-n", ns,
                   "--yes")  # fmt: skip
    assert small.returncode == 3
    assert "--max-recv-size" in small.stderr and small.stderr.count("\n") == 1
    assert ids(node, ns) == set(made)


def test_second_run_waits_for_the_lock(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """One changing run at a time: with the lock held, --yes exits 4 and removes nothing."""
    import fcntl
    import os

    _, init0, init1, app = pod_with_init(node, ns)
    state = tmp_path / "state"
    state.mkdir()
    fd = os.open(state / "lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        res = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--yes")
    finally:
        os.close(fd)
    assert res.returncode == 4 and "lock" in res.stderr
    assert ids(node, ns) == {init0, init1, app}
    again = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--yes")
    assert again.returncode == 0, again.stderr
    assert ids(node, ns) == {init1, app}


def test_audit_log_records_what_was_done(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Every removal is written to state.db with its rule, result and bytes."""
    import sqlite3

    _, init0, _, _ = pod_with_init(node, ns)
    res = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--yes")
    assert res.returncode == 0, res.stderr
    con = sqlite3.connect(tmp_path / "state" / "state.db")
    rows = con.execute(
        "SELECT command, kind, object_id, rule, result, bytes_freed FROM audit"
    ).fetchall()
    con.close()
    assert len(rows) == 1
    command, kind, object_id, rule, result, freed = rows[0]
    assert (command, kind, object_id, rule, result) == (
        "gc containers", "container", init0, "max-per-pod-container", "removed",
    )  # fmt: skip
    assert freed > 0


def _run_on_tty(argv: list[str], answer: bytes, timeout: float = 60) -> tuple[int, str]:
    """Run `argv` with a pseudo-terminal as stdin/stdout/stderr; answer the first prompt."""
    import os
    import pty
    import select
    import time

    leader, follower = pty.openpty()
    proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    out = b""
    answered = False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if not answered and b"[y/N]" in out:
                os.write(leader, answer)
                answered = True
        elif proc.poll() is not None:
            break
    code = proc.wait(timeout=10)
    os.close(leader)
    return code, out.decode(errors="replace")


@pytest.mark.parametrize(("answer", "removed"), [(b"y\n", True), (b"n\n", False), (b"\x04", False)])
def test_terminal_is_asked_before_acting(
    node: LocalNode, ns: str, tmp_path: Path, answer: bytes, removed: bool
) -> None:
    """Without --yes a terminal sees the plan and is asked; only "y" removes. Ctrl-D (the end
    of input) is a no: declined, exit 0, not an interrupt."""
    _, init0, init1, app = pod_with_init(node, ns)
    code, screen = _run_on_tty(
        [
            sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
            "--kubelet-config", str(node.kubelet_config), "--state-dir", str(tmp_path / "state"),
            "gc", "containers", "-n", ns,
        ]
    , answer)  # fmt: skip
    assert code == 0, screen
    assert "Container GC" in screen and init0[:13] in screen
    assert "Remove 1 container(s)? [y/N]" in screen
    if removed:
        assert "removed 1" in screen
        assert ids(node, ns) == {init1, app}
    else:
        assert "declined; nothing removed" in screen and "aborted" not in screen
        assert ids(node, ns) == {init0, init1, app}


def _read_only(path: Path) -> None:
    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True, capture_output=True)


def test_failed_removal_is_exit_1_and_the_rest_goes_on(tmp_path: Path) -> None:
    """containerd cannot remove one container (its state dir is read-only): that action fails
    with the runtime's words, the container stays, the others are removed, exit 1. Its log went
    first, as the kubelet removes it: the container a later run plans again is all that is left.

    (A node of its own: the half-failed removal leaves containerd unable to remove that pod.)
    """
    with LocalNode(tmp_path / "broken") as node:
        p = node.run_pod("p", namespace="ns1")
        a0 = node.add_container(p, "a", attempt=0)
        a1 = node.add_container(p, "a", attempt=1)
        b0 = node.add_container(p, "b", attempt=0)
        b1 = node.add_container(p, "b", attempt=1)
        a0_log = Path(node.container_status(a0).log_path)
        state_dir = node.root / "io.containerd.grpc.v1.cri/containers" / a0
        _read_only(state_dir)
        try:
            res = kubegc(node, tmp_path, "gc", "containers", "--yes", "-o", "json")
        finally:
            subprocess.run(["umount", "-l", str(state_dir)], check=True)
        assert res.returncode == 1, res.stderr
        doc = json.loads(res.stdout)  # the report is still one valid document on stdout
        results = {a["id"]: (a["result"], a["error"]) for a in doc["actions"]}
        assert results[b0] == ("removed", "")
        assert results[a0][0] == "failed" and "RemoveContainer" in results[a0][1]
        assert doc["summary"]["by_result"]["failed"] == 1
        assert "1 of 2 removal(s) failed" in res.stderr
        assert ids(node, "ns1") == {a0, a1, b1}
        assert not a0_log.exists()
        assert next(a for a in doc["actions"] if a["id"] == a0)["bytes_freed"] > 0


def _older_attempt_removed_under(
    node: LocalNode, ns: str, tmp_path: Path, mount: Callable[[Path], Path]
) -> tuple[dict[str, Any], Path]:
    """A pod with attempts 0 and 1 of container `a`; `mount(log of attempt 0)` mounts
    something and returns where; `gc containers --yes` runs with it mounted (unmounted after).
    Attempt 0 is removed, freeing nothing, and attempt 1 stays. Returns (its action, its log)."""
    p = node.run_pod("p", namespace=ns)
    a0 = node.add_container(p, "a", attempt=0)
    a1 = node.add_container(p, "a", attempt=1)
    log = Path(node.container_status(a0).log_path)
    where = mount(log)
    try:
        res = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--yes", "-o", "json")
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)
    assert res.returncode == 0, res.stderr
    (action,) = json.loads(res.stdout)["actions"]
    layer = action["writable_layer_bytes"] or 0  # (its log is left: only its layer went)
    assert (action["id"], action["result"], action["bytes_freed"]) == (a0, "removed", layer)
    assert ids(node, ns) == {a1}
    return action, log


def test_log_that_cannot_be_removed_leaves_its_container(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A read-only podLogsDir: the log cannot be removed, so the container stays too (as the
    kubelet's removeContainer): failed, exit 1, both there for a later run to plan again."""
    from kubegc_cli.node.execute.actions import LOG_NOT_REMOVED

    p = node.run_pod("p", namespace=ns)
    a0 = node.add_container(p, "a", attempt=0)
    a1 = node.add_container(p, "a", attempt=1)
    log = Path(node.container_status(a0).log_path)
    _read_only(node.pod_logs_dir)
    try:
        res = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--yes", "-o", "json")
    finally:
        subprocess.run(["umount", "-l", str(node.pod_logs_dir)], check=True)
    assert res.returncode == 1, res.stderr
    (action,) = json.loads(res.stdout)["actions"]
    assert (action["id"], action["result"], action["bytes_freed"]) == (a0, "failed", 0)
    assert action["error"].startswith(LOG_NOT_REMOVED)
    assert "Read-only file system" in action["error"]
    assert ids(node, ns) == {a0, a1} and log.exists()


def test_no_log_is_deleted_into_a_mounted_container_log_directory(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A container log directory with something mounted on it (its files may belong to
    anything): the container goes, nothing in the directory is deleted, the note names the
    mount point."""
    source = tmp_path / "mounted"

    def bind_a_copy(log: Path) -> Path:
        shutil.copytree(log.parent, source)
        subprocess.run(["mount", "--bind", str(source), str(log.parent)], check=True)
        return log.parent

    action, log = _older_attempt_removed_under(node, ns, tmp_path, bind_a_copy)
    assert action["log_note"].startswith(f"{log.parent} is a mount point; log ")
    assert sorted(os.listdir(source)) == sorted(os.listdir(log.parent))
    assert (source / log.name).exists() and log.exists()


def _dead_pod_and_a_live_one(
    node: LocalNode, ns: str, tmp_path: Path
) -> tuple[Pod, list[str], Path]:
    """Pod q stopped (NOTREADY, its init and app containers exited: a deleted pod's records to
    remove), and pod p alive and in the pods file, which leaves q out."""
    p = node.run_pod("p", namespace=ns)
    node.add_container(p, "app", state="running")
    q = node.run_pod("q", namespace=ns)
    dead = [node.add_container(q, "init", attempt=0), node.add_container(q, "init", attempt=1),
            node.add_container(q, "app", attempt=0)]  # fmt: skip
    node.stop_pod(q)
    return q, dead, write_pods_file(tmp_path / "pods.json", p)


def test_a_pod_that_comes_back_alive_keeps_its_records(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """The pods file says q is gone and q has nothing alive when the plan is made; then the
    kubelet gives q a READY sandbox (here: right before the first re-check, on the real
    containerd). Every removal planned for q — its dead containers, the newest init record
    among them, their logs, its old sandbox, its log directory — is skipped, "the pod is alive
    now", in `gc containers` and in `gc all`."""
    from tests.node.racing import kubegc_in_process, racing

    q, dead, pods = _dead_pod_and_a_live_one(node, ns, tmp_path)
    logs = [Path(node.container_status(c).log_path) for c in dead]
    back: list[Pod] = []

    def comes_back() -> None:
        back.append(node.run_pod("q", namespace=ns, uid=q.uid, attempt=1))

    for command in ("containers", "all"):
        with racing(node, "container_status", comes_back) as client:
            code, out, err = kubegc_in_process(
                node, tmp_path, "--pods-file", str(pods), "gc", command, "-n", ns, "--yes",
                "-o", "json",
            )  # fmt: skip
        assert client.fired and code == 0, err
        doc = json.loads(out)
        mine = [a for a in doc["actions"] if a.get("pod_uid") == q.uid]
        assert {a["id"] for a in mine if a["kind"] == "container"} == set(dead)
        if command == "all":
            assert {a["kind"] for a in mine} == {"container", "sandbox", "pod-log-dir"}
        assert {(a["result"], a["error"]) for a in mine} == {("skipped", "the pod is alive now")}
        assert ids(node, ns) >= set(dead) and all(log.exists() for log in logs)
        assert q.sandbox_id in node.list_sandboxes(labels={"io.kubernetes.pod.uid": q.uid})
        for pod in back:  # the pod dies again before the next run
            node.stop_pod(pod)
        node._remove_sandboxes([b.sandbox_id for b in back])
        back.clear()


def test_apply_keeps_the_records_of_a_pod_that_comes_back_alive(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """`apply` of a saved plan for a deleted pod re-checks the pod right before each removal:
    one that has a READY sandbox again keeps everything."""
    from tests.node.racing import kubegc_in_process, racing

    q, dead, pods = _dead_pod_and_a_live_one(node, ns, tmp_path)
    plan_file = tmp_path / "all.plan.json"
    code, out, err = kubegc_in_process(
        node, tmp_path, "--pods-file", str(pods), "gc", "all", "-n", ns, "--plan-out",
        str(plan_file), "-o", "json",
    )  # fmt: skip
    assert code == 0, err
    assert {a["kind"] for a in json.loads(out)["actions"]} == {
        "container",
        "sandbox",
        "pod-log-dir",
    }

    def comes_back() -> None:
        node.run_pod("q", namespace=ns, uid=q.uid, attempt=1)

    with racing(node, "container_status", comes_back) as client:
        code, out, err = kubegc_in_process(
            node, tmp_path, "--pods-file", str(pods), "apply", str(plan_file), "--yes",
            "-o", "json",
        )  # fmt: skip
    assert client.fired and code == 0, err
    results = {(a["result"], a["error"]) for a in json.loads(out)["actions"]}
    assert results == {("skipped", "the pod is alive now")}
    assert ids(node, ns) >= set(dead) and q.log_directory.exists()


@pytest.mark.parametrize("stops_again", [False, True])
def test_a_pod_that_comes_back_during_the_removals_keeps_the_rest(
    node: LocalNode, ns: str, tmp_path: Path, stops_again: bool
) -> None:
    """The pod comes back (a READY sandbox, on the real containerd) after kubegc has removed
    one of its containers and asked about the pod once: the removals after that keep the
    rest, "the pod is alive now". So they do when its new sandbox has run a container and
    stopped again before the question (a sandbox new since kubegc first asked may have
    started a container: the kubelet runs the pod, it is not gone)."""
    from tests.node.racing import kubegc_in_process, racing

    q, dead, pods = _dead_pod_and_a_live_one(node, ns, tmp_path)

    def comes_back() -> None:
        again = node.run_pod("q", namespace=ns, uid=q.uid, attempt=1)
        if stops_again:
            node.add_container(again, "app", attempt=1, state="running")
            node.stop_pod(again)

    with racing(node, "container_status", comes_back, nth=2) as client:
        code, out, err = kubegc_in_process(
            node, tmp_path, "--pods-file", str(pods), "gc", "containers", "-n", ns, "--yes",
            "--concurrency", "1", "-o", "json",
        )  # fmt: skip
    assert client.fired and code == 0, err
    mine = [a for a in json.loads(out)["actions"] if a["pod_uid"] == q.uid]
    assert [(a["result"], a["error"]) for a in mine] == [("removed", "")] + [
        ("skipped", "the pod is alive now")
    ] * (len(dead) - 1)
    assert ids(node, ns) >= {a["id"] for a in mine[1:]}


@pytest.mark.parametrize(
    ("linked", "command"),
    [
        ("container dir", "containers"),
        ("pod dir", "containers"),
        ("container dir", "all"),
        ("pod dir", "apply"),
    ],
)
def test_a_log_dir_linked_to_a_live_pods_logs_is_never_followed(
    node: LocalNode, ns: str, tmp_path: Path, linked: str, command: str
) -> None:
    """A dead container's log directory (`<podLogsDir>/<ns>_<pod>_<uid>/<container>`, or the
    pod directory itself) replaced by a symlink to a running pod's log directory inside
    podLogsDir: the dry run counts none of the target's bytes, `--yes` (`gc containers`,
    `gc all`, `apply` of the saved plan) removes the container and nothing in the target, and
    both say which link left the log."""
    dead = node.run_pod("p", namespace=ns)
    old = node.add_container(dead, "app", attempt=0)
    newest = node.add_container(dead, "app", attempt=1)
    live = node.run_pod("q", namespace=ns)
    running = node.add_container(live, "app", state="running")
    target = live.log_directory / "app"
    with open(target / "0.log", "ab") as f:  # the running container's log, being written
        f.write(b"live line\n" * 100)
    (target / "0.log.20261129-101010").write_bytes(b"rotated live line\n" * 100)
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    own_log = node.container_status(old).log_path
    assert own_log == str(dead.log_directory / "app/0.log")
    if linked == "container dir":
        link = dead.log_directory / "app"
        shutil.rmtree(link)
        link.symlink_to(target)
    else:
        link = dead.log_directory
        link.rename(link.with_name(link.name + ".moved"))
        link.symlink_to(live.log_directory)
    note = f"{link} is a symlink; log {own_log} left"
    try:
        gc = ["gc", "all" if command == "all" else "containers", "-n", ns]
        saved = tmp_path / "plan.json"
        dry = kubegc(node, tmp_path, *gc, "--dry-run", "-o", "json", "--plan-out", str(saved))
        assert dry.returncode == 0, dry.stderr
        planned = json.loads(dry.stdout)["actions"]
        assert [(a["id"], a["log_path"], a["log_bytes"]) for a in planned] == [(old, own_log, 0)]
        assert planned[0]["log_note"] == note

        act = ["apply", str(saved)] if command == "apply" else gc
        done = kubegc(node, tmp_path, *act, "--yes", "-o", "json")
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        layer = result["actions"][0]["writable_layer_bytes"] or 0  # (the log is left)
        assert [(a["id"], a["result"], a["bytes_freed"]) for a in result["actions"]] == [
            (old, "removed", layer)
        ]
        assert result["actions"][0]["log_note"] == note
        assert ids(node, ns) == {newest, running}
        assert {p.name: p.read_bytes() for p in target.iterdir()} == before
        assert link.is_symlink()
    finally:
        link.unlink()


def test_a_terminated_pods_kept_containers_get_a_hint_with_their_bytes(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Pod `done` has finished (its sandbox stopped) and the pods file still lists it,
    Succeeded: the kubelet's limits keep its newest dead container, and a note says so with
    the bytes and what would change it; --include-terminated-pods then removes it."""
    done = node.run_pod("done", namespace=ns)
    old = node.add_container(done, "job", attempt=0)
    newest = node.add_container(done, "job", attempt=1)
    node.stop_pod(done)
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [{
        "metadata": {"name": "done", "namespace": ns, "uid": done.uid},
        "status": {"phase": "Succeeded"}}]}))  # fmt: skip
    res = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "containers", "-n", ns,
                 "--dry-run", "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert {a["id"] for a in doc["actions"]} == {old}
    [hint] = [n for n in doc["notes"] if "terminated pod(s)" in n]
    assert hint.startswith("1 dead container(s) of 1 terminated pod(s) (Succeeded) kept, ")
    assert str(pods) in hint and "--include-terminated-pods" in hint, hint
    kept = {k["id"]: k for k in doc["kept"]}[newest]
    assert kept["log_bytes"] and kept["writable_layer_bytes"] is not None, kept
    on_disk = format_bytes(kept["expected_bytes"])  # its log's blocks and its writable layer
    assert f", {on_disk} on disk (logs and writable layers): " in hint, hint
    go = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "containers", "-n", ns,
                "--include-terminated-pods", "--yes", "-o", "json")  # fmt: skip
    assert go.returncode == 0, go.stderr
    assert not [n for n in json.loads(go.stdout)["notes"] if "terminated pod(s)" in n]
    assert not {old, newest} & node.container_ids(namespace=ns)
