"""The state directory cannot be turned against the user running kubegc (root): kubegc makes it
0700, refuses one another user could change (exit 2, naming it with its owner and mode) before
anything else happens, and opens no file in it through a symbolic link. The run lock is
node-wide (`<host-root>/run/kubegc/lock`), whatever `--state-dir` a run was given."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.node.cri import fscache
from kubegc_cli.node.state import read_history
from kubegc_cli.report.events import _limits
from tests.unit.factories import ctr
from tests.unit.faultcri import FaultCri
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime
from tests.unit.test_faults import history, kubegc, node_inventory, run_process


def node() -> MemoryCri:
    """Three dead attempts of one container: the two oldest are garbage (no pod source)."""
    cs = [ctr(f"dead000{i}", attempt=i, age_s=900 - 100 * i) for i in range(3)]
    return MemoryCri({c.id: c for c in cs}, {})


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "host"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "CONTAINER_RUNTIME_ENDPOINT"}
    with mock.patch.dict(os.environ, env, clear=True):
        yield root


def gc_yes(host: Path, state: Path, *more: str) -> tuple[int, str, str, MemoryCri]:
    cri = node()
    with use_runtime(cri):
        code, out, err = run_cli(
            ["--host-root", str(host), "--state-dir", str(state), "--now",
             "2027-01-15T08:00:00Z", "--pod-source", "none", "gc", "containers", "--yes", *more]
        )  # fmt: skip
    return code, out, err, cri


def test_a_new_state_dir_is_made_0700(host: Path, tmp_path: Path) -> None:
    code, _, err, cri = gc_yes(host, tmp_path / "state")
    assert code == 0, err
    assert stat.S_IMODE(os.stat(tmp_path / "state").st_mode) == 0o700
    assert len(cri.removed) == 2


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o722, 0o1777], ids=oct)
def test_a_state_dir_others_can_write_is_refused_before_anything(
    host: Path, tmp_path: Path, mode: int
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, mode)
    code, out, err, cri = gc_yes(host, state)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert str(state) in err and f"mode {mode:04o}" in err and f"owner uid {os.geteuid()}" in err
    assert cri.removed == [] and os.listdir(state) == []  # nothing removed, nothing written
    assert not (host / "run").exists()  # not even the node lock was taken


def test_a_state_dir_owned_by_another_user_is_refused(host: Path, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory to another user")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.chown(state, 65534, 65534)
    code, _, err, cri = gc_yes(host, state)
    assert code == 2 and "owner uid 65534" in err and str(state) in err, err
    assert cri.removed == [] and os.listdir(state) == []


def test_a_state_dir_below_a_directory_others_can_write_is_refused(
    host: Path, tmp_path: Path
) -> None:
    """Whoever can write a directory above it can swap the state dir for a link."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    state = shared / "state"
    state.mkdir(mode=0o700)
    code, _, err, cri = gc_yes(host, state)
    assert code == 2 and str(shared) in err and "mode 0777" in err, err
    assert cri.removed == []


def test_a_state_dir_reached_through_a_link_is_checked_where_it_leads(
    host: Path, tmp_path: Path
) -> None:
    """An operator's link (`/var/lib/kubegc` → a larger disk) works when both the place of the
    link and the directory it leads to are safe; a link in a directory others can write (which
    they could point anywhere) is refused, and so is one leading to a directory others can."""
    real = tmp_path / "disk" / "kubegc"
    real.mkdir(parents=True, mode=0o700)
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "kubegc").symlink_to(real)
    code, _, err, cri = gc_yes(host, tmp_path / "lib" / "kubegc")
    assert code == 0 and len(cri.removed) == 2, err
    [run] = read_history(real, 5)
    assert run["by_result"] == {"removed": 2}
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    (shared / "kubegc").symlink_to(real)
    code, _, err, cri = gc_yes(host, shared / "kubegc")
    assert code == 2 and f"below {shared}" in err and cri.removed == [], err
    os.chmod(real, 0o757)
    code, _, err, cri = gc_yes(host, tmp_path / "lib" / "kubegc")
    assert code == 2 and "mode 0757" in err and cri.removed == [], err


@pytest.mark.parametrize("where", ["the-state-dir", "on-the-way", "a-link-a-link-leads-to"])
def test_a_state_dir_through_a_link_another_user_owns_is_refused(
    host: Path, tmp_path: Path, where: str
) -> None:
    """A link another user made (in a sticky directory such as /tmp, where anyone may add one)
    chooses where root's files go: `--state-dir` through it is refused, naming the link, even
    when it leads to a safe directory only root can write; nothing is made there."""
    if os.geteuid() != 0:
        pytest.skip("needs root to give a link to another user")
    sticky = tmp_path / "tmp"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    rootonly = tmp_path / "rootonly"
    rootonly.mkdir(mode=0o700)
    theirs = sticky / "theirs"
    if where == "a-link-a-link-leads-to":
        theirs.symlink_to(rootonly)
        mine = tmp_path / "mine"
        mine.symlink_to(theirs)
        state = mine
    else:
        theirs.symlink_to(rootonly if where == "the-state-dir" else tmp_path)
        state = theirs if where == "the-state-dir" else theirs / "rootonly"
    os.lchown(theirs, 65534, 65534)
    code, out, err, cri = gc_yes(host, state)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"the symbolic link {theirs} (owner uid 65534)" in err
    assert cri.removed == [] and os.listdir(rootonly) == []
    os.lchown(theirs, 0, 0)  # the same link, root's: used
    code, _, err, cri = gc_yes(host, state)
    assert code == 0 and len(cri.removed) == 2, err
    assert stat.S_IMODE(os.stat(rootonly / "state.db").st_mode) == 0o600


STATE_FILES = ["lock", "state.db", "state.db-wal", "state.db-shm", "state.db-journal"]


@pytest.mark.parametrize("name", STATE_FILES)
@pytest.mark.parametrize("target", ["existing", "dangling"])
def test_no_file_is_written_through_a_link_planted_in_the_state_dir(
    host: Path, tmp_path: Path, name: str, target: str
) -> None:
    """A link in the state dir (to a file, or to where a file would be created) is refused in
    a run that removes, a dry run of gc images and history alike; the target stays as it is."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    if target == "existing":
        victim.write_text("precious\n")
    (state / name).symlink_to(victim)
    code, _, err, cri = gc_yes(host, state)
    assert code == 2 and str(state / name) in err and "link" in err, err
    assert cri.removed == []
    code, _, err = run_cli(["--state-dir", str(state), "history"])
    if name != "lock":
        assert code == 2 and str(state / name) in err, err
    if target == "existing":
        assert victim.read_text() == "precious\n"
    else:
        assert not victim.exists()


def test_events_rate_limit_opens_no_link(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    (state / "events.json").symlink_to(victim)
    said: list[str] = []
    with _limits(state, 600, said.append) as limit:
        assert limit is None
    assert not victim.exists()
    assert len(said) == 1 and str(state / "events.json") in said[0]


def test_events_rate_limit_refuses_an_unsafe_state_dir(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o777)
    said: list[str] = []
    with _limits(state, 600, said.append) as limit:
        assert limit is None
    assert os.listdir(state) == [] and "mode 0777" in said[0]


def test_runtime_fs_cache_reads_and_writes_no_link(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text(json.dumps({"kind": fscache.CACHE_KIND}))
    (state / fscache.CACHE_NAME).symlink_to(victim)
    ident = (1, 2, 3)
    found, why = fscache.lookup(state, "unix:///x.sock", ident, Path("/"))
    assert found is None and "link" in why
    assert fscache.remember(state, "unix:///x.sock", ident, ["/var/lib/containerd"], []) == ""
    assert victim.read_text() == json.dumps({"kind": fscache.CACHE_KIND})
    assert not (state / fscache.CACHE_NAME).is_symlink()  # replaced, not written through
    os.chmod(state, 0o777)
    why = fscache.remember(state, "unix:///x.sock", ident, ["/var/lib/containerd"], [])
    assert "mode 0777" in why


def test_history_of_a_state_dir_others_can_write_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    os.chmod(state, 0o757)
    with pytest.raises(BadInput, match="mode 0757"):
        read_history(state, 5)


# ---- one changing run per node ----


def test_one_changing_run_per_node_whatever_the_state_dir(cri: FaultCri, tmp_path: Path) -> None:
    """A run acting with one state dir holds off a run with another (same host): exit 4."""
    hostroot = tmp_path / "host"
    hostroot.mkdir()
    cri.gate, cri.gate_after = threading.Event(), 1
    first = kubegc(cri, tmp_path / "a", "--host-root", str(hostroot), "gc", "containers",
                   "--yes", "--concurrency", "1")  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubegc_cli", *first], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert cri.at_gate.wait(30), "removals never started"
        second = kubegc(cri, tmp_path / "b", "--host-root", str(hostroot), "gc", "containers",
                        "--yes")  # fmt: skip
        code, _, err, _ = run_process(second)
        assert code == 4, err
        assert str(hostroot / "run" / "kubegc" / "lock") in err and f"pid {proc.pid}" in err
        lock_dir = hostroot / "run" / "kubegc"
        assert stat.S_IMODE(os.lstat(lock_dir).st_mode) == 0o700
    finally:
        cri.gate.set()
        proc.communicate(timeout=30)
    assert proc.returncode == 0


def test_a_planted_link_for_the_node_lock_is_refused(host: Path, tmp_path: Path) -> None:
    (host / "run" / "kubegc").mkdir(parents=True, mode=0o700)
    victim = tmp_path / "victim"
    (host / "run" / "kubegc" / "lock").symlink_to(victim)
    code, _, err, cri = gc_yes(host, tmp_path / "state")
    assert code == 2 and "link" in err and str(host / "run" / "kubegc" / "lock") in err, err
    assert cri.removed == [] and not victim.exists()


# ---- audit rows as the actions complete ----


@pytest.fixture
def cri(tmp_path: Path) -> Iterator[FaultCri]:
    import tempfile

    with (
        tempfile.TemporaryDirectory(prefix="kgc-") as d,
        FaultCri(Path(d) / "cri.sock", node_inventory()) as server,
    ):
        yield server


def test_a_run_killed_mid_stage_leaves_the_rows_of_its_removals(
    cri: FaultCri, tmp_path: Path
) -> None:
    """SIGKILL while the fourth removal is in the runtime: the three before it are in the
    audit log (each row is written as its action completes), and the fourth is there as
    `in-flight` (its row is written before the removal starts)."""
    cri.gate, cri.gate_after = threading.Event(), 3
    argv = kubegc(cri, tmp_path / "state", "gc", "containers", "--yes", "--concurrency", "1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubegc_cli", *argv], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert cri.at_gate.wait(30), "removals never started"
        time.sleep(0.3)  # the third row is written right after its removal answered
        proc.kill()
        proc.communicate(timeout=30)
        removed = list(cri.removed)  # (the held fourth call is let go below)
    finally:
        cri.gate.set()
    assert len(removed) == 3
    [run] = history(tmp_path / "state")
    assert run["command"] == "gc containers"
    assert run["by_result"] == {"removed": 3, "in-flight": 1}
    done = [a for a in run["actions"] if a["result"] == "removed"]
    [killed] = [a for a in run["actions"] if a["result"] == "in-flight"]
    assert {a["id"] for a in done} == set(removed)
    assert killed["id"] not in removed and killed["kind"] == "container"
    assert "no outcome recorded" in killed["error"]
