"""What the benchmarks share: timing statistics, tables, JSON output, the machine, a local node.

Nothing here asserts anything: the benchmarks measure, print, and say whether each target is
met. Output convention: without ``--json`` the table goes to stdout; with ``--json`` the same
table goes to stderr and one JSON document (the result) to stdout.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.node.localnode import LocalNode

REPO_ROOT = Path(__file__).resolve().parent.parent

_STARTED = time.monotonic()


def log(message: str) -> None:
    """A progress line on stderr, with seconds since the benchmark started."""
    print(f"[{time.monotonic() - _STARTED:7.1f}s] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Statistics and output
# ---------------------------------------------------------------------------------------------


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    """Nearest-rank percentile of already sorted values (p90 of 20 samples is the 18th)."""
    if not sorted_values:
        return math.nan
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize_ms(samples_s: Sequence[float]) -> dict[str, float]:
    """min / median / p90 / mean / max of wall times given in seconds, returned in milliseconds."""
    ms = sorted(s * 1000.0 for s in samples_s)
    n = len(ms)
    if n == 0:
        return {"n": 0}
    mid = n // 2
    median = ms[mid] if n % 2 else (ms[mid - 1] + ms[mid]) / 2
    return {
        "n": n,
        "min_ms": round(ms[0], 1),
        "median_ms": round(median, 1),
        "p90_ms": round(percentile(ms, 0.9), 1),
        "mean_ms": round(sum(ms) / n, 1),
        "max_ms": round(ms[-1], 1),
    }


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain text table; numbers are right-aligned, everything else left-aligned."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))
    numeric = [
        all(isinstance(row[i], int | float) or row[i] in ("", "-") for row in rows) and rows != []
        for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]) for i, v in enumerate(values)
        ]
        return "  ".join(parts).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def _cell(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def verdict(met: bool) -> str:
    return "MET" if met else "MISSED"


def emit(result: dict[str, Any], text: str, *, as_json: bool) -> None:
    """Print the human table (stdout, or stderr with ``--json``) and, with ``--json``, the JSON."""
    if as_json:
        print(text, file=sys.stderr, flush=True)
        json.dump(result, sys.stdout, indent=2, sort_keys=False)
        sys.stdout.write("\n")
    else:
        print(text, flush=True)


# ---------------------------------------------------------------------------------------------
# The machine and the kubegc executable
# ---------------------------------------------------------------------------------------------


def machine(*, containerd: bool = False) -> dict[str, Any]:
    """What the figures were measured on: CPUs, memory, kernel, Python (and containerd)."""
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gib": _memory_gib(),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "python_executable": sys.executable,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "loadavg_at_start": load_average(),
        "speed_probe_ms_at_start": speed_probe_ms(),
        "kubegc_revision": kubegc_revision(),
    }
    if containerd:
        info["containerd"] = _first_line(["containerd", "--version"])
        info["runc"] = _first_line(["runc", "--version"])
    return info


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages: other work on the machine skews every figure."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def speed_probe_ms() -> float:
    """Best of 3 timings of a fixed pure-Python loop (1M additions), in ms.

    A yardstick for how fast this CPU runs Python at the moment: on a shared or loaded machine
    it rises, and every figure of the same run with it.
    """
    best = math.inf
    for _ in range(3):
        began = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        best = min(best, time.perf_counter() - began)
    return round(best * 1000, 1)


def kubegc_revision() -> str:
    """``git describe`` of the repository, ``+dirty`` when kubegc_cli/ has uncommitted edits."""
    try:
        head = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "kubegc_cli"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def finish(result: dict[str, Any]) -> None:
    """Record the load and the speed probe at the end of a benchmark (``machine`` has the start)."""
    result["machine"]["loadavg_at_end"] = load_average()
    result["machine"]["speed_probe_ms_at_end"] = speed_probe_ms()


def conditions(result: dict[str, Any]) -> str:
    """One line: the machine, its load and the speed probe, at start and end."""
    m = result["machine"]
    return (
        f"machine: {m['cpus']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, Python "
        f"{m['python']}; load avg (1m) {m['loadavg_at_start'][:1]} -> "
        f"{m.get('loadavg_at_end', ['?'])[:1]}; speed probe {m['speed_probe_ms_at_start']} -> "
        f"{m.get('speed_probe_ms_at_end', '?')} ms (lower is faster); kubegc "
        f"{m['kubegc_revision']}"
    )


def _cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def _memory_gib() -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def _first_line(command: list[str]) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unavailable"
    return (done.stdout or done.stderr).strip().splitlines()[0] if done.stdout else "unknown"


def kubegc_command() -> list[str]:
    """How to start the installed ``kubegc``: its console script beside this interpreter.

    That is what a node runs. A ``kubegc`` found first on PATH may be a version manager's shim
    (pyenv's is a bash script that adds ~30-100 ms); ``startup.py`` times that one separately.
    Compiles kubegc's modules first: an install has current bytecode, while here (with
    PYTHONDONTWRITEBYTECODE, or a module edited since its .pyc) each run would compile again.
    """
    package = REPO_ROOT / "kubegc_cli"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)
    beside = Path(sys.executable).with_name("kubegc")
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which("kubegc")
    if found:
        return [found]
    return [sys.executable, "-m", "kubegc_cli"]


def other_kubegc_on_path(direct: Sequence[str]) -> str | None:
    """The first ``kubegc`` on PATH that is not ``direct`` (e.g. ``~/.pyenv/shims/kubegc``)."""
    target = Path(direct[0]).resolve()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(directory or ".") / "kubegc"
        usable = candidate.is_file() and os.access(candidate, os.X_OK)
        if usable and len(direct) == 1 and candidate.resolve() != target:
            return str(candidate)
    return None


# ---------------------------------------------------------------------------------------------
# A private containerd (tests/node/localnode.py) that is always torn down
# ---------------------------------------------------------------------------------------------


def _raise_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def sigterm_exits() -> Iterator[None]:
    """Within the block SIGTERM raises SystemExit, so ``finally`` clauses and ``with`` blocks
    (temporary directories, the local node, child processes) are cleaned up."""
    previous = signal.signal(signal.SIGTERM, _raise_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def local_node() -> Iterator[LocalNode]:
    """Start a :class:`LocalNode` in a fresh directory under /tmp; stop it and remove it after.

    The directory (``kgc-bench-*``) also holds any scratch files a benchmark puts in
    ``node.workdir.parent``. SIGTERM is turned into SystemExit meanwhile so the teardown runs.
    Exits with status 2 and the reason when this machine cannot run the node.
    """
    if str(REPO_ROOT) not in sys.path:
        sys.path.insert(0, str(REPO_ROOT))
    from tests.node.localnode import LocalNode, missing_requirements

    missing = missing_requirements()
    if missing:
        print(
            "bench: a local containerd needs root, containerd, ctr, runc and "
            f"containerd-shim-runc-v2; missing here: {', '.join(missing)}",
            file=sys.stderr,
        )
        raise SystemExit(2)
    with sigterm_exits():
        scratch = Path(tempfile.mkdtemp(prefix="kgc-bench-", dir="/tmp"))
        node = LocalNode(scratch / "node")
        try:
            began = time.monotonic()
            node.start()
            log(f"containerd up in {time.monotonic() - began:.1f}s ({node.snapshotter})")
            yield node
        finally:
            began = time.monotonic()
            try:
                node.stop()
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            log(f"node stopped and {scratch} removed in {time.monotonic() - began:.1f}s")


def make_exited(
    node: LocalNode,
    namespace: str,
    *,
    total: int = 200,
    pods: int = 20,
    names: int = 2,
    threads: int = 4,
) -> list[str]:
    """Create ``total`` EXITED containers in ``pods`` pods of ``namespace``; return their ids.

    Each pod gets ``total / pods`` containers spread over ``names`` container names with
    rising attempts (c0 attempt 0, c1 attempt 0, c0 attempt 1, ...), as a crash-looping pod
    leaves them. Pods are filled in ``threads`` parallel threads (one pod per thread at a time;
    on 2 cores more than 4 threads does not help).
    """
    if total < 1 or pods < 1 or names < 1:
        raise ValueError("total, pods and names must be positive")
    pods = min(pods, total)
    began = time.monotonic()

    def fill(index: int) -> list[str]:
        pod = node.run_pod(f"bench-{index:04d}", namespace)
        count = total // pods + (1 if index < total % pods else 0)
        return [node.add_container(pod, f"c{k % names}", attempt=k // names) for k in range(count)]

    with ThreadPoolExecutor(max_workers=threads) as pool:
        ids = [cid for chunk in pool.map(fill, range(pods)) for cid in chunk]
    took = time.monotonic() - began
    log(f"{namespace}: {len(ids)} exited containers in {pods} pods, {took:.1f}s")
    return ids


def phase_breakdown(kubegc_args: Sequence[str], repeats: int) -> list[dict[str, Any]]:
    """Median seconds per phase of ``kubegc ARGS`` run ``repeats`` times (bench/_phases.py)."""
    runs: list[dict[str, float]] = []
    for _ in range(repeats):
        done = subprocess.run(
            [sys.executable, str(REPO_ROOT / "bench" / "_phases.py"), "--", *kubegc_args],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            cwd=REPO_ROOT,
        )
        if done.returncode != 0:
            raise RuntimeError(f"bench/_phases.py failed ({done.returncode}): {done.stderr[-800:]}")
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    labels: list[str] = []
    for r in runs:
        labels.extend(label for label in r if label not in labels)
    return [
        {
            "phase": label,
            "median_ms": round(statistics.median(r.get(label, 0.0) for r in runs) * 1000, 1),
        }
        for label in labels
    ]
