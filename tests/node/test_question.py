"""A person's question holds no node lock: `gc containers` and `gc all` in a real terminal
(a pty) plan, ask, and while the question waits another run takes the node lock and removes
what the plan named; the answer "y" then takes the lock, observes the real containerd again,
says what changed and acts only on what is still selected (nothing that was not asked
about)."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import pytest

from tests.node.localnode import LocalNode
from tests.node.test_gc_containers import kubegc

QUESTION = "Remove 1 container(s)? [y/N]: "


class Terminal:
    """`kubegc` with its stdin and stderr on a pty (a person's terminal), stdout a pipe."""

    def __init__(self, argv: list[str]) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # 80x24
        self.master = master
        self.proc = subprocess.Popen(argv, stdin=slave, stderr=slave, stdout=subprocess.PIPE,
                                     text=True)  # fmt: skip
        os.close(slave)
        self.seen = ""
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the process ended: the pty is gone
                return
            if not chunk:
                return
            with self._lock:
                self.seen += chunk.decode(errors="replace")

    def wait_for(self, text: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if text in self.seen:
                    return
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"{text!r} never shown; the terminal shows {self.seen!r}")

    def answer(self, line: str) -> tuple[int, str, str]:
        """Type `line`; (exit code, stdout, the terminal's text with each run of spaces and
        line breaks as one space: kubegc wraps its stderr lines at spaces to the width)."""
        os.write(self.master, line.encode() + b"\r")
        out, _ = self.proc.communicate(timeout=120)
        time.sleep(0.2)  # the last of the pty's output
        os.close(self.master)
        after = re.sub(r"\x1b\[[0-9;]*m", "", self.seen).split("[y/N]: ")[-1]
        rows = after.replace("\r\n", "\n").splitlines()
        # kubegc's lines after the answer are wrapped by kubegc at spaces, not by the terminal
        # (a word longer than a row aside)
        assert all(len(r) <= 80 or " " not in r.strip() for r in rows), self.seen
        return self.proc.returncode, out, " ".join(self.seen.split())


def asking(node: LocalNode, tmp_path: Path, *args: str) -> Terminal:
    return Terminal([sys.executable, "-m", "kubegc_cli", "-r", node.endpoint,
                     "--kubelet-config", str(node.kubelet_config),
                     "--state-dir", str(tmp_path / "state"), *args])  # fmt: skip


def shown(text: str, terminal: str) -> bool:
    """Whether `text` is on the terminal, kubegc's wrap aside: at 80 columns it wraps a line at
    spaces and cuts a word longer than a row (a long path) at the row's end."""
    return "".join(text.split()) in "".join(terminal.split())


def changes_said(
    terminal: str, question: str, notes: list[str], gone: list[str], since: list[str]
) -> None:
    """The answer's run said, after the question, that the node changed: each of `gone`
    ("kind id") gone and not removed, each of `since` selected since and not removed, and a
    note counts those."""
    assert any(f"{len(since)} object(s) selected since the question were not asked about" in n
               for n in notes)  # fmt: skip
    said = terminal.split(question, 1)[1]
    assert shown("the node changed while the question waited:", said)
    for what in gone:
        assert shown(f"{what}: gone since the question; not removed", said)
    for what in since:
        assert shown(f"{what}: selected since the question", said)


@pytest.mark.parametrize(("command", "noun"), [("containers", "container"), ("all", "object")])
def test_the_question_holds_no_lock_and_the_answer_is_rechecked_against_the_node(
    node: LocalNode, ns: str, tmp_path: Path, command: str, noun: str
) -> None:
    p = node.run_pod("p", namespace=ns)
    init0 = node.add_container(p, "init", attempt=0)
    init1 = node.add_container(p, "init", attempt=1)
    app = node.add_container(p, "app", state="running")

    # (--lock-timeout: the yes waits out other runs on this machine that share its lock)
    person = asking(node, tmp_path, "--lock-timeout", "60s", "gc", command, "-n", ns,
                    "-o", "json")  # fmt: skip
    question = f"Remove 1 {noun}(s)? [y/N]: "
    person.wait_for(question)
    # While the question waits, a timer's run takes the node lock (no wait: --lock-timeout
    # 0s) and removes what the question is about; then the pod's init runs once more.
    timer = kubegc(node, tmp_path / "timer", "gc", command, "-n", ns, "--yes", "-o", "json")
    assert timer.returncode == 0, timer.stderr  # not 4: the question holds no lock
    assert [(a["id"], a["result"]) for a in json.loads(timer.stdout)["actions"]] == [
        (init0, "removed")
    ]
    init2 = node.add_container(p, "init", attempt=2)  # init1 is no longer the newest record

    code, out, terminal = person.answer("y")
    assert code == 0, terminal
    doc = json.loads(out)
    assert [(a["id"], a["result"], a["error"]) for a in doc["actions"]] == [
        (init0, "skipped", "gone since the question")
    ]
    changes_said(terminal, question, doc["notes"], [f"container {init0}"], [f"container {init1}"])
    assert node.container_ids(namespace=ns) == {init1, init2, app}  # init1 was not asked about


def test_an_unchanged_node_is_acted_on_as_asked(node: LocalNode, ns: str, tmp_path: Path) -> None:
    p = node.run_pod("p", namespace=ns)
    init0 = node.add_container(p, "init", attempt=0)
    init1 = node.add_container(p, "init", attempt=1)
    person = asking(node, tmp_path, "--lock-timeout", "60s", "gc", "containers", "-n", ns,
                    "-o", "json")  # fmt: skip
    person.wait_for(QUESTION)
    code, out, terminal = person.answer("y")
    assert code == 0, terminal
    assert [(a["id"], a["result"]) for a in json.loads(out)["actions"]] == [(init0, "removed")]
    assert "changed while the question waited" not in terminal
    assert node.container_ids(namespace=ns) == {init1}


def test_gc_images_answers_for_the_images_still_there(tmp_path: Path) -> None:
    """`gc images` (a node of its own: images are removed): while the question waits, another
    hand removes one image asked about (skipped as gone) and tags another with a new name
    (skipped as changed: removing it would take the new name too); the third is removed."""
    from kubegc_cli.node.cri.v1 import api_pb2

    with LocalNode(tmp_path / "node") as node:
        a = node.import_image("docker.io/library/asked-a:1", pad_bytes=2048, seed="qa")
        b = node.import_image("docker.io/library/asked-b:1", pad_bytes=4096, seed="qb")
        args = ("--prune-unused", "--minimum-image-ttl-duration", "0s", "-o", "json")
        person = asking(node, tmp_path, "--lock-timeout", "60s", "gc", "images", *args)
        person.wait_for("Remove 3 image(s)? [y/N]: ")  # (the test's busybox too: unused)
        node.images.RemoveImage(api_pb2.RemoveImageRequest(image=api_pb2.ImageSpec(image=a)),
                                timeout=30)  # fmt: skip
        again = node.import_image("docker.io/library/prod-critical:1", pad_bytes=4096, seed="qb")
        assert again == b  # the same image, a name more
        code, out, terminal = person.answer("y")
        assert code == 0, terminal
        got = {x["id"]: (x["result"], x["error"]) for x in json.loads(out)["actions"]}
        assert got.pop(a) == ("skipped", "gone since the question")
        changed = "changed since the question: now also named docker.io/library/prod-critical:1"
        result, why = got.pop(b)  # (and its new digest name)
        assert result == "skipped" and why.startswith(changed), why
        assert set(got.values()) == {("removed", "")} and len(got) == 1
        assert shown(f"image {a}: gone since the question; not removed", terminal)
        assert shown(f"image {b}: {changed}", terminal)
        assert b in {i.id for i in node.list_images()}


def test_reclaim_answers_for_the_node_as_it_is_after_the_question(tmp_path: Path) -> None:
    """`reclaim` (a node of its own: it plans over every pod): while the question waits a
    timer's run removes two of the containers asked about, a live pod's init runs once more
    and a new orphaned pod directory appears. The yes takes the lock, says so, skips the two as
    gone and the deleted pod's log directory as changed (the timer removed a log in it),
    removes the rest it asked about, and neither the container selected since (init1) nor
    the new directory."""
    from tests.node.test_gc_containers import write_pods_file
    from tests.node.test_residue import orphan_dir

    with LocalNode(tmp_path / "node") as node:
        live = node.run_pod("live", namespace="ns1")
        init0 = node.add_container(live, "init", attempt=0)
        init1 = node.add_container(live, "init", attempt=1)
        gone = node.run_pod("gone", namespace="ns1")
        gone_ctr = node.add_container(gone, "work")
        node.stop_pod(gone)  # NOTREADY; the pods file does not list it: deleted
        root = tmp_path / "kubelet"
        orphan = orphan_dir(root)
        pods = write_pods_file(tmp_path / "pods.json", live)
        opts = ("--pods-file", str(pods), "--lock-timeout", "60s", "reclaim", "--root-dir",
                str(root), "--residue-kind", "orphaned-pod-dir", "-o", "json")  # fmt: skip
        person = asking(node, tmp_path, *opts)
        question = "Remove 5 object(s)? [y/N]: "  # 2 containers, a sandbox, a log dir, a dir
        person.wait_for(question)

        timer = kubegc(node, tmp_path / "timer", "--pods-file", str(pods), "gc", "containers",
                       "--yes", "-o", "json")  # fmt: skip
        assert timer.returncode == 0, timer.stderr  # not 4: the question holds no lock
        assert {a["id"] for a in json.loads(timer.stdout)["actions"]} == {init0, gone_ctr}
        init2 = node.add_container(live, "init", attempt=2)  # init1: selected from now on
        later = orphan_dir(root, "22222222-2222-2222-2222-222222222222")

        code, out, terminal = person.answer("y")
        assert code == 0, terminal
        doc = json.loads(out)
        got = {a["id"]: (a["result"], a["error"] or "") for a in doc["actions"]}
        assert got.pop(init0) == got.pop(gone_ctr) == ("skipped", "gone since the question")
        # (the timer's run removed a log in the deleted pod's log directory: it changed
        # while the question waited, so it waits for the next run)
        gone_logs = str(node.pod_logs_dir / f"ns1_gone_{gone.uid}")
        assert got == {
            gone.sandbox_id: ("removed", ""),
            gone_logs: ("skipped", "changed since the question: written to since"),
            str(orphan): ("removed", ""),
        }
        gone_now = [f"container {init0}", f"container {gone_ctr}"]
        changes_said(terminal, question, doc["notes"], gone_now,
                     [f"container {init1}", f"finding {later}"])  # fmt: skip
        assert node.container_ids(namespace="ns1") == {init1, init2}
        assert later.exists() and not orphan.exists()


def test_residue_clean_answers_for_the_findings_still_there(
    node: LocalNode, tmp_path: Path
) -> None:
    """`residue clean`: an orphaned pod directory removed by another hand while the question
    waited is skipped as gone, the other is cleaned as asked, and one that appeared since is
    left."""
    from tests.node.test_gc_containers import write_pods_file
    from tests.node.test_residue import orphan_dir

    root = tmp_path / "kubelet"
    first = orphan_dir(root, "33333333-3333-3333-3333-333333333333")
    second = orphan_dir(root, "44444444-4444-4444-4444-444444444444")
    pods = write_pods_file(tmp_path / "pods.json")
    person = asking(node, tmp_path, "--pods-file", str(pods), "--lock-timeout", "60s", "residue",
                    "clean", "--root-dir", str(root), "--kind", "orphaned-pod-dir",
                    "-o", "json")  # fmt: skip
    question = "Remove 2 finding(s)? [y/N]: "
    person.wait_for(question)
    shutil.rmtree(first)
    later = orphan_dir(root, "55555555-5555-5555-5555-555555555555")

    code, out, terminal = person.answer("y")
    assert code == 0, terminal
    doc = json.loads(out)
    assert {a["id"]: (a["result"], a["error"] or "") for a in doc["actions"]} == {
        str(first): ("skipped", "gone since the question"),
        str(second): ("removed", ""),
    }
    changes_said(terminal, question, doc["notes"], [f"finding {first}"], [f"finding {later}"])
    assert later.exists() and not second.exists()


def test_apply_rechecks_the_saved_plan_against_the_node_after_the_question(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """`apply` of a saved plan asks with no lock held; while the question waits another hand
    removes one of the two containers it names. The yes re-checks the saved plan against the
    node observed anew, says what changed, skips that one as gone and removes the other."""
    from kubegc_cli.node.cri.v1 import api_pb2

    p = node.run_pod("p", namespace=ns)
    init0 = node.add_container(p, "init", attempt=0)
    init1 = node.add_container(p, "init", attempt=1)
    init2 = node.add_container(p, "init", attempt=2)
    saved = tmp_path / "plan.json"
    made = kubegc(node, tmp_path, "gc", "containers", "-n", ns, "--dry-run", "--plan-out",
                  str(saved))  # fmt: skip
    assert made.returncode == 0, made.stderr
    person = asking(node, tmp_path, "--lock-timeout", "60s", "apply", str(saved), "-o", "json")
    question = "Remove 2 object(s)? [y/N]: "
    person.wait_for(question)
    node.runtime.RemoveContainer(api_pb2.RemoveContainerRequest(container_id=init0), timeout=30)

    code, out, terminal = person.answer("y")
    assert code == 0, terminal
    got = {a["id"]: (a["result"], a["error"] or "") for a in json.loads(out)["actions"]}
    assert got == {init0: ("skipped", "gone since the question"), init1: ("removed", "")}
    said = terminal.split(question, 1)[1]
    assert shown("the node changed while the question waited:", said)
    assert shown(f"container {init0}: gone since the question; not removed", said)
    assert node.container_ids(namespace=ns) == {init2}


def test_a_line_appended_to_a_dead_containers_log_while_asked_keeps_it(
    node: LocalNode, ns: str, tmp_path: Path
) -> None:
    """`gc containers`: while the question waits, a line is appended to the log of the dead
    container asked about — within the same block, so its bytes on disk stay the same. The
    yes reads the logs anew: the container (and its log) stay, as changed."""
    p = node.run_pod("p", namespace=ns)
    init0 = node.add_container(p, "init", attempt=0)
    node.add_container(p, "init", attempt=1)
    log = next((node.pod_logs_dir / f"{ns}_p_{p.uid}" / "init").glob("0.log"))
    before = log.stat().st_blocks
    person = asking(node, tmp_path, "--lock-timeout", "60s", "gc", "containers", "-n", ns,
                    "-o", "json")  # fmt: skip
    person.wait_for(QUESTION)
    with log.open("a") as f:
        f.write("2026-12-05T13:00:00Z stdout F a late line\n")
    assert log.stat().st_blocks == before  # the same blocks: only its times tell
    code, out, terminal = person.answer("y")
    assert code == 0, terminal
    assert [(a["id"], a["result"], a["error"]) for a in json.loads(out)["actions"]] == [
        (init0, "skipped", "changed since the question: its log was written to since")
    ]
    assert init0 in node.container_ids(namespace=ns) and "a late line" in log.read_text()
