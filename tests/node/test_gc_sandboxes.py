"""`kubegc gc sandboxes` end to end against a real containerd."""

from __future__ import annotations

import json
from pathlib import Path

from tests.node.localnode import LocalNode, Pod
from tests.node.test_gc_containers import kubegc, write_pods_file


def sandboxes(node: LocalNode, ns: str) -> set[str]:
    return set(node.list_sandboxes(labels={"io.kubernetes.pod.namespace": ns}))


def dead_sandbox(node: LocalNode, name: str, ns: str, uid: str, attempt: int) -> Pod:
    p = node.run_pod(name, namespace=ns, uid=uid, attempt=attempt)
    node.stop_pod(p)  # NOTREADY, as after a pod restart or a failed sandbox
    return p


def test_sandbox_gc_cases(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Cases 1-3: older dead sandboxes of live pods go; the newest stays even when not READY;
    a deleted pod's sandbox holding an exited container stays, its empty one goes."""
    a1 = dead_sandbox(node, "a", ns, "uid-a-" + ns, 0)
    a2 = dead_sandbox(node, "a", ns, a1.uid, 1)
    a3 = node.run_pod("a", namespace=ns, uid=a1.uid, attempt=2)  # READY, newest
    node.add_container(a3, "app", state="running")
    b1 = dead_sandbox(node, "b", ns, "uid-b-" + ns, 0)
    b2 = dead_sandbox(node, "b", ns, b1.uid, 1)  # seconds old, not READY, newest of b
    c1 = node.run_pod("c", namespace=ns, uid="uid-c-" + ns, attempt=0)
    node.add_container(c1, "job")  # exited: its record keeps the sandbox active
    node.stop_pod(c1)
    c2 = dead_sandbox(node, "c", ns, c1.uid, 1)
    pods = write_pods_file(tmp_path / "pods.json", a1, b1)  # pod c is gone

    dry = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "sandboxes", "-n", ns,
                 "--dry-run", "-o", "json")  # fmt: skip
    assert dry.returncode == 0, dry.stderr
    doc = json.loads(dry.stdout)
    assert doc["kind"] == "SandboxGCPlan"
    planned = {a["id"]: a["rule"] for a in doc["actions"]}
    assert planned == {
        a1.sandbox_id: "older-sandbox",
        a2.sandbox_id: "older-sandbox",
        b1.sandbox_id: "older-sandbox",
        c2.sandbox_id: "deleted-pod",
    }
    kept = {k["id"]: k["rule"] for k in doc["kept"]}
    assert kept == {
        a3.sandbox_id: "ready",
        b2.sandbox_id: "newest-of-pod",
        c1.sandbox_id: "has-containers",
    }
    assert all(a["kind"] == "sandbox" and "container_count" in a for a in doc["actions"])
    assert len(sandboxes(node, ns)) == 7

    done = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "sandboxes", "-n", ns,
                  "--yes", "-o", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {a["result"] for a in json.loads(done.stdout)["actions"]} == {"removed"}
    assert sandboxes(node, ns) == {a3.sandbox_id, b2.sandbox_id, c1.sandbox_id}


def test_sandbox_removed_meanwhile_is_skipped(node: LocalNode, ns: str, tmp_path: Path) -> None:
    """Re-check after the question: a planned sandbox someone else removed while the person
    was asked is skipped (the node is observed again under the lock), not failed."""
    from kubegc_cli.commands.flow import ActOptions
    from kubegc_cli.commands.gc import gc_sandboxes
    from kubegc_cli.core.plan import Result
    from kubegc_cli.core.settings import Settings
    from kubegc_cli.policy.scope import Scope

    s1 = dead_sandbox(node, "p", ns, "uid-p-" + ns, 0)
    dead_sandbox(node, "p", ns, s1.uid, 1)

    class Ui:
        def info(self, message: str) -> None: ...
        def warn(self, message: str) -> None: ...
        def show_plan(self, plan: object) -> None: ...
        def interactive(self) -> bool:
            return True

        def confirm(self, question: str) -> bool:
            node.remove_pod(s1)  # the kubelet got there first
            return True

    plan = gc_sandboxes(
        Settings(runtime_endpoint=node.endpoint, state_dir=tmp_path / "state"),
        False,
        Scope(namespaces=frozenset({ns})),
        ActOptions(),
        Ui(),  # type: ignore[arg-type]
    )
    (a,) = plan.actions
    assert a.id == s1.sandbox_id
    assert (a.result, a.error) == (Result.SKIPPED, "gone since the question")
    assert s1.sandbox_id not in sandboxes(node, ns) and len(sandboxes(node, ns)) == 1


def test_gc_all_plans_on_what_earlier_stages_leave(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Case 3 in `gc all`: the deleted pod's container goes first, so both its sandboxes and
    its log directory go in the same run; the live pod keeps its newest records."""
    live = node.run_pod("live", namespace=ns)
    node.add_container(live, "app", state="running")
    l0 = node.add_container(live, "init", attempt=0)
    l1 = node.add_container(live, "init", attempt=1)
    c1 = node.run_pod("c", namespace=ns, attempt=0)  # a fresh pod UID
    job = node.add_container(c1, "job")
    node.stop_pod(c1)
    c2 = dead_sandbox(node, "c", ns, c1.uid, 1)
    pods = write_pods_file(tmp_path / "pods.json", live)

    res = kubegc(node, tmp_path, "--pods-file", str(pods), "gc", "all", "-n", ns, "--yes",
                 "-o", "json")  # fmt: skip
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["kind"] == "GCPlan"
    got = [(a["kind"], a["id"] if a["kind"] != "pod-log-dir" else "dir", a["result"])
           for a in doc["actions"]]  # fmt: skip
    assert ("container", job, "removed") in got and ("container", l0, "removed") in got
    assert ("sandbox", c1.sandbox_id, "removed") in got
    assert ("sandbox", c2.sandbox_id, "removed") in got
    # No byte is counted twice: the log directory's size leaves out the container logs the
    # container stage removes first, so what the rows expected is what was freed (the logs
    # unlinked, the directory's blocks, the writable layers the runtime removed).
    assert doc["summary"]["bytes_expected"] == doc["summary"]["bytes_freed"] > 0
    assert doc["summary"]["bytes_expected"] == sum(a["expected_bytes"] for a in doc["actions"])
    dirs = [a for a in doc["actions"] if a["kind"] == "pod-log-dir"]
    assert [a["pod_uid"] for a in dirs] == [c1.uid] and dirs[0]["result"] == "removed"
    assert [k[0] for k in got] == sorted(
        (k[0] for k in got), key=["container", "sandbox", "pod-log-dir", "log-symlink"].index
    )  # the kubelet's order
    assert sandboxes(node, ns) == {live.sandbox_id}
    assert node.container_ids(namespace=ns) >= {l1} and l0 not in node.container_ids(namespace=ns)
    assert not c1.log_directory.exists() and live.log_directory.exists()


def test_a_sandbox_of_a_pod_that_comes_back_alive_is_kept(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A deleted pod's NOTREADY sandbox is planned; right before its removal the pod gets a
    READY sandbox again (on the real containerd): skipped, "the pod is alive now"."""
    from tests.node.racing import kubegc_in_process, racing

    live = node.run_pod("live", namespace=ns)
    node.add_container(live, "app", state="running")
    old = dead_sandbox(node, "q", ns, "uid-q-" + ns, 0)
    pods = write_pods_file(tmp_path / "pods.json", live)

    def comes_back() -> None:
        node.run_pod("q", namespace=ns, uid=old.uid, attempt=1)

    with racing(node, "pod_sandbox_status", comes_back) as client:
        code, out, err = kubegc_in_process(
            node, tmp_path, "--pods-file", str(pods), "gc", "sandboxes", "-n", ns, "--yes",
            "-o", "json",
        )  # fmt: skip
    assert client.fired and code == 0, err
    (a,) = json.loads(out)["actions"]
    assert (a["id"], a["rule"], a["result"], a["error"]) == (
        old.sandbox_id,
        "deleted-pod",
        "skipped",
        "the pod is alive now",
    )
    assert old.sandbox_id in sandboxes(node, ns)
