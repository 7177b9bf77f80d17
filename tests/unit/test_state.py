"""kubegc's state store (SQLite) and run lock, on a temporary state dir."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.errors import BadInput, Busy
from kubegc_cli.core.model import Image, ImageRecord
from kubegc_cli.core.plan import ImageAction, Result
from kubegc_cli.node.state import (
    StateUnavailable,
    forget_image_records,
    load_image_records,
    node_lock,
    read_history,
    record_audit,
    save_image_records,
)


def test_image_records_survive_runs_and_began_is_set_once(tmp_path: Path) -> None:
    records, began = load_image_records(tmp_path / "s", now=100)
    assert records == {} and began == 100
    save_image_records(tmp_path / "s", {"a": ImageRecord(100, 0), "b": ImageRecord(90, 95)})
    records, began = load_image_records(tmp_path / "s", now=500)
    assert records == {"a": ImageRecord(100, 0), "b": ImageRecord(90, 95)} and began == 100
    save_image_records(tmp_path / "s", {"b": ImageRecord(90, 400)})  # "a" is no longer listed
    assert load_image_records(tmp_path / "s", now=600)[0] == {"b": ImageRecord(90, 400)}
    assert oct(os.stat(tmp_path / "s").st_mode & 0o777) == "0o700"


def test_a_record_forgotten_meanwhile_is_not_brought_back(tmp_path: Path) -> None:
    """A dry run reads the records, a removing run then removes image "a" and forgets its
    record; the dry run's save, which still lists "a", must not bring the old record back (the
    image pulled again would skip MinAge)."""
    d = tmp_path / "s"
    save_image_records(d, {"a": ImageRecord(100, 0), "b": ImageRecord(90, 95)})
    read, _ = load_image_records(d, now=500)  # the dry run reads
    forget_image_records(d, ["a"])  # a removing run removed "a" meanwhile
    save_image_records(d, dict(read), loaded=read)  # the dry run saves what it saw
    assert load_image_records(d, now=600)[0] == {"b": ImageRecord(90, 95)}
    save_image_records(d, {"a": ImageRecord(600, 0), "b": ImageRecord(90, 95)}, loaded={})
    assert load_image_records(d, now=700)[0]["a"] == ImageRecord(600, 0)  # seen anew: kept


def test_corrupt_state_file_is_moved_aside(tmp_path: Path) -> None:
    d = tmp_path / "s"
    d.mkdir()
    (d / "state.db").write_bytes(b"this is not sqlite" * 100)
    warnings: list[str] = []
    records, began = load_image_records(d, now=7, warn=warnings.append)
    assert records == {} and began == 7
    assert len(warnings) == 1 and "moved to" in warnings[0]
    assert [p.name for p in d.iterdir() if p.name.startswith("state.db.corrupt-")]


def test_concurrent_writers_do_not_corrupt(tmp_path: Path) -> None:
    d = tmp_path / "s"
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(20):
                save_image_records(d, {f"img-{n}-{i}": ImageRecord(i, i)})
                record_audit(d, "test", i, [])
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    load_image_records(d, now=1)
    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    con = sqlite3.connect(d / "state.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert con.execute("SELECT count(*) FROM images").fetchone()[0] == 1
    con.close()


def test_lock_is_exclusive(tmp_path: Path) -> None:
    with node_lock(tmp_path / "s"), pytest.raises(Busy), node_lock(tmp_path / "s"):
        pass
    with node_lock(tmp_path / "s"):  # released again
        pass


def test_history_lists_runs_newest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from kubegc_cli.cli.main import main
    from kubegc_cli.core.model import Image
    from kubegc_cli.core.plan import ImageAction, Result

    d = tmp_path / "s"
    first = ImageAction(Image("sha256:aa", size=5), 1, 0, "space", "r", Result.REMOVED)
    first.bytes_freed = 5
    record_audit(d, "gc images", 1_000_000_000, [first])
    second = ImageAction(Image("sha256:bb", size=7), 1, 0, "space", "r", Result.FAILED)
    record_audit(d, "gc images", 2_000_000_000, [second])

    with pytest.raises(SystemExit) as exc:
        main(["--state-dir", str(d), "history", "-o", "json"])
    assert exc.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["by_result"] for r in doc["items"]] == [{"failed": 1}, {"removed": 1}]
    assert (
        doc["items"][1]["bytes_freed"] == 5 and doc["items"][1]["actions"][0]["id"] == "sha256:aa"
    )
    with pytest.raises(SystemExit):
        main(["--state-dir", str(d), "history", "--runs", "1"])
    out = capsys.readouterr().out
    assert out.count("gc images") == 1 and "failed 1" in out
    with pytest.raises(SystemExit):
        main(["--state-dir", str(tmp_path / "empty"), "history"])
    assert "no runs recorded" in capsys.readouterr().out


def _removed(iid: str, size: int = 5) -> ImageAction:
    a = ImageAction(Image(iid, size=size), 1, 0, "space", "r", Result.REMOVED)
    a.bytes_freed = size
    return a


def _populated(d: Path) -> Path:
    """A good state dir: records of 50 images and one audited run; returns its state.db."""
    load_image_records(d, now=1)
    save_image_records(d, {f"sha256:{i:064x}": ImageRecord(i, i) for i in range(50)})
    record_audit(d, "gc images", 2, [_removed(f"sha256:{i:064x}") for i in range(50)])
    return d / "state.db"


def _damage(db: Path, offset: int = 4096) -> None:
    """A valid header, damaged pages: 200 bytes of 0xff at `offset`."""
    with db.open("r+b") as f:
        f.seek(offset)
        f.write(b"\xff" * 200)


def _integrity(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()


OPERATIONS: dict[str, Callable[[Path, Callable[[str], None]], Any]] = {
    "load": lambda d, warn: load_image_records(d, 9, warn),
    "load-read-only": lambda d, warn: load_image_records(d, 9, warn, read_only=True),
    "save": lambda d, warn: save_image_records(d, {"a": ImageRecord(3, 4)}, warn, began=3),
    "audit": lambda d, warn: record_audit(d, "gc images", 5, [_removed("sha256:new")], warn),
    "history": lambda d, warn: read_history(d, 5, warn),
}
FRESH = {
    "load": ({}, 9),
    "load-read-only": ({}, 9),
    "save": None,
    "history": [],
}


@pytest.mark.parametrize("offset", [0, 4096, 8192, 16384])
@pytest.mark.parametrize("op", list(OPERATIONS))
def test_damage_anywhere_is_moved_aside_by_every_operation(
    tmp_path: Path, op: str, offset: int
) -> None:
    db = _populated(tmp_path / "s")
    _damage(db, offset)
    warnings: list[str] = []
    result = OPERATIONS[op](tmp_path / "s", warnings.append)
    if op in FRESH:
        assert result == FRESH[op]
    assert len(warnings) == 1 and "\n" not in warnings[0]
    assert f"state database {db} is damaged (" in warnings[0] and "moved to" in warnings[0]
    aside = list((tmp_path / "s").glob("state.db.corrupt-*[0-9]"))
    assert len(aside) == 1 and str(aside[0]) in warnings[0]
    if db.exists():  # the writers started a fresh one and did their work in it
        assert _integrity(db) == "ok"
        if op == "audit":
            assert [r["by_result"] for r in read_history(tmp_path / "s", 5)] == [{"removed": 1}]
        if op == "save":
            assert load_image_records(tmp_path / "s", 99) == ({"a": ImageRecord(3, 4)}, 3)


def test_damage_found_inside_an_operation_is_moved_aside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Damage the opening check misses, found by the operation's own query, is handled the
    same way (the check is turned off here to let the query meet it)."""
    import kubegc_cli.node.state as state

    db = _populated(tmp_path / "s")
    _damage(db)  # page 2: the `meta` table, read by load_image_records
    monkeypatch.setattr(state, "_quick_check", lambda con: None)
    warnings: list[str] = []
    assert load_image_records(tmp_path / "s", 9, warnings.append) == ({}, 9)
    assert len(warnings) == 1 and "database disk image is malformed" in warnings[0]
    assert _integrity(db) == "ok"


def test_damage_without_a_warn_goes_to_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _populated(tmp_path / "s")
    _damage(db)
    record_audit(tmp_path / "s", "gc containers", 5, [_removed("c")])
    err = capsys.readouterr().err
    assert err.startswith(f"kubegc: state database {db} is damaged") and err.count("\n") == 1
    assert [r["command"] for r in read_history(tmp_path / "s", 5)] == ["gc containers"]


def test_history_on_a_damaged_database_warns_and_is_empty(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubegc_cli.cli.main import main

    _damage(_populated(tmp_path / "s"))
    with pytest.raises(SystemExit) as exc:
        main(["--state-dir", str(tmp_path / "s"), "history"])
    out, err = capsys.readouterr()
    assert exc.value.code == 0 and "no runs recorded" in out
    assert err.count("\n") == 1 and "is damaged" in err and "Traceback" not in err


@contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """`path` read-only for the block: a read-only bind mount as root (file modes do not stop
    root), else file modes. Skips when neither is possible."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o500 if path.is_dir() else 0o400)
        try:
            yield
        finally:
            path.chmod(mode)
        return
    bind = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {bind.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True)


@pytest.mark.parametrize("target", ["dir", "file"])
def test_a_read_only_store_is_never_moved_aside(tmp_path: Path, target: str) -> None:
    d = tmp_path / "s"
    db = _populated(d)
    before = db.read_bytes()
    warnings: list[str] = []
    with _read_only(d if target == "dir" else db):
        with pytest.raises(StateUnavailable, match=f"cannot use state database {db}"):
            load_image_records(d, 9, warnings.append)
        with pytest.raises(StateUnavailable):
            save_image_records(d, {}, warnings.append)
        with pytest.raises(StateUnavailable):
            record_audit(d, "gc images", 5, [_removed("x")], warnings.append)
        records, began = load_image_records(d, 9, warnings.append, read_only=True)
        assert len(records) == 50 and began == 1
        [run] = read_history(d, 5, warnings.append)
        assert run["by_result"] == {"removed": 50}
        if target == "dir":
            with pytest.raises(StateUnavailable, match="cannot open lock file"), node_lock(d):
                pass
    assert warnings == []
    assert not list(d.glob("state.db.corrupt-*"))
    assert db.read_bytes() == before and _integrity(db) == "ok"


def test_state_paths_of_the_wrong_type_are_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubegc_cli.cli.main import main

    a_file = tmp_path / "file"
    a_file.write_text("x")
    (tmp_path / "d" / "state.db").mkdir(parents=True)
    for state_dir, message in (
        (a_file, f"--state-dir {a_file} is not a directory"),
        (tmp_path / "d", f"state database {tmp_path / 'd' / 'state.db'} is not a regular file"),
    ):
        for call in (
            lambda d: load_image_records(d, 1),
            lambda d: save_image_records(d, {}),
            lambda d: record_audit(d, "gc images", 1, []),
            lambda d: read_history(d, 1),
        ):
            with pytest.raises(BadInput) as exc:
                call(state_dir)
            assert str(exc.value) == message and not isinstance(exc.value, StateUnavailable)
        with pytest.raises(SystemExit) as code:
            main(["--state-dir", str(state_dir), "history"])
        assert code.value.code == 2
        assert capsys.readouterr().err == f"kubegc: error: {message}\n"


def test_audit_rows_store_paths_that_are_not_utf8(tmp_path: Path) -> None:
    """A pod log directory named with a non-UTF-8 byte (a lone surrogate once decoded, as
    `os.scandir` gives it) is audited with the byte written `\\xff`; text stays as it is."""
    import os as os_

    from kubegc_cli.core.plan import LogAction, Result
    from kubegc_cli.node.state import storable

    odd = os_.fsdecode(b"/var/log/pods/ns\xff_p_9a1b2c3d-0000-1111-2222-333344445555")
    a = LogAction("pod-log-dir", odd, odd, "u", "deleted-pod", "gone \udcfe", 3)
    a.result, a.error = Result.FAILED, "cannot remove " + odd + " \ud800"
    record_audit(tmp_path, "gc logs", 1, [a])
    with sqlite3.connect(tmp_path / "state.db") as con:
        row = con.execute("SELECT object_id, reason, error FROM audit").fetchone()
    path = "/var/log/pods/ns\\xff_p_9a1b2c3d-0000-1111-2222-333344445555"
    assert row == (path, "gone \\xfe", f"cannot remove {path} \\ud800")
    assert storable("ünïcode ok") == "ünïcode ok"


def test_history_rows_show_a_newline_in_a_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`history -v`: one row per action, whatever the removed path was named (its ID whole
    on the row's line)."""
    from kubegc_cli.cli.main import main
    from kubegc_cli.core.plan import LogAction, Result

    odd = "/var/log/pods/ns_p\nx_9a1b2c3d-0000-1111-2222-333344445555"
    a = LogAction("pod-log-dir", odd, odd, "u", "deleted-pod", "gone", 3)
    a.result = Result.REMOVED
    record_audit(tmp_path, "gc logs", 1_000_000_000, [a])
    with pytest.raises(SystemExit):
        main(["--state-dir", str(tmp_path), "history", "-v"])
    lines = capsys.readouterr().out.splitlines()
    (row,) = [ln for ln in lines if ln.startswith("pod-log-dir")]
    assert "/var/log/pods/ns_p\\x0ax_9a1b2c3d-0000-1111-2222-333344445555" in row
    assert not any(ln.startswith("x_9a1b2c3d") for ln in lines)


def test_history_reads_a_store_on_a_full_disk(tmp_path: Path) -> None:
    """The audit is read when the state dir's filesystem is full (when it is most wanted):
    SQLite cannot make the `-shm` file a WAL reader needs, so the file is read immutable."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    d = tmp_path / "small"
    d.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(d)], check=True)
    try:
        s = d / "state"
        _populated(s)
        fd = os.open(d / "fill", os.O_WRONLY | os.O_CREAT)
        try:  # fill the filesystem
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:
            pass
        finally:
            os.close(fd)
        assert not (s / "state.db-shm").exists()
        [run] = read_history(s, 5)
        assert run["by_result"] == {"removed": 50}
    finally:
        subprocess.run(["umount", str(d)], check=True)
