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
from tests.node.test_gc_containers import kubegc


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
    assert s["bytes_expected"] == a["expected_bytes"] and not s["bytes_expected_is_upper_bound"]
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
