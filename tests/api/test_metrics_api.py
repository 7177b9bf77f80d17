"""`--metrics-file` after a run that changed the cluster: `evict prune --yes` deletes the
Evicted pods on the real API server, then cannot write the metrics file, says so in one
line and exits 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from tests.api.test_evict_prune import exists, make_pod
from tests.controlplane import ControlPlane


def unwritable(directory: Path) -> list[str]:
    """A command prefix under which `directory` cannot be written by kubegc: for root (who
    writes anywhere) a private mount namespace with the directory bind-mounted read-only; for
    anyone else the directory's mode. Skips when neither can be arranged."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        return []
    probe = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c",
         f'mount --bind -o ro "{directory}" "{directory}" && ! touch "{directory}/x"'],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if probe.returncode != 0:
        pytest.skip(f"cannot make a directory read-only for root here: {probe.stderr.strip()}")
    script = f'mount --bind -o ro "{directory}" "{directory}" && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "kubegc-test"]


def test_case_3_unwritable_metrics_directory_work_done_one_warning_exit_0(
    control_plane: ControlPlane, admin: Any, node_name: str, tmp_path: Path
) -> None:
    from kubernetes import client

    core = client.CoreV1Api(admin)
    ns = f"t-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": ns}})
    make_pod(core, ns, "web-1", node_name)
    make_pod(core, ns, "web-2", node_name)
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    prefix = unwritable(textfile)
    res = subprocess.run(
        [*prefix, sys.executable, "-m", "kubegc_cli",
         "--kubeconfig", str(control_plane.kubeconfig("admin")),
         "--node-name", node_name, "--state-dir", str(tmp_path / "state"),
         "--metrics-file", str(textfile / "kubegc.prom"),
         "evict", "prune", "--yes", "-o", "json"],
        capture_output=True, text=True, timeout=120,
        env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert exists(core, ns, "web-1") is None and exists(core, ns, "web-2") is None  # done
    assert json.loads(res.stdout)["summary"]["by_result"]["removed"] == 2
    assert res.returncode == 0, res.stderr  # the work was done: the metrics file is a warning
    assert res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith(f"kubegc: cannot write metrics file {textfile}/kubegc.prom")
    assert "Read-only file system" in res.stderr or "Permission denied" in res.stderr
    assert list(textfile.iterdir()) == []
