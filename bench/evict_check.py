"""`kubegc evict check` wall time: what a monitoring system pays every minute (target < 300 ms).

Runs ``kubegc evict check -o json`` in fresh processes against this machine's real host files
(/proc, cgroups, statvfs of ``--root-dir``) and a private containerd for the image filesystem,
round-robin with ``python -c pass`` (the interpreter's floor here). Three forms: ``-o json``
with a state dir holding the remembered image filesystem mountpoint (what every run after the
first one on a node does: no CRI call), the table, and ``-o json`` with no state dir (the
first run, or a runtime just restarted: CRI ImageFsInfo). Also reports the top modules of
``python -X importtime`` for the first form.

Run from the repository root, as root::

    python -m bench.evict_check            # table
    python -m bench.evict_check --json     # table on stderr, JSON on stdout
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
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
from bench.startup import importtime_report

TARGET_MS = 300.0
JSON_LABEL = "kubegc evict check -o json"


def _run(command: list[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True)
    elapsed = time.perf_counter() - began
    # 1 = a threshold is met: a valid answer, when it is one (a crash exits 1 too)
    answered = command[1:3] == ["-c", "pass"] or (done.stdout and b"Traceback" not in done.stderr)
    if done.returncode not in (0, 5) or not answered:  # 5: a threshold met (an answer)
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr.decode()[-400:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    kubegc = kubegc_command()
    result: dict[str, Any] = {"benchmark": "evict_check", "machine": machine(containerd=True)}
    with local_node() as node, tempfile.TemporaryDirectory(prefix="kgc-evict-") as scratch:
        root_dir, state_dir = Path(scratch, "kubelet"), Path(scratch, "state")
        root_dir.mkdir()
        state_dir.mkdir()
        base = [*kubegc, "-r", node.endpoint, "evict", "check", "--root-dir", str(root_dir)]
        check = [*base, "--state-dir", str(state_dir), "-o", "json"]
        commands = {
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            JSON_LABEL: check,
            "kubegc evict check (table)": [*base, "--state-dir", str(state_dir)],
            "kubegc evict check -o json, no cache": [
                *base, "--state-dir", str(Path(scratch, "missing")), "-o", "json"
            ],
        }  # fmt: skip
        for _ in range(args.warmup):
            for c in commands.values():
                _run(c)
        samples: dict[str, list[float]] = {k: [] for k in commands}
        for _ in range(args.runs):
            for label, c in commands.items():
                samples[label].append(_run(c))
        log("importtime of evict check")
        imports = importtime_report(check, repeats=5, top=8)
    stats = {label: summarize_ms(v) for label, v in samples.items()}
    median = statistics.median(samples[JSON_LABEL]) * 1000
    result.update(
        commands=stats,
        importtime=imports,
        target_ms=TARGET_MS,
        median_ms=round(median, 1),
        met=median < TARGET_MS,
    )
    rows = [[label, s["median_ms"], s["p90_ms"], s["min_ms"]] for label, s in stats.items()]
    text = format_table(["command", "median ms", "p90 ms", "min ms"], rows)
    text += f"\n\nevict check median {median:.0f} ms vs target < {TARGET_MS:.0f} ms: "
    text += verdict(median < TARGET_MS)
    text += "\n\ntop imports (cumulative ms):\n" + "\n".join(
        f"  {m['module']:<40} {m['cumulative_ms']:>7}" for m in imports["top_cumulative"]
    )
    finish(result)  # (the load and speed probe at the end, before they are printed)
    text += "\n" + conditions(result)
    emit(result, text, as_json=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
