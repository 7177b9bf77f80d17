"""The README's demo node (`scripts/demo`) as a new user runs it: set up, the commands of the
3 a.m. workflow and the agent on it, then `down` — on a private containerd, in a private mount
namespace whose kubelet root and node lock are the demo's own."""

from __future__ import annotations

import os
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
