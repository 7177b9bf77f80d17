"""``kubegc residue scan`` on a kubelet root holding 10,000 orphaned pod directories (< 5 s).

A scratch kubelet root (``--root-dir``) gets ``--dirs`` (10,000) pod directories that neither
the pod source nor the runtime knows, each as a deleted pod leaves it:
``pods/<uid>/volumes/kubernetes.io~empty-dir/cache`` with 3 files of 8 KiB, last changed an
hour ago. The runtime is the fake CRI server of the tests (``tests/unit/faultcri.py``, a few
containers and sandboxes of other pods), the pods file lists one live pod. Fresh processes,
wall clock from start to exit, ``--runs`` (3) of::

    kubegc -r EP --state-dir DIR --pods-file PODS residue scan \\
        --root-dir ROOT --kind orphaned-pod-dir -o json

Target: median < 5 s, and every directory listed with its size and mount state (each
finding of the JSON carries its ``bytes``, 24 KiB or more here, and ``details.mounts_below``),
so a scan that skips directories cannot pass.

Run from the repository root (no root or containerd needed)::

    python -m bench.residue_scan
    python -m bench.residue_scan --dirs 2000 --runs 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python bench/residue_scan.py`

from bench._common import (
    REPO_ROOT,
    conditions,
    emit,
    finish,
    format_table,
    kubegc_command,
    log,
    machine,
    summarize_ms,
    verdict,
)

TARGET_S = 5.0
FILE_BYTES = 8192


def make_orphans(root: Path, count: int) -> set[str]:
    """`count` orphaned pod directories under `root/pods`; returns their UIDs."""
    uids = set()
    when = time.time() - 3600
    data = os.urandom(FILE_BYTES)
    for _ in range(count):
        uid = str(uuid.uuid4())
        cache = root / "pods" / uid / "volumes" / "kubernetes.io~empty-dir" / "cache"
        cache.mkdir(parents=True)
        for i in range(3):
            (cache / f"f{i}").write_bytes(data)
        for p in (cache, cache.parent, cache.parent.parent, root / "pods" / uid):
            os.utime(p, (when, when))
        uids.add(uid)
    return uids


def _pod_list() -> dict[str, Any]:
    """The pods of the fake runtime's inventory (the same seed as its command line gives), as
    a pods file: the node's live pods, none of them an orphan."""
    from tests.unit.faultcri import synthetic_inventory

    items = {}
    for sb in synthetic_inventory(20, 10, 5, pods=10).sandboxes.values():
        m = sb.metadata
        items[m.uid] = {"metadata": {"name": m.name, "namespace": m.namespace, "uid": m.uid},
                        "status": {"phase": "Running"}}  # fmt: skip
    return {"apiVersion": "v1", "kind": "List", "items": list(items.values())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dirs", type=int, default=10_000, help="orphaned pod dirs (10,000)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (3)")
    parser.add_argument("--json", action="store_true", help="JSON result on stdout")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"benchmark": "residue_scan", "machine": machine(), "dirs": args.dirs}
    kubegc = kubegc_command()
    samples: list[float] = []
    with tempfile.TemporaryDirectory(prefix="kgc-residue-") as tmp:
        root = Path(tmp) / "kubelet"
        began = time.monotonic()
        uids = make_orphans(root, args.dirs)
        log(f"{len(uids):,} orphaned pod directories in {time.monotonic() - began:.1f}s")
        pods = Path(tmp) / "pods.json"
        pods.write_text(json.dumps(_pod_list()))
        sock = Path(tmp) / "cri.sock"
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.unit.faultcri", str(sock), "--containers", "20",
             "--sandboxes", "10", "--pods", "10", "--images", "5"],
            stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            if not server.stdout.readline().startswith("ready"):
                raise RuntimeError("the fake runtime did not start")
            command = [
                *kubegc, "-r", f"unix://{sock}", "--state-dir", f"{tmp}/state",
                "--pods-file", str(pods), "residue", "scan", "--root-dir", str(root),
                "--kind", "orphaned-pod-dir", "-o", "json",
            ]  # fmt: skip
            listed: dict[str, Any] = {}
            for i in range(args.runs + 1):  # the first is a warm-up (page cache, bytecode)
                began = time.perf_counter()
                done = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT)
                seconds = time.perf_counter() - began
                if done.returncode not in (0, 1):
                    raise RuntimeError(f"residue scan exited {done.returncode}: {done.stderr}")
                if i:
                    samples.append(seconds)
                    log(f"run {i}/{args.runs}: {seconds:.2f}s")
                listed = json.loads(done.stdout)
        finally:
            server.terminate()
            server.wait(30)
    findings = [f for f in listed.get("actions", []) if f.get("type") == "orphaned-pod-dir"]
    found = {Path(f["id"]).name for f in findings}
    sized = [
        f for f in findings if isinstance(f.get("bytes"), int) and f["bytes"] >= 3 * FILE_BYTES
    ]
    mount_state = [f for f in findings if isinstance(f["details"].get("mounts_below"), list)]
    complete = found >= uids and len(sized) == len(findings) == len(mount_state)
    stats = summarize_ms(samples)
    met = complete and stats["median_ms"] < TARGET_S * 1000
    result.update(
        runs=samples, summary=stats, findings=len(findings), all_listed=found >= uids,
        with_size=len(sized), with_mount_state=len(mount_state), met=met,
        sample_finding=findings[0] if findings else None,
    )  # fmt: skip
    finish(result)
    text = "\n".join(
        [
            f"residue scan of {args.dirs:,} orphaned pod directories ({args.runs} runs)",
            conditions(result),
            "",
            format_table(
                ["median s", "min s", "max s", "findings", "with size", "with mount state",
                 "target", ""],
                [[stats["median_ms"] / 1000, stats["min_ms"] / 1000, stats["max_ms"] / 1000,
                  len(findings), len(sized), len(mount_state), f"< {TARGET_S:g} s",
                  verdict(met)]],
            ),
        ]
    )  # fmt: skip
    emit(result, text, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
