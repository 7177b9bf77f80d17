"""`kubegc gc images` end to end against a real containerd (a node of its own)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubegc_cli.node.cri.v1 import api_pb2
from tests.node.localnode import LocalNode, containerd_version
from tests.node.test_gc_containers import kubegc


def test_gc_images_remembers_first_detection_and_protects_what_is_needed(tmp_path: Path) -> None:
    with LocalNode(tmp_path / "node") as node:
        a = node.import_image("docker.io/library/unused-a:1", pad_bytes=2048, seed="a")
        b = node.import_image("docker.io/library/unused-b:1", pad_bytes=4096, seed="b")
        p = node.run_pod("p", namespace="ns1")
        node.add_container(p, "app")  # exited: its busybox image is still in use

        first = kubegc(node, tmp_path, "gc", "images", "--prune-unused", "--dry-run",
                       "-o", "json")  # fmt: skip
        assert first.returncode == 0, first.stderr
        doc = json.loads(first.stdout)
        assert doc["kind"] == "ImageGCPlan" and doc["actions"] == []
        kept = {k["id"]: k["rule"] for k in doc["kept"]}
        assert kept[a] == kept[b] == "min-age"  # first seen now: MinAge (2m) protects them
        by_tag = {t: k["rule"] for k in doc["kept"] for t in k["repo_tags"]}
        assert by_tag["docker.io/library/busybox:kubegc-test"] == "in-use"
        table = kubegc(node, tmp_path, "gc", "images", "--prune-unused", "--dry-run")
        pause_row = next(r for r in table.stdout.splitlines() if "pause" in r)
        if containerd_version() >= (2, 0):  # the runtime names no sandbox image; it pins it
            assert by_tag["registry.k8s.io/pause:3.9"] == "pinned"
            assert doc["policy"]["sandbox_image"] in ("", None)
        else:
            assert by_tag["registry.k8s.io/pause:3.9"] == "protected"
            assert doc["policy"]["sandbox_image"] == "registry.k8s.io/pause:3.9"
            assert "the sandbox image" in pause_row  # protected images shown without -v

        go = kubegc(node, tmp_path, "gc", "images", "--prune-unused",
                    "--minimum-image-ttl-duration", "0s", "--yes", "-o", "json")  # fmt: skip
        assert go.returncode == 0, go.stderr
        result = json.loads(go.stdout)
        assert {x["id"]: x["result"] for x in result["actions"]} == {a: "removed", b: "removed"}
        left = {i.id for i in node.list_images()}
        assert a not in left and b not in left
        assert any("busybox:kubegc-test" in t for i in node.list_images() for t in i.repo_tags)

        import sqlite3

        again = kubegc(node, tmp_path, "gc", "images", "--dry-run", "-o", "json")
        assert again.returncode == 0, again.stderr
        con = sqlite3.connect(tmp_path / "state" / "state.db")
        remembered = {r[0] for r in con.execute("SELECT id FROM images")}
        con.close()
        assert a not in remembered and b not in remembered  # records of gone images dropped
        assert remembered == {i.id for i in node.list_images()}


def test_an_image_kept_in_use_names_the_containers_and_pods_that_hold_it(
    tmp_path: Path,
) -> None:
    """The runtime's containers of two pods (one running, one exited) hold busybox: the kept
    row says which, -o json lists each with its pod, and the notes say what would free it."""
    with LocalNode(tmp_path / "node") as node:
        p = node.run_pod("p", namespace="ns1")
        q = node.run_pod("q", namespace="ns2")
        dead = node.add_container(p, "app")
        live = node.add_container(q, "web", state="running")
        res = kubegc(node, tmp_path, "gc", "images", "--dry-run", "-o", "json")
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        [busybox] = [k for k in doc["kept"] if "docker.io/library/busybox:kubegc-test"
                     in k["repo_tags"]]  # fmt: skip
        assert busybox["rule"] == "in-use"
        named = busybox["reason"].removeprefix("used by 2 containers: ").split(", ")
        assert sorted(named) == ["ns1/p app (EXITED)", "ns2/q web (RUNNING)"]  # as listed
        assert {(u["id"], u["pod_namespace"], u["pod_name"], u["name"], u["state"])
                for u in busybox["used_by"]} == {
            (dead, "ns1", "p", "app", "EXITED"), (live, "ns2", "q", "web", "RUNNING"),
        }  # fmt: skip
        assert {u["pod_uid"] for u in busybox["used_by"]} == {p.uid, q.uid}
        assert any(n.startswith("1 image(s) kept in use by 2 container(s), 1 of them not "
                                "running") for n in doc["notes"]), doc["notes"]  # fmt: skip
        table = kubegc(node, tmp_path, "gc", "images", "--dry-run", "-v")
        assert table.returncode == 0, table.stderr
        assert "ns1/p app (EXITED)" in table.stdout and "kept in use" in table.stdout


def test_gc_images_bad_thresholds_are_exit_2(tmp_path: Path) -> None:
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "-r", "unix:///nonexistent.sock", "gc", "images",
         "--image-gc-high-threshold", "80", "--image-gc-low-threshold", "90"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert res.returncode == 2 and "must be less than" in res.stderr
    assert res.stderr.count("\n") == 1


def test_assume_detected_at_and_pod_infra_image(tmp_path: Path) -> None:
    """An operator who knows the images are old lifts first-run MinAge protection with
    --assume-detected-at; --pod-infra-container-image protects one more sandbox image."""
    with LocalNode(tmp_path / "node") as node:
        a = node.import_image("docker.io/library/unused-a:1", pad_bytes=2048, seed="a")
        b = node.import_image("docker.io/library/unused-b:1", pad_bytes=4096, seed="b")
        res = kubegc(node, tmp_path, "gc", "images", "--prune-unused", "--yes", "-o", "json",
                     "--assume-detected-at", "2020-01-01T00:00:00Z",
                     "--pod-infra-container-image", "docker.io/library/unused-a:1")  # fmt: skip
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        removed = {x["id"]: x["result"] for x in doc["actions"]}
        assert removed[b] == "removed" and a not in removed  # (the unused busybox goes too)
        kept = {k["id"]: k for k in doc["kept"]}
        assert kept[a]["rule"] == "protected"
        assert kept[a]["first_detected"] == "2020-01-01T00:00:00Z"
        assert {i.id for i in node.list_images()} >= {a}


MiB = 1 << 20


def _plan(node: LocalNode, tmp_path: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    res = kubegc(node, tmp_path, "gc", "images", "-o", "json", *args)
    assert res.stdout, res.stderr
    return res.returncode, json.loads(res.stdout), res.stderr


def test_disk_pressure_on_a_small_imagefs(tmp_path: Path) -> None:
    """A 128 MiB tmpfs as the containerd root: above the high threshold the never-used images
    go first (by first detection), the image last used stays, usage falls below low; a target
    the eligible images cannot reach is exit 1 with the kubelet's "wanted to free" report."""
    with LocalNode(tmp_path / "node", imagefs_bytes=128 * MiB) as node:
        used = node.import_image("docker.io/library/used-once:1", pad_bytes=12 * MiB, seed="u1")
        pod = node.run_pod("p", namespace="ns1")
        node.add_container(pod, "app", image="docker.io/library/used-once:1")
        code, first, err = _plan(node, tmp_path, "--dry-run")  # `used` seen in use; busybox not
        assert code == 0, err
        assert {k["id"]: k["rule"] for k in first["kept"]}[used] == "in-use"
        node.remove_namespace("ns1")
        older = node.import_image("docker.io/library/never-b:1", pad_bytes=12 * MiB, seed="u3")
        assert _plan(node, tmp_path, "--dry-run")[0] == 0  # `older` first detected now
        newer = node.import_image("docker.io/library/never-a:1", pad_bytes=12 * MiB, seed="u2")

        code, doc, err = _plan(node, tmp_path, "--dry-run", "--minimum-image-ttl-duration", "0s")
        assert code == 0, err
        fs = doc["filesystem"]
        cap, avail, pct = fs["capacity"], fs["available"], fs["usage_percent"]
        assert cap == 128 * MiB and pct == 100 - avail * 100 // cap
        sizes = {k["id"]: k["size"] for k in doc["kept"]}
        busybox = next(k["id"] for k in doc["kept"] if any("busybox" in t for t in k["repo_tags"]))
        # The kubelet's order: never used (busybox, then `older`, then `newer` by first
        # detection), then by last use (`used`). Pick low so the walk must take exactly three.
        two, three = sizes[busybox] + sizes[older], sizes[busybox] + sizes[older] + sizes[newer]
        low = next(
            lo for lo in range(pct - 1, -1, -1) if two < cap * (100 - lo) // 100 - avail <= three
        )

        code, done, err = _plan(node, tmp_path, "--yes", "--minimum-image-ttl-duration", "0s",
                                "--image-gc-high-threshold", str(pct),
                                "--image-gc-low-threshold", str(low))  # fmt: skip
        assert code == 0, err
        assert [a["id"] for a in done["actions"]] == [busybox, older, newer]
        assert {a["result"] for a in done["actions"]} == {"removed"}
        # (the target as the acting run measured the filesystem: containerd 2.x writes to its
        # root between two runs)
        acting_avail = done["filesystem"]["available"]
        acting_target = cap * (100 - low) // 100 - acting_avail
        assert done["filesystem"]["bytes_to_free"] == acting_target
        kept = {k["id"]: k["rule"] for k in done["kept"]}
        assert kept[used] == "not-needed"  # eligible, but the target was passed before it
        left = {i.id for i in node.list_images()}
        assert left.isdisjoint({busybox, older, newer}) and used in left
        after = done["filesystem"]["available_after"]
        assert done["filesystem"]["regained"] == after - acting_avail >= acting_target
        assert 100 - after * 100 // cap < low  # usage fell below the low threshold

        code, short, err = _plan(node, tmp_path, "--yes", "--minimum-image-ttl-duration", "0s",
                                 "--image-gc-high-threshold", "1",
                                 "--image-gc-low-threshold", "0")  # fmt: skip
        assert code == 1, err
        assert [a["id"] for a in short["actions"]] == [used]
        assert short["summary"]["shortfall"] > 0
        assert "wanted to free" in " ".join(short["notes"])
        assert "could not free enough" in err and err.count("\n") == 1
        assert re.search(r"could not free enough: [\d.]+([KMGTPE]i)?B? short$", err.strip()), err
        assert not re.search(r"\d{7}", " ".join(short["notes"]))  # human units in its notes
        assert {i.id for i in node.list_images()} == {
            k["id"] for k in short["kept"] if k["rule"] in ("protected", "pinned")
        }


def test_keep_patterns_are_honoured(tmp_path: Path) -> None:
    """An unused image matching --keep stays (reason "matches --keep"); one not matching goes.
    Usage is measured and shown with --prune-unused too."""
    with LocalNode(tmp_path / "node") as node:
        kept = node.import_image("docker.io/library/keep-me:1", pad_bytes=2048, seed="k")
        gone = node.import_image("docker.io/library/drop-me:1", pad_bytes=4096, seed="d")
        code, doc, err = _plan(node, tmp_path, "--prune-unused", "--yes",
                               "--assume-detected-at", "2020-01-01T00:00:00Z",
                               "--keep", "docker.io/library/keep-*")  # fmt: skip
        assert code == 0, err
        results = {a["id"]: a["result"] for a in doc["actions"]}
        assert results[gone] == "removed" and kept not in results
        reasons = {k["id"]: (k["rule"], k["reason"]) for k in doc["kept"]}
        assert reasons[kept] == ("protected", "matches --keep")
        left = {i.id for i in node.list_images()}
        assert kept in left and gone not in left
        fs = doc["filesystem"]
        assert isinstance(fs["usage_percent"], int)
        assert fs["usage_percent"] == 100 - fs["available"] * 100 // fs["capacity"]
        assert f"{fs['usage_percent']}% used" in doc["notes"][0] and "None" not in doc["notes"][0]


_PAUSED_RUN = """
import sys, time
from pathlib import Path

import kubegc_cli.node.execute.actions as execute

ready, go = Path(sys.argv[1]), Path(sys.argv[2])
original = execute.ImageRemover.run


def paused(self, todo):
    ready.touch()  # the node lock is held from here on
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    return original(self, todo)


execute.ImageRemover.run = paused
from kubegc_cli.cli.main import main

main(sys.argv[3:])
"""


def test_two_concurrent_yes_runs(tmp_path: Path) -> None:
    """While one `--yes` run holds the node lock (held still right before its removals), a
    second exits 4 with one line naming the lock and removes nothing; the first then finishes,
    and the state database is intact. Two runs started together: each ends 0 or 4, never both
    acting on one image, the database intact."""
    import sqlite3
    import subprocess
    import sys
    import time

    with LocalNode(tmp_path / "node") as node:
        a = node.import_image("docker.io/library/unused-a:1", pad_bytes=2048, seed="a")
        b = node.import_image("docker.io/library/unused-b:1", pad_bytes=4096, seed="b")
        common = ["-r", node.endpoint, "--kubelet-config", str(node.kubelet_config),
                  "--state-dir", str(tmp_path / "state"), "gc", "images", "-o", "json",
                  "--prune-unused", "--yes", "--assume-detected-at", "2020-01-01T00:00:00Z",
                  "--keep", "*busybox*"]  # fmt: skip
        ready, go = tmp_path / "ready", tmp_path / "go"

        def start(*argv: str) -> subprocess.Popen[str]:
            pipe = subprocess.PIPE
            return subprocess.Popen(
                argv, stdout=pipe, stderr=pipe, stdin=subprocess.DEVNULL, text=True
            )

        first = start(sys.executable, "-c", _PAUSED_RUN, str(ready), str(go), *common)
        try:
            deadline = time.monotonic() + 60
            while not ready.exists():
                assert first.poll() is None, first.communicate()
                assert time.monotonic() < deadline, "the first run never reached its removals"
                time.sleep(0.02)
            second = kubegc(node, tmp_path, *common[6:])
            assert second.returncode == 4, second.stderr
            assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
            assert "another kubegc run (pid " in second.stderr
            assert "holds the node lock /run/kubegc/lock" in second.stderr  # node-wide
            assert second.stdout == ""
            assert {a, b} <= {i.id for i in node.list_images()}  # nothing removed yet
        finally:
            go.touch()
            out, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        results = {x["id"]: x["result"] for x in json.loads(out)["actions"]}
        assert results == {a: "removed", b: "removed"}

        c = node.import_image("docker.io/library/unused-c:1", pad_bytes=2048, seed="c")
        both = [start(sys.executable, "-m", "kubegc_cli", *common) for _ in range(2)]
        done = [(p.wait(timeout=120), *p.communicate()) for p in both]
        assert sorted(code for code, _, _ in done) in ([0, 0], [0, 4]), done
        removed = [
            x["id"]
            for code, out, _ in done
            if code == 0
            for x in json.loads(out)["actions"]
            if x["result"] == "removed"
        ]
        assert removed == [c] and c not in {i.id for i in node.list_images()}
        assert all("Traceback" not in err for _, _, err in done)

        con = sqlite3.connect(tmp_path / "state" / "state.db")
        try:
            assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            audited = con.execute(
                "SELECT object_id FROM audit WHERE result = 'removed' ORDER BY rowid"
            ).fetchall()
        finally:
            con.close()
        assert sorted(r[0] for r in audited) == sorted([a, b, c])


def _image_fs_mountpoint(node: LocalNode) -> str:
    from kubegc_cli.node.cri.v1 import api_pb2

    info = node.images.ImageFsInfo(api_pb2.ImageFsInfoRequest(), timeout=30)
    return str(info.image_filesystems[0].fs_id.mountpoint)


def test_capacity_zero_is_exit_1_in_every_mode(node: LocalNode, tmp_path: Path) -> None:
    """An image filesystem whose statvfs reports 0 blocks (here: its mountpoint, under
    --host-root, leads to /proc) is the kubelet's "invalid capacity 0 on image filesystem":
    exit 1, one line naming the mountpoint, nothing removed, whatever the mode."""
    import os

    mountpoint = _image_fs_mountpoint(node)
    host = tmp_path / "host"
    local = host / mountpoint.lstrip("/")
    local.parent.mkdir(parents=True)
    local.symlink_to("/proc")
    assert os.statvfs(local).f_blocks == 0
    before = {i.id for i in node.list_images()}
    for mode in (
        ["--dry-run"],
        ["--prune-unused", "--dry-run"],
        ["--prune-unused", "--yes", "--assume-detected-at", "2020-01-01T00:00:00Z"],
        ["--yes", "--image-gc-high-threshold", "100", "--image-maximum-gc-age", "0s"],
    ):
        res = kubegc(node, tmp_path, "--host-root", str(host), "gc", "images", *mode)
        assert res.returncode == 1, (mode, res.stderr)
        assert res.stderr == f"kubegc: error: invalid capacity 0 on image filesystem {mountpoint}\n"
        assert res.stdout == ""
    assert {i.id for i in node.list_images()} == before


def test_high_threshold_100_with_max_age_0_disables_threshold_gc(
    node: LocalNode, tmp_path: Path
) -> None:
    """The kubelet does not start image GC at high 100% and MaxAge 0: the plan says so and
    plans nothing for space, even at a usage above any threshold."""
    res = kubegc(node, tmp_path, "gc", "images", "--dry-run", "-o", "json",
                 "--image-gc-high-threshold", "100", "--image-gc-low-threshold", "0",
                 "--minimum-image-ttl-duration", "0s")  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["actions"] == []
    assert "image GC disabled: high threshold 100% and MaxAge 0, as the kubelet" in doc["notes"]
    assert doc["filesystem"]["bytes_to_free"] is None
    assert isinstance(doc["filesystem"]["usage_percent"], int)


@contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """`path` (a directory or a file) bind-mounted read-only onto itself for the block."""
    import subprocess

    subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(path)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(path)], check=True)


def test_state_store_damaged_read_only_or_of_the_wrong_type(tmp_path: Path) -> None:
    """A damaged state.db is moved aside with a warning and the run goes on; a read-only one
    is never moved aside: a dry run warns and goes on, a `--yes` run is exit 2 before anything
    is removed; a state.db that is a directory is exit 2 naming it."""
    import sqlite3

    with LocalNode(tmp_path / "node") as node:
        a = node.import_image("docker.io/library/unused-a:1", pad_bytes=2048, seed="a")
        state = tmp_path / "state"
        db = state / "state.db"
        assert _plan(node, tmp_path, "--dry-run")[0] == 0  # dry runs record first detection
        con = sqlite3.connect(db)
        assert a in {r[0] for r in con.execute("SELECT id FROM images")}
        con.close()
        with db.open("r+b") as f:  # a valid header, damaged pages
            f.seek(4096)
            f.write(b"\xff" * 200)
        code, doc, err = _plan(node, tmp_path, "--dry-run")
        assert code == 0, err
        assert err.count("\n") == 1 and "is damaged" in err and "moved to" in err
        assert len(list(state.glob("state.db.corrupt-*"))) == 1
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()

        acting = ["--prune-unused", "--minimum-image-ttl-duration", "0s"]
        for target in (state, db):
            saved = db.read_bytes()
            with _read_only(target):
                code, doc, err = _plan(node, tmp_path, "--dry-run", "--prune-unused",
                                       "--assume-detected-at", "2020-01-01T00:00:00Z")  # fmt: skip
                assert code == 0, err
                assert "image records are not saved" in err and "Traceback" not in err
                rules = {k["id"]: k["rule"] for k in doc["kept"]}
                assert rules[a] == "min-age"  # its record, read from the read-only store
                code, doc, err = _plan(node, tmp_path, "--dry-run", *acting)
                assert code == 0 and a in {x["id"] for x in doc["actions"]}, err
                res = kubegc(node, tmp_path, "gc", "images", "--yes", *acting)
                assert res.returncode == 2, res.stderr
                assert res.stderr.count("\n") == 1 and "read-only" in res.stderr
                assert "nothing was removed" in res.stderr
            assert a in {i.id for i in node.list_images()}
            assert db.read_bytes() == saved
            assert len(list(state.glob("state.db.corrupt-*"))) == 1  # never moved aside

        for path in state.glob("state.db*"):
            path.unlink()
        db.mkdir()
        res = kubegc(node, tmp_path, "gc", "images", "--dry-run")
        assert res.returncode == 2 and res.stderr == (
            f"kubegc: error: state database {db} is not a regular file\n"
        )


def test_an_image_a_container_takes_while_the_stage_runs_is_kept(tmp_path: Path) -> None:
    """A container created with a planned image after the plan — here right before the image's
    re-check, on the real containerd — protects it (containerd itself would remove the image
    of a container without complaint): `gc images --yes` and `apply` of a saved image plan
    skip it, "used by a container now"; an image nobody took goes."""
    from tests.node.racing import kubegc_in_process, racing

    with LocalNode(tmp_path / "node") as node:
        taken_ref = "docker.io/library/taken-later:1"
        taken = node.import_image(taken_ref, pad_bytes=2048, seed="t")
        free = node.import_image("docker.io/library/never-used:1", pad_bytes=4096, seed="f")
        args = ("gc", "images", "--prune-unused", "--keep", "*busybox*", "--concurrency", "1",
                "--assume-detected-at", "2020-01-01T00:00:00Z", "-o", "json")  # fmt: skip

        def take() -> None:  # a pod starts with the planned image
            pod = node.run_pod("late", namespace="race")
            node.add_container(pod, "app", image=taken_ref, state="created")

        with racing(node, "image_exists", take) as client:
            code, out, err = kubegc_in_process(node, tmp_path, *args, "--yes")
        assert client.fired and code == 0, err
        results = {a["id"]: (a["result"], a["error"]) for a in json.loads(out)["actions"]}
        assert results == {
            taken: ("skipped", "used by a container now"),
            free: ("removed", ""),
        }
        assert taken in {i.id for i in node.list_images()}

        again = node.import_image("docker.io/library/never-used:1", pad_bytes=4096, seed="f")
        node.remove_namespace("race")
        plan_file = tmp_path / "images.plan.json"
        code, out, err = kubegc_in_process(node, tmp_path, *args, "--dry-run",
                                           "--plan-out", str(plan_file))  # fmt: skip
        assert code == 0, err
        assert {a["id"] for a in json.loads(out)["actions"]} == {taken, again}
        with racing(node, "image_exists", take) as client:
            code, out, err = kubegc_in_process(
                node, tmp_path, "apply", str(plan_file), "--yes", "--concurrency", "1",
                "-o", "json",
            )  # fmt: skip
        assert client.fired and code == 0, err
        results = {a["id"]: (a["result"], a["error"]) for a in json.loads(out)["actions"]}
        assert results == {
            taken: ("skipped", "used by a container now"),
            again: ("removed", ""),
        }
        assert taken in {i.id for i in node.list_images()}
        node.remove_namespace("race")


def _records(tmp_path: Path) -> tuple[dict[str, int], list[str]]:
    """(first-detected ns by image ID, meta keys) in the state store; empty when none."""
    import sqlite3

    db = tmp_path / "state" / "state.db"
    if not db.exists():
        return {}, []
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        rows = con.execute("SELECT id, first_detected FROM images") if "images" in tables else []
        first = {str(i): int(t) for i, t in rows}
        meta = [str(r[0]) for r in con.execute("SELECT key FROM meta")] if "meta" in tables else []
    finally:
        con.close()
    return first, meta


def test_a_dry_run_never_changes_what_a_later_run_does(tmp_path: Path) -> None:
    """Image records are only wall-clock observations: a run with --now (dry or not) stores
    nothing; a dry run with --assume-detected-at plans with it but stores the time it saw;
    so a just-pulled image is not removed as years old by the next --yes. A run that acts
    stores --assume-detected-at, and says so."""
    import time

    with LocalNode(tmp_path / "node") as node:
        fresh = node.import_image("docker.io/library/just-pulled:1", pad_bytes=2048, seed="j")
        common = ("--prune-unused", "--keep", "*busybox*")
        began = time.time_ns()

        code, doc, err = _plan(
            node, tmp_path, *common, "--dry-run", "--now", "2020-01-01T00:00:00Z"
        )
        assert code == 0, err
        assert _records(tmp_path) == ({}, [])  # nothing stored, not even when kubegc began
        assert any("--now given" in n and "none stored" in n for n in doc["notes"])
        code, doc, err = _plan(node, tmp_path, *common, "--yes", "--now", "2020-01-01T00:00:00Z")
        assert code == 0, err
        assert _records(tmp_path)[0] == {}

        code, doc, err = _plan(node, tmp_path, *common, "--dry-run",
                               "--assume-detected-at", "2020-01-01T00:00:00Z")  # fmt: skip
        assert code == 0, err
        assert [a["id"] for a in doc["actions"]] == [fresh]  # planned with the assumed time
        assert any("used for this plan only" in n for n in doc["notes"])
        first, _ = _records(tmp_path)
        assert first[fresh] >= began  # what the dry run saw, on the wall clock

        code, doc, err = _plan(node, tmp_path, *common, "--yes")
        assert code == 0, err
        assert doc["actions"] == []
        assert {k["id"]: k["rule"] for k in doc["kept"]}[fresh] == "min-age"
        assert fresh in {i.id for i in node.list_images()}

        late = node.import_image("docker.io/library/late:1", pad_bytes=1024, seed="l")
        code, doc, err = _plan(node, tmp_path, *common, "--keep", "*late*", "--yes",
                               "--assume-detected-at", "2020-01-01T00:00:00Z")  # fmt: skip
        assert code == 0, err
        assert any("stored as the first-detected time of 1 image(s)" in n for n in doc["notes"])
        first, _ = _records(tmp_path)
        assert first[late] == 1577836800 * 10**9 and first[fresh] >= began


def test_a_removed_images_record_goes_with_it(tmp_path: Path) -> None:
    """As the kubelet's image GC: the record of an image it removed is deleted, so the same
    image pulled again is first detected at that pull, and MinAge protects it — in `gc images`
    and in `apply` of an image plan."""
    with LocalNode(tmp_path / "node") as node:
        common = ("--prune-unused", "--keep", "*busybox*")
        for via_apply in (False, True):
            image = node.import_image("docker.io/library/again:1", pad_bytes=1024, seed="again")
            old = ("--assume-detected-at", "2020-01-01T00:00:00Z")
            if via_apply:
                plan_file = tmp_path / "images.plan.json"
                code, _, err = _plan(node, tmp_path, *common, *old, "--plan-out", str(plan_file))
                assert code == 0, err
                res = kubegc(node, tmp_path, "apply", str(plan_file), "--yes", "-o", "json")
                code, doc, err = res.returncode, json.loads(res.stdout), res.stderr
            else:
                code, doc, err = _plan(node, tmp_path, *common, *old, "--yes")
            assert code == 0, err
            assert [(a["id"], a["result"]) for a in doc["actions"]] == [(image, "removed")]
            assert image not in _records(tmp_path)[0]  # forgotten with the image
            assert node.import_image("docker.io/library/again:1", pad_bytes=1024, seed="again") \
                == image  # the same image, pulled again  # fmt: skip
            code, doc, err = _plan(node, tmp_path, *common, "--yes")
            assert code == 0 and doc["actions"] == [], err
            assert {k["id"]: k["rule"] for k in doc["kept"]}[image] == "min-age"
            node.images.RemoveImage(api_pb2.RemoveImageRequest(image=api_pb2.ImageSpec(
                image=image)))  # fmt: skip
            assert _plan(node, tmp_path, "--dry-run")[0] == 0  # a run that no longer sees it
            assert image not in _records(tmp_path)[0]  # drops its record, as the kubelet


def test_a_kubelet_pod_infra_image_other_than_the_runtimes_is_warned_of(
    node: LocalNode, tmp_path: Path
) -> None:
    """kubeadm's flags file (under --host-root) gives the kubelet pause:3.6; the runtime
    uses pause:3.9 (its Status says so with containerd 1.x; the runtime config under the host
    root says so for 2.x, which no longer says in Status). gc images notes the mismatch,
    whether the runtime pins pause:3.9 as ListImages reports it now, and what to set; given
    pause:3.9 the kubelet agrees, and there is no note."""
    host = tmp_path / "host"
    mountpoint = _image_fs_mountpoint(node)
    local = host / mountpoint.lstrip("/")
    local.parent.mkdir(parents=True)
    local.symlink_to(mountpoint)  # the image filesystem, as the host sees it
    config = host / "etc/containerd/config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n'
                      'sandbox_image = "registry.k8s.io/pause:3.9"\n')  # fmt: skip
    flags = host / "var/lib/kubelet/kubeadm-flags.env"
    flags.parent.mkdir(parents=True)
    pinned = any(i.pinned for i in node.list_images()
                 if "registry.k8s.io/pause:3.9" in i.repo_tags)  # fmt: skip
    for given, warned in (("registry.k8s.io/pause:3.6", True),
                          ("registry.k8s.io/pause:3.9", False)):  # fmt: skip
        flags.write_text(f'KUBELET_KUBEADM_ARGS="--pod-infra-container-image={given}"\n')
        res = kubegc(node, tmp_path, "--host-root", str(host), "gc", "images", "--dry-run",
                     "-o", "json")  # fmt: skip
        assert res.returncode == 0, res.stderr
        notes = [n for n in json.loads(res.stdout)["notes"] if "pod-infra-container-image" in n]
        if not warned:
            assert notes == [], notes
            continue
        [note] = notes
        assert note.startswith(
            "the kubelet's --pod-infra-container-image registry.k8s.io/pause:3.6 "
            "(/var/lib/kubelet/kubeadm-flags.env: KUBELET_KUBEADM_ARGS) is not the runtime's "
            "sandbox image registry.k8s.io/pause:3.9 ("
        ), note
        said = "the runtime pins" if pinned else "the runtime does not pin"
        assert f"{said} registry.k8s.io/pause:3.9" in note, note
