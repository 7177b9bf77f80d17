"""The throwaway node's command line never fills or removes a directory that is not its own."""

from __future__ import annotations

import os
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


@pytest.mark.parametrize("how", ["group-writable", "another-user", "a-link"])
def test_up_refuses_a_directory_another_user_could_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    """The demo node's directory holds its pods file and kubegc's state dir: one another user
    made (or can write, or a link they planted at its name) is refused, nothing is written."""
    target = tmp_path / "node"
    target.mkdir(mode=0o700)
    if how == "group-writable":
        os.chmod(target, 0o770)
    elif how == "another-user":
        if os.geteuid() != 0:
            pytest.skip("needs root to give a directory to another user")
        os.chown(target, 65534, 65534)
    else:
        target = tmp_path / "planted"
        target.symlink_to(tmp_path / "node")
    assert main(["up", str(target), "--pods-file", str(target / "pods.json")]) == 1
    assert os.listdir(tmp_path / "node") == []
    err = capsys.readouterr().err
    assert "symbolic link" in err if how == "a-link" else "another user can change it" in err


def test_up_refuses_a_directory_below_one_another_user_can_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The node directory's parents must not be another user's to change either (they could
    swap the directory for a link once it is checked)."""
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    assert main(["up", str(shared / "node")]) == 1
    assert os.listdir(shared) == []
    assert "which another user can change" in capsys.readouterr().err


def test_up_makes_missing_parents_private_whatever_the_umask(tmp_path: Path) -> None:
    """Missing parents are made 0755 even under umask 000 (none is left writable by others)."""
    from kubegc_cli.node.state import safe_dir

    old = os.umask(0)
    try:
        made = safe_dir(tmp_path / "a" / "b" / "node", "the node directory", create=True)
    finally:
        os.umask(old)
    assert made is not None and oct(os.stat(made).st_mode & 0o777) == oct(0o700)
    for d in (tmp_path / "a", tmp_path / "a" / "b"):
        assert oct(os.stat(d).st_mode & 0o777) == oct(0o755)
