"""Where the image filesystem is: one rule (`node.imagefs.image_filesystem`, the first
filesystem CRI `ImageFsInfo` reports, as the kubelet takes it) for `gc images`, `evict check`
and `df`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.model import FilesystemUsage, Image
from kubegc_cli.node.imagefs import image_filesystem
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime


@pytest.mark.parametrize(
    ("mountpoints", "found"),
    [
        (["/var/lib/containerd"], "/var/lib/containerd"),
        (["/mnt/images", "/var/lib/containerd"], "/mnt/images"),  # the first, in CRI's order
    ],
)
def test_the_image_filesystem_is_the_first_the_runtime_reports(
    mountpoints: list[str], found: str
) -> None:
    assert image_filesystem(mountpoints, "unix:///run/c.sock") == found


def test_a_runtime_that_reports_no_image_filesystem_is_unavailable() -> None:
    with pytest.raises(
        RuntimeUnavailable, match=r"^unix:///run/c.sock reports no image filesystem$"
    ):
        image_filesystem([], "unix:///run/c.sock")


class NoImageFs(MemoryCri):
    """A runtime whose ImageFsInfo names no image filesystem."""

    def image_fs_info(self) -> tuple[list[FilesystemUsage], list[FilesystemUsage]]:
        return [], []


def test_gc_images_on_a_runtime_without_an_image_filesystem_is_exit_3_and_removes_nothing(
    tmp_path: Path,
) -> None:
    cri = NoImageFs({}, {}, images={"sha256:aa": Image("sha256:aa", ("old:1",), (), 10**9)})
    argv = ["--host-root", str(tmp_path), "--state-dir", str(tmp_path / "st"),
            "--pod-source", "none", "gc", "images", "--yes", "--image-gc-high-threshold", "1",
            "--image-gc-low-threshold", "0", "--minimum-image-ttl-duration", "0s"]  # fmt: skip
    with use_runtime(cri):
        code, _, err = run_cli(argv)
    assert code == 3, err
    assert "reports no image filesystem" in err and "Traceback" not in err
    assert cri.removed == [] and "sha256:aa" in cri.images
