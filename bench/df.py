"""`kubegc df` on a busy node's trees: 200,000 files under /var/log/pods and the pods dir < 3 s.

Builds a host tree in a temporary directory — ``--pods`` pods (default 2,000), each with a log
directory of ``--containers`` containers holding ``--logs`` files (the live ``N.log`` and
rotated ``N.log.<timestamp>.gz`` siblings) and one emptyDir of ``--files`` files, all written
with real data — then times fresh ``kubegc df -o json`` processes on it (``--root-dir`` and
``--pod-logs-dir`` naming the tree, so the runtime's image filesystem is found as on a node):

* ``--no-runtime``: the walk and the statvfs figures only;
* with a private containerd answering CRI (``tests/node/localnode.py``) and a pods file that
  lists every pod, as on a healthy node (skipped with ``--no-node`` or when the machine cannot
  run containerd).

The first run of each variant warms the page cache (a node's dentries and inodes are usually
cached too); the figure is the median of ``--runs``. Run from the repository root, as root::

    python -m bench.df            # table
    python -m bench.df --json     # table on stderr, JSON on stdout
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    conditions,
    emit,
    finish,
    format_table,
    kubegc_command,
    local_node,
    log,
    machine,
    summarize_ms,
    verdict,
)

TARGET_S = 3.0


def build_tree(root: Path, *, pods: int, containers: int, logs: int, files: int) -> list[str]:
    """Write the host tree under `root`; returns the pod UIDs. Every file holds 100 to 3,000
    bytes of real data (one allocated block each on a 4 KiB-block filesystem)."""
    data = os.urandom(3000)
    uids = []
    for i in range(pods):
        uid = str(uuid.UUID(int=i + 1))
        uids.append(uid)
        pod_logs = root / f"var/log/pods/ns{i % 20}_pod-{i}_{uid}"
        for c in range(containers):
            cdir = pod_logs / f"c{c}"
            cdir.mkdir(parents=True)
            for n in range(logs):
                name = "0.log" if n == 0 else f"0.log.20261129-{n:06d}.gz"
                (cdir / name).write_bytes(data[: 100 + (n * 97) % 2900])
        vol = root / f"var/lib/kubelet/pods/{uid}/volumes/kubernetes.io~empty-dir/scratch"
        vol.mkdir(parents=True)
        for n in range(files):
            (vol / f"f{n}").write_bytes(data[: 100 + (n * 89) % 2900])
        (root / f"var/lib/kubelet/pods/{uid}/etc-hosts").write_bytes(data[:200])
    return uids


def _run(command: list[str]) -> tuple[float, dict[str, Any]]:
    began = time.perf_counter()
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr[-400:]}")
    doc: dict[str, Any] = json.loads(done.stdout)
    return elapsed, doc


def _variant(command: list[str], runs: int) -> dict[str, Any]:
    _run(command)  # warm the page cache
    walls: list[float] = []
    docs: list[dict[str, Any]] = []
    for _ in range(runs):
        wall, doc = _run(command)
        walls.append(wall)
        docs.append(doc)
    walk = [d["summary"]["walk_seconds"] for d in docs]
    entries = docs[-1]["summary"]["entries_walked"]
    median_walk = statistics.median(walk)
    return {
        "wall": summarize_ms(walls),
        "walk": summarize_ms(walk),
        "entries": entries,
        "entries_per_second": round(entries / median_walk) if median_walk else None,
        "median_s": round(statistics.median(walls), 3),
        "exit_codes": sorted({d["exit_code"] for d in docs}),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=2000)
    parser.add_argument("--containers", type=int, default=2)
    parser.add_argument("--logs", type=int, default=25, help="log files per container")
    parser.add_argument("--files", type=int, default=50, help="files per emptyDir")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-node", action="store_true", help="skip the variant with a runtime")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from tests.node.localnode import missing_requirements

    kubegc = kubegc_command()
    files = args.pods * (args.containers * args.logs + args.files + 1)
    result: dict[str, Any] = {
        "benchmark": "df",
        "machine": machine(containerd=not args.no_node),
        "files": files,
        "target_s": TARGET_S,
    }
    variants: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="kgc-df-") as tmp:
        tree = Path(tmp) / "host"
        log(f"building {files:,} files for {args.pods:,} pods under {tree}")
        began = time.perf_counter()
        uids = build_tree(tree, pods=args.pods, containers=args.containers, logs=args.logs,
                          files=args.files)  # fmt: skip
        result["build_s"] = round(time.perf_counter() - began, 1)
        base = [*kubegc, "df", "-o", "json", "--top", "10",
                "--root-dir", str(tree / "var/lib/kubelet"),
                "--pod-logs-dir", str(tree / "var/log/pods")]  # fmt: skip
        log("kubegc df --no-runtime")
        variants["df --no-runtime"] = _variant([*base, "--no-runtime"], args.runs)
        missing = missing_requirements()
        if not args.no_node and not missing:
            pods_file = Path(tmp) / "pods.json"
            items = [{"metadata": {"uid": u, "name": f"pod-{i}", "namespace": f"ns{i % 20}"}}
                     for i, u in enumerate(uids)]  # fmt: skip
            pods_file.write_text(json.dumps({"kind": "PodList", "items": items}))
            with local_node() as node:
                log("kubegc df with a runtime and a pods file")
                variants["df (runtime, pods file)"] = _variant(
                    [*base, "-r", node.endpoint, "--pods-file", str(pods_file)], args.runs
                )
        elif not args.no_node:
            result["node_skipped"] = f"missing: {', '.join(missing)}"
    finish(result)
    result["variants"] = variants
    worst = max(v["median_s"] for v in variants.values())
    result["met"] = worst < TARGET_S
    rows = [
        [label, f"{v['entries']:,}", v["wall"]["median_ms"], v["wall"]["min_ms"],
         v["walk"]["median_ms"], f"{v['entries_per_second']:,}"]
        for label, v in variants.items()
    ]  # fmt: skip
    text = format_table(
        ["command", "entries", "wall median ms", "wall min ms", "walk median ms", "entries/s"],
        rows,
    )
    text += f"\n\n{files:,} files (built in {result['build_s']} s); slowest median "
    text += f"{worst:.2f} s vs target < {TARGET_S:.0f} s: {verdict(worst < TARGET_S)}"
    text += "\n" + conditions(result)
    emit(result, text, as_json=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
