"""`kubegc df` over fixture host trees (`--host-root`), most of them on their own tmpfs so that
statvfs's used bytes are exactly what the test wrote and every figure can be checked to the
byte. Mounting needs root; without it those tests are skipped."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.app import Settings
from kubegc_cli.df import DfOptions, DfReport, RuntimeView, disk_usage
from kubegc_cli.host.mounts import MountTable
from kubegc_cli.model import (
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    Container,
    ContainerState,
    FilesystemUsage,
    Image,
    Sandbox,
    SandboxState,
)
from kubegc_cli.render_df import bar, render_df

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
NO_RUNTIME = ["-r", "unix:///nonexistent/kubegc-test.sock"]
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/"}  # no kubeconfig: no API pod source

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


def df(root: Path, *args: str) -> tuple[int, str, str]:
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), *NO_RUNTIME, "df",
         *args],
        capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip
    return res.returncode, res.stdout, res.stderr


def write(path: Path, size: int) -> Path:
    """`size` bytes of real (random) data, so every block is allocated."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(os.urandom(size))
    return path


def allocated(*paths: Path) -> int:
    return sum(os.lstat(p).st_blocks * 512 for p in paths)


@contextmanager
def tmpfs(*paths: Path) -> Iterator[None]:
    """A fresh tmpfs on each path (unmounted afterwards, last first)."""
    done: list[Path] = []
    try:
        for p in paths:
            p.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(p)], check=True)
            done.append(p)
        yield
    finally:
        for p in reversed(done):
            subprocess.run(["umount", "-l", str(p)], check=True)


def used(path: Path) -> int:
    st = os.statvfs(path)
    return (st.f_blocks - st.f_bavail) * st.f_frsize


def fs_with(doc: dict[str, Any], role: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [f for f in doc["filesystems"] if role in f["roles"]]
    assert len(found) == 1, found
    return found[0]


def lines(f: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {ln["key"]: ln for ln in f["lines"]}


def assert_adds_up(f: dict[str, Any]) -> None:
    """The known top-level lines (other included) sum to used, statvfs's own figure."""
    top = [ln["bytes"] for ln in f["lines"] if ln["parent"] is None]
    assert sum(b for b in top if b is not None) == f["used"]


def pods_file(path: Path, *pods: tuple[str, str]) -> Path:
    """A PodList of (UID, name) pods in namespace `ns`."""
    items = [{"metadata": {"uid": u, "name": n, "namespace": "ns"}} for u, n in pods]
    path.write_text(json.dumps({"kind": "PodList", "items": items}))
    return path


def pod(doc: dict[str, Any], uid: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [p for p in doc["pods"] if p["uid"] == uid]
    assert len(found) == 1, found
    return found[0]


@needs_root
def test_case_1_pod_logs_count_rotated_files(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "var/lib/kubelet").mkdir(parents=True)
    with tmpfs(host / "var/log"):
        app = host / "var/log/pods/ns_a_uid1/app"
        live = write(app / "0.log", MiB)
        rotated = write(app / "0.log.20261129-010101.gz", 512 * KiB)
        code, out, err = df(host, "--no-runtime", "-o", "json")
        assert code == 0, err
        doc = json.loads(out)
        p = pod(doc, "uid1")
        assert (p["namespace"], p["name"]) == ("ns", "a")
        assert p["logs"] == allocated(live, rotated) == 1536 * KiB  # the rotated file counts
        logs_fs = fs_with(doc, "logs")
        assert lines(logs_fs)["logs"]["bytes"] == 1536 * KiB
        assert logs_fs["used"] == used(host / "var/log")
        assert_adds_up(logs_fs)
        assert lines(logs_fs)["other"]["bytes"] == 0


@needs_root
def test_case_2_sparse_file_counts_its_allocated_blocks(tmp_path: Path) -> None:
    host = tmp_path / "host"
    with tmpfs(host / "var/lib/kubelet"):
        sparse = host / "var/lib/kubelet/pods/uid2/volumes/kubernetes.io~empty-dir/scratch/big"
        sparse.parent.mkdir(parents=True)
        with sparse.open("wb") as f:
            f.truncate(GiB)
            f.seek(512 * MiB)
            f.write(os.urandom(4 * KiB))
        assert sparse.stat().st_size == GiB and allocated(sparse) == 4 * KiB
        code, out, err = df(host, "--no-runtime", "-o", "json")
        assert code == 0, err
        doc = json.loads(out)
        p = pod(doc, "uid2")
        assert p["empty_dir"] == 4 * KiB and p["empty_dir_volumes"] == 1
        nodefs = fs_with(doc, "nodefs")
        assert lines(nodefs)["empty-dir"]["bytes"] == 4 * KiB
        assert_adds_up(nodefs)
        assert lines(nodefs)["other"]["bytes"] == 0


@needs_root
def test_case_3_mounted_volume_is_listed_not_counted(tmp_path: Path) -> None:
    """A memory-backed emptyDir (a tmpfs on the volume directory) and a tmpfs mounted inside
    a disk-backed emptyDir: neither's 4 MiB counts on nodefs; both are listed as mounted."""
    host = tmp_path / "host"
    kubelet = host / "var/lib/kubelet"
    volumes = kubelet / "pods/uid3/volumes/kubernetes.io~empty-dir"
    with tmpfs(kubelet):
        disk = write(volumes / "cache/data", 64 * KiB)
        with tmpfs(volumes / "mem", volumes / "cache/sub"):
            write(volumes / "mem/blob", 4 * MiB)
            write(volumes / "cache/sub/blob", 4 * MiB)
            code, out, err = df(host, "--no-runtime", "-o", "json")
            assert code == 0, err
            doc = json.loads(out)
            base = "/var/lib/kubelet/pods/uid3/volumes/kubernetes.io~empty-dir"
            mounted = {(m["path"], m["pod_uid"]) for m in doc["mounted"]}
            assert mounted == {(f"{base}/mem", "uid3"), (f"{base}/cache/sub", "uid3")}
            p = pod(doc, "uid3")
            assert p["empty_dir"] == allocated(disk) == 64 * KiB
            assert sorted(p["mounted"]) == [f"{base}/cache/sub", f"{base}/mem"]
            nodefs = fs_with(doc, "nodefs")
            assert lines(nodefs)["empty-dir"]["bytes"] == 64 * KiB
            assert nodefs["used"] == used(kubelet)
            assert_adds_up(nodefs)
            assert lines(nodefs)["other"]["bytes"] == 0  # nothing of the mounts counted


@needs_root
def test_case_4_lines_add_up_to_used_per_filesystem(tmp_path: Path) -> None:
    """nodefs and the log filesystem on two tmpfs: each category is on the filesystem it
    lives on, and the categories plus other equal each filesystem's used bytes exactly.
    `other` is exactly the file outside Kubernetes' directories; a file hard-linked into two
    pods' emptyDirs counts once; a deleted pod's logs are reclaimable."""
    host = tmp_path / "host"
    kubelet, logs = host / "var/lib/kubelet", host / "var/log"
    with tmpfs(kubelet, logs):
        stray = write(kubelet / "cpu_manager_state", 12 * KiB)
        hosts = write(kubelet / "pods/uid-a/etc-hosts", 4 * KiB)
        shared = write(kubelet / "pods/uid-a/volumes/kubernetes.io~empty-dir/v/shared", 40 * KiB)
        other_vol = kubelet / "pods/uid-b/volumes/kubernetes.io~empty-dir/w"
        other_vol.mkdir(parents=True)
        os.link(shared, other_vol / "same")
        cm = write(kubelet / "pods/uid-b/volumes/kubernetes.io~configmap/cfg/key", 8 * KiB)
        a_logs = [
            write(logs / "pods/ns_a_uid-a/app/0.log", 100 * KiB),
            write(logs / "pods/ns_a_uid-a/app/0.log.20261129-010101.gz", 20 * KiB),
        ]
        b_log = write(logs / "pods/ns_b_uid-b/web/3.log", 36 * KiB)
        outside = write(logs / "syslog", 28 * KiB)
        pods = pods_file(tmp_path / "pods.json", ("uid-a", "a"))
        code, out, err = df(host, "--no-runtime", "--pods-file", str(pods), "-o", "json")
        assert code == 0, err
        doc = json.loads(out)
        assert len(doc["filesystems"]) == 2
        nodefs, logfs = fs_with(doc, "nodefs"), fs_with(doc, "logs")
        assert "logs" not in nodefs["roles"] and logfs["roles"] == ["logs"]
        n, lg = lines(nodefs), lines(logfs)
        assert n["empty-dir"]["bytes"] == 40 * KiB and n["empty-dir"]["count"] == 2
        assert n["pod-dirs"]["bytes"] == allocated(hosts, cm)
        assert n["other"]["bytes"] == allocated(stray)
        assert "logs" not in n and "empty-dir" not in lg
        assert lg["logs"]["bytes"] == allocated(*a_logs, b_log)
        assert lg["logs"]["reclaimable"] == allocated(b_log)  # uid-b is not in the pods file
        assert lg["logs.deleted-pods"]["bytes"] == allocated(b_log)
        assert lg["logs"]["command"] == f"kubegc gc all --pods-file {pods}"
        assert lg["other"]["bytes"] == allocated(outside)
        for f, path in ((nodefs, kubelet), (logfs, logs)):
            assert f["used"] == used(path)
            assert_adds_up(f)
        assert pod(doc, "uid-b")["deleted"] is True and pod(doc, "uid-a")["deleted"] is False
        assert [p["uid"] for p in doc["pods"]] == ["uid-a", "uid-b"]  # largest footprint first
        assert doc["summary"]["reclaimable"] == allocated(b_log)


# --- images, writable layers, dead containers' logs and residue, with a runtime --------------


class QuietUi:
    def __init__(self) -> None:
        self.warnings: list[str] = []

    def info(self, message: str) -> None:
        pass

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def show_plan(self, plan: Any) -> None:
        pass

    def interactive(self) -> bool:
        return False

    def confirm(self, question: str) -> bool:
        return False


def labels(uid: str, name: str, container: str) -> dict[str, str]:
    return {LABEL_POD_UID: uid, LABEL_POD_NAME: name, LABEL_POD_NAMESPACE: "ns",
            LABEL_CONTAINER_NAME: container}  # fmt: skip


def ctr(cid: str, state: ContainerState, container: str, image: str, log: str) -> Container:
    return Container(
        id=cid, pod_sandbox_id="sb1", name=container, attempt=0, state=state, created_at=1,
        labels=labels("uid1", "a", container), image_id=image, log_path=log,
    )  # fmt: skip


def runtime_view() -> RuntimeView:
    """Images 2 MiB (1 in use, 1 unused, the sandbox image, 1 pinned); writable layers 1.5 MiB
    (1 MiB of a running container, 512 KiB of an exited one), all on /var/lib/containerd."""
    return RuntimeView(
        endpoint="unix:///fake.sock",
        containers=[
            ctr(
                "c-run",
                ContainerState.RUNNING,
                "web",
                "sha256:a",
                "/var/log/pods/ns_a_uid1/web/0.log",
            ),
            ctr(
                "c-dead",
                ContainerState.EXITED,
                "app",
                "sha256:a",
                "/var/log/pods/ns_a_uid1/app/0.log",
            ),
        ],
        sandboxes=[
            Sandbox(
                id="sb1",
                name="a",
                namespace="ns",
                uid="uid1",
                attempt=0,
                state=SandboxState.READY,
                created_at=1,
            )
        ],
        images=[
            Image("sha256:a", ("app:1",), size=MiB),
            Image("sha256:b", ("old:1",), size=512 * KiB),
            Image("sha256:p", ("registry.k8s.io/pause:3.9",), size=256 * KiB),
            Image("sha256:k", ("kept:1",), size=256 * KiB, pinned=True),
        ],
        sandbox_images={"sha256:p"},
        image_fs=[FilesystemUsage("/var/lib/containerd", None, None)],
        container_fs=[],
        layers={"c-run": (MiB, 10), "c-dead": (512 * KiB, 5)},
    )


GONE = "0d1e5a7c-9c1b-4f5e-8a52-6b7c4d3e2f10"  # residue must be named like a pod UID


@needs_root
def test_images_layers_dead_logs_and_residue_on_their_filesystems(tmp_path: Path) -> None:
    host = tmp_path / "host"
    kubelet, logs, imagefs = host / "var/lib/kubelet", host / "var/log", host / "var/lib/containerd"
    with tmpfs(kubelet, logs, imagefs):
        write(imagefs / "blobs", 3584 * KiB)  # what the images and layers above take
        empty = write(kubelet / "pods/uid1/volumes/kubernetes.io~empty-dir/v/f", 16 * KiB)
        orphan = write(kubelet / f"pods/{GONE}/volumes/kubernetes.io~empty-dir/v/f", 8 * KiB)
        dead = [
            write(logs / "pods/ns_a_uid1/app/0.log", 64 * KiB),
            write(logs / "pods/ns_a_uid1/app/0.log.20261129-010101.gz", 32 * KiB),
        ]
        running = write(logs / "pods/ns_a_uid1/web/0.log", 16 * KiB)
        orphan_log = write(logs / f"pods/ns_gone_{GONE}/x/0.log", 4 * KiB)
        pods = pods_file(tmp_path / "pods.json", ("uid1", "a"))
        s = Settings(host_root=host, pods_file=pods, env={"HOME": "/"})
        ticks: list[tuple[str, int, int]] = []
        report = disk_usage(
            s, QuietUi(), DfOptions(), progress=lambda *t: ticks.append(t),
            reader=lambda *_: runtime_view(),
        )  # fmt: skip
        doc = report.to_dict()
        assert report.exit_code() == 0 and len(doc["filesystems"]) == 3
        img = fs_with(doc, "imagefs")
        assert img["roles"] == ["imagefs", "containerfs"]
        i = lines(img)
        assert (i["images"]["bytes"], i["images"]["count"]) == (2 * MiB, 4)
        assert (i["images.in-use"]["bytes"], i["images.in-use"]["count"]) == (MiB, 1)
        assert (i["images.unused"]["bytes"], i["images.unused"]["count"]) == (MiB, 3)
        # neither the pinned image nor the sandbox image is reclaimable
        assert i["images"]["reclaimable"] == 512 * KiB
        assert i["images"]["command"] == "kubegc gc images --prune-unused"
        assert i["writable-layers"]["bytes"] == 1536 * KiB
        assert i["writable-layers.dead"]["reclaimable"] == 512 * KiB
        assert i["writable-layers"]["command"] == "kubegc gc containers"
        assert i["other"]["bytes"] == 0 and img["used"] == used(imagefs)
        assert img["image_gc"]["high_threshold"] == 85 and img["image_gc"]["low_threshold"] == 80
        assert {r["signal"] for r in img["eviction"]} >= {"imagefs.available"}

        lg = lines(fs_with(doc, "logs"))
        assert lg["logs"]["bytes"] == allocated(*dead, running)
        assert lg["logs.dead-containers"]["bytes"] == allocated(*dead) == 96 * KiB
        assert lg["logs"]["reclaimable"] == 96 * KiB  # not the running container's log
        assert lg["residue"]["bytes"] == allocated(orphan_log)
        assert lg["residue"]["command"] == f"kubegc residue clean --pods-file {pods}"

        nodefs = fs_with(doc, "nodefs")
        n = lines(nodefs)
        assert "images" not in n and "writable-layers" not in n
        assert n["empty-dir"]["bytes"] == allocated(empty)  # not the orphan's
        assert n["residue.orphaned-pod-dir"]["bytes"] == allocated(orphan)
        assert n["residue"]["reclaimable"] == allocated(orphan)
        assert {r["signal"] for r in nodefs["eviction"]} == {"nodefs.available",
                                                              "nodefs.inodesFree"}  # fmt: skip
        for f, path in ((img, imagefs), (fs_with(doc, "logs"), logs), (nodefs, kubelet)):
            assert f["used"] == used(path)
            assert_adds_up(f)
            assert lines(f)["other"]["bytes"] == 0

        p = pod(doc, "uid1")
        assert p["writable_layers"] == 1536 * KiB
        assert p["footprint"] == p["logs"] + p["empty_dir"] + 1536 * KiB
        assert GONE not in {q["uid"] for q in doc["pods"]}
        assert ("pod logs", 2, 2) in ticks and ("pod directories", 2, 2) in ticks

        out = io.StringIO()
        render_df(report, out=out)
        table = out.getvalue()
        assert "RECLAIM WITH" in table and "kubegc gc images --prune-unused" in table
        assert "imagefs + containerfs" in table and "█" in table


def test_unreachable_runtime_reports_the_host_and_exits_3(tmp_path: Path) -> None:
    host = tmp_path / "host"
    write(host / "var/log/pods/ns_a_uid1/app/0.log", 8 * KiB)
    (host / "var/lib/kubelet").mkdir(parents=True)
    code, out, err = df(host, "-o", "json")
    assert code == 3, err
    doc = json.loads(out)
    assert doc["exit_code"] == 3 and doc["runtime"]["error"]
    nodefs = fs_with(doc, "nodefs")
    n = lines(nodefs)
    assert n["images"]["bytes"] is None and "could not be read" in n["images"]["note"]
    assert n["logs"]["bytes"] >= 8 * KiB  # the host lines are still there
    code, table, err = df(host)
    assert code == 3 and "unknown" in table and "exit 3" in table
    code, out, err = df(host, "--no-runtime", "-o", "json")
    assert code == 0 and json.loads(out)["runtime"]["skipped"] is True


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--root-dir", "var/lib/kubelet"], "var/lib/kubelet"),
        (["--pod-logs-dir", "logs"], "logs"),
        (["--pod-logs-dir", "/"], "'/'"),
        (["--top", "-1"], "-1"),
        (["--snapshot", "/nonexistent.json"], "--snapshot"),
    ],
)
def test_bad_input_is_one_line_exit_2(tmp_path: Path, args: list[str], needle: str) -> None:
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    code, out, err = df(tmp_path, "--no-runtime", *args)
    assert code == 2, (out, err)
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err and out == ""


def test_missing_kubelet_root_is_exit_3(tmp_path: Path) -> None:
    code, _, err = df(tmp_path, "--no-runtime")
    assert code == 3 and "kubelet root" in err and err.count("\n") == 1


def test_thresholds_come_from_the_kubelet_config(tmp_path: Path) -> None:
    """Eviction thresholds as `evict check` reads them and image GC settings as `gc images`
    resolves them: the kubelet config file, with where each came from."""
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    config = tmp_path / "var/lib/kubelet/config.yaml"
    config.write_text(
        "kind: KubeletConfiguration\nevictionHard:\n  nodefs.available: 50%\n"
        "imageGCHighThresholdPercent: 90\n"
    )
    code, out, err = df(tmp_path, "--no-runtime", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    nodefs = fs_with(doc, "nodefs")
    (row,) = nodefs["eviction"]  # setting evictionHard drops the other defaults
    st = os.statvfs(tmp_path / "var/lib/kubelet")
    assert row["signal"] == "nodefs.available" and row["threshold"] == "50%"
    assert row["threshold_quantity"] == int(st.f_blocks * st.f_frsize * 0.5)
    assert str(config) in row["source"]
    assert doc["image_gc_sources"]["image_gc_high_threshold"] == str(config)
    assert doc["image_gc_sources"]["image_gc_low_threshold"] == "kubelet default"
    config.write_text("kind: KubeletConfiguration\nimageGCHighThresholdPercent: 70\n")
    code, out, err = df(tmp_path, "--no-runtime")  # below the default low 80: the kubelet refuses
    assert code == 2 and "imageGCHighThresholdPercent" in err and err.count("\n") == 1


def test_bar_draws_eighths() -> None:
    assert bar(0.0, 4) == "····" and bar(1.0, 4) == "████" and bar(2.0, 4) == "████"
    assert bar(0.5, 4) == "██··" and bar(0.0625, 4) == "▎···"


def test_walk_lists_mounts_from_the_mount_table(tmp_path: Path) -> None:
    """A directory the mount table names is not entered even on the same device (a bind
    mount): the walker trusts the table as `tree_usage` does."""
    from kubegc_cli.df import Walker

    vol = tmp_path / "pods/uid/volumes/kubernetes.io~empty-dir/bound"
    write(vol / "f", 8 * KiB)
    w = Walker(MountTable(frozenset({str(vol)})))
    w.pod_dirs(str(tmp_path / "pods"))
    assert w.pods["uid"].empty_dir == 0 and w.pods["uid"].mounted == [str(vol)]


def test_report_json_shape_has_lists_never_null() -> None:
    r = DfReport(filesystems=[], pods=[], pod_count=0, captured_at=0, paths={})
    doc = r.to_dict()
    assert doc["kind"] == "DiskUsage" and doc["filesystems"] == [] and doc["pods"] == []
    assert doc["mounted"] == [] and doc["notes"] == [] and doc["exit_code"] == 0
