"""Planner benchmark: ``plan_containers`` alone on 100,000 synthetic containers.

No runtime is involved. A fresh child process per measurement builds a realistic container
list (deterministic, ``--seed``), then plans it several times:

* ~20,000 pods (containers / 5) in 40 namespaces, each pod with 1-3 container names; each
  (pod, name) has 1-4 attempts (mean 2.5), the newest RUNNING with probability 0.6, the rest
  dead (EXITED; 1% CREATED, 0.2% UNKNOWN), so about a quarter of all containers run;
* every container is what ``kubegc gc containers`` holds after observing the node: the
  attributes of a CRI ``Container`` message (64-hex id and sandbox id, the four kubelet labels,
  five kubelet annotations, image, image ref and image id, creation time; fresh strings, as a
  reply gives) converted by ``container_from_pb`` as ``CriClient.list_containers`` does (the
  restart count kept of the annotations, equal label maps sharing one dict), and for dead ones
  the log path of the kubelet's layout and a log size (synthetic; no disk is read).

Policies planned (``NO_POD_SOURCE`` unless said):

``default``
    ``ContainerGCPolicy()``: what ``kubegc gc containers`` plans with no flags. The target
    (< 1 s) is judged on its median.
``pods file + MaxContainers``
    a known pod inventory missing 10% of the pods (their containers go: deleted pods), plus
    ``max_containers=10000`` so the share and oldest-overall steps run too.

Memory, target peak < 300 MB at 100,000 containers: the child's peak RSS since it started
(``VmHWM``), which includes building the containers; the increment is that minus the RSS after
the interpreter and kubegc's imports (``VmRSS``). The ``ru_maxrss`` figures (``os.wait4`` of the
child, i.e. ``RUSAGE_CHILDREN`` for one child, and the child's own ``RUSAGE_SELF``) are reported
too; Linux carries the parent's RSS high-water mark into a child's ``ru_maxrss`` across
fork/exec, so those are never below the parent's RSS at spawn, while ``VmHWM`` is the child's own.

``--profile`` adds a cProfile of one more default-policy plan per measurement, with the
cyclic GC off (its share is the "of it GC" column): the top functions by own time.

Also 1,000,000 containers once (targets: the default plan < 5 s, peak RSS < 1 GB), and
``--build cri`` (no target): the same 100,000 delivered as a serialized CRI
``ListContainersResponse`` and converted with kubegc's own ``container_from_pb`` plus the
status fields, as ``kubegc`` does when it observes a node.

Run from the repository root (no root or containerd needed)::

    python -m bench.planner                # table
    python -m bench.planner --json         # table on stderr, JSON on stdout
    python -m bench.planner --no-million --no-cri --profile
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kubegc_cli.core.model import Container

TARGET_SECONDS = 1.0
TARGET_PEAK_MB = 300.0
MILLION = 1_000_000
TARGET_MILLION_SECONDS = 5.0
TARGET_MILLION_PEAK_MB = 1000.0
NOW_NS = 1_800_000_000 * 1_000_000_000
S = 1_000_000_000
IMAGE_VERSIONS = 4  # 500 apps x 3 container names x 4 versions: at most 6,000 images
NAMESPACES = [f"team-{i:02d}" for i in range(39)] + ["kube-system"]
CONTAINER_NAMES = ["app", "sidecar", "metrics-exporter"]
LABEL_POD_NAME = (
    "io.kubernetes.pod.name"  # the kubelet's labels (kubegc_cli.core.model has them too)
)
LABEL_POD_NAMESPACE = "io.kubernetes.pod.namespace"
LABEL_POD_UID = "io.kubernetes.pod.uid"
LABEL_CONTAINER_NAME = "io.kubernetes.container.name"


# ---------------------------------------------------------------------------------------------
# Synthetic node
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Spec:
    """The raw facts of one synthetic container (before it becomes a kubegc Container)."""

    id: str
    sandbox_id: str
    pod_uid: str
    pod_name: str
    namespace: str
    name: str
    attempt: int
    state: str  # RUNNING, EXITED, CREATED, UNKNOWN
    created_at: int
    finished_at: int
    exit_code: int
    image: str
    image_ref: str
    image_id: str
    config_hash: str
    log_bytes: int


def _hex(rng: random.Random, bits: int) -> str:
    return f"{rng.getrandbits(bits):0{bits // 4}x}"


def _uid(rng: random.Random) -> str:
    h = _hex(rng, 128)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def synthetic_specs(total: int, seed: int) -> Iterator[Spec]:
    """Exactly ``total`` containers of a node shaped as the module docstring says."""
    rng = random.Random(seed)
    made = 0
    pod_index = 0
    while made < total:
        pod_index += 1
        namespace = rng.choice(NAMESPACES)
        app = f"svc{rng.randrange(500):03d}"
        pod_name = f"{app}-{_hex(rng, 40)[:10]}-{_hex(rng, 24)[:5]}"
        uid = _uid(rng)
        sandbox = _hex(rng, 256)
        pod_started = NOW_NS - rng.randrange(60 * S, 30 * 86400 * S)
        for name in CONTAINER_NAMES[: rng.randint(1, 3)]:
            # Images (and so digests) come from a pool of at most IMAGE_VERSIONS x 1,500.
            image = f"registry.example.com/{app}-{name}:v1.{rng.randrange(IMAGE_VERSIONS)}"
            digest = hashlib.sha256(image.encode()).hexdigest()
            attempts = rng.randint(1, 4)
            created = pod_started
            for attempt in range(attempts):
                if made == total:
                    return
                newest = attempt == attempts - 1
                if newest and rng.random() < 0.6:
                    state = "RUNNING"
                else:
                    roll = rng.random()
                    state = "UNKNOWN" if roll < 0.002 else "CREATED" if roll < 0.012 else "EXITED"
                created = min(created + rng.randrange(10 * S, 3600 * S), NOW_NS - S)
                finished = 0
                if state == "EXITED":
                    finished = min(created + rng.randrange(S, 600 * S), NOW_NS)
                yield Spec(
                    id=_hex(rng, 256),
                    sandbox_id=sandbox,
                    pod_uid=uid,
                    pod_name=pod_name,
                    namespace=namespace,
                    name=name,
                    attempt=attempt,
                    state=state,
                    created_at=created,
                    finished_at=finished,
                    exit_code=rng.choice((0, 1, 2, 137, 143)) if finished else 0,
                    image=image,
                    image_ref=f"registry.example.com/{app}-{name}@sha256:{digest}",
                    image_id=f"sha256:{digest}",
                    config_hash=_hex(rng, 32),
                    log_bytes=rng.randrange(0, 5_000_000) if state != "RUNNING" else 0,
                )
                made += 1


def _fresh(s: str) -> str:
    """A new str object equal to ``s`` (a CRI reply gives every container its own strings)."""
    return s.encode().decode()


def _labels(spec: Spec) -> dict[str, str]:
    return {
        _fresh(LABEL_CONTAINER_NAME): _fresh(spec.name),
        _fresh(LABEL_POD_NAME): _fresh(spec.pod_name),
        _fresh(LABEL_POD_NAMESPACE): _fresh(spec.namespace),
        _fresh(LABEL_POD_UID): _fresh(spec.pod_uid),
    }


def _annotations(spec: Spec) -> dict[str, str]:
    return {
        _fresh("io.kubernetes.container.hash"): spec.config_hash,
        _fresh("io.kubernetes.container.restartCount"): str(spec.attempt),
        _fresh("io.kubernetes.container.terminationMessagePath"): _fresh("/dev/termination-log"),
        _fresh("io.kubernetes.container.terminationMessagePolicy"): _fresh("File"),
        _fresh("io.kubernetes.pod.terminationGracePeriod"): _fresh("30"),
    }


def _as_observed(listed: list[Container]) -> list[Container]:
    """What ``observe_node`` makes of a listing for ``gc containers``: each dead container gets
    its log path from the kubelet's layout and a log size (synthetic here: no disk is read)."""
    from kubegc_cli.core.model import ContainerState, fill_listed_log
    from kubegc_cli.node.host.logs import kubelet_log_path

    for c in listed:
        if c.state is not ContainerState.RUNNING:
            path = kubelet_log_path("/var/log/pods", c)
            fill_listed_log(c, path, c.created_at % 5_000_000)
    return listed


_PB_STATES = {"CREATED": 0, "RUNNING": 1, "EXITED": 2, "UNKNOWN": 3}  # CRI ContainerState


def _spec_messages(specs: Iterator[Spec], chunk: int) -> Iterator[Any]:
    """The specs as ``ListContainersResponse`` messages of ``chunk`` containers each."""
    from kubegc_cli.node.cri.v1 import api_pb2

    pb: Any = api_pb2
    states = {
        "RUNNING": pb.CONTAINER_RUNNING,
        "EXITED": pb.CONTAINER_EXITED,
        "CREATED": pb.CONTAINER_CREATED,
        "UNKNOWN": pb.CONTAINER_UNKNOWN,
    }
    reply = pb.ListContainersResponse()
    for spec in specs:
        c = reply.containers.add()
        c.id = spec.id
        c.pod_sandbox_id = spec.sandbox_id
        c.metadata.name = spec.name
        c.metadata.attempt = spec.attempt
        c.image.image = spec.image
        c.image_ref = spec.image_ref
        c.image_id = spec.image_id
        c.state = states[spec.state]
        c.created_at = spec.created_at
        c.labels.update(_labels(spec))
        c.annotations.update(_annotations(spec))
        if len(reply.containers) == chunk:
            yield reply
            reply = pb.ListContainersResponse()
    yield reply


def _message(spec: Spec) -> Any:
    """A stand-in for a CRI ``Container`` message: the attributes ``container_from_pb`` reads,
    with fresh strings and dicts as a reply would give (no protobuf arena involved)."""
    from types import SimpleNamespace as M

    return M(
        id=spec.id,
        pod_sandbox_id=_fresh(spec.sandbox_id),
        metadata=M(name=_fresh(spec.name), attempt=spec.attempt),
        state=_PB_STATES[spec.state],
        created_at=spec.created_at,
        labels=_labels(spec),
        annotations=_annotations(spec),
        image=M(image=_fresh(spec.image)),
        image_ref=_fresh(spec.image_ref),
        image_id=_fresh(spec.image_id),
    )


def build_direct(total: int, seed: int) -> list[Container]:
    """The containers kubegc holds after observing the synthetic node for ``gc containers``.

    Each spec goes through ``container_from_pb`` exactly as ``CriClient.list_containers``
    calls it (restart count only, equal label maps shared across the listing), from a stand-in
    message (``_message``), then ``_as_observed``. No protobuf reply is alive, so the memory
    figures are kubegc's own; the ``cri`` build measures a real reply's conversion.
    """
    from kubegc_cli.node.cri.client import Shared, container_from_pb

    shared: Shared = {}
    listed = [container_from_pb(_message(s), False, shared) for s in synthetic_specs(total, seed)]
    return _as_observed(listed)


def write_cri_reply(path: Path, total: int, seed: int, chunk: int = 10_000) -> int:
    """The specs as one serialized ``ListContainersResponse`` (written in concatenated chunks,
    which protobuf parses as one message). Returns the file size."""
    with path.open("wb") as out:
        for reply in _spec_messages(synthetic_specs(total, seed), chunk):
            out.write(reply.SerializeToString())
    return path.stat().st_size


def build_cri(path: Path) -> tuple[list[Container], dict[str, float]]:
    """Parse a whole serialized reply and convert it as ``kubegc gc containers`` does
    (``CriClient.list_containers(annotations=False)``, then ``_as_observed``). The reply is
    alive while it is converted, as in ``kubegc``."""
    from kubegc_cli.node.cri.client import Shared, container_from_pb
    from kubegc_cli.node.cri.v1 import api_pb2

    pb: Any = api_pb2
    times: dict[str, float] = {}
    began = time.perf_counter()
    data = path.read_bytes()
    reply = pb.ListContainersResponse.FromString(data)
    times["parse_s"] = time.perf_counter() - began
    began = time.perf_counter()
    shared: Shared = {}
    listed = [container_from_pb(c, False, shared) for c in reply.containers]
    times["container_from_pb_s"] = time.perf_counter() - began
    times["rss_with_reply_mb"] = _rss_now_mb()
    del reply, data
    began = time.perf_counter()
    out = _as_observed(listed)
    times["log_layout_s"] = time.perf_counter() - began
    return out, times


# ---------------------------------------------------------------------------------------------
# The child: build, plan, measure
# ---------------------------------------------------------------------------------------------


def _maxrss_mb(who: int = resource.RUSAGE_SELF) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024, 1)  # Linux: KiB


def _status_mb(field: str) -> float:
    """``VmRSS`` (now) or ``VmHWM`` (peak since exec) of this process, from /proc, in MB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    return float("nan")


def _rss_now_mb() -> float:
    return _status_mb("VmRSS")


class _GcClock:
    """A ``gc.callbacks`` hook adding up the time the cyclic garbage collector runs."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._began = 0.0

    def reset(self) -> None:
        self.seconds, self.collections = 0.0, 0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began
            self.collections += 1


def _profile(fn: Callable[[], object], top: int = 15) -> list[dict[str, Any]]:
    """cProfile ``fn`` once with the cyclic GC off; the ``top`` functions by own time (ms).

    With the GC on, its pauses land on whatever function allocated when it triggered, which
    hides where the time goes; the GC's own share is measured separately (``gc_median_s``).
    """
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    gc.disable()
    try:
        profiler.runcall(fn)
    finally:
        gc.enable()
    stats: Any = pstats.Stats(profiler)
    rows = []
    for (filename, line, name), (_, calls, own, cumulative, _) in stats.stats.items():
        where = f"{Path(filename).name}:{line}" if line else ""
        rows.append(
            {
                "function": f"{name} {where}".strip(),
                "calls": calls,
                "own_ms": round(own * 1000, 1),
                "cumulative_ms": round(cumulative * 1000, 1),
            }
        )
    rows.sort(key=lambda r: r["own_ms"], reverse=True)
    return rows[:top]


def child(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"rss_interpreter_mb": _rss_now_mb()}
    from kubegc_cli.core.model import ContainerState
    from kubegc_cli.core.pods import NO_POD_SOURCE, PodInfo, inventory_of
    from kubegc_cli.policy.containers import ContainerGCPolicy, plan_containers
    from kubegc_cli.policy.scope import Scope

    if args.build == "cri":
        import kubegc_cli.node.cri.client  # noqa: F401  (what observing a node imports)
    out["rss_after_imports_mb"] = _rss_now_mb()

    began = time.perf_counter()
    if args.build == "cri":
        containers, detail = build_cri(Path(args.data))
        out["build_detail"] = {k: round(v, 3) for k, v in detail.items()}
    else:
        containers = build_direct(args.containers, args.seed)
    out["build_s"] = round(time.perf_counter() - began, 3)
    out["rss_after_build_mb"] = _rss_now_mb()
    out["peak_after_build_mb"] = _status_mb("VmHWM")
    states: dict[str, int] = {}
    for c in containers:
        states[c.state.value] = states.get(c.state.value, 0) + 1
    out["containers"] = len(containers)
    out["states"] = states
    out["pods"] = len({c.pod_uid for c in containers})
    out["evict_units"] = len(
        {(c.pod_uid, c.name) for c in containers if c.state is not ContainerState.RUNNING}
    )

    uids = sorted({c.pod_uid for c in containers})
    known = inventory_of(
        PodInfo(uid=u, namespace="", name="", phase="Running")
        for i, u in enumerate(uids)
        if i % 10  # every tenth pod is gone from the API
    )
    policies = {
        "default": (ContainerGCPolicy(), NO_POD_SOURCE),
        "pods file + MaxContainers": (ContainerGCPolicy(max_containers=10_000), known),
    }
    out["plans"] = {}
    gc_clock = _GcClock()
    gc.callbacks.append(gc_clock)
    for label, (policy, pods) in policies.items():
        seconds = []
        gc_seconds = []
        summary: dict[str, int] = {}
        for _ in range(args.repeats):
            gc_clock.reset()
            began = time.perf_counter()
            plan = plan_containers(containers, policy, pods, NOW_NS, Scope())
            seconds.append(time.perf_counter() - began)
            gc_seconds.append(gc_clock.seconds)
            summary = {"actions": len(plan.actions), "kept": len(plan.kept)}
            summary["gc_collections"] = gc_clock.collections
            del plan
        out["plans"][label] = {
            "seconds": [round(s, 4) for s in seconds],
            "median_s": round(statistics.median(seconds), 4),
            "min_s": round(min(seconds), 4),
            "gc_median_s": round(statistics.median(gc_seconds), 4),
            **summary,
        }
    gc.callbacks.remove(gc_clock)
    if args.profile:
        out["profile"] = _profile(
            lambda: plan_containers(containers, ContainerGCPolicy(), NO_POD_SOURCE, NOW_NS, Scope())
        )
    out["peak_vmhwm_mb"] = _status_mb("VmHWM")
    out["peak_rusage_self_mb"] = _maxrss_mb()
    out["rss_at_end_mb"] = _rss_now_mb()
    return out


def measure(
    build: str, containers: int, seed: int, repeats: int, data: Path | None, profile: bool
) -> dict[str, Any]:
    """Run one child; add its peak RSS as the kernel accounted it (wait4 rusage)."""
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        "--build",
        build,
        "--containers",
        str(containers),
        "--seed",
        str(seed),
        "--repeats",
        str(repeats),
    ]
    if data is not None:
        command += ["--data", str(data)]
    if profile:
        command.append("--profile")
    began = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None
    try:
        output = proc.stdout.read()
        proc.stdout.close()
        _, status, usage = os.wait4(proc.pid, 0)
    except BaseException:  # interrupted (Ctrl-C, SIGTERM): leave no child running
        proc.kill()
        proc.wait()
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"planner child ({build}, {containers}) exited {proc.returncode}")
    result: dict[str, Any] = json.loads(output)
    result["build"] = build
    result["child_wall_s"] = round(time.perf_counter() - began, 2)
    result["peak_rusage_children_mb"] = round(usage.ru_maxrss / 1024, 1)
    result["increment_mb"] = round(result["peak_vmhwm_mb"] - result["rss_after_imports_mb"], 1)
    return result


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def render_text(result: dict[str, Any]) -> str:
    from bench._common import conditions, format_table, verdict

    lines = [
        f"kubegc planner on synthetic containers (seed {result['seed']})",
        conditions(result),
        "",
    ]
    rows = []
    for r in result["measurements"]:
        for label, p in r["plans"].items():
            rows.append(
                [
                    f"{r['containers']:,} ({r['build']})",
                    label,
                    len(p["seconds"]),
                    p["median_s"],
                    p["min_s"],
                    p["gc_median_s"],
                    p["actions"],
                    p["kept"],
                ]
            )
    lines.append(
        format_table(
            [
                "containers (build)",
                "policy",
                "runs",
                "median s",
                "min s",
                "of it GC s",
                "removals",
                "kept",
            ],
            rows,
        )
    )
    lines.append("")
    lines.append(
        format_table(
            [
                "containers (build)",
                "build s",
                "RSS imports MB",
                "RSS built MB",
                "peak MB",
                "ru_maxrss MB",
                "increment MB",
            ],
            [
                [
                    f"{r['containers']:,} ({r['build']})",
                    r["build_s"],
                    r["rss_after_imports_mb"],
                    r["rss_after_build_mb"],
                    r["peak_vmhwm_mb"],
                    r["peak_rusage_children_mb"],
                    r["increment_mb"],
                ]
                for r in result["measurements"]
            ],
        )
    )
    for r in result["measurements"]:
        if "build_detail" in r:
            d = r["build_detail"]
            lines.append(
                f"{r['containers']:,} (cri): reply {result.get('cri_reply_mb', 0):.0f} MB, "
                f"parse {d['parse_s']:.2f}s, container_from_pb {d['container_from_pb_s']:.2f}s, "
                f"log layout {d['log_layout_s']:.2f}s, RSS with reply alive "
                f"{d['rss_with_reply_mb']:.0f} MB"
            )
    for r in result["measurements"]:
        if "profile" in r:
            top = [
                [x["function"], x["calls"], x["own_ms"], x["cumulative_ms"]] for x in r["profile"]
            ]
            lines += [
                "",
                f"cProfile (GC off) of a default plan, {r['containers']:,} ({r['build']}), "
                "by own time:",
                format_table(["function", "calls", "own ms", "cumulative ms"], top),
            ]
    first = result["measurements"][0]
    s = first["states"]
    lines += [
        "",
        f"shape at {first['containers']:,}: {first['pods']:,} pods, {first['evict_units']:,} "
        f"evict units with dead containers, states {s}",
        "",
        format_table(
            ["target", "measured", ""],
            [[t["what"], t["measured"], verdict(t["met"])] for t in result["targets"]],
        ),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--containers", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5, help="plans per policy (5)")
    parser.add_argument("--no-million", action="store_true", help="skip 1,000,000 once")
    parser.add_argument("--no-cri", action="store_true", help="skip the CRI-reply build")
    parser.add_argument("--profile", action="store_true", help="cProfile one plan per child")
    parser.add_argument("--json", action="store_true", help="JSON result on stdout")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--build", choices=["direct", "cri"], default="direct")
    parser.add_argument("--data", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args)))
        return 0

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from bench._common import sigterm_exits

    with sigterm_exits():
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    from bench._common import emit, finish, log, machine

    result: dict[str, Any] = {
        "benchmark": "planner",
        "machine": machine(),
        "seed": args.seed,
        "measurements": [],
    }
    log(f"{args.containers:,} containers, direct build, {args.repeats} plans per policy")
    result["measurements"].append(
        measure("direct", args.containers, args.seed, args.repeats, None, args.profile)
    )
    if not args.no_cri:
        with tempfile.TemporaryDirectory(prefix="kgc-bench-planner-") as tmp:
            reply = Path(tmp) / "list-containers.pb"
            log(f"writing a {args.containers:,}-container ListContainersResponse")
            size = write_cri_reply(reply, args.containers, args.seed)
            result["cri_reply_mb"] = round(size / 1024 / 1024, 1)
            log(f"{args.containers:,} containers, cri build ({size / 1024 / 1024:.0f} MB)")
            result["measurements"].append(
                measure("cri", args.containers, args.seed, args.repeats, reply, args.profile)
            )
    if not args.no_million:
        log("1,000,000 containers, direct build, once")
        result["measurements"].append(measure("direct", MILLION, args.seed, 1, None, False))

    first = result["measurements"][0]
    median = first["plans"]["default"]["median_s"]
    peak = first["peak_vmhwm_mb"]
    result["targets"] = [
        {
            "what": f"plan {first['containers']:,} (default policy) < {TARGET_SECONDS:g} s",
            "measured": f"{median:.3f} s median",
            "met": median < TARGET_SECONDS,
        },
        {
            "what": f"peak RSS at {first['containers']:,} < {TARGET_PEAK_MB:g} MB",
            "measured": f"{peak:.0f} MB (increment {first['increment_mb']:.0f} MB)",
            "met": peak < TARGET_PEAK_MB,
        },
    ]
    for m in result["measurements"]:
        if m["containers"] == MILLION and m["build"] == "direct":
            once, top = m["plans"]["default"]["median_s"], m["peak_vmhwm_mb"]
            result["targets"] += [
                {
                    "what": f"plan {MILLION:,} (default policy) < {TARGET_MILLION_SECONDS:g} s",
                    "measured": f"{once:.3f} s (once)",
                    "met": once < TARGET_MILLION_SECONDS,
                },
                {
                    "what": f"peak RSS at {MILLION:,} < {TARGET_MILLION_PEAK_MB:g} MB",
                    "measured": f"{top:.0f} MB (increment {m['increment_mb']:.0f} MB)",
                    "met": top < TARGET_MILLION_PEAK_MB,
                },
            ]
    finish(result)
    emit(result, render_text(result), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
