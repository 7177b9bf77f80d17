"""`kubegc memory available --watch`: each frame says when it was sampled and every how long,
and a note is printed once — into a pipe, and in a real terminal (tmux at 80x24 and 160x45,
read back with `capture-pane`), where the view is redrawn in place below the notes. The host
is a fixture tree whose page cache makes the kubelet's memory.available lag the kernel's
(the kubernetes#43916 note); its figures change while the watch runs."""

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

from kubegc_cli.render.live import note_gist
from tests.unit.hostfixtures import (
    MOUNTINFO_V1,
    V1_ROOT,
    write_meminfo,
    write_mountinfo,
    write_v1_cgroup,
)

REPO = Path(__file__).resolve().parents[2]
HEADER = re.compile(r"^sample at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, every 0\.3s")
NOTE = "kubernetes#43916"


def page_cache_host(root: Path, active_file: int = 3_000_000_000) -> None:
    """Case 1 of the page-cache note: active_file `active_file` drags memory.available."""
    write_mountinfo(root, MOUNTINFO_V1)
    write_meminfo(root, 16_384_000, mem_available_kb=12_000_000)
    write_v1_cgroup(root, V1_ROOT, usage=9_000_000_000, inactive_file=1_000_000_000,
                    active_file=active_file)  # fmt: skip


def argv(root: Path) -> list[str]:
    return [sys.executable, "-m", "kubegc_cli", "--host-root", str(root),
            "-r", "unix:///nonexistent/kubegc-test.sock", "--pod-source", "none",
            "memory", "available", "--watch", "0.3s"]  # fmt: skip


def test_a_notes_gist_leaves_its_figures_out() -> None:
    a = "active page cache (2.8Gi) counts as used: memory.available is 8.2Gi while 11.4Gi"
    b = "active page cache (3.1Gi) counts as used: memory.available is 7.9Gi while 11.4Gi"
    assert note_gist(a) == note_gist(b)
    assert note_gist(a) != note_gist("no kubepods cgroup on this host")
    assert note_gist("exceeds allocatable memory by 512Mi") == note_gist(
        "exceeds allocatable memory by 1.5Gi"
    )


def test_into_a_pipe_each_frame_has_its_time_and_interval_and_each_note_comes_once(
    tmp_path: Path,
) -> None:
    root = tmp_path / "host"
    page_cache_host(root)
    proc = subprocess.Popen(argv(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        time.sleep(1.0)
        page_cache_host(root, active_file=3_400_000_000)  # the note's figures change
        time.sleep(1.2)
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=30)
    frames = out.split("sample at ")[1:]
    assert len(frames) >= 4, out
    headers = [line for line in out.splitlines() if line.startswith("sample at ")]
    assert all(HEADER.match(h) and h.endswith("0.3s") for h in headers), headers
    assert out.count(NOTE) == 1 and NOTE in frames[0]
    assert out.count("no kubepods cgroup") == 1
    assert out.count("3.2Gi") >= 1  # the later figures are shown in the view (active_file)
    assert proc.returncode == 143 and err == "kubegc: error: terminated\n"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], capture_output=True, text=True, check=True,
                          timeout=30).stdout  # fmt: skip


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed here")
@pytest.mark.parametrize(("width", "height"), [(80, 24), (160, 45)])
def test_in_a_terminal_the_header_is_on_screen_and_the_note_printed_once(
    tmp_path: Path, width: int, height: int
) -> None:
    root = tmp_path / "host"
    page_cache_host(root)
    socket = str(tmp_path / "tmux.sock")
    done = tmp_path / "exit-code"
    command = (
        f"trap true INT; {shlex.join(argv(root))}; echo $? > {shlex.quote(str(done))}; sleep 60"
    )
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(width)}
    subprocess.run(["tmux", "-S", socket, "-f", "/dev/null", "new-session", "-d",
                    "-x", str(width), "-y", str(height), "sh", "-c", command],
                   env=env, check=True, timeout=30)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        screen = ""
        while time.monotonic() < deadline:
            screen = tmux("-S", socket, "capture-pane", "-p", "-J", "-S", "-", "-E", "-")
            if sum(bool(HEADER.match(line)) for line in screen.splitlines()) and NOTE in screen:
                break
            time.sleep(0.2)
        first = screen
        page_cache_host(root, active_file=3_400_000_000)
        time.sleep(1.5)  # several samples with new figures
        screen = tmux("-S", socket, "capture-pane", "-p", "-J", "-S", "-", "-E", "-")
        tmux("-S", socket, "send-keys", "C-c")
        deadline = time.monotonic() + 30
        while not done.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        subprocess.run(["tmux", "-S", socket, "kill-server"], capture_output=True, timeout=30)
    assert any(HEADER.match(line) for line in first.splitlines()), first
    headers = [line for line in screen.splitlines() if HEADER.match(line)]
    assert len(headers) == 1 and "(Ctrl-C to stop)" in headers[0], screen  # redrawn in place
    assert " ".join(screen.split()).count(NOTE) == 1, screen  # printed once, above the view
    assert "3.2Gi" in screen  # the view shows the later sample
    assert max(len(line) for line in screen.splitlines()) <= width
    assert done.read_text().strip() == "0"  # Ctrl-C is how a watch ends
