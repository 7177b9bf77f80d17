"""kubegc's state store (SQLite) and run lock, on a temporary state dir."""

from __future__ import annotations

import os
import sqlite3
import threading
from pathlib import Path

import pytest

from kubegc_cli.errors import Busy
from kubegc_cli.policy.images import ImageRecord
from kubegc_cli.state import load_image_records, node_lock, record_audit, save_image_records


def test_image_records_survive_runs_and_began_is_set_once(tmp_path: Path) -> None:
    records, began = load_image_records(tmp_path / "s", now=100)
    assert records == {} and began == 100
    save_image_records(tmp_path / "s", {"a": ImageRecord(100, 0), "b": ImageRecord(90, 95)})
    records, began = load_image_records(tmp_path / "s", now=500)
    assert records == {"a": ImageRecord(100, 0), "b": ImageRecord(90, 95)} and began == 100
    save_image_records(tmp_path / "s", {"b": ImageRecord(90, 400)})  # "a" is no longer listed
    assert load_image_records(tmp_path / "s", now=600)[0] == {"b": ImageRecord(90, 400)}
    assert oct(os.stat(tmp_path / "s").st_mode & 0o777) == "0o700"


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
    from kubegc_cli.model import Image
    from kubegc_cli.plan import ImageAction, Result

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
