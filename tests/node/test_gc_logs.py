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
    on_disk = sum(
        p.lstat().st_blocks * 512 for p in (gone, gone / "coredns", gone / "coredns/0.log")
    )
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
            (GONE_DIR, "removed", on_disk)  # the directories' blocks and the log's
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


def test_walks_stay_on_their_filesystem_and_a_hung_mount_never_hangs_the_run(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A deleted pod's log directory with `/usr` bind-mounted below it and a mount that never
    answers (a stale NFS or FUSE mount), and an orphaned pod directory with the same: `gc
    logs`, `gc all`, `df` and `residue scan` size the log directory as its own files only,
    keep it (a mount point below), and finish in seconds instead of hanging."""
    import time

    from tests.unit.hangfs import hung_mount

    live = node.run_pod("web", namespace=ns)
    node.add_container(live, "app", state="running")
    gone = node.pod_logs_dir / GONE_DIR
    (gone / "coredns").mkdir(parents=True)
    (gone / "coredns/0.log").write_bytes(b"x" * 4096)
    (gone / "usr").mkdir()
    (gone / "hung").mkdir()
    own = sum(p.lstat().st_blocks * 512 for p in (gone, gone / "coredns", gone / "coredns/0.log"))
    kubelet = tmp_path / "kubelet"
    orphan = kubelet / "pods/11111111-1111-1111-1111-111111111111"
    (orphan / "volumes/kubernetes.io~nfs/data").mkdir(parents=True)
    pods = write_pods_file(tmp_path / "pods.json", live)
    subprocess.run(["mount", "--bind", "-o", "ro", "/usr", str(gone / "usr")], check=True)
    try:
        with hung_mount(gone / "hung"), hung_mount(orphan / "volumes/kubernetes.io~nfs/data"):
            base = ("--timeout", "2s", "--pods-file", str(pods))
            for args in (
                ("gc", "logs", "--dry-run"),
                ("gc", "all", "--dry-run"),
                ("df", "--root-dir", str(kubelet)),
                ("residue", "scan", "--root-dir", str(kubelet)),
            ):
                began = time.monotonic()
                res = kubegc(node, tmp_path, *base, *args, "-o", "json")
                took = time.monotonic() - began
                assert res.returncode == 0, (args, res.stderr)
                assert took < 30, (args, took)
                doc = json.loads(res.stdout)
                if args[0] == "gc":
                    (kept,) = [k for k in doc["kept"] if k.get("path", "").endswith(GONE_DIR)]
                    assert (kept["rule"], kept["bytes"]) == ("mount-point", own), kept
                elif args[0] == "df":
                    mounted = {m["path"] for m in doc["mounted"]}
                    assert {str(gone / "usr"), str(gone / "hung")} <= mounted, mounted
                    logs = next(f for f in doc["filesystems"] if "logs" in f["roles"])
                    usr = int(subprocess.run(["du", "-sxB1", "/usr"], capture_output=True,
                                             text=True, check=True).stdout.split()[0])  # fmt: skip
                    assert all(
                        line["bytes"] is None or line["bytes"] < usr
                        for line in logs["lines"]
                        if line["key"].startswith("logs")
                    ), logs
                else:
                    found = {f["id"]: f for f in doc["actions"] + doc["kept"]}
                    assert not found[str(orphan)]["safe_to_clean"]
                    assert not found[str(gone)]["safe_to_clean"]
                    assert found[str(gone)]["bytes"] < 1024 * 1024
    finally:
        subprocess.run(["umount", "-l", str(gone / "usr")], check=True)
        subprocess.run(["rm", "-rf", "--one-file-system", str(gone)], check=True)
