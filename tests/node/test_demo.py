"""The README's demo node (`scripts/demo`) as a new user runs it: set up, the commands of the
3 a.m. workflow and the agent on it, then `down` — on a private containerd, in a private mount
namespace whose kubelet root and node lock are the demo's own."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from tests.conftest import REPO

DEMO = REPO / "scripts/demo"


def demo(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBEGC_DEMO_DIR": str(work)}
    return subprocess.run([str(DEMO), *args], capture_output=True, text=True, timeout=600,
                          env=env, stdin=subprocess.DEVNULL, cwd=REPO)  # fmt: skip


def test_the_demo_node_runs_the_workflow_and_leaves_nothing(tmp_path: Path) -> None:
    work = tmp_path / "demo"
    had_kubelet_root = Path("/var/lib/kubelet").exists()
    up = demo(work)
    try:
        assert up.returncode == 0, up.stderr[-2000:]
        assert "gc containers" in up.stderr
        for command in (["df"], ["evict", "check"], ["reclaim", "--dry-run"],
                        ["agent", "--once"]):  # fmt: skip
            res = demo(work, "run", *command)
            assert res.returncode == 0, (command, res.stderr[-2000:])
            assert "cannot read the kubelet root" not in res.stderr, command
            assert "holds the node lock" not in res.stderr, command
        res = demo(work, "run", "reclaim", "--dry-run")
        assert "object(s) to remove" in res.stdout, res.stdout[-2000:]
    finally:
        down = demo(work, "down")
    assert down.returncode == 0, down.stderr
    assert not work.exists()
    assert Path("/var/lib/kubelet").exists() == had_kubelet_root  # made and removed again


def test_the_demo_cluster_runs_the_agent_and_fleet_and_leaves_nothing(tmp_path: Path) -> None:
    """`scripts/demo cluster`: the control plane the tests use, deploy/kubernetes applied, a
    Node for the demo node; an agent cycle as the agent's ServiceAccount writes the node's
    report, `fleet` shows it, an apply cycle acts holding a slot; `down` stops everything."""
    import json

    work = tmp_path / "demo"
    try:
        assert demo(work).returncode == 0
        up = demo(work, "cluster")
        assert up.returncode == 0, up.stderr[-2000:]
        assert "kubegc now runs as the agent's" in up.stderr
        res = demo(work, "run", "agent", "--once")
        assert res.returncode == 0, res.stderr[-2000:]
        res = demo(work, "fleet", "-o", "json")
        assert res.returncode == 0, res.stderr[-2000:]
        [node] = json.loads(res.stdout)["nodes"]
        # the Node the demo's pods file binds its pods to: this machine's name
        assert node["node"] == platform.node().lower() and node["status"]["mode"] == "report"
        res = demo(work, "run", "agent", "--once", "--mode", "apply", "--apply-slots", "1")
        assert res.returncode == 0, res.stderr[-2000:]
        [node] = json.loads(demo(work, "fleet", "-o", "json").stdout)["nodes"]
        last = node["status"]["lastApply"]
        assert last["removed"] > 0 and last["failures"] == 0 and last["error"] == "", last
        pid = int((work / "cluster/pid").read_text())
    finally:
        down = demo(work, "down")
    assert down.returncode == 0, down.stderr
    assert not work.exists()
    assert not Path(f"/proc/{pid}").exists()  # the control plane's supervisor is gone


def test_a_demo_directory_another_user_made_is_not_used(tmp_path: Path) -> None:
    """A directory at the demo's name that another user owns (they made it first in /tmp):
    every subcommand refuses it before reading anything in it — a planted pid is not
    killed, a planted kubeconfig not used, a planted mount-point list not removed."""
    import signal
    import subprocess as sp

    work = tmp_path / "demo"
    (work / "cluster").mkdir(parents=True)
    victim = sp.Popen(["sleep", "60"])
    try:
        (work / "cluster/pid").write_text(f"{victim.pid}\n")
        (work / "cluster/ready").write_text("https://127.0.0.1:1\n")
        (work / "made-mount-points").write_text(f"{tmp_path / 'victim-dir'}\n")
        (tmp_path / "victim-dir").mkdir()
        (work / "node.json").write_text("{}")
        os.chown(work, 65534, 65534)  # nobody's
        for args in (["down"], ["fleet"], ["run", "df"], ["cluster"], []):
            res = demo(work, *args)
            assert res.returncode == 2, (args, res.stderr[-1000:])
            assert "demo: the demo directory" in res.stderr, res.stderr
        assert victim.poll() is None  # not killed
        assert (tmp_path / "victim-dir").is_dir()  # not removed
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        os.chown(work, os.getuid(), os.getgid())
