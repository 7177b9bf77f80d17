"""`kubegc evict check` against a real containerd: the image filesystem's mountpoint is
remembered in the state dir, and asked again after containerd restarts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kubegc_cli.node.cri import fscache
from tests.node.localnode import LocalNode
from tests.node.test_faults import kill_containerd, restart_containerd

MiB = 1 << 20
# Runs kubegc, then says on the last line of stderr whether grpc was ever imported.
PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('grpc imported: %s\\n' % ('grpc' in sys.modules)))\n"
    "from kubegc_cli.cli.main import main\n"
    "main(sys.argv[1:])\n"
)


def check(node: LocalNode, root_dir: Path, state: Path) -> tuple[dict[str, Any], str, bool]:
    res = subprocess.run(
        [sys.executable, "-c", PROBE, "-r", node.endpoint, "--state-dir", str(state), "evict",
         "check", "--root-dir", str(root_dir), "--eviction-hard",
         "imagefs.available<1%,imagefs.inodesFree<1,nodefs.available<1%", "-o", "json", "-v"],
        capture_output=True, text=True, timeout=60,
        env={"PATH": os.environ["PATH"], "HOME": "/"},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout), res.stderr, res.stderr.rstrip().endswith("True")


def signals(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["signal"]: t for t in doc["thresholds"]}


def test_a_second_run_uses_the_remembered_imagefs_with_the_same_figures(
    tmp_path: Path,
) -> None:
    root_dir, state = tmp_path / "kubelet", tmp_path / "state"
    root_dir.mkdir()
    state.mkdir()
    with LocalNode(tmp_path / "node", imagefs_bytes=64 * MiB) as node:
        node.import_image("docker.io/library/filler:1", pad_bytes=4 * MiB, seed="c")
        first, err, grpc_loaded = check(node, root_dir, state)
        assert grpc_loaded and "image filesystem from the runtime (CRI ImageFsInfo)" in err
        assert f"remembered in {state / fscache.CACHE_NAME}" in err
        second, err, grpc_loaded = check(node, root_dir, state)
        assert not grpc_loaded, err
        assert "image filesystem from the cache" in err
        ident = fscache.socket_identity(str(node.socket))
        assert ident is not None and fscache.describe_identity(ident) in err
        assert second["filesystems"] == first["filesystems"]
        assert second["filesystems"]["dedicated_imagefs"] is True
        assert Path(second["filesystems"]["imagefs"]).is_relative_to(node.root)
        a, b = signals(first), signals(second)
        for sig in ("imagefs.available", "imagefs.inodesFree", "containerfs.available"):
            assert b[sig]["capacity"] == a[sig]["capacity"], sig
            assert b[sig]["observed_from"] == a[sig]["observed_from"], sig
            assert abs(b[sig]["observed"] - a[sig]["observed"]) <= MiB, sig  # nothing writes
            assert b[sig]["reclaim_first"] == a[sig]["reclaim_first"], sig
        assert a["imagefs.available"]["capacity"] == 64 * MiB

        kill_containerd(node)
        restart_containerd(node)  # a new socket: what was remembered is not used
        after = fscache.socket_identity(str(node.socket))
        assert after is not None and after != ident
        third, err, grpc_loaded = check(node, root_dir, state)
        assert grpc_loaded and "the socket changed since" in err, err
        assert third["filesystems"] == first["filesystems"]
        entry = json.loads((state / fscache.CACHE_NAME).read_text())["runtimes"][node.endpoint]
        assert entry["socket"] == list(after)
        _, err, grpc_loaded = check(node, root_dir, state)
        assert not grpc_loaded and "image filesystem from the cache" in err
