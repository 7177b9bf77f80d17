"""The help a person reads first: `kubegc --help` names every command kubegc has (each once,
with its summary whole at any width), and every group's help lists its commands before its
options, as kubectl's and crictl's do. Run as the real console script at 80 and 200 columns."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kubegc_cli.cli import docgen
from kubegc_cli.cli.main import cli


def help_of(*words: str, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns)}
    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", *words, "--help"],
        capture_output=True, text=True, timeout=60, env=env, check=True,
    )  # fmt: skip
    return res.stdout


def leaves() -> list[str]:
    """Every command that runs (not a group), as its path after `kubegc`."""
    return [
        " ".join(path[1:])
        for path, cmd in docgen.walk(cli)
        if len(path) > 1 and not hasattr(cmd, "commands")
    ]


@pytest.mark.parametrize("columns", [80, 200])
def test_the_top_level_help_names_every_command_once(columns: int) -> None:
    text = help_of(columns=columns)
    named = re.findall(r"^  ([a-z]+(?: [a-z]+)?)  ", text, flags=re.MULTILINE)
    commands = [n.strip() for n in named if not n.startswith("-")]
    assert sorted(commands) == sorted(leaves())
    listing = text.split("Disk space commands:")[1].split("Options:")[0]
    assert "..." not in listing  # no summary cut short


@pytest.mark.parametrize("group", [(), *[(name,) for name in ("gc", "evict", "memory",
                                                              "residue", "config")]])  # fmt: skip
def test_a_groups_help_lists_its_commands_before_its_options(group: tuple[str, ...]) -> None:
    text = help_of(*group)
    headings = [line for line in text.splitlines() if re.match(r"^[A-Z][A-Za-z ]*:$", line)]
    first_options = headings.index("Options:")
    assert first_options > 0, headings
    assert all(h.endswith("ommands:") for h in headings[:first_options]), headings
    assert headings[first_options:] == ["Options:", "Global options:"]


def test_a_groups_command_list_shows_each_first_sentence_whole() -> None:
    text = help_of("gc", columns=80)
    listing = text.split("Commands:")[1].split("Options:")[0]
    flat = " ".join(listing.split())
    assert (
        "images Remove unused images as the kubelet's image GC would, remembering them "
        "across runs." in flat
    )
    assert "..." not in listing


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed here")
@pytest.mark.parametrize(("width", "height"), [(80, 24), (160, 45)])
def test_in_a_real_terminal_the_help_fits_and_starts_with_the_commands(
    tmp_path: Path, width: int, height: int
) -> None:
    """`kubegc --help` in tmux, read back with `capture-pane`: no line wider than the
    terminal, and the first screen after the description is the list of commands."""
    socket = str(tmp_path / "tmux.sock")
    command = f"{shlex.join([sys.executable, '-m', 'kubegc_cli', '--help'])}; sleep 60"
    subprocess.run(["tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d",
                    "-x", str(width), "-y", str(height), "sh", "-c", command],
                   env={**os.environ, "TERM": "xterm-256color"}, check=True,
                   timeout=30)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        screen = ""
        while time.monotonic() < deadline and "Global options:" not in screen:
            time.sleep(0.2)
            screen = subprocess.run(
                ["tmux", "-S", socket, "capture-pane", "-p", "-S", "-", "-E", "-"],
                capture_output=True, text=True, check=True, timeout=30,
            ).stdout  # fmt: skip
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, timeout=30)
    lines = screen.splitlines()
    assert "Global options:" in screen, screen
    assert max(len(line) for line in lines) <= width
    assert screen.index("Disk space commands:") < screen.index("Options:")
    for path in leaves():
        assert re.search(rf"^  {re.escape(path)}  ", screen, flags=re.MULTILINE), path
