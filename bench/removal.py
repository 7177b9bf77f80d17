"""Removal benchmark: 200 exited containers on a real containerd, kubegc against a bare loop.

Every variant gets its own fresh 200 EXITED containers (20 pods x 2 names x 5 attempts, in a
namespace of its own, nothing else on the node) and its own wall-clock timing:

``bare RemoveContainer``
    a ThreadPoolExecutor calling ``RemoveContainer`` through the generated stub, nothing else:
    the floor for removing containers over CRI.
``bare Status+Remove``
    the same plus a ``ContainerStatus`` before each removal (kubegc re-checks each container).
``bare Status+unlink log+Remove``
    the same plus unlinking the log file ContainerStatus names: the per-container work the
    kubelet (and kubegc) does, without kubegc's safety checks.
``kubegc ContainerRemover.run``
    kubegc's executor on an already made plan (observe and plan are done before the clock
    starts): ContainerStatus re-check, log removal under podLogsDir with its checks, legacy
    symlink, RemoveContainer.
``kubegc ContainerRemover.run, deleted pods``
    the executor again on the same plan made for pods that are gone (their sandboxes stopped,
    every action's rule ``deleted-pod``), three times: *without the pod re-check* (what kubegc
    did before it re-checked a deleted pod's liveness right before each removal); *in two
    lists* (one ``ListPodSandbox`` and, when no READY sandbox answers, one ``ListContainers``,
    both filtered by the pod's UID, per container); and *shipped* (``execute.PodLiveness``: one
    baseline of all sandboxes and containers, then one filtered ``ListPodSandbox`` per
    container: an EXITED container never runs again, a NOTREADY sandbox is never READY again).
    Their ratios are the re-check's cost and what the baseline saves.
``kubegc CLI``
    the whole command, a fresh process::

        kubegc -r EP --config CFG --state-dir DIR gc containers --yes --concurrency N \\
            --maximum-dead-containers-per-container 0 --match-kubelet -n NS

    i.e. start-up, observe (Version, ListContainers), plan, lock, re-list, remove, audit log,
    table output. It runs with ``-v``, which says how long its removals took:
``kubegc CLI, its removal phase``
    that time, from each CLI run: the same work the bare loop's clock covers (removing the
    listed containers over a channel), done by the shipped command with its re-checks.

Each is run at concurrency 4; bare RemoveContainer, the executor and the CLI also at 1; every
variant ``--rounds`` times (3), the order rotated each round. Besides wall time, each run
records the CPU time of the client side (this process, or the kubegc process for the CLI)
and of the node's containerd process, per container.
Target: kubegc (c=4) removes at least 0.8x as many containers per second as the bare
RemoveContainer loop (c=4), judged on the CLI's removal phase; the executor in-process and the
whole command (start-up, listing and planning included) are reported beside it. Finally one
more CLI run (c=4) is split into phases in-process (bench/_phases.py) to show where the CLI's
time beyond the executor goes.

Images (``--images N``, default 16, 0 to skip): N fresh unused images removed by kubegc's
``ImageRemover`` (c=4) while the node holds the containers of one more namespace (so that
``ListContainers`` has something to list), in three ways, in the same run:

``images: one list per stage (before)``
    the "in use" set read once before the stage, as kubegc did before re-checking each image;
``images: one list per image``
    a ``ListContainers`` right before each ``RemoveImage``, each removal its own call;
``images: shared fresh list (shipped)``
    the same re-check, but removals that need the list at the same moment share one call begun
    after each asked (``execute.SharedReading``): no check older than its own call would be.

Each reports seconds, ms per image and how many ``ListContainers`` calls were made. The same
three run again against ``tests/unit/faultcri`` serving a synthetic node of ``--big-node``
containers (20000; 0 to skip), where a removal costs next to nothing and the list is what
costs: there removals waiting together share a list.

Run from the repository root, as root (needs containerd and runc)::

    python -m bench.removal                # table
    python -m bench.removal --json         # table on stderr, JSON on stdout
    python -m bench.removal --rounds 1     # one round: ~5 min instead of ~13
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import resource
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # for `python bench/removal.py`

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
    phase_breakdown,
    verdict,
)

if TYPE_CHECKING:
    from tests.node.localnode import LocalNode

TARGET_RATIO = 0.8
RPC_TIMEOUT = 30.0

BARE_REMOVE = "bare RemoveContainer"
BARE_STATUS = "bare Status+Remove"
BARE_EQUIV = "bare Status+unlink log+Remove"
EXECUTOR = "kubegc ContainerRemover.run"
EXEC_POD_BEFORE = "kubegc ContainerRemover.run, deleted pods, no pod re-check (before)"
EXEC_POD_FULL = "kubegc ContainerRemover.run, deleted pods, pod re-check in two lists"
EXEC_POD = "kubegc ContainerRemover.run, deleted pods, pod re-check (shipped)"
IMG_STAGE = "images: one list per stage (before)"
IMG_EACH = "images: one list per image"
IMG_SHARED = "images: shared fresh list (shipped)"
IMAGE_VARIANTS = (IMG_STAGE, IMG_EACH, IMG_SHARED)
CLI = "kubegc CLI (whole command)"
CLI_PHASE = "kubegc CLI, its removal phase"

# (label, concurrency) in the order they run; each round runs them all.
PLAN: list[tuple[str, int]] = [
    (BARE_REMOVE, 4),
    (EXECUTOR, 4),
    (CLI, 4),
    (BARE_STATUS, 4),
    (EXEC_POD_BEFORE, 4),
    (EXEC_POD_FULL, 4),
    (EXEC_POD, 4),
    (BARE_EQUIV, 4),
    (BARE_REMOVE, 1),
    (EXECUTOR, 1),
    (CLI, 1),
]
# Not run on their own: each CLI run also gives its removal phase (`-v` says how long it took).
DERIVED: list[tuple[str, int]] = [(CLI_PHASE, 4), (CLI_PHASE, 1)]


def _proc_cpu_s(pid: int | None) -> float:
    """utime + stime of process ``pid`` (its threads included) from /proc, in seconds."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Meter:
    """Wall time, CPU of the client side (this process and the children it waited for) and CPU
    of the node's containerd process over a ``with`` block."""

    def __init__(self, containerd_pid: int | None) -> None:
        self.containerd_pid = containerd_pid
        self.seconds = self.client_cpu_s = self.containerd_cpu_s = 0.0

    def __enter__(self) -> Meter:
        self._cpu = time.process_time() + _children_cpu_s()
        self._server = _proc_cpu_s(self.containerd_pid)
        self._began = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._began
        self.client_cpu_s = time.process_time() + _children_cpu_s() - self._cpu
        self.containerd_cpu_s = _proc_cpu_s(self.containerd_pid) - self._server


@dataclass
class Run:
    """One timed removal of a namespace's containers."""

    variant: str
    concurrency: int
    namespace: str
    containers: int
    seconds: float
    removed: int
    failed: int = 0
    skipped: int = 0
    remaining: int = 0
    listed_on_node: int = 0
    client_cpu_s: float = 0.0
    containerd_cpu_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.containers / self.seconds if self.seconds > 0 else 0.0


# ---------------------------------------------------------------------------------------------
# The variants
# ---------------------------------------------------------------------------------------------


def _bare(node: LocalNode, ids: list[str], concurrency: int, *, status: bool, unlink: bool) -> Run:
    import grpc

    from kubegc_cli.node.cri.v1 import api_pb2, api_pb2_grpc

    stubs: Any = api_pb2_grpc  # the generated module is untyped
    channel = grpc.insecure_channel(node.endpoint, options=[("grpc.enable_http_proxy", 0)])
    try:
        runtime = stubs.RuntimeServiceStub(channel)
        runtime.Version(api_pb2.VersionRequest(version="v1"), timeout=RPC_TIMEOUT)  # connected

        def one(container_id: str) -> bool:
            try:
                if status:
                    st = runtime.ContainerStatus(
                        api_pb2.ContainerStatusRequest(container_id=container_id),
                        timeout=RPC_TIMEOUT,
                    ).status
                    if unlink and st.log_path:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(st.log_path)
                runtime.RemoveContainer(
                    api_pb2.RemoveContainerRequest(container_id=container_id),
                    timeout=RPC_TIMEOUT,
                )
            except grpc.RpcError:
                return False
            return True

        with Meter(node.pid) as meter, ThreadPoolExecutor(max_workers=concurrency) as pool:
            ok = list(pool.map(one, ids))
    finally:
        channel.close()
    label = BARE_EQUIV if unlink else BARE_STATUS if status else BARE_REMOVE
    return _measured(
        Run(label, concurrency, "", len(ids), 0.0, sum(ok), failed=ok.count(False)), meter
    )


def _stop_sandboxes(node: LocalNode, namespace: str) -> None:
    """Stop every sandbox of `namespace`: its pods are no longer alive (nor READY)."""
    from kubegc_cli.node.cri.v1 import api_pb2

    for sid in node.list_sandboxes(labels={"io.kubernetes.pod.namespace": namespace}):
        node.runtime.StopPodSandbox(
            api_pb2.StopPodSandboxRequest(pod_sandbox_id=sid), timeout=RPC_TIMEOUT
        )


def _executor(
    node: LocalNode,
    namespace: str,
    ids: list[str],
    concurrency: int,
    *,
    deleted: bool = False,
    pod_recheck: str = "shipped",
) -> Run:
    """The executor on an already made plan; `deleted`: the pods are gone (sandboxes stopped,
    every action `deleted-pod`), re-checked right before each removal as `pod_recheck` says:
    "shipped" (`PodLiveness`), "full" (`pod_alive_now`, two lists each time) or "none"
    (kubegc before that re-check)."""
    from unittest import mock

    from kubegc_cli.core.plan import Result
    from kubegc_cli.core.pods import NO_POD_SOURCE
    from kubegc_cli.node.cri.client import CriClient
    from kubegc_cli.node.cri.endpoint import Endpoint
    from kubegc_cli.node.execute import actions as execute
    from kubegc_cli.node.execute.actions import ContainerRemover
    from kubegc_cli.node.host.logs import LogRoots
    from kubegc_cli.node.host.mounts import MountTable
    from kubegc_cli.node.observe import observe_node
    from kubegc_cli.policy.containers import ContainerGCPolicy, plan_containers
    from kubegc_cli.policy.scope import Scope

    client = CriClient(Endpoint(str(node.socket), "bench"))
    try:
        began = time.perf_counter()
        mounts = MountTable.read()
        snapshot = observe_node(
            client, Path("/"), statuses="dead", pod_logs_dir=str(node.pod_logs_dir), mounts=mounts
        )
        plan = plan_containers(
            snapshot.containers,
            ContainerGCPolicy(max_per_pod_container=0, match_kubelet=True),
            NO_POD_SOURCE,
            snapshot.captured_at,
            Scope(namespaces=frozenset({namespace})),
        )
        prepare = time.perf_counter() - began
        actions = [a for a in plan.actions if a.result is Result.PLANNED]
        if deleted:
            _stop_sandboxes(node, namespace)
            for a in actions:
                a.rule = "deleted-pod"
        remover = ContainerRemover(
            client,
            log_roots=LogRoots(Path("/"), str(node.pod_logs_dir)),
            mounts=mounts,
            concurrency=concurrency,
        )

        def full(self: Any, uid: str) -> bool:
            return execute.pod_alive_now(self.client, uid)[0]

        how: Any = {
            "none": mock.patch.object(execute, "pod_refusal", lambda *_: ""),
            "full": mock.patch.object(execute.PodLiveness, "alive", full),
        }.get(pod_recheck, contextlib.nullcontext())
        with how, Meter(node.pid) as meter:
            remover.run(actions)
    finally:
        client.close()
    results = [a.result for a in actions]
    labels = {"none": EXEC_POD_BEFORE, "full": EXEC_POD_FULL, "shipped": EXEC_POD}
    label = labels[pod_recheck] if deleted else EXECUTOR
    run = Run(
        label,
        concurrency,
        namespace,
        len(ids),
        0.0,
        removed=results.count(Result.REMOVED),
        failed=results.count(Result.FAILED),
        skipped=results.count(Result.SKIPPED),
        extra={"planned": len(actions), "observe_and_plan_s": round(prepare, 3)},
    )
    return _measured(run, meter)


def _cli_args(node: LocalNode, namespace: str, concurrency: int, state_dir: Path) -> list[str]:
    return [
        "-r",
        node.endpoint,
        "--kubelet-config",
        str(node.kubelet_config),
        "--state-dir",
        str(state_dir),
        "gc",
        "containers",
        "--yes",
        "--concurrency",
        str(concurrency),
        "--maximum-dead-containers-per-container",
        "0",
        "--match-kubelet",
        "-n",
        namespace,
    ]


def _audit_counts(state_dir: Path) -> dict[str, int]:
    """Results the CLI recorded in its audit table (any SQLite file in the state dir holding
    one; empty when none is readable)."""
    for db in sorted(state_dir.glob("*.db")):
        try:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
            try:
                rows = con.execute("SELECT result, COUNT(*) FROM audit GROUP BY result").fetchall()
            finally:
                con.close()
        except sqlite3.Error:
            continue
        return {str(result): int(count) for result, count in rows}
    return {}


# kubegc -v, after each stage of removals.
_STAGE_LINE = re.compile(r"container: (\d+) acted on in ([0-9.]+) s")


def _cli(node: LocalNode, namespace: str, ids: list[str], concurrency: int) -> Run:
    state_dir = node.workdir.parent / f"state-{namespace}"
    command = [*kubegc_command(), "-v", *_cli_args(node, namespace, concurrency, state_dir)]
    with Meter(node.pid) as meter:
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    counts = _audit_counts(state_dir)
    extra: dict[str, Any] = {"exit_code": done.returncode, "audit": counts}
    stage = _STAGE_LINE.search(done.stderr)
    if stage is not None:
        extra["removal_phase_s"] = float(stage.group(2))
    if done.returncode != 0:
        extra["stderr"] = done.stderr[-800:]
    run = Run(
        CLI,
        concurrency,
        namespace,
        len(ids),
        0.0,
        removed=counts.get("removed", 0),
        failed=counts.get("failed", 0),
        skipped=counts.get("skipped", 0),
        extra=extra,
    )
    return _measured(run, meter)


def _measured(run: Run, meter: Meter) -> Run:
    run.seconds = meter.seconds
    run.client_cpu_s = round(meter.client_cpu_s, 3)
    run.containerd_cpu_s = round(meter.containerd_cpu_s, 3)
    return run


def run_variant(
    node: LocalNode, label: str, concurrency: int, namespace: str, args: argparse.Namespace
) -> Run:
    ids = make_exited(node, namespace, total=args.containers, pods=args.pods)
    listed = len(node.list_containers())
    log(f"{label} c={concurrency}: removing {len(ids)} ({listed} containers on the node)")
    runners: dict[str, Callable[[], Run]] = {
        BARE_REMOVE: lambda: _bare(node, ids, concurrency, status=False, unlink=False),
        BARE_STATUS: lambda: _bare(node, ids, concurrency, status=True, unlink=False),
        BARE_EQUIV: lambda: _bare(node, ids, concurrency, status=True, unlink=True),
        EXECUTOR: lambda: _executor(node, namespace, ids, concurrency),
        EXEC_POD_BEFORE: lambda: _executor(
            node, namespace, ids, concurrency, deleted=True, pod_recheck="none"
        ),
        EXEC_POD_FULL: lambda: _executor(
            node, namespace, ids, concurrency, deleted=True, pod_recheck="full"
        ),
        EXEC_POD: lambda: _executor(node, namespace, ids, concurrency, deleted=True),
        CLI: lambda: _cli(node, namespace, ids, concurrency),
    }
    run = runners[label]()
    run.namespace = namespace
    run.listed_on_node = listed
    run.remaining = len(node.container_ids(namespace=namespace))
    if label == CLI and not run.extra.get("audit") and run.extra.get("exit_code") == 0:
        run.removed = len(ids) - run.remaining  # no audit table found: count from the runtime
        run.extra["removed_counted_from"] = "runtime (no audit table)"
    log(f"  {run.seconds:.2f}s, {run.rate:.1f}/s, removed {run.removed}, left {run.remaining}")
    node.remove_namespace(namespace)
    return run


def cli_breakdown(node: LocalNode, args: argparse.Namespace) -> list[dict[str, Any]]:
    namespace = "rm-phases"
    make_exited(node, namespace, total=args.containers, pods=args.pods)
    log("kubegc CLI c=4 split into phases (bench/_phases.py)")
    state_dir = node.workdir.parent / f"state-{namespace}"
    phases = phase_breakdown(_cli_args(node, namespace, 4, state_dir), 1)
    node.remove_namespace(namespace)
    return phases


# ---------------------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------------------


class _Counted:
    """`client.list_containers`, counted."""

    def __init__(self, client: Any) -> None:
        self.client, self.calls = client, 0

    def __call__(self) -> Any:
        self.calls += 1
        return self.client.list_containers(annotations=False)


class _Fixed:
    """A reading taken once (the stage's list, as before the per-image re-check)."""

    def __init__(self, value: frozenset[str]) -> None:
        self.value = value

    def get(self) -> frozenset[str]:
        return self.value


class _EachTime:
    """A reading taken anew by every caller (no sharing)."""

    def __init__(self, read: Callable[[], frozenset[str]]) -> None:
        self.read = read

    def get(self) -> frozenset[str]:
        return self.read()


def image_run(node: LocalNode, label: str, serial: int, count: int) -> dict[str, Any]:
    """Import `count` unused images on the local containerd, then remove them with
    `ImageRemover` (c=4) as `label` says; returns the timing and the ListContainers calls."""
    made = {
        node.import_image(f"docker.io/library/bench-{serial:02d}-{i:03d}:1", seed=f"{serial}-{i}")
        for i in range(count)
    }
    return _remove_images(str(node.socket), node.pid, made, label)


def _remove_images(
    socket: str, server_pid: int | None, ids: set[str], label: str
) -> dict[str, Any]:
    """Remove the images `ids` over the CRI socket with `ImageRemover` (c=4), its "in use"
    re-check done as `label` says."""
    from kubegc_cli.core.model import image_refs_in_use
    from kubegc_cli.core.plan import ImageAction, Result
    from kubegc_cli.node.cri.client import CriClient
    from kubegc_cli.node.cri.endpoint import Endpoint
    from kubegc_cli.node.execute.actions import ImageRemover, SharedReading

    client = CriClient(Endpoint(socket, "bench"), max_recv_bytes=1 << 30)
    try:
        images = [i for i in client.list_images() if i.id in ids]
        actions = [ImageAction(i, 1, 0, "prune-unused", "bench") for i in images]
        remover = ImageRemover(client, concurrency=4)
        listing = _Counted(client)

        def refs() -> frozenset[str]:
            return frozenset(image_refs_in_use(listing()))

        with Meter(server_pid) as meter:
            if label == IMG_STAGE:
                remover._refs = _Fixed(refs())  # type: ignore[assignment]
            elif label == IMG_EACH:
                remover._refs = _EachTime(refs)  # type: ignore[assignment]
            else:
                remover._refs = SharedReading(refs)
            remover.run(actions)
    finally:
        client.close()
    removed = sum(1 for a in actions if a.result is Result.REMOVED)
    row = {
        "variant": label,
        "images": len(actions),
        "removed": removed,
        "seconds": round(meter.seconds, 3),
        "ms_per_image": round(meter.seconds / max(1, len(actions)) * 1000, 2),
        "list_containers_calls": listing.calls,
        "client_cpu_s": round(meter.client_cpu_s, 3),
        "containerd_cpu_s": round(meter.containerd_cpu_s, 3),
    }
    log(f"{label}: {row['seconds']}s for {len(actions)} images, {listing.calls} list(s)")
    return row


def big_node_images(containers: int, count: int, rounds: int) -> list[dict[str, Any]]:
    """The three image variants against tests/unit/faultcri serving a synthetic node of
    `containers` containers (removals there cost next to nothing, so the re-check's
    ListContainers is what is measured); `count` fresh unused images per run."""
    import tempfile

    from tests.unit.faultcri import FaultCri, image_pb, synthetic_inventory

    inv = synthetic_inventory(containers, max(1, containers // 10), 100)
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="kgc-") as d,
        FaultCri(Path(d) / "c.sock", inv, cache_lists=True) as cri,
    ):
        for round_index in range(rounds):
            shift = round_index % len(IMAGE_VARIANTS)
            for label in IMAGE_VARIANTS[shift:] + IMAGE_VARIANTS[:shift]:
                ids = {f"sha256:{round_index:02d}{label[8:12]}{i:058d}" for i in range(count)}
                for iid in ids:
                    inv.images[iid] = image_pb(iid, f"bench/unused:{iid[-12:]}", 1000)
                rows.append(_remove_images(str(cri.socket), None, ids, label))
    return rows


def image_summary(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per image variant: median seconds and ms per image over the rounds, median lists."""
    out = []
    for label in IMAGE_VARIANTS:
        mine = [r for r in rows if r["variant"] == label]
        if not mine:
            continue
        out.append(
            {
                "variant": label,
                "rounds": len(mine),
                "images": mine[0]["images"],
                "median_s": round(statistics.median(r["seconds"] for r in mine), 3),
                "ms_per_image": round(statistics.median(r["ms_per_image"] for r in mine), 2),
                "list_containers_calls": statistics.median(
                    r["list_containers_calls"] for r in mine
                ),
                "all_removed": all(r["removed"] == r["images"] for r in mine),
            }
        )
    return out


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def summarize(runs: list[Run]) -> list[dict[str, Any]]:
    """Per (variant, concurrency) over the rounds: median and best wall time, rates, CPU."""
    rows = []
    for label, concurrency in PLAN + DERIVED:
        mine = [r for r in runs if r.variant == label and r.concurrency == concurrency]
        if not mine:
            continue
        seconds = statistics.median(r.seconds for r in mine)
        best = min(r.seconds for r in mine)
        containers = mine[0].containers
        rows.append(
            {
                "variant": label,
                "concurrency": concurrency,
                "rounds": len(mine),
                "median_s": round(seconds, 3),
                "min_s": round(best, 3),
                "containers_per_s": round(containers / seconds, 1),
                "best_containers_per_s": round(containers / best, 1),
                "ms_per_container": round(seconds / containers * 1000, 2),
                "client_cpu_ms_per_container": round(
                    statistics.median(r.client_cpu_s for r in mine) / containers * 1000, 2
                ),
                "containerd_cpu_ms_per_container": round(
                    statistics.median(r.containerd_cpu_s for r in mine) / containers * 1000, 2
                ),
                "all_removed": all(r.remaining == 0 and r.removed == containers for r in mine),
            }
        )
    return rows


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rate ratios, from the medians (judged) and from the best runs (less hit by load)."""
    median = {(r["variant"], r["concurrency"]): r["containers_per_s"] for r in rows}
    best = {(r["variant"], r["concurrency"]): r["best_containers_per_s"] for r in rows}
    pairs = [
        (EXECUTOR, 4, BARE_REMOVE, 4, False),
        (CLI_PHASE, 4, BARE_REMOVE, 4, True),
        (CLI, 4, BARE_REMOVE, 4, False),
        (EXECUTOR, 4, BARE_STATUS, 4, False),
        (EXEC_POD, 4, EXEC_POD_BEFORE, 4, False),
        (EXEC_POD_FULL, 4, EXEC_POD_BEFORE, 4, False),
        (EXEC_POD, 4, EXEC_POD_FULL, 4, False),
        (EXECUTOR, 4, BARE_EQUIV, 4, False),
        (EXECUTOR, 1, BARE_REMOVE, 1, False),
        (CLI_PHASE, 1, BARE_REMOVE, 1, False),
        (CLI, 1, BARE_REMOVE, 1, False),
        (EXECUTOR, 4, EXECUTOR, 1, False),
        (BARE_REMOVE, 4, BARE_REMOVE, 1, False),
    ]
    out = []
    for a, ca, b, cb, targeted in pairs:
        if (a, ca) in median and (b, cb) in median:
            value = median[(a, ca)] / median[(b, cb)]
            out.append(
                {
                    "ratio": f"{a} c={ca} / {b} c={cb}",
                    "value": round(value, 3),
                    "value_best": round(best[(a, ca)] / best[(b, cb)], 3),
                    "target": TARGET_RATIO if targeted else None,
                    "met": (value >= TARGET_RATIO) if targeted else None,
                }
            )
    return out


def _image_table(rows: list[dict[str, Any]]) -> str:
    """The image-removal variants as a table: one row per variant."""
    return format_table(
        ["variant", "rounds", "median s", "ms/image", "ListContainers calls", "all removed"],
        [
            [
                r["variant"],
                r["rounds"],
                r["median_s"],
                r["ms_per_image"],
                r["list_containers_calls"],
                "yes" if r["all_removed"] else "NO",
            ]
            for r in rows
        ],
    )


def render_text(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        f"kubegc removal of {result['containers']} exited containers per run "
        f"({result['rounds']} round(s)); {m.get('containerd', '')}",
        conditions(result),
        "",
        format_table(
            [
                "variant",
                "c",
                "median s",
                "best s",
                "containers/s",
                "ms/container",
                "client CPU ms/c",
                "containerd CPU ms/c",
                "all removed",
            ],
            [
                [
                    r["variant"],
                    r["concurrency"],
                    r["median_s"],
                    r["min_s"],
                    r["containers_per_s"],
                    r["ms_per_container"],
                    r["client_cpu_ms_per_container"],
                    r["containerd_cpu_ms_per_container"],
                    "yes" if r["all_removed"] else "NO",
                ]
                for r in result["summary"]
            ],
        ),
        "(containers/s and ms/container from the median; CPU per container: medians; client = "
        "this process or the kubegc process)",
        "",
        format_table(
            ["rate ratio", "median", "best", "target", ""],
            [
                [
                    r["ratio"],
                    r["value"],
                    r["value_best"],
                    f">= {r['target']}" if r["target"] else "",
                    verdict(r["met"]) if r["met"] is not None else "",
                ]
                for r in result["ratios"]
            ],
        ),
        "(target judged on the median ratio)",
    ]
    if result.get("images_summary"):
        first = result["images_summary"][0]
        lines += [
            "",
            f"image removal, {first['images']} unused images per run at c=4, with "
            f"{result['image_background_containers']} containers on the node:",
            _image_table(result["images_summary"]),
        ]
    if result.get("images_big_node_summary"):
        first = result["images_big_node_summary"][0]
        lines += [
            "",
            f"the same on a synthetic node (tests/unit/faultcri) of {result['big_node']} "
            f"containers, {first['images']} images per run at c=4:",
            _image_table(result["images_big_node_summary"]),
        ]
    if result.get("cli_phases"):
        lines += [
            "",
            "kubegc CLI c=4, one more run split into phases (interpreter start-up not included):",
            format_table(
                ["phase", "ms"], [[p["phase"], p["median_ms"]] for p in result["cli_phases"]]
            ),
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--containers", type=int, default=200, help="per run (200)")
    parser.add_argument("--pods", type=int, default=20, help="pods they are spread over (20)")
    parser.add_argument("--rounds", type=int, default=3, help="times to run every variant (3)")
    parser.add_argument(
        "--only",
        action="append",
        choices=["bare", "status", "equiv", "executor", "pods", "cli", "images"],
        help="run only these variants (repeatable)",
    )
    parser.add_argument("--images", type=int, default=16, help="per image run (16; 0: none)")
    parser.add_argument(
        "--big-node", type=int, default=20000,
        help="containers of the synthetic node for the image runs (20000; 0: none)",
    )  # fmt: skip
    parser.add_argument("--no-breakdown", action="store_true", help="skip the CLI phase run")
    parser.add_argument("--json", action="store_true", help="JSON result on stdout")
    args = parser.parse_args(argv)
    keys = {"bare": BARE_REMOVE, "status": BARE_STATUS, "equiv": BARE_EQUIV}
    keys |= {"executor": EXECUTOR, "cli": CLI}
    pods = {EXEC_POD_BEFORE, EXEC_POD_FULL, EXEC_POD}
    chosen = set(args.only or [*keys, "pods", "images"])
    wanted = {keys[k] for k in chosen if k in keys} | (pods if "pods" in chosen else set())
    images = args.images if "images" in chosen else 0

    result: dict[str, Any] = {
        "benchmark": "removal",
        "machine": machine(containerd=True),
        "kubegc": kubegc_command(),
        "containers": args.containers,
        "pods": args.pods,
        "rounds": args.rounds,
    }
    runs: list[Run] = []
    with local_node() as node:
        serial = 0
        for round_index in range(args.rounds):
            # Later rounds start further down the list, so no variant always runs first.
            shift = (3 * round_index) % len(PLAN)
            for label, concurrency in PLAN[shift:] + PLAN[:shift]:
                if label not in wanted:
                    continue
                serial += 1
                run = run_variant(node, label, concurrency, f"rm-{serial:02d}", args)
                runs.append(run)
                if "removal_phase_s" in run.extra:
                    runs.append(replace(run, variant=CLI_PHASE, client_cpu_s=0.0,
                                        containerd_cpu_s=0.0,
                                        seconds=run.extra["removal_phase_s"]))  # fmt: skip
        if images > 0:
            make_exited(node, "img-bg", total=args.containers, pods=args.pods)
            result["image_background_containers"] = len(node.list_containers())
            image_rows = []
            for round_index in range(args.rounds):
                shift = round_index % len(IMAGE_VARIANTS)
                for label in IMAGE_VARIANTS[shift:] + IMAGE_VARIANTS[:shift]:
                    serial += 1
                    image_rows.append(image_run(node, label, serial, images))
            node.remove_namespace("img-bg")
            result["images_runs"] = image_rows
            result["images_summary"] = image_summary(image_rows)
            if args.big_node > 0:
                big = big_node_images(args.big_node, images, args.rounds)
                result["big_node"] = args.big_node
                result["images_big_node_runs"] = big
                result["images_big_node_summary"] = image_summary(big)
        if not args.no_breakdown and CLI in wanted:
            result["cli_phases"] = cli_breakdown(node, args)
    result["runs"] = [asdict(r) | {"containers_per_s": round(r.rate, 1)} for r in runs]
    result["summary"] = summarize(runs)
    result["ratios"] = ratios(result["summary"])
    finish(result)
    emit(result, render_text(result), as_json=args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
