"""containerd killed in the middle of `kubegc gc containers --yes`, with a real containerd.

The node of this test is its own (`LocalNode` in a directory of its own, not the node the
other tests share), since its containerd is killed with SIGKILL and started again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.node.localnode import LocalNode, pod_list

JOBS_PER_POD = 15


def kubegc(node: LocalNode, work: Path, *args: str) -> list[str]:
    """The argv of a `kubegc` run against `node`, with the pods file and a state dir."""
    return [
        sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
        "--kubelet-config", str(node.kubelet_config), "--state-dir", str(work / "state"),
        "--pods-file", str(work / "pods.json"), "--timeout", "3s",
        *args,
    ]  # fmt: skip


def kill_containerd(node: LocalNode) -> None:
    """SIGKILL this node's containerd, as a crash or the OOM killer would (shims live on)."""
    pids = node._containerd_pids()
    assert pids, "containerd is not running"
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while node.running() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not node.running()
    if node._process is not None:
        node._process.wait(5)
        node._process = None
    node._close_channel()


def restart_containerd(node: LocalNode) -> None:
    """Start the killed containerd again on the same root and state."""
    made_run_dir = node._made_run_dir  # start() would forget that /run/containerd is ours
    node.start()
    node._made_run_dir = made_run_dir


def history(work: Path) -> list[dict[str, Any]]:
    """The runs `kubegc history -o json` lists for the state dir under `work`."""
    proc = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--state-dir", str(work / "state"), "history",
         "-o", "json"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    items: list[dict[str, Any]] = json.loads(proc.stdout)["items"]
    return items


def test_containerd_killed_during_removals_then_the_next_run_finishes(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    work = tmp_path_factory.mktemp("kill")
    node = LocalNode(work / "node")
    node.start()
    try:
        # Two live pods, each a running web and a crash-looping job with many exited attempts;
        # and a pod the pods file no longer lists (deleted, its sandbox stopped), with exited
        # containers.
        live = [node.run_pod(f"live-{i}", namespace="faults") for i in range(2)]
        gone = node.run_pod("gone", namespace="faults")
        for pod in live:
            node.add_container(pod, "web", state="running")

        def fill(pod_attempts: tuple[Any, int]) -> str:
            pod, attempt = pod_attempts
            return node.add_container(pod, "job", attempt=attempt, symlink=False)

        work_items = [(p, a) for p in live for a in range(JOBS_PER_POD)]
        work_items += [(gone, a) for a in range(4)]
        with ThreadPoolExecutor(max_workers=4) as pool:
            list(pool.map(fill, work_items))
        node.stop_pod(gone)  # deleted and terminated: nothing of it alive
        (work / "pods.json").write_text(json.dumps(pod_list(live)))
        everything = node.container_ids()

        dry = subprocess.run(
            kubegc(node, work, "gc", "containers", "--dry-run", "-o", "json"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        planned = {a["id"] for a in plan["actions"]}
        must_stay = everything - planned
        assert len(planned) == 2 * (JOBS_PER_POD - 1) + 4

        run = subprocess.Popen(
            kubegc(node, work, "gc", "containers", "--yes", "-o", "json", "--concurrency", "1"),
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while len(everything - node.container_ids()) < 3:  # the first removals are done
                assert run.poll() is None, "kubegc finished before containerd was killed"
                assert time.monotonic() < deadline, "no removal within 2 minutes"
                time.sleep(0.02)
            kill_containerd(node)
            killed_at = time.monotonic()
            out, err = run.communicate(timeout=60)  # kubegc must not hang
            ended_in = time.monotonic() - killed_at
        finally:
            run.kill()
        assert run.returncode in (1, 3), err
        assert ended_in < 30, f"kubegc took {ended_in:.1f}s after containerd died"
        assert "Traceback" not in err

        restart_containerd(node)  # what it had, it has again
        left = node.container_ids()
        actually_removed = everything - left
        assert actually_removed <= planned and must_stay <= left
        if run.returncode == 1:
            doc = json.loads(out)
            results = {a["id"]: a["result"] for a in doc["actions"]}
            reported = {cid for cid, r in results.items() if r == "removed"}
            assert len(reported) >= 3 and reported <= actually_removed
            assert set(results.values()) - {"removed"} <= {"failed", "skipped"}
            assert set(results.values()) != {"removed"}, "containerd died, yet all went"
            [audit] = history(work)
            assert {a["id"]: a["result"] for a in audit["actions"]} == results
        assert planned - actually_removed, "nothing was left for the next run"

        again = subprocess.run(
            kubegc(node, work, "gc", "containers", "--yes", "-o", "json"),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert again.returncode == 0, again.stderr
        assert node.container_ids() == must_stay  # the job finished, nothing that stays went
        finished = json.loads(again.stdout)
        assert {a["id"] for a in finished["actions"]} <= planned - actually_removed
    finally:
        node.stop()
