"""Running kubegc on a node, against a real containerd (tests/node/localnode.py): the run lock
between two runs, the blast-radius cap, and a saved plan applied later."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kubegc_cli.cri.v1 import api_pb2
from tests.node.localnode import LocalNode, Pod


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
    """--plan-out, then one container removed by hand and one started: apply skips both and
    removes the rest, exactly the saved plan."""
    pod, app = unit_with_attempts(node, ns, 5)
    side0 = node.add_container(pod, "side", attempt=0, state="created")
    side1 = node.add_container(pod, "side", attempt=1)
    plan_file = tmp_path / "plan.json"
    dry = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--plan-out", str(plan_file))
    assert dry.returncode == 0, dry.stderr
    saved = json.loads(plan_file.read_text())
    planned = {a["id"] for a in saved["actions"]}
    assert planned == {*app[:4], side0}
    assert node.container_ids(namespace=ns) == {*app, side0, side1}  # a dry run

    node.runtime.RemoveContainer(api_pb2.RemoveContainerRequest(container_id=app[0]), timeout=10)
    node.runtime.StartContainer(api_pb2.StartContainerRequest(container_id=side0), timeout=10)
    later = node.add_container(pod, "app", attempt=5)  # not in the plan: stays

    res = kubegc(node, tmp_path, "apply", str(plan_file), "--yes", "-o", "json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    results = {a["id"]: (a["result"], a["error"]) for a in doc["actions"]}
    assert results[app[0]] == ("skipped", "gone before removal")
    assert results[side0][0] == "skipped" and "running" in results[side0][1]
    assert {c for c, (r, _) in results.items() if r == "removed"} == set(app[1:4])
    assert node.container_ids(namespace=ns) == {app[4], later, side0, side1}
    assert node.container_status(side0).state == api_pb2.CONTAINER_RUNNING

    history = json.loads(kubegc(node, tmp_path, "history", "-o", "json").stdout)
    assert history["items"][0]["command"] == "apply"
    again = kubegc(node, tmp_path, "apply", str(plan_file), "--yes", "-o", "json")
    assert again.returncode == 0, again.stderr
    assert {a["result"] for a in json.loads(again.stdout)["actions"]} == {"skipped"}
