"""The throwaway node's command line never fills or removes a directory that is not its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.node.localnode import main


def test_down_and_up_leave_a_foreign_directory_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "stuff").write_text("x")
    assert main(["down", str(mine)]) == 1
    assert main(["up", str(mine)]) == 1
    assert (mine / "stuff").read_text() == "x" and sorted(mine.iterdir()) == [mine / "stuff"]
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main(["up", str(a_file)]) == 1
    err = capsys.readouterr().err
    assert "not removing" in err and "not a node's" in err and "not a directory" in err
    assert main(["down", str(tmp_path / "absent")]) == 0  # nothing there: nothing to do
