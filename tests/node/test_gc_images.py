"""`kubegc gc images` end to end against a real containerd (a node of its own)."""

from __future__ import annotations

import json
from pathlib import Path

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
