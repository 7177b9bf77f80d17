"""`kubegc gc images` end to end against a real containerd (a node of its own)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.node.localnode import LocalNode
from tests.node.test_gc_containers import kubegc


def test_gc_images_remembers_first_detection_and_protects_what_is_needed(tmp_path: Path) -> None:
    with LocalNode(tmp_path / "node") as node:
        a = node.import_image("docker.io/library/unused-a:1", pad_bytes=2048, seed="a")
        b = node.import_image("docker.io/library/unused-b:1", pad_bytes=4096, seed="b")
        p = node.run_pod("p", namespace="ns1")
        node.add_container(p, "app")  # exited: its busybox image is still in use

        first = kubegc(node, tmp_path, "gc", "images", "--prune-unused", "--dry-run",
                       "-o", "json")  # fmt: skip
        assert first.returncode == 0, first.stderr
        doc = json.loads(first.stdout)
        assert doc["kind"] == "ImageGCPlan" and doc["actions"] == []
        kept = {k["id"]: k["rule"] for k in doc["kept"]}
        assert kept[a] == kept[b] == "min-age"  # first seen now: MinAge (2m) protects them
        by_tag = {t: k["rule"] for k in doc["kept"] for t in k["repo_tags"]}
        assert by_tag["docker.io/library/busybox:kubegc-test"] == "in-use"
        assert by_tag["registry.k8s.io/pause:3.9"] == "protected"
        assert doc["policy"]["sandbox_image"] == "registry.k8s.io/pause:3.9"

        go = kubegc(node, tmp_path, "gc", "images", "--prune-unused",
                    "--minimum-image-ttl-duration", "0s", "--yes", "-o", "json")  # fmt: skip
        assert go.returncode == 0, go.stderr
        result = json.loads(go.stdout)
        assert {x["id"]: x["result"] for x in result["actions"]} == {a: "removed", b: "removed"}
        left = {i.id for i in node.list_images()}
        assert a not in left and b not in left
        assert any("busybox:kubegc-test" in t for i in node.list_images() for t in i.repo_tags)

        import sqlite3

        again = kubegc(node, tmp_path, "gc", "images", "--dry-run", "-o", "json")
        assert again.returncode == 0, again.stderr
        con = sqlite3.connect(tmp_path / "state" / "state.db")
        remembered = {r[0] for r in con.execute("SELECT id FROM images")}
        con.close()
        assert a not in remembered and b not in remembered  # records of gone images dropped
        assert remembered == {i.id for i in node.list_images()}


def test_gc_images_bad_thresholds_are_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "-r", "unix:///nonexistent.sock", "gc", "images",
         "--image-gc-high-threshold", "80", "--image-gc-low-threshold", "90"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2 and "must be less than" in res.stderr
    assert res.stderr.count("\n") == 1


def test_assume_detected_at_and_pod_infra_image(tmp_path: Path) -> None:
    """An operator who knows the images are old lifts first-run MinAge protection with
    --assume-detected-at; --pod-infra-container-image protects one more sandbox image."""
    with LocalNode(tmp_path / "node") as node:
        a = node.import_image("docker.io/library/unused-a:1", pad_bytes=2048, seed="a")
        b = node.import_image("docker.io/library/unused-b:1", pad_bytes=4096, seed="b")
        res = kubegc(node, tmp_path, "gc", "images", "--prune-unused", "--yes", "-o", "json",
                     "--assume-detected-at", "2020-01-01T00:00:00Z",
                     "--pod-infra-container-image", "docker.io/library/unused-a:1")  # fmt: skip
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        removed = {x["id"]: x["result"] for x in doc["actions"]}
        assert removed[b] == "removed" and a not in removed  # (the unused busybox goes too)
        kept = {k["id"]: k for k in doc["kept"]}
        assert kept[a]["rule"] == "protected"
        assert kept[a]["first_detected"] == "2020-01-01T00:00:00Z"
        assert {i.id for i in node.list_images()} >= {a}


MiB = 1 << 20


def _plan(node: LocalNode, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    res = kubegc(node, tmp_path, "gc", "images", "-o", "json", *args)
    assert res.stdout, res.stderr
    return res.returncode, json.loads(res.stdout), res.stderr


def test_disk_pressure_on_a_small_imagefs(tmp_path: Path) -> None:
    """A 128 MiB tmpfs as the containerd root: above the high threshold the never-used images
    go first (by first detection), the image last used stays, usage falls below low; a target
    the eligible images cannot reach is exit 1 with the kubelet's "wanted to free" report."""
    with LocalNode(tmp_path / "node", imagefs_bytes=128 * MiB) as node:
        used = node.import_image("docker.io/library/used-once:1", pad_bytes=12 * MiB, seed="u1")
        pod = node.run_pod("p", namespace="ns1")
        node.add_container(pod, "app", image="docker.io/library/used-once:1")
        code, first, err = _plan(node, tmp_path, "--dry-run")  # `used` seen in use; busybox not
        assert code == 0, err
        assert {k["id"]: k["rule"] for k in first["kept"]}[used] == "in-use"
        node.remove_namespace("ns1")
        older = node.import_image("docker.io/library/never-b:1", pad_bytes=12 * MiB, seed="u3")
        assert _plan(node, tmp_path, "--dry-run")[0] == 0  # `older` first detected now
        newer = node.import_image("docker.io/library/never-a:1", pad_bytes=12 * MiB, seed="u2")

        code, doc, err = _plan(node, tmp_path, "--dry-run", "--minimum-image-ttl-duration", "0s")
        assert code == 0, err
        fs = doc["filesystem"]
        cap, avail, pct = fs["capacity"], fs["available"], fs["usage_percent"]
        assert cap == 128 * MiB and pct == 100 - avail * 100 // cap
        sizes = {k["id"]: k["size"] for k in doc["kept"]}
        busybox = next(k["id"] for k in doc["kept"] if any("busybox" in t for t in k["repo_tags"]))
        # The kubelet's order: never used (busybox, then `older`, then `newer` by first
        # detection), then by last use (`used`). Pick low so the walk must take exactly three.
        two, three = sizes[busybox] + sizes[older], sizes[busybox] + sizes[older] + sizes[newer]
        low = next(
            lo for lo in range(pct - 1, -1, -1) if two < cap * (100 - lo) // 100 - avail <= three
        )
        target = cap * (100 - low) // 100 - avail

        code, done, err = _plan(node, tmp_path, "--yes", "--minimum-image-ttl-duration", "0s",
                                "--image-gc-high-threshold", str(pct),
                                "--image-gc-low-threshold", str(low))  # fmt: skip
        assert code == 0, err
        assert [a["id"] for a in done["actions"]] == [busybox, older, newer]
        assert {a["result"] for a in done["actions"]} == {"removed"}
        assert done["filesystem"]["bytes_to_free"] == target
        kept = {k["id"]: k["rule"] for k in done["kept"]}
        assert kept[used] == "not-needed"  # eligible, but the target was passed before it
        left = {i.id for i in node.list_images()}
        assert left.isdisjoint({busybox, older, newer}) and used in left
        after = done["filesystem"]["available_after"]
        assert done["filesystem"]["regained"] == after - avail >= target
        assert 100 - after * 100 // cap < low  # usage fell below the low threshold

        code, short, err = _plan(node, tmp_path, "--yes", "--minimum-image-ttl-duration", "0s",
                                 "--image-gc-high-threshold", "1",
                                 "--image-gc-low-threshold", "0")  # fmt: skip
        assert code == 1, err
        assert [a["id"] for a in short["actions"]] == [used]
        assert short["summary"]["shortfall"] > 0
        assert "wanted to free" in " ".join(short["notes"])
        assert "could not free enough" in err and err.count("\n") == 1
        assert {i.id for i in node.list_images()} == {
            k["id"] for k in short["kept"] if k["rule"] == "protected"
        }
