"""Container log rotation on fixture host trees: the reader under `--host-root` (pinned
podLogsDir, no symlink followed), the findings `residue scan` makes of it, and what
`residue clean` does with them (re-checked right before, audit-ready results)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from kubegc_cli.commands.residue import rotation_findings
from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.model import ANNOTATION_RESTART_COUNT, ContainerState
from kubegc_cli.core.plan import Result
from kubegc_cli.core.podlogs import LogOwner, LogRotation
from kubegc_cli.core.residue import (
    EARLIER_INSTANCE_LOG,
    LOG_OVER_SIZE,
    LOG_ROTATION_TYPES,
    LOGS_OVER_BUDGET,
    ROTATED_PAST_COUNT,
    ROTATED_UNCOMPRESSED,
    ROTATION_LEFTOVER,
    STALE_LOG_LINK,
    TYPES,
    Finding,
)
from kubegc_cli.node.execute.residue import ResidueCleaner
from kubegc_cli.node.host.logrotation import log_owners, read_container_log_dirs
from kubegc_cli.node.host.logs import LogRoots
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.scan import ScanContext
from tests.unit.factories import ctr, owner
from tests.unit.test_residue_host import Mount, mount, needs_root

__all__ = ["mount"]  # the fixture, used by name

UID = "0b6f3c8e-1b2c-4d5e-8f90-123456789abc"
POD = f"default_web_{UID}"
LOGS = "/var/log/pods"
DIR = f"{LOGS}/{POD}/app"
RUNNING_ID = "a" * 64
GONE_ID = "b" * 64
ROTATION = LogRotation(max_size=1000, max_files=3, source="test")
OLD = 3600.0


def put(root: Path, host: str, size: int, age: float = OLD) -> Path:
    p = root / host.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"x" * size)
    t = os.path.getmtime(p) - age
    os.utime(p, (t, t))
    return p


def tree(root: Path) -> None:
    """Instance 0 gone from the runtime; instance 1 running, its live log over 1000 bytes,
    three rotated files (one past the count of 3 - 2 before a rotation), a .tmp leftover and
    an uncompressed file whose .gz exists; a symlink named like a leftover; a container
    directory that is a symlink; a legacy link to instance 0's log."""
    put(root, f"{DIR}/0.log", 300)
    put(root, f"{DIR}/0.log.20240101-000000.gz", 50)
    put(root, f"{DIR}/1.log", 1500)
    put(root, f"{DIR}/1.log.20240102-000000.gz", 40)
    put(root, f"{DIR}/1.log.20240103-000000.gz", 40)
    put(root, f"{DIR}/1.log.20240104-000000", 900)
    put(root, f"{DIR}/1.log.20240104-000000.gz", 30)
    put(root, f"{DIR}/1.log.20240105-000000.tmp", 20)
    outside = put(root, "/srv/keep.tmp", 10)
    (root / DIR.lstrip("/") / "1.log.20240106-000000.tmp").symlink_to(outside)
    put(root, "/srv/elsewhere/0.log.1.tmp", 10)
    (root / f"{LOGS}/{POD}/linked".lstrip("/")).symlink_to(root / "srv/elsewhere")
    links = root / "var/log/containers"
    links.mkdir(parents=True)
    link = links / f"web_default_app-{GONE_ID}.log"
    link.symlink_to(f"{DIR}/0.log")
    os.utime(link, (0, 0), follow_symlinks=False)
    (links / f"web_default_app-{RUNNING_ID}.log").symlink_to(f"{DIR}/1.log")


def ctx_for(root: Path, **kw: object) -> ScanContext:
    args: dict[str, object] = {
        "host_root": root,
        "pod_logs_dir": LOGS,
        "pods_known": True,
        "runtime_known": True,
        "runtime_pod_uids": frozenset({UID}),
        "container_ids": frozenset({RUNNING_ID}),
        "mounts": MountTable.read(),
        "log_rotation": ROTATION,
        "log_owners": {f"{DIR}/1.log": LogOwner(RUNNING_ID, running=True)},
    }
    args.update(kw)
    return ScanContext(**args)  # type: ignore[arg-type]


def scan(root: Path, **kw: object) -> dict[str, Finding]:
    warnings: list[str] = []
    found = rotation_findings(ctx_for(root, **kw), LOG_ROTATION_TYPES, warnings.append)
    assert warnings == []
    return {f"{f.type} {f.target.rsplit('/', 1)[1]}": f for f in found}


def cleaner(root: Path, reopened: list[str], **kw: object) -> ResidueCleaner:
    args: dict[str, object] = {
        "host_root": root,
        "still_unknown": lambda _id: True,
        "pod_still_gone": lambda _uid: True,
        "concurrency": 1,
        "pod_logs_dir": LOGS,
        "instance_gone": lambda _log: True,
        "running_with_log": lambda _cid, _log: True,
        "reopen": reopened.append,
    }
    args.update(kw)
    return ResidueCleaner(**args)  # type: ignore[arg-type]


def names(root: Path) -> list[str]:
    return sorted(os.listdir(root / DIR.lstrip("/")))


def test_the_scan_finds_each_kind_and_follows_no_link(tmp_path: Path) -> None:
    tree(tmp_path)
    found = scan(tmp_path)
    assert {k: f.safe for k, f in found.items()} == {
        f"{LOG_OVER_SIZE} 1.log": True,
        f"{ROTATED_PAST_COUNT} 1.log.20240102-000000.gz": True,
        f"{ROTATED_PAST_COUNT} 1.log.20240103-000000.gz": True,
        f"{ROTATION_LEFTOVER} 1.log.20240104-000000": True,
        f"{ROTATION_LEFTOVER} 1.log.20240105-000000.tmp": True,
        f"{EARLIER_INSTANCE_LOG} 0.log": True,
        f"{EARLIER_INSTANCE_LOG} 0.log.20240101-000000.gz": True,
        f"{STALE_LOG_LINK} web_default_app-{GONE_ID}.log": True,
    }
    # (the symlinked container directory and the symlink named like a .tmp: not read)
    over = found[f"{LOG_OVER_SIZE} 1.log"]
    assert over.target == f"{DIR}/1.log" and over.details["container_id"] == RUNNING_ID


def test_over_budget_and_uncompressed_without_a_rotation_due(tmp_path: Path) -> None:
    put(tmp_path, f"{DIR}/1.log", 10)  # under size: no rotation due
    put(tmp_path, f"{DIR}/1.log.20240103-000000", 2000)
    put(tmp_path, f"{DIR}/1.log.20240104-000000", 2000)
    found = scan(tmp_path, log_owners={f"{DIR}/1.log": LogOwner(RUNNING_ID, running=True)})
    assert {k: f.safe for k, f in found.items()} == {
        f"{ROTATED_UNCOMPRESSED} 1.log.20240103-000000": False,
        f"{LOGS_OVER_BUDGET} 1.log": False,
    }


def test_a_pod_the_runtime_does_not_know_is_not_read(tmp_path: Path) -> None:
    tree(tmp_path)
    found = scan(tmp_path, runtime_pod_uids=frozenset())
    assert list(found) == [f"{STALE_LOG_LINK} web_default_app-{GONE_ID}.log"]


def test_the_reader_never_follows_a_symlinked_pod_or_container_directory(tmp_path: Path) -> None:
    tree(tmp_path)
    (tmp_path / f"{LOGS}/default_other_{UID}".lstrip("/")).symlink_to(tmp_path / "srv")
    roots = LogRoots(tmp_path, LOGS)
    listing = read_container_log_dirs(roots, MountTable.read(), lambda uid: True)
    assert [d.host for d in listing.dirs] == [DIR]
    (d,) = listing.dirs
    regular = {f.name: f.regular for f in d.files}
    assert regular["1.log.20240106-000000.tmp"] is False  # the link itself, lstat'ed


def test_clean_removes_leftovers_and_rotations_past_the_count_and_rotates(
    tmp_path: Path,
) -> None:
    tree(tmp_path)
    found = scan(tmp_path)
    reopened: list[str] = []
    c = cleaner(tmp_path, reopened)
    actions = [f for f in found.values() if f.safe]
    c.run(actions)
    assert {f.result for f in actions} == {Result.REMOVED}, [f.error for f in actions]
    left = names(tmp_path)
    rotated = [n for n in left if n.startswith("1.log.") and n[6:].count(".") == 0]
    assert len(rotated) == 1 and rotated[0] != "1.log.20240104-000000"
    assert (tmp_path / DIR.lstrip("/") / rotated[0]).stat().st_size == 1500  # moved, whole
    assert "1.log" not in left  # the runtime reopens it (here: recorded only)
    assert reopened == [RUNNING_ID]
    assert sorted(set(left) - set(rotated)) == [
        "1.log.20240104-000000.gz",
        "1.log.20240106-000000.tmp",  # the symlink: never a finding
    ]
    assert (tmp_path / "srv/keep.tmp").exists()
    assert not (tmp_path / f"var/log/containers/web_default_app-{GONE_ID}.log").is_symlink()
    assert (tmp_path / f"var/log/containers/web_default_app-{RUNNING_ID}.log").is_symlink()
    past = found[f"{ROTATED_PAST_COUNT} 1.log.20240102-000000.gz"]
    assert past.bytes_freed == past.bytes > 0


def test_a_failed_reopen_renames_the_log_back(tmp_path: Path) -> None:
    tree(tmp_path)
    over = scan(tmp_path)[f"{LOG_OVER_SIZE} 1.log"]

    def refuse(cid: str) -> None:
        raise RuntimeUnavailable("ReopenContainerLog: container is not running")

    before = names(tmp_path)
    cleaner(tmp_path, [], reopen=refuse).run([over])
    assert over.result is Result.FAILED and "not running" in over.error
    assert names(tmp_path) == before
    assert (tmp_path / DIR.lstrip("/") / "1.log").stat().st_size == 1500


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("rewritten", "no longer the file planned"),
        ("replaced", "no longer the file planned"),
        ("symlink", "no longer the file planned"),
        ("twin-gone", ".gz is gone"),
        ("twin-replaced", ".gz is not the file judged at the scan"),
        ("twin-rewritten", ".gz is not the file judged at the scan"),
        ("twin-touched", ".gz is not the file judged at the scan"),
    ],
)
def test_a_file_changed_since_the_scan_is_left(tmp_path: Path, change: str, expected: str) -> None:
    tree(tmp_path)
    found = scan(tmp_path)
    leftover = found[f"{ROTATION_LEFTOVER} 1.log.20240104-000000"]
    path = tmp_path / DIR.lstrip("/") / "1.log.20240104-000000"
    twin = path.with_name(path.name + ".gz")
    if change == "rewritten":
        with path.open("ab") as fh:
            fh.write(b"more")
    elif change == "replaced":
        path.unlink()
        put(tmp_path, f"{DIR}/1.log.20240104-000000", 900)
    elif change == "symlink":
        path.unlink()
        path.symlink_to(tmp_path / "srv/keep.tmp")
    elif change == "twin-replaced":  # a new empty file, changed now
        twin.unlink()
        twin.touch()
    elif change == "twin-rewritten":  # the same file, written to and its mtime put back
        st = twin.stat()
        with twin.open("ab") as fh:
            fh.write(b"more")
        os.utime(twin, ns=(st.st_atime_ns, st.st_mtime_ns))
    elif change == "twin-touched":
        os.utime(twin)
    else:
        twin.unlink()
    cleaner(tmp_path, []).run([leftover])
    assert leftover.result is Result.SKIPPED and expected in leftover.error
    assert os.path.lexists(path) and (tmp_path / "srv/keep.tmp").exists()


def test_an_instance_the_runtime_has_again_is_left(tmp_path: Path) -> None:
    tree(tmp_path)
    earlier = scan(tmp_path)[f"{EARLIER_INSTANCE_LOG} 0.log"]
    cleaner(tmp_path, [], instance_gone=lambda _log: False).run([earlier])
    assert earlier.result is Result.SKIPPED and "has a container" in earlier.error
    assert (tmp_path / DIR.lstrip("/") / "0.log").exists()


def test_a_container_no_longer_running_is_not_rotated(tmp_path: Path) -> None:
    tree(tmp_path)
    over = scan(tmp_path)[f"{LOG_OVER_SIZE} 1.log"]
    reopened: list[str] = []
    cleaner(tmp_path, reopened, running_with_log=lambda _c, _l: False).run([over])
    assert over.result is Result.SKIPPED and reopened == []
    assert (tmp_path / DIR.lstrip("/") / "1.log").stat().st_size == 1500


@needs_root
@pytest.mark.parametrize("table", ["read-again", "stale"])
def test_a_directory_mounted_since_the_scan_is_not_touched(
    tmp_path: Path, mount: Mount, table: str
) -> None:
    """A tmpfs mounted on the container log directory after the scan, holding files of the
    same names: nothing in it is removed or renamed, whether the mount table read again
    names the mount or a stale one does not (then the directory's mount ID gives it away)."""
    tree(tmp_path)
    found = scan(tmp_path)
    app = tmp_path / DIR.lstrip("/")
    mount("-t", "tmpfs", "tmpfs", str(app))
    for name in ("1.log", "1.log.20240102-000000.gz", "1.log.20240105-000000.tmp", "0.log"):
        (app / name).write_text("inside the mount")
    read = MountTable.read if table == "read-again" else (lambda: MountTable(frozenset({"/"})))
    reopened: list[str] = []
    actions = [f for f in found.values() if f.safe and f.type != STALE_LOG_LINK]
    cleaner(tmp_path, reopened, read_mounts=read).run(actions)
    assert {f.result for f in actions} == {Result.SKIPPED}, [(f.target, f.error) for f in actions]
    assert all("mount" in f.error for f in actions), [f.error for f in actions]
    assert reopened == []
    assert sorted(os.listdir(app)) == [
        "0.log", "1.log", "1.log.20240102-000000.gz", "1.log.20240105-000000.tmp",
    ]  # fmt: skip
    assert all((app / n).read_text() == "inside the mount" for n in os.listdir(app))


@pytest.mark.parametrize("change", ["replaced-by-a-file", "known-again"])
def test_a_stale_link_that_changed_is_left(tmp_path: Path, change: str) -> None:
    tree(tmp_path)
    link = scan(tmp_path)[f"{STALE_LOG_LINK} web_default_app-{GONE_ID}.log"]
    path = tmp_path / f"var/log/containers/web_default_app-{GONE_ID}.log"
    known = change == "known-again"
    if not known:
        path.unlink()
        path.write_text("not a link")
    cleaner(tmp_path, [], still_unknown=lambda _id: not known).run([link])
    assert link.result is Result.SKIPPED, link.error
    assert ("knows" if known else "no longer a symlink") in link.error
    assert os.path.lexists(path) and (tmp_path / DIR.lstrip("/") / "0.log").exists()


def test_log_owners_from_the_runtimes_containers() -> None:
    """Each container's live log is the kubelet's `<dir>/<restartCount>.log`; a container
    whose restart count is unknown makes its directory unsure; a running one wins a path."""
    exited = owner("e" * 64, f"{DIR}/1.log")
    running = replace(owner("r" * 64, f"{DIR}/1.log"), state=ContainerState.RUNNING)
    unknown = replace(ctr("u" * 64, uid=UID, name="side", ns="default", pod="web"), annotations={})
    odd = replace(exited, id="o" * 64, annotations={ANNOTATION_RESTART_COUNT: "x"})
    owners, unsure = log_owners(LOGS, [exited, running, unknown, odd])
    assert owners == {f"{DIR}/1.log": LogOwner("r" * 64, running=True)}
    assert unsure == {f"{LOGS}/{POD}/side", DIR}


def test_one_clean_leaves_what_the_kubelet_would(tmp_path: Path) -> None:
    """An uncompressed rotation whose .gz exists (a leftover) while that .gz is past the
    count: the kubelet's rotateLog removes both in one pass (cleanupUnusedLogs, then
    removeExcessLogs), and so does one `residue clean` in its plan order (past-count rows
    before leftovers): a scan afterwards finds nothing of them."""
    put(tmp_path, f"{DIR}/1.log", 10)  # under size: no rotation due
    put(tmp_path, f"{DIR}/1.log.20240101-000000", 900)
    put(tmp_path, f"{DIR}/1.log.20240101-000000.gz", 30)
    put(tmp_path, f"{DIR}/1.log.20240102-000000.gz", 30)
    put(tmp_path, f"{DIR}/1.log.20240103-000000.gz", 30)
    found = scan(tmp_path)
    assert {k: f.safe for k, f in found.items()} == {
        f"{ROTATED_PAST_COUNT} 1.log.20240101-000000.gz": True,
        f"{ROTATION_LEFTOVER} 1.log.20240101-000000": True,
    }
    order = {t: i for i, t in enumerate(TYPES)}
    actions = sorted(found.values(), key=lambda f: (order[f.type], f.target))
    assert actions[0].type == ROTATED_PAST_COUNT  # the .gz goes first
    cleaner(tmp_path, []).run(actions)
    assert [f.result for f in actions] == [Result.REMOVED, Result.REMOVED], [
        f.error for f in actions
    ]
    assert names(tmp_path) == ["1.log", "1.log.20240102-000000.gz", "1.log.20240103-000000.gz"]
    assert scan(tmp_path) == {}
