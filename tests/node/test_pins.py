"""`kubegc images pin|unpin` against a real containerd (a node of its own): the label goes
through containerd's images API, CRI reports the pin, and gc images keeps the image saying
why; containerd 1.6, whose CRI reports no pins, is refused with nothing changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.pins import OWN_PIN_LABEL, PINNED_LABEL
from kubegc_cli.core.units import rfc3339_to_ns
from kubegc_cli.node.containerd.client import ContainerdImages
from kubegc_cli.node.cri.client import CriClient
from kubegc_cli.node.cri.endpoint import Endpoint
from tests.node.localnode import PAUSE_IMAGE, LocalNode, containerd_version
from tests.node.racing import kubegc_in_process
from tests.node.test_gc_containers import kubegc

# (--lock-timeout: the run waits out other runs on this machine that share its node lock)
PIN = ("--lock-timeout", "2m", "images", "pin", "docker.io/library/pin-me:*")
UNPIN = ("--lock-timeout", "2m", "images", "unpin", "docker.io/library/pin-me:*")


def _pinned(node: LocalNode, image_id: str, want: bool) -> bool:
    """CRI's `pinned` of the image, waited for up to 10 s to become `want` (containerd's CRI
    follows its image events)."""
    deadline = time.monotonic() + 10
    with CriClient(Endpoint(str(node.socket), "test")) as cri:
        while True:
            got = next(i.pinned for i in cri.list_images() if i.id == image_id)
            if got == want or time.monotonic() > deadline:
                return got
            time.sleep(0.1)


def _labels(node: LocalNode, names: list[str]) -> dict[str, dict[str, str]]:
    with ContainerdImages(Endpoint(str(node.socket), "test")) as ctd:
        return ctd.records(names)


def test_pin_then_unpin_through_containerds_images_api(tmp_path: Path) -> None:
    with LocalNode(tmp_path / "node") as node:
        image = node.import_image("docker.io/library/pin-me:1", pad_bytes=2048, seed="pin")
        other = node.import_image("docker.io/library/leave-me:1", pad_bytes=1024, seed="lv")
        names = ["docker.io/library/pin-me:1", image]
        gc = ("gc", "images", "--prune-unused", "--minimum-image-ttl-duration", "0s",
              "--dry-run", "-o", "json")  # fmt: skip

        if containerd_version() < (1, 7):
            run = kubegc(node, tmp_path, *PIN, "--yes")
            assert run.returncode == 2, run.stderr
            assert "containerd 1.7 on" in run.stderr and run.stdout == ""
            assert all(PINNED_LABEL not in labels for labels in _labels(node, names).values())
            return

        dry = kubegc(node, tmp_path, "images", "pin", "docker.io/library/pin-me:*",
                     "--dry-run", "-o", "json")  # fmt: skip
        assert dry.returncode == 0, dry.stderr
        assert [a["id"] for a in json.loads(dry.stdout)["actions"]] == [image]
        assert not _pinned(node, image, False)
        assert all(PINNED_LABEL not in labels for labels in _labels(node, names).values())

        run = kubegc(node, tmp_path, *PIN, "--yes", "-o", "json")
        assert run.returncode == 0, run.stderr
        (done,) = json.loads(run.stdout)["actions"]
        assert done["result"] == "pinned" and "docker.io/library/pin-me:1" in done["names"]
        assert _pinned(node, image, True)
        assert not _pinned(node, other, False)
        labelled = _labels(node, names)
        assert labelled and all(v.get(PINNED_LABEL) == "pinned" for v in labelled.values())
        assert all(rfc3339_to_ns(v[OWN_PIN_LABEL]) > 0 for v in labelled.values())

        plan = json.loads(kubegc(node, tmp_path, *gc).stdout)
        kept = {k["id"]: (k["rule"], k["reason"]) for k in plan["kept"]}
        when = min(v[OWN_PIN_LABEL] for v in labelled.values())
        assert kept[image] == ("pinned", f"pinned by kubegc (images pin, {when})")
        # the runtime's own pins (containerd 2.x's of its sandbox image) keep their wording
        runtime_pins = [i.id for i in node.list_images() if i.pinned and i.id != image]
        assert all(kept[i] == ("pinned", "pinned by the runtime") for i in runtime_pins)
        assert other in {a["id"] for a in plan["actions"]}

        again = kubegc(node, tmp_path, *PIN, "--yes", "-o", "json")
        doc = json.loads(again.stdout)
        assert doc["actions"] == [] and doc["kept"][0]["reason"] == "already pinned"

        run = kubegc(node, tmp_path, *UNPIN, "--yes")
        assert run.returncode == 0, run.stderr
        assert "1 image(s) unpinned" in run.stdout
        assert not _pinned(node, image, False)
        assert all(PINNED_LABEL not in v and OWN_PIN_LABEL not in v
                   for v in _labels(node, names).values())  # fmt: skip
        history = json.loads(kubegc(node, tmp_path, "history", "-o", "json").stdout)["items"]
        runs = {r["command"]: r["by_result"] for r in history}
        assert runs["images pin"] == {"pinned": 1} and runs["images unpin"] == {"unpinned": 1}
        # a pin frees nothing and says so: totals of 0 expected, none measured, not "?"
        assert {r["command"]: r["bytes_expected"] for r in history if "pin" in r["command"]} == {
            "images pin": 0, "images unpin": 0}  # fmt: skip
        plan = json.loads(kubegc(node, tmp_path, *gc).stdout)
        assert image in {a["id"] for a in plan["actions"]}
        assert any("pin-me" in t for i in node.list_images() for t in i.repo_tags)  # a dry run


def _ctr(node: LocalNode, *args: str) -> str:
    """containerd's own tool on the test node, namespace k8s.io, as a person would run it:
    its output."""
    ctr = shutil.which("ctr") or "ctr"
    command = [ctr, "-a", str(node.socket), "-n", "k8s.io", *args]
    return subprocess.run(command, check=True, capture_output=True, text=True).stdout


def _ctr_pin(node: LocalNode, name: str, value: str = "pinned") -> None:
    """Pin (or, `value` "", unpin) the record `name` with containerd's own tool, as a person
    would, not kubegc."""
    _ctr(node, "images", "label", name, f"{PINNED_LABEL}={value}")


def test_unpin_undoes_only_kubegcs_own_pins(tmp_path: Path) -> None:
    """`unpin '*'` removes kubegc's pin (both labels) and keeps a pin made with `ctr`, and the
    runtime's, saying why; a second run finds nothing more to undo."""
    if containerd_version() < (1, 7):
        pytest.skip("containerd before 1.7 refuses pin (test_pin_then_unpin_... covers it)")
    with LocalNode(tmp_path / "node") as node:
        ours = node.import_image("docker.io/library/pin-me:1", pad_bytes=1024, seed="own")
        theirs = node.import_image("docker.io/library/hand-pinned:1", pad_bytes=1024,
                                   seed="hand")  # fmt: skip
        _ctr_pin(node, "docker.io/library/hand-pinned:1")
        assert _pinned(node, theirs, True)
        run = kubegc(node, tmp_path, *PIN, "--yes")
        assert run.returncode == 0, run.stderr
        assert _pinned(node, ours, True)

        unpin = ("--lock-timeout", "2m", "images", "unpin", "*")
        dry = json.loads(kubegc(node, tmp_path, *unpin, "--dry-run", "-o", "json").stdout)
        assert [a["id"] for a in dry["actions"]] == [ours]
        kept = {k["id"]: k["reason"] for k in dry["kept"]}
        assert "not by kubegc" in kept[theirs] and "ctr -n k8s.io images label" in kept[theirs]
        runtime_pins = [i.id for i in node.list_images() if i.pinned and i.id not in (ours, theirs)]
        # (containerd 2.x pins its sandbox image: kept as the runtime's own, never unpinned)
        assert all("never unpins" in kept[i] for i in runtime_pins), kept

        run = kubegc(node, tmp_path, *unpin, "--yes", "-o", "json")
        assert run.returncode == 0, run.stderr
        doc = json.loads(run.stdout)
        assert [(a["id"], a["result"]) for a in doc["actions"]] == [(ours, "unpinned")]
        assert not _pinned(node, ours, False)
        assert _pinned(node, theirs, True)
        assert all(_pinned(node, i, True) for i in runtime_pins)
        hand = _labels(node, ["docker.io/library/hand-pinned:1"])
        assert hand["docker.io/library/hand-pinned:1"].get(PINNED_LABEL) == "pinned"
        assert all(OWN_PIN_LABEL not in v for v in _labels(node, ["docker.io/library/pin-me:1",
                                                                   ours]).values())  # fmt: skip

        again = json.loads(kubegc(node, tmp_path, *unpin, "--yes", "-o", "json").stdout)
        assert again["actions"] == [] and theirs in {k["id"] for k in again["kept"]}
        _ctr_pin(node, "docker.io/library/hand-pinned:1", "")  # the way the reason names
        assert not _pinned(node, theirs, False)


def test_unpin_keeps_a_pin_whose_own_label_kubegc_did_not_write(tmp_path: Path) -> None:
    """A record pinned by hand with `io.kubegc.pinned` set to a value kubegc never writes is
    not kubegc's pin: unpin keeps it, says why, and leaves both labels."""
    if containerd_version() < (1, 7):
        pytest.skip("containerd before 1.7 refuses pin (test_pin_then_unpin_... covers it)")
    with LocalNode(tmp_path / "node") as node:
        planted = node.import_image("docker.io/library/planted:1", pad_bytes=1024, seed="pl")
        name = "docker.io/library/planted:1"
        _ctr(node, "images", "label", name, f"{PINNED_LABEL}=pinned", f"{OWN_PIN_LABEL}=yes")
        assert _pinned(node, planted, True)
        unpin = ("--lock-timeout", "2m", "images", "unpin", "docker.io/library/planted:*")
        run = kubegc(node, tmp_path, *unpin, "--yes", "-o", "json")
        assert run.returncode == 0, run.stderr
        doc = json.loads(run.stdout)
        assert doc["actions"] == []
        [kept] = doc["kept"]
        assert kept["id"] == planted and "'yes'" in kept["reason"], kept
        assert "not kubegc's pin" in kept["reason"]
        labels = _labels(node, [name])[name]
        assert labels[PINNED_LABEL] == "pinned" and labels[OWN_PIN_LABEL] == "yes"
        assert _pinned(node, planted, True)


def test_unpin_reports_an_image_another_pin_still_holds(tmp_path: Path) -> None:
    """After unpin, the runtime is asked again: an image whose other tag a person pinned by
    hand is still pinned (CRI `ImageStatus`), so its row is `still-pinned`, PINNED yes,
    naming the record that pins it; an image nothing else pins is `unpinned`, PINNED no."""
    if containerd_version() < (1, 7):
        pytest.skip("containerd before 1.7 refuses pin (test_pin_then_unpin_... covers it)")
    with LocalNode(tmp_path / "node") as node:
        held = node.import_image("docker.io/library/pin-me:1", pad_bytes=1024, seed="held")
        free = node.import_image("docker.io/library/pin-me:2", pad_bytes=1024, seed="free")
        run = kubegc(node, tmp_path, "-q", *PIN, "--yes")  # -q: the IDs of the images pinned
        assert (run.returncode, run.stdout.split()) == (0, sorted([held, free])), run.stderr
        assert _pinned(node, held, True) and _pinned(node, free, True)
        hand = "docker.io/library/hand-tag:1"
        _ctr(node, "images", "tag", "docker.io/library/pin-me:1", hand)
        _ctr(node, "images", "label", hand, f"{PINNED_LABEL}=pinned", f"{OWN_PIN_LABEL}=")
        assert OWN_PIN_LABEL not in _labels(node, [hand])[hand]

        run = kubegc(node, tmp_path, *UNPIN, "--yes", "-o", "json")
        assert run.returncode == 0, run.stderr
        doc = json.loads(run.stdout)
        rows = {a["id"]: a for a in doc["actions"]}
        assert rows[free]["result"] == "unpinned" and rows[free]["pinned_after"] is False
        assert rows[held]["result"] == "still-pinned", rows[held]
        assert rows[held]["pinned_after"] is True
        assert hand in rows[held]["error"] and "not set by kubegc" in rows[held]["error"]
        assert doc["summary"]["unpinned"] == 1 and doc["summary"]["still-pinned"] == 1
        assert hand in run.stderr  # the warning says who still pins it
        assert _pinned(node, held, True) and not _pinned(node, free, False)
        assert _labels(node, [hand])[hand].get(PINNED_LABEL) == "pinned"


def test_unpin_never_plans_the_runtimes_sandbox_image(tmp_path: Path) -> None:
    """The sandbox image the node's containerd is configured with carries kubegc's own label
    (as `images pin` would have set it): unpin keeps it, saying it is the runtime's sandbox
    image, and leaves its labels; containerd still reports it pinned."""
    if containerd_version() < (1, 7):
        pytest.skip("containerd before 1.7 refuses pin (test_pin_then_unpin_... covers it)")
    with LocalNode(tmp_path / "node") as node:
        pause = next(i.id for i in node.list_images() if PAUSE_IMAGE in i.repo_tags)
        with ContainerdImages(Endpoint(str(node.socket), "test")) as ctd:
            own = {PINNED_LABEL: "pinned", OWN_PIN_LABEL: "2026-01-01T00:00:00Z"}
            assert ctd.set_labels(PAUSE_IMAGE, own) == ""
        assert _pinned(node, pause, True)
        unpin = ("--lock-timeout", "2m", "images", "unpin", "registry.k8s.io/pause:*")
        for mode in ("--dry-run", "--yes"):
            run = kubegc(node, tmp_path, *unpin, mode, "-o", "json")
            assert run.returncode == 0, run.stderr
            doc = json.loads(run.stdout)
            assert doc["actions"] == [], doc["actions"]
            (kept,) = doc["kept"]
            assert kept["id"] == pause and kept["reason"].startswith("the sandbox image")
            assert PAUSE_IMAGE in kept["reason"] and "never unpins" in kept["reason"]
        labels = _labels(node, [PAUSE_IMAGE])[PAUSE_IMAGE]
        assert labels[PINNED_LABEL] == "pinned" and labels[OWN_PIN_LABEL] == own[OWN_PIN_LABEL]
        assert _pinned(node, pause, True)
        # a config file of the runtime that cannot be read may name a sandbox image kubegc
        # cannot see: unpin changes nothing (exit 3), whatever the patterns
        fifo = tmp_path / "imported.toml"
        os.mkfifo(fifo)
        cfg = tmp_path / "config.toml"
        cfg.write_text(f'version = 2\nimports = ["{fifo}"]\n[plugins."io.containerd.grpc.v1.cri"]'
                       f'\nsandbox_image = "{PAUSE_IMAGE}"\n')  # fmt: skip
        run = kubegc(node, tmp_path, "--runtime-config", str(cfg), *unpin[:-1], "*", "--yes")
        assert run.returncode == 3 and "nothing was changed" in run.stderr, run.stderr
        assert str(fifo) in run.stderr
        assert _labels(node, [PAUSE_IMAGE])[PAUSE_IMAGE] == labels


def test_unpin_leaves_a_record_another_client_changed_while_it_ran(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between unpin's plan under the lock and its write, another client removes the tag
    kubegc pinned, tags another image under that name and pins it by hand: at the moment of
    the write that record is no longer kubegc's pin, so it keeps its pin and the row says it
    changed since the plan; the image's other records, still kubegc's, are unpinned.

    The race is injected by a stand-in around `ContainerdImages.set_labels` that runs the
    other client's `ctr` commands once, before the first write; containerd is real."""
    if containerd_version() < (1, 7):
        pytest.skip("containerd before 1.7 refuses pin (test_pin_then_unpin_... covers it)")
    with LocalNode(tmp_path / "node") as node:
        ours = node.import_image("docker.io/library/race:1", pad_bytes=1024, seed="race")
        other = node.import_image("docker.io/library/race-other:1", pad_bytes=1024, seed="ro")
        pin = ("--lock-timeout", "2m", "images", "pin", "docker.io/library/race:*")
        assert kubegc(node, tmp_path, *pin, "--yes").returncode == 0
        assert _pinned(node, ours, True) and not _pinned(node, other, False)

        real = ContainerdImages.set_labels
        fired: list[str] = []

        def racing_set_labels(self: ContainerdImages, name: str, *a: Any, **k: Any) -> str:
            """Stand-in: the other client's change, once, right before the first write."""
            if not fired:
                fired.append(name)
                _ctr(node, "images", "rm", "docker.io/library/race:1")
                _ctr(node, "images", "tag", other, "docker.io/library/race:1")
                _ctr(node, "images", "label", "docker.io/library/race:1",
                     f"{PINNED_LABEL}=pinned")  # fmt: skip
            return real(self, name, *a, **k)

        monkeypatch.setattr(ContainerdImages, "set_labels", racing_set_labels)
        code, out, err = kubegc_in_process(
            node, tmp_path, "--lock-timeout", "2m", "images", "unpin",
            "docker.io/library/race:*", "--yes", "-o", "json",
        )  # fmt: skip
        assert code == 0, err
        assert fired == ["docker.io/library/race:1"]
        (row,) = json.loads(out)["actions"]
        assert row["id"] == ours and "changed since the plan" in row["error"], row
        assert "docker.io/library/race:1" in row["error"]
        assert "docker.io/library/race:1" not in row["names"] and ours in row["names"]
        assert "changed since the plan" in err
        hand = _labels(node, ["docker.io/library/race:1"])["docker.io/library/race:1"]
        assert hand.get(PINNED_LABEL) == "pinned", hand  # the other client's pin stays
        assert _pinned(node, other, True)
        assert OWN_PIN_LABEL not in _labels(node, [ours])[ours]


def test_gc_images_reads_the_kubelets_pull_record_of_a_real_image(tmp_path: Path) -> None:
    """The record the kubelet would write for an image the runtime lists (its file named by
    the SHA-256 of the image ID) gives the image's credentials; an image without one shows
    none; the registry comes from the names the runtime lists."""
    from kubegc_cli.node.host.pullrecords import record_file_name

    with LocalNode(tmp_path / "node") as node:
        image = node.import_image("quay.io/acme/secret-app:1", pad_bytes=1024, seed="sec")
        other = node.import_image("docker.io/library/no-record:1", pad_bytes=1024, seed="nr")
        kubelet = tmp_path / "kubelet"
        pulled = kubelet / "image_manager" / "pulled"
        pulled.mkdir(parents=True)
        (pulled / record_file_name(image)).write_text(json.dumps({
            "kind": "ImagePulledRecord", "apiVersion": "kubelet.config.k8s.io/v1alpha1",
            "lastUpdatedTime": "2026-01-01T00:00:00Z", "imageRef": image,
            "credentialMapping": {"quay.io/acme/secret-app": {"kubernetesSecrets": [
                {"uid": "u", "namespace": "ns", "name": "pull", "credentialHash": "h"}]}},
        }))  # fmt: skip
        run = kubegc(node, tmp_path, "gc", "images", "--dry-run", "-o", "json",
                     "--root-dir", str(kubelet))  # fmt: skip
        assert run.returncode == 0, run.stderr
        doc = json.loads(run.stdout)
        risk = {a["id"]: a["repull"] for a in [*doc["actions"], *doc["kept"]]}
        assert risk[image] == {"digest": True, "registry": "quay.io", "pull_record": "recorded",
                               "credentials": ["secret"]}  # fmt: skip
        assert risk[other]["pull_record"] == "none" and risk[other]["registry"] == "docker.io"


_KILLED_AFTER_THE_FIRST_WRITE = """
import os, runpy, signal, sys
from kubegc_cli.node.containerd import client
real = client.ContainerdImages.set_labels
def set_labels(self, *args, **kwargs):  # the write, then SIGKILL: a fault on demand
    real(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
client.ContainerdImages.set_labels = set_labels
sys.argv = ["kubegc", *sys.argv[1:]]
runpy.run_module("kubegc_cli", run_name="__main__")
"""


def test_an_unpin_killed_after_a_write_leaves_its_row_in_flight(tmp_path: Path) -> None:
    """SIGKILL right after unpin's first label write (a stand-in around `set_labels` kills
    the process; containerd is real): `history` holds that image's row as `in-flight` — the
    row is written before the first write — so no change to the runtime goes unrecorded."""
    if containerd_version() < (1, 7):
        pytest.skip("containerd before 1.7 refuses pin (test_pin_then_unpin_... covers it)")
    with LocalNode(tmp_path / "node") as node:
        image = node.import_image("docker.io/library/pin-me:1", pad_bytes=2048, seed="kill")
        assert kubegc(node, tmp_path, *PIN, "--yes").returncode == 0
        argv = ["-r", node.endpoint, "--kubelet-config", str(node.kubelet_config),
                "--state-dir", str(tmp_path / "state"), *UNPIN, "--yes"]  # fmt: skip
        import sys

        killed = subprocess.run([sys.executable, "-c", _KILLED_AFTER_THE_FIRST_WRITE, *argv],
                                capture_output=True, text=True, timeout=120)  # fmt: skip
        assert killed.returncode == -9, killed.stderr
        runs = json.loads(kubegc(node, tmp_path, "history", "-o", "json").stdout)["items"]
        [unpin] = [r for r in runs if r["command"] == "images unpin"]
        assert unpin["by_result"] == {"in-flight": 1}, unpin
        assert [a["id"] for a in unpin["actions"]] == [image]
