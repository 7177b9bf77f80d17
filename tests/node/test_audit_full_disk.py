"""A removing run whose `--state-dir` is on a full filesystem, against a real containerd: a
tiny tmpfs filled to the last byte. The removals go ahead; the audit rows cannot be written,
which is one error line naming the state dir and exit 1, with the full report on stdout."""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node.localnode import LocalNode
from tests.node.test_gc_containers import ids


@pytest.fixture
def full_state_dir(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs with no byte left: a file grown until the kernel says ENOSPC, then
    topped up one byte at a time."""
    mnt = tmp_path / "state"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mnt)],
                   check=True)  # fmt: skip
    try:
        with open(mnt / "filler", "wb", buffering=0) as f:
            for chunk in (4096, 1):
                while True:
                    try:
                        f.write(b"\0" * chunk)
                    except OSError as exc:
                        assert exc.errno == errno.ENOSPC
                        break
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_full_state_disk_removes_then_exits_1_naming_the_state_dir(
    node: LocalNode, ns: str, full_state_dir: Path
) -> None:
    import os

    stats = os.statvfs(full_state_dir)
    assert stats.f_bavail == 0  # full, to the last byte
    p = node.run_pod("p", namespace=ns)
    made = [node.add_container(p, "job", attempt=i) for i in range(3)]

    done = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
         "--kubelet-config", str(node.kubelet_config), "--state-dir", str(full_state_dir),
         "--pod-source", "none", "gc", "containers", "-n", ns, "--yes", "-o", "json"],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert ids(node, ns) == {made[2]}  # the full disk did not stop the cleanup
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        f"kubegc: error: audit rows of this run not written to --state-dir {full_state_dir}: "
    )
    assert "full" in lines[0] or "No space left" in lines[0]
    doc = json.loads(done.stdout)
    assert {a["id"]: a["result"] for a in doc["actions"]} == {
        made[0]: "removed",
        made[1]: "removed",
    }
    assert any("audit rows of this run not written" in n for n in doc["notes"])


def test_full_state_disk_does_not_stop_image_gc(tmp_path: Path, full_state_dir: Path) -> None:
    """gc images on a full state disk: its image records cannot be saved (said on stderr), the
    unused image is removed all the same, and the unwritten audit rows make it exit 1."""
    with LocalNode(tmp_path / "node") as node:
        unused = node.import_image("docker.io/library/unused-a:1", pad_bytes=2048, seed="a")
        p = node.run_pod("p", namespace="ns1")
        node.add_container(p, "app")  # keeps busybox in use
        done = subprocess.run(
            [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
             "--kubelet-config", str(node.kubelet_config), "--state-dir", str(full_state_dir),
             "gc", "images", "--prune-unused", "--minimum-image-ttl-duration", "0s", "--yes",
             "-o", "json"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 1, done.stderr
        assert "image records are not saved; removals go ahead" in done.stderr
        assert f"audit rows of this run not written to --state-dir {full_state_dir}" in done.stderr
        doc = json.loads(done.stdout)
        assert {a["id"]: a["result"] for a in doc["actions"]}[unused] == "removed"
        assert unused not in {i.id for i in node.list_images()}


def test_a_state_dir_that_cannot_be_created_stops_no_cleanup(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A node where kubegc never ran, under disk pressure: its state dir cannot be created (no
    byte and no inode left). `--yes` still acts, under the node-wide lock on /run: a warning,
    the removals, then the audit rows it kept in memory and could not write: exit 1."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,nr_inodes=16,mode=0700", "tmpfs",
                    str(mnt)], check=True)  # fmt: skip
    try:
        with open(mnt / "filler", "wb", buffering=0) as f:
            try:
                while f.write(b"\0" * 4096):
                    pass
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        n = 0
        while True:
            try:
                (mnt / f"inode{n}").touch()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
            n += 1
        p = node.run_pod("p", namespace=ns)
        made = [node.add_container(p, "job", attempt=i) for i in range(3)]
        state_dir = mnt / "kubegc"
        done = subprocess.run(
            [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
             "--kubelet-config", str(node.kubelet_config), "--state-dir", str(state_dir),
             "--pod-source", "none", "gc", "containers", "-n", ns, "--yes", "-o", "json"],
            capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    assert ids(node, ns) == {made[2]}  # the full disk did not stop the cleanup
    assert done.returncode == 1, done.stderr
    warning, error = done.stderr.splitlines()
    assert warning.startswith(f"kubegc: cannot create --state-dir {state_dir}: No space left")
    assert "going on under the node lock /run/kubegc/lock" in warning
    assert error.startswith(
        f"kubegc: error: audit rows of this run not written to --state-dir {state_dir}: "
    )
    doc = json.loads(done.stdout)
    assert {a["id"]: a["result"] for a in doc["actions"]} == {
        made[0]: "removed",
        made[1]: "removed",
    }
