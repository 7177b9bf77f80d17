"""`kubegc residue scan` / `residue clean` end to end against a real containerd.

The runtime is the private containerd shared by the node tests (`LocalNode`); the kubelet
root is a fixture tree under the test's tmp directory (`--root-dir`), with `--host-root /`
so that the runtime's absolute paths (log paths, the socket) and this process's mount table
mean the same as on a node. Mounts are real tmpfs mounts. Every `residue clean --yes` names
the finding types it may act on (`--kind`), so a run never touches this machine's own
`/var/log/containers` or `/run/netns`.

A CNI `host-local` network with real network namespaces is not exercised: this machine has
no CNI plugins (`/opt/cni/bin` and `/usr/lib/cni`, where the node's containerd looks, do not
exist), and without them containerd cannot set up a sandbox that is not host-network. The
IPAM tests write host-local's on-disk store (one file per reserved address holding the
container ID, plus `lock` and `last_reserved_ip.0`) and check it against real sandbox IDs;
netns paths of sandboxes are parsed from containerd's verbose status in
`tests/unit/test_residue_runtime.py`.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.node.cri.v1 import api_pb2
from tests.node.localnode import LocalNode, Pod
from tests.node.test_gc_containers import kubegc, write_pods_file

ORPHAN = "11111111-1111-1111-1111-111111111111"


def doc_of(res: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert res.returncode == 0, res.stderr
    doc: dict[str, Any] = json.loads(res.stdout)
    assert doc["kind"] == "ResiduePlan"
    return doc


def findings(doc: dict[str, Any], kind: str | None = None) -> dict[str, dict[str, Any]]:
    """Every finding of the document by target (of one type, if given)."""
    return {f["id"]: f for f in doc["actions"] + doc["kept"] if kind is None or f["type"] == kind}


def live_pod(node: LocalNode, ns: str, tmp_path: Path) -> tuple[Pod, Path]:
    """A pod with a running container and a pods file listing it."""
    pod = node.run_pod("web", namespace=ns)
    node.add_container(pod, "app", state="running")
    return pod, write_pods_file(tmp_path / "pods.json", pod)


def orphan_dir(root: Path, uid: str = ORPHAN, *, age: float = 3600) -> Path:
    """`<root>/pods/<uid>` with `volumes/kubernetes.io~empty-dir/cache` holding 3 files, last
    changed `age` seconds ago (the directory and its entries)."""
    cache = root / "pods" / uid / "volumes" / "kubernetes.io~empty-dir" / "cache"
    cache.mkdir(parents=True)
    for i in range(3):
        (cache / f"f{i}").write_bytes(os.urandom(8192))
    when = time.time() - age
    for p in (cache.parent, cache.parent.parent, root / "pods" / uid):
        os.utime(p, (when, when))
    return root / "pods" / uid


def residue(node: LocalNode, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubegc residue ARGS` on the node; the kubelet root and CNI directory the test names
    under `tmp_path` are made if the test did not (residue refuses a directory that is not
    there: a test of runtime findings has nothing to put in them)."""
    for flag, value in itertools.pairwise(args):
        if flag in ("--root-dir", "--cni-dir") and Path(value).is_relative_to(tmp_path):
            Path(value).mkdir(parents=True, exist_ok=True)
    return kubegc(node, tmp_path, "residue", *args)


def test_orphaned_pod_dir_is_found_and_cleaned(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 1: a pod dir unknown to the pod source and the runtime, with an emptyDir holding
    3 files: a safe finding; clean removes it and reports the bytes. The live pod's dir is no
    finding."""
    live, pods = live_pod(node, ns, tmp_path)
    root = tmp_path / "kubelet"
    gone = orphan_dir(root)
    (root / "pods" / live.uid / "volumes").mkdir(parents=True)
    opts = ("--pods-file", str(pods), "--root-dir", str(root), "--kind", "orphaned-pod-dir")

    doc = doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json"))
    found = findings(doc, "orphaned-pod-dir")
    assert set(found) == {str(gone)}
    f = found[str(gone)]
    assert f["safe_to_clean"] is True and f["unsafe_reason"] is None
    assert f["bytes"] >= 3 * 8192 and f["kind"] == "finding"
    assert f["details"]["volumes"] == [f"{gone}/volumes/kubernetes.io~empty-dir/cache"]
    assert "volume paths are still present on disk" in f["evidence"]
    assert doc["totals"]["orphaned-pod-dir"]["safe"] == 1
    assert doc["dry_run"] is True

    table = residue(node, tmp_path, "scan", *opts)
    assert table.returncode == 0, table.stderr
    assert "orphaned-pod-dir: 1 finding(s)" in table.stdout and str(gone) in table.stdout

    done = doc_of(residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json"))
    (a,) = done["actions"]
    assert (a["id"], a["result"]) == (str(gone), "removed")
    assert a["bytes_freed"] == f["bytes"]
    assert done["summary"]["bytes_freed"] == f["bytes"]
    assert not gone.exists() and (root / "pods" / live.uid).is_dir()

    history = kubegc(node, tmp_path, "history", "-o", "json")
    assert history.returncode == 0, history.stderr
    (run,) = json.loads(history.stdout)["items"]
    assert run["command"] == "residue clean"


def test_a_pod_dir_made_a_moment_ago_is_left(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """A pod directory made a moment ago may be a pod's the pods file does not list yet (the
    kubelet makes it before the sandbox): found, not safe, and clean leaves it."""
    _, pods = live_pod(node, ns, tmp_path)
    root = tmp_path / "kubelet"
    new = orphan_dir(root, age=0)
    opts = ("--pods-file", str(pods), "--root-dir", str(root), "--kind", "orphaned-pod-dir")
    f = findings(doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json")), "orphaned-pod-dir")
    assert f[str(new)]["safe_to_clean"] is False
    assert "a new pod may still be being set up" in f[str(new)]["unsafe_reason"]
    done = doc_of(residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json"))
    assert done["actions"] == [] and [k["id"] for k in done["kept"]] == [str(new)]
    assert (new / "volumes/kubernetes.io~empty-dir/cache/f0").exists()


def test_mounted_volume_keeps_the_pod_dir(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 2: a tmpfs mounted in an orphaned pod's CSI volume: a finding, not safe (the
    reason names the mount); clean leaves it and the file in the mount intact (exit 0) while
    a safe orphan beside it goes."""
    _, pods = live_pod(node, ns, tmp_path)
    root = tmp_path / "kubelet"
    gone = orphan_dir(root)
    other = orphan_dir(root, "22222222-2222-2222-2222-222222222222")
    mnt = gone / "volumes" / "kubernetes.io~csi" / "pvc-x" / "mount"
    mnt.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        (mnt / "data").write_text("still mounted")
        opts = ("--pods-file", str(pods), "--root-dir", str(root), "--kind", "orphaned-pod-dir")
        doc = doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json"))
        f = findings(doc)[str(gone)]
        assert f["safe_to_clean"] is False and str(mnt) in f["unsafe_reason"]
        assert f["details"]["mounts_below"] == [str(mnt)]
        assert findings(doc)[str(other)]["safe_to_clean"] is True

        res = residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json")
        done = doc_of(res)
        assert [(a["id"], a["result"]) for a in done["actions"]] == [(str(other), "removed")]
        assert [k["id"] for k in done["kept"]] == [str(gone)]
        assert (mnt / "data").read_text() == "still mounted"
        assert (gone / "volumes" / "kubernetes.io~empty-dir" / "cache" / "f0").exists()
        assert not other.exists()
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def hidden_proc(node: LocalNode, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`kubegc` in a private mount namespace whose /proc is an empty tmpfs: the mount table
    (/proc/self/mountinfo) cannot be read; every mount made before stays in place."""
    cmd = [
        sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
        "--kubelet-config", str(node.kubelet_config), "--state-dir", str(tmp_path / "state"),
        *args,
    ]  # fmt: skip
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         'mount -t tmpfs tmpfs /proc && exec "$@"', "sh", *cmd],
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def test_unreadable_mount_table_removes_nothing(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """F1 end to end: an orphaned pod dir with a bind-mounted local volume (same filesystem,
    so no device check notices it) and kubegc unable to read its mount table: the finding is
    not safe (the reason says why), `residue clean --yes` removes nothing and exits 0, and
    the bind source's data is intact."""
    _, pods = live_pod(node, ns, tmp_path)
    root = tmp_path / "kubelet"
    gone = orphan_dir(root)
    src = tmp_path / "x-bindsrc"
    (src / "data").mkdir(parents=True)
    for k in ("k1", "k2", "k3"):
        (src / "data" / k).write_text(k)
    vol = gone / "volumes" / "kubernetes.io~local-volume" / "pv1"
    vol.mkdir(parents=True)
    subprocess.run(["mount", "--bind", str(src), str(vol)], check=True)
    try:
        opts = ("--pods-file", str(pods), "--root-dir", str(root), "--kind", "orphaned-pod-dir")
        doc = doc_of(hidden_proc(node, tmp_path, "residue", "clean", *opts, "--yes", "-o", "json"))
        assert doc["actions"] == []
        (f,) = doc["kept"]
        assert f["id"] == str(gone) and f["safe_to_clean"] is False
        assert "cannot read the mount table /proc/self/mountinfo" in f["unsafe_reason"]
        assert f["action"] == "nothing"
        assert any("No directory is safe to clean" in n for n in doc["notes"])
        assert sorted(p.name for p in (src / "data").iterdir()) == ["k1", "k2", "k3"]
        assert (gone / "volumes/kubernetes.io~empty-dir/cache/f0").exists()
    finally:
        subprocess.run(["umount", str(vol)], check=True)


def test_symlink_out_of_a_pod_dir_loses_only_the_link(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Case 4: a symlink inside an orphaned pod dir pointing to a directory outside it:
    cleaning removes the link, never the target's content."""
    _, pods = live_pod(node, ns, tmp_path)
    root = tmp_path / "kubelet"
    gone = orphan_dir(root)
    outside = tmp_path / "precious"
    outside.mkdir()
    (outside / "keep.txt").write_text("do not delete")
    (gone / "volumes" / "kubernetes.io~empty-dir" / "link").symlink_to(outside)
    opts = ("--pods-file", str(pods), "--root-dir", str(root), "--kind", "orphaned-pod-dir")

    done = doc_of(residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json"))
    assert [(a["id"], a["result"]) for a in done["actions"]] == [(str(gone), "removed")]
    assert not gone.exists()
    assert (outside / "keep.txt").read_text() == "do not delete"


def test_without_pod_source_pod_dirs_are_not_safe(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 5: with `--pod-source none` an orphaned pod dir is reported, not safe, and clean
    leaves it."""
    live_pod(node, ns, tmp_path)
    root = tmp_path / "kubelet"
    gone = orphan_dir(root)
    opts = ("--pod-source", "none", "--root-dir", str(root), "--kind", "orphaned-pod-dir")

    doc = doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json"))
    f = findings(doc)[str(gone)]
    assert f["safe_to_clean"] is False and "pod source" in f["unsafe_reason"]
    assert any("No pod source" in n for n in doc["notes"])

    done = doc_of(residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json"))
    assert done["actions"] == [] and gone.is_dir()


def test_deleted_pods_runtime_objects_are_reported_never_cleaned(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A deleted pod's dead container and sandbox are DEAD_* findings (what `gc all` would
    remove), not safe; `residue clean --yes` leaves them to `gc all`."""
    live, _ = live_pod(node, ns, tmp_path)
    gone = node.run_pod("gone", namespace=ns)
    dead = node.add_container(gone, "job")
    node.stop_pod(gone)
    pods = write_pods_file(tmp_path / "pods.json", live)
    opts = (
        "--pods-file", str(pods), "--root-dir", str(tmp_path / "kubelet"),
        "--kind", "dead-container", "--kind", "dead-sandbox",
    )  # fmt: skip

    doc = doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json"))
    ctr = findings(doc, "dead-container")[dead]
    sbx = findings(doc, "dead-sandbox")[gone.sandbox_id]
    for f in (ctr, sbx):
        assert f["safe_to_clean"] is False
        assert f["unsafe_reason"] == "removed by `kubegc gc all`"
        assert f["action"] == "nothing"
        assert f["manual_action"] == f"kubegc gc all --pods-file {pods}"
        assert f["details"]["rule"] == "deleted-pod" and f["details"]["pod_uid"] == gone.uid
    assert ctr["bytes"] is not None and ctr["bytes"] > 0  # its log
    assert live.sandbox_id not in findings(doc)
    assert doc["summary"]["kept_by_rule"]["dead-container"] >= 1

    done = doc_of(residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json"))
    assert done["actions"] == []
    assert dead in node.container_ids(namespace=ns)
    assert gone.sandbox_id in node.list_sandboxes()


def test_cni_reservations_of_unknown_ids_only(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Case 3: in network cbr0, `10.88.0.5` records a live sandbox's ID, `10.88.0.6` an ID
    the runtime does not know; `last_reserved_ip.0` and `lock` are bookkeeping: exactly
    `10.88.0.6` is a finding, and the network's leak count is in the notes."""
    live, pods = live_pod(node, ns, tmp_path)
    cni = tmp_path / "cni"
    net = cni / "networks" / "cbr0"
    net.mkdir(parents=True)
    unknown = uuid.uuid4().hex * 2
    (net / "10.88.0.5").write_text(f"{live.sandbox_id}\neth0")
    (net / "10.88.0.6").write_text(f"{unknown}\neth0")
    (net / "last_reserved_ip.0").write_text("10.88.0.6")
    (net / "lock").write_text("")
    opts = ("--pods-file", str(pods), "--cni-dir", str(cni), "--kind", "leaked-cni-ip")

    doc = doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json"))
    found = findings(doc, "leaked-cni-ip")
    assert list(found) == [str(net / "10.88.0.6")]
    f = found[str(net / "10.88.0.6")]
    assert f["details"]["network"] == "cbr0" and f["details"]["id"] == unknown
    assert not f["safe_to_clean"]  # reserved seconds ago: a sandbox may be being set up
    assert "CNI network cbr0: 1 of 2 reserved address(es) leaked." in doc["notes"]

    done = doc_of(residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json"))
    assert done["actions"] == []
    assert sorted(p.name for p in net.iterdir()) == [
        "10.88.0.5", "10.88.0.6", "last_reserved_ip.0", "lock",
    ]  # fmt: skip


def test_cni_reservation_of_a_notready_sandbox(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """An address reserved for a sandbox the runtime has, but NOTREADY (its pod stopped), is
    a finding — no live sandbox holds it — and not safe until `gc sandboxes` removes the
    sandbox; a READY sandbox's address is no finding."""
    live, _ = live_pod(node, ns, tmp_path)
    stopped = node.run_pod("stopped", namespace=ns)
    node.stop_pod(stopped)
    pods = write_pods_file(tmp_path / "pods.json", live, stopped)
    net = tmp_path / "cni" / "networks" / "cbr0"
    net.mkdir(parents=True)
    (net / "10.88.0.5").write_text(f"{live.sandbox_id}\neth0")
    (net / "10.88.0.7").write_text(f"{stopped.sandbox_id}\neth0")
    old = time.time() - 3600
    for f in net.iterdir():
        os.utime(f, (old, old))
    opts = ("--pods-file", str(pods), "--cni-dir", str(tmp_path / "cni"), "--kind", "leaked-cni-ip")
    doc = doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json"))
    found = findings(doc, "leaked-cni-ip")
    assert list(found) == [str(net / "10.88.0.7")]
    f = found[str(net / "10.88.0.7")]
    assert f["safe_to_clean"] is False
    assert f"sandbox {stopped.sandbox_id} is NOTREADY" in f["unsafe_reason"]
    assert f["manual_action"].startswith("kubegc gc sandboxes")
    done = doc_of(residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json"))
    assert done["actions"] == [] and (net / "10.88.0.7").exists()


def test_unused_image_points_to_gc_images(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """An image no container uses is a finding with its bytes, never safe; the busybox image
    (used) and the sandbox image (pause) are not."""
    _, pods = live_pod(node, ns, tmp_path)
    ref = f"example.com/idle:{ns}"
    image_id = node.import_image(ref, pad_bytes=64 * 1024, seed=ns)
    try:
        opts = ("--pods-file", str(pods), "--kind", "unused-image")
        doc = doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json"))
        found = findings(doc, "unused-image")
        f = found[image_id]
        assert f["bytes"] and f["bytes"] >= 64 * 1024
        assert f["safe_to_clean"] is False and "gc images" in f["manual_action"]
        tags = [t for x in found.values() for t in x["details"]["repo_tags"]]
        assert "registry.k8s.io/pause:3.9" not in tags
        assert "docker.io/library/busybox:kubegc-test" not in tags
    finally:
        spec = api_pb2.ImageSpec(image=image_id)
        node.images.RemoveImage(api_pb2.RemoveImageRequest(image=spec), timeout=30)


def test_runtime_lists_are_measured(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """A small node's lists are far below half of 4 MiB: no finding; -v says the sizes are
    checked (the threshold itself is tested on synthetic replies in the unit tests)."""
    _, pods = live_pod(node, ns, tmp_path)
    doc = doc_of(
        residue(node, tmp_path, "scan", "--pods-file", str(pods), "--kind",
                "oversized-runtime-list", "-o", "json")
    )  # fmt: skip
    assert findings(doc) == {}
    assert doc["totals"] == {
        "oversized-runtime-list": {"count": 0, "bytes": 0, "safe": 0, "safe_bytes": 0}
    }


@pytest.mark.parametrize("extra", [("scan",), ("clean", "--yes")])
def test_bad_kind_is_one_line_exit_2(
    node: LocalNode, tmp_path: Path, extra: tuple[str, ...]
) -> None:
    """Bad input: one line, exit 2, nothing removed."""
    root = tmp_path / "kubelet"
    gone = orphan_dir(root)
    res = residue(node, tmp_path, *extra, "--pod-source", "none", "--root-dir", str(root),
                  "--kind", "orphaned-pod-dir", "--kind", "pod-dirs")  # fmt: skip
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and "'pod-dirs'" in res.stderr
    assert gone.is_dir()
    res = residue(node, tmp_path, *extra, "--root-dir", "relative/kubelet")
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "--root-dir" in res.stderr


def test_network_namespace_no_sandbox_uses(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """A `cni-*` network namespace under /run/netns that no sandbox uses (the sandboxes'
    namespaces come from containerd's verbose status: host-network here, so none) is a
    finding; created seconds ago it is not safe, and clean leaves it."""
    _, pods = live_pod(node, ns, tmp_path)
    name = f"cni-kubegc-{uuid.uuid4().hex[:12]}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        opts = ("--pods-file", str(pods), "--kind", "leaked-netns")
        doc = doc_of(residue(node, tmp_path, "scan", *opts, "-o", "json"))
        (f,) = [f for target, f in findings(doc).items() if target.endswith("/" + name)]
        assert f["type"] == "leaked-netns" and f["safe_to_clean"] is False
        assert "ago" in f["unsafe_reason"]
        assert not any("does not report" in n for n in doc["notes"])  # containerd says
        done = doc_of(residue(node, tmp_path, "clean", *opts, "--yes", "-o", "json"))
        assert not [a for a in done["actions"] if a["id"].endswith(name)]
        assert Path("/run/netns", name).exists()
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=True)


def test_pod_appearing_before_removal_is_skipped(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Re-check before acting: a pod dir planned as orphaned whose pod the runtime has by
    the time of removal (a sandbox created while the operator confirms) is skipped."""
    from kubegc_cli.commands.flow import ActOptions
    from kubegc_cli.commands.residue import ResidueOptions, residue_clean
    from kubegc_cli.core.settings import Settings

    _, pods = live_pod(node, ns, tmp_path)
    root = tmp_path / "kubelet"
    uid = f"33333333-{uuid.uuid4().hex[:4]}-3333-3333-333333333333"
    late = orphan_dir(root, uid)

    class Ui:
        def info(self, message: str) -> None: ...
        def warn(self, message: str) -> None: ...
        def show_plan(self, plan: object) -> None: ...
        def interactive(self) -> bool:
            return True

        def confirm(self, question: str) -> bool:
            node.run_pod("late", namespace=ns, uid=uid)  # the kubelet starts the pod now
            return True

    s = Settings(
        runtime_endpoint=node.endpoint, pods_file=pods, state_dir=tmp_path / "state",
        kubelet_config=node.kubelet_config,
    )  # fmt: skip
    opts = ResidueOptions(frozenset({"orphaned-pod-dir"}), root_dir=str(root))
    plan = residue_clean(s, Ui(), opts, ActOptions())
    (a,) = plan.actions
    assert a.target == str(late) and a.result.value == "skipped", a.error
    assert "gone" in a.error or "known" in a.error, a.error
    assert late.is_dir()


def test_pod_source_listing_none_of_the_running_pods_is_refused(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A pods file that lists none of the node's running pods (another node's, a failed
    kubectl) would make every pod dir look orphaned: refused, exit 2, nothing removed."""
    live_pod(node, ns, tmp_path)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"kind": "PodList", "items": [{"metadata": {"uid": "x"}}]}))
    root = tmp_path / "kubelet"
    gone = orphan_dir(root)
    res = residue(node, tmp_path, "clean", "--pods-file", str(other), "--root-dir", str(root),
                  "--kind", "orphaned-pod-dir", "--yes")  # fmt: skip
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "lists none" in res.stderr
    assert gone.is_dir()
