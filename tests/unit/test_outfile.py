"""Files kubegc writes where a user named them (`snapshot -f`, `--plan-out`): replaced whole,
never written through or over a link at the name (root writing to a predictable name in a
shared directory must not truncate or fill another file; nor replace `/dev/stdout`)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from kubegc_cli.node.outfile import replace_file
from tests.unit.factories import ctr
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """(a victim file only root should change, a link to it at the name kubegc is given)."""
    victim = tmp_path / "victim"
    victim.write_text("root:precious\n")
    os.chmod(victim, 0o600)
    link = tmp_path / "shared" / "out.json"
    link.parent.mkdir()
    link.symlink_to(victim)
    return victim, link


def test_replace_file_refuses_a_link_and_leaves_it_and_its_target(
    planted: tuple[Path, Path],
) -> None:
    victim, link = planted
    with pytest.raises(OSError, match="symbolic link"):
        replace_file(link, "new\n", 0o644)
    assert victim.read_text() == "root:precious\n" and stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert link.is_symlink() and os.readlink(link) == str(victim)
    assert sorted(p.name for p in link.parent.iterdir()) == ["out.json"]  # no temp file left


@pytest.mark.parametrize("kind", ["stdout-link", "fifo", "directory", "device"])
def test_replace_file_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str) -> None:
    """`--plan-out /dev/stdout` (a link to the terminal or pipe), a FIFO, a directory, a
    device: refused, the name left as it was and nothing made beside it."""
    path = tmp_path / "out"
    if kind == "stdout-link":
        path.symlink_to("/proc/self/fd/1")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    else:
        path = Path("/dev/null")
    before = os.lstat(path)
    with pytest.raises(OSError):
        replace_file(path, "x")
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    if kind != "device":
        assert os.listdir(tmp_path) == ["out"]


def test_replace_file_leaves_no_temp_file_when_it_fails(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        replace_file(tmp_path / "missing-dir" / "out.json", "x")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("command", ["snapshot", "plan-out"])
def test_output_files_named_by_the_user_never_follow_a_planted_link(
    planted: tuple[Path, Path], tmp_path: Path, command: str
) -> None:
    victim, link = planted
    cs = [ctr(f"dead000{i}", attempt=i, age_s=900 - 100 * i) for i in range(3)]
    cri = MemoryCri({c.id: c for c in cs}, {})
    state = ["--state-dir", str(tmp_path / "state"), "--pod-source", "none"]
    argv = (
        [*state, "snapshot", "-f", str(link)]
        if command == "snapshot"
        else [*state, "gc", "containers", "--plan-out", str(link)]
    )
    with use_runtime(cri):
        code, _, err = run_cli(argv)
    assert code == 2, err
    assert str(link) in err and "symbolic link" in err and len(err.strip().splitlines()) == 1
    assert victim.read_text() == "root:precious\n"
    assert link.is_symlink() and os.readlink(link) == str(victim)
