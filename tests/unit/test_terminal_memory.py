"""`kubegc memory available` in a real terminal (tmux) of 80x24 (with `TERM=dumb` too) and
160x45, over a fixture host tree: every figure and pod UID whole on the screen."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubegc_cli.render.pressure import bytes_cell
from tests.tmuxpane import run_in_pane
from tests.unit.test_memory_cli import NO_RUNTIME, pods_and_node, v2_systemd_node


@pytest.mark.parametrize(
    ("width", "height", "term"),
    [(80, 24, "dumb"), (80, 24, "xterm-256color"), (160, 45, "xterm-256color")],
)
def test_memory_available_shows_every_figure_and_uid_whole(
    tmp_path: Path, width: int, height: int, term: str
) -> None:
    root = tmp_path / "host"
    v2_systemd_node(root)
    pods = pods_and_node(tmp_path, "5Gi")
    argv = [sys.executable, "-m", "kubegc_cli", "--host-root", str(root), *NO_RUNTIME,
            "--pods-file", str(pods), "--node-name", "node-1", "memory", "available"]  # fmt: skip
    doc = json.loads(subprocess.run([*argv, "-o", "json"], capture_output=True, text=True,
                                    check=True, timeout=60).stdout)  # fmt: skip
    code, screen = run_in_pane(argv, width, height, term=term)
    assert code == 0, screen
    assert "…" not in screen and all(len(r) <= width for r in screen.splitlines())
    words = set(screen.split())
    for part in ("memory.available", "allocatableMemory.available"):
        for key, value in doc[part].items():
            if isinstance(value, int) and key not in ("cgroup_limit",):
                assert bytes_cell(value) in words, (part, key, value, screen)
    for p in doc["pods"]:
        assert p["uid"] in words, (p["uid"], screen)
        for key in ("working_set", "usage", "inactive_file", "active_file"):
            assert bytes_cell(p[key]) in words, (p, key, screen)
