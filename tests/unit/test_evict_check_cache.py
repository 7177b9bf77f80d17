"""`kubegc evict check` remembers the runtime's filesystem mountpoints in the state dir
(`kubegc_cli.node.cri.fscache`) and asks the runtime again only when its socket changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.node.cri import fscache
from tests.unit.faultcri import FaultCri, Inventory
from tests.unit.test_evict_check import ENV, v1_node
from tests.unit.test_state import _read_only

THRESHOLDS = "imagefs.available<1%,nodefs.available<1%"
# Runs kubegc, then says on the last line of stderr whether grpc was ever imported (and,
# on the line before, psutil: the running kubelet is found in /proc without it).
PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('grpc imported: %s\\n' % any("
    "m == 'grpc' or m.startswith('grpc.') for m in sys.modules)))\n"
    "atexit.register(lambda: sys.stderr.write('psutil imported: %s\\n' % ('psutil' in "
    "sys.modules)))\n"
    "from kubegc_cli.cli.main import main\n"
    "main(sys.argv[1:])\n"
)


@pytest.fixture
def sock_dir() -> Iterator[Path]:
    """A short directory for unix sockets (pytest's tmp paths can exceed 107 bytes)."""
    with tempfile.TemporaryDirectory(prefix="kgc-") as d:
        yield Path(d)


def runtime(sock: Path, mountpoint: str = "/var/lib/containerd") -> FaultCri:
    return FaultCri(sock, Inventory(image_fs_mountpoint=mountpoint))


def check(
    root: Path, endpoint: str, state: Path, *args: str
) -> tuple[int, dict[str, Any], str, bool]:
    """One `evict check -o json -v` in a fresh process: (exit code, document, stderr, whether
    grpc was imported)."""
    res = subprocess.run(
        [sys.executable, "-c", PROBE, "--host-root", str(root), "-r", endpoint,
         "--state-dir", str(state), "evict", "check", "--root-dir", "/var/lib/kubelet",
         "--eviction-hard", THRESHOLDS, "-o", "json", "-v", *args],
        capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip
    last = res.stderr.rstrip("\n").rsplit("\n", 1)[-1]
    assert last.startswith("grpc imported: "), res.stderr
    return res.returncode, json.loads(res.stdout), res.stderr, last.endswith("True")


def node(root: Path, *mountpoints: str) -> None:
    v1_node(root, available_mib=900)
    for m in mountpoints or ("/var/lib/containerd",):
        (root / m.lstrip("/")).mkdir(parents=True, exist_ok=True)


def imagefs(doc: dict[str, Any]) -> dict[str, Any]:
    return next(t for t in doc["thresholds"] if t["signal"] == "imagefs.available")


def test_a_second_run_uses_the_cache_and_never_imports_grpc(tmp_path: Path, sock_dir: Path) -> None:
    node(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    with runtime(sock_dir / "cri.sock") as cri:
        code, first, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
        assert code == 0, err
        assert grpc_loaded and cri.count("ImageFsInfo") == 1
        assert "image filesystem from the runtime (CRI ImageFsInfo)" in err
        assert f"remembered in {state / fscache.CACHE_NAME}" in err
        code, second, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
        assert code == 0, err
        assert not grpc_loaded, err
        assert "psutil imported: False" in err
        assert cri.count("ImageFsInfo") == 1
        ident = fscache.socket_identity(str(cri.socket))
        assert ident is not None
        assert f"image filesystem from the cache {state / fscache.CACHE_NAME}" in err
        assert fscache.describe_identity(ident) in err
    assert first["filesystems"] == second["filesystems"]
    assert second["filesystems"]["imagefs"] == "/var/lib/containerd"
    st = os.statvfs(tmp_path / "var/lib/containerd")
    assert imagefs(second)["capacity"] == st.f_blocks * st.f_frsize
    assert imagefs(second)["observed_from"] == imagefs(first)["observed_from"]
    doc = json.loads((state / fscache.CACHE_NAME).read_text())
    entry = doc["runtimes"][cri.endpoint]
    assert entry["socket"] == list(ident)
    assert entry["image_filesystems"] == ["/var/lib/containerd"]
    assert (state / fscache.CACHE_NAME).stat().st_mode & 0o777 == 0o600


def test_a_replaced_socket_drops_the_cache_and_refreshes_it(tmp_path: Path, sock_dir: Path) -> None:
    node(tmp_path, "/var/lib/containerd", "/srv/images")
    state = tmp_path / "state"
    state.mkdir()
    sock = sock_dir / "cri.sock"
    with runtime(sock) as cri:
        check(tmp_path, cri.endpoint, state)
        old = fscache.socket_identity(str(sock))
    sock.unlink(missing_ok=True)
    with runtime(sock, "/srv/images") as cri:  # the runtime restarted, configured anew
        new = fscache.socket_identity(str(sock))
        assert new is not None and new != old
        code, doc, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
        assert code == 0, err
        assert grpc_loaded and cri.count("ImageFsInfo") == 1
        assert "the socket changed since" in err and "the runtime restarted" in err
        assert doc["filesystems"]["imagefs"] == "/srv/images"
        entry = json.loads((state / fscache.CACHE_NAME).read_text())["runtimes"][cri.endpoint]
        assert entry["socket"] == list(new) and entry["image_filesystems"] == ["/srv/images"]
        code, again, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
        assert not grpc_loaded and cri.count("ImageFsInfo") == 1
        assert again["filesystems"]["imagefs"] == "/srv/images"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe",
        b"[]",
        b'{"kind": "RuntimeFilesystems", "version": 1, "runtimes": []}',
        b'{"kind": "RuntimeFilesystems", "version": 99, "runtimes": {}}',
        b" " * (fscache.MAX_CACHE_BYTES + 1),
        b"[" * (fscache.MAX_CACHE_BYTES - 1),
        b'{"kind": "RuntimeFilesystems", "version": 1, "runtimes": {"a": 1, "a": 2}}',
    ],
    ids=["truncated", "binary", "list", "runtimes-list", "future-version", "huge", "deep",
         "key-twice"],
)  # fmt: skip
def test_a_corrupt_cache_file_is_ignored_and_replaced(
    tmp_path: Path, sock_dir: Path, content: bytes
) -> None:
    node(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    (state / fscache.CACHE_NAME).write_bytes(content)
    with runtime(sock_dir / "cri.sock") as cri:
        code, doc, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
        assert code == 0, err
        assert grpc_loaded and cri.count("ImageFsInfo") == 1
        assert doc["filesystems"]["imagefs"] == "/var/lib/containerd"
        assert "ignored" in err and "Traceback" not in err
        # a warning (shown without -v too): one line naming the file
        warned = [ln for ln in err.splitlines() if ln.startswith(f"kubegc: {state}/")]
        assert len(warned) == 1 and fscache.CACHE_NAME in warned[0], err
        code, doc, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
        assert code == 0 and not grpc_loaded and cri.count("ImageFsInfo") == 1


def _poison(state: Path, endpoint: str, entry: dict[str, Any]) -> None:
    doc = {"kind": fscache.CACHE_KIND, "version": fscache.CACHE_VERSION,
           "runtimes": {endpoint: entry}}  # fmt: skip
    (state / fscache.CACHE_NAME).write_text(json.dumps(doc))


@pytest.mark.parametrize(
    "change",
    [
        {"socket": "0 0 0"},
        {"socket": [1, 2]},
        {"image_filesystems": []},
        {"image_filesystems": ["relative/path"]},
        {"container_filesystems": None},
    ],
)
def test_a_damaged_entry_is_ignored(tmp_path: Path, sock_dir: Path, change: dict[str, Any]) -> None:
    node(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    with runtime(sock_dir / "cri.sock") as cri:
        ident = fscache.socket_identity(str(cri.socket))
        assert ident is not None
        entry = {"socket": list(ident), "image_filesystems": ["/var/lib/containerd"],
                 "container_filesystems": []}  # fmt: skip
        _poison(state, cri.endpoint, {**entry, **change})
        code, _, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
        assert code == 0 and grpc_loaded and cri.count("ImageFsInfo") == 1, err
        assert "is damaged, ignored" in err


def test_a_remembered_mountpoint_that_is_gone_asks_the_runtime(
    tmp_path: Path, sock_dir: Path
) -> None:
    node(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    with runtime(sock_dir / "cri.sock") as cri:
        ident = fscache.socket_identity(str(cri.socket))
        assert ident is not None
        _poison(state, cri.endpoint, {"socket": list(ident), "container_filesystems": [],
                                      "image_filesystems": ["/gone"]})  # fmt: skip
        code, doc, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
        assert code == 0 and grpc_loaded and cri.count("ImageFsInfo") == 1, err
        assert "the remembered mountpoint /gone is no longer a directory" in err
        assert doc["filesystems"]["imagefs"] == "/var/lib/containerd"


def test_a_read_only_state_dir_still_checks(tmp_path: Path, sock_dir: Path) -> None:
    node(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    with runtime(sock_dir / "cri.sock") as cri, _read_only(state):
        for n in (1, 2):
            code, doc, err, grpc_loaded = check(tmp_path, cri.endpoint, state)
            assert code == 0, err
            assert doc["filesystems"]["imagefs"] == "/var/lib/containerd"
            assert grpc_loaded and cri.count("ImageFsInfo") == n
            assert f"not remembered: cannot write {state / fscache.CACHE_NAME}" in err
    assert list(state.iterdir()) == []


def test_a_missing_state_dir_is_created_and_remembers(tmp_path: Path, sock_dir: Path) -> None:
    """A node where kubegc never ran: the first check creates the state dir (0700) as every
    command that writes there does, so the next check needs no CRI call."""
    node(tmp_path)
    state = tmp_path / "var/lib/kubegc"
    with runtime(sock_dir / "cri.sock") as cri:
        code, doc, err, _ = check(tmp_path, cri.endpoint, state)
        assert code == 0, err
        assert doc["filesystems"]["imagefs"] == "/var/lib/containerd"
        assert (state / fscache.CACHE_NAME).is_file()
        assert state.stat().st_mode & 0o777 == 0o700
        code, again, err, _ = check(tmp_path, cri.endpoint, state)
        assert code == 0 and "from the cache" in err, err
        assert again["filesystems"] == doc["filesystems"]


def test_a_state_dir_that_is_a_file_still_checks(tmp_path: Path, sock_dir: Path) -> None:
    node(tmp_path)
    state = tmp_path / "state"
    state.write_text("not a directory")
    with runtime(sock_dir / "cri.sock") as cri:
        code, doc, err, _ = check(tmp_path, cri.endpoint, state)
        assert code == 0, err
        assert doc["filesystems"]["imagefs"] == "/var/lib/containerd"
        assert "not remembered:" in err and str(state) in err
    assert state.read_text() == "not a directory"


def test_snapshot_asks_the_runtime_and_remembers_nothing(tmp_path: Path, sock_dir: Path) -> None:
    node(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    snap = tmp_path / "snap.json"
    snap.write_text("{}")
    with runtime(sock_dir / "cri.sock") as cri:
        check(tmp_path, cri.endpoint, state)
        assert cri.count("ImageFsInfo") == 1
        code, _, err, grpc_loaded = check(tmp_path, cri.endpoint, state, "--snapshot", str(snap))
        assert code == 0, err
        assert grpc_loaded and cri.count("ImageFsInfo") == 2
        assert "not used with --snapshot" in err


def test_an_unreachable_runtime_is_reported_as_before(tmp_path: Path, sock_dir: Path) -> None:
    node(tmp_path)
    state = tmp_path / "state"
    state.mkdir()
    code, doc, err, _ = check(tmp_path, f"unix://{sock_dir}/none.sock", state)
    assert code == 3, err
    assert "imagefs.available" in doc["unread"]
    assert not (state / fscache.CACHE_NAME).exists()


def test_remember_keeps_live_endpoints_and_at_most_max_entries(
    tmp_path: Path, sock_dir: Path
) -> None:
    runtimes: dict[str, Any] = {
        f"unix://{sock_dir}/gone.sock": {"socket": [1, 2, 3], "recorded_at_ns": 99}
    }
    for i in range(fscache.MAX_ENTRIES + 4):
        (sock_dir / f"s{i}").touch()
        runtimes[f"unix://{sock_dir}/s{i}"] = {"socket": [1, 2, 3], "recorded_at_ns": i}
    doc = {"kind": fscache.CACHE_KIND, "version": fscache.CACHE_VERSION, "runtimes": runtimes}
    (tmp_path / fscache.CACHE_NAME).write_text(json.dumps(doc))
    with runtime(sock_dir / "cri.sock") as cri:
        ident = fscache.socket_identity(str(cri.socket))
        assert ident is not None
        assert fscache.remember(tmp_path, cri.endpoint, ident, ["/tmp"], []) == ""
        kept = json.loads((tmp_path / fscache.CACHE_NAME).read_text())["runtimes"]
        assert len(kept) == fscache.MAX_ENTRIES and cri.endpoint in kept
        assert f"unix://{sock_dir}/gone.sock" not in kept
        assert f"unix://{sock_dir}/s0" not in kept and f"unix://{sock_dir}/s19" in kept
        assert fscache.lookup(tmp_path, cri.endpoint, ident, Path("/")) == ((["/tmp"], []), "")
    assert fscache.remember(tmp_path, "unix:///x.sock", (1, 2, 3), [""], []) != ""
    assert fscache.socket_identity(str(tmp_path / fscache.CACHE_NAME)) is None  # not a socket
