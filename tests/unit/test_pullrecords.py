"""The kubelet's image pull records (KEP-2535) read from fixture trees under --host-root, and
the re-pull risk `gc images` shows for each image (table, -o wide, JSON)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.commands.gc import PULL_RECORDS_WARNED
from kubegc_cli.core.model import Image
from kubegc_cli.core.pulls import (
    NO_RECORD,
    NODE_WIDE,
    NOT_KEPT,
    RECORDED,
    SECRET,
    SERVICE_ACCOUNT,
    UNREADABLE,
    PullRecord,
)
from kubegc_cli.node.host.bounded import walk_timeout_of
from kubegc_cli.node.host.pullrecords import (
    MAX_RECORD_BYTES,
    read_pull_records,
    record_file_name,
)
from kubegc_cli.policy.images import registry_of, repull_risk
from tests.unit.hangfs import hung_mount, needs_fuse
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

ROOT = "/var/lib/kubelet"
DIGEST = "sha256:" + "ab" * 32
APP = Image("sha256:app", ("quay.io/acme/app:1",), (f"quay.io/acme/app@{DIGEST}",), size=400)


def pulled_dir(host: Path, root: str = ROOT) -> Path:
    d = host / root.lstrip("/") / "image_manager" / "pulled"
    d.mkdir(parents=True, exist_ok=True)
    return d


def record(image_ref: str, mapping: dict[str, Any] | None = None, **extra: Any) -> str:
    doc: dict[str, Any] = {
        "kind": "ImagePulledRecord",
        "apiVersion": "kubelet.config.k8s.io/v1alpha1",
        "lastUpdatedTime": "2026-01-01T00:00:00Z",
        "imageRef": image_ref,
    }
    if mapping is not None:
        doc["credentialMapping"] = mapping
    return json.dumps({**doc, **extra})


def write_record(host: Path, key: str, text: str | bytes) -> Path:
    path = pulled_dir(host) / record_file_name(key)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


SECRET_REF = {"uid": "u1", "namespace": "ns", "name": "pull", "credentialHash": "h"}
SA_REF = {"uid": "u2", "namespace": "ns", "name": "builder"}


def test_record_file_name_is_the_kubelets() -> None:
    """The kubelet names a record sha256-<hex SHA-256 of its key>: its own test data has the
    record of imageRef "testimageref" in pulled/sha256-b3c0cc42...9064."""
    assert record_file_name("testimageref") == (
        "sha256-b3c0cc4278800b03a308ceb2611161430df571ca733122f0a40ac8b9792a9064"
    )


@pytest.mark.parametrize(
    ("mapping", "kinds"),
    [
        ({"quay.io/acme/app": {"nodePodsAccessible": True}}, (NODE_WIDE,)),
        ({"quay.io/acme/app": {"kubernetesSecrets": [SECRET_REF]}}, (SECRET,)),
        ({"quay.io/acme/app": {"kubernetesSecretCoordinates": [SECRET_REF]}}, (SECRET,)),
        ({"quay.io/acme/app": {"kubernetesServiceAccounts": [SA_REF]}}, (SERVICE_ACCOUNT,)),
        (
            {
                "quay.io/acme/app": {"kubernetesServiceAccounts": [SA_REF]},
                "app": {"kubernetesSecrets": [SECRET_REF]},
                "other": {"nodePodsAccessible": True},
            },
            (NODE_WIDE, SECRET, SERVICE_ACCOUNT),
        ),
        ({"quay.io/acme/app": {"kubernetesSecrets": []}}, ()),
        (None, ()),
    ],
)
def test_credential_kinds_of_a_record(
    tmp_path: Path, mapping: dict[str, Any] | None, kinds: tuple[str, ...]
) -> None:
    write_record(tmp_path, APP.id, record(APP.id, mapping))
    assert read_pull_records(tmp_path, ROOT, [APP]) == {APP.id: PullRecord(RECORDED, kinds)}


def test_a_record_keyed_by_a_repo_digest_counts(tmp_path: Path) -> None:
    key = APP.repo_digests[0]
    write_record(tmp_path, key, record(key, {"app": {"nodePodsAccessible": True}}))
    assert read_pull_records(tmp_path, ROOT, [APP])[APP.id] == PullRecord(RECORDED, (NODE_WIDE,))


def test_no_pulled_directory_means_the_kubelet_keeps_none(tmp_path: Path) -> None:
    (tmp_path / ROOT.lstrip("/")).mkdir(parents=True)
    assert read_pull_records(tmp_path, ROOT, [APP]) == {APP.id: PullRecord(NOT_KEPT)}
    assert read_pull_records(tmp_path / "nothing-here", ROOT, [APP])[APP.id].state in (
        NOT_KEPT, UNREADABLE,
    )  # fmt: skip


def test_a_directory_without_the_images_record_is_no_record(tmp_path: Path) -> None:
    other = "sha256:other"
    write_record(tmp_path, other, record(other, {"x": {"nodePodsAccessible": True}}))
    assert read_pull_records(tmp_path, ROOT, [APP]) == {APP.id: PullRecord(NO_RECORD)}


def test_a_record_naming_another_image_is_not_this_ones(tmp_path: Path) -> None:
    write_record(
        tmp_path, APP.id, record("sha256:someone-else", {"x": {"nodePodsAccessible": True}})
    )
    assert read_pull_records(tmp_path, ROOT, [APP])[APP.id] == PullRecord(NO_RECORD)


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"not json", "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
        (b'{"kind": "ImagePullIntent", "image": "x"}', "not an ImagePulledRecord"),
        (record(APP.id, {"x": "node"}).encode(), "is not an object"),
        (record(APP.id, {"x": {"kubernetesSecrets": "s"}}).encode(), "is not a list"),
        (record(APP.id, []).encode(), "credentialMapping is not an object"),
        (b'{"kind": "ImagePulledRecord", "kind": "x"}', "appears twice"),
    ],
)
def test_garbage_is_unreadable_never_an_error(tmp_path: Path, content: bytes, why: str) -> None:
    write_record(tmp_path, APP.id, content)
    got = read_pull_records(tmp_path, ROOT, [APP])[APP.id]
    assert got.state == UNREADABLE and why in got.why, got
    assert got.credentials == ()


def test_an_oversized_record_is_not_read_whole(tmp_path: Path) -> None:
    write_record(tmp_path, APP.id, b" " * (MAX_RECORD_BYTES + 10))
    got = read_pull_records(tmp_path, ROOT, [APP])[APP.id]
    assert got.state == UNREADABLE and "larger than" in got.why


def test_links_are_never_followed(tmp_path: Path) -> None:
    """A record that is a symbolic link, or a link on the way to pulled/, is unreadable, even
    when what it points at is a good record."""
    good = tmp_path / "elsewhere"
    good.write_text(record(APP.id, {"x": {"nodePodsAccessible": True}}))
    link = pulled_dir(tmp_path) / record_file_name(APP.id)
    link.symlink_to(good)
    got = read_pull_records(tmp_path, ROOT, [APP])[APP.id]
    assert got.state == UNREADABLE and "symbolic link" in got.why

    host = tmp_path / "h2"
    real = host / "real-image-manager"
    (real / "pulled").mkdir(parents=True)
    (real / "pulled" / record_file_name(APP.id)).write_text(
        record(APP.id, {"x": {"nodePodsAccessible": True}})
    )
    (host / ROOT.lstrip("/")).mkdir(parents=True)
    (host / ROOT.lstrip("/") / "image_manager").symlink_to(real)
    got = read_pull_records(host, ROOT, [APP])[APP.id]
    assert got.state == UNREADABLE and "symbolic link" in got.why
    assert got.why.endswith(f"{ROOT}/image_manager is a symbolic link (not followed)")


def test_a_file_on_the_way_is_named_as_a_file(tmp_path: Path) -> None:
    (tmp_path / ROOT.lstrip("/")).mkdir(parents=True)
    (tmp_path / ROOT.lstrip("/") / "image_manager").write_text("not a directory")
    got = read_pull_records(tmp_path, ROOT, [APP])[APP.id]
    assert got.state == UNREADABLE
    assert got.why == (f"{ROOT}/image_manager/pulled: {ROOT}/image_manager is a regular file, "
                       "not a directory")  # fmt: skip
    assert "symbolic link" not in got.why


def test_a_fifo_is_refused_without_waiting(tmp_path: Path) -> None:
    os.mkfifo(pulled_dir(tmp_path) / record_file_name(APP.id))
    got = read_pull_records(tmp_path, ROOT, [APP])[APP.id]
    assert got.state == UNREADABLE and "not a regular file" in got.why


@pytest.mark.parametrize(
    ("name", "registry"),
    [
        ("busybox", "docker.io"),
        ("library/busybox:1", "docker.io"),
        ("docker.io/library/busybox:1", "docker.io"),
        ("quay.io/acme/app@sha256:00", "quay.io"),
        ("localhost/built:1", "localhost"),
        ("registry:5000/x", "registry:5000"),
        ("acme/app", "docker.io"),
        ("", ""),
    ],
)
def test_registry_of_a_name(name: str, registry: str) -> None:
    assert registry_of(name) == registry


def test_repull_risk_of_an_image() -> None:
    risk = repull_risk(APP, PullRecord(RECORDED, (SECRET,)))
    assert (risk.digest, risk.registry, risk.credentials) == (True, "quay.io", "secret")
    assert risk.summary == "quay.io secret"
    assert risk.to_dict() == {"digest": True, "registry": "quay.io", "pull_record": "recorded",
                              "credentials": ["secret"]}  # fmt: skip
    tarball = Image("sha256:t", ("docker.io/library/imported:1",))
    risk = repull_risk(tarball)
    assert (risk.digest, risk.registry, risk.record.state) == (False, "docker.io", NOT_KEPT)
    assert risk.summary == "no digest" and risk.credentials == "-"
    assert repull_risk(APP, PullRecord(UNREADABLE, why="x")).credentials == "?"
    assert repull_risk(APP, PullRecord(RECORDED)).credentials == "none"
    assert repull_risk(APP, PullRecord(RECORDED)).summary == "quay.io none"
    assert repull_risk(APP, PullRecord(NO_RECORD)).summary == "quay.io, no pull record"
    assert repull_risk(APP, PullRecord(UNREADABLE)).summary == "quay.io, pull record unreadable"
    assert repull_risk(APP).summary == "quay.io"


IMPORT_DIGEST = "import-2026-12-05@sha256:" + "c" * 64


@pytest.mark.parametrize(
    ("image", "digest", "registry"),
    [
        # `ctr images import --digests` of quay.io/acme/withdigests:1: the import digest
        # (containerd cmd/ctr import, `import-<date>@<digest>`) names no registry; the tag does
        (Image("sha256:w", ("quay.io/acme/withdigests:1",), (IMPORT_DIGEST,)), False, "quay.io"),
        (Image("sha256:w", ("quay.io/acme/withdigests:1",),
               ("docker.io/library/" + IMPORT_DIGEST,)), False, "quay.io"),
        # the tag, not a digest of another name, is what the kubelet pulls again
        (Image("sha256:m", ("ghcr.io/acme/app:1",), ("quay.io/acme/app@sha256:00",)), True,
         "ghcr.io"),
        # digests only: the first one a registry serves
        (Image("sha256:d", (), (IMPORT_DIGEST, "quay.io/acme/app@sha256:00")), True, "quay.io"),
        (Image("sha256:i", (), (IMPORT_DIGEST,)), False, ""),
        (Image("sha256:n", ()), False, ""),
    ],
)  # fmt: skip
def test_repull_risk_takes_the_registry_from_the_images_own_name(
    image: Image, digest: bool, registry: str
) -> None:
    risk = repull_risk(image)
    assert (risk.digest, risk.registry) == (digest, registry)


# -- end to end in-process -------------------------------------------------------------------


def _runtime() -> MemoryCri:
    return MemoryCri(containers={}, sandboxes={}, images={
        APP.id: APP,
        "sha256:hub": Image("sha256:hub", ("docker.io/library/nginx:1",),
                            (f"docker.io/library/nginx@{DIGEST}",), size=300),
        "sha256:tar": Image("sha256:tar", ("docker.io/library/imported:1",), size=200),
    })  # fmt: skip


def test_gc_images_shows_the_repull_risk_of_each_image(tmp_path: Path) -> None:
    host = tmp_path / "host"
    kubelet = "/data/kubelet"
    d = pulled_dir(host, kubelet)
    (d / record_file_name(APP.id)).write_text(
        record(APP.id, {"q": {"kubernetesSecrets": [SECRET_REF]}})
    )
    hub = "sha256:hub"
    (d / record_file_name(hub)).write_text(record(hub, {"n": {"nodePodsAccessible": True}}))
    base = ["--host-root", str(host), "--state-dir", str(tmp_path / "s"), "gc", "images",
            "--prune-unused", "--minimum-image-ttl-duration", "0s", "--dry-run",
            "--root-dir", kubelet]  # fmt: skip
    with use_runtime(_runtime()):
        code, out, err = run_cli([*base, "-o", "json"])
    assert code == 0, err
    doc = json.loads(out)
    risk = {a["id"]: a["repull"] for a in [*doc["actions"], *doc["kept"]]}
    assert risk[APP.id] == {"digest": True, "registry": "quay.io", "pull_record": "recorded",
                            "credentials": ["secret"]}  # fmt: skip
    assert risk[hub]["credentials"] == ["node-wide"] and risk[hub]["registry"] == "docker.io"
    assert risk["sha256:tar"] == {"digest": False, "registry": "docker.io", "pull_record": "none",
                                  "credentials": []}  # fmt: skip

    with use_runtime(_runtime()):
        code, out, err = run_cli(base)
    assert code == 0, err
    assert "REPULL" in out and "quay.io secret" in out and "docker.io node-wide" in out
    assert "CREDENTIALS" not in out
    with use_runtime(_runtime()):
        code, out, err = run_cli([*base, "-o", "wide"])
    assert code == 0, err
    header = next(line for line in out.splitlines() if "REPULL" in line)
    assert "DIGEST" in header and "REGISTRY" in header and "CREDENTIALS" in header
    row = next(line for line in out.splitlines() if "imported:1" in line and "no digest" in line)
    assert " no " in row


def test_gc_images_without_pull_records_says_not_kept_and_bad_root_dir_is_exit_2(
    tmp_path: Path,
) -> None:
    base = ["--host-root", str(tmp_path), "--state-dir", str(tmp_path / "s"), "gc", "images",
            "--dry-run", "-o", "json"]  # fmt: skip
    with use_runtime(_runtime()):
        code, out, err = run_cli(base)
    assert code == 0, err
    assert {a["repull"]["pull_record"] for a in json.loads(out)["kept"]} == {"not-kept"}
    with use_runtime(_runtime()):
        code, out, err = run_cli([*base, "--root-dir", "var/lib/kubelet"])
    assert code == 2 and err.count("\n") == 1 and "'var/lib/kubelet'" in err


def test_a_root_dir_with_dot_dot_never_leaves_the_host_root(tmp_path: Path) -> None:
    """`..` in --root-dir is resolved lexically under --host-root, as every host path: a
    record planted above the host root is never read."""
    outside = tmp_path / "image_manager" / "pulled"
    outside.mkdir(parents=True)
    (outside / record_file_name(APP.id)).write_text(
        record(APP.id, {"x": {"nodePodsAccessible": True}})
    )
    host = tmp_path / "host"
    host.mkdir()
    assert read_pull_records(host, "/..", [APP])[APP.id] == PullRecord(NOT_KEPT)
    write_record(host, APP.id, record(APP.id, {"x": {"nodePodsAccessible": True}}))
    got = read_pull_records(host, "/var/../var/lib/./kubelet/", [APP])[APP.id]
    assert got == PullRecord(RECORDED, (NODE_WIDE,))


@needs_fuse
def test_a_hung_mount_under_the_kubelet_root_costs_one_timeout(tmp_path: Path) -> None:
    """A pulled/ directory on a mount that never answers: every image's record is
    unreadable, naming the stall, after one walk timeout (never one per image); a second
    read while it still hangs does not wait for it again."""
    target = pulled_dir(tmp_path)
    images = [APP, *(Image(f"sha256:{i}", (f"x/{i}:1",)) for i in range(20))]
    with hung_mount(target), walk_timeout_of(0.5):
        began = time.monotonic()
        got = read_pull_records(tmp_path, ROOT, images)
        took = time.monotonic() - began
        again = read_pull_records(tmp_path, ROOT, [APP])
        second = time.monotonic() - began - took
    assert took < 5, took
    assert second < 0.4, second  # remembered as hung: not touched again
    assert {r.state for r in got.values()} == {UNREADABLE} and len(got) == len(images)
    assert "no answer within 0.5s" in got[APP.id].why
    assert again[APP.id].state == UNREADABLE


def test_every_unreadable_pull_record_is_counted_in_the_warnings(tmp_path: Path) -> None:
    """The first PULL_RECORDS_WARNED unreadable records are named, the rest counted."""
    images = {f"sha256:{i}": Image(f"sha256:{i}", (f"quay.io/acme/app{i}:1",)) for i in range(5)}
    for key in images:
        write_record(tmp_path, key, b"not json")
    base = ["--host-root", str(tmp_path), "--state-dir", str(tmp_path / "s"), "gc", "images",
            "--prune-unused", "--minimum-image-ttl-duration", "0s", "--dry-run",
            "-o", "json"]  # fmt: skip
    with use_runtime(MemoryCri(containers={}, sandboxes={}, images=images)):
        code, _, err = run_cli(base)
    assert code == 0, err
    lines = [line for line in err.splitlines() if "pull record" in line]
    assert len(lines) == PULL_RECORDS_WARNED + 1, err
    assert all("pull record unreadable: " in line for line in lines[:-1])
    assert lines[-1].endswith(f"and {5 - PULL_RECORDS_WARNED} more kubelet pull record(s) "
                              "unreadable (not listed)")  # fmt: skip
