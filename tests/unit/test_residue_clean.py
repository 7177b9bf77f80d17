"""`ResidueCleaner` on fixture host trees: real tmpfs and bind mounts, a real persistent
network namespace, real cgroups (bind-mounted into the fixture's /sys/fs/cgroup)."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubegc_cli.core.plan import Result
from kubegc_cli.core.residue import (
    DEAD_SANDBOX,
    NETNS,
    POD_CGROUP,
    POD_DIR,
    SHIM,
    Finding,
)
from kubegc_cli.node.execute import residue as clean_mod
from kubegc_cli.node.execute.residue import ResidueCleaner
from kubegc_cli.node.host import residue as host_mod
from kubegc_cli.node.host import tree as tree_mod
from kubegc_cli.node.host.du import tree_usage
from kubegc_cli.node.host.mounts import MountTable, decode, parse_mount_filesystems, parse_mountinfo
from kubegc_cli.node.host.residue import (
    scan_cni,
    scan_netns,
    scan_pod_cgroups,
    scan_pod_dirs,
    scan_pod_log_dirs,
)
from kubegc_cli.node.host.tree import Pin, Refused, remove_tree
from tests.unit.hostfixtures import mountinfo_line, pod_dirs_settled, put, write_mountinfo
from tests.unit.test_residue_host import (
    GONE,
    PODS,
    UID1,
    Mount,
    age_entries,
    ctx_for,
    held_netns,
    ipam,
    me,
    mount,
    needs_root,
    netns_file,
    only,
    pod_dir,
    unreadable_mounts,
)

__all__ = ["held_netns", "mount"]  # the fixtures, used by name


@pytest.fixture(autouse=True)
def _pod_dirs_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    pod_dirs_settled(monkeypatch)


def cleaner(root: Path, **kw: object) -> ResidueCleaner:
    """A cleaner for which every pod is still gone and every ID still unknown, unless told."""
    args: dict[str, object] = {
        "host_root": root,
        "still_unknown": lambda _id: True,
        "pod_still_gone": lambda _uid: True,
        "pids": me,
        "concurrency": 1,
    }
    args.update(kw)
    return ResidueCleaner(**args)  # type: ignore[arg-type]


def run(c: ResidueCleaner, f: Finding) -> Finding:
    c.run([f])
    return f


def files_under(p: Path) -> list[str]:
    return sorted(str(x.relative_to(p)) for x in p.rglob("*"))


def mounted(path: Path) -> bool:
    return str(path) in parse_mountinfo(decode(Path("/proc/self/mountinfo").read_bytes()))


# --- directories --------------------------------------------------------------------------------


def test_case1_clean_removes_the_pod_dir_and_reports_allocated_bytes(tmp_path: Path) -> None:
    d = pod_dir(tmp_path)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    planned = tree_usage(str(d)).bytes
    apparent = sum(p.stat().st_size for p in d.rglob("*") if p.is_file())
    run(cleaner(tmp_path), f)
    assert f.result is Result.REMOVED, f.error
    assert not d.exists() and (tmp_path / PODS.lstrip("/")).is_dir()
    assert f.bytes_freed == planned == f.bytes
    assert f.bytes_freed % 512 == 0 and f.bytes_freed != apparent


def test_a_pod_dir_that_changed_since_the_scan_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pod directory safe at the scan that changes before its removal (a new pod's, the
    kubelet setting it up) is left: the grace period is checked again right before."""
    monkeypatch.setattr(host_mod, "POD_DIR_GRACE_SECONDS", host_mod.SETUP_GRACE_SECONDS)
    d = pod_dir(tmp_path)
    age_entries(d, 3600)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert f.safe
    (d / "containers").mkdir()
    run(cleaner(tmp_path), f)
    assert f.result is Result.SKIPPED and "a new pod may still be being set up" in f.error
    assert (d / "etc-hosts").exists()


@needs_root
def test_case2_unsafe_finding_leaves_the_dir_and_the_mount_intact(
    tmp_path: Path, mount: Mount
) -> None:
    d = pod_dir(tmp_path)
    mnt = d / "volumes/kubernetes.io~csi/pvc-x/mount"
    mnt.mkdir(parents=True)
    mount("-t", "tmpfs", "tmpfs", str(mnt))
    (mnt / "data").write_text("precious")
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert not f.safe
    run(cleaner(tmp_path), f)
    assert f.result is Result.SKIPPED and "not safe" in f.error
    assert (mnt / "data").read_text() == "precious" and (d / "etc-hosts").exists()


@needs_root
def test_case2_mount_appearing_after_the_scan_is_refused(tmp_path: Path, mount: Mount) -> None:
    d = pod_dir(tmp_path)
    mnt = d / "volumes/kubernetes.io~csi/pvc-x/mount"
    mnt.mkdir(parents=True)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert f.safe
    mount("-t", "tmpfs", "tmpfs", str(mnt))
    (mnt / "data").write_text("precious")
    before = files_under(d)
    run(cleaner(tmp_path), f)
    assert f.result is Result.SKIPPED
    assert f"{PODS}/{UID1}/volumes/kubernetes.io~csi/pvc-x/mount" in f.error
    assert (mnt / "data").read_text() == "precious"
    assert files_under(d) == before and f.bytes_freed == 0  # nothing at all was removed


def test_case4_symlink_inside_goes_its_target_stays(tmp_path: Path) -> None:
    outside = tmp_path / "srv/data"
    outside.mkdir(parents=True)
    (outside / "keep.txt").write_text("keep")
    (outside / "sub").mkdir()
    (outside / "sub/deep.txt").write_text("deep")
    d = pod_dir(tmp_path)
    (d / "volumes/kubernetes.io~empty-dir/cache/link-dir").symlink_to(outside)
    (d / "link-file").symlink_to(outside / "keep.txt")
    (d / "abs-link").symlink_to("/srv/data")  # absolute on the host
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    run(cleaner(tmp_path), f)
    assert f.result is Result.REMOVED, f.error
    assert not d.exists()
    assert files_under(outside) == ["keep.txt", "sub", "sub/deep.txt"]
    assert (outside / "sub/deep.txt").read_text() == "deep"


@needs_root
def test_other_filesystem_below_is_never_entered(tmp_path: Path, mount: Mount) -> None:
    d = pod_dir(tmp_path)
    other = d / "volumes/kubernetes.io~empty-dir/mem"
    other.mkdir()
    mount("-t", "tmpfs", "tmpfs", str(other))
    (other / "in-tmpfs").write_text("stays")
    f = only(scan_pod_dirs(ctx_for(tmp_path, mounts=MountTable(frozenset()))))
    assert f.safe  # a mount table that misses the mount: only the device check stands
    run(cleaner(tmp_path, read_mounts=lambda: MountTable(frozenset())), f)
    assert f.result is Result.FAILED
    assert f"left (another filesystem or a mount point): {PODS}/{UID1}/volumes/" in f.error
    assert (other / "in-tmpfs").read_text() == "stays"
    assert not (d / "etc-hosts").exists()
    assert not (d / "volumes/kubernetes.io~empty-dir/cache").exists()
    assert d.is_dir()  # it still holds the mount point
    assert f.bytes_freed > 0


@needs_root
def test_remove_tree_refuses_a_mount_at_or_below(tmp_path: Path, mount: Mount) -> None:
    d = tmp_path / "t"
    (d / "a").mkdir(parents=True)
    mount("-t", "tmpfs", "tmpfs", str(d / "a"))
    with pytest.raises(Refused, match="mounted at or below"):
        remove_tree(str(d), MountTable.read(), Pin.open(str(d.parent)))
    with pytest.raises(Refused, match="symlink"):
        (tmp_path / "l").symlink_to(d)
        remove_tree(str(tmp_path / "l"), MountTable(frozenset()), Pin.open(str(tmp_path)))


@needs_root
def test_unreadable_mount_table_at_removal_refuses(tmp_path: Path, mount: Mount) -> None:
    """F1: a finding planned safe, then a bind mount (same filesystem) of a volume whose
    source holds data, and a mount table that cannot be read when cleaning: skipped with
    the reason, nothing removed, the bind source's data intact."""
    d = pod_dir(tmp_path)
    vol = d / "volumes/kubernetes.io~local-volume/pv1"
    vol.mkdir(parents=True)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert f.safe
    src = tmp_path / "x-bindsrc"
    (src / "data").mkdir(parents=True)
    for k in ("k1", "k2", "k3"):
        (src / "data" / k).write_text(k)
    mount("--bind", str(src), str(vol))
    before = files_under(d)
    run(cleaner(tmp_path, read_mounts=lambda: unreadable_mounts(tmp_path)), f)
    assert f.result is Result.SKIPPED and "cannot read the mount table" in f.error
    assert sorted(p.name for p in (src / "data").iterdir()) == ["k1", "k2", "k3"]
    assert files_under(d) == before and f.bytes_freed == 0


def test_remove_tree_refuses_an_unreadable_mount_table(tmp_path: Path) -> None:
    d = tmp_path / "t"
    (d / "a").mkdir(parents=True)
    (d / "a/f").write_text("x")
    with pytest.raises(Refused, match="cannot read the mount table"):
        remove_tree(str(d), unreadable_mounts(tmp_path), Pin.open(str(d.parent)))
    assert (d / "a/f").read_text() == "x"


def test_remove_tree_handles_very_deep_trees(tmp_path: Path) -> None:
    """F4: 3,000 nested directories (deeper than Python's recursion limit, longer than
    PATH_MAX as a path) with a file at the bottom are removed completely."""
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(3000):
            os.mkdir("d", dir_fd=fd)
            sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
        leaf = os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd)
        os.write(leaf, b"x" * 4096)
        os.close(leaf)
    finally:
        os.close(fd)
    done = remove_tree(str(top), MountTable.read(), Pin.open(str(top.parent)))
    assert done.complete, (done.left[:1], done.errors[:1])
    assert not top.exists() and done.bytes_freed >= 4096


def test_remove_tree_leaves_a_directory_moved_under_the_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Climbing back with `..` checks it is the directory the walk came from: a subtree
    moved elsewhere while it is walked stops the walk, and nothing outside is touched."""
    d = tmp_path / "t"
    (d / "a/b").mkdir(parents=True)
    (d / "a/b/f").write_text("x")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep").write_text("keep")
    real_names = tree_mod._names

    def moving_names(fd: int) -> list[str]:
        names = real_names(fd)
        if "f" in names:  # inside a/b: move it out from under the walk
            (d / "a/b").rename(elsewhere / "b")
        return names

    monkeypatch.setattr(tree_mod, "_names", moving_names)
    done = remove_tree(str(d), MountTable.read(), Pin.open(str(d.parent)))
    assert not done.complete and any("moved" in e for e in done.errors)
    assert (elsewhere / "keep").read_text() == "keep" and d.is_dir()


def test_dir_not_named_like_a_pod_is_refused_even_if_marked_safe(tmp_path: Path) -> None:
    d = tmp_path / PODS.lstrip("/") / "not-a-uid"
    d.mkdir(parents=True)
    (d / "f").write_text("x")
    target = f"{PODS}/not-a-uid"
    f = Finding(POD_DIR, target, "e", 0, True, "rm -r", details={"uid": "not-a-uid"})
    run(cleaner(tmp_path), f)
    assert f.result is Result.SKIPPED and "not named like a pod" in f.error
    assert (d / "f").exists()


def test_pod_known_again_or_not_rechecked_is_skipped(tmp_path: Path) -> None:
    d = pod_dir(tmp_path)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    run(cleaner(tmp_path, pod_still_gone=lambda uid: uid != UID1), f)
    assert f.result is Result.SKIPPED and f"pod {UID1} is known again" in f.error
    g = dataclasses.replace(f, result=Result.PLANNED, error="")
    run(cleaner(tmp_path, pod_still_gone=None), g)
    assert g.result is Result.SKIPPED and "cannot re-check" in g.error
    assert len(files_under(d)) == 7


def test_dir_that_became_a_symlink_is_skipped(tmp_path: Path) -> None:
    d = pod_dir(tmp_path)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    d.rename(tmp_path / "moved")
    d.symlink_to(tmp_path / "moved")
    run(cleaner(tmp_path), f)
    assert f.result is Result.SKIPPED and "symlink" in f.error
    assert len(files_under(tmp_path / "moved")) == 7


def test_pod_log_dir_and_dangling_link(tmp_path: Path) -> None:
    put(tmp_path, f"/var/log/pods/ns_web_{UID1}/app/0.log", "x" * 9000)
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    (links / f"web_ns_app-{GONE}.log").symlink_to("/nowhere")
    (links / "web_ns_app-x.log").symlink_to("target")
    link, unparsable, log_dir = scan_pod_log_dirs(ctx_for(tmp_path))
    assert unparsable.target == "/var/log/containers/web_ns_app-x.log" and unparsable.safe
    (links / "target").write_text("")  # the unparsable link no longer dangles
    c = cleaner(tmp_path)
    c.run([log_dir, link, unparsable])
    assert log_dir.result is Result.REMOVED and log_dir.bytes_freed == log_dir.bytes
    assert not (tmp_path / f"var/log/pods/ns_web_{UID1}").exists()
    assert link.result is Result.REMOVED and not (links / f"web_ns_app-{GONE}.log").is_symlink()
    assert unparsable.result is Result.SKIPPED and "no longer a dangling" in unparsable.error
    assert (links / "web_ns_app-x.log").is_symlink()


def test_link_whose_container_is_known_now_is_skipped(tmp_path: Path) -> None:
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    (links / f"web_ns_app-{GONE}.log").symlink_to("/nowhere")
    f = only(scan_pod_log_dirs(ctx_for(tmp_path)))
    run(cleaner(tmp_path, still_unknown=lambda _id: False), f)
    assert f.result is Result.SKIPPED and (links / f"web_ns_app-{GONE}.log").is_symlink()


def test_unsafe_and_never_cleaned_types_are_skipped(tmp_path: Path) -> None:
    d = pod_dir(tmp_path)
    f = only(scan_pod_dirs(ctx_for(tmp_path, pods_known=False)))
    shim = Finding(SHIM, "pid:1", "e", None, False, "kill 1", unsafe_reason="never")
    forced = Finding(DEAD_SANDBOX, "abc", "e", None, True, "crictl rmp abc")
    c = cleaner(tmp_path)
    c.run([f, shim, forced])
    assert [x.result for x in (f, shim, forced)] == [Result.SKIPPED] * 3
    assert "never acts on dead-sandbox" in forced.error
    assert d.is_dir()


# --- network namespaces -------------------------------------------------------------------------


@needs_root
def test_real_netns_is_unmounted_and_unlinked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = netns_file(tmp_path, "cni-0123")
    subprocess.run(["unshare", f"--net={ns}", "true"], check=True)
    try:
        assert mounted(ns)
        monkeypatch.setattr(host_mod, "SETUP_GRACE_SECONDS", 0)
        f = only(scan_netns(ctx_for(tmp_path), pids=me))
        assert f.type == NETNS and f.safe, f.unsafe_reason
        run(cleaner(tmp_path), f)
        assert f.result is Result.REMOVED, f.error
        assert not ns.exists() and not mounted(ns)
    finally:
        if mounted(ns):
            subprocess.run(["umount", str(ns)], check=False)


@needs_root
def test_netns_entered_after_the_scan_is_refused(tmp_path: Path, mount: Mount) -> None:
    ns = netns_file(tmp_path, "cni-busy")
    f = only(scan_netns(ctx_for(tmp_path), pids=me))
    assert f.safe
    mount("--bind", "/proc/self/ns/net", str(ns))  # now this process is in it
    run(cleaner(tmp_path), f)
    assert f.result is Result.SKIPPED and f"in use by PID {os.getpid()}" in f.error
    assert ns.exists() and mounted(ns)


@needs_root
@pytest.mark.parametrize("open_first", [False, True], ids=["nsfs-inode", "plain-file"])
def test_netns_held_open_by_path_after_the_scan_is_refused(
    tmp_path: Path,
    held_netns: Callable[[str, bool], tuple[Path, int]],
    monkeypatch: pytest.MonkeyPatch,
    open_first: bool,
) -> None:
    """F3 at action time: a namespace planned safe (its holder not among the PIDs the scan
    looked at), held open by its path by another process — after the namespace was bound
    there, or before (the plain file under the mount): the re-check sees the holder and
    nothing is unmounted."""
    monkeypatch.setattr(host_mod, "SETUP_GRACE_SECONDS", 0)
    ns, pid = held_netns("cni-held-open", open_first)
    f = only(scan_netns(ctx_for(tmp_path), pids=me))  # the holder is not among these PIDs
    assert f.safe, f.unsafe_reason
    run(cleaner(tmp_path, pids=lambda: [os.getpid(), pid]), f)
    assert f.result is Result.SKIPPED and f"in use by PID {pid}" in f.error
    assert ns.exists() and mounted(ns)


def test_plain_netns_file_and_no_process_table(tmp_path: Path) -> None:
    ns = netns_file(tmp_path, "cni-plain")
    f = only(scan_netns(ctx_for(tmp_path), pids=me))
    run(cleaner(tmp_path, pids=None), f)  # host root is not /: cannot see the processes
    assert f.result is Result.SKIPPED and "cannot see the host's processes" in f.error
    g = dataclasses.replace(f, result=Result.PLANNED, error="")
    run(cleaner(tmp_path), g)  # not mounted: umount says EINVAL, then unlink
    assert g.result is Result.REMOVED, g.error
    assert not ns.exists()


# --- CNI reservations ---------------------------------------------------------------------------


def test_cni_reservation_rechecked_under_the_ipam_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ipam(tmp_path, "cbr0", "10.88.0.6", GONE)
    ipam(tmp_path, "cbr0", "10.88.0.7", GONE + "\r\neth0")
    ipam(tmp_path, "cbr0", "10.88.0.8", GONE)
    ipam(tmp_path, "cbr0", "10.88.0.9", GONE)
    lock = ipam(tmp_path, "cbr0", "lock", "")
    six, seven, eight, nine = scan_cni(ctx_for(tmp_path))
    net = tmp_path / "var/lib/cni/networks/cbr0"
    (net / "10.88.0.7").write_text("c" * 64 + "\r\neth0")  # released and re-reserved
    asked: list[str] = []

    def unknown(object_id: str) -> bool:
        asked.append(object_id)
        return object_id == GONE

    cleaner(tmp_path, still_unknown=unknown).run([six, seven])
    assert six.result is Result.REMOVED and not (net / "10.88.0.6").exists()
    assert seven.result is Result.SKIPPED and "now reserved for" in seven.error
    assert asked == [GONE]
    run(cleaner(tmp_path, still_unknown=lambda _id: False), eight)
    assert eight.result is Result.SKIPPED and "knows" in eight.error
    monkeypatch.setattr(clean_mod, "LOCK_WAIT_SECONDS", 0.2)
    with open(lock) as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        run(cleaner(tmp_path), nine)
    assert nine.result is Result.SKIPPED and "stays held" in nine.error
    assert sorted(p.name for p in net.iterdir()) == ["10.88.0.7", "10.88.0.8", "10.88.0.9", "lock"]


# --- cgroups ------------------------------------------------------------------------------------


def _real_v1_hierarchies() -> list[str]:
    text = decode(Path("/proc/self/mountinfo").read_bytes())
    return sorted(
        point for point, fstype, options in parse_mount_filesystems(text)
        if fstype == "cgroup" and set(options.split(",")) & {"memory", "pids"}
    )  # fmt: skip


@pytest.fixture
def real_cgroups(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """The fixture host's /sys/fs/cgroup/{memory,pids}: real v1 cgroups (a fresh cgroup of
    each real hierarchy, bind-mounted), described by the fixture's /proc/1/mountinfo. All of
    it is removed and unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("real cgroups need root")
    real = _real_v1_hierarchies()
    if len(real) < 2:
        pytest.skip("no writable cgroup v1 memory and pids hierarchies")
    made: list[tuple[Path, Path]] = []  # (real cgroup, its bind mount in the fixture)
    out: dict[str, Path] = {}
    lines = [mountinfo_line(22, "/", "ext4", "rw")]
    try:
        for i, point in enumerate(real[:2]):
            ctl = "memory" if "memory" in point else "pids"
            parent = Path(point) / f"kubegc-test-{os.getpid()}-{time.monotonic_ns()}"
            parent.mkdir()
            local = tmp_path / f"sys/fs/cgroup/{ctl}"
            local.mkdir(parents=True)
            made.append((parent, local))
            subprocess.run(["mount", "--bind", str(parent), str(local)], check=True)
            out[ctl] = local
            lines.append(mountinfo_line(40 + i, f"/sys/fs/cgroup/{ctl}", "cgroup", f"rw,{ctl}"))
        write_mountinfo(tmp_path, "\n".join(lines))
        yield out
    finally:
        for parent, local in made:
            for top, dirs, _ in sorted(os.walk(parent), key=lambda w: -w[0].count("/")):
                for d in dirs:
                    os.rmdir(os.path.join(top, d))
            if mounted(local):
                subprocess.run(["umount", str(local)], check=True)
            os.rmdir(parent)


def _pod_cgroups(cg: dict[str, Path]) -> list[Path]:
    made = []
    for local in cg.values():
        pod = local / f"kubepods/besteffort/pod{UID1}"
        (pod / "ctr").mkdir(parents=True)
        made.append(pod)
    return made


def test_real_v1_pod_cgroups_removed_in_every_hierarchy(
    tmp_path: Path, real_cgroups: dict[str, Path]
) -> None:
    pods = _pod_cgroups(real_cgroups)
    f = only(scan_pod_cgroups(ctx_for(tmp_path)))
    assert f.type == POD_CGROUP and f.safe and len(f.details["paths"]) == 2
    run(cleaner(tmp_path), f)
    assert f.result is Result.REMOVED, f.error
    for pod in pods:
        assert not pod.exists() and pod.parent.is_dir()


def test_real_cgroup_with_a_process_now_is_skipped(
    tmp_path: Path, real_cgroups: dict[str, Path]
) -> None:
    pods = _pod_cgroups(real_cgroups)
    f = only(scan_pod_cgroups(ctx_for(tmp_path)))
    assert f.safe
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        (real_cgroups["pids"] / f"kubepods/besteffort/pod{UID1}/ctr/cgroup.procs").write_text(
            str(sleeper.pid)
        )
        run(cleaner(tmp_path), f)
        assert f.result is Result.SKIPPED and "1 process(es)" in f.error
        assert all((pod / "ctr").is_dir() for pod in pods)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_cgroup_finding_for_a_pod_known_again_is_skipped(tmp_path: Path) -> None:
    path = f"/sys/fs/cgroup/kubepods/besteffort/pod{UID1}"
    put(tmp_path, f"{path}/cgroup.procs", "")
    f = Finding(POD_CGROUP, path, "e", None, True, "rmdir", details={"uid": UID1, "paths": [path]})
    run(cleaner(tmp_path, pod_still_gone=lambda _uid: False), f)
    assert f.result is Result.SKIPPED and "known again" in f.error
    wrong = dataclasses.replace(f, details={"uid": "other", "paths": [path]}, result=Result.PLANNED)
    run(cleaner(tmp_path), wrong)
    assert wrong.result is Result.SKIPPED and "not the cgroup of pod other" in wrong.error
    assert (tmp_path / path.lstrip("/")).is_dir()
