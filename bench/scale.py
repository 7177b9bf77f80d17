"""A very large node end to end: `kubegc gc containers --dry-run -o json` (target < 5 s).

The runtime is the fault-injecting CRI server of the tests (`tests/unit/faultcri.py`), run in
a process of its own with a synthetic inventory: 100,000 containers, 20,000 sandboxes (the
ListPodSandbox reply well over gRPC's default 4 MiB) of 10,000 pods (half the sandboxes are
leaked older attempts), 5,000 images. Fresh `kubegc` processes, timed from start to exit:

``gc containers --dry-run -o json``
    the target. It lists every container, takes each dead one's log path from the kubelet's
    layout and its size from disk, plans and writes the JSON.
``gc sandboxes --dry-run -o json``
    lists every container and sandbox, no per-container call: the cost of the lists alone.
``gc containers --dry-run`` (table)
    the same plan as a table (at most 100 rows without -v, summary first).
``gc images --dry-run -o json``
    lists every container and image and plans image GC with ``--prune-unused`` (no target;
    with 100,000 containers every image is in use).

Then every other command that lists the runtime runs once against the same node (``--no-listing``
skips them): ``gc all``, ``gc logs``, ``reclaim`` and ``residue scan`` (their host reads confined to
a scratch ``--host-root`` and kubelet root), ``df`` and ``snapshot``; each must exit 0 or 1 with no
gRPC size error and no traceback: the node's replies are far above the kubelet's 16 MiB limit
(``ListContainers`` ~57 MB), which kubegc's ``--max-recv-size`` (256Mi) allows.

For each: wall time (median of ``--runs``), the kubegc process's CPU and the fake runtime's
CPU during the run (the fake is Python; it keeps its serialized ListContainers reply until a
container changes, as a runtime answers from memory), and the output size. Then one phase
breakdown of the target (``bench/_phases.py``).

Run from the repository root (no root or containerd needed)::

    python -m bench.scale                  # ~1-2 min on 2 cores
    python -m bench.scale --json           # table on stderr, JSON on stdout
    python -m bench.scale --containers 20000 --runs 1 --no-phases
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._common import (
    REPO_ROOT,
    conditions,
    emit,
    finish,
    format_table,
    kubegc_command,
    log,
    machine,
    phase_breakdown,
    verdict,
)

TARGET_SECONDS = 5.0
NOW = "2027-01-15T08:00:00Z"  # the fake inventory's "now"


def _cpu_seconds(pid: int) -> float:
    """utime + stime of a process so far (its threads included), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _run(command: list[str], server_pid: int) -> dict[str, float]:
    """One fresh process: wall seconds, its CPU seconds, the server's CPU seconds, out bytes."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = _cpu_seconds(server_pid)
    began = time.perf_counter()
    done = subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, cwd=REPO_ROOT)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{command} exited {done.returncode}: {done.stderr.decode()[-800:]}")
    return {
        "wall_s": wall,
        "cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime),
        "runtime_cpu_s": _cpu_seconds(server_pid) - server_before,
        "stdout_bytes": float(len(done.stdout)),
        "stdout_lines": float(done.stdout.count(b"\n")),
    }


def listing_commands(
    kubegc: list[str], base: list[str], host: Path, tmp: str
) -> list[dict[str, Any]]:
    """Each command that lists the runtime, once, against the big node: exit code, seconds,
    and whether it worked (exit 0 or 1, no gRPC message-size error). Host reads go to the
    scratch `host` and kubelet root, never this machine's."""
    for directory in ("var/lib/kubelet/pods", "var/log/pods", "var/log/containers"):
        (host / directory).mkdir(parents=True, exist_ok=True)
    root = "/var/lib/kubelet"  # under --host-root
    confined = ["--host-root", str(host)]
    commands = {
        "gc all --dry-run -o json": [*base, *confined, "gc", "all", "--dry-run", "-o", "json"],
        "gc logs --dry-run -o json": [*base, *confined, "gc", "logs", "--dry-run", "-o", "json"],
        "reclaim --dry-run -o json": [
            *base, *confined, "reclaim", "--root-dir", root, "--residue-kind",
            "orphaned-pod-dir", "--dry-run", "-o", "json",
        ],
        "residue scan -o json": [
            *base, *confined, "residue", "scan", "--root-dir", root, "--kind",
            "dead-container", "--kind", "dead-sandbox", "--kind", "oversized-runtime-list",
            "--kind", "unused-image", "-o", "json",
        ],
        "df -o json": [*base, *confined, "df", "-o", "json"],
        "snapshot -f FILE": [*base, *confined, "snapshot", "-f", str(Path(tmp) / "snap.json")],
    }  # fmt: skip
    rows = []
    for label, command in commands.items():
        log(f"listing: {label}")
        began = time.perf_counter()
        done = subprocess.run(
            [*kubegc, *command], stdin=subprocess.DEVNULL, capture_output=True, cwd=REPO_ROOT,
            timeout=900,
        )  # fmt: skip
        wall = time.perf_counter() - began
        err = done.stderr.decode(errors="replace")
        failed = "RESOURCE_EXHAUSTED" in err or "larger than max" in err or "Traceback" in err
        rows.append(
            {"command": label, "exit": done.returncode, "wall_s": round(wall, 2),
             "works": done.returncode in (0, 1) and not failed, "stderr": err[-400:]}
        )  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--containers", type=int, default=100_000)
    parser.add_argument("--sandboxes", type=int, default=20_000)
    parser.add_argument("--pods", type=int, default=10_000)
    parser.add_argument("--images", type=int, default=5_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-phases", action="store_true", help="skip the phase breakdown")
    parser.add_argument("--no-listing", action="store_true", help="skip the listing commands")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"benchmark": "scale", "machine": machine()}
    kubegc = kubegc_command()
    with tempfile.TemporaryDirectory(prefix="kgc-scale-") as tmp:
        sock = Path(tmp) / "cri.sock"
        host = Path(tmp) / "host"  # (for gc images: the fake's image filesystem mountpoint)
        (host / "var/lib/containerd").mkdir(parents=True)
        log(f"building {args.containers:,} containers, {args.sandboxes:,} sandboxes, "
            f"{args.images:,} images in the fake runtime")  # fmt: skip
        began = time.monotonic()
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.unit.faultcri", str(sock),
             "--containers", str(args.containers), "--sandboxes", str(args.sandboxes),
             "--pods", str(args.pods), "--images", str(args.images)],
            stdout=subprocess.PIPE, text=True, cwd=REPO_ROOT,
        )  # fmt: skip
        try:
            assert server.stdout is not None
            ready = server.stdout.readline().split()
            if not ready or ready[0] != "ready":
                raise RuntimeError("the fake runtime did not start")
            list_bytes = {"ListContainers": int(ready[1]), "ListPodSandbox": int(ready[2])}
            log(f"ready in {time.monotonic() - began:.1f}s; replies {list_bytes}")
            base = ["-r", f"unix://{sock}", "--state-dir", f"{tmp}/state", "--pod-source",
                    "none", "--now", NOW, "gc"]  # fmt: skip
            variants = {
                "gc containers --dry-run -o json": [*base, "containers", "--dry-run", "-o", "json"],
                "gc sandboxes --dry-run -o json": [*base, "sandboxes", "--dry-run", "-o", "json"],
                "gc containers --dry-run (table)": [*base, "containers", "--dry-run"],
                # every image unused past MinAge is a candidate (--prune-unused), its first
                # sighting long ago; the image filesystem's statvfs is a directory here
                "gc images --dry-run -o json": [
                    *base,
                    "images",
                    "--dry-run",
                    "--prune-unused",
                    "--assume-detected-at",
                    "2026-01-01T00:00:00Z",
                    "--host-root",
                    str(host),
                    "-o",
                    "json",
                ],
            }
            runs: dict[str, list[dict[str, float]]] = {k: [] for k in variants}
            for i in range(args.runs):
                for label, extra in variants.items():
                    log(f"run {i + 1}/{args.runs}: {label}")
                    runs[label].append(_run([*kubegc, *extra], server.pid))
            listing = [] if args.no_listing else listing_commands(kubegc, base[:-1], host, tmp)
            phases: list[dict[str, Any]] = []
            if not args.no_phases:
                log("phase breakdown of gc containers --dry-run -o json")
                phases = phase_breakdown(variants["gc containers --dry-run -o json"], 1)
        finally:
            server.terminate()
            server.wait(30)
    summary = {
        label: {key: round(statistics.median(r[key] for r in rs), 2) for key in rs[0]}
        for label, rs in runs.items()
    }
    target = summary["gc containers --dry-run -o json"]["wall_s"]
    result.update(
        inventory={"containers": args.containers, "sandboxes": args.sandboxes,
                   "pods": args.pods, "images": args.images},
        reply_bytes=list_bytes, runs=runs, median=summary, phases=phases, listing=listing,
        target_s=TARGET_SECONDS, met=target < TARGET_SECONDS,
    )  # fmt: skip
    finish(result)
    rows = [
        [label, s["wall_s"], s["cpu_s"], s["runtime_cpu_s"], int(s["stdout_bytes"]),
         int(s["stdout_lines"])]
        for label, s in summary.items()
    ]  # fmt: skip
    text = format_table(
        ["command (median)", "wall s", "kubegc CPU s", "runtime CPU s", "stdout bytes", "lines"],
        rows,
    )
    text += (
        f"\n\nreplies: ListContainers {list_bytes['ListContainers']:,} bytes, ListPodSandbox "
        f"{list_bytes['ListPodSandbox']:,} bytes (gRPC's default limit: 4,194,304)"
    )
    if listing:
        text += "\n\nevery other listing command, once (replies above 16 MiB):\n" + format_table(
            ["command", "exit", "wall s", "works"],
            [
                [r["command"], r["exit"], r["wall_s"], "yes" if r["works"] else "NO"]
                for r in listing
            ],
        )
        text += f"\nall listing commands work: {verdict(all(r['works'] for r in listing))}"
    if phases:
        text += "\n\nphases of gc containers --dry-run -o json (ms):\n" + "\n".join(
            f"  {p['phase']:<58} {p['median_ms']:>10,.0f}" for p in phases
        )
    text += f"\n\ngc containers --dry-run -o json: {target:.1f} s vs target < {TARGET_SECONDS} s: "
    text += verdict(target < TARGET_SECONDS) + "\n" + conditions(result)
    emit(result, text, as_json=args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
