"""`kubegc reclaim` end to end against a real containerd (a node of its own: the run removes
every unused image on it).

A messy node: dead containers (the older of two attempts of a live pod; those of a deleted
pod), the deleted pod's NOTREADY sandbox and its log directory, an unused image, and an
orphaned pod directory under a fixture kubelet root (`--root-dir`; `--residue-kind
orphaned-pod-dir`, so that the run never touches this machine's own namespaces or cgroups).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.units import format_bytes
from tests.node.localnode import LocalNode
from tests.node.test_gc_containers import kubegc, write_pods_file
from tests.node.test_residue import orphan_dir
from tests.tmuxpane import run_in_pane

KINDS = ("container", "sandbox", "pod-log-dir", "finding", "image")


def _doc(res: Any) -> dict[str, Any]:
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    assert doc["kind"] == "ReclaimPlan"
    return doc


def _disk_rows(table: str) -> list[list[str]]:
    """The rows under the table's FILESYSTEM header, split on runs of spaces."""
    lines = table.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("FILESYSTEM "))
    rows = []
    for ln in lines[start + 1 :]:
        if not ln.strip() or not re.match(r"^[a-z,]+\s", ln):
            break
        rows.append(ln.split())
    return rows


def test_reclaim_plans_every_kind_acts_and_measures_the_disk(tmp_path: Path) -> None:
    with LocalNode(tmp_path / "node") as node:
        unused = node.import_image("docker.io/library/reclaim-unused:1", pad_bytes=65536, seed="r")
        live = node.run_pod("live", namespace="ns1")
        older = node.add_container(live, "job", attempt=0)
        newest = node.add_container(live, "job", attempt=1)
        running = node.add_container(live, "app", state="running")
        gone = node.run_pod("gone", namespace="ns1")
        gone_ctr = node.add_container(gone, "work")
        node.stop_pod(gone)  # NOTREADY; the pods file does not list it: deleted
        gone_logs = node.pod_logs_dir / f"ns1_gone_{gone.uid}"
        (gone_logs / "work").mkdir(parents=True, exist_ok=True)
        (gone_logs / "work" / "9.log").write_bytes(b"x" * 262144)
        root = tmp_path / "kubelet"
        orphan = orphan_dir(root)
        pods = write_pods_file(tmp_path / "pods.json", live)
        opts = ("--pods-file", str(pods), "reclaim", "--root-dir", str(root), "--residue-kind",
                "orphaned-pod-dir", "--minimum-image-ttl-duration", "0s")  # fmt: skip

        began = time.monotonic()
        dry = _doc(kubegc(node, tmp_path, *opts, "--dry-run", "-o", "json"))
        dry_seconds = time.monotonic() - began
        by_id = {a["id"]: a for a in dry["actions"]}
        assert [a["kind"] for a in dry["actions"]] == sorted(
            (a["kind"] for a in dry["actions"]), key=KINDS.index
        )  # the kubelet's order: containers, sandboxes, logs, residue, images
        assert {k for k in KINDS if any(a["kind"] == k for a in dry["actions"])} == set(KINDS)
        assert by_id[older]["rule"] == "max-per-pod-container"
        assert by_id[gone_ctr]["rule"] == "deleted-pod"
        assert by_id[gone.sandbox_id]["kind"] == "sandbox"
        assert by_id[str(gone_logs)]["bytes"] >= 262144
        assert by_id[str(orphan)]["type"] == "orphaned-pod-dir"
        assert by_id[unused]["kind"] == "image"
        assert newest not in by_id and running not in by_id
        assert all(f["available_after"] is None for f in dry["filesystems"])

        table = kubegc(node, tmp_path, *opts, "--dry-run")
        assert table.returncode == 0, table.stderr
        for a in dry["actions"]:
            kind = a.get("type", a["kind"])
            assert any(ln.startswith(kind + " ") for ln in table.stdout.splitlines()), kind
        for k in dry["by_kind"]:  # the table's totals are the JSON's
            if k["count"]:
                assert f"{k['kind']} {k['count']} {format_bytes(k['bytes'])} 0" in " ".join(
                    table.stdout.split()
                ), k
        total = dry["summary"]["bytes_planned"]
        assert (
            f"{len(dry['actions'])} object(s) to remove, about {format_bytes(total)} expected"
            in (table.stdout)
        )
        fs_rows = _disk_rows(table.stdout)
        assert [r[1] for r in fs_rows] == [format_bytes(f["capacity"]) for f in dry["filesystems"]]

        # a target no reclaim can meet: planned whole, and what is in the way said
        far = _doc(kubegc(node, tmp_path, *opts, "--dry-run", "--until", "nodefs.available>99%",
                          "-o", "json"))  # fmt: skip
        assert far["target"]["met"] is False and far["summary"]["by_result"]["held-back"] == 0
        assert any(n.startswith("nodefs.available>99% cannot be met: ") for n in far["notes"])
        if far["target"]["path"] == next(f["path"] for f in far["filesystems"]
                                         if "imagefs" in f["roles"]):  # fmt: skip
            assert far["target"]["in_the_way"]["running containers' writable layers"] >= 0

        # --bytes 1: the cheapest to lose, what the deleted pod left (its dead container,
        # sandbox and log directory, together); the rest held back
        small = _doc(kubegc(node, tmp_path, *opts, "--bytes", "1", "--yes", "-o", "json"))
        done = {a["id"] for a in small["actions"] if a["result"] == "removed"}
        assert done == {str(gone_logs), gone_ctr, gone.sandbox_id}
        assert {a["result"] for a in small["actions"] if a["id"] not in done} == {"held-back"}
        assert not gone_logs.exists() and orphan.exists()
        for f in small["filesystems"]:
            assert isinstance(f["available_after"], int) and f["regained"] >= 0
        # the dry run names the filesystems the act measures, containerfs among them
        roles = [sorted(f["roles"]) for f in small["filesystems"]]
        assert roles == [sorted(f["roles"]) for f in dry["filesystems"]]
        assert any("containerfs" in r for r in roles), roles

        rest = kubegc(node, tmp_path, *opts, "--yes")
        assert rest.returncode == 0, rest.stderr
        results = {ln.split()[0] for ln in rest.stdout.splitlines() if ln.endswith(" removed")}
        assert results == {"container", "orphaned-pod-dir", "image"}
        after_rows = _disk_rows(rest.stdout)
        assert after_rows and all(r[3] != "-" and r[4] != "-" for r in after_rows)
        assert not orphan.exists()
        assert unused not in {i.id for i in node.list_images()}
        left = node.container_ids(namespace="ns1")
        assert older not in left and gone_ctr not in left and {newest, running} <= left
        assert gone.sandbox_id not in node.list_sandboxes()

        history = kubegc(node, tmp_path, "history", "-o", "json")
        assert history.returncode == 0, history.stderr
        runs = [r["command"] for r in json.loads(history.stdout)["items"]]
        assert runs.count("reclaim") == 2
        print(f"reclaim --dry-run on the test node: {dry_seconds:.2f} s")


@pytest.mark.parametrize(("width", "height"), [(80, 24), (160, 45)])
def test_the_table_in_a_terminal_cuts_no_number_or_id(
    node: LocalNode, ns: str, tmp_path: Path, width: int, height: int
) -> None:
    """In a real terminal (tmux) of 80x24 and 160x45, every byte figure, count and ID of the
    plan is shown whole, and nothing is cut with an ellipsis."""
    live = node.run_pod("live", namespace=ns)
    node.add_container(live, "a-container-with-a-rather-long-name", attempt=0)
    node.add_container(live, "a-container-with-a-rather-long-name", attempt=1)
    gone = node.run_pod("a-deleted-pod-with-a-long-name", namespace=ns)
    node.add_container(gone, "work")
    node.stop_pod(gone)
    root = tmp_path / "kubelet"
    orphan_dir(root)
    pods = write_pods_file(tmp_path / "pods.json", live)
    base = [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint, "--kubelet-config",
            str(node.kubelet_config), "--state-dir", str(tmp_path / "state"), "--pods-file",
            str(pods), "reclaim", "--root-dir", str(root), "--residue-kind", "orphaned-pod-dir",
            "--dry-run"]  # fmt: skip
    doc = _doc(subprocess.run([*base, "-o", "json"], capture_output=True, text=True, timeout=120))
    code, screen = run_in_pane(base, width, height)
    assert code == 0, screen
    Path(os.environ.get("KUBEGC_SCREEN_OUT", os.devnull)).write_text(screen)
    assert "…" not in screen, screen
    assert all(len(ln) <= width for ln in screen.splitlines())
    words = set(screen.split())
    mine = [a for a in doc["actions"] if ns in json.dumps(a) or a.get("type")]
    assert mine
    for a in mine:
        if a["kind"] in ("container", "sandbox", "image"):
            assert a["id"].removeprefix("sha256:")[:13] in words, a["id"]
        size = a.get("bytes", a.get("log_bytes"))
        if a["kind"] in ("pod-log-dir", "finding") and size is not None:
            assert format_bytes(size) in words, (a["id"], size)
    for k in doc["by_kind"]:
        if k["count"]:
            assert format_bytes(k["bytes"]) in words and str(k["count"]) in words, k
    for f in doc["filesystems"]:
        assert format_bytes(f["capacity"]) in words


def test_bytes_takes_what_a_deleted_pod_left_first_and_whole(tmp_path: Path) -> None:
    """`--bytes 16Ki` on a node with three dead containers of a live pod ahead of a deleted
    pod's in the plan, whose 20000-byte log is all its log directory holds (the directory is
    planned at 0 bytes of its own): the deleted pod's container, sandbox and log directory go,
    together, and meet the target; the live pod's dead containers are held back."""
    with LocalNode(tmp_path / "node") as node:
        live = node.run_pod("live", namespace="ns1")
        older = [node.add_container(live, "job", attempt=n) for n in range(3)]
        node.add_container(live, "job", attempt=3)  # the newest record: kept
        gone = node.run_pod("gone", namespace="ns1")
        noisy = ["/bin/sh", "-c", "head -c 20000 /dev/zero | tr '\\0' x; exit 3"]
        gone_ctr = node.add_container(gone, "work", command=noisy)
        node.stop_pod(gone)  # NOTREADY; the pods file does not list it: deleted
        gone_logs = str(node.pod_logs_dir / f"ns1_gone_{gone.uid}")
        root = tmp_path / "kubelet"
        root.mkdir()
        pods = write_pods_file(tmp_path / "pods.json", live)
        opts = ("--pods-file", str(pods), "reclaim", "--root-dir", str(root), "--residue-kind",
                "orphaned-pod-dir")  # fmt: skip

        dry = _doc(kubegc(node, tmp_path, *opts, "--dry-run", "-o", "json"))
        by_id = {a["id"]: a for a in dry["actions"]}
        assert by_id[gone_logs]["bytes"] < 20000 <= by_id[gone_ctr]["log_bytes"]

        doc = _doc(kubegc(node, tmp_path, *opts, "--bytes", "16Ki", "--yes", "-o", "json"))
        results = {a["id"]: a["result"] for a in doc["actions"]}
        assert {i for i, r in results.items() if r == "removed"} == {
            gone_ctr,
            gone.sandbox_id,
            gone_logs,
        }
        assert {results[c] for c in older} == {"held-back"}
        assert doc["target"]["met"] is True
        assert set(older) <= node.container_ids(namespace="ns1")
        assert gone_ctr not in node.container_ids(namespace="ns1")
        assert not Path(gone_logs).exists()
