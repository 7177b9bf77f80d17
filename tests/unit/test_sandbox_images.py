"""The images a runtime keeps for itself, read from its configuration, and the images that
cannot be pulled again. Each rule names its source: containerd's `LoadConfig`,
`resolveImports` and `mergeConfig` (cmd/containerd/server/config/config.go), its CRI images
plugin's `configMigration` (plugins/cri/images/plugin.go), CRI-O's `UpdateFromFile` /
`UpdateFromPath` (pkg/config/config.go) and `CompileRegexpsForPinnedImages`
(internal/storage/image.go), cri-dockerd's `--pod-infra-container-image`."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.model import Image, ImageRecord
from kubegc_cli.node import sandboximages
from kubegc_cli.node.host.bounded import walk_timeout_of
from kubegc_cli.node.host.processes import socket_holders
from kubegc_cli.node.sandboximages import (
    BOTTLEROCKET_PAUSE,
    CONTAINERD_CONFIG_FLAGS,
    KNOWN_DEFAULTS,
    ConfigFile,
    NamedImage,
    containerd_images,
    crio_config_paths,
    crio_images,
    crio_pattern_matches,
    flag_value,
    go_flag_value,
    load_containerd_config,
    runtime_sandbox_images,
)
from kubegc_cli.policy.images import (
    KEEP_UNPULLABLE,
    ImageGCPolicy,
    plan_images,
    unpullable_reason,
)
from tests.unit.factories import NOW
from tests.unit.memorycri import MemoryCri, run_cli, use_runtime

V3 = """version = 3
[plugins."io.containerd.cri.v1.images".pinned_images]
  sandbox = "{image}"
"""
V2 = """version = 2
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{image}"
"""
V1 = """[plugins.cri]
  sandbox_image = "{image}"
"""


def no_warning(message: str) -> None:
    raise AssertionError(f"unexpected warning: {message}")


def write(host: Path, path: str, text: str) -> str:
    local = host / path.lstrip("/")
    local.parent.mkdir(parents=True, exist_ok=True)
    local.write_text(text)
    return path


def load(
    host: Path, path: str = "/etc/containerd/config.toml"
) -> tuple[list[str], bool, list[str]]:
    """(the files read, in order; whether all could be read; the warnings)."""
    warnings: list[str] = []
    files, complete = load_containerd_config(path, host, warnings.append)
    return [f.path for f in files], complete, warnings


# -- containerd: which key, by config version (config.go's version history, configMigration) --


@pytest.mark.parametrize(
    ("text", "named", "default_in_force"),
    [
        # version 3 (containerd 2.x): plugins."io.containerd.cri.v1.images".pinned_images.sandbox
        (V3.format(image="reg.example/pause:3.10"), ["reg.example/pause:3.10"], False),
        # version 2: plugins."io.containerd.grpc.v1.cri".sandbox_image (2.x migrates it)
        (V2.format(image="reg.example/pause:3.9"), ["reg.example/pause:3.9"], False),
        # version 1 / unversioned: the short plugin name `cri` (v1MigratePluginName)
        (V1.format(image="reg.example/pause:3.6"), ["reg.example/pause:3.6"], False),
        # the images table without a sandbox entry: containerd's DefaultSandboxImage in force
        ('version = 3\n[plugins."io.containerd.cri.v1.images"]\nsnapshotter = "x"\n', [], True),
        # the CRI table without sandbox_image (this machine's Debian file): the default
        ('version = 2\n[plugins."io.containerd.grpc.v1.cri".cni]\nbin_dir = "/x"\n', [], True),
        # no CRI table at all: the default
        ("version = 2\n", [], True),
        # every pinned_images entry is pinned by containerd 2.x, not only `sandbox`
        (
            'version = 3\n[plugins."io.containerd.cri.v1.images".pinned_images]\n'
            'sandbox = "a.example/p:1"\nextra = "b.example/q:2"\n',
            ["a.example/p:1", "b.example/q:2"],
            False,
        ),
    ],
)
def test_containerd_sandbox_image_by_config_version(
    tmp_path: Path, text: str, named: list[str], default_in_force: bool
) -> None:
    write(tmp_path, "/etc/containerd/config.toml", text)
    warnings: list[str] = []
    files, complete = load_containerd_config(
        "/etc/containerd/config.toml", tmp_path, warnings.append
    )
    found, default = containerd_images(files)
    assert complete and not warnings
    assert [n.ref for n in found] == named
    assert default is default_in_force
    assert all(n.source.startswith("/etc/containerd/config.toml: plugins.") for n in found)


def test_imports_relative_globs_sorted_and_later_files_override(tmp_path: Path) -> None:
    """resolveImports: a relative import joins the importing file's directory; a `*` is a glob
    whose matches come sorted; LoadConfig reads breadth first, each file merged over the ones
    before (mergeConfig replaces a plugin's table): the last file with the table wins."""
    write(tmp_path, "/etc/containerd/config.toml",
          'version = 2\nimports = ["conf.d/*.toml", "/opt/extra.toml"]\n'
          + V2.format(image="root.example/pause:1").removeprefix("version = 2\n"))  # fmt: skip
    write(tmp_path, "/etc/containerd/conf.d/20-b.toml", V2.format(image="b.example/pause:2"))
    write(tmp_path, "/etc/containerd/conf.d/10-a.toml",
          'version = 2\nimports = ["../nested.toml"]\n')  # fmt: skip
    write(tmp_path, "/etc/containerd/nested.toml", V2.format(image="nested.example/pause:3"))
    write(tmp_path, "/opt/extra.toml", "version = 2\n")
    paths, complete, warnings = load(tmp_path)
    assert complete and not warnings
    assert paths == [
        "/etc/containerd/config.toml",
        "/etc/containerd/conf.d/10-a.toml",
        "/etc/containerd/conf.d/20-b.toml",
        "/opt/extra.toml",
        "/etc/containerd/nested.toml",  # an import's import comes after the first level
    ]
    warnings2: list[str] = []
    files, _ = load_containerd_config("/etc/containerd/config.toml", tmp_path, warnings2.append)
    found, default = containerd_images(files)
    # every image named anywhere is protected; the one in force is nested.example's
    assert [n.ref for n in found] == [
        "root.example/pause:1", "b.example/pause:2", "nested.example/pause:3",
    ]  # fmt: skip
    assert default is False


def test_a_relative_glob_is_read_as_both_containerd_majors_read_it(tmp_path: Path) -> None:
    """containerd 2.x joins a relative import to the importing file's directory before
    globbing; containerd 1.x globs it as given, from its working directory (`/`). Both sets of
    files are read (more files only keep more). A host root whose name holds glob characters
    is no pattern."""
    host = tmp_path / "h[1]*"
    write(host, "/etc/containerd/config.toml", 'version = 2\nimports = ["conf.d/*.toml"]\n')
    write(host, "/etc/containerd/conf.d/a.toml", V2.format(image="two.example/pause:1"))
    write(host, "/conf.d/b.toml", V2.format(image="one.example/pause:1"))
    paths, complete, warnings = load(host)
    assert complete and not warnings
    assert paths == [
        "/etc/containerd/config.toml", "/etc/containerd/conf.d/a.toml", "/conf.d/b.toml",
    ]  # fmt: skip


def test_an_import_that_replaces_the_table_without_an_image_brings_the_default(
    tmp_path: Path,
) -> None:
    """mergeConfig: "Maps merged by keys, but values are replaced entirely": an imported file
    with the CRI table but no sandbox_image leaves containerd on its default."""
    write(tmp_path, "/etc/containerd/config.toml",
          'version = 2\nimports = ["drop.toml"]\n'
          + V2.format(image="root.example/pause:1").removeprefix("version = 2\n"))  # fmt: skip
    write(tmp_path, "/etc/containerd/drop.toml",
          'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\nenable_cdi = true\n')  # fmt: skip
    files, _ = load_containerd_config("/etc/containerd/config.toml", tmp_path, no_warning)
    found, default = containerd_images(files)
    assert [n.ref for n in found] == ["root.example/pause:1"] and default is True


def test_import_cycles_end_and_each_file_is_read_once(tmp_path: Path) -> None:
    """LoadConfig skips a path already loaded, so a cycle ends."""
    write(tmp_path, "/etc/containerd/config.toml", 'version = 2\nimports = ["a.toml"]\n')
    write(tmp_path, "/etc/containerd/a.toml", 'version = 2\nimports = ["b.toml", "config.toml"]\n')
    write(tmp_path, "/etc/containerd/b.toml", 'version = 2\nimports = ["./a.toml"]\n')
    paths, complete, warnings = load(tmp_path)
    assert paths == [
        "/etc/containerd/config.toml", "/etc/containerd/a.toml", "/etc/containerd/b.toml",
    ]  # fmt: skip
    assert complete and not warnings


def test_imports_nest_only_so_deep(tmp_path: Path) -> None:
    for i in range(20):
        write(tmp_path, f"/etc/containerd/{i}.toml", f'version = 2\nimports = ["{i + 1}.toml"]\n')
    paths, complete, warnings = load(tmp_path, "/etc/containerd/0.toml")
    assert not complete and len(paths) == 9
    assert warnings and "deeper than 8" in warnings[0]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("version = 2\n[plugins\n", "is not TOML"),
        ("version = 2\na = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        (b"version = 2\n\xff\n", "is not UTF-8"),
        (None, "No such file"),
        ("fifo", "not a regular file"),
        ("unreadable", "Permission denied"),
    ],
)
def test_a_file_that_cannot_be_read_is_a_warning_and_the_defaults_are_kept(
    tmp_path: Path, content: str | bytes | None, why: str
) -> None:
    write(tmp_path, "/etc/containerd/config.toml", 'version = 2\nimports = ["bad.toml"]\n')
    bad = tmp_path / "etc/containerd/bad.toml"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    elif content == "fifo":
        os.mkfifo(bad)
    elif content == "unreadable":
        bad.write_text("version = 2\n")
        bad.chmod(0)
        if os.access(bad, os.R_OK):  # root reads anything: a directory cannot be read as one
            bad.chmod(0o644)
            bad.unlink()
            bad.mkdir()
            why = "not a regular file"
    elif content is not None:
        bad.write_text(content)
    paths, complete, warnings = load(tmp_path)
    assert paths == ["/etc/containerd/config.toml"] and not complete
    assert len(warnings) == 1 and "/etc/containerd/bad.toml" in warnings[0] and why in warnings[0]
    seen: list[str] = []
    kept = runtime_sandbox_images(None, tmp_path, None, seen.append)
    assert seen == warnings
    assert set(KNOWN_DEFAULTS) <= set(kept.refs())  # unknown: containerd's default may rule


def test_an_import_swapped_to_a_fifo_after_a_look_is_refused_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An import that looked like a regular file and is a FIFO by the time it is opened: the
    open does not wait for a writer (it would cost the whole --timeout, and the sandbox image
    the main file names with it), the file opened is refused and named in a warning, and the
    main file's image is kept beside the defaults."""
    write(
        tmp_path,
        "/etc/containerd/config.toml",
        'imports = ["swapped.toml"]\n' + V2.format(image="registry.example/pause:custom"),
    )
    swapped = tmp_path / "etc/containerd/swapped.toml"
    os.mkfifo(swapped)
    looks = os.stat(tmp_path / "etc/containerd/config.toml")  # a regular file's stat
    real_stat = os.stat

    def stat_before_the_swap(path: object, *args: object, **kwargs: object) -> os.stat_result:
        """Fault injection (a stand-in): any look at the import sees the regular file it was
        before it was swapped for the FIFO."""
        if str(path) == str(swapped):
            return looks
        return real_stat(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "stat", stat_before_the_swap)
    seen: list[str] = []
    try:
        with walk_timeout_of(3.0):  # (a wait on the FIFO would be this, said as a stall)
            kept = runtime_sandbox_images(None, tmp_path, None, seen.append)
    finally:  # a reader still waiting on the FIFO (the fault this test is about) is let go
        monkeypatch.undo()
        with contextlib.suppress(OSError):
            os.close(os.open(swapped, os.O_WRONLY | os.O_NONBLOCK))
    assert seen == [
        "cannot read containerd config /etc/containerd/swapped.toml: not a regular file"
    ]
    assert "registry.example/pause:custom" in kept.refs()
    assert set(KNOWN_DEFAULTS) <= set(kept.refs())


def test_an_import_on_a_hung_mount_keeps_the_sandbox_image_read_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk stalls on an import (a hung mount: one --timeout, said as such); the image
    the main file, read before it, names stays named beside the defaults."""
    main = 'imports = ["hung.toml"]\n' + V2.format(image="registry.example/pause:custom")
    write(tmp_path, "/etc/containerd/config.toml", main)
    write(tmp_path, "/etc/containerd/hung.toml", "version = 2\n")
    hung = str(tmp_path / "etc/containerd/hung.toml")
    release = threading.Event()
    real = sandboximages.read_regular

    def read_hanging(path: str, limit: int, **kwargs: Any) -> bytes:
        """Fault injection (a stand-in): reading the import blocks, as on a hung NFS mount,
        until the test ends."""
        if path == hung:
            release.wait(30)
        return real(path, limit, **kwargs)

    monkeypatch.setattr(sandboximages, "read_regular", read_hanging)
    seen: list[str] = []
    try:
        with walk_timeout_of(0.5):
            kept = runtime_sandbox_images(None, tmp_path, None, seen.append)
    finally:
        release.set()
    assert len(seen) == 1 and "no answer within" in seen[0] and hung in seen[0], seen
    assert "registry.example/pause:custom" in kept.refs()
    assert set(KNOWN_DEFAULTS) <= set(kept.refs())


@pytest.mark.parametrize(
    ("link", "warned"),
    [
        # a loop of links: containerd refuses to start (its error is no IsNotExist)
        ("config.toml", True),
        # a link to nothing: containerd runs on its defaults, as with no file (no warning)
        ("gone.toml", False),
    ],
)
def test_a_config_that_is_a_loop_of_links_is_a_warning_naming_it(
    tmp_path: Path, link: str, warned: bool
) -> None:
    (tmp_path / "etc/containerd").mkdir(parents=True)
    (tmp_path / "etc/containerd/config.toml").symlink_to(link)
    seen: list[str] = []
    kept = runtime_sandbox_images(None, tmp_path, None, seen.append)
    if warned:
        assert len(seen) == 1 and seen[0].startswith(
            "cannot read containerd config /etc/containerd/config.toml: "
            "Too many levels of symbolic links"
        ), seen
    else:
        assert seen == []
    assert set(KNOWN_DEFAULTS) <= set(kept.refs())  # the defaults stay protected


# -- CRI-O ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "name", "pinned"),
    [
        ("quay.io/crio/pause:latest", "quay.io/crio/pause:latest", True),  # exact
        ("quay.io/crio/pause:latest", "QUAY.IO/crio/pause:latest", True),  # (?i)
        ("quay.io/crio/pause:latest", "quay.io/crio/pause:latest2", False),  # anchored
        ("quay.io/crio/*", "quay.io/crio/pause:3", True),  # trailing glob
        ("quay.io/crio/*", "mirror/quay.io/crio/x:1", True),  # its expression is not anchored
        ("quay.io/crio/*", "quay.io/other:1", False),
        ("*pause*", "registry.k8s.io/PAUSE:3.9", True),  # keyword
        ("*pause*", "registry.k8s.io/coredns:1", False),
    ],
)
def test_crio_pinned_image_patterns(pattern: str, name: str, pinned: bool) -> None:
    """CRI-O's CompileRegexpsForPinnedImages / FilterPinnedImage."""
    assert crio_pattern_matches(pattern, name) is pinned


def test_crio_config_and_drop_ins_in_order(tmp_path: Path) -> None:
    """CRI-O reads crio.conf, then every file below crio.conf.d in lexical walk order
    (UpdateFromPath: any name, subdirectories too); a later value replaces an earlier one."""
    write(tmp_path, "/etc/crio/crio.conf", '[crio.image]\npause_image = "a.example/pause:1"\n')
    write(tmp_path, "/etc/crio/crio.conf.d/20-b.conf",
          '[crio.image]\npinned_images = ["quay.io/x/*", "*keep*"]\n')  # fmt: skip
    write(tmp_path, "/etc/crio/crio.conf.d/10-a.conf",
          '[crio.image]\npause_image = "b.example/pause:2"\n')  # fmt: skip
    write(tmp_path, "/etc/crio/crio.conf.d/sub/x.toml", "[crio]\n")
    paths = crio_config_paths(tmp_path)
    assert paths == [
        "/etc/crio/crio.conf", "/etc/crio/crio.conf.d/10-a.conf",
        "/etc/crio/crio.conf.d/20-b.conf", "/etc/crio/crio.conf.d/sub/x.toml",
    ]  # fmt: skip
    kept = runtime_sandbox_images(None, tmp_path, None, no_warning)
    assert kept.refs()[:4] == ["a.example/pause:1", "b.example/pause:2", "quay.io/x/*", "*keep*"]
    assert not set(KNOWN_DEFAULTS) & set(kept.refs())  # CRI-O names its pause image
    images = [
        Image("p1", ("a.example/pause:1",)), Image("p2", ("b.example/pause:2",)),
        Image("q", ("quay.io/x/y:1",)), Image("k", ("docker.io/library/keeper:1",)),
        Image("o", ("docker.io/library/other:1",)),
        Image("br", ("localhost/kubernetes/pause:0.1.0",)),  # Bottlerocket's
    ]  # fmt: skip
    ids = kept.protected_ids(images)
    assert set(ids) == {"p1", "p2", "q", "k", "br"}
    assert ids["q"] == "the pinned image quay.io/x/* (/etc/crio/crio.conf.d/20-b.conf: " \
                      "crio.image.pinned_images)"  # fmt: skip
    assert "crio.conf: crio.image.pause_image" in ids["p1"]


def test_crio_files_without_a_pause_image_leave_the_default() -> None:
    found, default = crio_images([ConfigFile("/etc/crio/crio.conf", {"crio": {"image": {}}})])
    assert found == [] and default is True


# -- cri-dockerd, Bottlerocket, the flag ------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "value"),
    [
        (["cri-dockerd", "--pod-infra-container-image=r/p:1"], "r/p:1"),
        (["cri-dockerd", "--pod-infra-container-image", "r/p:2"], "r/p:2"),
        (["cri-dockerd", "--pod-infra-container-image=a", "--pod-infra-container-image=b"], "b"),
        (["cri-dockerd", "--network-plugin=cni"], None),
    ],
)
def test_cri_dockerd_flag(argv: list[str], value: str | None) -> None:
    assert flag_value(argv, "--pod-infra-container-image") == value


def test_bottlerocket_pause_is_a_sandbox_image_everywhere(tmp_path: Path) -> None:
    kept = runtime_sandbox_images(None, tmp_path, None, no_warning)
    assert BOTTLEROCKET_PAUSE in kept.refs()
    ids = kept.protected_ids([Image("b", ("localhost/kubernetes/pause:0.1.0",)),
                              Image("n", ("localhost/kubernetes/other:1",))])  # fmt: skip
    assert list(ids) == ["b"]


def test_no_runtime_config_at_all_protects_the_defaults(tmp_path: Path) -> None:
    kept = runtime_sandbox_images(None, tmp_path, None, no_warning)
    assert set(KNOWN_DEFAULTS) <= set(kept.refs())
    assert kept.protected_ids([Image("p", ("registry.k8s.io/pause:3.10",))])["p"].startswith(
        "the sandbox image registry.k8s.io/pause:3.10 ("
    )


def test_runtime_config_names_the_file_and_a_missing_one_is_bad_input(tmp_path: Path) -> None:
    write(tmp_path, "/srv/ctd.toml", V3.format(image="mine.example/pause:9"))
    kept = runtime_sandbox_images(None, tmp_path, Path("/srv/ctd.toml"), no_warning)
    assert kept.refs()[0] == "mine.example/pause:9"
    assert not set(KNOWN_DEFAULTS) & set(kept.refs())
    with pytest.raises(BadInput, match=r'--runtime-config: "/srv/none\.toml" is not a file'):
        runtime_sandbox_images(None, tmp_path, Path("/srv/none.toml"), no_warning)


def test_a_normalized_name_matches_a_familiar_one() -> None:
    n = NamedImage("pause:3.9", "x")
    assert n.matches(["docker.io/library/pause:3.9"]) and not n.matches(["pause:3.8"])


# -- images that cannot be pulled again (kubegc's rule) ---------------------------------------

DIGEST = "sha256:" + "a" * 64


@pytest.mark.parametrize(
    ("image", "why"),
    [
        (Image("i", ("docker.io/library/app:1",), (f"docker.io/library/app@{DIGEST}",)), None),
        (Image("i", ("docker.io/library/app:1",)), "no repo digest"),
        (Image("i", ("localhost/app:1",), (f"localhost/app@{DIGEST}",)), "a localhost/ name"),
        (Image("i", ("localhost/kubernetes/pause:0.1",)), "a localhost/ name"),
        (Image("i", ("app:1",), (f"docker.io/library/import-2024-05-01@{DIGEST}",)),
         "imported from a tarball"),
        (Image("i", ("app:1",), (f"import-2024-05-01@{DIGEST}",)), "imported from a tarball"),
        (Image("i", (), (f"registry.k8s.io/pause@{DIGEST}",)), None),  # untagged, by digest
    ],
)  # fmt: skip
def test_unpullable_reason(image: Image, why: str | None) -> None:
    got = unpullable_reason(image)
    if why is None:
        assert got is None
    else:
        assert got is not None and got.startswith("cannot be pulled again") and why in got


def test_unpullable_images_are_kept_unless_allowed() -> None:
    images = [
        Image("u", ("docker.io/library/u:1",), size=10),
        Image("p", ("docker.io/library/p:1",), (f"docker.io/library/p@{DIGEST}",), size=5),
    ]
    records = {i.id: ImageRecord(0) for i in images}
    plan = plan_images(images, [], records, ImageGCPolicy(prune_unused=True, min_age=0), NOW,
                       began=0)  # fmt: skip
    assert [d.image.id for d in plan.remove] == ["p"]
    (kept,) = plan.kept
    assert kept.rule == KEEP_UNPULLABLE and kept.reason.startswith("cannot be pulled again")
    allowed = ImageGCPolicy(prune_unused=True, min_age=0, allow_unpullable=True)
    plan = plan_images(images, [], records, allowed, NOW, began=0)
    assert sorted(d.image.id for d in plan.remove) == ["p", "u"]


# -- end to end in-process: the plan and df agree ---------------------------------------------


def _runtime() -> MemoryCri:
    return MemoryCri(containers={}, sandboxes={}, images={
        "sha256:pause": Image("sha256:pause", ("mine.example/pause:9",),
                              (f"mine.example/pause@{DIGEST}",), size=100),
        "sha256:local": Image("sha256:local", ("docker.io/library/preloaded:1",), size=200),
        "sha256:pulled": Image("sha256:pulled", ("docker.io/library/app:1",),
                               (f"docker.io/library/app@{DIGEST}",), size=400),
    })  # fmt: skip


def test_gc_images_keeps_the_configured_sandbox_image_and_unpullable_ones(tmp_path: Path) -> None:
    host = tmp_path / "host"
    write(host, "/etc/containerd/config.toml", 'version = 3\nimports = ["conf.d/*.toml"]\n')
    write(host, "/etc/containerd/conf.d/pause.toml", V3.format(image="mine.example/pause:9"))
    base = ["--host-root", str(host), "--state-dir", str(tmp_path / "state"), "-o", "json",
            "gc", "images", "--prune-unused", "--minimum-image-ttl-duration", "0s"]  # fmt: skip
    cri = _runtime()
    with use_runtime(cri):
        code, out, err = run_cli([*base, "--yes"])
    assert code == 0, err
    doc = json.loads(out)
    assert [a["id"] for a in doc["actions"]] == ["sha256:pulled"]
    kept = {k["id"]: (k["rule"], k["reason"]) for k in doc["kept"]}
    assert kept["sha256:pause"] == (
        "protected",
        "the sandbox image mine.example/pause:9 "
        "(/etc/containerd/conf.d/pause.toml: plugins."
        "'io.containerd.cri.v1.images'.pinned_images.sandbox)",
    )
    assert kept["sha256:local"][0] == "unpullable"
    assert kept["sha256:local"][1].startswith("cannot be pulled again")
    assert doc["policy"]["allow_unpullable"] is False
    assert "sha256:local" in cri.images and "sha256:pause" in cri.images

    with use_runtime(cri):
        code, out, err = run_cli([*base, "--yes", "--allow-unpullable"])
    assert code == 0, err
    assert [a["id"] for a in json.loads(out)["actions"]] == ["sha256:local"]
    assert "sha256:pause" in cri.images and "sha256:local" not in cri.images


def test_table_shows_why_an_image_is_kept(tmp_path: Path) -> None:
    host = tmp_path / "host"
    write(host, "/etc/containerd/config.toml", V2.format(image="mine.example/pause:9"))
    with use_runtime(_runtime()):
        code, out, err = run_cli(["--host-root", str(host), "--state-dir", str(tmp_path / "s"),
                                  "gc", "images", "--prune-unused", "--dry-run",
                                  "--minimum-image-ttl-duration", "0s"])  # fmt: skip
    assert code == 0, err
    assert "cannot be pulled again" in out and "the sandbox image mine.example/pause:9" in out


def test_bad_runtime_config_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for value in ("relative.toml", "/nope.toml"):
        cri = _runtime()
        with use_runtime(cri):
            code, _, err = run_cli(["--host-root", str(tmp_path), "--runtime-config", value,
                                      "--state-dir", str(tmp_path / "s"), "gc", "images",
                                      "--prune-unused", "--yes"])  # fmt: skip
        assert code == 2 and err.count("\n") == 1 and value in err and "--runtime-config" in err
        assert cri.removed == []


@pytest.mark.parametrize(
    ("content", "why"),
    [
        ("version = 2\na = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
        ("version = 2\na = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n", "nested too deeply"),
        ("version = 2\n[" + ".".join(["t"] * 150) + "]\n", "nested too deeply"),
        ("version = 2\na = " + "[" * 99 + "]" * 99 + "\n", ""),  # 100 levels: read
        ("version = 2\n[plugins\n", "is not TOML"),
        ("version = 2\na = 1" + "0" * 5000 + "\n", "holds a number kubegc cannot read"),
    ],
)
def test_a_runtime_config_kubegc_cannot_read_is_one_line_and_exit_2(
    tmp_path: Path, content: str, why: str
) -> None:
    deep = "/etc/containerd/deep.toml"
    write(tmp_path, deep, content)
    cri = _runtime()
    with use_runtime(cri):
        code, _, err = run_cli(["--runtime-config", deep, "--host-root", str(tmp_path),
                                "--state-dir", str(tmp_path / "s"), "gc", "images",
                                "--prune-unused", "--yes"])  # fmt: skip
    if not why:
        assert code == 0, err
        return
    assert code == 2 and err.count("\n") == 1, err
    assert f"--runtime-config: containerd config {tmp_path}{deep}" in err and why in err
    assert cri.removed == []


def test_df_reclaimable_images_agree_with_the_plan() -> None:
    """df's reclaimable image bytes are what `gc images --prune-unused` removes: not the
    sandbox image, not an image that cannot be pulled again."""
    from kubegc_cli.commands.df import _image_lines
    from kubegc_cli.node.diskusage import RuntimeView

    rt = _runtime()
    view = RuntimeView(
        endpoint="unix:///memory.sock", containers=[], sandboxes=[],
        images=list(rt.images.values()), sandbox_images={"sha256:pause"}, image_fs=[],
        container_fs=[], layers={},
    )  # fmt: skip
    total, _, unused = _image_lines(view, NOW, "kubegc gc images --prune-unused")
    assert (total.bytes, total.reclaimable) == (700, 400)  # only the pulled image
    assert unused.reclaimable == 400 and "2 unused kept" in unused.note


def test_apply_keeps_an_image_the_runtime_config_names_since_the_plan(tmp_path: Path) -> None:
    """A saved plan removes an image; before `apply`, containerd's config comes to name it as
    the sandbox image: apply re-reads the config right before acting and skips it."""
    host = tmp_path / "host"
    write(host, "/etc/containerd/config.toml", "version = 3\n")
    plan = tmp_path / "plan.json"
    common = ["--host-root", str(host), "--state-dir", str(tmp_path / "state")]
    cri = _runtime()
    with use_runtime(cri):
        code, _, err = run_cli([*common, "gc", "images", "--prune-unused", "--dry-run",
                                "--minimum-image-ttl-duration", "0s", "--allow-unpullable",
                                "--plan-out", str(plan)])  # fmt: skip
        assert code == 0, err
        saved = {a["id"] for a in json.loads(plan.read_text())["actions"]}
        assert saved == {"sha256:pause", "sha256:local", "sha256:pulled"}
        write(host, "/etc/containerd/config.toml", V3.format(image="mine.example/pause:9"))
        code, out, err = run_cli([*common, "-o", "json", "apply", str(plan), "--yes",
                                  "--allow-unpullable"])  # fmt: skip
    assert code == 0, err
    results = {a["id"]: a["result"] for a in json.loads(out)["actions"]}
    assert results["sha256:pulled"] == results["sha256:local"] == "removed"
    assert results["sha256:pause"] == "skipped" and "sha256:pause" in cri.images


def test_residue_names_an_unused_image_that_cannot_be_pulled_again() -> None:
    from kubegc_cli.policy.residue import unused_images

    found = {f.target: f for f in unused_images(_runtime().images.values(), [], ["sha256:pause"])}
    assert set(found) == {"sha256:local", "sha256:pulled"}
    assert "cannot be pulled again" in found["sha256:local"].evidence
    assert found["sha256:local"].manual.endswith("--allow-unpullable")
    assert found["sha256:pulled"].manual == "kubegc gc images --prune-unused"


def test_a_running_cri_dockerd_names_its_pod_infra_image(tmp_path: Path) -> None:
    """cri-dockerd's `--pod-infra-container-image`, read from the running process's command
    line in /proc (only with --host-root /: a container does not see the host's processes)."""
    import signal
    import subprocess
    import time

    fake = tmp_path / "cri-dockerd"  # a script: the process's name is the file's
    fake.write_text("#!/bin/sh\nsleep 30\n")
    fake.chmod(0o755)
    proc = subprocess.Popen(
        [str(fake), "--pod-infra-container-image=dockerd.example/pause:7"],
        start_new_session=True,
    )
    try:
        found = None
        for _ in range(100):
            kept = runtime_sandbox_images(None, Path("/"), None, lambda _: None)
            found = next((n for n in kept.named if n.ref == "dockerd.example/pause:7"), None)
            if found is not None:
                break
            time.sleep(0.02)
        assert found is not None and found.source.startswith("cri-dockerd ")
        assert f"(pid {proc.pid})" in found.source
        elsewhere = runtime_sandbox_images(None, tmp_path, None, no_warning)
        assert "dockerd.example/pause:7" not in elsewhere.refs()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the script and its sleep
        proc.wait()


class _Status:
    def __init__(self, info: dict[str, str]) -> None:
        self.info = info

    def status_info(self) -> dict[str, str]:
        return self.info


def test_status_and_file_together(tmp_path: Path) -> None:
    """containerd 1.x names its sandbox image in Status and in its file: the kept reason names
    the file; a Status kubegc cannot read is `status_error`, the files still count."""
    write(tmp_path, "/etc/containerd/config.toml", V2.format(image="a.example/pause:1"))
    same = _Status({"config": json.dumps({"sandboxImage": "a.example/pause:1"})})
    kept = runtime_sandbox_images(same, tmp_path, None, no_warning)  # type: ignore[arg-type]
    assert kept.status_image == "a.example/pause:1" and not kept.status_error
    reason = kept.protected_ids([Image("p", ("a.example/pause:1",))])["p"]
    assert "/etc/containerd/config.toml: plugins." in reason
    garbled = _Status({"config": "{not json"})
    kept = runtime_sandbox_images(garbled, tmp_path, None, no_warning)  # type: ignore[arg-type]
    assert kept.status_error and kept.status_image is None
    assert kept.refs()[0] == "a.example/pause:1"


def test_runtime_config_from_kubegc_config_file(tmp_path: Path) -> None:
    """`runtime-config` is a key of kubegc's config file, as every global option."""
    host = tmp_path / "host"
    write(host, "/srv/ctd.toml", V3.format(image="mine.example/pause:9"))
    cfg = tmp_path / "kubegc.yaml"
    cfg.write_text("runtime-config: /srv/ctd.toml\n")
    cri = _runtime()
    with use_runtime(cri):
        code, out, err = run_cli(["--config", str(cfg), "--host-root", str(host), "--state-dir",
                                  str(tmp_path / "s"), "-o", "json", "gc", "images",
                                  "--prune-unused", "--minimum-image-ttl-duration", "0s",
                                  "--dry-run"])  # fmt: skip
    assert code == 0, err
    kept = {k["id"]: k["reason"] for k in json.loads(out)["kept"]}
    assert "/srv/ctd.toml: plugins." in kept["sha256:pause"]


def test_said_is_what_the_runtimes_name_themselves(tmp_path: Path) -> None:
    """Assumed defaults and Bottlerocket's pattern are no runtime's word; a config's is."""
    assert runtime_sandbox_images(None, tmp_path, None, no_warning).said() == []
    write(tmp_path, "/etc/containerd/config.toml", V2.format(image="mine.example/pause:9"))
    assert runtime_sandbox_images(None, tmp_path, None, no_warning).said() == [
        ("mine.example/pause:9",
         "/etc/containerd/config.toml: plugins.'io.containerd.grpc.v1.cri'.sandbox_image"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("kubelet_image", "warned"),
    [("registry.k8s.io/pause:3.9", True), ("mine.example/pause:9", False)],
)
def test_gc_images_warns_of_a_kubelet_pod_infra_image_the_runtime_does_not_use(
    tmp_path: Path, kubelet_image: str, warned: bool
) -> None:
    """The runtime's config names mine.example/pause:9; kubeadm's flags file gives the
    kubelet another: the plan's notes (table and JSON) say so, whether the runtime pins it,
    and what to set. The same image in both: no such note."""
    host = tmp_path / "host"
    write(host, "/etc/containerd/config.toml", V2.format(image="mine.example/pause:9"))
    write(host, "/var/lib/kubelet/kubeadm-flags.env",
          f'KUBELET_KUBEADM_ARGS="--pod-infra-container-image={kubelet_image}"\n')  # fmt: skip
    base = ["--host-root", str(host), "--state-dir", str(tmp_path / "s"), "gc", "images",
            "--dry-run"]  # fmt: skip
    with use_runtime(_runtime()):
        code, out, err = run_cli(["-o", "json", *base])
    assert code == 0, err
    notes = [n for n in json.loads(out)["notes"] if "--pod-infra-container-image" in n]
    if not warned:
        assert notes == []
        return
    [note] = notes
    assert note.startswith(
        f"the kubelet's --pod-infra-container-image {kubelet_image} "
        "(/var/lib/kubelet/kubeadm-flags.env: KUBELET_KUBEADM_ARGS) is not the runtime's "
        "sandbox image mine.example/pause:9 (/etc/containerd/config.toml: "
    ), note
    assert "the runtime does not pin mine.example/pause:9" in note
    assert note.endswith("Give the kubelet --pod-infra-container-image mine.example/pause:9, "
                         "or drop the flag (kubelet 1.35 refuses it) on a runtime that pins "
                         "its sandbox image")  # fmt: skip
    with use_runtime(_runtime()):
        code, table, err = run_cli(base)
    assert code == 0 and "is not the runtime's sandbox image" in table, err


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (["containerd"], None),
        (["containerd", "-c", "/k3s/config.toml"], "/k3s/config.toml"),
        (["containerd", "--config=/a.toml"], "/a.toml"),
        (["containerd", "--config", "/a.toml", "-c=/b.toml"], "/b.toml"),  # the last wins
        (["containerd", "-config", "/a.toml"], "/a.toml"),  # Go's flag: one dash or two
        (["containerd", "--log-level", "debug", "--address", "/s.sock", "-c", "x.toml"], "x.toml"),
        (["containerd", "---c", "/a.toml"], None),
        (["containerd", "--", "-c", "/a.toml"], None),
        (["containerd", "--cc", "/a.toml"], None),
    ],
)
def test_containerds_config_flag_is_read_as_go_reads_it(argv: list[str], want: str | None) -> None:
    assert go_flag_value(argv, CONTAINERD_CONFIG_FLAGS) == want


def test_the_containerd_serving_a_socket_is_found_by_its_descriptors(tmp_path: Path) -> None:
    """`socket_holders` over a procfs fixture: the socket's inode from net/unix, matched
    against each process's fd links; a process without that socket, or whose fds cannot be
    listed, is not one."""
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "unix").write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 4242 /run/k3s/containerd.sock\n"
        "0000000000000000: 00000002 00000000 00010000 0001 01 4343 /run/other.sock\n"
    )
    for pid, inode in ((100, 4343), (200, 4242)):
        (proc / str(pid) / "fd").mkdir(parents=True)
        (proc / str(pid) / "fd" / "0").symlink_to("/dev/null")
        (proc / str(pid) / "fd" / "7").symlink_to(f"socket:[{inode}]")
    assert socket_holders("/run/k3s/containerd.sock", [100, 200, 300], str(proc)) == [200]
    assert socket_holders("/run/other.sock", [100, 200], str(proc)) == [100]
    assert socket_holders("/run/none.sock", [100, 200], str(proc)) == []


def test_the_serving_containerd_is_found_through_a_link_and_only_if_it_runs_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An endpoint named through a link (`/var/run` → `/run`) finds the containerd bound at
    the path the link resolves to; a process named containerd that another user started is
    no containerd of the node's, whatever socket it holds (its config would name what the
    node's runtime keeps)."""
    from kubegc_cli.node.host import processes

    real = tmp_path / "run"
    real.mkdir()
    (tmp_path / "var-run").symlink_to(real)
    proc = tmp_path / "proc"
    (proc / "net").mkdir(parents=True)
    (proc / "net" / "unix").write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        f"0000000000000000: 00000002 00000000 00010000 0001 01 4242 {real}/containerd.sock\n"
    )
    (proc / "200" / "fd").mkdir(parents=True)
    (proc / "200" / "fd" / "7").symlink_to("socket:[4242]")
    linked = str(tmp_path / "var-run" / "containerd.sock")
    assert socket_holders(linked, [200], str(proc)) == [200]

    table = [(7, "containerd", ["containerd", "-c", "/tmp/theirs.toml"]),
             (90, "containerd", ["containerd", "-c", "/etc/k3s.toml"])]  # fmt: skip
    monkeypatch.setattr(processes, "process_table", lambda: iter(table))
    monkeypatch.setattr(processes, "node_process", lambda pid: pid == 90)
    assert processes.find_processes("/", "containerd") == [(90, table[1][2])]
