"""`kubegc version` against the real containerd: the runtime's lines are the runtime's own
answer to CRI `Version`, in `crictl version`'s form (compared with crictl itself when it is
installed), and the same values in `-o json` and `-o yaml`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kubegc_cli import __version__
from kubegc_cli.node.cri.v1 import api_pb2
from tests.node.localnode import LocalNode
from tests.node.test_gc_containers import kubegc


def runtime_answer(node: LocalNode) -> api_pb2.VersionResponse:
    """The runtime's own `Version` reply, asked directly over CRI."""
    reply: api_pb2.VersionResponse = node.runtime.Version(
        api_pb2.VersionRequest(version="v1"), timeout=10
    )
    return reply


def crictl() -> str | None:
    """crictl on PATH, else the one built beside containerd 2.x (KUBEGC_CONTAINERD2_BIN)."""
    found = shutil.which("crictl")
    if found:
        return found
    built = Path(os.environ.get("KUBEGC_CONTAINERD2_BIN", "/nonexistent")) / "crictl"
    return str(built) if built.is_file() else None


def test_version_prints_the_client_then_the_runtime_as_crictl_names_it(
    node: LocalNode, tmp_path: Path
) -> None:
    res = kubegc(node, tmp_path, "version")
    assert res.returncode == 0, res.stderr
    want = runtime_answer(node)
    assert want.runtime_name == "containerd"
    assert res.stdout.splitlines() == [
        f"Client Version:  {__version__}",
        f"Runtime Endpoint:  {node.endpoint}",
        f"Version:  {want.version}",
        f"RuntimeName:  {want.runtime_name}",
        f"RuntimeVersion:  {want.runtime_version}",
        f"RuntimeApiVersion:  {want.runtime_api_version}",
    ]
    assert res.stderr == ""


def test_version_lines_are_crictls_own(node: LocalNode, tmp_path: Path) -> None:
    binary = crictl()
    if binary is None:
        pytest.skip("crictl is not installed here (PATH, KUBEGC_CONTAINERD2_BIN)")
    theirs = subprocess.run(
        [binary, "--runtime-endpoint", node.endpoint, "version"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    ours = kubegc(node, tmp_path, "version")
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout.splitlines()[2:] == theirs.stdout.splitlines()


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_version_as_a_document(node: LocalNode, tmp_path: Path, fmt: str) -> None:
    res = kubegc(node, tmp_path, "version", "-o", fmt)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout) if fmt == "json" else yaml.safe_load(res.stdout)
    want = runtime_answer(node)
    assert doc == {
        "kind": "Version",
        "apiVersion": "kubegc.io/v1alpha1",
        "client": {"version": __version__},
        "runtime": {
            "endpoint": node.endpoint,
            "version": want.version,
            "runtime_name": want.runtime_name,
            "runtime_version": want.runtime_version,
            "runtime_api_version": want.runtime_api_version,
        },
        "error": "",
    }
