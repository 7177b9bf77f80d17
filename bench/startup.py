"""Start-up benchmark: how long a fresh ``kubegc`` process takes, wall clock.

Measures, each in a new process every time (file cache warm, bytecode cached; a discarded
warm-up run first):

* ``python -c pass`` with the same interpreter: the floor every Python CLI pays here;
* ``kubegc --version`` (target < 150 ms);
* ``kubegc gc containers --dry-run`` against a private containerd holding 200 dead containers
  (target < 500 ms), with the default table output and with ``-o json``;
* the ``kubegc`` first on PATH when it is not the console script itself (a pyenv shim, say).

The commands are run round-robin (one of each per round) so drifts of the machine hit all
alike. ``hyperfine`` is used instead when it is installed (``--no-hyperfine`` to skip it).
Also reports the top modules of ``python -X importtime`` for ``--version`` (median of a few
runs) and an in-process breakdown of the dry run (imports, CRI reads, planning, rendering).

Run from the repository root, as root (the dry run needs containerd and runc)::

    python -m bench.startup                # table
    python -m bench.startup --json         # table on stderr, JSON on stdout
    python -m bench.startup --no-node      # only --version (no containerd needed)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for `python bench/startup.py`

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
    other_kubegc_on_path,
    phase_breakdown,
    sigterm_exits,
    summarize_ms,
    verdict,
)

TARGET_VERSION_MS = 150.0
TARGET_DRY_RUN_MS = 500.0


# ---------------------------------------------------------------------------------------------
# Timing fresh processes
# ---------------------------------------------------------------------------------------------


def _run_once(command: Sequence[str]) -> float:
    began = time.perf_counter()
    done = subprocess.run(
        command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    elapsed = time.perf_counter() - began
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {done.returncode}: {done.stderr.decode()[-500:]}"
        )
    return elapsed


def time_round_robin(
    commands: dict[str, list[str]], runs: int, warmup: int
) -> dict[str, list[float]]:
    """Wall seconds of ``runs`` fresh runs of each command, one of each per round."""
    for _ in range(warmup):
        for command in commands.values():
            _run_once(command)
    samples: dict[str, list[float]] = {label: [] for label in commands}
    for _ in range(runs):
        for label, command in commands.items():
            samples[label].append(_run_once(command))
    return samples


def time_hyperfine(
    commands: dict[str, list[str]], runs: int, warmup: int, hyperfine: str
) -> dict[str, list[float]]:
    """The same with hyperfine (``--shell=none``, so no shell start-up is added)."""
    with tempfile.TemporaryDirectory(prefix="kgc-hyperfine-") as tmp:
        export = Path(tmp) / "out.json"
        argv = [
            hyperfine,
            "--shell=none",
            "--style=none",
            f"--runs={runs}",
            f"--warmup={warmup}",
            f"--export-json={export}",
        ]
        for label, command in commands.items():
            argv += ["--command-name", label, subprocess.list2cmdline(command)]
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        data = json.loads(export.read_text())
    return {str(r.get("command")): [float(t) for t in r["times"]] for r in data["results"]}


def time_commands(
    commands: dict[str, list[str]], runs: int, warmup: int, use_hyperfine: bool
) -> tuple[dict[str, list[float]], str]:
    hyperfine = shutil.which("hyperfine") if use_hyperfine else None
    if hyperfine:
        try:
            return time_hyperfine(commands, runs, warmup, hyperfine), "hyperfine"
        except (subprocess.CalledProcessError, KeyError, ValueError) as exc:
            log(f"hyperfine failed ({exc}); timing subprocess.run instead")
    return time_round_robin(commands, runs, warmup), "subprocess.run, round-robin"


# ---------------------------------------------------------------------------------------------
# python -X importtime
# ---------------------------------------------------------------------------------------------


def _with_importtime(command: Sequence[str]) -> list[str]:
    if command[0] == sys.executable:
        return [sys.executable, "-X", "importtime", *command[1:]]
    return [sys.executable, "-X", "importtime", *command]  # the console script is Python


def parse_importtime(stderr: str) -> list[tuple[str, int, int, int]]:
    """``-X importtime`` lines → (module, depth, self µs, cumulative µs)."""
    rows = []
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        fields = line[len("import time:") :].split("|")
        if len(fields) != 3:
            continue
        try:
            self_us, cumulative_us = int(fields[0]), int(fields[1])
        except ValueError:  # the header line
            continue
        name = fields[2]
        stripped = name.lstrip(" ")
        depth = (len(name) - len(stripped) - 1) // 2
        rows.append((stripped, depth, self_us, cumulative_us))
    return rows


@dataclass(frozen=True)
class ImportCost:
    module: str
    depth: int
    self_ms: float
    cumulative_ms: float


def importtime_report(command: Sequence[str], repeats: int, top: int = 5) -> dict[str, Any]:
    """Median self and cumulative import times per module over ``repeats`` runs; the top ones.

    ``site_ms`` is what the interpreter's ``site`` step took (``.pth`` files of the environment,
    an editable install's finder), paid by any Python program here, kubegc or not.
    """
    per_module: dict[str, list[tuple[int, int, int]]] = {}
    for _ in range(repeats):
        done = subprocess.run(
            _with_importtime(command), capture_output=True, text=True, stdin=subprocess.DEVNULL
        )
        for name, depth, self_us, cumulative_us in parse_importtime(done.stderr):
            per_module.setdefault(name, []).append((depth, self_us, cumulative_us))
    modules = [
        ImportCost(
            module=name,
            depth=values[0][0],
            self_ms=round(statistics.median(v[1] for v in values) / 1000, 1),
            cumulative_ms=round(statistics.median(v[2] for v in values) / 1000, 1),
        )
        for name, values in per_module.items()
    ]
    top_level = sorted(
        (m for m in modules if m.depth == 0), key=lambda m: m.cumulative_ms, reverse=True
    )
    by_cumulative = sorted(modules, key=lambda m: m.cumulative_ms, reverse=True)
    by_self = sorted(modules, key=lambda m: m.self_ms, reverse=True)
    return {
        "command": _with_importtime(command),
        "repeats": repeats,
        "modules_imported": len(modules),
        "total_ms": round(sum(m.cumulative_ms for m in top_level), 1),
        "site_ms": round(sum(m.cumulative_ms for m in top_level if m.module == "site"), 1),
        "top_cumulative": [asdict(m) for m in by_cumulative[:top]],
        "top_self": [asdict(m) for m in by_self[:top]],
        "top_level": [asdict(m) for m in top_level[:8]],
    }


def without_site(*kubegc_args: str) -> list[str]:
    """``kubegc ARGS`` under ``python -S``: no ``site`` step, so no ``.pth`` file runs.

    Shows what the same code costs without this environment's start-up extras (an editable
    install's import finder, other ``.pth`` hooks): roughly a plain wheel install. The repo
    and site-packages are put on ``sys.path`` by hand.
    """
    paths = [str(REPO_ROOT), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    code = (
        f"import sys; sys.path[1:1] = {paths!r}; "
        f"from kubegc_cli.cli.main import main; main({list(kubegc_args)!r})"
    )
    return [sys.executable, "-S", "-c", code]


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs per command (20)")
    parser.add_argument("--warmup", type=int, default=2, help="discarded runs first (2)")
    parser.add_argument("--containers", type=int, default=200, help="dead containers (200)")
    parser.add_argument("--importtime-runs", type=int, default=5)
    parser.add_argument("--no-node", action="store_true", help="skip the dry run")
    parser.add_argument("--no-hyperfine", action="store_true")
    parser.add_argument("--json", action="store_true", help="JSON result on stdout")
    args = parser.parse_args(argv)
    with sigterm_exits():  # a hyperfine temp dir and the node are cleaned up on SIGTERM too
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    kubegc = kubegc_command()
    result: dict[str, Any] = {
        "benchmark": "startup",
        "machine": machine(containerd=not args.no_node),
        "kubegc": kubegc,
        "runs": args.runs,
        "warmup": args.warmup,
    }
    commands = {
        "python -c pass (floor)": [sys.executable, "-c", "pass"],
        "kubegc --version": [*kubegc, "--version"],
        "python -S -c pass": [sys.executable, "-S", "-c", "pass"],
        "kubegc --version under python -S": without_site("--version"),
    }
    shim = other_kubegc_on_path(kubegc)
    if shim:
        commands[f"{shim} --version"] = [shim, "--version"]
    log(f"timing {len(commands)} commands x {args.runs} runs")
    samples, method = time_commands(commands, args.runs, args.warmup, not args.no_hyperfine)
    result["method"] = method
    timings = {label: summarize_ms(s) for label, s in samples.items()}

    log("python -X importtime kubegc --version")
    result["importtime_version"] = importtime_report([*kubegc, "--version"], args.importtime_runs)

    if not args.no_node:
        with local_node() as node:
            make_exited(node, "startup", total=args.containers, pods=max(1, args.containers // 10))
            state_dir = node.workdir.parent / "kubegc-state"
            base = [
                "-r",
                node.endpoint,
                "--kubelet-config",
                str(node.kubelet_config),
                "--state-dir",
                str(state_dir),
                "gc",
                "containers",
                "--dry-run",
            ]
            check = subprocess.run(
                [*kubegc, *base, "-o", "json"], capture_output=True, text=True, check=True
            )
            summary = json.loads(check.stdout)["summary"]
            result["dry_run_plan"] = {
                "dead_containers": args.containers,
                "planned_removals": summary["total"],
                "kept": summary["kept"],
            }
            dry = {
                "kubegc gc containers --dry-run": [*kubegc, *base],
                "kubegc gc containers --dry-run -o json": [*kubegc, *base, "-o", "json"],
            }
            log(f"timing {len(dry)} dry-run commands x {args.runs} runs")
            dry_samples, _ = time_commands(dry, args.runs, args.warmup, not args.no_hyperfine)
            timings.update({label: summarize_ms(s) for label, s in dry_samples.items()})
            log("in-process breakdown of the dry run")
            result["dry_run_breakdown"] = {
                "table": phase_breakdown(base, 5),
                "json": phase_breakdown([*base, "-o", "json"], 5),
            }
    result["timings"] = timings

    targets = {"kubegc --version": TARGET_VERSION_MS}
    if not args.no_node:
        targets["kubegc gc containers --dry-run"] = TARGET_DRY_RUN_MS
    result["targets"] = {
        label: {
            "target_ms": target,
            "median_ms": timings[label]["median_ms"],
            "met": timings[label]["median_ms"] < target,
            "p90_met": timings[label]["p90_ms"] < target,
        }
        for label, target in targets.items()
    }
    finish(result)
    emit(result, render_text(result), as_json=args.json)
    return 0


def render_text(result: dict[str, Any]) -> str:
    lines = [
        f"kubegc start-up ({result['method']}; {result['runs']} runs each after "
        f"{result['warmup']} warm-up)",
        conditions(result),
        f"kubegc = {' '.join(result['kubegc'])}",
        "",
    ]
    rows = []
    for label, t in result["timings"].items():
        target = result["targets"].get(label)
        rows.append(
            [
                label,
                t["min_ms"],
                t["median_ms"],
                t["p90_ms"],
                f"< {target['target_ms']:.0f}" if target else "",
                verdict(target["met"]) if target else "",
            ]
        )
    lines.append(format_table(["command", "min ms", "median ms", "p90 ms", "target", ""], rows))
    lines.append("(target judged on the median)")
    if "dry_run_plan" in result:
        p = result["dry_run_plan"]
        lines.append(
            f"dry run plan: {p['dead_containers']} dead containers, {p['planned_removals']} "
            f"planned removals, {p['kept']} kept"
        )
    imp = result["importtime_version"]
    lines += [
        "",
        f"python -X importtime kubegc --version (median of {imp['repeats']} runs): "
        f"{imp['modules_imported']} modules, {imp['total_ms']:.1f} ms of imports, of which "
        f"site (interpreter start-up, .pth files) {imp['site_ms']:.1f} ms",
        format_table(
            ["top cumulative", "cumul ms", "self ms"],
            [[x["module"], x["cumulative_ms"], x["self_ms"]] for x in imp["top_cumulative"]],
        ),
        "",
        format_table(
            ["top self", "self ms", "cumul ms"],
            [[x["module"], x["self_ms"], x["cumulative_ms"]] for x in imp["top_self"]],
        ),
    ]
    for kind, phases in result.get("dry_run_breakdown", {}).items():
        lines += [
            "",
            f"dry run ({kind} output), in-process phases, median of 5 (interpreter start-up "
            "not included; see the floor above):",
            format_table(["phase", "ms"], [[p["phase"], p["median_ms"]] for p in phases]),
        ]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
