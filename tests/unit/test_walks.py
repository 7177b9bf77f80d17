"""Walks that size or list stay on their filesystem and cannot hang past `--timeout`
(kubegc_cli.node.host.bounded, host.du, host.podlogs, host.logs), against a real mount that never
answers (tests/unit/hangfs.py: a FUSE filesystem whose daemon never replies, as a stale NFS
or FUSE mount behaves)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubegc_cli.core.pods import PodInventory
from kubegc_cli.node.host.bounded import Stalled, bounded, hung_at, listdir, walk_timeout_of
from kubegc_cli.node.host.du import tree_usage
from kubegc_cli.node.host.logs import (
    LogRemovalError,
    LogRoots,
    LogSizer,
    deletable_log_files,
    release_pins,
    remove_container_logs,
)
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.podlogs import read_pod_log_dirs
from kubegc_cli.policy.logs import plan_logs
from tests.unit.factories import disk, owner
from tests.unit.hangfs import hung_mount, needs_fuse, returns_within

UID = "9a1b2c3d-0000-1111-2222-333344445555"
NO_MOUNTS = MountTable(frozenset({"/"}))  # a table read before the mount was made


@pytest.fixture
def pins() -> Iterator[None]:
    yield
    release_pins()


def test_bounded_returns_the_walks_answer_or_its_error() -> None:
    assert bounded(lambda watch: 42) == 42
    with pytest.raises(ZeroDivisionError):
        bounded(lambda watch: 1 // 0)


def test_a_walk_without_progress_is_given_up_at_the_timeout() -> None:
    """No `Watch.at` for the timeout: `Stalled` (an OSError, ETIMEDOUT) names where the walk
    was; the path is remembered until the stuck call returns."""
    release = [False]

    def stuck(watch: object) -> None:
        watch.at("/x/stuck")  # type: ignore[attr-defined]
        while not release[0]:
            time.sleep(0.01)

    began = time.monotonic()
    with pytest.raises(Stalled) as exc:
        bounded(stuck, timeout=0.3)
    assert 0.3 <= time.monotonic() - began < 2
    assert exc.value.filename == "/x/stuck" and "no answer within 0.3s" in str(exc.value)
    assert hung_at("/x/stuck/below") == "/x/stuck"
    release[0] = True
    deadline = time.monotonic() + 2
    while hung_at("/x/stuck") and time.monotonic() < deadline:
        time.sleep(0.01)
    assert hung_at("/x/stuck") == ""  # it answered in the end


def test_a_slow_walk_that_keeps_going_is_not_given_up() -> None:
    def slow(watch: object) -> int:
        for i in range(10):
            watch.at(f"/x/{i}")  # type: ignore[attr-defined]
            time.sleep(0.1)
        return 10

    assert bounded(slow, timeout=0.3) == 10  # 1 s in all, never 0.3 s without progress


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    top = tmp_path / "top"
    (top / "a").mkdir(parents=True)
    (top / "a/f").write_bytes(b"x" * 5000)
    hung = top / "hung"
    hung.mkdir()
    return top, hung


@needs_fuse
def test_a_walk_never_touches_a_mount_the_table_names(tmp_path: Path) -> None:
    """`tree_usage` (df, residue, gc logs sizing) stops at a mount point it knows from the
    mount table before it stats it: a hung one costs nothing."""
    top, hung = _tree(tmp_path)
    with hung_mount(hung):
        usage = returns_within(5, lambda: tree_usage(str(top), MountTable.read()))
    assert usage.mounts == (str(hung),) and not usage.stalled and usage.size == 5000


@needs_fuse
def test_a_walk_into_a_hung_mount_gives_up_after_the_timeout(tmp_path: Path) -> None:
    """A mount the table does not name (made since it was read): the walk gives up after
    `--timeout` with what it counted, says where it hung, and a later walk does not touch
    that path again."""
    top, hung = _tree(tmp_path)
    with hung_mount(hung), walk_timeout_of(0.5):
        began = time.monotonic()
        usage = returns_within(5, lambda: tree_usage(str(top), NO_MOUNTS))
        assert time.monotonic() - began < 3
        assert usage.stalled == str(hung) and usage.unreadable >= 1
        assert usage.first_reason == "no answer within 0.5s (a hung mount?)"
        began = time.monotonic()
        again = returns_within(5, lambda: tree_usage(str(top), NO_MOUNTS))
        assert time.monotonic() - began < 0.4  # not touched again
        assert str(hung) in again.mounts and again.size == 5000
        with pytest.raises(Stalled):
            listdir(str(hung))


def _pod_logs(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "var/log/pods"
    pod = root / f"ns_p_{UID}"
    (pod / "app").mkdir(parents=True)
    (pod / "app/0.log").write_bytes(b"l" * 700)
    return root, pod


@needs_fuse
def test_pod_log_dirs_are_sized_on_their_own_filesystem(tmp_path: Path) -> None:
    """`gc logs` sizes a pod log directory without what is mounted below it (a bind mount of
    /usr showed as its size): a volume mounted there, or a hung mount, counts nothing and
    takes no time; the directory is kept (`mount-point`)."""
    root, pod = _pod_logs(tmp_path)
    vol = pod / "vol"
    vol.mkdir()
    hung = pod / "hung"
    hung.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(vol)], check=True)
    try:
        (vol / "big").write_bytes(b"v" * 100_000)
        with hung_mount(hung):
            dirs = returns_within(5, lambda: read_pod_log_dirs(str(root), MountTable.read()))
    finally:
        subprocess.run(["umount", "-l", str(vol)], check=True)
    assert [(d.name, d.bytes, d.mount, d.stalled) for d in dirs] == [
        (pod.name, disk(pod, pod / "app", pod / "app/0.log"), min(str(hung), str(vol)), "")
    ]


@needs_fuse
def test_a_pod_log_dir_that_hangs_when_sized_is_kept_with_a_partial_size(tmp_path: Path) -> None:
    root, pod = _pod_logs(tmp_path)
    hung = pod / "hung"
    hung.mkdir()
    pods = PodInventory(known=True, source="test")
    with hung_mount(hung), walk_timeout_of(0.5):
        dirs = returns_within(5, lambda: read_pod_log_dirs(str(root), NO_MOUNTS))
    known = disk(pod, pod / "app", pod / "app/0.log")  # (all but where it hung)
    assert [(d.bytes, d.stalled) for d in dirs] == [(known, str(hung))]
    plan = plan_logs(dirs, [], [], pods, 0, pod_logs_dir="/var/log/pods",
                     container_logs_dir="/var/log/containers")  # fmt: skip
    assert plan.actions == []
    assert [(k.rule, k.reason) for k in plan.kept] == [
        ("mount-point", f"no answer from /var/log/pods/{pod.name}/hung within --timeout "
                        "(a hung mount?); size partial")
    ]  # fmt: skip


@needs_fuse
def test_container_logs_in_a_hung_mount_are_neither_waited_for_nor_removed(
    tmp_path: Path, pins: None
) -> None:
    """`gc containers` sizes and removes a container's log in its directory opened from
    podLogsDir: one that is a hung mount is a mount point by the table (not touched), or,
    made since, gives up after `--timeout`: size unknown, a note, and no removal."""
    _, pod = _pod_logs(tmp_path)
    other = pod.parent / f"ns_q_{UID}/app"
    other.mkdir(parents=True)
    (other / "0.log").write_bytes(b"o" * 30)
    path = f"/var/log/pods/{pod.name}/app/0.log"
    fine = f"/var/log/pods/ns_q_{UID}/app/0.log"
    roots = LogRoots(tmp_path, "/var/log/pods")
    c = owner("dead", path)
    with hung_mount(pod / "app"):
        table = MountTable.read()
        sizer = LogSizer(roots, table)
        sizes = returns_within(5, lambda: sizer.sizes_of([(path, c), (fine, None)]))
        assert sizes == [0, disk(other / "0.log")]
        assert (
            sizer.note_for(path)
            == f"/var/log/pods/{pod.name}/app is a mount point; log {path} left"
        )
        freed, note = returns_within(5, lambda: remove_container_logs(roots, c, path, table))
        assert freed == 0 and "is a mount point" in note
        with walk_timeout_of(0.5):
            sizer = LogSizer(roots, NO_MOUNTS)
            sizes = returns_within(5, lambda: sizer.sizes_of([(path, c), (fine, None)]))
            assert sizes == [None, disk(other / "0.log")]  # unknown; the next one still read
            assert sizer.stalled == [f"/var/log/pods/{pod.name}/app"]
            assert "within --timeout (a hung mount?)" in sizer.note_for(path)
            files, notes = returns_within(5, lambda: deletable_log_files(roots, path, NO_MOUNTS))
            assert files == [] and "(a hung mount?)" in notes[0]
            with pytest.raises(LogRemovalError, match="a hung mount"):
                returns_within(5, lambda: remove_container_logs(roots, c, path, NO_MOUNTS))
    assert os.path.exists(other / "0.log")


@needs_fuse
def test_a_legacy_link_into_a_hung_mount_is_not_judged_dangling(tmp_path: Path) -> None:
    """`gc logs` and `residue scan` look up each `/var/log/containers` link's target: one on
    a mount that gives no answer is not known to dangle (so never removed), and the lookup
    gives up after `--timeout` once (the mount is remembered: the other links into it cost
    nothing more); the other links are still judged."""
    from kubegc_cli.node.host.podlogs import dangling_links, legacy_links

    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    hung = tmp_path / "hung"
    hung.mkdir()
    for n in range(6):
        (links / f"p_ns_c-aaaaaaa{n}.log").symlink_to(hung / f"x{n}/0.log")
    (links / "p_ns_c-bbbbbbbb.log").symlink_to(tmp_path / "gone/0.log")
    with hung_mount(hung), walk_timeout_of(0.5):
        began = time.monotonic()
        found = returns_within(5, lambda: dangling_links(str(links)))
        assert time.monotonic() - began < 1.5  # one timeout, not one per link
        assert [name for name, _ in found] == ["p_ns_c-bbbbbbbb.log"]
        found3 = returns_within(5, lambda: legacy_links(str(links), "/c", Path("/"), set()))
        assert [name for name, _, _ in found3] == ["p_ns_c-bbbbbbbb.log"]


@needs_fuse
def test_a_directory_that_hung_when_sized_is_not_removed(tmp_path: Path, pins: None) -> None:
    """`gc logs`, `apply` and `residue clean` remove a directory with `remove_tree`: one below
    which a walk of this run got no answer is refused at once, untouched."""
    from kubegc_cli.node.host.podlogs import LogDirChanged, remove_pod_log_dir
    from kubegc_cli.node.host.tree import Pin

    root, pod = _pod_logs(tmp_path)
    hung = pod / "hung"
    hung.mkdir()
    with hung_mount(hung), walk_timeout_of(0.5):
        returns_within(5, lambda: read_pod_log_dirs(str(root), NO_MOUNTS))
        parent = Pin.open(str(root))
        try:
            with pytest.raises(LogDirChanged, match="gave no answer within --timeout"):
                returns_within(2, lambda: remove_pod_log_dir(str(pod), NO_MOUNTS, parent))
        finally:
            parent.close()
    assert (pod / "app/0.log").exists()


def test_a_bounded_walk_inside_another_runs_in_the_same_worker() -> None:
    import threading

    def inner(watch: object) -> str:
        return threading.current_thread().name

    def outer(watch: object) -> tuple[str, str]:
        return threading.current_thread().name, bounded(inner)

    mine, nested = bounded(outer)
    assert mine == nested == "kubegc-walk" != threading.current_thread().name


def test_walk_workers_are_reused_and_one_whose_walk_hangs_is_handed_no_other() -> None:
    """Bounded walks one after another run in the same idle worker, with no `Watch` of an
    earlier walk left on it; a worker whose walk hangs past the timeout gets no further walk
    (the next one runs elsewhere at once), and goes back to serving walks once its call
    returns."""
    import threading

    from kubegc_cli.node.host import bounded as module

    def who(watch: object) -> tuple[threading.Thread, bool]:
        return threading.current_thread(), getattr(module._worker, "watch", None) is watch

    firsts = [bounded(who) for _ in range(50)]  # (the threads are kept: no id is reused)
    assert len({id(thread) for thread, _ in firsts}) == 1 and all(mine for _, mine in firsts)
    worker = firsts[0][0]
    release = threading.Event()

    def stuck(watch: module.Watch) -> None:
        watch.at("/stuck/here")
        release.wait(30)

    with walk_timeout_of(0.2), pytest.raises(Stalled):
        bounded(stuck)
    try:
        others = {bounded(who)[0] for _ in range(20)}
        assert worker not in others  # the hung worker is never handed a walk
        idle = len(module._idle)
    finally:
        release.set()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(module._idle) == idle:
        time.sleep(0.01)
    assert len(module._idle) == idle + 1  # the hung call returned: its worker is idle again
    assert hung_at("/stuck/here") == ""


@needs_fuse
def test_df_gives_up_on_a_hung_mount_and_walks_the_rest(tmp_path: Path) -> None:
    """`df`'s walk of the pod log root with a mount made since the table was read that never
    answers: that pod's walk is given up after `--timeout`, the path is counted unreadable and
    listed as mounted, and every other pod is still measured."""
    from kubegc_cli.node.diskusage import Walker

    root, pod = _pod_logs(tmp_path)
    second = "0f0f0f0f-0000-1111-2222-333344445555"
    other = root / f"ns_q_{second}"
    (other / "app").mkdir(parents=True)
    (other / "app/0.log").write_bytes(b"o" * 9000)
    hung = pod / "hung"
    hung.mkdir()
    w = Walker(NO_MOUNTS)
    with hung_mount(hung), walk_timeout_of(0.5):
        returns_within(5, lambda: w.pod_logs(str(root), lambda uid: False))
    assert w.unreadable >= 1 and w.first_unreadable == (
        str(hung),
        "no answer within 0.5s (a hung mount?)",
    )
    assert str(hung) in [path for path, _ in w.mounted]
    assert w.pods[second].logs >= 9000  # measured in full


@needs_fuse
def test_pinning_a_hung_root_costs_one_timeout_and_release_never_waits(tmp_path: Path) -> None:
    """podLogsDir on a mount that never answers: `pinned_on_host` gives up after `--timeout`
    with a `Pin` that says so (nothing below it usable), the path is remembered so the next
    caller gets the same answer at once, sizing its logs costs nothing more, and
    `release_pins` returns at once (no lock is held across the call that hangs)."""
    (tmp_path / "var/log/pods").mkdir(parents=True)
    roots = LogRoots(tmp_path, "/var/log/pods")
    with hung_mount(tmp_path / "var/log/pods"), walk_timeout_of(0.5):
        began = time.monotonic()
        pin = returns_within(5, lambda: roots.pin)
        assert 0.5 <= time.monotonic() - began < 3
        assert pin.fd == -1 and pin.usable() == pin.stalled
        assert pin.stalled == "/var/log/pods gave no answer within 0.5s (a hung mount?)"
        began = time.monotonic()
        sizer = LogSizer(roots, NO_MOUNTS)
        log = f"/var/log/pods/ns_p_{UID}/app/0.log"
        assert returns_within(5, lambda: sizer.bytes_of(log)) is None  # unknown
        assert "podLogsDir /var/log/pods gave no answer" in sizer.note_for(log)
        with pytest.raises(Stalled):
            roots.real_pod_logs_dir  # noqa: B018
        assert time.monotonic() - began < 0.4  # not touched again
        returns_within(1, release_pins)


@needs_fuse
def test_a_pod_dir_that_hangs_in_a_residue_scan_is_listed_and_the_rest_are_sized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`residue scan` looks at every pod directory in one worker thread; a volume that hangs
    (a mount made since the table was read) gives up that directory alone after `--timeout`:
    it is listed, not safe, its size unknown and the path named; the directories after it are
    still sized in full."""
    from kubegc_cli.node.host import residue as host_mod
    from kubegc_cli.node.host.residue import scan_pod_dirs
    from tests.unit.test_residue_host import PODS, ctx_for, pod_dir

    monkeypatch.setattr(host_mod, "POD_DIR_GRACE_SECONDS", 0)
    uids = [f"{i}{i}{i}{i}{i}{i}{i}{i}-1111-1111-1111-111111111111" for i in (1, 2, 3)]
    dirs = [pod_dir(tmp_path, uid) for uid in uids]
    hung = dirs[1] / "volumes/kubernetes.io~csi/pvc/mount"
    hung.mkdir(parents=True)
    ctx = ctx_for(tmp_path, mounts=NO_MOUNTS)
    with hung_mount(hung), walk_timeout_of(0.5):
        findings = returns_within(10, lambda: scan_pod_dirs(ctx))
    by_uid = {f.details["uid"]: f for f in findings}
    assert sorted(by_uid) == uids
    for uid in (uids[0], uids[2]):
        assert by_uid[uid].safe and by_uid[uid].bytes >= 15000
    stuck = by_uid[uids[1]]
    assert not stuck.safe and stuck.bytes == 0
    assert stuck.unsafe_reason.startswith(
        f"no answer from {PODS}/{uids[1]}/volumes/kubernetes.io~csi/pvc/mount within --timeout"
    )
