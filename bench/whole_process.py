"""Whole-process removal: kubegc against crictl, crictl's calls from Python, a bare loop.

An operator clearing a node compares whole commands, start-up included. On a private
containerd (``tests/node/localnode.py``), each contender in turn gets its own batch of N EXITED
containers of deleted pods (``--per-pod`` containers each, their sandboxes stopped, no pod in
the pods file: the kubelet's ``deleted-pod`` case) and removes every exited container on the
node, as a fresh process, timed from its start to its exit:

``bare loop (c=4)``
    ``bench/_bare_remove.py``: one ``ListContainers`` of the EXITED containers and a 4-thread
    ``RemoveContainer`` loop, nothing else: the floor for a Python process.
``crictl's calls from Python (c=P)``
    ``bench/_bare_remove.py`` with a ``ContainerStatus`` before each ``RemoveContainer``, as
    ``crictl rm`` makes them, at kubegc's pressure concurrency P: what crictl does, from a
    Python process with grpcio, and nothing else.
``kubegc (default c)``
    ``kubegc -r EP --kubelet-config CFG --state-dir DIR --pods-file EMPTY gc containers --yes``
    at its default ``--concurrency``: observe, plan, lock, re-list, every re-check, the logs,
    the audit rows, the table.
``kubegc (pressure c)``
    the same with ``--concurrency`` set to what kubegc recommends for a node under pressure
    (``kubegc_cli.core.plan.PRESSURE_CONCURRENCY``; ``--pressure-concurrency`` overrides).
``crictl one-liner``
    ``sh -c 'crictl rm $(crictl ps -a -q --state exited)'`` with the crictl built by
    ``scripts/build-control-plane --check runtime`` (its directory holds crictl; skipped, with a
    note, when it is not there): crictl removes every ID it is given at once.

``kubegc before (default c)``, with ``--baseline DIR``
    the same command as ``kubegc (default c)`` run from another source tree (``git archive`` of
    an older commit unpacked in DIR, put first on ``PYTHONPATH``): before and after in one run.
``kubegc c=N``, with ``--concurrencies N,M``
    kubegc at other ``--concurrency`` values, to choose the defaults.

Sizes ``--sizes`` (150 and 1000), ``--rounds`` rounds (3), the contenders' order rotated each
round and the sizes interleaved within it. Beside each rate: CPU per removed container, the
process's own (with its children: the shell and both crictl processes) and the runtime's
(containerd and this node's shims, ``utime + stime`` from ``/proc/<pid>/stat``), counted until
the runtime is quiet again after the process exits: containerd's garbage collector removes the
snapshots after the calls have returned, and that work is the removals' too.

Targets, on the median rates of the same run, at each size: kubegc at its default settings
>= 0.9x the bare loop; kubegc at its pressure concurrency >= 1.0x crictl; kubegc's CPU per
container (its own plus the runtime's, pressure concurrency) no higher than crictl's.

Run from the repository root, as root (needs containerd and runc)::

    python -m bench.whole_process                 # table
    python -m bench.whole_process --json          # table on stderr, JSON on stdout
    python -m bench.whole_process --sizes 150 --rounds 1
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # `python bench/whole_process.py`

from bench._common import (
    REPO_ROOT,
    conditions,
    emit,
    finish,
    format_table,
    kubegc_command,
    local_node,
    log,
    machine,
    make_exited,
    verdict,
)

if TYPE_CHECKING:
    from tests.node.localnode import LocalNode

BARE = "bare loop (c=4)"
KUBEGC = "kubegc (default c)"
PRESSURE = "kubegc (pressure c)"
CRICTL = "crictl one-liner"
PY_CRICTL = "crictl's calls from Python"
CONTENDERS = (BARE, KUBEGC, PRESSURE, CRICTL, PY_CRICTL)
BEFORE = "kubegc before (default c)"  # --baseline: the same command from another source tree
TARGET_DEFAULT_VS_BARE = 0.9
TARGET_PRESSURE_VS_CRICTL = 1.0


def _default_concurrency() -> tuple[int, int]:
    """kubegc's default ``--concurrency`` and the one it recommends under pressure."""
    from kubegc_cli.core import plan

    return (
        int(getattr(plan, "REMOVAL_CONCURRENCY", 4)),
        int(getattr(plan, "PRESSURE_CONCURRENCY", 16)),
    )


def crictl_path() -> str | None:
    """crictl beside the containerd 2.x that ``scripts/build-control-plane`` built, or None."""
    done = subprocess.run(
        [str(REPO_ROOT / "scripts" / "build-control-plane"), "--check", "runtime"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 or not done.stdout.strip():
        return None
    found = Path(done.stdout.strip().splitlines()[-1])
    crictl = (found if found.is_dir() else found.parent) / "crictl"
    return str(crictl) if os.access(crictl, os.X_OK) else None


def _stat_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def runtime_cpu(node: LocalNode) -> dict[int, float]:
    """CPU seconds so far of the node's containerd and each of its shims, by pid."""
    pids = set(node._containerd_pids()) | set(node._shim_pids())
    out = {}
    for pid in pids:
        cpu = _stat_cpu_s(pid)
        if cpu is not None:
            out[pid] = cpu
    return out


#: The runtime counts as settled once its CPU grew by less than this (seconds) over
#: `SETTLE_WINDOW_S`: the work a removal leaves it (its garbage collector removing the
#: snapshots) is done. A contender that exits before the runtime has done that work would
#: otherwise be charged less CPU, and look faster, than one that waits for it.
SETTLE_CPU_S = 0.010
SETTLE_WINDOW_S = 1.0
SETTLE_LIMIT_S = 30.0


def settle(node: LocalNode, before: dict[int, float]) -> tuple[float, float]:
    """Wait until the runtime is quiet (`SETTLE_CPU_S` over `SETTLE_WINDOW_S`, at most
    `SETTLE_LIMIT_S`). Returns (its CPU seconds since `before` and `time.perf_counter()`, both
    at the start of the quiet window)."""

    def used() -> float:
        now = runtime_cpu(node)
        return sum(now[p] - before.get(p, 0.0) for p in now)

    step = SETTLE_WINDOW_S / 4
    samples = [(time.perf_counter(), used())]
    limit = samples[0][0] + SETTLE_LIMIT_S
    while time.perf_counter() < limit:
        time.sleep(step)
        samples.append((time.perf_counter(), used()))
        window = [x for x in samples if x[0] >= samples[-1][0] - SETTLE_WINDOW_S - step / 2]
        if samples[-1][0] - window[0][0] >= SETTLE_WINDOW_S - step / 2 and (
            samples[-1][1] - window[0][1] < SETTLE_CPU_S
        ):
            return window[0][1], window[0][0]
    return samples[-1][1], samples[-1][0]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


@dataclass
class Run:
    """One contender removing one batch."""

    contender: str
    size: int
    concurrency: int
    seconds: float
    removed: int
    left: int
    process_cpu_s: float
    runtime_cpu_s: float
    exit_code: int
    stderr: str = ""
    #: From the start until the runtime was quiet again (`settle`): its CPU is counted to then.
    settled_s: float = 0.0

    @property
    def rate(self) -> float:
        return self.size / self.seconds if self.seconds > 0 else 0.0


def _command(
    contender: str,
    node: LocalNode,
    concurrency: int,
    scratch: Path,
    crictl: str | None,
    pods_file: Path,
) -> list[str]:
    if contender == BARE:
        return [sys.executable, str(REPO_ROOT / "bench" / "_bare_remove.py"), node.endpoint, "4"]
    if contender == PY_CRICTL:
        bare = str(REPO_ROOT / "bench" / "_bare_remove.py")
        return [sys.executable, bare, node.endpoint, str(concurrency), "status"]
    if contender == CRICTL:
        assert crictl is not None
        ep = node.endpoint
        base = f"{crictl} --config /dev/null -r {ep} -i {ep} --timeout 60s"
        return ["sh", "-c", f"{base} rm $({base} ps -a -q --state exited) >/dev/null"]
    return [
        *kubegc_command(),
        "-r",
        node.endpoint,
        "--kubelet-config",
        str(node.kubelet_config),
        "--state-dir",
        str(scratch / "state"),
        "--pods-file",
        str(pods_file),
        "gc",
        "containers",
        "--yes",
        *(["--concurrency", str(concurrency)] if contender.startswith("kubegc c=") else []),
        *(["--concurrency", str(concurrency)] if contender == PRESSURE else []),
    ]


def one_run(
    node: LocalNode,
    contender: str,
    size: int,
    per_pod: int,
    serial: int,
    concurrency: int,
    crictl: str | None,
    pods_file: Path,
    baseline: Path | None = None,
) -> Run:
    """Make a batch of `size` exited containers of deleted pods, have `contender` remove them
    (`pods_file`: the node's desired pods, which the batch's are not)."""
    from bench.removal import _stop_sandboxes

    namespace = f"wp-{serial:03d}"
    make_exited(node, namespace, total=size, pods=max(1, size // per_pod), names=2)
    _stop_sandboxes(node, namespace)  # the pods are deleted: their sandboxes stopped
    scratch = node.workdir.parent / f"wp-{serial:03d}"
    scratch.mkdir()
    command = _command(contender, node, concurrency, scratch, crictl, pods_file)
    settle(node, runtime_cpu(node))  # the batch's own making and stopping done first
    before_rt = runtime_cpu(node)
    before_cpu = _children_cpu_s()
    began = time.perf_counter()
    env = None
    if contender == BEFORE:
        env = {**os.environ, "PYTHONPATH": str(baseline)}
    done = subprocess.run(
        command, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env
    )
    seconds = time.perf_counter() - began
    process_cpu = _children_cpu_s() - before_cpu
    runtime, quiet_at = settle(node, before_rt)
    left = len(node.container_ids(namespace=namespace))
    run = Run(
        contender, size, concurrency, seconds, size - left, left, process_cpu, runtime,
        done.returncode, done.stderr[-600:] if done.returncode else "",
        settled_s=max(seconds, quiet_at - began),
    )  # fmt: skip
    log(
        f"{contender} n={size}: {seconds:.2f}s, {run.rate:.1f}/s, left {left}, exit "
        f"{done.returncode}, CPU {process_cpu / size * 1000:.2f} + {runtime / size * 1000:.2f} "
        f"ms/container, runtime quiet after {run.settled_s:.2f}s"
    )
    node.remove_namespace(namespace)
    return run


def summarize(runs: list[Run]) -> list[dict[str, Any]]:
    """Per (contender, size): median and best seconds, rates, CPU per container (medians)."""
    rows = []
    for size in sorted({r.size for r in runs}):
        for contender in dict.fromkeys(r.contender for r in runs):
            mine = [r for r in runs if r.contender == contender and r.size == size]
            if not mine:
                continue
            med = statistics.median(r.seconds for r in mine)
            proc = statistics.median(r.process_cpu_s for r in mine) / size * 1000
            rt = statistics.median(r.runtime_cpu_s for r in mine) / size * 1000
            rows.append(
                {
                    "contender": contender,
                    "size": size,
                    "concurrency": mine[0].concurrency,
                    "rounds": len(mine),
                    "median_s": round(med, 3),
                    "min_s": round(min(r.seconds for r in mine), 3),
                    "settled_s": round(statistics.median(r.settled_s for r in mine), 3),
                    "per_s": round(size / med, 1),
                    "best_per_s": round(size / min(r.seconds for r in mine), 1),
                    "process_cpu_ms_per_c": round(proc, 2),
                    "runtime_cpu_ms_per_c": round(rt, 2),
                    "total_cpu_ms_per_c": round(proc + rt, 2),
                    "all_removed": all(r.left == 0 and r.exit_code == 0 for r in mine),
                }
            )
    return rows


def targets(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ratios the targets judge, per size (median rates; best rates beside)."""
    by = {(r["contender"], r["size"]): r for r in rows}
    out = []
    for size in sorted({r["size"] for r in rows}):
        checks: list[tuple[str, str, str, float, str]] = [
            ("rate", KUBEGC, BARE, TARGET_DEFAULT_VS_BARE, ">="),
            ("rate", PRESSURE, CRICTL, TARGET_PRESSURE_VS_CRICTL, ">="),
            ("cpu", PRESSURE, CRICTL, 1.0, "<="),
            ("cpu", KUBEGC, CRICTL, 1.0, "<="),
        ]
        # (no target) how near crictl a Python process making crictl's calls comes
        extra_py = [("rate", PY_CRICTL, CRICTL, 0.0, ">="), ("cpu", PY_CRICTL, CRICTL, 0.0, "<=")]
        checks += [c for c in extra_py if (PY_CRICTL, size) in by]
        extra = [("rate", KUBEGC, BEFORE, 0.0, ">="), ("cpu", KUBEGC, BEFORE, 0.0, "<=")]
        checks += [c for c in extra if (BEFORE, size) in by]
        for what, a, b, target, sense in checks:
            ra, rb = by.get((a, size)), by.get((b, size))
            if ra is None or rb is None:
                continue
            removed = ra["all_removed"] and rb["all_removed"]
            best: float | None
            if what == "rate":
                value = ra["per_s"] / rb["per_s"]
                best = ra["best_per_s"] / rb["best_per_s"]
                met = value >= target
            else:
                value = ra["total_cpu_ms_per_c"] / max(rb["total_cpu_ms_per_c"], 1e-9)
                best = None
                met = value <= target
            out.append(
                {
                    "size": size,
                    "ratio": f"{what}: {a} / {b}",
                    "value": round(value, 3),
                    "best": None if best is None else round(best, 3),
                    "target": f"{sense} {target}" if target else "",
                    "met": (met and removed) if target else None,
                }
            )
    return out


def _shown_concurrency(row: dict[str, Any]) -> str:
    """The `c` column: crictl removes every ID at once; the older tree runs at its own default."""
    if row["contender"] == CRICTL:
        return "all"
    if row["contender"] == BEFORE:
        return "its default"
    return str(row["concurrency"])


def render_text(result: dict[str, Any]) -> str:
    lines = [
        f"whole-process removal, exited containers of deleted pods ({result['rounds']} "
        f"round(s), {result['per_pod']} per pod); {result['machine'].get('containerd', '')}",
        conditions(result),
    ]
    if result.get("note"):
        lines.append(result["note"])
    lines += [
        "",
        format_table(
            [
                "contender",
                "n",
                "c",
                "median s",
                "best s",
                "quiet s",
                "per s",
                "proc CPU ms/c",
                "runtime CPU ms/c",
                "total ms/c",
                "all removed",
            ],
            [
                [
                    r["contender"],
                    r["size"],
                    _shown_concurrency(r),
                    r["median_s"],
                    r["min_s"],
                    r.get("settled_s", ""),
                    r["per_s"],
                    r["process_cpu_ms_per_c"],
                    r["runtime_cpu_ms_per_c"],
                    r["total_cpu_ms_per_c"],
                    "yes" if r["all_removed"] else "NO",
                ]
                for r in result["summary"]
            ],
        ),
        "(rates from the median wall time, process start to exit; quiet s: from the start "
        "until the runtime was quiet again, its CPU counted to then; CPU: medians; proc = the "
        "process and its children, runtime = containerd + shims)",
        "",
        "(a target is MISSED too when either side left a container or exited non-zero)",
        "",
        format_table(
            ["n", "ratio", "median", "best", "target", "verdict"],
            [
                [
                    t["size"],
                    t["ratio"],
                    t["value"],
                    "-" if t["best"] is None else t["best"],
                    t["target"] or "(no target)",
                    "" if t["met"] is None else verdict(t["met"]),
                ]
                for t in result["targets"]
            ],
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="150,1000", help="batch sizes (150,1000)")
    parser.add_argument("--per-pod", type=int, default=50, help="containers per pod (50)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds (3)")
    parser.add_argument("--pressure-concurrency", type=int, help="kubegc's, under pressure")
    parser.add_argument(
        "--only", action="append", choices=["bare", "kubegc", "pressure", "crictl", "pycrictl"],
        help="run only these contenders (repeatable)",
    )  # fmt: skip
    parser.add_argument(
        "--concurrencies", default="",
        help="also kubegc at these --concurrency values, e.g. 8,16,32 (to choose the defaults)",
    )  # fmt: skip
    parser.add_argument(
        "--baseline", type=Path,
        help="a kubegc source tree (git archive of an older commit): its kubegc (default c) "
        "runs too, as 'kubegc before', for before/after in the same run",
    )  # fmt: skip
    parser.add_argument("--json", action="store_true", help="JSON result on stdout")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    default_c, pressure_c = _default_concurrency()
    pressure_c = args.pressure_concurrency or pressure_c
    keys = {
        "bare": BARE, "kubegc": KUBEGC, "pressure": PRESSURE, "crictl": CRICTL,
        "pycrictl": PY_CRICTL,
    }  # fmt: skip
    wanted = [c for c in CONTENDERS if args.only is None or c in {keys[k] for k in args.only}]
    crictl = crictl_path()
    result: dict[str, Any] = {
        "benchmark": "whole_process",
        "machine": machine(containerd=True),
        "kubegc": kubegc_command(),
        "sizes": sizes,
        "per_pod": args.per_pod,
        "rounds": args.rounds,
        "concurrency": {"default": default_c, "pressure": pressure_c},
        "crictl": crictl,
    }
    if crictl is None and CRICTL in wanted:
        wanted.remove(CRICTL)
        result["note"] = (
            "crictl one-liner skipped: no crictl beside `scripts/build-control-plane --check "
            "runtime` (build it with scripts/build-control-plane)"
        )
        print(result["note"], file=sys.stderr)
    concurrency = {
        BARE: 4, KUBEGC: default_c, PRESSURE: pressure_c, CRICTL: 0, BEFORE: 4,
        PY_CRICTL: pressure_c,
    }  # fmt: skip
    for n in (int(c) for c in args.concurrencies.split(",") if c.strip()):
        wanted.append(f"kubegc c={n}")
        concurrency[f"kubegc c={n}"] = n
    if args.baseline is not None:
        wanted.append(BEFORE)
        result["baseline"] = str(args.baseline)
    runs: list[Run] = []
    serial = 0
    with local_node() as node:
        # One pod that is alive and desired, as on any node (a pods file that lists no pod at
        # all is refused); every batch's pods are deleted ones.
        from tests.node.localnode import pod_list

        keeper = node.run_pod("keeper", "wp-keep")
        pods_file = node.workdir.parent / "pods.json"
        pods_file.write_text(json.dumps(pod_list([keeper])))
        for round_index in range(args.rounds):
            shift = round_index % len(wanted)
            order = wanted[shift:] + wanted[:shift]
            for size in sizes if round_index % 2 == 0 else sizes[::-1]:
                for contender in order:
                    serial += 1
                    runs.append(
                        one_run(node, contender, size, args.per_pod, serial,
                                concurrency[contender], crictl, pods_file, args.baseline)
                    )  # fmt: skip
    result["runs"] = [asdict(r) | {"per_s": round(r.rate, 1)} for r in runs]
    result["summary"] = summarize(runs)
    result["targets"] = targets(result["summary"])
    finish(result)
    emit(result, render_text(result), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
