"""`kubegc df` against a real containerd: images and writable layers come from CRI, land on the
image filesystem, and every filesystem's lines add up to its used bytes."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

from kubegc_cli.node.cri.v1 import api_pb2
from tests.node.localnode import LocalNode
from tests.unit.test_df import assert_adds_up, lines, pods_file, used
from tests.unit.test_df import fs_with as by_role

KiB = 1 << 10
MiB = 1 << 20
WRITE_BUSYBOX = "echo kubegc-df-log; cat /bin/busybox > /fill"


def layer_bytes(node: LocalNode, ids: list[str]) -> dict[str, int]:
    """Writable layer bytes by container ID, as CRI ListContainerStats reports them now."""
    reply = node.runtime.ListContainerStats(api_pb2.ListContainerStatsRequest(), timeout=30)
    return {
        st.attributes.id: st.writable_layer.used_bytes.value
        for st in reply.stats
        if st.attributes.id in ids
    }


def test_images_and_writable_layers_appear_and_numbers_add_up(tmp_path: Path) -> None:
    """Three filesystems, each a tmpfs: the kubelet root (nodefs), containerd's root (imagefs,
    holding images and writable layers) and /var/log. A running and an exited container each
    wrote a copy of busybox into their writable layer, and the exited one ran again (attempt
    1); one imported image is used by no container. Images and layers are on imagefs and match
    CRI; reclaimable is what the gc commands free: the unused image, and the older exited
    container's layer and log (`gc containers` keeps the newer one) — the command df names,
    run with --dry-run, plans exactly that container; each filesystem's lines add up to used,
    and on nodefs and the log filesystem `other` is exactly 0 (nothing else lives there)."""
    kubelet = tmp_path / "kubelet"
    kubelet.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(kubelet)], check=True)
    node = LocalNode(tmp_path / "node", imagefs_bytes=160 * MiB)
    logs = node.workdir / "var/log"
    logs.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m", "tmpfs", str(logs)], check=True)
    try:
        with node:
            filler = node.import_image("docker.io/library/filler:1", pad_bytes=4 * MiB, seed="df")
            pod = node.run_pod("web", namespace="df")
            running = node.add_container(
                pod, "app", state="running", symlink=False,
                command=["/bin/sh", "-c", f"{WRITE_BUSYBOX}; exec sleep 3600"],
            )  # fmt: skip
            exited = node.add_container(
                pod, "job", symlink=False,
                command=["/bin/sh", "-c", f"{WRITE_BUSYBOX}; cat /bin/busybox >> /fill; exit 3"],
            )  # fmt: skip
            again = node.add_container(pod, "job", attempt=1, symlink=False)
            busybox = Path("/bin/busybox").stat().st_size
            deadline = time.monotonic() + 40  # containerd refreshes snapshot usage every 10 s
            layers = layer_bytes(node, [running, exited])
            while time.monotonic() < deadline and not (
                layers.get(running, 0) >= busybox and layers.get(exited, 0) >= 2 * busybox
            ):
                time.sleep(1)
                layers = layer_bytes(node, [running, exited])
            assert layers[running] >= busybox and layers[exited] >= 2 * busybox, layers
            volume = kubelet / f"pods/{pod.uid}/volumes/kubernetes.io~empty-dir/cache"
            volume.mkdir(parents=True)
            (volume / "f").write_bytes(os.urandom(256 * KiB))
            pods = pods_file(tmp_path / "pods.json", (pod.uid, "web"))

            res = subprocess.run(
                [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
                 "--kubelet-config", str(node.kubelet_config), "--pods-file", str(pods),
                 "df", "--root-dir", str(kubelet), "-o", "json"],
                capture_output=True, text=True, timeout=120,
                env={"PATH": os.environ["PATH"], "HOME": "/"},
            )  # fmt: skip
            assert res.returncode == 0, res.stderr
            doc = json.loads(res.stdout)
            after = layer_bytes(node, [running, exited])
            layers[again] = layer_bytes(node, [again]).get(again, 0)
            images = node.list_images()

            img = by_role(doc, "imagefs")
            assert img["roles"] == ["imagefs", "containerfs"]
            assert Path(doc["paths"]["imagefs"]).is_relative_to(node.root)
            i = lines(img)
            assert i["images"]["count"] == len(images) == 3  # pause, busybox, filler
            assert i["images"]["bytes"] == sum(im.size for im in images)
            (size,) = [im.size for im in images if im.id == filler]
            assert i["images"]["reclaimable"] == size  # not the sandbox image, not busybox
            assert i["images.in-use"]["count"] == 1
            if after == {k: layers[k] for k in after}:  # containerd did not refresh meanwhile
                assert i["writable-layers"]["bytes"] == sum(layers.values())
                assert i["writable-layers.dead"]["reclaimable"] == layers[exited]
            assert i["writable-layers.dead"]["count"] == 2
            assert "1 kept" in i["writable-layers.dead"]["note"]
            command = i["writable-layers.dead"]["command"]
            assert f"-r {node.endpoint}" in command and f"--pods-file {pods}" in command
            plan = subprocess.run(
                [sys.executable, "-m", "kubegc_cli", *shlex.split(command)[1:], "--dry-run",
                 "-o", "json"],
                capture_output=True, text=True, timeout=120,
                env={"PATH": os.environ["PATH"], "HOME": "/"},
            )  # fmt: skip
            assert plan.returncode == 0, plan.stderr
            assert [a["id"] for a in json.loads(plan.stdout)["actions"]] == [exited]
            assert i["writable-layers.running"]["bytes"] >= busybox
            assert i["writable-layers.dead"]["bytes"] >= 2 * busybox
            assert_adds_up(img)
            assert i["other"]["bytes"] >= 0
            # containerd may write meanwhile
            assert abs(img["used"] - used(node.root)) <= 256 * KiB
            assert {r["signal"] for r in img["eviction"]} >= {"imagefs.available"}
            assert img["image_gc"]["usage_percent"] is not None

            nodefs = by_role(doc, "nodefs")
            n = lines(nodefs)
            assert "images" not in n and n["empty-dir"]["bytes"] == 256 * KiB
            assert_adds_up(nodefs)
            assert n["other"]["bytes"] == 0
            assert nodefs["used"] == used(kubelet)

            logfs = by_role(doc, "logs")
            lg = lines(logfs)
            job_log = pod.log_directory / "job/0.log"
            kept_log = pod.log_directory / "job/1.log"
            app_log = pod.log_directory / "app/0.log"
            dead_logs = job_log.stat().st_blocks + kept_log.stat().st_blocks
            assert lg["logs.dead-containers"]["bytes"] == dead_logs * 512
            assert lg["logs.dead-containers"]["reclaimable"] == job_log.stat().st_blocks * 512 > 0
            assert lg["logs"]["bytes"] == (dead_logs + app_log.stat().st_blocks) * 512
            assert_adds_up(logfs)
            assert lg["other"]["bytes"] == 0 and logfs["used"] == used(logs)

            (p,) = doc["pods"]
            assert p["uid"] == pod.uid and p["writable_layers"] >= 3 * busybox
            assert p["footprint"] == p["logs"] + p["empty_dir"] + p["writable_layers"]
            assert doc["summary"]["reclaimable"] >= size + 2 * busybox

            table = subprocess.run(
                [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint, "--pods-file",
                 str(pods), "df", "--root-dir", str(kubelet),
                 "--pod-logs-dir", str(node.pod_logs_dir)],
                capture_output=True, text=True, timeout=120,
                env={"PATH": os.environ["PATH"], "HOME": "/"},
            )  # fmt: skip
            assert table.returncode == 0, table.stderr
            assert "writable layers" in table.stdout and "kubegc gc containers" in table.stdout
    finally:
        subprocess.run(["umount", "-l", str(logs)], check=False, capture_output=True)
        subprocess.run(["umount", "-l", str(kubelet)], check=True)
