"""`kubegc df` over fixture host trees (`--host-root`), most of them on their own tmpfs so that
statvfs's used bytes are exactly what the test wrote and every figure can be checked to the
byte. Mounting needs root; without it those tests are skipped."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.commands.df import DfOptions, DfReport, disk_usage
from kubegc_cli.core.model import (
    ANNOTATION_RESTART_COUNT,
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
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.diskusage import RuntimeView
from kubegc_cli.node.host.logs import LogRoots, LogSizer
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.render.df import bar, render_df
from tests.unit.hostfixtures import pod_dirs_settled

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
NO_RUNTIME = ["-r", "unix:///nonexistent/kubegc-test.sock"]
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/"}  # no kubeconfig: no API pod source

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture(autouse=True)
def _pod_dirs_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    pod_dirs_settled(monkeypatch)


def df(root: Path, *args: str, prefix: tuple[str, ...] = ()) -> tuple[int, str, str]:
    res = subprocess.run(
        [*prefix, sys.executable, "-m", "kubegc_cli", "--host-root", str(root), *NO_RUNTIME,
         "df", *args],
        capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip
    return res.returncode, res.stdout, res.stderr


def without_permission_override() -> tuple[str, ...]:
    """A command prefix under which file permissions apply to this process: root without
    CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (mode 000 then stops it too); nothing for
    another user. Skips the test when root and `setpriv` is missing."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("needs setpriv to drop root's permission override")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search")


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
            (note,) = [n for n in doc["notes"] if "mount point(s)" in n]
            assert note.startswith("2 mount point(s)") and "listed with -v" in note
            code, table, err = df(host, "--no-runtime", "-v")
            assert code == 0 and f"  {base}/mem  (pod uid3)" in table
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
    pods' emptyDirs counts once; a deleted pod's logs are reclaimable (the runtime runs a
    container of the pod the pod source lists: the source is checked)."""
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
        view = RuntimeView(
            endpoint="unix:///fake.sock",
            containers=[running_in("uid-a", "a")],
            sandboxes=[sandbox("uid-b", "b", SandboxState.NOTREADY)],  # known: not residue
            images=[], sandbox_images=set(), layers={}, container_fs=[],
            image_fs=[FilesystemUsage("/var/lib/kubelet", None, None)],
        )  # fmt: skip
        s = Settings(host_root=host, pods_file=pods, env={"HOME": "/"})
        report = disk_usage(s, QuietUi(), DfOptions(), reader=lambda *_: view)
        assert report.exit_code() == 0
        doc = report.to_dict()
        assert len(doc["filesystems"]) == 2 and doc["pod_source_checked"] is True
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
        assert lg["logs"]["command"] == f"kubegc gc all --host-root {host} --pods-file {pods}"
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


def ctr(
    cid: str, state: ContainerState, container: str, image: str, log: str, attempt: int = 0
) -> Container:
    return Container(
        id=cid, pod_sandbox_id="sb1", name=container, attempt=attempt, state=state,
        created_at=1 + attempt, labels=labels("uid1", "a", container), image_id=image,
        log_path=log, annotations={ANNOTATION_RESTART_COUNT: log.rsplit("/", 1)[-1][:-4]},
    )  # fmt: skip


def running_in(uid: str, name: str) -> Container:
    return Container(
        id=f"c-{uid}", pod_sandbox_id=f"sb-{uid}", name="app", attempt=0,
        state=ContainerState.RUNNING, created_at=1, labels=labels(uid, name, "app"),
        image_id="sha256:a", log_path="",
    )  # fmt: skip


def sandbox(uid: str, name: str, state: SandboxState = SandboxState.READY) -> Sandbox:
    return Sandbox(id=f"sb-{uid}", name=name, namespace="ns", uid=uid, attempt=0, state=state,
                   created_at=1)  # fmt: skip


def sized(view: RuntimeView, host: Path, mounts: MountTable) -> RuntimeView:
    """`view` with each container's `log_bytes` measured under `host` as the runtime reader
    measures them (`observe_node`: a `LogSizer` over the kubelet's podLogsDir)."""
    sizer = LogSizer(LogRoots(host, "/var/log/pods"), mounts)
    sizes = sizer.sizes_of([(c.log_path, c) for c in view.containers])
    view.containers = [replace(c, log_bytes=b) for c, b in zip(view.containers, sizes, strict=True)]
    return view


def runtime_view() -> RuntimeView:
    """Images 2 MiB (1 in use, 1 unused, the sandbox image, 1 pinned); writable layers 1.75
    MiB (1 MiB of a running container, 512 KiB of an exited one that gc containers removes,
    256 KiB of the newer exited one of the same container, which it keeps), all on
    /var/lib/containerd."""
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
            ctr(
                "c-kept",
                ContainerState.EXITED,
                "app",
                "sha256:a",
                "/var/log/pods/ns_a_uid1/app/1.log",
                attempt=1,
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
            Image("sha256:b", ("old:1",), ("old@sha256:" + "b" * 64,), size=512 * KiB),
            Image("sha256:p", ("registry.k8s.io/pause:3.9",), size=256 * KiB),
            Image("sha256:k", ("kept:1",), size=256 * KiB, pinned=True),
        ],
        sandbox_images={"sha256:p"},
        image_fs=[FilesystemUsage("/var/lib/containerd", None, None)],
        container_fs=[],
        layers={"c-run": (MiB, 10), "c-dead": (512 * KiB, 5), "c-kept": (256 * KiB, 2)},
    )


GONE = "0d1e5a7c-9c1b-4f5e-8a52-6b7c4d3e2f10"  # residue must be named like a pod UID


@needs_root
def test_images_layers_dead_logs_and_residue_on_their_filesystems(tmp_path: Path) -> None:
    """Each line on its filesystem, reclaimable as the gc commands free it (the container GC
    planner keeps the newer of the two dead `app` containers), and each command carrying the
    options that make it act on what df measured. The kubelet root is given as an absolute
    symlink, resolved under the host root."""
    host = tmp_path / "host"
    kubelet, logs, imagefs = host / "var/lib/kubelet", host / "var/log", host / "var/lib/containerd"
    with tmpfs(kubelet, logs, imagefs):
        (host / "k").symlink_to("/var/lib/kubelet")  # as the host sees it, not this process
        write(imagefs / "blobs", 3840 * KiB)  # what the images and layers above take
        empty = write(kubelet / "pods/uid1/volumes/kubernetes.io~empty-dir/v/f", 16 * KiB)
        orphan = write(kubelet / f"pods/{GONE}/volumes/kubernetes.io~empty-dir/v/f", 8 * KiB)
        dead = [
            write(logs / "pods/ns_a_uid1/app/0.log", 64 * KiB),
            write(logs / "pods/ns_a_uid1/app/0.log.20261129-010101.gz", 32 * KiB),
        ]
        kept = write(logs / "pods/ns_a_uid1/app/1.log", 8 * KiB)
        running = write(logs / "pods/ns_a_uid1/web/0.log", 16 * KiB)
        orphan_log = write(logs / f"pods/ns_gone_{GONE}/x/0.log", 4 * KiB)
        pods = pods_file(tmp_path / "pods.json", ("uid1", "a"))
        config = tmp_path / "kubelet config.yaml"
        config.write_text("kind: KubeletConfiguration\n")
        s = Settings(host_root=host, pods_file=pods, env={"HOME": "/"}, kubelet_config=config,
                     runtime_endpoint="unix:///run/containerd/containerd.sock")  # fmt: skip
        ticks: list[tuple[str, int, int]] = []
        report = disk_usage(
            s, QuietUi(), DfOptions(root_dir="/k", pod_logs_dir="/var/log/pods"),
            progress=lambda *t: ticks.append(t),
            reader=lambda _s, _ui, _logs, mounts: sized(runtime_view(), host, mounts),
        )  # fmt: skip
        common = (
            f"--host-root {host} -r unix:///run/containerd/containerd.sock "
            f"--kubelet-config '{config}'"
        )
        gc_containers = f"kubegc gc containers {common} --pods-file {pods}"
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
        assert i["images"]["command"] == f"kubegc gc images --prune-unused {common}"
        assert i["writable-layers"]["bytes"] == 1792 * KiB
        assert i["writable-layers.dead"]["bytes"] == 768 * KiB
        # gc containers removes c-dead and keeps c-kept, the newest of `app`'s dead containers
        assert i["writable-layers.dead"]["reclaimable"] == 512 * KiB
        assert i["writable-layers"]["reclaimable"] == 512 * KiB
        assert "1 kept" in i["writable-layers.dead"]["note"]
        assert "--match-kubelet" not in " ".join(doc["notes"])
        assert i["writable-layers"]["command"] == gc_containers
        assert i["other"]["bytes"] == 0 and img["used"] == used(imagefs)
        assert img["image_gc"]["high_threshold"] == 85 and img["image_gc"]["low_threshold"] == 80
        assert {r["signal"] for r in img["eviction"]} >= {"imagefs.available"}

        lg = lines(fs_with(doc, "logs"))
        assert lg["logs"]["bytes"] == allocated(*dead, kept, running)
        assert lg["logs.dead-containers"]["bytes"] == allocated(*dead, kept) == 104 * KiB
        # neither the running container's log nor the kept dead container's
        assert lg["logs"]["reclaimable"] == lg["logs.dead-containers"]["reclaimable"] == 96 * KiB
        assert lg["logs.dead-containers"]["command"] == gc_containers
        assert lg["logs"]["command"] == (
            f"kubegc gc all {common} --pods-file {pods} --pod-logs-dir /var/log/pods"
        )
        assert lg["residue"]["bytes"] == allocated(orphan_log)
        assert lg["residue"]["command"] == (
            f"kubegc residue clean {common} --pods-file {pods} --root-dir /k "
            "--pod-logs-dir /var/log/pods"
        )
        # every reclaimable line at once: `reclaim`, with the same options
        assert doc["reclaim_command"] == (
            f"kubegc reclaim {common} --pods-file {pods} --root-dir /k --pod-logs-dir /var/log/pods"
        )

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
        assert p["writable_layers"] == 1792 * KiB
        assert p["footprint"] == p["logs"] + p["empty_dir"] + 1792 * KiB
        assert GONE not in {q["uid"] for q in doc["pods"]}
        assert ("pod logs", 2, 2) in ticks and ("pod directories", 2, 2) in ticks

        out = io.StringIO()
        render_df(report, out=out)
        table = out.getvalue()
        assert "RECLAIM WITH" in table and "kubegc gc images --prune-unused" in table
        assert f"\n  {gc_containers}\n" in table  # in full once, below the tables
        one_run = table.index("Reclaim all of it in one run")
        assert table.index(f"\n  {doc['reclaim_command']}\n") > one_run  # named before the rest
        assert one_run < table.index("Reclaim with (")
        assert "imagefs + containerfs" in table and "█" in table


def test_unreachable_runtime_reports_the_host_and_exits_3(tmp_path: Path) -> None:
    host = tmp_path / "host"
    write(host / "var/log/pods/ns_a_uid1/app/0.log", 8 * KiB)
    (host / "var/lib/kubelet").mkdir(parents=True)
    code, out, err = df(host, "-o", "json")
    assert code == 3, err
    doc = json.loads(out)
    assert doc["exit_code"] == 3 and doc["runtime"]["error"]
    assert doc["runtime"]["endpoint"] == NO_RUNTIME[1]  # the endpoint tried
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


def test_bad_paths_kubelet_root_file_pod_log_root_file_and_host_symlinks(tmp_path: Path) -> None:
    """A kubelet root that is a regular file is the same error as a missing one (exit 3), and
    so is a --pod-logs-dir given that is one; the kubelet config's pod log root that is a
    regular file is no log root (a note, nothing counted as logs); absolute symlinks in both
    roots resolve under --host-root, not in this process's /."""
    write(tmp_path / "file-root", 4 * KiB)
    code, out, err = df(tmp_path, "--no-runtime", "--root-dir", "/file-root")
    assert code == 3 and "kubelet root /file-root" in err and "Not a directory" in err
    assert err.count("\n") == 1 and out == ""

    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    code, out, err = df(tmp_path, "--no-runtime", "--pod-logs-dir", "/file-root", "-o", "json")
    assert (code, out) == (3, "") and err.count("\n") == 1, err
    assert "pod log directory (--pod-logs-dir) /file-root" in err and "Not a directory" in err
    write(tmp_path / "var/log/pods", 4 * KiB)  # the kubelet config's (its default): a file
    code, out, err = df(tmp_path, "--no-runtime", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert "logs" not in lines(fs_with(doc, "nodefs"))
    assert all("logs" not in f["roles"] for f in doc["filesystems"])
    assert "no pod log directory at /var/log/pods: not a directory" in doc["notes"]

    host = tmp_path / "host"
    vol = host / "data/kubelet/pods/uid1/volumes/kubernetes.io~empty-dir/v"
    data = write(vol / "f", 16 * KiB)
    log = write(host / "data/logs/ns_a_uid1/app/0.log", 8 * KiB)
    (host / "var/lib").mkdir(parents=True)
    (host / "var/lib/kubelet").symlink_to("/data/kubelet")  # absolute: the host's /data
    (host / "var/log").mkdir()
    (host / "var/log/pods").symlink_to("/data/logs")
    code, out, err = df(host, "--no-runtime", "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    p = pod(doc, "uid1")
    assert p["empty_dir"] == allocated(vol, data)
    assert p["logs"] == allocated(log.parent.parent, log.parent, log)
    assert not [n for n in doc["notes"] if "no pod log" in n or "no pods dir" in n]


def test_unreadable_entries_are_counted_and_noted(tmp_path: Path) -> None:
    """A directory df may not read (mode 000, permissions enforced) and a file deeper than
    PATH_MAX: their bytes are in no line; how many could not be read and the first of them
    are in a note and in JSON `unreadable`."""
    host = tmp_path / "host"
    vol = host / "var/lib/kubelet/pods/uid1/volumes/kubernetes.io~empty-dir/v"
    seen = write(vol / "seen", 8 * KiB)
    write(vol / "locked/hidden", 64 * KiB)
    (vol / "locked").chmod(0)
    fd = os.open(vol, os.O_RDONLY)
    try:
        for _ in range(20):  # 20 × 251 characters: beyond PATH_MAX (4096)
            os.mkdir("d" * 250, dir_fd=fd)
            deeper = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = deeper
        deep = os.open("deep", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(deep, os.urandom(4 * KiB))
        os.close(deep)
    finally:
        os.close(fd)
    try:
        code, out, err = df(host, "--no-runtime", "-o", "json",
                            prefix=without_permission_override())  # fmt: skip
        assert code == 0, err
        doc = json.loads(out)
        u = doc["unreadable"]
        assert u["count"] == 2, u
        assert u["first"].startswith("/var/lib/kubelet/pods/uid1/volumes/"), u
        everything = sum(
            os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_blocks * 512
            for _, dirs, files, dir_fd in os.fwalk(vol)  # by descriptor: no PATH_MAX
            for name in [*dirs, *files]
        ) + allocated(vol)  # fmt: skip
        hidden = allocated(vol / "locked/hidden") + 4 * KiB  # and the deep file
        p = pod(doc, "uid1")
        assert allocated(seen) < p["empty_dir"] <= everything - hidden
        (note,) = [n for n in doc["notes"] if "could not be read" in n]
        assert note.startswith("2 entries") and u["first"] in note and "other" in note
        code, table, err = df(host, "--no-runtime", prefix=without_permission_override())
        assert code == 0 and "could not be read" in table
    finally:
        (vol / "locked").chmod(0o755)


def test_pod_source_without_the_runtime_claims_no_deleted_pod(tmp_path: Path) -> None:
    """--no-runtime with a pod source listing none of the node's pods: nothing counts as
    deleted or reclaimable, and a note says why. With the runtime read, that source is
    refused (exit 2), in words that fit a read-only command."""
    from kubegc_cli.core.errors import BadInput

    write(tmp_path / "var/log/pods/ns_a_uid1/app/0.log", 8 * KiB)
    write(tmp_path / "var/lib/kubelet/pods/uid1/etc-hosts", 4 * KiB)
    empty = pods_file(tmp_path / "empty.json")
    code, out, err = df(tmp_path, "--no-runtime", "--pods-file", str(empty), "-o", "json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["summary"]["reclaimable"] == 0 and doc["pod_source_checked"] is False
    assert not [ln for f in doc["filesystems"] for ln in f["lines"] if ln["command"]]
    assert pod(doc, "uid1")["deleted"] is False
    (note,) = [n for n in doc["notes"] if "not checked" in n]
    assert "--no-runtime" in note and "1 pod(s)" in note

    view = RuntimeView(
        endpoint="unix:///fake.sock", containers=[running_in("uid1", "a")],
        sandboxes=[sandbox("uid1", "a")], images=[], sandbox_images=set(), layers={},
        image_fs=[FilesystemUsage("/var/lib/kubelet", None, None)], container_fs=[],
    )  # fmt: skip
    s = Settings(host_root=tmp_path, pods_file=empty, env={"HOME": "/"})
    with pytest.raises(BadInput) as exc:
        disk_usage(s, QuietUi(), DfOptions(), reader=lambda *_: view)
    assert "lists none of the 1 pod(s)" in str(exc.value)
    assert "removed" not in str(exc.value) and "df needs" in str(exc.value)


def test_image_filesystem_not_under_the_host_root_is_exit_3(tmp_path: Path) -> None:
    """The runtime was read but the image filesystem it names is not under --host-root:
    images and writable layers are unknown, which is exit 3 as for an unreadable runtime."""
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    view = RuntimeView(
        endpoint="unix:///fake.sock", containers=[], sandboxes=[], images=[],
        sandbox_images=set(), layers={}, container_fs=[],
        image_fs=[FilesystemUsage("/var/lib/containerd", None, None)],
    )  # fmt: skip
    s = Settings(host_root=tmp_path, env={"HOME": "/"})
    report = disk_usage(s, QuietUi(), DfOptions(), reader=lambda *_: view)
    doc = report.to_dict()
    assert report.exit_code() == 3 and doc["exit_code"] == 3
    assert "/var/lib/containerd" in doc["runtime"]["images_unknown"]
    n = lines(fs_with(doc, "nodefs"))
    assert n["images"]["bytes"] is None and "not found" in n["images"]["note"]
    out = io.StringIO()
    render_df(report, out=out)
    assert "unknown (exit 3)" in out.getvalue()


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
    from kubegc_cli.node.diskusage import Walker

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


def test_df_yaml_is_the_json_document(tmp_path: Path) -> None:
    """`df -o yaml` writes the document `-o json` does, `exit_code` a plain number in both."""
    import yaml

    (tmp_path / "var/lib/kubelet/pods").mkdir(parents=True)
    (tmp_path / "var/log/pods").mkdir(parents=True)
    code, out, err = df(tmp_path, "--no-runtime", "-o", "yaml")
    assert code == 0 and "Traceback" not in err, err
    doc = yaml.safe_load(out)
    assert doc["exit_code"] == 0 and type(doc["exit_code"]) is int
    code, out, err = df(tmp_path, "-o", "yaml")  # the runtime is unreachable: exit 3
    assert code == 3 and "Traceback" not in err, err
    assert yaml.safe_load(out)["exit_code"] == 3
    _, as_json, _ = df(tmp_path, "--no-runtime", "-o", "json")
    assert doc.keys() == json.loads(as_json).keys()


@pytest.mark.parametrize(
    ("kubelet_version", "flag", "inodes_default"),
    [
        ("v1.29.3", None, False),  # before kubernetes#121834: no imagefs.inodesFree default
        ("v1.30.0", None, True),
        (None, None, True),  # no Node version: the newest kubelet kubegc knows
        ("v1.30.0", "v1.29.3", False),  # --kubelet-version wins over the Node
    ],
)
def test_eviction_defaults_follow_the_nodes_kubelet_version(
    tmp_path: Path, kubelet_version: str | None, flag: str | None, inodes_default: bool
) -> None:
    """df takes the kubelet version as `evict check` does (`kubelet_version`): the Node of
    the pod source, so its imagefs rows carry the defaults of that version. The runtime is
    the `runtime_view` stand-in (images on /var/lib/containerd)."""
    host = tmp_path / "host"
    (host / "var/lib/kubelet").mkdir(parents=True)
    (host / "var/lib/containerd").mkdir(parents=True)
    (host / "var/log/pods").mkdir(parents=True)
    node: dict[str, Any] = {"kind": "Node", "metadata": {"name": "node-1"}}
    if kubelet_version:
        node["status"] = {"nodeInfo": {"kubeletVersion": kubelet_version}}
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "List", "items": [
        node, {"kind": "Pod", "metadata": {"uid": "uid1", "name": "a", "namespace": "ns"}},
    ]}))  # fmt: skip
    s = Settings(host_root=host, pods_file=pods, env={"HOME": "/"}, node_name="node-1",
                 kubelet_version=flag, runtime_endpoint="unix:///fake.sock")  # fmt: skip
    report = disk_usage(s, QuietUi(), DfOptions(), reader=lambda *_: runtime_view())
    signals = {r["signal"] for f in report.to_dict()["filesystems"] for r in f["eviction"]}
    assert "imagefs.available" in signals, signals
    assert ("imagefs.inodesFree" in signals) is inodes_default, signals


def test_dead_layers_reported_as_0_bytes_are_said_to_be_maybe_not_measured() -> None:
    """containerd reports a writable layer as 0 until it has measured it (every 10 s after a
    container exits): df's dead-layers line says so, and its table shows that note without
    -v, also beside older dead containers whose layers were measured."""
    from types import SimpleNamespace

    from kubegc_cli.commands.df import LAYERS_DEAD, _layer_lines

    dead = [ctr(f"d{i}", ContainerState.EXITED, "app", "sha256:a", f"/l/{i}.log", i)
            for i in range(3)]  # fmt: skip
    pods: dict[str, Any] = {}
    w = SimpleNamespace(pod=lambda uid: pods.setdefault(uid, SimpleNamespace(writable_layers=None)))
    for layers, said in (({c.id: (0, 0) for c in dead}, True), ({c.id: (4096, 1) for c in dead},
                                                                False)):  # fmt: skip
        rt = SimpleNamespace(containers=dead, layers=layers)
        [line] = [ln for ln in _layer_lines(rt, w, frozenset(), "") if ln.key == LAYERS_DEAD]
        assert ("3 report 0 bytes: the runtime may not have measured them yet" in line.note) is said
        assert line.note_shown is said  # shown without -v, whatever the line adds up to
