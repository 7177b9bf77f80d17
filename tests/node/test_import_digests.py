"""An image imported with `ctr images import --digests` against a real containerd: CRI lists
its tag and an `import-<date>@sha256:…` repo digest (containerd's cmd/ctr `import`), which no
registry serves — `gc images` shows the registry of the image's own name (its tag), and no
digest a registry serves."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from kubegc_cli.node.cri.client import CriClient
from kubegc_cli.node.cri.endpoint import Endpoint
from tests.node.localnode import CRI_NAMESPACE, LocalNode, _build_image, _write_oci_archive
from tests.node.test_gc_containers import kubegc

REF = "quay.io/acme/withdigests:1"


def _import_with_digests(node: LocalNode, tmp_path: Path) -> str:
    """`ctr images import --digests` of a tarball naming the image by its tag alone; returns
    its CRI image ID once CRI lists the import digest too."""
    build = _build_image(REF, cmd=["/bin/sh"], pad_bytes=1024, seed=uuid.uuid4().hex)
    archive = tmp_path / "withdigests.tar"
    _write_oci_archive(archive, [build], pullable=False)
    ctr = shutil.which("ctr") or "ctr"
    command = [ctr, "-a", str(node.socket), "-n", CRI_NAMESPACE, "images", "import",
               "--digests", "--snapshotter", node.snapshotter, str(archive)]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 10
    with CriClient(Endpoint(str(node.socket), "test")) as cri:
        while True:
            found = [i for i in cri.list_images() if REF in i.repo_tags]
            if found and found[0].repo_digests:
                return found[0].id
            assert time.monotonic() < deadline, f"CRI lists no import digest of {REF}: {found}"
            time.sleep(0.05)


def test_the_registry_of_an_image_imported_with_digests_is_its_names(tmp_path: Path) -> None:
    with LocalNode(tmp_path / "node") as node:
        image = _import_with_digests(node, tmp_path)
        listed = next(i for i in node.list_images() if i.id == image)
        assert all("import-" in d for d in listed.repo_digests), listed.repo_digests
        run = kubegc(node, tmp_path, "gc", "images", "--dry-run", "-o", "json",
                     "--prune-unused", "--minimum-image-ttl-duration", "0s")  # fmt: skip
        assert run.returncode == 0, run.stderr
        doc = json.loads(run.stdout)
        (repull,) = [a["repull"] for a in [*doc["actions"], *doc["kept"]] if a["id"] == image]
        assert repull["registry"] == "quay.io" and repull["digest"] is False, repull
