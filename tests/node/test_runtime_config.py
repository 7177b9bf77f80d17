"""The cgroup driver from the runtime's CRI `RuntimeConfig` (KEP-4033), against the real
containerd: 2.x answers it (from the default runtime's `SystemdCgroup`, false here, so
`cgroupfs`); 1.6 answers Unimplemented, and kubegc keeps its guess from the cgroup tree."""

from __future__ import annotations

import json
from pathlib import Path

from kubegc_cli.node.cri.client import CriClient
from kubegc_cli.node.cri.endpoint import Endpoint
from tests.node.localnode import LocalNode, containerd_version
from tests.node.test_gc_containers import kubegc


def test_runtime_config_names_the_cgroup_driver(node: LocalNode) -> None:
    client = CriClient(Endpoint(str(node.socket), "test"))
    try:
        driver = client.runtime_config()
    finally:
        client.close()
    if containerd_version() >= (2, 0):
        assert driver == "cgroupfs"  # SystemdCgroup is not set in the node's runc options
    else:
        assert driver is None  # containerd 1.6: Unimplemented


def test_memory_available_says_where_the_driver_came_from(node: LocalNode, tmp_path: Path) -> None:
    res = kubegc(node, tmp_path, "-v", "memory", "available", "-o", "json")
    assert res.returncode == 0, res.stderr
    cgroup = json.loads(res.stdout)["cgroup"]
    if containerd_version() >= (2, 0):
        assert cgroup["driver"] == "cgroupfs"
        assert cgroup["driver_source"] == "the runtime (RuntimeConfig)"
        assert "cgroup driver cgroupfs: the runtime's RuntimeConfig" in res.stderr
    else:
        assert cgroup["driver_source"] == (
            "guessed from the cgroup tree (the runtime does not answer RuntimeConfig)"
        )
