"""One byte accounting against a real containerd: a dead container is expected to free its
writable layer (CRI `ListContainerStats`) and its log, and a run that acts reports those
expected bytes and the bytes its filesystems regained (statvfs) — the same figures in its
JSON or table, in `kubegc history` and in the metrics file."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from kubegc_cli.core.units import format_bytes
from kubegc_cli.report.metrics import parse_samples
from tests.node.localnode import LocalNode
from tests.node.test_df import WRITE_BUSYBOX, layer_bytes
from tests.node.test_gc_containers import kubegc, write_pods_file


def dead_with_layer(node: LocalNode, ns: str) -> tuple[str, str]:
    """A pod whose container `job` ran twice, attempt 0 having written a copy of busybox into
    its writable layer: (attempt 0, the garbage; attempt 1, the newest record kept). Waits
    until the runtime reports that layer (containerd refreshes snapshot usage every 10 s)."""
    pod = node.run_pod("p", namespace=ns)
    old = node.add_container(pod, "job", symlink=False,
                             command=["/bin/sh", "-c", f"{WRITE_BUSYBOX}; exit 3"])  # fmt: skip
    newest = node.add_container(pod, "job", attempt=1, symlink=False)
    busybox = Path("/bin/busybox").stat().st_size
    deadline = time.monotonic() + 40
    while layer_bytes(node, [old]).get(old, 0) < busybox and time.monotonic() < deadline:
        time.sleep(1)
    assert layer_bytes(node, [old]).get(old, 0) >= busybox
    return old, newest


def history(node: LocalNode, tmp_path: Path) -> dict[str, Any]:
    """The newest run `kubegc history -o json` lists."""
    res = kubegc(node, tmp_path, "history", "--runs", "1", "-o", "json")
    assert res.returncode == 0, res.stderr
    [run] = json.loads(res.stdout)["items"]
    return dict(run)


def test_gc_containers_json_and_history_give_the_same_expected_and_measured_bytes(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    old, newest = dead_with_layer(node, ns)
    metrics = tmp_path / "kubegc.prom"
    res = kubegc(node, tmp_path, "--metrics-file", str(metrics), "gc", "containers", "-n", ns,
                 "--yes", "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    [a] = doc["actions"]
    assert (a["id"], a["result"]) == (old, "removed")
    busybox = Path("/bin/busybox").stat().st_size
    assert a["writable_layer_bytes"] >= busybox and a["log_bytes"] > 0
    assert a["expected_bytes"] == a["writable_layer_bytes"] + a["log_bytes"]
    s = doc["summary"]
    assert s["bytes_expected"] == a["expected_bytes"] and not s["bytes_expected_is_estimate"]
    roles = {r for f in doc["filesystems"] for r in f["roles"]}
    assert {"logs", "containerfs"} <= roles
    assert all(isinstance(f["regained"], int) and f["regained"] >= 0 for f in doc["filesystems"])
    assert s["bytes_measured"] == sum(f["regained"] for f in doc["filesystems"])

    run = history(node, tmp_path)
    assert run["command"] == "gc containers"
    assert (run["bytes_expected"], run["bytes_measured"]) == (
        s["bytes_expected"],
        s["bytes_measured"],
    )
    assert run["filesystems"] == doc["filesystems"]
    assert [(x["id"], x["bytes_expected"]) for x in run["actions"]] == [(old, a["expected_bytes"])]

    samples = parse_samples(metrics.read_text())
    got = {(n, dict(lbl).get("kind", "")): v for (n, lbl), v in samples.items()
           if n.startswith(("kubegc_last_run_expected", "kubegc_last_run_measured"))}  # fmt: skip
    assert got == {
        ("kubegc_last_run_expected_bytes", "container"): s["bytes_expected"],
        ("kubegc_last_run_measured_bytes", ""): s["bytes_measured"],
    }
    assert node.container_ids(namespace=ns) == {newest}


def test_the_table_of_a_run_sums_its_rows_as_history_records_them(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """The table a run prints (into a pipe: one whole line a row) has each row's expected
    bytes, a headline that is their sum, and the measured bytes, as `history` keeps them."""
    old, _ = dead_with_layer(node, ns)
    res = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--yes")
    assert res.returncode == 0, res.stderr
    run = history(node, tmp_path)
    [row] = [ln for ln in res.stdout.splitlines() if ln.startswith(old[:13])]
    [action] = run["actions"]
    assert format_bytes(action["bytes_expected"]) in row.split() and row.endswith("removed")
    assert run["bytes_expected"] == action["bytes_expected"]  # the total: the sum of its row
    headline = res.stdout.splitlines()[-1]
    assert headline == (
        f"removed 1, skipped 0, failed 0; {format_bytes(run['bytes_expected'])} expected, "
        f"{format_bytes(run['bytes_measured'])} regained (measured)."
    )
    assert "REGAINED" in res.stdout  # the filesystems measured, under the notes
    table = kubegc(node, tmp_path, "history")
    assert table.returncode == 0, table.stderr
    [line] = [ln for ln in table.stdout.splitlines() if run["run_id"] in ln]
    cells = line.split()
    assert format_bytes(run["bytes_expected"]) in cells
    assert format_bytes(run["bytes_measured"]) in cells


def _json(res: Any) -> dict[str, Any]:
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def test_df_reclaimable_is_what_reclaim_expects_of_each_kind(tmp_path: Path) -> None:
    """One node, every command's figures for the same objects: dead containers (the older
    attempt of a live pod's container; a deleted pod's), the deleted pod's log directory
    (with a file no container owns and a rotated log of no container left in it) and an
    unused image. `df -o json`'s reclaimable per line is what `reclaim --dry-run -o json`
    expects per kind: the dead containers' writable layers and logs, what stays in the
    deleted pod's log directory once its container's log goes, the unused image; every log
    counted in blocks on disk (a 20-byte log takes a block), never its apparent size. And
    `residue scan`'s dead-container bytes are what `gc containers` expects of each."""
    with LocalNode(tmp_path / "node") as node:
        node.import_image("docker.io/library/bytes-unused:1", pad_bytes=65536, seed="b")
        live = node.run_pod("live", namespace="ns1")
        older = node.add_container(live, "job", attempt=0, symlink=False)
        node.add_container(live, "job", attempt=1, symlink=False)
        node.add_container(live, "app", state="running", symlink=False)
        gone = node.run_pod("gone", namespace="ns1")
        gone_ctr = node.add_container(gone, "work", symlink=False)
        node.stop_pod(gone)  # NOTREADY; the pods file does not list it: deleted
        gone_logs = node.pod_logs_dir / f"ns1_gone_{gone.uid}"
        (gone_logs / "work" / "9.log").write_bytes(b"y" * 10000)  # no container's: stays
        (gone_logs / "stray.txt").write_bytes(b"z" * 100)
        job_log = live.log_directory / "job/0.log"
        assert 0 < job_log.stat().st_size < job_log.stat().st_blocks * 512  # a block on disk
        root = tmp_path / "kubelet"
        (root / "pods").mkdir(parents=True)
        pods = write_pods_file(tmp_path / "pods.json", live)
        common = ("--pods-file", str(pods))
        dead = [older, gone_ctr]
        no_min_age = ("--minimum-image-ttl-duration", "0s")  # (df counts unused images so)

        for _ in range(4):  # until containerd did not refresh a layer between the two runs
            before = layer_bytes(node, dead)
            df = _json(kubegc(node, tmp_path, *common, "df", "--root-dir", str(root),
                              "-o", "json"))  # fmt: skip
            plan = _json(kubegc(node, tmp_path, *common, "reclaim", "--root-dir", str(root),
                                "--residue-kind", "orphaned-pod-dir", *no_min_age,
                                "--dry-run", "-o", "json"))  # fmt: skip
            if layer_bytes(node, dead) == before:
                break
        else:
            raise AssertionError("containerd refreshed a writable layer during every try")

        by_kind = {k["kind"]: k["bytes"] for k in plan["by_kind"]}
        actions = {a["id"]: a for a in plan["actions"]}
        assert {older, gone_ctr, str(gone_logs)} <= actions.keys()
        reclaim_ctrs = [a for a in plan["actions"] if a["kind"] == "container"]
        assert {a["id"] for a in reclaim_ctrs} == set(dead)

        def on_disk(*paths: Path) -> int:
            return sum(p.stat().st_blocks * 512 for p in paths)

        gone_log = gone_logs / "work/0.log"
        assert actions[older]["log_bytes"] == on_disk(job_log)
        assert actions[gone_ctr]["log_bytes"] == on_disk(gone_log)
        left = on_disk(gone_logs, gone_logs / "work", gone_logs / "work/9.log",
                       gone_logs / "stray.txt")  # fmt: skip
        assert actions[str(gone_logs)]["expected_bytes"] == left

        lines: dict[str, dict[str, Any]] = {}
        for f in df["filesystems"]:
            for ln in f["lines"]:
                lines.setdefault(ln["key"], {"reclaimable": 0})
                lines[ln["key"]]["reclaimable"] += ln["reclaimable"] or 0
        logs_dead = lines["logs.dead-containers"]["reclaimable"]
        layers_dead = lines["writable-layers.dead"]["reclaimable"]
        assert logs_dead == sum(a["log_bytes"] for a in reclaim_ctrs)
        assert layers_dead == sum(a["writable_layer_bytes"] or 0 for a in reclaim_ctrs)
        assert logs_dead + layers_dead == by_kind["container"]
        assert lines["logs.deleted-pods"]["reclaimable"] == by_kind["pod-log"] == left
        assert lines["logs"]["reclaimable"] == logs_dead + left
        assert lines["images"]["reclaimable"] == by_kind["image"] > 0

        scan = _json(kubegc(node, tmp_path, *common, "residue", "scan", "--kind",
                            "dead-container", "-o", "json"))  # fmt: skip
        gc = _json(kubegc(node, tmp_path, *common, "gc", "containers", "--dry-run", "-o", "json"))
        found = {f["id"]: f["bytes"] for f in scan["actions"] + scan["kept"]}
        expected = {a["id"]: a["expected_bytes"] for a in gc["actions"]}
        assert found == expected and set(found) == set(dead)
        assert scan["totals"]["dead-container"]["bytes"] == gc["summary"]["bytes_expected"]
        assert all(found[c] >= actions[c]["log_bytes"] for c in dead)
