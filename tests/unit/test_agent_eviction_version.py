"""The agent's eviction check takes the kubelet version as `evict check` does
(`commands.evict.kubelet_version`): the Node of the cycle's pod source, so its thresholds carry
that version's defaults (`imagefs.inodesFree<5%` only from 1.30, kubernetes/kubernetes#121834)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubegc_cli.agent.observe import check_eviction
from kubegc_cli.core.pods import load_pods_file
from kubegc_cli.core.settings import Settings
from kubegc_cli.policy.eviction.memory import EvictionMemory, remember
from tests.unit.test_df import QuietUi
from tests.unit.test_evict_check import v1_node


@pytest.mark.parametrize(("kubelet_version", "inodes_default"), [("v1.29.3", False),
                                                                   ("v1.30.1", True)])  # fmt: skip
def test_the_agents_defaults_follow_the_nodes_kubelet_version(
    tmp_path: Path, kubelet_version: str, inodes_default: bool
) -> None:
    v1_node(tmp_path, available_mib=900)
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "List", "items": [
        {"kind": "Node", "metadata": {"name": "node-1"},
         "status": {"nodeInfo": {"kubeletVersion": kubelet_version}}},
    ]}))  # fmt: skip
    s = Settings(host_root=tmp_path, pods_file=pods, node_name="node-1", env={"HOME": "/"},
                 runtime_endpoint="unix:///nonexistent/kubegc-test.sock")  # fmt: skip
    got = check_eviction(
        s, QuietUi(), root_dir="/var/lib/kubelet", top=5, pods=load_pods_file(pods),
        memory=EvictionMemory(), now=1000.0, recall=remember,
    )  # fmt: skip
    config = got.report.config
    assert config.kubelet_version == kubelet_version[1:5]
    signals = {t.signal for t in config.thresholds}
    assert ("imagefs.inodesFree" in signals) is inodes_default, signals
