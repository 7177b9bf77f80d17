"""Never deleting through a mount: the mount table read as the kernel writes it, and removals
checked by mount ID as they go (kubegc_cli.node.host.mounts, kubegc_cli.node.host.tree), for pod log
directories (`gc logs`, `residue clean`) and container log files (`gc containers`)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubegc_cli.node.host.logs import LogRoots, pinned_on_host, release_pins, remove_container_logs
from kubegc_cli.node.host.mounts import MountTable, mount_id
from kubegc_cli.node.host.podlogs import LogDirChanged, remove_pod_log_dir
from kubegc_cli.node.host.tree import Pin, Refused, remove_tree
from tests.unit.factories import disk, owner
from tests.unit.test_residue_host import Mount, mount, needs_root

__all__ = ["mount"]  # the fixture

# names the kernel writes as they are in /proc/self/mountinfo (it escapes only space, tab,
# newline and backslash), and which str.split() or a UTF-8 decode with replacement would mangle
ODD_NAMES = [
    b"vt\x0bname",  # a vertical tab
    b"ff\x0cname",  # a form feed
    b"fs\x1cname",  # a file separator (str.splitlines splits there)
    "nel\u0085name".encode(),  # NEXT LINE
    "nbsp\u00a0name".encode(),  # NO-BREAK SPACE
    "em\u2003name".encode(),  # EM SPACE
    b"latin1-\xff-name",  # not UTF-8
]

STALE = MountTable(frozenset({"/"}))
LOG = "/var/log/pods/default_web_u1/app/0.log"  # a readable table that lists no mount below "/"


@pytest.mark.parametrize("name", ODD_NAMES, ids=lambda b: repr(b)[2:-1])
def test_the_mount_table_names_a_mount_point_as_scandir_does(tmp_path: Path, name: bytes) -> None:
    """A mount point whose name holds any byte the kernel does not escape is the same `str`
    in the table as `os.scandir` gives for it, so the "never into a mount" checks match."""
    point = b"/var/log/pods/ns_p_uid/" + name
    info = tmp_path / "mountinfo"
    info.write_bytes(
        b"22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
        b"40 22 8:1 /src " + point + b" rw,relatime shared:9 - ext4 /dev/sda1 rw\n"
        b"41 22 0:27 / /mnt/with\\040space\\011tab rw - tmpfs tmpfs rw\n"
    )
    table = MountTable.read(info)
    assert table.known
    assert table.is_mount_point(os.fsdecode(point))
    assert table.has_mount_below("/var/log/pods/ns_p_uid")
    assert table.is_mount_point("/mnt/with space\ttab")
    (tmp_path / os.fsdecode(name)).mkdir()
    assert [e.name for e in os.scandir(tmp_path) if e.is_dir()] == [os.fsdecode(name)]


def test_mount_id_is_read_for_an_open_directory(tmp_path: Path) -> None:
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        first = mount_id(fd)
    finally:
        os.close(fd)
    fd = os.open(tmp_path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert first is not None and mount_id(fd) == first
    finally:
        os.close(fd)
    assert mount_id(10**6) is None  # no such descriptor


def _canary(tmp_path: Path) -> Path:
    src = tmp_path / "bind-source"
    (src / "sub").mkdir(parents=True)
    (src / "keep.txt").write_text("keep")
    (src / "sub/deep.txt").write_text("keep")
    return src


def _intact(src: Path) -> bool:
    return (src / "keep.txt").read_text() == "keep" and (src / "sub/deep.txt").exists()


@needs_root
def test_remove_tree_never_enters_a_bind_mount_the_table_does_not_list(
    tmp_path: Path, mount: Mount
) -> None:
    """A bind mount of a directory on the same filesystem (same device number), made after
    the table was read: the walk sees another mount ID and leaves it with its contents."""
    src = _canary(tmp_path)
    top = tmp_path / "ns_p_9a1b2c3d-0000-1111-2222-333344445555"
    (top / "c/vol").mkdir(parents=True)
    (top / "c/0.log").write_bytes(b"x" * 10)
    mount("--bind", str(src), str(top / "c/vol"))
    done = remove_tree(str(top), STALE, Pin.open(str(top.parent)))
    assert not done.complete and done.left == [str(top / "c/vol")]
    assert "left (another filesystem or a mount point)" in done.problem(str)
    assert _intact(src) and not (top / "c/0.log").exists()
    assert done.size_freed == 10


@needs_root
def test_remove_tree_refuses_a_top_mounted_over_since_the_table_was_read(
    tmp_path: Path, mount: Mount
) -> None:
    src = _canary(tmp_path)
    top = tmp_path / "t"
    top.mkdir()
    mount("--bind", str(src), str(top))
    with pytest.raises(Refused, match="mount point now"):
        remove_tree(str(top), STALE, Pin.open(str(top.parent)))
    assert _intact(src)


@needs_root
@pytest.mark.parametrize("name", ODD_NAMES, ids=lambda b: repr(b)[2:-1])
def test_a_pod_log_dir_with_an_odd_name_and_a_mount_inside_is_left(
    tmp_path: Path, mount: Mount, name: bytes
) -> None:
    """The mount table read now names the mount below the directory whatever its name holds:
    the directory is left before anything is removed."""
    src = _canary(tmp_path)
    top = tmp_path / os.fsdecode(b"ns" + name + b"_p_9a1b2c3d-0000-1111-2222-333344445555")
    (top / "vol").mkdir(parents=True)
    (top / "0.log").write_bytes(b"x")
    mount("--bind", str(src), str(top / "vol"))
    with pytest.raises(LogDirChanged, match="mount point at or below"):
        remove_pod_log_dir(str(top), MountTable.read(), Pin.open(str(tmp_path)))
    assert _intact(src) and (top / "0.log").exists()


@needs_root
def test_container_logs_are_not_unlinked_in_a_directory_mounted_since_the_table_was_read(
    tmp_path: Path, mount: Mount
) -> None:
    """The container log directory is opened once and must be on podLogsDir's own mount:
    a bind mount there (the mount's source may be anywhere) keeps every file, with a note."""
    d = tmp_path / "var/log/pods/default_web_u1/app"
    d.mkdir(parents=True)
    src = tmp_path / "bind-source"
    src.mkdir()
    for name in ("0.log", "0.log.20261129-101010"):
        (src / name).write_text("keep")
    mount("--bind", str(src), str(d))
    roots = LogRoots(tmp_path, "/var/log/pods")
    freed, note = remove_container_logs(roots, owner("a", LOG), LOG, STALE)
    assert freed == 0 and "not on podLogsDir's mount" in note
    assert note.startswith("/var/log/pods/default_web_u1/app is") and str(tmp_path) not in note
    assert sorted(p.name for p in src.iterdir()) == ["0.log", "0.log.20261129-101010"]


def test_container_logs_on_podlogsdirs_mount_are_removed(tmp_path: Path) -> None:
    d = tmp_path / "var/log/pods/default_web_u1/app"
    d.mkdir(parents=True)
    (d / "0.log").write_bytes(b"x" * 7)
    (d / "0.log.20261129-101010").write_bytes(b"y" * 3)
    (d / "1.log").write_bytes(b"other attempt")
    ours = disk(d / "0.log", d / "0.log.20261129-101010")
    roots = LogRoots(tmp_path, "/var/log/pods")
    freed, note = remove_container_logs(roots, owner("a", LOG), LOG, STALE)
    assert (freed, note) == (ours, "") and [p.name for p in d.iterdir()] == ["1.log"]


U = "9a1b2c3d-0000-1111-2222-333344445555"
U_LOG = f"/var/log/pods/ns_p_{U}/c/0.log"


def _host_with_a_pod_log_dir(tmp_path: Path) -> tuple[Path, Path]:
    """A host root with `/var/log/pods/ns_p_U/c/0.log`, and a victim directory outside it
    holding the same names (what a path put in place after the plan would lead to)."""
    host = tmp_path / "host"
    (host / f"var/log/pods/ns_p_{U}/c").mkdir(parents=True)
    (host / f"var/log/pods/ns_p_{U}/c/0.log").write_text("planned")
    victim = tmp_path / "victim"
    (victim / f"pods/ns_p_{U}/c").mkdir(parents=True)
    (victim / f"pods/ns_p_{U}/c/0.log").write_text("keep")
    return host, victim


@pytest.fixture
def pins() -> Iterator[None]:
    yield
    release_pins()


def test_a_symlink_put_on_the_way_to_pod_logs_dir_after_the_plan_is_not_followed(
    tmp_path: Path, pins: None
) -> None:
    """podLogsDir is pinned when the plan is made: moving `/var/log` away and putting a
    symlink to another directory in its place changes nothing about what is removed."""
    host, victim = _host_with_a_pod_log_dir(tmp_path)
    roots = LogRoots(host, "/var/log/pods")
    pin = roots.pin  # the plan
    (host / "var/log").rename(host / "var/log.real")
    (host / "var/log").symlink_to(victim)  # absolute: this machine's path
    planned = disk(host / f"var/log.real/pods/ns_p_{U}/c/0.log")
    freed, note = remove_container_logs(roots, owner("a", U_LOG), U_LOG, STALE)
    assert (freed, note) == (planned, "")
    assert (victim / f"pods/ns_p_{U}/c/0.log").read_text() == "keep"
    done = remove_pod_log_dir(os.path.join(pin.path, f"ns_p_{U}"), MountTable.read(), pin)
    assert done.complete and not (host / f"var/log.real/pods/ns_p_{U}").exists()
    assert (victim / f"pods/ns_p_{U}/c/0.log").read_text() == "keep"
    assert LogRoots(host, "/var/log/pods").real_pod_logs_dir == pin.path  # the first wins


@needs_root
def test_a_mount_put_on_pod_logs_dir_after_the_plan_is_not_entered(
    tmp_path: Path, mount: Mount, pins: None
) -> None:
    """A bind mount on podLogsDir itself after the plan: removals act in the pinned
    directory (now under the mount), never in the mount's source."""
    host, victim = _host_with_a_pod_log_dir(tmp_path)
    roots = LogRoots(host, "/var/log/pods")
    pin = roots.pin
    planned = disk(os.path.join(pin.path, f"ns_p_{U}/c/0.log"))
    mount("--bind", str(victim / "pods"), str(host / "var/log/pods"))
    freed, _ = remove_container_logs(roots, owner("a", U_LOG), U_LOG, STALE)
    assert freed == planned
    remove_pod_log_dir(os.path.join(pin.path, f"ns_p_{U}"), MountTable.read(), pin)
    assert (victim / f"pods/ns_p_{U}/c/0.log").read_text() == "keep"
    assert pinned_on_host(host, "/var/log/pods") is pin


@pytest.mark.parametrize(
    ("pin", "local", "shown"),
    [
        (Pin("/h/var/log/pods", host="/var/log/pods"), "", "/var/log/pods"),
        (Pin("/h/var/log/pods", host="/var/log/pods"), "/h/var/log/pods", "/var/log/pods"),
        (Pin("/h/var/log/pods", host="/var/log/pods"), "/h/var/log/pods/a/b", "/var/log/pods/a/b"),
        (Pin("/h/var/log/pods", host="/var/log/pods"), "/h/var/log/podsx", "/h/var/log/podsx"),
        (Pin("/h/var/log/pods", host="/var/log/pods"), "/elsewhere", "/elsewhere"),
        (Pin("/var/log/pods"), "/var/log/pods/a", "/var/log/pods/a"),
        (Pin("/h", host="/"), "/h/x", "/x"),
        (Pin(""), "/h/x", "/h/x"),
    ],
)
def test_a_pin_shows_paths_below_it_as_host_paths(pin: Pin, local: str, shown: str) -> None:
    assert pin.show(local) == shown


def test_a_pin_taken_under_a_host_root_shows_host_paths(tmp_path: Path) -> None:
    (tmp_path / "var/log/pods/ns_p_u").mkdir(parents=True)
    os.symlink("/var/log", tmp_path / "logs")
    try:
        pin = pinned_on_host(tmp_path, "/logs/pods")
        assert pin.path == str(tmp_path / "var/log/pods") and pin.host == "/var/log/pods"
        (tmp_path / "var/log/pods/ns_p_u").rmdir()
        os.symlink("/", tmp_path / "var/log/pods/ns_p_u")
        with pytest.raises(Refused, match=r"^/var/log/pods/ns_p_u is a symlink now; left$"):
            remove_tree(str(tmp_path / "var/log/pods/ns_p_u"), STALE, pin)
    finally:
        release_pins()


def test_a_hard_linked_file_frees_nothing_unless_its_last_link_goes(tmp_path: Path) -> None:
    """`bytes_freed`/`size_freed` count a removed file only if no other link keeps its data:
    one linked from outside the tree counts 0; two links both inside count once."""
    top = tmp_path / f"ns_p_{U}"
    (top / "c").mkdir(parents=True)
    (top / "c/0.log").write_bytes(b"x" * 5000)
    os.link(top / "c/0.log", tmp_path / "kept.log")
    (top / "c/1.log").write_bytes(b"y" * 7)
    os.link(top / "c/1.log", top / "c/1.log.copy")
    freeable = sum(os.lstat(p).st_blocks * 512 for p in (top, top / "c", top / "c/1.log"))
    done = remove_tree(str(top), STALE, Pin.open(str(tmp_path)))
    assert done.complete and not top.exists()
    assert done.size_freed == 7 and (tmp_path / "kept.log").read_bytes() == b"x" * 5000
    assert done.bytes_freed == freeable  # two directories and 1.log once; not 0.log


def test_a_container_log_with_another_hard_link_frees_nothing(tmp_path: Path) -> None:
    d = tmp_path / "var/log/pods/default_web_u1/app"
    d.mkdir(parents=True)
    (d / "0.log").write_bytes(b"x" * 7)
    (d / "0.log.20261129-101010").write_bytes(b"y" * 3)
    os.link(d / "0.log", tmp_path / "kept.log")
    rotated = disk(d / "0.log.20261129-101010")
    freed, note = remove_container_logs(
        LogRoots(tmp_path, "/var/log/pods"),
        owner("a", LOG),
        LOG,
        STALE,
    )
    assert (freed, note) == (rotated, "") and list(d.iterdir()) == []
    assert (tmp_path / "kept.log").read_bytes() == b"x" * 7
