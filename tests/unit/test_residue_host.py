"""Host residue scanners on fixture host trees (`tmp_path` as --host-root), with real tmpfs
and bind mounts where mount safety is the point."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kubegc_cli.core.podlogs import NOT_A_POD, is_pod_uid
from kubegc_cli.core.residue import (
    CNI_IP,
    LOG_LINK,
    NETNS,
    POD_CGROUP,
    POD_DIR,
    POD_LOG_DIR,
    SHIM,
    Finding,
)
from kubegc_cli.node.host import residue as host_mod
from kubegc_cli.node.host.du import tree_usage
from kubegc_cli.node.host.logs import host_path_of, resolve_on_host
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.residue import (
    NEVER_KILL,
    NO_POD_SOURCE,
    NO_PROCESSES,
    NO_RUNTIME,
    STATIC_POD,
    ProcessInfo,
    cni_summary,
    is_ip_name,
    scan_cni,
    scan_netns,
    scan_pod_cgroups,
    scan_pod_dirs,
    scan_pod_log_dirs,
    scan_shims,
    shim_args,
)
from kubegc_cli.node.host.scan import ScanContext
from tests.unit.hostfixtures import (
    MOUNTINFO_NO_CGROUP,
    MOUNTINFO_V1,
    MOUNTINFO_V2,
    pod_cgroup_path,
    pod_dirs_settled,
    put,
    write_mountinfo,
    write_procs,
)

UID1 = "11111111-1111-1111-1111-111111111111"
UID2 = "22222222-2222-2222-2222-222222222222"
PODS = "/var/lib/kubelet/pods"
OLD = time.time() - 3600  # older than SETUP_GRACE_SECONDS

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="mounts need root")

Mount = Callable[..., None]


@pytest.fixture(autouse=True)
def _pod_dirs_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    pod_dirs_settled(monkeypatch)


@pytest.fixture
def mount() -> Iterator[Mount]:
    """`mount(*args)` runs mount(8) with `args` (the last is the target); every target is
    unmounted again, innermost first, when the test ends."""
    done: list[str] = []

    def run(*args: str) -> None:
        subprocess.run(["mount", *args], check=True, capture_output=True)
        done.append(args[-1])

    yield run
    for target in reversed(done):
        if subprocess.run(["umount", target], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", target], capture_output=True)


def ctx_for(root: Path, **kw: object) -> ScanContext:
    """A context in which both the pod source and the runtime were read (knowing nothing),
    with the mount table read now."""
    args: dict[str, object] = {
        "host_root": root,
        "pods_known": True,
        "runtime_known": True,
        "mounts": MountTable.read(),
    }
    args.update(kw)
    return ScanContext(**args)  # type: ignore[arg-type]


def pod_dir(root: Path, uid: str = UID1) -> Path:
    """`/var/lib/kubelet/pods/<uid>` with an emptyDir `cache` volume holding 3 files."""
    cache = root / PODS.lstrip("/") / uid / "volumes/kubernetes.io~empty-dir/cache"
    cache.mkdir(parents=True)
    for i in range(3):
        (cache / f"f{i}").write_bytes(b"x" * (5000 + i))
    (root / PODS.lstrip("/") / uid / "etc-hosts").write_text("127.0.0.1 localhost\n")
    return root / PODS.lstrip("/") / uid


def only(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, [f.target for f in findings]
    return findings[0]


# --- paths under the host root ------------------------------------------------------------------


def test_resolve_on_host_keeps_absolute_links_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "run/netns").mkdir(parents=True)
    (tmp_path / "var").mkdir()
    (tmp_path / "var/run").symlink_to("/run")
    (tmp_path / "data/kubelet").mkdir(parents=True)
    (tmp_path / "var/lib").mkdir()
    (tmp_path / "var/lib/kubelet").symlink_to("../../data/kubelet")
    assert resolve_on_host(tmp_path, "/var/run/netns") == f"{tmp_path}/run/netns"
    assert resolve_on_host(tmp_path, "/var/lib/kubelet/pods/x") == f"{tmp_path}/data/kubelet/pods/x"
    assert resolve_on_host(tmp_path, "/../../etc") == f"{tmp_path}/etc"
    (tmp_path / "loop").symlink_to("/loop")
    with pytest.raises(OSError):
        resolve_on_host(tmp_path, "/loop")
    assert resolve_on_host(Path("/"), "/proc/self/..") == "/proc"


def test_host_path_of_inverts_on_host(tmp_path: Path) -> None:
    assert host_path_of(tmp_path, f"{tmp_path}/var/lib") == "/var/lib"
    assert host_path_of(tmp_path, str(tmp_path)) == "/"
    assert host_path_of(Path("/"), "/var/lib/") == "/var/lib"
    assert host_path_of(tmp_path, "/elsewhere") == "/elsewhere"


# --- 1. pod directories -------------------------------------------------------------------------


def test_case1_orphaned_pod_dir_is_safe_with_its_allocated_size(tmp_path: Path) -> None:
    d = pod_dir(tmp_path)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert f.type == POD_DIR and f.target == f"{PODS}/{UID1}"
    assert f.safe and f.unsafe_reason == ""
    assert f.bytes == tree_usage(str(d)).bytes and f.bytes > 3 * 5000 and f.bytes % 512 == 0
    assert f.details == {
        "uid": UID1,
        "volumes": [f"{PODS}/{UID1}/volumes/kubernetes.io~empty-dir/cache"],
        "mounts_below": [],
    }
    assert f"orphaned pod {UID1} found, but volume paths are still present on disk" in f.evidence
    assert f.action == f"rm -r {PODS}/{UID1} (one filesystem, no symlinks followed)"


@needs_root
def test_case2_mount_below_makes_it_unsafe_and_is_named(tmp_path: Path, mount: Mount) -> None:
    d = pod_dir(tmp_path)
    mnt = d / "volumes/kubernetes.io~csi/pvc-x/mount"
    mnt.mkdir(parents=True)
    mount("-t", "tmpfs", "tmpfs", str(mnt))
    (mnt / "data").write_bytes(b"y" * 100_000)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    host_mnt = f"{PODS}/{UID1}/volumes/kubernetes.io~csi/pvc-x/mount"
    assert not f.safe
    assert host_mnt in f.unsafe_reason
    assert f.details["mounts_below"] == [host_mnt]
    assert f"{PODS}/{UID1}/volumes/kubernetes.io~csi/pvc-x" in f.details["volumes"]
    assert f.bytes is not None and f.bytes < 100_000  # the mounted volume is not the pod's disk


def age_entries(d: Path, seconds: float) -> None:
    """Set the modification time of `d` and every entry directly in it `seconds` back."""
    when = time.time() - seconds
    for p in [d, *d.iterdir()]:
        os.utime(p, (when, when), follow_symlinks=False)


@pytest.mark.parametrize(
    ("touched", "safe"),
    [(None, True), ("", False), ("etc-hosts", False), ("volumes", False), ("new-file", False)],
)
def test_a_pod_dir_changed_within_the_grace_period_is_not_safe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, touched: str | None, safe: bool
) -> None:
    """The kubelet makes a pod's directory, its subdirectories and volumes before the pod's
    sandbox exists: a pod source older than the pod (a pods file written earlier) cannot speak
    for it. A pod directory, or an entry directly in it, changed less than 10 minutes ago is
    never safe."""
    monkeypatch.setattr(host_mod, "POD_DIR_GRACE_SECONDS", host_mod.SETUP_GRACE_SECONDS)
    d = pod_dir(tmp_path)
    age_entries(d, 3600)
    if touched == "new-file":
        (d / "plugins").mkdir()  # a new entry: the directory's own time changes
        os.utime(d / "plugins", (time.time() - 3600,) * 2)
    elif touched is not None:
        os.utime(d / touched if touched else d, None)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert f.safe is safe, f.unsafe_reason
    if not safe:
        assert "ago: a new pod may still be being set up" in f.unsafe_reason


@needs_root
def test_pod_dir_that_is_a_mount_point_is_unsafe(tmp_path: Path, mount: Mount) -> None:
    d = pod_dir(tmp_path, UID2)
    mount("-t", "tmpfs", "tmpfs", str(d))
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert not f.safe and "itself a mount point" in f.unsafe_reason
    assert f.details["mounts_below"] == [f"{PODS}/{UID2}"]


@needs_root
def test_symlinked_kubelet_root_cannot_hide_a_mount(tmp_path: Path, mount: Mount) -> None:
    real = tmp_path / "data/kubelet/pods" / UID1 / "volumes/kubernetes.io~nfs/v"
    real.mkdir(parents=True)
    (tmp_path / "var/lib").mkdir(parents=True)
    (tmp_path / "var/lib/kubelet").symlink_to("/data/kubelet")  # absolute: under the host root
    mount("-t", "tmpfs", "tmpfs", str(real))
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert f.target == f"{PODS}/{UID1}"
    assert not f.safe and f"/data/kubelet/pods/{UID1}/volumes/kubernetes.io~nfs/v" in (
        f.unsafe_reason
    )


def test_known_pods_are_no_findings(tmp_path: Path) -> None:
    pod_dir(tmp_path, UID1)
    pod_dir(tmp_path, UID2)
    assert scan_pod_dirs(ctx_for(tmp_path, pod_uids=frozenset({UID1, UID2}))) == []
    assert scan_pod_dirs(ctx_for(tmp_path, runtime_pod_uids=frozenset({UID1, UID2}))) == []
    left = scan_pod_dirs(ctx_for(tmp_path, runtime_pod_uids=frozenset({UID1})))
    assert [f.target for f in left] == [f"{PODS}/{UID2}"]


def test_case5_without_a_pod_source_pod_dirs_are_reported_not_safe(tmp_path: Path) -> None:
    pod_dir(tmp_path)
    f = only(scan_pod_dirs(ctx_for(tmp_path, pods_known=False)))
    assert not f.safe and f.unsafe_reason == NO_POD_SOURCE
    assert "no pod source" in f.evidence
    f = only(scan_pod_dirs(ctx_for(tmp_path, runtime_known=False)))
    assert not f.safe and f.unsafe_reason == NO_RUNTIME


def test_symlinked_pod_dir_is_unsafe_and_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "big").write_bytes(b"z" * 50_000)
    (tmp_path / PODS.lstrip("/")).mkdir(parents=True)
    (tmp_path / PODS.lstrip("/") / UID1).symlink_to(outside)
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert not f.safe and "symlink" in f.unsafe_reason
    assert f.bytes is not None and f.bytes < 50_000
    assert f.details["volumes"] == []


def test_pod_dir_without_volumes_and_missing_roots(tmp_path: Path) -> None:
    assert scan_pod_dirs(ctx_for(tmp_path)) == []
    (tmp_path / PODS.lstrip("/") / UID1).mkdir(parents=True)
    (tmp_path / PODS.lstrip("/") / "stray-file").write_text("")
    f = only(scan_pod_dirs(ctx_for(tmp_path)))
    assert f.safe and "volume paths" not in f.evidence and f.details["volumes"] == []


def unreadable_mounts(tmp_path: Path) -> MountTable:
    """What `MountTable.read` gives when /proc/self/mountinfo cannot be read."""
    return MountTable.read(tmp_path / "no-proc/self/mountinfo")


def test_unreadable_mount_table_is_unknown_not_empty(tmp_path: Path) -> None:
    table = unreadable_mounts(tmp_path)
    assert not table.known and "cannot read the mount table" in table.error
    assert "anything may be mounted" in table.error
    (tmp_path / "empty").write_text("")
    assert not MountTable.read(tmp_path / "empty").known  # a real one always lists /
    assert MountTable.read().known and MountTable(frozenset()).known


@needs_root
def test_unreadable_mount_table_makes_no_dir_safe(tmp_path: Path, mount: Mount) -> None:
    """F1: a bind-mounted volume (same filesystem: no device check can see it) in an orphaned
    pod dir, and a pod log dir, scanned with a mount table that could not be read: neither is
    safe, the reason says why."""
    d = pod_dir(tmp_path)
    src = tmp_path / "bindsrc"
    (src / "data").mkdir(parents=True)
    (src / "data/k1").write_text("v1")
    vol = d / "volumes/kubernetes.io~local-volume/pv1"
    vol.mkdir(parents=True)
    mount("--bind", str(src), str(vol))
    put(tmp_path, f"/var/log/pods/ns_web_{UID2}/app/0.log", "x")
    ctx = ctx_for(tmp_path, mounts=unreadable_mounts(tmp_path))
    f = only(scan_pod_dirs(ctx))
    assert not f.safe and "cannot read the mount table" in f.unsafe_reason
    log_dir = only([x for x in scan_pod_log_dirs(ctx) if x.type == POD_LOG_DIR])
    assert not log_dir.safe and "anything may be mounted" in log_dir.unsafe_reason
    assert not only(scan_pod_dirs(ctx_for(tmp_path))).safe  # read: the mount is named


@pytest.mark.parametrize(
    ("name", "uid"),
    [
        (UID1, True),
        ("0123456789abcdef0123456789abcdef", True),  # a static pod: the manifest's hash
        ("not-a-uid", False),
        ("1111", False),
        ("9A1B2C3D-0000-1111-2222-333344445555", False),  # upper case: not the kubelet's
        (UID1 + "-x", False),
        ("0123456789abcdef0123456789abcdeg", False),
    ],
)
def test_is_pod_uid(name: str, uid: bool) -> None:
    assert is_pod_uid(name) is uid


def test_dirs_not_named_like_a_pod_are_never_safe(tmp_path: Path) -> None:
    """Pod dirs and pod log dirs whose name (or last `_` field) is no pod UID: findings at
    most, never safe; a static pod's 32-hex UID is named like a pod, but no mirror pod names
    it, so it is not gone either (kubegc cannot see the kubelet's manifests)."""
    static = "0123456789abcdef0123456789abcdef"
    for name in ("not-a-uid", static):
        (tmp_path / PODS.lstrip("/") / name).mkdir(parents=True)
    for name in ("nounderscores", "ns_web_not-a-uid", f"ns_static_{static}"):
        put(tmp_path, f"/var/log/pods/{name}/app/0.log", "x")
    dirs = {f.target: f for f in scan_pod_dirs(ctx_for(tmp_path))}
    assert not dirs[f"{PODS}/not-a-uid"].safe
    assert dirs[f"{PODS}/not-a-uid"].unsafe_reason == NOT_A_POD
    assert not dirs[f"{PODS}/{static}"].safe
    assert dirs[f"{PODS}/{static}"].unsafe_reason == STATIC_POD
    logs = {f.target: f for f in scan_pod_log_dirs(ctx_for(tmp_path))}
    assert [logs[f"/var/log/pods/{n}"].safe for n in ("nounderscores", "ns_web_not-a-uid")] == [
        False,
        False,
    ]
    assert NOT_A_POD in logs["/var/log/pods/nounderscores"].unsafe_reason
    assert logs[f"/var/log/pods/ns_static_{static}"].unsafe_reason == STATIC_POD


# --- 2. pod log dirs and legacy links ------------------------------------------------------------


def test_pod_log_dirs_of_gone_pods(tmp_path: Path) -> None:
    logs = tmp_path / "var/log/pods"
    for uid in (UID1, UID2):
        put(tmp_path, f"/var/log/pods/ns_web_{uid}/app/0.log", "line\n" * 1000)
    f = only(scan_pod_log_dirs(ctx_for(tmp_path, pod_uids=frozenset({UID2}))))
    assert f.type == POD_LOG_DIR and f.target == f"/var/log/pods/ns_web_{UID1}"
    assert f.safe and f.details == {"uid": UID1, "mounts_below": []}
    assert f.bytes == tree_usage(str(logs / f"ns_web_{UID1}")).bytes
    # Without a pod source the runtime alone decides what is reported; nothing is safe.
    found = scan_pod_log_dirs(ctx_for(tmp_path, pods_known=False, pod_uids=frozenset({UID2})))
    assert [(f.details["uid"], f.safe) for f in found] == [(UID1, False), (UID2, False)]


@needs_root
def test_pod_log_dir_with_a_mount_or_a_symlink_is_unsafe(tmp_path: Path, mount: Mount) -> None:
    put(tmp_path, f"/var/log/pods/ns_a_{UID1}/app/0.log", "x")
    (tmp_path / f"var/log/pods/ns_a_{UID1}/app/m").mkdir()
    mount("-t", "tmpfs", "tmpfs", str(tmp_path / f"var/log/pods/ns_a_{UID1}/app/m"))
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / f"var/log/pods/ns_b_{UID2}").symlink_to(tmp_path / "elsewhere")
    a, b = scan_pod_log_dirs(ctx_for(tmp_path))
    assert not a.safe and f"/var/log/pods/ns_a_{UID1}/app/m" in a.unsafe_reason
    assert not b.safe and "symlink" in b.unsafe_reason


def test_dangling_legacy_links(tmp_path: Path) -> None:
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    (links / "p_ns_c-aaaaaaaaaaaa.log").symlink_to("/nowhere/a")  # container the runtime has
    (links / "p_ns_c-bbbbbbbbbbbb.log").symlink_to("/nowhere/b")  # unknown container
    (links / "p_ns_c-x.log").symlink_to("/nowhere/x")  # no ID in the name
    (tmp_path / "target.log").write_text("")
    (links / "p_ns_c-cccccccccccc.log").symlink_to("/target.log")  # not dangling on the host
    found = scan_pod_log_dirs(ctx_for(tmp_path, container_ids=frozenset({"aaaaaaaaaaaa" * 2})))
    assert [(f.type, f.target, f.safe) for f in found] == [
        (LOG_LINK, "/var/log/containers/p_ns_c-aaaaaaaaaaaa.log", False),
        (LOG_LINK, "/var/log/containers/p_ns_c-bbbbbbbbbbbb.log", True),
        (LOG_LINK, "/var/log/containers/p_ns_c-x.log", True),
    ]
    assert "still has container" in found[0].unsafe_reason
    assert "carries no container ID" in found[2].evidence  # `x` is not a container ID
    (links / "hostlink.log").symlink_to("/nowhere/h")
    named = {f.target: f.evidence for f in scan_pod_log_dirs(ctx_for(tmp_path))}
    assert "carries no container ID" in named["/var/log/containers/hostlink.log"]
    (links / "hostlink.log").unlink()
    found = scan_pod_log_dirs(ctx_for(tmp_path, runtime_known=False))
    assert [f.safe for f in found] == [False, False, True]


def test_dangling_links_are_judged_on_the_host_root_not_on_slash(tmp_path: Path) -> None:
    """F2: link targets resolve under --host-root. A link to a live pod's log that exists
    under the host root is not dangling; one to /etc/hostname (present on this machine's /,
    absent under the host root) is; relative targets resolve from the link's directory and
    `..` never climbs out of the host root."""
    assert Path("/etc/hostname").exists()
    live = f"/var/log/pods/ns_web_{UID1}/nginx/0.log"
    put(tmp_path, live, "log line\n")
    links = tmp_path / "var/log/containers"
    links.mkdir(parents=True)
    (links / "web_ns_nginx-aaaaaaaaaaaa.log").symlink_to(live)
    (links / "web_ns_etc-bbbbbbbbbbbb.log").symlink_to("/etc/hostname")
    (links / "web_ns_rel-cccccccccccc.log").symlink_to(f"../pods/ns_web_{UID1}/nginx/0.log")
    (links / "web_ns_up-dddddddddddd.log").symlink_to("../../../../../../../../etc/hostname")
    ctx = ctx_for(tmp_path, pod_uids=frozenset({UID1}))
    found = scan_pod_log_dirs(ctx)
    assert [(f.type, f.target) for f in found] == [
        (LOG_LINK, "/var/log/containers/web_ns_etc-bbbbbbbbbbbb.log"),
        (LOG_LINK, "/var/log/containers/web_ns_up-dddddddddddd.log"),
    ]


# --- 3. network namespaces ----------------------------------------------------------------------


def netns_file(root: Path, name: str, age: float = OLD) -> Path:
    p = root / "run/netns" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("")
    os.utime(p, (age, age))
    return p


def me() -> list[int]:
    return [os.getpid()]


def test_unused_netns_is_safe_and_var_run_is_read_once(tmp_path: Path) -> None:
    netns_file(tmp_path, "cni-aaaa")
    netns_file(tmp_path, "cni-used")
    netns_file(tmp_path, "my-own")  # not a CNI namespace
    (tmp_path / "var").mkdir()
    (tmp_path / "var/run").symlink_to("/run")
    ctx = ctx_for(
        tmp_path,
        sandbox_ids=frozenset({"s1"}),
        sandbox_netns=frozenset({"/var/run/netns/cni-used"}),
    )
    f = only(scan_netns(ctx, pids=me))
    assert f.type == NETNS and f.target == "/run/netns/cni-aaaa"
    assert f.safe, f.unsafe_reason
    assert f.action == "umount /run/netns/cni-aaaa && unlink /run/netns/cni-aaaa"


def test_netns_used_by_a_sandbox_through_another_name_of_the_dir(tmp_path: Path) -> None:
    netns_file(tmp_path, "cni-aaaa")
    (tmp_path / "var/run").mkdir(parents=True)
    (tmp_path / "var/run/netns").symlink_to("../../run/netns")
    # The runtime names the same file by another path that resolves to it.
    (tmp_path / "alias").symlink_to("/run/netns/cni-aaaa")
    ctx = ctx_for(tmp_path, sandbox_ids=frozenset({"s"}), sandbox_netns=frozenset({"/alias"}))
    assert scan_netns(ctx, pids=me) == []


@needs_root
def test_netns_in_use_by_a_process_is_unsafe(tmp_path: Path, mount: Mount) -> None:
    busy = netns_file(tmp_path, "cni-busy")
    mount("--bind", "/proc/self/ns/net", str(busy))  # this process's own network namespace
    netns_file(tmp_path, "cni-free")
    busy_f, free_f = scan_netns(ctx_for(tmp_path), pids=me)
    assert busy_f.target == "/run/netns/cni-busy" and not busy_f.safe
    assert busy_f.unsafe_reason.startswith(f"in use by PID {os.getpid()}")
    assert busy_f.details["used_by"] == [os.getpid()]
    assert free_f.safe and free_f.details["used_by"] == []


@pytest.fixture
def held_netns(tmp_path: Path) -> Iterator[Callable[[str, bool], tuple[Path, int]]]:
    """`make(name, open_first)`: a real network namespace bound at `run/netns/<name>`
    (`unshare --net=FILE`) and a `sleep` holding the file open as fd 3 — opened by its path
    after the namespace was bound (the nsfs inode), or before (`open_first`: the plain file
    under the mount). Returns (file, holder PID); all of it is undone afterwards."""
    made: list[tuple[Path, subprocess.Popen[bytes]]] = []

    def make(name: str, open_first: bool) -> tuple[Path, int]:
        ns = netns_file(tmp_path, name)
        fd = os.open(ns, os.O_RDONLY) if open_first else -1
        subprocess.run(["unshare", f"--net={ns}", "true"], check=True)
        if fd < 0:
            fd = os.open(ns, os.O_RDONLY)
        try:
            holder = subprocess.Popen(["sleep", "300"], stdin=fd)  # its fd 0 is the file
        finally:
            os.close(fd)
        made.append((ns, holder))
        return ns, holder.pid

    yield make
    for ns, holder in made:
        holder.kill()
        holder.wait()
        subprocess.run(["umount", str(ns)], capture_output=True)


@needs_root
@pytest.mark.parametrize("open_first", [False, True], ids=["nsfs-inode", "plain-file"])
def test_netns_held_open_by_its_path_is_unsafe(
    tmp_path: Path, held_netns: Callable[[str, bool], tuple[Path, int]], open_first: bool
) -> None:
    """F3: a process that opened the namespace file by its path (its /proc/PID/fd link reads
    back as the path, not `net:[ino]`) holds it: not safe, named in `used_by`."""
    ns, pid = held_netns("cni-held-open", open_first)
    assert os.readlink(f"/proc/{pid}/fd/0") == str(ns)
    f = only(scan_netns(ctx_for(tmp_path), pids=lambda: [pid]))
    assert not f.safe and f.details["used_by"] == [pid]
    assert f"in use by PID {pid}" in f.unsafe_reason


def test_netns_unsafe_without_the_facts(tmp_path: Path) -> None:
    netns_file(tmp_path, "cni-a")
    f = only(scan_netns(ctx_for(tmp_path)))  # host root is not /: no process table
    assert not f.safe and f.unsafe_reason == NO_PROCESSES
    f = only(scan_netns(ctx_for(tmp_path, runtime_known=False), pids=me))
    assert f.unsafe_reason == NO_RUNTIME
    f = only(scan_netns(ctx_for(tmp_path, sandbox_ids=frozenset({"s"})), pids=me))
    assert "did not say which network namespaces" in f.unsafe_reason
    netns_file(tmp_path, "cni-a", age=time.time())
    f = only(scan_netns(ctx_for(tmp_path), pids=me))
    assert not f.safe and "may still be being set up" in f.unsafe_reason
    assert scan_netns(ctx_for(tmp_path / "nothing"), pids=me) == []


# --- 4. CNI host-local reservations -------------------------------------------------------------

LIVE = "a" * 64
GONE = "b" * 64


def ipam(root: Path, net: str, name: str, text: str, age: float = OLD) -> Path:
    p = put(root, f"/var/lib/cni/networks/{net}/{name}", text)
    os.utime(p, (age, age))
    return p


def test_case3_only_the_unknown_reservation_is_a_finding(tmp_path: Path) -> None:
    ipam(tmp_path, "cbr0", "10.88.0.5", LIVE)
    ipam(tmp_path, "cbr0", "10.88.0.6", GONE)
    ipam(tmp_path, "cbr0", "last_reserved_ip.0", "10.88.0.6")
    ipam(tmp_path, "cbr0", "lock", "")
    f = only(scan_cni(ctx_for(tmp_path, sandbox_ids=frozenset({LIVE}))))
    assert f.type == CNI_IP and f.target == "/var/lib/cni/networks/cbr0/10.88.0.6"
    assert f.safe
    assert f.details == {
        "network": "cbr0",
        "ip": "10.88.0.6",
        "id": GONE,
        "ifname": "",
        "network_leaked": 1,
        "network_reserved": 2,
    }
    assert cni_summary([f]) == {"cbr0": (1, 2)}


def test_reservation_of_a_notready_sandbox_is_a_finding_not_safe(tmp_path: Path) -> None:
    """An address reserved for a NOTREADY sandbox holds no live pod network: a finding, not
    safe while the runtime has the sandbox; a READY sandbox's address is no finding."""
    dead = "d" * 64
    ipam(tmp_path, "cbr0", "10.88.0.5", LIVE)
    ipam(tmp_path, "cbr0", "10.88.0.6", dead)
    ctx = ctx_for(
        tmp_path, sandbox_ids=frozenset({LIVE, dead}), notready_sandbox_ids=frozenset({dead})
    )
    f = only(scan_cni(ctx))
    assert f.target == "/var/lib/cni/networks/cbr0/10.88.0.6" and not f.safe
    assert f.unsafe_reason == (
        f"sandbox {dead} is NOTREADY; once `kubegc gc sandboxes` removes it, the reservation can go"
    )
    assert "NOTREADY sandbox" in f.evidence and f.clean_action == "nothing"
    assert f.manual.startswith("kubegc gc sandboxes")
    assert cni_summary([f]) == {"cbr0": (1, 2)}


def test_cni_newer_format_ipv6_and_several_networks(tmp_path: Path) -> None:
    ipam(tmp_path, "cbr0", "10.88.0.7", f"{GONE}\r\neth0")
    ipam(tmp_path, "cbr0", "10.88.0.8", f"{LIVE}\r\neth0")
    ipam(tmp_path, "cbr0", "fd00::9", f"{GONE[:60]}xxxx\r\neth0")
    ipam(tmp_path, "k8s-pod-network", "10.1.0.2", LIVE[:12])  # an ID prefix: known
    ipam(tmp_path, "k8s-pod-network", "notes.txt", GONE)
    found = scan_cni(ctx_for(tmp_path, container_ids=frozenset({LIVE})))
    assert [(f.details["ip"], f.details["ifname"]) for f in found] == [
        ("10.88.0.7", "eth0"),
        ("fd00::9", "eth0"),
    ]
    assert cni_summary(found) == {"cbr0": (2, 3)}


def test_cni_unsafe_without_runtime_when_young_or_without_id(tmp_path: Path) -> None:
    ipam(tmp_path, "cbr0", "10.88.0.6", GONE)
    assert only(scan_cni(ctx_for(tmp_path, runtime_known=False))).unsafe_reason == NO_RUNTIME
    ipam(tmp_path, "cbr0", "10.88.0.6", GONE, age=time.time())
    assert "may still be being set up" in only(scan_cni(ctx_for(tmp_path))).unsafe_reason
    ipam(tmp_path, "cbr0", "10.88.0.6", "")
    assert "no container ID" in only(scan_cni(ctx_for(tmp_path))).unsafe_reason
    assert scan_cni(ctx_for(tmp_path / "none")) == []


@pytest.mark.parametrize(
    ("name", "ip"),
    [("10.88.0.6", True), ("fd00::1", True), ("last_reserved_ip.0", False), ("lock", False)],
)
def test_is_ip_name(name: str, ip: bool) -> None:
    assert is_ip_name(name) is ip


# --- 5. pod cgroups -----------------------------------------------------------------------------


def test_v2_systemd_pod_cgroups(tmp_path: Path) -> None:
    write_mountinfo(tmp_path, MOUNTINFO_V2)
    pods = "/sys/fs/cgroup/kubepods.slice"
    gone = pod_cgroup_path(pods, "systemd", "burstable", UID1)
    busy = pod_cgroup_path(pods, "systemd", "besteffort", UID2)
    live = pod_cgroup_path(pods, "systemd", "guaranteed", "33333333-3333-3333-3333-333333333333")
    for p in (gone, busy, live):
        write_procs(tmp_path, p, [])
    write_procs(tmp_path, f"{busy}/cri-containerd-abc.scope", [4242, 4243])
    ctx = ctx_for(tmp_path, pod_uids=frozenset({"33333333-3333-3333-3333-333333333333"}))
    a, b = sorted(scan_pod_cgroups(ctx), key=lambda f: f.details["uid"])
    assert a.type == POD_CGROUP and a.target == gone and a.safe
    assert a.details == {"uid": UID1, "qos": "burstable", "paths": [gone], "processes": 0}
    assert b.target == busy and not b.safe and b.details["processes"] == 2
    assert "2 process(es)" in b.unsafe_reason
    assert a.action.startswith("rmdir (deepest first)")
    f = only(
        scan_pod_cgroups(
            ctx_for(
                tmp_path,
                pods_known=False,
                runtime_pod_uids=frozenset({UID2, "33333333-3333-3333-3333-333333333333"}),
            )
        )
    )
    assert f.details["uid"] == UID1 and f.unsafe_reason == NO_POD_SOURCE


def test_v1_cgroupfs_one_finding_per_pod_across_hierarchies(tmp_path: Path) -> None:
    write_mountinfo(tmp_path, MOUNTINFO_V1)
    paths = [
        pod_cgroup_path(f"/sys/fs/cgroup/{h}/kubepods", "cgroupfs", "besteffort", UID1)
        for h in ("cpu,cpuacct", "memory", "pids")
    ]
    for p in paths:
        write_procs(tmp_path, p, [])
    f = only(scan_pod_cgroups(ctx_for(tmp_path)))
    assert f.target == f"/sys/fs/cgroup/memory/kubepods/besteffort/pod{UID1}"
    assert f.details["paths"] == sorted(paths) and f.safe
    write_procs(tmp_path, f"{paths[2]}/ctr", [7])  # a process in one hierarchy only
    f = only(scan_pod_cgroups(ctx_for(tmp_path)))
    assert not f.safe and f.details["processes"] == 1


def test_no_cgroup_fs_is_no_finding(tmp_path: Path) -> None:
    assert scan_pod_cgroups(ctx_for(tmp_path)) == []
    write_mountinfo(tmp_path, MOUNTINFO_NO_CGROUP)
    assert scan_pod_cgroups(ctx_for(tmp_path)) == []


# --- 6. shims -----------------------------------------------------------------------------------

SOCK = "/run/containerd/containerd.sock"


def shim(pid: int, *args: str, age: float = 3600, name: str = "containerd-shim") -> ProcessInfo:
    return ProcessInfo(pid, name, ("/usr/bin/containerd-shim-runc-v2", *args), time.time() - age)


def test_shims_of_unknown_ids(tmp_path: Path) -> None:
    procs = [
        shim(10, "-namespace", "k8s.io", "-id", GONE, "-address", SOCK),
        shim(11, "-namespace", "k8s.io", "-id", LIVE, "-address", SOCK),
        shim(12, "-namespace", "moby", "-id", GONE, "-address", SOCK),
        shim(13, "-namespace", "k8s.io", "-id", GONE, "-address", SOCK, age=5),
        shim(14, "--namespace=k8s.io", "--id=" + "c" * 64, "--address", "/other.sock"),
        ProcessInfo(15, "bash", ("bash", "-id", GONE), 0.0),
        shim(16, "-namespace", "k8s.io", "-workdir", f"/var/lib/containerd/x/k8s.io/{GONE}"),
    ]
    ctx = ctx_for(tmp_path, sandbox_ids=frozenset({LIVE}))
    found = scan_shims(ctx, processes=lambda: procs)
    assert [f.target for f in found] == ["pid:10", "pid:13", "pid:14", "pid:16"]
    assert all(f.type == SHIM and not f.safe and f.clean_action == "nothing" for f in found)
    old, young, other, v1 = found
    assert "started" in young.unsafe_reason
    assert [f.unsafe_reason for f in (old, other, v1)] == [NEVER_KILL] * 3
    assert (
        old.manual
        == f"once `ctr --address {SOCK} -n k8s.io tasks ls` shows no task {GONE}: kill 10"
    )
    assert "ctr --address /other.sock -n k8s.io" in other.manual
    assert old.details["id"] == GONE and old.details["address"] == SOCK
    found = scan_shims(ctx, processes=lambda: procs, address=f"unix://{SOCK}")
    assert [f.target for f in found] == ["pid:10", "pid:13", "pid:16"]
    assert f"ctr --address {SOCK} -n k8s.io" in found[2].manual  # shim v1: the runtime's socket
    assert scan_shims(ctx_for(tmp_path, runtime_known=False), processes=lambda: procs) == []
    assert scan_shims(ctx) == []  # host root is not /: the host's processes are not visible


def test_young_shim_is_reported_not_safe_with_its_age(tmp_path: Path) -> None:
    """A shim of an unknown ID started minutes ago is reported (not hidden), not safe, with
    its age; the manual check names the shim's containerd socket."""
    ctx = ctx_for(tmp_path, sandbox_ids=frozenset({LIVE}))
    procs = [shim(13, "-namespace", "k8s.io", "-id", GONE, "-address", SOCK, age=5)]
    f = only(scan_shims(ctx, processes=lambda: procs))
    assert f.target == "pid:13" and not f.safe and f.details["age_seconds"] in (4, 5, 6)
    assert f.unsafe_reason.startswith(NEVER_KILL + "; started ")
    assert "s ago: a sandbox may still be being set up" in f.unsafe_reason
    assert f"ctr --address {SOCK} -n k8s.io tasks ls" in f.manual


def test_shim_args() -> None:
    assert shim_args(["shim", "-namespace", "k8s.io", "-id", "x", "-debug", "start"]) == {
        "namespace": "k8s.io",
        "id": "x",
        "debug": "",
    }
    assert shim_args(["shim", "--id=y", "-address=/s"]) == {"id": "y", "address": "/s"}


def test_cgroup_mounts_visible_only_with_a_cgroup_mount(tmp_path: Path) -> None:
    from kubegc_cli.node.host.cgroups import cgroup_mounts_visible
    from tests.unit.hostfixtures import MOUNTINFO_NO_CGROUP, MOUNTINFO_V2, write_mountinfo

    assert cgroup_mounts_visible(tmp_path) is False  # no mount table at all
    write_mountinfo(tmp_path, MOUNTINFO_NO_CGROUP)
    assert cgroup_mounts_visible(tmp_path) is False
    write_mountinfo(tmp_path, MOUNTINFO_V2, pid="self")
    assert cgroup_mounts_visible(tmp_path) is True  # the host init's lacks one; self has it
