"""`kubegc evict check` against a real containerd: imagefs and the disk layout from CRI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.node.localnode import LocalNode

MiB = 1 << 20


def test_imagefs_signals_come_from_the_runtime_image_filesystem(tmp_path: Path) -> None:
    """containerd's root on its own 64 MiB tmpfs: a dedicated imagefs. imagefs.* are read by
    statvfs of the mountpoint CRI ImageFsInfo names; containerfs follows imagefs; nodefs has
    nothing to reclaim and imagefs reclaims with container GC then image GC, as the kubelet."""
    root_dir = tmp_path / "kubelet"
    root_dir.mkdir()
    with LocalNode(tmp_path / "node", imagefs_bytes=64 * MiB) as node:
        node.import_image("docker.io/library/filler:1", pad_bytes=8 * MiB, seed="f")
        res = subprocess.run(
            [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
             "--state-dir", str(tmp_path / "state"), "evict", "check",
             "--root-dir", str(root_dir), "--eviction-hard",
             "imagefs.available<99%,nodefs.available<1%,imagefs.inodesFree<1", "-o", "json"],
            capture_output=True, text=True, timeout=60,
            env={"PATH": os.environ["PATH"], "HOME": "/"},
        )  # fmt: skip
        doc = json.loads(res.stdout)
        assert res.returncode == 5, res.stderr
        fs = doc["filesystems"]
        assert fs["dedicated_imagefs"] is True and fs["split"] is False
        assert Path(fs["imagefs"]).is_relative_to(node.root)
        st = os.statvfs(fs["imagefs"])
        t = {x["signal"]: x for x in doc["thresholds"]}
        assert t["imagefs.available"]["capacity"] == 64 * MiB == st.f_blocks * st.f_frsize
        # usage moves a little between the two statvfs calls only if something writes there
        assert abs(t["imagefs.available"]["observed"] - st.f_bavail * st.f_frsize) <= MiB
        assert t["imagefs.available"]["met"] is True  # far more than 1% is used
        assert t["imagefs.available"]["reclaim_first"] == [
            "container GC (kubegc gc containers)", "delete unused images (kubegc gc images)"
        ]  # fmt: skip
        assert t["nodefs.available"]["reclaim_first"] == [] and not t["nodefs.available"]["met"]
        assert t["imagefs.inodesFree"]["capacity"] == st.f_files
        assert (
            t["containerfs.available"]["observed_from"] == t["imagefs.available"]["observed_from"]
        )
        assert doc["met"] == [
            {"signal": "imagefs.available", "hard": True, "condition": "DiskPressure"},
            {"signal": "containerfs.available", "hard": True, "condition": "DiskPressure"},
        ]
