"""`kubegc version` when the runtime cannot be asked: kubegc's own version still on stdout,
then one error line and the runtime-unreachable exit code (3), in every output format. (The
answering runtime is tests/node/test_version.py's, against the real containerd.)"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from kubegc_cli import __version__
from kubegc_cli.core.errors import ExitCode


def kubegc(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubegc_cli", *args],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def refusing_socket(tmp_path: Path) -> str:
    """A Unix socket file nothing listens on (connect is refused), as a stopped runtime
    leaves it."""
    path = tmp_path / "runtime.sock"
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.close()
    return f"unix://{path}"


@pytest.mark.parametrize("where", ["missing", "refusing"])
def test_an_unreachable_runtime_prints_the_client_then_exits_3(tmp_path: Path, where: str) -> None:
    endpoint = f"unix://{tmp_path}/none.sock" if where == "missing" else refusing_socket(tmp_path)
    res = kubegc("-r", endpoint, "--timeout", "2s", "version")
    assert res.returncode == ExitCode.UNAVAILABLE == 3
    assert res.stdout == f"Client Version:  {__version__}\n"
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kubegc: error: "), res.stderr
    assert str(tmp_path) in lines[0]  # it names the endpoint it tried
    assert "Traceback" not in res.stderr


def test_an_unreachable_runtime_as_json_has_a_null_runtime_and_the_error(tmp_path: Path) -> None:
    res = kubegc("-r", f"unix://{tmp_path}/none.sock", "version", "-o", "json")
    assert res.returncode == 3
    doc = json.loads(res.stdout)
    assert doc["client"] == {"version": __version__}
    assert doc["runtime"] is None
    assert str(tmp_path) in doc["error"]
    assert doc["error"] in res.stderr
