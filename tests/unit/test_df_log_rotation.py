"""`kubegc df`'s `log-rotation` line: what container log rotation left behind, moved out of
`logs` (the lines still add up to used), reclaimable as `residue clean` removes it."""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from kubegc_cli.commands.df import DfOptions, disk_usage
from kubegc_cli.core.model import ANNOTATION_RESTART_COUNT, FilesystemUsage
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.diskusage import RuntimeView
from tests.unit.test_df import (
    KiB,
    QuietUi,
    allocated,
    assert_adds_up,
    fs_with,
    lines,
    pods_file,
    running_in,
    sandbox,
    write,
)

POD = "pods/ns_a_uid-a/app"


def old(path: Path, size: int) -> Path:
    write(path, size)
    t = time.time() - 3600
    os.utime(path, (t, t))
    return path


def test_rotation_leftovers_are_a_line_of_their_own(tmp_path: Path) -> None:
    host = tmp_path / "host"
    kubelet, logs = host / "var/lib/kubelet", host / "var/log"
    (kubelet / "pods").mkdir(parents=True)
    (host / "var/lib/kubelet/config.yaml").write_text(
        "kind: KubeletConfiguration\ncontainerLogMaxSize: 1Mi\ncontainerLogMaxFiles: 2\n"
    )
    live = write(logs / POD / "1.log", 8 * KiB)
    newest = old(logs / POD / "1.log.20240103-000000.gz", 4 * KiB)
    past = old(logs / POD / "1.log.20240102-000000.gz", 12 * KiB)  # MaxFiles 2: one rotation
    tmp = old(logs / POD / "1.log.20240104-000000.tmp", 16 * KiB)
    earlier = old(logs / POD / "0.log", 20 * KiB)
    young = write(logs / POD / "7.log", 24 * KiB)  # not known yet to be an earlier instance's
    app = running_in("uid-a", "a")
    app = replace(app, annotations={ANNOTATION_RESTART_COUNT: "1"})
    view = RuntimeView(
        endpoint="unix:///fake.sock", containers=[app], sandboxes=[sandbox("uid-a", "a")],
        images=[], sandbox_images=set(), layers={}, container_fs=[],
        image_fs=[FilesystemUsage("/var/lib/kubelet", None, None)],
    )  # fmt: skip
    pods = pods_file(tmp_path / "pods.json", ("uid-a", "a"))
    s = Settings(host_root=host, pods_file=pods, env={"HOME": "/"})
    report = disk_usage(s, QuietUi(), DfOptions(), reader=lambda *_: view)
    doc = report.to_dict()
    f = fs_with(doc, "logs")
    ln = lines(f)
    rotation = ln["log-rotation"]
    assert rotation["bytes"] == allocated(past, tmp, earlier)
    assert rotation["reclaimable"] == allocated(past, tmp, earlier)
    assert rotation["count"] == 3
    assert rotation["command"].startswith("kubegc residue clean ")
    dirs = (logs / "pods", logs / "pods/ns_a_uid-a", logs / POD)
    assert ln["logs"]["bytes"] == allocated(live, newest, young, *dirs)
    assert_adds_up(f)
    assert doc["summary"]["reclaimable_by_command"][rotation["command"]] >= rotation["reclaimable"]


def test_a_live_log_over_size_is_a_note_not_bytes(tmp_path: Path) -> None:
    host = tmp_path / "host"
    (host / "var/lib/kubelet/pods").mkdir(parents=True)
    (host / "var/lib/kubelet/config.yaml").write_text(
        "kind: KubeletConfiguration\ncontainerLogMaxSize: 4Ki\n"
    )
    write(host / "var/log" / POD / "1.log", 8 * KiB)
    app = replace(running_in("uid-a", "a"), annotations={ANNOTATION_RESTART_COUNT: "1"})
    view = RuntimeView(
        endpoint="unix:///fake.sock", containers=[app], sandboxes=[sandbox("uid-a", "a")],
        images=[], sandbox_images=set(), layers={}, container_fs=[],
        image_fs=[FilesystemUsage("/var/lib/kubelet", None, None)],
    )  # fmt: skip
    s = Settings(host_root=host, env={"HOME": "/"})
    doc = disk_usage(s, QuietUi(), DfOptions(), reader=lambda *_: view).to_dict()
    assert "log-rotation" not in lines(fs_with(doc, "logs"))
    assert any("1 running container log(s) at or over containerLogMaxSize 4Ki (" in n
               for n in doc["notes"]), doc["notes"]  # fmt: skip
