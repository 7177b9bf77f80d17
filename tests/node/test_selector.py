"""`-l/--selector` against a real containerd: the pod labels the kubelet puts on a sandbox
(`RunPodSandbox` labels) choose which pods' containers `gc containers` removes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.node.localnode import LocalNode
from tests.node.test_gc_containers import ids, kubegc


def test_gc_containers_removes_only_the_matching_pods_planned_containers(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """Pods x (app=x) and y (app=y), three exited attempts each: the rules plan the two older
    of each; `-l app=x --yes` removes x's two, leaves y's as out of scope."""
    x = node.run_pod("x", namespace=ns, labels={"app": "x", "tier": "web"})
    y = node.run_pod("y", namespace=ns, labels={"app": "y", "tier": "web"})
    made = {p.name: [node.add_container(p, "job", attempt=i) for i in range(3)] for p in (x, y)}

    whole = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--dry-run", "-o", "json")
    assert whole.returncode == 0, whole.stderr
    planned = {a["id"] for a in json.loads(whole.stdout)["actions"]}
    assert planned == {*made["x"][:2], *made["y"][:2]}

    done = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "-l", "app=x", "--yes",
                  "-o", "json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["policy"]["scope"]["selector"] == "app=x"
    assert sorted((a["id"], a["result"]) for a in doc["actions"]) == sorted(
        (c, "removed") for c in made["x"][:2]
    )
    assert doc["summary"]["out_of_scope"] == 2
    assert ids(node, ns) == {made["x"][2], *made["y"]}

    bad = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "-l", "a in (b", "--yes")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "'a in (b'" in bad.stderr and bad.stdout == ""
    assert ids(node, ns) == {made["x"][2], *made["y"]}  # nothing more removed
