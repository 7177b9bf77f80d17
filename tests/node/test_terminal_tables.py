"""Every command with a table, in a real terminal (tmux) of 80x24 (with `TERM=dumb` too) and
160x45, against the test node's containerd: no number or ID is cut, dropped or split by the
terminal's wrap, no ellipsis stands for a cut, and the confirmation comes right after the
summary it asks about.

The node: a live pod with long names and three exited attempts of one container (two beyond
MaxPerPodContainer), a deleted pod (its exited container, NOTREADY sandbox and log
directory), and an orphaned pod directory under a fixture kubelet root (`--root-dir`).
Figures are checked against the same command's `-o json` where they do not move between two
runs (IDs, sizes of exited containers' logs, directories and images, capacities); where
they may (free bytes of a filesystem other programs write to), each is checked to be a
whole figure on its row.
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.core.units import format_bytes
from kubegc_cli.render.pressure import bytes_cell
from tests.node.localnode import LocalNode
from tests.node.test_df import layer_bytes
from tests.node.test_gc_containers import write_pods_file
from tests.node.test_residue import orphan_dir
from tests.tmuxpane import Pane, run_in_pane

SIZES = [(80, 24, "dumb"), (80, 24, "xterm-256color"), (160, 45, "xterm-256color")]
#: A byte figure as tables write it (`format_bytes`), or a count.
FIGURE = re.compile(r"-?\d[\d,]*(\.\d+)?(B|Ki|Mi|Gi|Ti|Pi|Ei)?")


@dataclass
class Messy:
    """The test's corner of the node and the options every command gets."""

    node: LocalNode
    ns: str
    root: Path
    tmp: Path
    base: list[str]

    def argv(self, *args: str) -> list[str]:
        return [*self.base, *args]

    def doc(self, *args: str) -> dict[str, Any]:
        res = subprocess.run([*self.argv(*args), "-o", "json"], capture_output=True, text=True,
                             timeout=120, stdin=subprocess.DEVNULL)  # fmt: skip
        assert res.returncode in (0, 1), res.stderr
        doc: dict[str, Any] = json.loads(res.stdout)
        return doc


@pytest.fixture(scope="module")
def messy(node: LocalNode, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Messy]:
    tmp = tmp_path_factory.mktemp("tables")
    ns = "terminal-tables-" + tmp.name[-6:].strip("-").lower().replace("_", "-")
    live = node.run_pod("a-pod-with-a-rather-long-name-for-an-80-column-terminal", namespace=ns)
    node.add_container(live, "app", state="running")
    dead = [node.add_container(live, "a-container-with-a-rather-long-name", attempt=attempt)
            for attempt in range(3)]  # fmt: skip
    gone = node.run_pod("a-deleted-pod-with-a-long-name", namespace=ns)
    dead.append(node.add_container(gone, "work"))
    node.stop_pod(gone)
    layers_reported(node, dead)
    root = tmp / "kubelet"
    orphan_dir(root)
    (tmp / "cni").mkdir()
    pods = write_pods_file(tmp / "pods.json", live)
    base = [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint, "--kubelet-config",
            str(node.kubelet_config), "--state-dir", str(tmp / "state"), "--pods-file",
            str(pods), "--lock-timeout", "120s"]  # fmt: skip
    yield Messy(node, ns, root, tmp, base)
    node.remove_namespace(ns)


def layers_reported(node: LocalNode, ids: list[str], wait: float = 30.0) -> None:
    """Wait (up to `wait` seconds) until the runtime reports a writable layer for each of
    `ids`: containerd refreshes snapshot usage every 10 s, so a table run after a JSON run
    could otherwise count a layer the JSON did not."""
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if all(layer_bytes(node, ids).get(i, 0) > 0 for i in ids):
            return
        time.sleep(1)


def shown(messy: Messy, args: list[str], size: tuple[int, int, str]) -> str:
    """The screen of `args` run to its end at `size`, checked for what holds for every table:
    it ran (exit 0, 1 for a failure of part of it, 5 for a threshold met), no ellipsis stands
    for a cut (df's short commands aside: `kubegc gc all …` says its options are printed
    below), and no figure is split by the terminal's wrap (a full row ending in a figure,
    the next going on)."""
    width, height, term = size
    code, screen = run_in_pane(messy.argv(*args), width, height, term=term)
    assert code in (0, 1, 5), screen  # 5: evict check found a threshold met
    rows = screen.splitlines()
    assert all(len(r) <= width for r in rows)
    for r in rows:
        assert "…" not in re.sub(r"kubegc [a-z -]+ …|\(… = ", "", r), f"cut: {r!r}\n{screen}"
    for r, following in itertools.pairwise(rows):
        last = r.split()[-1] if r.strip() else ""
        if len(r) == width and FIGURE.fullmatch(last) and following[:1].isalnum():
            raise AssertionError(f"a figure split by the wrap:\n{r}\n{following}\n{screen}")
    return screen


def words(screen: str) -> set[str]:
    return set(screen.split())


def unfolded(screen: str) -> str:
    """The screen's rows joined without a break or indent: a path folded over rows (by the
    terminal, or under its row) is whole here."""
    return "".join(r.strip() for r in screen.splitlines())


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}-{s[2]}")
def test_evict_check_shows_every_threshold_with_its_figures_met_and_kind(
    messy: Messy, size: tuple[int, int, str]
) -> None:
    args = ["evict", "check", "--root-dir", str(messy.root)]
    doc = messy.doc(*args)
    screen = shown(messy, args, size)
    rows = {r.split()[0]: r for r in screen.splitlines() if r.strip() and not r[0].isspace()}
    for t in doc["thresholds"]:
        row = rows[t["signal"]].split()
        counted = "inodes" in t["signal"] or t["signal"] == "pid.available"
        if t["observed"] is not None:
            quantity = str(t["threshold_quantity"]) if counted else bytes_cell(
                t["threshold_quantity"])  # fmt: skip
            assert f"({quantity})" in row, (t, row)
            observed, _threshold, _quantity, margin = row[1:5]
            assert FIGURE.fullmatch(observed) and FIGURE.fullmatch(margin), row
        assert ("MET" if t["met"] else "no") in row, row
        kind = "hard" if t["hard"] else "soft"
        assert any(w.startswith(kind) or w.startswith(f"({kind}") for w in row) or (
            f"KIND: {kind}" in screen
        ), row


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}-{s[2]}")
def test_df_shows_every_figure_whole(messy: Messy, size: tuple[int, int, str]) -> None:
    args = ["df", "--root-dir", str(messy.root), "--pod-logs-dir", str(messy.node.pod_logs_dir)]
    doc = messy.doc(*args)
    screen = shown(messy, args, size)
    seen = words(screen)
    for f in doc["filesystems"]:
        assert format_bytes(f["capacity"]) in seen
        for ln in f["lines"]:
            if ln["parent"] and not ln["bytes"] and not ln["reclaimable"]:
                continue  # (listed with -v)
            row = [r for r in screen.splitlines() if r.strip().startswith(ln["label"])]
            assert row, (ln["label"], screen)
            if ln["bytes"] is not None:  # the figure right after the label (and its count)
                rest = row[0].strip().removeprefix(ln["label"])
                after = (rest.split(")", 1)[1] if rest.startswith(" (") else rest).split()
                assert after and FIGURE.fullmatch(after[0]), (ln, row[0])
            if ln["key"].startswith(("images", "residue")) and ln["bytes"] is not None:
                assert bytes_cell(ln["bytes"]) in seen, (ln, screen)
        for t in f["eviction"]:
            assert t["signal"] in seen and ("MET" in seen or not t["met"])
    for p in doc["pods"]:
        if p["namespace"] == messy.ns:
            assert f"{p['namespace']}/{p['name']}" in seen and bytes_cell(p["footprint"]) in seen


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}-{s[2]}")
def test_residue_scan_shows_each_finding_whole_in_a_few_lines(
    messy: Messy, size: tuple[int, int, str]
) -> None:
    args = ["residue", "scan", "--root-dir", str(messy.root), "--pod-logs-dir",
            str(messy.node.pod_logs_dir), "--cni-dir", str(messy.tmp / "cni"),
            "--kind", "orphaned-pod-dir", "--kind", "dead-container",
            "--kind", "dead-sandbox"]  # fmt: skip
    doc = messy.doc(*args)
    screen = shown(messy, args, size)
    seen, whole = words(screen), unfolded(screen)
    mine = [f for f in doc["actions"] + doc["kept"]
            if f["type"] == "orphaned-pod-dir" or messy.ns in json.dumps(f)]  # fmt: skip
    assert {f["type"] for f in mine} == {"orphaned-pod-dir", "dead-container", "dead-sandbox"}
    for f in mine:
        assert f["id"] in whole, (f["id"], screen)
        if f["bytes"] is not None:
            assert format_bytes(f["bytes"]) in seen, (f, screen)
    # a finding takes its row and the evidence under it at the width, not a thin column
    rows = len(screen.splitlines())
    assert rows <= 12 * len(doc["actions"] + doc["kept"]) + 12, screen


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}-{s[2]}")
@pytest.mark.parametrize(
    "command",
    [["gc", "containers"], ["gc", "sandboxes"], ["gc", "images"], ["gc", "logs"], ["gc", "all"],
     ["reclaim", "--residue-kind", "orphaned-pod-dir"]],
    ids=lambda c: "-".join(c[:2]),
)  # fmt: skip
def test_a_dry_run_table_shows_every_id_and_size_whole(
    messy: Messy, size: tuple[int, int, str], command: list[str]
) -> None:
    args = [*command, "--dry-run"]
    if command[0] == "reclaim":
        args += ["--root-dir", str(messy.root)]
    if command[-1] in ("logs", "all") or command[0] == "reclaim":
        args += ["--pod-logs-dir", str(messy.node.pod_logs_dir)]
    doc = messy.doc(*args)
    screen = shown(messy, args, size)
    seen, whole = words(screen), unfolded(screen)
    shown_kept = ("min-age", "protected", "pinned", "unpullable")  # (the others need -v)
    rows = doc["actions"] + [k for k in doc["kept"] if k["rule"] in shown_kept]
    mine = [a for a in rows if messy.ns in json.dumps(a) or a["kind"] == "image"
            or a.get("type") == "orphaned-pod-dir"]  # fmt: skip
    # (the deleted pod's sandbox still has a container, and its logs a sandbox)
    assert mine or command in (["gc", "sandboxes"], ["gc", "logs"]), doc
    assert f"{len(doc['actions'])} " in screen.splitlines()[-1] or command[0] == "reclaim"
    for a in mine:
        if a["kind"] in ("container", "sandbox", "image"):
            assert a["id"].removeprefix("sha256:")[:13] in seen, (a["id"], screen)
        if a["kind"] == "image":
            assert format_bytes(a["size"]) in seen
        if a["kind"] == "container" and a["expected_bytes"]:  # its layer and log
            assert format_bytes(a["expected_bytes"]) in seen, (a, screen)
        if a["kind"] in ("pod-log-dir", "finding"):
            assert a.get("path", a["id"]) in whole
    total = doc["summary"]["bytes_expected"]
    if command[0] == "reclaim" or command[1] in ("containers", "logs", "all", "images"):
        assert format_bytes(total) in seen, screen  # the headline has its byte total


def test_the_question_comes_right_after_the_summary_it_asks_about(messy: Messy) -> None:
    """At 80x24, `gc containers` without --dry-run or --yes shows its plan and asks: the row
    above the question is the summary line; answered no, nothing is removed."""
    before = messy.doc("gc", "containers", "--dry-run", "-n", messy.ns)
    with Pane(messy.argv("gc", "containers", "-n", messy.ns), 80, 24) as pane:
        screen = pane.wait_for("[y/N]:")
        rows = [r for r in screen.splitlines() if r.strip()]
        at = next(i for i, r in enumerate(rows) if "[y/N]:" in r)
        headline = r"\d+ container\(s\) to remove, .* kept( \(.*\))?\."
        assert re.fullmatch(headline, rows[at - 1]), screen
        pane.send("n", "Enter")
        code, _ = pane.finished()
    after = messy.doc("gc", "containers", "--dry-run", "-n", messy.ns)
    assert [a["id"] for a in after["actions"]] == [a["id"] for a in before["actions"]]
    assert code == 0


def test_history_shows_the_run_id_whole_and_bytes_in_human_units(messy: Messy) -> None:
    """After a run that removed this namespace's dead containers, `history` at 80 columns."""
    res = subprocess.run(messy.argv("gc", "containers", "--yes", "-n", messy.ns, "-o", "json"),
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert res.returncode == 0, res.stderr
    (run,) = messy.doc("history", "--runs", "1")["items"]
    for size in SIZES[:2]:
        screen = shown(messy, ["history", "-v"], size)
        seen = words(screen)
        assert str(run["run_id"]) in seen and format_bytes(run["bytes_expected"]) in seen, screen
        assert format_bytes(run["bytes_measured"]) in seen, screen
        for a in run["actions"]:
            assert a["id"] in unfolded(screen)


def test_a_stale_plan_applied_as_a_dry_run_counts_only_what_still_goes(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """A saved plan whose containers were all removed since: `apply --dry-run` at 80x24 marks
    each row skipped, and its headline says nothing is to be removed (not the saved count)."""
    from kubegc_cli.node.cri.v1 import api_pb2

    pod = node.run_pod("web", namespace=ns)
    ids = [node.add_container(pod, "app", attempt=i) for i in range(3)]
    pods = write_pods_file(tmp_path / "pods.json", pod)
    base = [sys.executable, "-m", "kubegc_cli", "-r", node.endpoint, "--kubelet-config",
            str(node.kubelet_config), "--state-dir", str(tmp_path / "state"), "--pods-file",
            str(pods)]  # fmt: skip
    plan = tmp_path / "plan.json"
    saved = subprocess.run([*base, "gc", "containers", "-n", ns, "--plan-out", str(plan)],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    assert {a["id"] for a in json.loads(plan.read_text())["actions"]} == set(ids[:2])
    for cid in ids[:2]:
        node.runtime.RemoveContainer(api_pb2.RemoveContainerRequest(container_id=cid), timeout=10)
    code, screen = run_in_pane([*base, "apply", str(plan), "--dry-run"], 80, 24)
    assert code == 0, screen
    text = " ".join(screen.split())
    assert "0 container(s) to remove, 0B expected, 2 skipped (changed since the plan);" in text
    rows = [r for r in screen.splitlines() if r[:13] in {i[:13] for i in ids[:2]}]
    assert len(rows) == 2 and text.count("skipped: gone before removal") == 2, screen
