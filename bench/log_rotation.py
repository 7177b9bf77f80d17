"""Container log rotation findings on a pod log root of 5,000 pods (< 5 s).

A scratch host root gets ``--pods`` (5,000) pod log directories of pods the runtime knows,
each with two containers whose live logs the runtime owns (running, ``<n>.log``) and, per
container, four compressed rotations and a failed compression's ``.tmp`` an hour old (with
``containerLogMaxFiles`` 3: two rotations past the count and one leftover per container),
and an earlier instance's ``0.log``. ``commands.residue.rotation_findings`` — the reader
under ``--host-root`` (pinned podLogsDir, every directory opened without following a link,
bounded walks) and the pure judge — runs in this process, ``--runs`` (3) times after a
warm-up; the wall clock of each.

Target: median < 5 s, and every finding expected there (per container: 2 past the count, 1
leftover, 1 earlier instance), so a reader that skips directories cannot pass.

Run from the repository root (no root or containerd needed)::

    python -m bench.log_rotation
    python -m bench.log_rotation --pods 500 --runs 1
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python bench/log_rotation.py`

from bench._common import (
    conditions,
    emit,
    finish,
    format_table,
    log,
    machine,
    summarize_ms,
    verdict,
)
from kubegc_cli.commands.residue import rotation_findings
from kubegc_cli.core.podlogs import LogOwner, LogRotation
from kubegc_cli.core.residue import (
    EARLIER_INSTANCE_LOG,
    LOG_ROTATION_TYPES,
    ROTATED_PAST_COUNT,
    ROTATION_LEFTOVER,
)
from kubegc_cli.node.host.logs import release_pins
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.scan import ScanContext

TARGET_S = 5.0
LOGS = "/var/log/pods"
CONTAINERS = ("app", "sidecar")


def make_tree(root: Path, pods: int) -> tuple[set[str], dict[str, LogOwner]]:
    """The pod log directories under `root`; returns the pod UIDs and the live logs' owners."""
    uids: set[str] = set()
    owners: dict[str, LogOwner] = {}
    when = time.time() - 3600
    for i in range(pods):
        uid = str(uuid.uuid4())
        uids.add(uid)
        for name in CONTAINERS:
            host = f"{LOGS}/ns_pod-{i}_{uid}/{name}"
            d = root / host.lstrip("/")
            d.mkdir(parents=True)
            (d / "1.log").write_bytes(b"x" * 512)
            owners[f"{host}/1.log"] = LogOwner(f"{i:032x}{name:>32}", running=True)
            old = [f"1.log.2024010{day}-000000.gz" for day in range(1, 5)]
            for n in [*old, "1.log.20240105-000000.tmp", "0.log"]:
                (d / n).write_bytes(b"y" * 128)
                os.utime(d / n, (when, when))
    return uids, owners


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=5_000, help="pod log directories (5,000)")
    parser.add_argument("--runs", type=int, default=3, help="timed runs (3)")
    parser.add_argument("--json", action="store_true", help="JSON result on stdout")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"benchmark": "log_rotation", "machine": machine(), "pods": args.pods}
    samples: list[float] = []
    counts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory(prefix="kgc-rotation-") as tmp:
        root = Path(tmp)
        began = time.monotonic()
        uids, owners = make_tree(root, args.pods)
        log(f"{args.pods:,} pod log directories in {time.monotonic() - began:.1f}s")
        ctx = ScanContext(
            host_root=root, pod_logs_dir=LOGS, pods_known=True, runtime_known=True,
            runtime_pod_uids=frozenset(uids), mounts=MountTable.read(),
            log_rotation=LogRotation(max_size=10 << 20, max_files=3), log_owners=owners,
        )  # fmt: skip
        warnings: list[str] = []
        for i in range(args.runs + 1):  # the first is a warm-up (page cache)
            release_pins()
            began = time.perf_counter()
            found = rotation_findings(ctx, LOG_ROTATION_TYPES, warnings.append)
            seconds = time.perf_counter() - began
            if i:
                samples.append(seconds)
                log(f"run {i}/{args.runs}: {seconds:.2f}s, {len(found):,} findings")
            counts = Counter(f.type for f in found)
        release_pins()
    per = args.pods * len(CONTAINERS)
    expected = {ROTATED_PAST_COUNT: 2 * per, ROTATION_LEFTOVER: per, EARLIER_INSTANCE_LOG: per}
    complete = dict(counts) == expected and not warnings
    stats = summarize_ms(samples)
    met = complete and stats["median_ms"] < TARGET_S * 1000
    result.update(runs=samples, summary=stats, findings=dict(counts), complete=complete, met=met)
    finish(result)
    text = "\n".join(
        [
            f"log rotation findings over {args.pods:,} pods × {len(CONTAINERS)} containers "
            f"({args.runs} runs)",
            conditions(result),
            "",
            format_table(
                ["median s", "min s", "max s", "findings", "all expected", "target", ""],
                [[stats["median_ms"] / 1000, stats["min_ms"] / 1000, stats["max_ms"] / 1000,
                  sum(counts.values()), complete, f"< {TARGET_S:g} s", verdict(met)]],
            ),
        ]
    )  # fmt: skip
    emit(result, text, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
