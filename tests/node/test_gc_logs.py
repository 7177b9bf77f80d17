"""`kubegc gc logs` end to end: pod log directories on a real node with a real containerd."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.node.localnode import LocalNode
from tests.node.test_gc_containers import kubegc, write_pods_file

GONE_DIR = "kube-system_coredns-7d8f_9a1b2c3d-0000-1111-2222-333344445555"


def test_deleted_pods_log_dir_goes(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 4: a deleted pod's log dir goes, a living pod's stays; without a pod source
    neither goes."""
    live = node.run_pod("web", namespace=ns)
    node.add_container(live, "app", state="running")
    gone = node.pod_logs_dir / GONE_DIR
    (gone / "coredns").mkdir(parents=True)
    (gone / "coredns/0.log").write_bytes(b"x" * 4096)
    pods = write_pods_file(tmp_path / "pods.json", live)
    try:
        none = kubegc(node, tmp_path, "gc", "logs", "--yes", "-o", "json")
        assert none.returncode == 0, none.stderr
        assert json.loads(none.stdout)["actions"] == [] and gone.exists()

        res = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "logs", "--yes", "-o", "json")
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        assert doc["kind"] == "LogGCPlan"
        mine = [a for a in doc["actions"] if a["kind"] == "pod-log-dir"]
        assert [(a["path"].rsplit("/", 1)[1], a["result"], a["bytes_freed"]) for a in mine] == [
            (GONE_DIR, "removed", 4096)
        ]
        assert not gone.exists()
        assert live.log_directory.exists()
    finally:
        subprocess.run(["rm", "-rf", str(gone)], check=True)


def test_log_dir_with_a_mount_inside_is_reported_not_removed(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Case 5: a tmpfs mounted inside a deleted pod's log dir: reported, not removed, the
    mount's content untouched."""
    live = node.run_pod("web", namespace=ns)
    node.add_container(live, "app", state="running")
    gone = node.pod_logs_dir / GONE_DIR
    mnt = gone / "coredns"
    mnt.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "0.log").write_text("inside the mount")
        pods = write_pods_file(tmp_path / "pods.json", live)
        res = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "logs", "--yes", "-o", "json")
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        assert not [a for a in doc["actions"] if a["path"].endswith(GONE_DIR)]
        (kept,) = [k for k in doc["kept"] if k["path"].endswith(GONE_DIR)]
        assert kept["rule"] == "mount-point" and str(mnt) in kept["reason"]
        assert (mnt / "0.log").read_text() == "inside the mount"
        table = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "logs", "--dry-run")
        assert "mount-point" in table.stdout
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)
        subprocess.run(["rm", "-rf", str(gone)], check=True)
