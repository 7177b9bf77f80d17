"""Tests of the local CRI node harness itself, against a real containerd (no kubelet)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kubegc_cli.node.cri.v1 import api_pb2
from tests.node.localnode import (
    ANNOTATION_RESTART_COUNT,
    BUSYBOX_IMAGE,
    LABEL_CONTAINER_NAME,
    LABEL_POD_NAME,
    LABEL_POD_NAMESPACE,
    LABEL_POD_UID,
    PAUSE_IMAGE,
    TEST_LOG_LINE,
    LocalNode,
    _cgroup_mount_points,
    _cmdline,
    _legacy_symlink_name,
    _mounts_under,
    containerd_version,
)

REPO = Path(__file__).resolve().parents[2]


def _alive_pids_naming(text: str) -> list[int]:
    """Live processes whose command line mentions ``text`` (zombies have an empty one)."""
    return [
        int(entry.name)
        for entry in Path("/proc").iterdir()
        if entry.name.isdigit() and any(text in arg for arg in _cmdline(int(entry.name)))
    ]


def test_runtime_reports_cri_v1(node: LocalNode) -> None:
    version = node.runtime.Version(api_pb2.VersionRequest(version="v1"))
    assert version.runtime_api_version == "v1"
    assert version.runtime_name == "containerd"


def test_base_images_are_visible_through_cri(node: LocalNode) -> None:
    tags = {tag for image in node.list_images() for tag in image.repo_tags}
    assert {PAUSE_IMAGE, BUSYBOX_IMAGE} <= tags


def test_exited_container_has_exit_code_and_log_file(node: LocalNode, ns: str) -> None:
    pod = node.run_pod("web", ns)
    container_id = node.add_container(pod, "app", attempt=2, exit_code=7)

    status = node.container_status(container_id)
    assert status.state == api_pb2.CONTAINER_EXITED
    assert status.exit_code == 7
    log = node.pod_logs_dir / f"{ns}_web_{pod.uid}" / "app" / "2.log"
    assert pod.log_directory == log.parents[1]
    assert status.log_path == str(log)
    assert f"stdout F {TEST_LOG_LINE}" in log.read_text()
    link = node.container_logs_dir / f"web_{ns}_app-{container_id}.log"
    assert link.is_symlink()
    assert Path(os.readlink(link)) == log


def test_running_container_is_running(node: LocalNode, ns: str) -> None:
    pod = node.run_pod("web", ns)
    container_id = node.add_container(pod, "app", state="running")

    assert node.container_status(container_id).state == api_pb2.CONTAINER_RUNNING
    assert node.container_ids(namespace=ns, state=api_pb2.CONTAINER_RUNNING) == {container_id}


def test_created_container_never_starts(node: LocalNode, ns: str) -> None:
    pod = node.run_pod("web", ns)
    container_id = node.add_container(pod, "app", state="created", symlink=False)

    status = node.container_status(container_id)
    assert status.state == api_pb2.CONTAINER_CREATED
    assert status.started_at == 0
    assert not list(node.container_logs_dir.glob(f"*{container_id}*"))


def test_labels_and_annotations_come_back_as_set(node: LocalNode, ns: str) -> None:
    pod = node.run_pod("api-6d5f7c9b8-q4wzx", ns, uid="0b7e6c1a-1111-4222-8333-444455556666")
    container_id = node.add_container(pod, "server", attempt=3)

    (container,) = node.list_containers(pod=pod)
    assert container.id == container_id
    assert container.metadata.name == "server"
    assert container.metadata.attempt == 3
    assert dict(container.labels) == {
        LABEL_CONTAINER_NAME: "server",
        LABEL_POD_NAME: "api-6d5f7c9b8-q4wzx",
        LABEL_POD_NAMESPACE: ns,
        LABEL_POD_UID: "0b7e6c1a-1111-4222-8333-444455556666",
    }
    assert container.annotations[ANNOTATION_RESTART_COUNT] == "3"
    sandboxes = node.runtime.ListPodSandbox(
        api_pb2.ListPodSandboxRequest(filter=api_pb2.PodSandboxFilter(id=pod.sandbox_id))
    ).items
    assert [s.metadata.uid for s in sandboxes] == ["0b7e6c1a-1111-4222-8333-444455556666"]
    assert dict(sandboxes[0].labels) == {
        LABEL_POD_NAME: "api-6d5f7c9b8-q4wzx",
        LABEL_POD_NAMESPACE: ns,
        LABEL_POD_UID: "0b7e6c1a-1111-4222-8333-444455556666",
    }


def test_stopped_sandbox_keeps_its_exited_containers(node: LocalNode, ns: str) -> None:
    pod = node.run_pod("web", ns)
    exited = node.add_container(pod, "app")
    running = node.add_container(pod, "sidecar", state="running")

    node.stop_pod(pod)

    status = node.runtime.PodSandboxStatus(
        api_pb2.PodSandboxStatusRequest(pod_sandbox_id=pod.sandbox_id)
    ).status
    assert status.state == api_pb2.SANDBOX_NOTREADY
    assert node.container_ids(pod=pod) == {exited, running}
    assert node.container_ids(pod=pod, state=api_pb2.CONTAINER_EXITED) == {exited, running}


def test_remove_namespace_removes_pods_and_logs(node: LocalNode) -> None:
    pod = node.run_pod("web", "doomed")
    node.add_container(pod, "app")

    node.remove_namespace("doomed")

    assert node.container_ids(namespace="doomed") == set()
    assert not pod.log_directory.exists()
    assert not list(node.container_logs_dir.glob("web_doomed_*"))


def test_import_image_gives_distinct_ids_and_size(node: LocalNode) -> None:
    big = node.import_image("example.com/kubegc/big:1", pad_bytes=4 * 1024 * 1024)
    other = node.import_image("example.com/kubegc/other:1")
    same_a = node.import_image("example.com/kubegc/twin:a", seed="twin")
    same_b = node.import_image("example.com/kubegc/twin:b", seed="twin")

    assert len({big, other, same_a}) == 3
    assert same_a == same_b
    images = {image.id: image for image in node.list_images()}
    assert images[big].size >= 4 * 1024 * 1024
    assert set(images[same_a].repo_tags) == {
        "example.com/kubegc/twin:a",
        "example.com/kubegc/twin:b",
    }


def test_legacy_symlink_name_is_cut_like_the_kubelet() -> None:
    name = _legacy_symlink_name("p" * 200, "ns", "c" * 60, "f" * 64)
    assert len(name) == 255
    assert name.endswith(".log")
    assert name.startswith("p" * 200 + "_ns_")


def test_stop_leaves_nothing_behind(tmp_path: Path) -> None:
    local = LocalNode(tmp_path / "teardown")
    local.start()
    pod = local.run_pod("web", "teardown")
    local.add_container(pod, "app", state="running")
    local.add_container(pod, "job")
    local.add_container(pod, "later", state="created")
    assert local.pid is not None and _alive_pids_naming(str(local.workdir))
    assert _mounts_under(local.workdir)

    local.stop()

    assert _alive_pids_naming(str(local.workdir)) == []
    assert _mounts_under(local.workdir) == []
    assert not local.workdir.exists()
    for mount_point in _cgroup_mount_points():
        assert not (mount_point / local.cgroup_parent.strip("/")).exists()
    local.stop()  # idempotent


def test_command_line_up_env_down(tmp_path: Path) -> None:
    workdir = tmp_path / "cli"
    pods_file = tmp_path / "pods.json"

    def cli(*args: str) -> str:
        return subprocess.run(
            [sys.executable, "-m", "tests.node.localnode", *args],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout

    cli("up", str(workdir), "--populate", "--pods-file", str(pods_file))
    try:
        described = json.loads((workdir / "node.json").read_text())
        assert cli("env", str(workdir)).strip() == (
            f"export CONTAINER_RUNTIME_ENDPOINT=unix://{workdir}/containerd.sock"
        )
        attached = LocalNode.attach(workdir)
        assert attached.running()
        assert attached.pid == described["pid"]
        pods = json.loads(pods_file.read_text())
        assert pods["kind"] == "List"
        listed = {(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods["items"]}
        assert len(listed) == 4
        assert all(name != "gone-pod" for _ns, name in listed)
        containers = attached.list_containers()
        dead = [c for c in containers if c.state != api_pb2.CONTAINER_RUNNING]
        assert len(dead) >= 20
        uids = {p["metadata"]["uid"] for p in pods["items"]}
        gone = {c.labels[LABEL_POD_UID] for c in containers} - uids
        assert len(gone) == 1
    finally:
        cli("down", str(workdir))
    assert not workdir.exists()
    assert _alive_pids_naming(str(workdir)) == []
    assert _mounts_under(workdir) == []


@pytest.mark.parametrize("state", ["bogus"])
def test_add_container_rejects_unknown_state(node: LocalNode, ns: str, state: str) -> None:
    pod = node.run_pod("web", ns)
    with pytest.raises(ValueError, match="unknown container state"):
        node.add_container(pod, "app", state=state)  # type: ignore[arg-type]


def test_runtime_reports_its_sandbox_image(node: LocalNode) -> None:
    """containerd 1.6's verbose Status names the sandbox image kubegc must protect. containerd
    2.x's does not: it pins the sandbox image instead (ListImages `pinned`), which kubegc keeps
    as pinned."""
    from kubegc_cli.node.cri.client import CriClient
    from kubegc_cli.node.cri.endpoint import Endpoint
    from kubegc_cli.node.sandboximages import sandbox_image_from_info

    with CriClient(Endpoint(str(node.socket), "test")) as client:
        named = sandbox_image_from_info(client.status_info())
        pinned = {t for i in client.list_images() if i.pinned for t in i.repo_tags}
        if containerd_version() >= (2, 0):
            assert named is None and "registry.k8s.io/pause:3.9" in pinned
        else:
            assert named == "registry.k8s.io/pause:3.9"
        (fs,), _ = client.image_fs_info()
    from kubegc_cli.node.host.fs import fs_stats

    stats = fs_stats(Path("/"), fs.mountpoint)
    assert stats.capacity > 0 and 0 <= stats.available <= stats.capacity


def test_image_status_and_removal_through_kubegc_client(node: LocalNode) -> None:
    """The client's ImageStatus/RemoveImage wire format against containerd."""
    from kubegc_cli.node.cri.client import CriClient
    from kubegc_cli.node.cri.endpoint import Endpoint

    image_id = node.import_image("docker.io/library/kubegc-rm-test:1", pad_bytes=1024, seed="rm")
    with CriClient(Endpoint(str(node.socket), "test")) as client:
        assert client.image_exists(image_id)
        assert client.remove_image(image_id) is True
        assert not client.image_exists(image_id)
