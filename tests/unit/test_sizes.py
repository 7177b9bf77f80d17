"""The one sizing (`kubegc_cli.core.sizes`): what removing an object frees on disk, counted
the same way by every command — a file or directory by its allocated blocks, a dead container
by its logs' blocks and its writable layer, a deleted pod's log directory by what stays in it
once its containers' logs go. Table tests on the functions (`container_bytes`'s are in
test_bytes.py); fixture trees for the readers that
use them (log sizes, pod log directories, `du`); the planners that count with them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubegc_cli.core.plan import ContainerAction
from kubegc_cli.core.pods import PodInfo, against_runtime, inventory_of
from kubegc_cli.core.residue import DEAD_CONTAINER
from kubegc_cli.core.sizes import BLOCK, left_in_pod_log_dir, on_disk
from kubegc_cli.node.host.du import tree_usage
from kubegc_cli.node.host.logs import LogRoots, LogSizer, log_bytes
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.podlogs import pod_log_dir_usage, read_pod_log_dirs
from kubegc_cli.policy.containers import ContainerGCPolicy, plan_containers
from kubegc_cli.policy.residue import dead_objects
from tests.unit.factories import NOW, ctr

NO_MOUNTS = MountTable(frozenset({"/"}))


@pytest.mark.parametrize(
    ("blocks", "want"),
    [(0, 0), (1, 512), (8, 4096), (9, 4608), (-1, 0)],
)
def test_a_file_counts_its_allocated_blocks(blocks: int, want: int) -> None:
    assert on_disk(blocks) == want == max(0, blocks) * BLOCK


@pytest.mark.parametrize(
    ("whole", "logs_going", "want"),
    [
        (12288, 4096, 8192),  # two directories' blocks and a stray file stay
        (8192, 0, 8192),  # no container of it removed: all of it
        (8192, 8192, 0),  # (never in practice: the directories themselves stay)
        (4096, 8192, 0),  # a log grew or went meanwhile: never below 0
    ],
)
def test_a_deleted_pods_log_directory_counts_what_stays_once_its_logs_go(
    whole: int, logs_going: int, want: int
) -> None:
    assert left_in_pod_log_dir(whole, logs_going) == want


def _blocks(*paths: Path) -> int:
    return sum(on_disk(os.lstat(p).st_blocks) for p in paths)


def test_every_reader_sizes_a_pod_log_directory_in_blocks_on_disk(tmp_path: Path) -> None:
    """A deleted pod's log directory holding a 56-byte log, its rotated sibling and a file no
    container owns: the container's log counts its blocks (never its 56 bytes), the same in
    `log_bytes` and `LogSizer`; the directory counts every inode's blocks, as `du` does, the
    same in `read_pod_log_dirs`, `pod_log_dir_usage` and `tree_usage`; what stays once the
    log goes is the directories' blocks and the stray file's."""
    root = tmp_path / "var/log/pods"
    pod = root / "ns_p_0f0e0d0c-0b0a-0908-0706-050403020100"
    ctr_dir = pod / "app"
    ctr_dir.mkdir(parents=True)
    (ctr_dir / "0.log").write_bytes(b"x" * 56)
    (ctr_dir / "0.log.20261130-010101").write_bytes(b"y" * 5000)
    (pod / "stray.txt").write_bytes(b"z" * 3)
    log = "/var/log/pods/" + pod.name + "/app/0.log"
    roots = LogRoots(tmp_path, "/var/log/pods")

    logs = _blocks(ctr_dir / "0.log", ctr_dir / "0.log.20261130-010101")
    assert os.lstat(ctr_dir / "0.log").st_size == 56 < logs  # (a block: not its length)
    assert log_bytes(roots, log, NO_MOUNTS) == logs
    assert LogSizer(roots, NO_MOUNTS).bytes_of(log) == logs

    whole = _blocks(pod, ctr_dir, ctr_dir / "0.log", ctr_dir / "0.log.20261130-010101",
                    pod / "stray.txt")  # fmt: skip
    [d] = read_pod_log_dirs(str(root), NO_MOUNTS)
    assert d.bytes == whole == pod_log_dir_usage(str(pod), NO_MOUNTS).bytes
    assert tree_usage(str(pod), NO_MOUNTS).bytes == whole
    assert left_in_pod_log_dir(d.bytes, logs) == _blocks(pod, ctr_dir, pod / "stray.txt")


LAYER = 1 << 20


@pytest.mark.parametrize(
    ("layers", "want"),
    [
        (
            {"d" * 64: (LAYER, 3), "b" * 64: (2 * LAYER, 5)},
            {"d": 4096 + LAYER, "b": 8192 + 2 * LAYER},
        ),
        ({"d" * 64: (None, None)}, {"d": 4096, "b": 8192}),  # layers not reported: logs alone
        (None, {"d": 4096, "b": 8192}),  # layers not read
    ],
)
def test_residue_scan_counts_a_dead_container_as_gc_containers_expects_it(
    layers: dict[str, tuple[int | None, int | None]] | None, want: dict[str, int]
) -> None:
    """`residue scan`'s dead-container bytes are the `expected_bytes` of the same container in
    the container GC plan made with the same layers: logs and writable layer."""
    pods = inventory_of([PodInfo("uid-live", "default", "pod-live")], source="file:p.json")
    containers = [
        ctr("a" * 64, uid="uid-live", name="app", state="RUNNING"),
        ctr("b" * 64, uid="uid-live", name="job", attempt=0, age_s=900, log_bytes=8192),
        ctr("c" * 64, uid="uid-live", name="job", attempt=1, age_s=800, log_bytes=4096),
        ctr("d" * 64, uid="uid-gone", name="app", log_bytes=4096),
    ]
    pods = against_runtime(pods, containers, [])
    found = {f.target[0]: f.bytes for f in dead_objects(containers, [], pods, NOW, layers=layers)
             if f.type == DEAD_CONTAINER}  # fmt: skip
    plan = plan_containers(containers, ContainerGCPolicy(), pods, NOW, layers=layers)
    assert found == want == {a.id[0]: a.planned_bytes for a in plan.actions}
    for a in plan.actions:
        layer = None if layers is None else layers.get(a.id, (None, None))[0]
        assert a.layer_bytes == layer


def test_the_terminated_pods_hint_counts_what_removing_the_containers_frees() -> None:
    """The note on dead containers kept for a Succeeded pod counts their logs and writable
    layers (`planned_bytes`), as `gc containers` would expect to free them."""
    containers = [ctr("s0", uid="done", age_s=300, log_bytes=4096)]
    pods = inventory_of([PodInfo("done", "default", "pod-done", "Succeeded")])
    pods = against_runtime(pods, containers, [])
    plan = plan_containers(
        containers, ContainerGCPolicy(), pods, NOW, layers={"s0": (LAYER - 4096, 2)}
    )
    [kept] = [k for k in plan.kept if isinstance(k, ContainerAction)]
    assert kept.planned_bytes == LAYER
    [hint] = [n for n in plan.notes if "terminated pod(s)" in n]
    assert "kept, 1Mi on disk (logs and writable layers)" in hint, hint


def test_a_write_within_the_same_blocks_moves_a_trees_latest_change(tmp_path: Path) -> None:
    """`TreeUsage.changed_ns` is the newest mtime or ctime below a tree: a write that adds no
    block, a file replaced by one as large, and a backdated mtime all move it, where the
    allocated bytes stay the same."""
    import os
    import time

    from kubegc_cli.node.host.du import tree_usage

    log = tmp_path / "pod" / "app" / "0.log"
    log.parent.mkdir(parents=True)
    log.write_bytes(b"x" * 56)
    first = tree_usage(str(tmp_path / "pod"))
    assert first.changed_ns >= log.stat().st_ctime_ns > 0
    for change in (
        lambda: log.write_bytes(b"x" * 167),  # the same 4Ki block
        lambda: (log.unlink(), log.write_bytes(b"y" * 167)),  # replaced
        lambda: os.utime(log, ns=(0, 0)),  # backdated: its ctime moves
    ):
        before = tree_usage(str(tmp_path / "pod"))
        time.sleep(0.02)
        change()
        after = tree_usage(str(tmp_path / "pod"))
        assert after.bytes == before.bytes and after.changed_ns > before.changed_ns
