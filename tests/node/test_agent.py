"""`kubegc agent`'s cycle against a real containerd (tests/node/localnode.py): a report-mode
cycle plans from one observation and removes nothing; an apply-mode cycle holding a slot
removes what `gc all` removes, and the bytes it freed are the filesystems' regained space.

The node here is a containerd of its own whose root, pod log root and kubelet root are each a
tmpfs, so that statvfs sees only what the test and containerd do there."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubegc_cli.agent.cycle import Agent
from kubegc_cli.agent.options import AgentOptions
from kubegc_cli.core.fleet import NodeReport
from kubegc_cli.core.settings import Settings
from kubegc_cli.policy.scope import Scope
from tests.node.localnode import LocalNode
from tests.unit.test_agent_cycle import QuietUi, SlotsStandIn

MiB = 1 << 20
#: An exited container whose log holds 2 MB of output (containerd splits it into 16 KiB lines).
LOUD = ["/bin/sh", "-c", "head -c 2000000 /dev/zero | tr '\\0' x; echo; exit 3"]


def mount_tmpfs(path: Path, size: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)


@pytest.fixture
def own_node(tmp_path: Path) -> Iterator[LocalNode]:
    node = LocalNode(tmp_path / "node", imagefs_bytes=160 * MiB)
    mount_tmpfs(node.workdir / "var/log", "64m")
    mount_tmpfs(tmp_path / "kubelet", "16m")
    try:
        with node:
            yield node
    finally:
        for path in (node.workdir / "var/log", tmp_path / "kubelet"):
            subprocess.run(["umount", "-l", str(path)], check=False)


def test_report_then_apply_against_containerd(own_node: LocalNode, tmp_path: Path) -> None:
    node = own_node
    pod = node.run_pod("p", namespace="agent")
    init0 = node.add_container(pod, "init", attempt=0, symlink=False, command=LOUD)
    init1 = node.add_container(pod, "init", attempt=1, symlink=False)
    app = node.add_container(pod, "app", state="running", symlink=False)
    log0 = pod.log_directory / "init/0.log"
    assert log0.stat().st_size >= 2_000_000
    s = Settings(
        runtime_endpoint=node.endpoint,
        kubelet_config=node.kubelet_config,
        state_dir=tmp_path / "state",
        pod_source="none",
        env={"PATH": os.environ["PATH"], "HOME": "/"},
        node_name="agent-node",
        lock_timeout=120.0,  # another run on this machine may hold the node lock a moment
    )
    opts = AgentOptions(
        root_dir=str(tmp_path / "kubelet"), scope=Scope(namespaces=frozenset({"agent"}))
    )
    written: list[NodeReport] = []
    agent = Agent(s, opts, QuietUi(), write_report=written.append)

    report = agent.cycle()
    assert report.ok, report.error
    assert node.container_ids(namespace="agent") == {init0, init1, app}  # nothing removed
    assert log0.exists()
    cats = {c.name: c for c in report.report.categories}
    # gc (the default policy, no pod source) removes init's older attempt: its log is
    # reclaimable, as df counts it
    assert cats["logs"].reclaimable is not None
    assert cats["logs"].reclaimable >= log0.stat().st_blocks * 512
    assert report.report.signals and written == [report.report]
    planned = [
        v for (name, labels), v in report.samples.items()
        if name == "kubegc_last_run_objects"
        and dict(labels) == {"command": "gc all", "kind": "container", "result": "planned"}
    ]  # fmt: skip
    assert planned == [1]

    slots = SlotsStandIn()
    allocated = log0.stat().st_blocks * 512
    apply = AgentOptions(mode="apply", root_dir=opts.root_dir, scope=opts.scope)
    applied = Agent(s, apply, QuietUi(), write_report=written.append, slots=slots).cycle()
    assert applied.ok, applied.error
    assert node.container_ids(namespace="agent") == {init1, app}
    assert not log0.exists()
    last = applied.report.last_apply
    assert last is not None and last.plans == ("gc all",) and last.removed == 1
    assert last.failures == 0 and last.error == ""
    # the log's blocks came back on the log tmpfs; containerd's root may have freed a little
    # more (the container's writable layer and metadata), never less
    assert allocated <= last.bytes_freed <= allocated + 4 * MiB, (allocated, last.bytes_freed)
    assert slots.calls[0] == "acquire" and slots.calls[-1] == "release kubegc-apply-0"
    assert set(slots.calls[1:-1]) <= {"renew kubegc-apply-0"}  # before each plan and removal
    assert applied.report.mode == "apply" and written[-1] == applied.report
