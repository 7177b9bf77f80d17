"""Running kubegc on a node, against a real containerd (tests/node/localnode.py): the run lock
between two runs, the blast-radius cap, and a saved plan applied later."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.node.cri.v1 import api_pb2
from tests.node.localnode import BUSYBOX_IMAGE, PAUSE_IMAGE, LocalNode, Pod
from tests.node.test_gc_containers import write_pods_file


def argv(node: LocalNode, tmp_path: Path, *args: str) -> list[str]:
    return [
        sys.executable, "-m", "kubegc_cli",
        "-r", node.endpoint,
        "--kubelet-config", str(node.kubelet_config),
        "--state-dir", str(tmp_path / "state"),
        *args,
    ]  # fmt: skip


def kubegc(node: LocalNode, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv(node, tmp_path, *args),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def unit_with_attempts(node: LocalNode, ns: str, n: int) -> tuple[Pod, list[str]]:
    """One pod whose container "app" has `n` exited attempts (oldest first)."""
    pod = node.run_pod("p", namespace=ns)
    return pod, [node.add_container(pod, "app", attempt=i) for i in range(n)]


def test_two_runs_started_together_only_one_acts(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Issue case 1: two `gc containers --yes` at once: one acts, the other exits 4 naming the
    holder's pid and removes nothing."""
    _, made = unit_with_attempts(node, ns, 13)
    cmd = ["gc", "containers", "-n", ns, "--yes", "--concurrency", "1", "-o", "json"]
    procs = [
        subprocess.Popen(
            argv(node, tmp_path, *cmd),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(p, *p.communicate(timeout=120)) for p in procs]
    codes = sorted(p.returncode for p, _, _ in results)
    assert codes == [0, 4], [(p.returncode, err) for p, _, err in results]
    (winner, out, _), (_, loser_out, loser_err) = sorted(results, key=lambda r: r[0].returncode)
    assert loser_out == ""
    assert loser_err.count("\n") == 1 and f"pid {winner.pid}" in loser_err
    assert "lock" in loser_err
    doc = json.loads(out)
    assert [a["result"] for a in doc["actions"]] == ["removed"] * 12
    assert node.container_ids(namespace=ns) == {made[-1]}
    history = kubegc(node, tmp_path, "history", "-o", "json")
    assert len(json.loads(history.stdout)["items"]) == 1  # one run acted


def test_max_delete_holds_back_the_rest(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Issue case 4: --max-delete 5 with 12 removable containers: 5 removed, 7 held back."""
    _, made = unit_with_attempts(node, ns, 13)
    res = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--max-delete", "5", "--yes",
                 "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    results = [(a["id"], a["result"]) for a in doc["actions"]]
    assert results == [(c, "removed") for c in made[:5]] + [(c, "held-back") for c in made[5:12]]
    assert all(a["error"] == "held back by --max-delete 5" for a in doc["actions"][5:])
    assert doc["summary"]["by_result"] == {
        "planned": 0, "removed": 5, "skipped": 0, "failed": 0, "held-back": 7,
    }  # fmt: skip
    assert "7 removal(s) held back by --max-delete 5" in res.stderr
    assert node.container_ids(namespace=ns) == set(made[5:])

    table = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--max-delete", "5", "--yes")
    assert table.returncode == 0, table.stderr
    assert "removed 5, skipped 0, failed 0, 2 held back by a cap" in table.stdout
    assert node.container_ids(namespace=ns) == set(made[10:])


def test_saved_plan_applied_later_skips_what_changed(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """--plan-out, then one container removed by hand and one started: apply skips the gone
    one and removes the rest, exactly the saved plan. (The CREATED one in the READY sandbox,
    which may start any moment, is kept by the plan: `may-start`.)"""
    pod, app = unit_with_attempts(node, ns, 5)
    side0 = node.add_container(pod, "side", attempt=0, state="created")
    side1 = node.add_container(pod, "side", attempt=1)
    plan_file = tmp_path / "plan.json"
    dry = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--plan-out", str(plan_file))
    assert dry.returncode == 0, dry.stderr
    saved = json.loads(plan_file.read_text())
    planned = {a["id"] for a in saved["actions"]}
    assert planned == set(app[:4])
    assert {k["id"]: k["rule"] for k in saved["kept"]}[side0] == "may-start"
    assert node.container_ids(namespace=ns) == {*app, side0, side1}  # a dry run

    node.runtime.RemoveContainer(api_pb2.RemoveContainerRequest(container_id=app[0]), timeout=10)
    node.runtime.StartContainer(api_pb2.StartContainerRequest(container_id=side0), timeout=10)
    later = node.add_container(pod, "app", attempt=5)  # not in the plan: stays

    res = kubegc(node, tmp_path, "apply", str(plan_file), "--yes", "-o", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    results = {a["id"]: (a["result"], a["error"]) for a in doc["actions"]}
    assert results[app[0]] == ("skipped", "gone before removal")
    assert side0 not in results
    assert {c for c, (r, _) in results.items() if r == "removed"} == set(app[1:4])
    assert node.container_ids(namespace=ns) == {app[4], later, side0, side1}
    assert node.container_status(side0).state == api_pb2.CONTAINER_RUNNING

    history = json.loads(kubegc(node, tmp_path, "history", "-o", "json").stdout)
    assert history["items"][0]["command"] == "apply"
    again = kubegc(node, tmp_path, "apply", str(plan_file), "--yes", "-o", "json")
    assert again.returncode == 0, again.stderr
    assert {a["result"] for a in json.loads(again.stdout)["actions"]} == {"skipped"}


# --- a saved plan is untrusted input ---------------------------------------------------------
#
# Whatever an edited plan file says, `apply` removes nothing the node as it is now does not
# allow. Exit codes: 2 (nothing removed, before the runtime is asked) for a file no plan could
# be — another command, an action kind or rule its kind cannot hold, a pod log directory that
# is not a direct child of podLogsDir named with its action's pod UID, a legacy link not
# directly in /var/log/containers, a path with `..`; 0 with the action `skipped` and the reason
# for an object the node does not let go now (running, in use, the newest record, a live pod,
# a container's link) — the file's copy of an object is never used, the runtime's is.


def tree(*roots: Path) -> dict[str, str]:
    """Every path under `roots` (the roots too) with what it is: a file's sha256, a symlink's
    target, `dir`; missing roots are `missing`. Equal before and after = nothing touched."""
    out: dict[str, str] = {}
    for root in roots:
        if not root.exists() and not root.is_symlink():
            out[str(root)] = "missing"
            continue
        for p in [root, *sorted(root.rglob("*"))] if root.is_dir() else [root]:
            if p.is_symlink():
                out[str(p)] = "-> " + os.readlink(p)
            elif p.is_dir():
                out[str(p)] = "dir"
            else:
                out[str(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def make_victim(where: Path) -> Path:
    """A directory that no plan may touch, with files worth checksumming."""
    (where / "sub").mkdir(parents=True)
    (where / "a.txt").write_text("precious\n")
    (where / "sub" / "b.log").write_bytes(os.urandom(4096))
    return where


def edited(plan_file: Path, change: Callable[[dict[str, Any]], object], name: str) -> Path:
    doc = json.loads(plan_file.read_text())
    change(doc)
    out = plan_file.with_name(f"{name}.json")
    out.write_text(json.dumps(doc))
    return out


def action(doc: dict[str, Any], wanted: str) -> dict[str, Any]:
    found: dict[str, Any] = next(a for a in doc["actions"] if a["id"] == wanted)
    return found


def test_apply_of_a_tampered_container_plan_removes_only_what_the_node_allows(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Containers: another command, a running container or the newest record swapped in, the
    rule turned into deleted-pod, the guard turned off in the file, the labels moved to another
    pod, the log path and legacy link name pointed at a victim: each is exit 2 or skipped; only
    the planned dead containers and their own logs go, the victim is byte for byte the same."""
    pod = node.run_pod("p", namespace=ns)
    web = node.add_container(pod, "web", state="running")
    app = [node.add_container(pod, "app", attempt=i) for i in range(3)]
    victim = make_victim(tmp_path / "victim")
    plan_file = tmp_path / "plan.json"
    dry = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--plan-out", str(plan_file))
    assert dry.returncode == 0, dry.stderr
    saved = json.loads(plan_file.read_text())
    assert [a["id"] for a in saved["actions"]] == app[:2]
    newest = next(k["object"] for k in saved["kept"] if k["id"] == app[2])
    running = {**newest, "id": web, "state": "EXITED"}  # what the file claims; not so
    pods = write_pods_file(tmp_path / "pods.json", pod)
    everything = {web, *app}
    before = tree(victim, pod.log_directory)

    def swap(doc: dict[str, Any], obj: dict[str, Any], **fields: Any) -> None:
        doc["actions"][0].update(id=obj["id"], object=obj, **fields)

    cases: list[tuple[str, Callable[[dict[str, Any]], object], list[str], int, str]] = [
        ("command", lambda d: d["saved"].update(command="rm -rf"), [], 2, "saved command"),
        ("kind", lambda d: d["actions"][0].update(kind="sandbox"), [], 2, "cannot be in this"),
        ("rule", lambda d: d["actions"][0].update(rule="guard-newest-record"), [], 2,
         "not a rule that removes"),
        ("running", lambda d: swap(d, running), [], 0, "running now"),
        ("newest", lambda d: swap(d, newest), [], 0, "newest record"),
        ("guard-off", lambda d: (swap(d, newest), d["policy"].update(match_kubelet=True)), [],
         0, "newest record"),
        ("other-pod", lambda d: swap(d, {**newest, "labels": {**newest["labels"],
         "io.kubernetes.pod.uid": "0ther-p0d"}}), [], 0, "newest record"),
        ("deleted-pod", lambda d: swap(d, newest, rule="deleted-pod"), [], 0,
         "no pod source to re-check"),
        ("deleted-pod-alive", lambda d: swap(d, newest, rule="deleted-pod"),
         ["--pods-file", str(pods)], 0, "is not gone by the pod source"),
    ]  # fmt: skip
    for name, change, extra, code, said in cases:
        f = edited(plan_file, lambda d, c=change: (d.update(actions=d["actions"][:1]), c(d)), name)
        res = kubegc(node, tmp_path, *extra, "apply", str(f), "--yes", "-o", "json")
        assert res.returncode == code, (name, res.stderr)
        if code == 2:
            assert res.stdout == "" and said in res.stderr, (name, res.stderr)
        else:
            [result] = json.loads(res.stdout)["actions"]
            assert result["result"] == "skipped" and said in result["error"], (name, result)
        assert node.container_ids(namespace=ns) == everything, name
        assert node.container_status(web).state == api_pb2.CONTAINER_RUNNING
        assert tree(victim, pod.log_directory) == before, name

    # The file's object names the victim as the log, and labels that would put the legacy
    # link there: the runtime's own log path and labels are used, the victim stays.
    legacy = Path("/var/log/containers")  # the host's (host root /): the lure must resolve
    made = not legacy.exists()
    legacy.mkdir(parents=True, exist_ok=True)
    try:
        lured(node, ns, tmp_path, saved, victim, legacy, pod, web, app)
    finally:
        if made:
            legacy.rmdir()


def lured(node: LocalNode, ns: str, tmp_path: Path, saved: dict[str, Any], victim: Path,
          legacy: Path, pod: Pod, web: str, app: list[str]) -> None:  # fmt: skip
    for a in saved["actions"]:
        link = f"{os.path.relpath(victim, legacy)}/x"
        lure = victim / f"x_{ns}_app-{a['id']}.log"
        lure.symlink_to(victim / "a.txt")
        a["object"].update(
            log_path=str(victim / "a.txt"),
            labels={**a["object"]["labels"], "io.kubernetes.pod.name": link},
        )
    f = tmp_path / "lured.json"
    f.write_text(json.dumps(saved))
    before = tree(victim)
    res = kubegc(node, tmp_path, "apply", str(f), "--yes", "-o", "json")
    assert res.returncode == 0, res.stderr
    assert [(a["id"], a["result"]) for a in json.loads(res.stdout)["actions"]] == [
        (app[0], "removed"), (app[1], "removed"),
    ]  # fmt: skip
    assert node.container_ids(namespace=ns) == {web, app[2]}
    assert tree(victim) == before
    assert sorted(p.name for p in (pod.log_directory / "app").iterdir()) == ["2.log"]


def test_apply_keeps_a_terminated_pods_newest_record_unless_its_own_command_line_says(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Pod `done` has finished and the pod source still lists it, Succeeded. A plan saved with
    --include-terminated-pods takes both its dead attempts; the file is edited to say the flag
    was not given. `apply` without the flag removes the older one and keeps the newest, the
    pod's record, naming the flag; `apply --include-terminated-pods` then removes it."""
    live = node.run_pod("live", namespace=ns)
    node.add_container(live, "web", state="running")
    done = node.run_pod("done", namespace=ns)
    old = node.add_container(done, "job", attempt=0)
    newest = node.add_container(done, "job", attempt=1)
    node.stop_pod(done)
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        {"metadata": {"name": "live", "namespace": ns, "uid": live.uid},
         "status": {"phase": "Running"}},
        {"metadata": {"name": "done", "namespace": ns, "uid": done.uid},
         "status": {"phase": "Succeeded"}}]}))  # fmt: skip
    plan_file = tmp_path / "plan.json"
    dry = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "containers", "-n", ns,
                 "--include-terminated-pods", "--plan-out", str(plan_file))  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert "apply" in dry.stderr and "--include-terminated-pods" in dry.stderr.splitlines()[-1]
    said_not = edited(plan_file, lambda d: d["policy"].update(include_terminated_pods=False),
                      "said-not")  # fmt: skip
    assert {(a["id"], a["rule"]) for a in json.loads(said_not.read_text())["actions"]} == {
        (old, "terminated-pod"), (newest, "terminated-pod")}  # fmt: skip
    res = kubegc(node, tmp_path, "--pods-file", str(pods), "apply", str(said_not), "--yes",
                 "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    got = {a["id"]: (a["result"], a.get("error") or "") for a in json.loads(res.stdout)["actions"]}
    assert got[old][0] == "removed"
    assert got[newest][0] == "skipped" and "--include-terminated-pods" in got[newest][1], got
    assert newest in node.container_ids(namespace=ns) and old not in node.container_ids(
        namespace=ns
    )
    res = kubegc(node, tmp_path, "--pods-file", str(pods), "apply", str(said_not), "--yes",
                 "--include-terminated-pods", "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert newest not in node.container_ids(namespace=ns)


def test_apply_of_a_tampered_log_plan_removes_only_what_the_node_allows(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Pod log directories and legacy links, on a host under --host-root: a path outside
    podLogsDir, one with `..`, a UID not the directory's, a link outside /var/log/containers
    are exit 2; another pod's directory, a running container's link, a link that does not
    dangle are skipped; a symlinked directory loses only its link. The victim, the other pod's
    logs and everything not planned stay byte for byte."""
    host = tmp_path / "host"
    pods_dir, links_dir = host / "var/log/pods", host / "var/log/containers"
    links_dir.mkdir(parents=True)
    kubelet = tmp_path / "kubelet.yaml"
    kubelet.write_text("kind: KubeletConfiguration\npodLogsDir: /var/log/pods\n")
    victim = make_victim(host / "srv/victim")
    live = node.run_pod("web", namespace=ns)
    live_cid = node.add_container(live, "app", state="running")
    pods = write_pods_file(tmp_path / "pods.json", live)
    gone_uid = str(uuid.uuid4())
    gone = pods_dir / f"{ns}_gone_{gone_uid}"
    (gone / "c").mkdir(parents=True)
    (gone / "c/0.log").write_text("old\n")
    other = pods_dir / f"{ns}_web_{live.uid}"  # the live pod's
    (other / "app").mkdir(parents=True)
    (other / "app/0.log").write_text("live\n")
    gone_link = links_dir / f"gone_{ns}_c-{'ab' * 32}.log"
    gone_link.symlink_to("/nonexistent/0.log")
    running_link = links_dir / f"web_{ns}_app-{live_cid}.log"
    running_link.symlink_to("/nonexistent/rotated.log")  # dangles during log rotation
    lure = links_dir / f"v_{ns}_c-{'cd' * 32}.log"
    lure.symlink_to("../../../srv/victim/a.txt")  # does not dangle
    base = ["--host-root", str(host), "--kubelet-config", str(kubelet)]
    plan_file = tmp_path / "plan.json"
    dry = kubegc(node, tmp_path, *base, "--pods-file", str(pods), "gc", "logs", "--plan-out",
                 str(plan_file))  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    saved = json.loads(plan_file.read_text())
    dir_id = f"/var/log/pods/{gone.name}"
    link_id = f"/var/log/containers/{gone_link.name}"
    assert sorted(a["id"] for a in saved["actions"]) == sorted([link_id, dir_id])
    evil_uid = str(uuid.uuid4())
    evil = pods_dir / f"{ns}_evil_{evil_uid}"
    evil.symlink_to(victim, target_is_directory=True)
    watched = (victim, other, gone, links_dir)
    before = tree(*watched)

    def redirect(**fields: Any) -> Callable[[dict[str, Any]], object]:
        return lambda d: action(d, dir_id).update(id=fields.get("path"), **fields)

    def relink(path: str) -> Callable[[dict[str, Any]], object]:
        return lambda d: action(d, link_id).update(id=path, path=path)

    outside = "/srv/victim"
    u = str(uuid.uuid4())  # a name that is a pod UID, wherever it is
    cases: list[tuple[str, Callable[[dict[str, Any]], object], bool, int, str]] = [
        ("outside", redirect(path=f"/srv/{u}", pod_uid=u), True, 2, "not directly inside"),
        ("dotdot", redirect(path=f"/var/log/pods/../../..{outside}", pod_uid="victim"), True,
         2, "not a clean absolute path"),
        ("below", redirect(path=f"/var/log/pods/{evil.name}/{u}", pod_uid=u), True, 2,
         "not directly inside"),
        ("not-a-uid", redirect(path="/var/log/pods/ns_p_victim", pod_uid="victim"), True, 2,
         "not named like a pod"),
        ("uid", redirect(path=f"/var/log/pods/{other.name}"), True, 2,
         "does not end in the action's pod UID"),
        ("other-pod", redirect(path=f"/var/log/pods/{other.name}", pod_uid=live.uid), True, 0,
         "is not gone by the pod source"),
        ("other-pod-no-source", redirect(path=f"/var/log/pods/{other.name}",
         pod_uid=live.uid), False, 0, "no pod source"),
        ("link-outside", relink(f"{outside}/a.log"), True, 2, "directly in /var/log/containers"),
        ("link-dotdot", relink(f"/var/log/containers/../../..{outside}/a.log"), True, 2,
         "not a clean absolute path"),
        ("link-running", relink(f"/var/log/containers/{running_link.name}"), True, 0,
         "its container is RUNNING now"),
        ("link-lure", relink(f"/var/log/containers/{lure.name}"), True, 0,
         "no longer a dangling symlink"),
        ("command", lambda d: d["saved"].update(command="gc containers"), True, 2,
         "saved command"),
    ]  # fmt: skip
    for name, change, with_pods, code, said in cases:
        f = edited(plan_file, change, name)
        source = ["--pods-file", str(pods)] if with_pods else []
        res = kubegc(node, tmp_path, *base, *source, "apply", str(f), "--yes", "-o", "json")
        assert res.returncode == code, (name, res.stderr)
        if code == 2:
            assert res.stdout == "" and said in res.stderr, (name, res.stderr)
            assert tree(*watched) == before, name
            continue
        results = {a["id"]: a for a in json.loads(res.stdout)["actions"]}
        tampered = next(a for i, a in results.items() if i not in (dir_id, link_id))
        assert tampered["result"] == "skipped" and said in tampered["error"], (name, tampered)
        # the untouched action of the pair was carried out: put it back for the next case
        if results.get(dir_id, {}).get("result") == "removed":
            (gone / "c").mkdir(parents=True)
            (gone / "c/0.log").write_text("old\n")
        if results.get(link_id, {}).get("result") == "removed":
            gone_link.symlink_to("/nonexistent/0.log")
        assert tree(*watched) == before, name

    # A symlinked pod log directory of a pod that is gone: only the link goes.
    to_evil = redirect(path=f"/var/log/pods/{evil.name}", pod_uid=evil_uid)
    f = edited(plan_file, lambda d: (to_evil(d), d.update(actions=d["actions"][:1])), "evil")
    res = kubegc(node, tmp_path, *base, "--pods-file", str(pods), "apply", str(f), "--yes",
                 "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert action(json.loads(res.stdout), f"/var/log/pods/{evil.name}")["result"] == "removed"
    assert not evil.is_symlink() and tree(victim) == before_of(before, victim)
    # The plan as saved: the directory was made again after it (by the cases above), so it
    # is skipped as written to since the plan; a plan made now takes exactly its two objects.
    res = kubegc(node, tmp_path, *base, "--pods-file", str(pods), "apply", str(plan_file),
                 "--dry-run", "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    stale = action(json.loads(res.stdout), dir_id)
    assert stale["result"] == "skipped" and "after the plan" in stale["error"], stale
    dry = kubegc(node, tmp_path, *base, "--pods-file", str(pods), "gc", "logs", "--plan-out",
                 str(plan_file))  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    res = kubegc(node, tmp_path, *base, "--pods-file", str(pods), "apply", str(plan_file),
                 "--yes", "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert {a["id"]: a["result"] for a in json.loads(res.stdout)["actions"]} == {
        dir_id: "removed", link_id: "removed"}  # fmt: skip
    assert not gone.exists() and not gone_link.is_symlink()
    after = tree(victim, other, running_link, lure)
    assert after == before_of(before, victim, other) | tree(running_link, lure)
    assert running_link.is_symlink() and lure.is_symlink()


def before_of(before: dict[str, str], *roots: Path) -> dict[str, str]:
    """The entries of `before` at or below `roots`."""
    return {
        p: v for p, v in before.items()
        if any(p == str(r) or p.startswith(f"{r}/") for r in roots)
    }  # fmt: skip


def test_apply_of_a_tampered_image_plan_removes_only_what_the_node_allows(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Images: an action's ID (and object) swapped for an image a container uses, or for the
    sandbox image with `pinned: false` in the file: skipped; the planned image goes."""
    pod = node.run_pod("p", namespace=ns)
    node.add_container(pod, "app")
    unused = node.import_image(f"kubegc.test/{ns}:1", seed=ns)
    ids = {t: i.id for i in node.list_images() for t in i.repo_tags}
    plan_file = tmp_path / "plan.json"
    dry = kubegc(node, tmp_path, "gc", "images", "--prune-unused", "--minimum-image-ttl-duration",
                 "0s", "--plan-out", str(plan_file))  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    only_mine = lambda d: d.update(actions=[action(d, unused)])  # noqa: E731
    for name, image in (("in-use", ids[BUSYBOX_IMAGE]), ("sandbox", ids[PAUSE_IMAGE])):

        def swap(d: dict[str, Any], image: str = image) -> None:
            only_mine(d)
            obj = {**d["actions"][0]["object"], "id": image, "pinned": False}
            d["actions"][0].update(id=image, object=obj)

        res = kubegc(node, tmp_path, "apply", str(edited(plan_file, swap, name)), "--yes",
                     "-o", "json")  # fmt: skip
        assert res.returncode == 0, res.stderr
        [result] = json.loads(res.stdout)["actions"]
        assert result["result"] == "skipped", result
        if name == "in-use":  # the re-check names who holds it (this pod's app among them)
            assert result["error"].startswith("used by ") and result["error"].endswith(" now")
            assert f"{ns}/p app (EXITED)" in result["error"] or "more" in result["error"]
        else:
            assert result["error"] == "the sandbox image" or result["error"].startswith(
                "pinned now (the runtime's ImageStatus"
            ), result
        assert image in {i.id for i in node.list_images()}
    res = kubegc(node, tmp_path, "apply", str(edited(plan_file, only_mine, "mine")), "--yes",
                 "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert [a["result"] for a in json.loads(res.stdout)["actions"]] == ["removed"]
    assert unused not in {i.id for i in node.list_images()}
    assert {ids[BUSYBOX_IMAGE], ids[PAUSE_IMAGE]} <= {i.id for i in node.list_images()}


def test_apply_takes_caps_and_is_recorded_at_its_own_time(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """`apply --max-delete 1`: one removed, the rest held back (the tighter of the saved plan
    and the flag); `history` stamps the run with when apply acted, not the plan's time."""
    _, app = unit_with_attempts(node, ns, 4)
    plan_file = tmp_path / "plan.json"
    dry = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--max-delete", "2",
                 "--plan-out", str(plan_file))  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    long_ago = "2020-01-01T00:00:00Z"
    old = edited(
        plan_file, lambda d: (d.update(now=long_ago), d["saved"].update(saved_at=long_ago)), "old"
    )
    started = datetime.now(UTC).replace(microsecond=0)
    res = kubegc(node, tmp_path, "apply", str(old), "--max-delete", "1", "--yes", "-o", "json")
    assert res.returncode == 0, res.stderr
    assert [(a["id"], a["result"]) for a in json.loads(res.stdout)["actions"]] == [
        (app[0], "removed"), (app[1], "held-back"), (app[2], "held-back"),
    ]  # fmt: skip
    assert node.container_ids(namespace=ns) == set(app[1:])
    wide = kubegc(node, tmp_path, "apply", str(plan_file), "--max-delete", "10", "--dry-run",
                  "-o", "json")  # fmt: skip
    assert [a["result"] for a in json.loads(wide.stdout)["actions"]] == [
        "skipped", "planned", "held-back"]  # fmt: skip
    [run] = json.loads(kubegc(node, tmp_path, "history", "-o", "json").stdout)["items"]
    assert run["command"] == "apply"
    assert datetime.fromisoformat(run["at"].replace("Z", "+00:00")) >= started


@pytest.mark.parametrize("name", ["plan.json", "plan.yaml"])
def test_the_plan_out_hint_is_the_whole_command_that_carries_the_plan_out(
    node: LocalNode, ns: str, tmp_path: Path, name: str
) -> None:
    """The line `--plan-out` prints names the runtime, the state dir, the kubelet config and
    the pod source the plan was made with: run as printed (a path with a space in it
    included), it removes what was planned — the dead containers of a pod the pods file
    says is gone. A plan named `.yaml` is YAML, and is applied as the JSON one is; the same
    command given a file nested 5,000 levels deep is exit 2 and removes nothing."""
    import shlex

    live = node.run_pod("live", namespace=ns)
    gone = node.run_pod("gone", namespace=ns)
    dead = {node.add_container(gone, "app", attempt=i) for i in range(2)}
    node.stop_pod(gone)
    pods = write_pods_file(tmp_path / "my pods.json", live)
    plan_file = tmp_path / name
    dry = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "containers", "-n", ns,
                 "--plan-out", str(plan_file))  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    assert plan_file.read_text().lstrip().startswith("{") is name.endswith(".json")
    [line] = [ln for ln in dry.stderr.splitlines() if "carry it out with: " in ln]
    words = shlex.split(line.split("carry it out with: ", 1)[1])
    assert words[0] == "kubegc" and words[-3:] == ["apply", str(plan_file), "--yes"]
    assert ["--pods-file", str(pods)] == words[words.index("--pods-file") :][:2]
    assert ["-r", node.endpoint] == words[words.index("-r") :][:2]
    deep = plan_file.with_name("deep" + plan_file.suffix)
    deep.write_text("kind: GCPlan\nnotes: " + "[" * 5000 + "]" * 5000 + "\n")
    if name.endswith(".json"):
        deep.write_text('{"kind": "GCPlan", "notes": ' + "[" * 5000 + "]" * 5000 + "}")
    at = words.index(str(plan_file))
    refused = subprocess.run([sys.executable, "-m", "kubegc_cli", *words[1:at], str(deep),
                              *words[at + 1 :]], capture_output=True, text=True, timeout=120,
                             stdin=subprocess.DEVNULL)  # fmt: skip
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stderr
    assert refused.stderr.count("\n") == 1 and "nested too deeply" in refused.stderr
    assert dead <= node.container_ids(namespace=ns)
    res = subprocess.run([sys.executable, "-m", "kubegc_cli", *words[1:], "-o", "json"],
                         capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)  # fmt: skip
    assert res.returncode == 0, res.stderr
    removed = {a["id"] for a in json.loads(res.stdout)["actions"] if a["result"] == "removed"}
    assert removed == dead and not dead & node.container_ids(namespace=ns)
