"""The eviction defaults follow the kubelet's version.

Rules: `imagefs.inodesFree<5%` is a Linux `evictionHard` default from 1.30
(kubernetes/kubernetes#121834, pkg/kubelet/eviction/defaults_linux.go);
`mergeDefaultEvictionSettings` exists from 1.33 (kubernetes/kubernetes#127577,
cmd/kubelet/app/server.go `loadConfigFile`). The version: `--kubelet-version`, else the Node's
`status.nodeInfo.kubeletVersion` from the pod source, else the newest kubegc knows (the
kubelet binary is never run to ask it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.policy.eviction.thresholds import (
    NEWEST_KUBELET,
    SOURCE_MERGED_DEFAULT,
    KubeletVersion,
    RawEviction,
    default_eviction_hard,
    honours_merge_defaults,
    parse_kubelet_version,
    resolve,
)
from tests.unit.test_evict_check import by_signal, v1_node


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("v1.30.2", (1, 30)),
        ("1.33", (1, 33)),
        ("v1.31.4-eks-1a2b3c", (1, 31)),
        ("v1.29.0+k3s1", (1, 29)),
        (" v1.35.0 ", (1, 35)),
    ],
)
def test_parse_kubelet_version(text: str, want: KubeletVersion) -> None:
    assert parse_kubelet_version(text, where="--kubelet-version") == want


@pytest.mark.parametrize("text", ["", "1", "v1.x", "one.two", "v1.30.2 extra", "1.30\n2"])
def test_a_bad_kubelet_version_is_bad_input(text: str) -> None:
    with pytest.raises(BadInput, match=r"--kubelet-version.*not a Kubernetes version"):
        parse_kubelet_version(text, where="--kubelet-version")


@pytest.mark.parametrize(
    ("version", "inodes_default", "merge"),
    [
        ((1, 29), False, False),  # defaults_linux.go before kubernetes#121834
        ((1, 30), True, False),  # kubernetes#121834 (imagefs.inodesFree<5%)
        ((1, 32), True, False),
        ((1, 33), True, True),  # kubernetes#127577 (mergeDefaultEvictionSettings)
        ((1, 35), True, True),
        (None, True, True),  # the newest kubegc knows
    ],
)
def test_defaults_by_version(
    version: KubeletVersion | None, inodes_default: bool, merge: bool
) -> None:
    defaults = default_eviction_hard(version)
    assert ("imagefs.inodesFree" in defaults) is inodes_default
    assert {"memory.available", "nodefs.available", "nodefs.inodesFree",
            "imagefs.available"} <= set(defaults)  # fmt: skip
    assert honours_merge_defaults(version) is merge


def test_merge_defaults_is_ignored_before_1_33() -> None:
    layer = RawEviction(hard={"memory.available": "1Gi"}, merge_defaults=True, source="cfg")
    old = resolve([layer], version=(1, 32))
    assert [t.signal for t in old.thresholds if t.hard] == [
        "memory.available", "allocatableMemory.available"]  # fmt: skip
    assert any("mergeDefaultEvictionSettings (cfg) is ignored: kubelet 1.32" in n
               for n in old.notes)  # fmt: skip
    new = resolve([layer], version=(1, 33))
    merged = {t.signal: t.source for t in new.thresholds if t.hard}
    assert merged["nodefs.available"] == SOURCE_MERGED_DEFAULT
    assert merged["imagefs.inodesFree"] == SOURCE_MERGED_DEFAULT


ENV = {"PATH": "/usr/bin:/bin", "HOME": "/"}


def check(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--host-root", str(root),
         "-r", "unix:///nonexistent/kubegc-test.sock", *args],
        capture_output=True, text=True, timeout=60, env=ENV,
    )  # fmt: skip


def test_evict_check_names_the_version_and_its_source(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    args = ["evict", "check", "--root-dir", "/var/lib/kubelet", "-o", "json"]
    res = check(tmp_path, *args)
    doc = json.loads(res.stdout)
    newest = f"{NEWEST_KUBELET[0]}.{NEWEST_KUBELET[1]}"
    assert doc["kubelet_version"]["version"] == newest
    assert "newest kubelet kubegc knows" in doc["kubelet_version"]["source"]
    assert "imagefs.inodesFree" in by_signal(doc)

    res = check(tmp_path, "--kubelet-version", "v1.29.4", *args)
    doc = json.loads(res.stdout)
    assert doc["kubelet_version"] == {"version": "1.29", "source": "--kubelet-version"}
    assert "imagefs.inodesFree" not in by_signal(doc), res.stderr

    res = check(tmp_path, "--kubelet-version", "latest", *args)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "'latest'" in lines[0]


def test_the_nodes_kubelet_version_from_the_pod_source(tmp_path: Path) -> None:
    v1_node(tmp_path, available_mib=900)
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "List", "items": [
        {"kind": "Node", "metadata": {"name": "node-1"},
         "status": {"nodeInfo": {"kubeletVersion": "v1.29.7"}}},
    ]}))  # fmt: skip
    res = check(tmp_path, "--pods-file", str(pods), "--node-name", "node-1", "-v",
                "evict", "check", "--root-dir", "/var/lib/kubelet", "-o", "json")  # fmt: skip
    doc = json.loads(res.stdout)
    assert doc["kubelet_version"]["version"] == "1.29", res.stderr
    assert doc["kubelet_version"]["source"].startswith(
        "Node node-1 status.nodeInfo.kubeletVersion v1.29.7 (file:"
    )
    assert "imagefs.inodesFree" not in by_signal(doc)
    assert "kubelet version 1.29: Node node-1" in res.stderr
