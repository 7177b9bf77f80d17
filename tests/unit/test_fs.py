"""Image filesystem figures (statvfs under --host-root) and the runtime's sandbox image."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kubegc_cli.core.errors import RuntimeUnavailable, SandboxImageUnreadable
from kubegc_cli.core.model import reference_forms
from kubegc_cli.node.host.fs import fs_stats
from kubegc_cli.node.sandboximages import sandbox_image_from_info


def test_fs_stats_match_statvfs_under_host_root(tmp_path: Path) -> None:
    (tmp_path / "var/lib/containerd").mkdir(parents=True)
    got = fs_stats(tmp_path, "/var/lib/containerd")
    st = os.statvfs(tmp_path)
    assert got.capacity == st.f_blocks * st.f_frsize > 0
    assert 0 <= got.available <= got.capacity  # bavail: reserved blocks count as used
    assert got.inodes == st.f_files


def test_fs_stats_of_a_missing_path_is_exit_3(tmp_path: Path) -> None:
    with pytest.raises(RuntimeUnavailable, match="cannot stat filesystem"):
        fs_stats(tmp_path, "/no/such/dir")


@pytest.mark.parametrize(
    ("info", "image"),
    [
        ({"config": '{"sandboxImage": "registry.k8s.io/pause:3.9"}'}, "registry.k8s.io/pause:3.9"),
        ({"config": '{"other": 1}'}, None),
        ({"config": ""}, None),
        ({}, None),
    ],
)
def test_sandbox_image_from_status_info(info: dict[str, str], image: str | None) -> None:
    assert sandbox_image_from_info(info) == image


@pytest.mark.parametrize(
    "config",
    [
        "not json",
        "[" * 5000 + "]" * 5000,
        '{"sandboxImage": "a", "sandboxImage": "b"}',
        '["registry.k8s.io/pause:3.9"]',
        '{"sandboxImage": ""}',
        '{"sandboxImage": {"name": "registry.k8s.io/pause:3.9"}}',
        '{"sandboxImage": null}',
        '{"sandboxImage": "!!!bad image###"}',
        '{"sandboxImage": "registry.k8s.io/pause:3.9 "}',
        '{"sandboxImage": "registry.k8s.io/Pause:3.9"}',
    ],
    ids=[
        "not-json",
        "deep",
        "key-twice",
        "not-object",
        "empty",
        "object",
        "null",
        "not-a-name",
        "trailing-space",
        "upper-case-path",
    ],
)
def test_a_sandbox_image_the_runtime_names_unreadably_is_unknown(config: str) -> None:
    """The runtime said which image it protects, in a form kubegc cannot read: unknown, never
    taken for "the runtime does not say" (which would leave the pause image unprotected)."""
    with pytest.raises(SandboxImageUnreadable, match="sandbox image the runtime protects"):
        sandbox_image_from_info({"config": config})


@pytest.mark.parametrize(
    ("ref", "full"),
    [
        ("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.9"),
        ("pause:3.9", "docker.io/library/pause:3.9"),
        ("pause", "docker.io/library/pause:latest"),
        ("library/pause:3.9", "docker.io/library/pause:3.9"),
        ("rancher/mirrored-pause:3.6", "docker.io/rancher/mirrored-pause:3.6"),
        ("localhost:5000/pause:1", "localhost:5000/pause:1"),
        ("localhost/pause:1", "localhost/pause:1"),
        ("REGISTRY.K8S.IO/pause:3.9", "REGISTRY.K8S.IO/pause:3.9"),
        ("registry.k8s.io/pause@sha256:" + "a" * 64, "registry.k8s.io/pause@sha256:" + "a" * 64),
    ],
)
def test_reference_forms_name_the_image_as_containerd_lists_it(ref: str, full: str) -> None:
    """The sandbox image a runtime names in familiar form (`pause:3.9`) is listed by containerd
    under its normalized name: both protect it."""
    assert reference_forms(ref) == {ref, full}


@pytest.mark.parametrize("ref", ["", " pause", "pause:3.9 ", "Pause:3.9", "a//b", "x@sha256:1"])
def test_what_is_not_an_image_reference_has_no_forms(ref: str) -> None:
    assert reference_forms(ref) == set()
