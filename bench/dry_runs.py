"""Dry-run latency of the whole-node commands: ``reclaim --dry-run`` and ``gc all --dry-run``.

On a private containerd (``tests/node/localnode.py``) holding 200 dead containers in 50
sandboxes of deleted pods (stopped, in no pods file), 20 unused images and one live pod (the
one the pods file lists), each command is run as a fresh process ``--runs`` times (15), the two
round-robin after a discarded warm-up of each, wall clock from start to exit::

    kubegc -r EP --kubelet-config CFG --state-dir DIR --pods-file PODS \\
        reclaim --root-dir ROOT --residue-kind orphaned-pod-dir \\
        --minimum-image-ttl-duration 0s --dry-run
    kubegc ... gc all --dry-run

(``--root-dir`` is an empty scratch kubelet root, and only orphaned pod directories are
looked for, so no run reads this machine's own kubelet, network namespaces or cgroups.)
Target: median < 400 ms for each. The plan's size is checked too (every dead container,
sandbox and unused image planned), so a fast run that plans nothing cannot pass.

Run from the repository root, as root (needs containerd and runc)::

    python -m bench.dry_runs
    python -m bench.dry_runs --json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python bench/dry_runs.py`

from bench._common import (
    conditions,
    emit,
    finish,
    format_table,
    kubegc_command,
    local_node,
    log,
    machine,
    make_exited,
    summarize_ms,
    verdict,
)

TARGET_MS = 400.0
CONTAINERS, SANDBOXES, IMAGES = 200, 50, 20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each (15)")
    parser.add_argument("--json", action="store_true", help="JSON result on stdout")
    args = parser.parse_args(argv)

    from bench.removal import _stop_sandboxes
    from tests.node.localnode import pod_list

    result: dict[str, Any] = {
        "benchmark": "dry_runs",
        "machine": machine(containerd=True),
        "kubegc": kubegc_command(),
        "node": {"dead_containers": CONTAINERS, "dead_sandboxes": SANDBOXES, "images": IMAGES},
        "runs": args.runs,
    }
    samples: dict[str, list[float]] = {"reclaim --dry-run": [], "gc all --dry-run": []}
    planned: dict[str, dict[str, int]] = {}
    with local_node() as node:
        keeper = node.run_pod("keeper", "dr-keep")
        make_exited(node, "dr", total=CONTAINERS, pods=SANDBOXES)
        _stop_sandboxes(node, "dr")
        for i in range(IMAGES):
            node.import_image(f"docker.io/library/dry-{i:02d}:1", seed=f"dry-{i}")
        scratch = node.workdir.parent
        pods = scratch / "pods.json"
        pods.write_text(json.dumps(pod_list([keeper])))
        (scratch / "kubelet" / "pods").mkdir(parents=True)
        base = [
            *kubegc_command(), "-r", node.endpoint, "--kubelet-config", str(node.kubelet_config),
            "--state-dir", str(scratch / "state"), "--pods-file", str(pods),
        ]  # fmt: skip
        commands = {
            "reclaim --dry-run": [
                *base, "reclaim", "--root-dir", str(scratch / "kubelet"), "--residue-kind",
                "orphaned-pod-dir", "--minimum-image-ttl-duration", "0s", "--dry-run",
            ],
            "gc all --dry-run": [*base, "gc", "all", "--dry-run"],
        }  # fmt: skip
        for label, command in commands.items():  # warm-up, and what the plan holds
            done = subprocess.run([*command, "-o", "json"], capture_output=True, text=True)
            if done.returncode != 0:
                raise SystemExit(f"{label} failed ({done.returncode}): {done.stderr[-800:]}")
            kinds: dict[str, int] = {}
            for a in json.loads(done.stdout)["actions"]:
                kinds[a["kind"]] = kinds.get(a["kind"], 0) + 1
            planned[label] = kinds
            log(f"{label}: plans {kinds}")
        for _ in range(args.runs):
            for label, command in commands.items():
                began = time.perf_counter()
                timed = subprocess.run(command, capture_output=True, stdin=subprocess.DEVNULL)
                samples[label].append(time.perf_counter() - began)
                if timed.returncode != 0:
                    raise SystemExit(f"{label} failed ({timed.returncode})")
    rows: list[dict[str, Any]] = []
    for label, runs in samples.items():
        stats = summarize_ms(runs)
        kinds = planned[label]
        complete = kinds.get("container", 0) >= CONTAINERS and kinds.get("sandbox", 0) >= SANDBOXES
        if label.startswith("reclaim"):
            complete = complete and kinds.get("image", 0) >= IMAGES
        rows.append(
            stats | {"command": label, "planned": kinds,
                     "met": complete and stats["median_ms"] < TARGET_MS}
        )  # fmt: skip
    result["summary"] = rows
    finish(result)
    text = "\n".join(
        [
            f"dry runs on a node of {CONTAINERS} dead containers, {SANDBOXES} dead sandboxes, "
            f"{IMAGES} unused images ({args.runs} runs each, round-robin)",
            conditions(result),
            "",
            format_table(
                ["command", "median ms", "min ms", "p90 ms", "planned", "target", ""],
                [
                    [
                        r["command"],
                        r["median_ms"],
                        r["min_ms"],
                        r["p90_ms"],
                        ", ".join(f"{k} {v}" for k, v in r["planned"].items()),
                        f"< {TARGET_MS:g} ms",
                        verdict(r["met"]),
                    ]
                    for r in rows
                ],
            ),
        ]
    )
    emit(result, text, as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
