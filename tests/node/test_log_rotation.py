"""Container log rotation end to end against a real containerd: `residue scan` finds a
running container's live log over containerLogMaxSize, rotated files past
containerLogMaxFiles, a compression's `.tmp` leftover and an earlier instance's log;
`residue clean` removes those and rotates the live log as the kubelet does (rename, then CRI
`ReopenContainerLog`), after which the container goes on logging into a fresh `<n>.log`.

Every `residue clean --yes` names the finding types it may act on (`--kind`): the legacy link
types would look at this machine's own `/var/log/containers`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.node.cri.client import CriClient
from kubegc_cli.node.cri.endpoint import Endpoint
from kubegc_cli.node.cri.v1 import api_pb2
from kubegc_cli.node.host.logrotation import read_container_log_dirs, rotate_live_log
from kubegc_cli.node.host.logs import LogRoots
from kubegc_cli.node.host.mounts import MountTable
from tests.node.localnode import LocalNode
from tests.node.test_gc_containers import write_pods_file

KINDS = (
    "log-over-size",
    "rotated-log-past-count",
    "log-rotation-leftover",
    "earlier-instance-log",
    "uncompressed-rotated-log",
    "logs-over-budget",
)
# a line a second... no: twenty a second, each numbered, so the order of lines can be told
WRITER = ["/bin/sh", "-c", "i=0; while true; do echo line-$i; i=$((i+1)); sleep 0.05; done"]


def kubelet_config(node: LocalNode, tmp_path: Path) -> Path:
    path = tmp_path / "kubelet-config.yaml"
    path.write_text(
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
        f"podLogsDir: {json.dumps(str(node.pod_logs_dir))}\n"
        'containerLogMaxSize: "1Ki"\ncontainerLogMaxFiles: 3\n'
    )
    return path


def residue(node: LocalNode, tmp_path: Path, *args: str) -> dict[str, Any]:
    (tmp_path / "kubelet").mkdir(exist_ok=True)
    kinds = [x for k in KINDS for x in ("--kind", k)]
    res = subprocess.run(
        [
            sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
            "--kubelet-config", str(kubelet_config(node, tmp_path)),
            "--state-dir", str(tmp_path / "state"), "--lock-timeout", "2m",
            "residue", *args, "--root-dir", str(tmp_path / "kubelet"), *kinds, "-o", "json",
        ],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    return doc


def by_name(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f"{f['type']} {f['id'].rsplit('/', 1)[1]}": f for f in doc["actions"] + doc["kept"]}


def old(path: Path, size: int) -> Path:
    path.write_bytes(b"x" * size)
    t = time.time() - 3600
    os.utime(path, (t, t))
    return path


def numbers(path: Path) -> list[int]:
    """The line numbers the writer logged into `path` (CRI log lines end in `line-<n>`)."""
    return [int(m) for m in re.findall(r" line-(\d+)$", path.read_text(), re.M)]


def wait_for(what: str, check: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_clean_rotates_a_live_log_and_removes_what_rotation_leaves(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    pod = node.run_pod("chatty", namespace=ns)
    cid = node.add_container(pod, "app", state="running", command=WRITER)
    logs = pod.log_directory / "app"
    live = logs / "0.log"
    wait_for("the live log to pass 1Ki", lambda: live.exists() and live.stat().st_size > 2048)
    for day in (1, 2, 3):
        old(logs / f"0.log.2024010{day}-000000.gz", 100)
    old(logs / "0.log.20240104-000000.tmp", 300)  # a compression that never finished
    old(logs / "5.log", 500)  # instance 5: the runtime has no such container
    pods = write_pods_file(tmp_path / "pods.json", pod)

    scan = by_name(residue(node, tmp_path, "--pods-file", str(pods), "scan"))
    budget = scan.pop("logs-over-budget 0.log", None)  # (3 KiB: as the writer is quick)
    assert budget is None or not budget["safe_to_clean"]
    assert {k: f["safe_to_clean"] for k, f in scan.items()} == {
        "log-over-size 0.log": True,
        # MaxFiles 3: one rotated file may stay before a rotation (removeExcessLogs)
        "rotated-log-past-count 0.log.20240101-000000.gz": True,
        "rotated-log-past-count 0.log.20240102-000000.gz": True,
        "log-rotation-leftover 0.log.20240104-000000.tmp": True,
        "earlier-instance-log 5.log": True,
    }, scan
    assert scan["log-over-size 0.log"]["details"]["container_id"] == cid

    before = numbers(live)
    doc = residue(node, tmp_path, "--pods-file", str(pods), "clean", "--yes")
    results = {k: (f["result"], f["error"]) for k, f in by_name(doc).items()}
    results.pop("logs-over-budget 0.log", None)
    assert set(results.values()) == {("removed", None)}, results
    left = sorted(os.listdir(logs))
    rotated = [n for n in left if re.fullmatch(r"0\.log\.\d{8}-\d{6}", n)]
    assert len(rotated) == 1, left
    assert sorted(set(left) - set(rotated)) == ["0.log", "0.log.20240103-000000.gz"]

    # the old content is in the rotated file, whole; the container goes on in a fresh 0.log
    kept = numbers(logs / rotated[0])
    assert kept[: len(before)] == before
    wait_for("new lines in the reopened 0.log", lambda: len(numbers(live)) >= 5)
    fresh = numbers(live)
    assert fresh[0] > kept[-1] >= before[-1]
    assert node.container_status(cid).state == 1  # CONTAINER_RUNNING

    again = by_name(residue(node, tmp_path, "--pods-file", str(pods), "scan"))
    if "log-over-size 0.log" in again:  # the writer is quick: the fresh log may be over 1Ki
        fresh_size = again["log-over-size 0.log"]["details"]["size"]
        assert fresh_size < (logs / rotated[0]).stat().st_size


def test_a_reopen_the_runtime_refuses_leaves_the_log_where_it_was(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """ReopenContainerLog fails for a container that is no longer running: the live log
    found over size is then not rotated (the re-check sees it stopped) and stays whole."""
    pod = node.run_pod("stops", namespace=ns)
    cid = node.add_container(pod, "app", state="running", command=WRITER)
    live = pod.log_directory / "app" / "0.log"
    wait_for("the live log to pass 1Ki", lambda: live.exists() and live.stat().st_size > 2048)
    pods = write_pods_file(tmp_path / "pods.json", pod)
    scan = by_name(residue(node, tmp_path, "--pods-file", str(pods), "scan"))
    assert scan["log-over-size 0.log"]["safe_to_clean"]

    node.runtime.StopContainer(api_pb2.StopContainerRequest(container_id=cid, timeout=0))
    size = live.stat().st_size
    doc = residue(node, tmp_path, "--pods-file", str(pods), "clean", "--yes")
    assert "log-over-size 0.log" not in by_name(doc)  # an exited container is not rotated
    assert sorted(os.listdir(live.parent)) == ["0.log"] and live.stat().st_size == size


def test_a_reopen_that_fails_renames_the_log_back(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """The real runtime refuses ReopenContainerLog for a container that is not running: the
    renamed log is renamed back (kubelet `rotateLatestLog`), whole, and the error is said."""

    pod = node.run_pod("refused", namespace=ns)
    cid = node.add_container(pod, "app", state="running", command=WRITER)
    live = pod.log_directory / "app" / "0.log"
    wait_for("the live log to pass 1Ki", lambda: live.exists() and live.stat().st_size > 2048)
    node.runtime.StopContainer(api_pb2.StopContainerRequest(container_id=cid, timeout=0))
    roots, mounts = LogRoots(Path("/"), str(node.pod_logs_dir)), MountTable.read()
    listing = read_container_log_dirs(roots, mounts, lambda uid: uid == pod.uid)
    (d,) = listing.dirs
    (f,) = [f for f in d.files if f.name == "0.log"]
    details = {"name": "0.log", "container_log_dir": d.host, "container_id": cid,
               "max_size": 1024, "dev": f.dev, "ino": f.ino}  # fmt: skip
    content = live.read_bytes()
    with CriClient(Endpoint(str(node.socket), "test")) as client:

        def reopen(container_id: str) -> None:
            client.reopen_container_log(container_id)

        with pytest.raises(RuntimeUnavailable, match="ReopenContainerLog"):
            rotate_live_log(roots, mounts, details, reopen)
    assert sorted(os.listdir(live.parent)) == ["0.log"] and live.read_bytes() == content
