"""Images a runtime needs and images that cannot come back, against a real containerd: the
sandbox image named only in a containerd config file (with imports, or the file the running
containerd was started with) stays; an image loaded
from a tarball (no repo digest) or under a `localhost/` name stays unless --allow-unpullable."""

from __future__ import annotations

import json
from pathlib import Path

from tests.node.localnode import PAUSE_IMAGE, LocalNode, containerd_version
from tests.node.test_gc_containers import kubegc


def _config(tmp_path: Path, image: str) -> Path:
    """A containerd config that names `image` as the sandbox image in an imported file, in
    the form the containerd on PATH reads: version 3's `pinned_images.sandbox` for 2.x,
    version 2's `sandbox_image` for 1.x."""
    root = tmp_path / "containerd" / "config.toml"
    (root.parent / "conf.d").mkdir(parents=True)
    if containerd_version() >= (2, 0):
        version = 3
        body = f'[plugins."io.containerd.cri.v1.images".pinned_images]\nsandbox = "{image}"\n'
    else:
        version = 2
        body = f'[plugins."io.containerd.grpc.v1.cri"]\nsandbox_image = "{image}"\n'
    root.write_text(f'version = {version}\nimports = ["conf.d/*.toml"]\n')
    (root.parent / "conf.d" / "50-pause.toml").write_text(f"version = {version}\n{body}")
    return root


def _gc(node: LocalNode, tmp_path: Path, *args: str) -> dict:
    res = kubegc(node, tmp_path, "gc", "images", "--prune-unused",
                 "--minimum-image-ttl-duration", "0s", "-o", "json", *args)  # fmt: skip
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_the_sandbox_image_a_containerd_config_file_names_is_kept(tmp_path: Path) -> None:
    with LocalNode(tmp_path / "node") as node:
        pause = node.import_image("registry.example/kubegc/pause:1", seed="pause")
        other = node.import_image("registry.example/kubegc/other:1", seed="other")
        config = _config(tmp_path, "registry.example/kubegc/pause:1")

        doc = _gc(node, tmp_path, "--runtime-config", str(config), "--yes")
        removed = {a["id"]: a["result"] for a in doc["actions"]}
        assert removed[other] == "removed" and pause not in removed
        kept = {k["id"]: k for k in doc["kept"]}
        assert kept[pause]["rule"] == "protected"
        assert kept[pause]["reason"].startswith("the sandbox image registry.example/kubegc/pause:1")
        assert str(config.parent / "conf.d" / "50-pause.toml") in kept[pause]["reason"]
        left = {i.id for i in node.list_images()}
        assert pause in left and other not in left

        # the same run without the file: nothing names it, and it goes
        doc = _gc(node, tmp_path, "--yes")
        assert {a["id"]: a["result"] for a in doc["actions"]}.get(pause) == "removed"


OWN_PAUSE = "registry.example/kubegc/own-pause:1"


class _OwnPauseNode(LocalNode):
    """A node whose containerd (started with `--config <workdir>/config.toml`, not the
    default path) names `OWN_PAUSE` as its sandbox image, in that file alone."""

    def _containerd_config(self) -> str:
        mine = super()._containerd_config()
        line = f"sandbox_image = {json.dumps(PAUSE_IMAGE)}"
        assert line in mine
        return mine.replace(line, f"sandbox_image = {json.dumps(OWN_PAUSE)}")


def test_the_sandbox_image_of_the_running_containerds_own_config_is_kept(tmp_path: Path) -> None:
    with _OwnPauseNode(tmp_path / "node") as node:
        pause = node.import_image(OWN_PAUSE, seed="own-pause")

        doc = _gc(node, tmp_path, "--dry-run")
        assert pause not in {a["id"] for a in doc["actions"]}  # (containerd 2.x pins it too)

        if containerd_version() < (1, 7):
            return  # (containerd 1.6's CRI reports no pins: images pin is refused)
        pattern = "registry.example/kubegc/own-pause:*"
        pin = kubegc(node, tmp_path, "--lock-timeout", "2m", "images", "pin", pattern, "--yes")
        assert pin.returncode == 0, pin.stderr
        dry = kubegc(node, tmp_path, "images", "unpin", pattern, "--dry-run", "-o", "json")
        assert dry.returncode == 0, dry.stderr
        plan = json.loads(dry.stdout)
        assert plan["actions"] == []  # the runtime pinned it itself: kubegc's pin added nothing
        (held,) = [k for k in plan["kept"] if k["id"] == pause]
        # kept as the runtime's own sandbox image, named from the running containerd's config
        assert held["reason"].startswith(f"the sandbox image {OWN_PAUSE}"), held
        assert "kubegc never unpins it" in held["reason"]


def test_images_that_cannot_be_pulled_again_stay_unless_allowed(tmp_path: Path) -> None:
    with LocalNode(tmp_path / "node") as node:
        loaded = node.import_image("docker.io/library/preloaded:1", seed="l", pullable=False)
        local = node.import_image("localhost/kubegc/built:1", seed="b")
        pulled = node.import_image("docker.io/library/pulled:1", seed="p")
        by_id = {i.id: i for i in node.list_images()}
        assert not by_id[loaded].repo_digests  # what CRI says of an image from a tarball
        assert by_id[pulled].repo_digests and by_id[local].repo_digests

        doc = _gc(node, tmp_path, "--yes")
        removed = {a["id"]: a["result"] for a in doc["actions"]}
        assert removed.get(pulled) == "removed" and loaded not in removed and local not in removed
        kept = {k["id"]: k for k in doc["kept"]}
        assert kept[loaded]["rule"] == kept[local]["rule"] == "unpullable"
        assert "no repo digest" in kept[loaded]["reason"]
        assert "a localhost/ name" in kept[local]["reason"]
        table = kubegc(node, tmp_path, "gc", "images", "--prune-unused", "--dry-run",
                       "--minimum-image-ttl-duration", "0s")  # fmt: skip
        assert table.returncode == 0 and "cannot be pulled again" in table.stdout
        assert {loaded, local} <= {i.id for i in node.list_images()}

        doc = _gc(node, tmp_path, "--yes", "--allow-unpullable")
        removed = {a["id"]: a["result"] for a in doc["actions"]}
        assert removed.get(loaded) == removed.get(local) == "removed"
        assert not {loaded, local} & {i.id for i in node.list_images()}
