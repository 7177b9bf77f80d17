"""Running kubegc on a node without a runtime: blast-radius caps, saved plans, the run lock,
stderr logging, shell completion."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.cli.main import main
from kubegc_cli.core.errors import BadInput, Busy
from kubegc_cli.core.model import API_VERSION, NodeSnapshot
from kubegc_cli.core.plan import ContainerAction, Plan, Result, apply_caps
from kubegc_cli.core.settings import Settings
from kubegc_cli.node.planfile import load_saved_plan, this_node
from kubegc_cli.node.state import hold_run_lock, node_lock, release_run_lock, run_lock_held
from tests.unit.factories import NOW, ctr

ROOT = Path(__file__).resolve().parents[2]


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    """Twelve exited attempts of one evict unit, 100 log bytes each: 11 removable."""
    cs = tuple(ctr(f"{i:02d}" * 8, attempt=i, age_s=2000 - i, log_bytes=100) for i in range(12))
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(NodeSnapshot(NOW, "unix:///x", containers=cs).to_dict()))
    return f


def plan_of(n: int, size: int = 100) -> Plan[ContainerAction]:
    actions = [
        ContainerAction(ctr(f"c{i}", attempt=i, log_bytes=size), "r", "why") for i in range(n)
    ]
    return Plan(kind="ContainerGCPlan", policy={}, now=NOW, actions=actions)


# --- caps -----------------------------------------------------------------------------------


def test_max_delete_holds_back_the_rest_in_plan_order() -> None:
    plan = plan_of(12)
    assert apply_caps(plan, 5, None) == 7
    results = [a.result for a in plan.actions]
    assert results == [Result.PLANNED] * 5 + [Result.HELD_BACK] * 7
    assert plan.actions[5].error == "held back by --max-delete 5"
    s = plan.summary()
    assert s["by_result"]["held-back"] == 7 and s["by_result"]["planned"] == 5
    assert s["bytes_planned"] == 500 and s["bytes_held_back"] == 700
    assert "7 removal(s) held back by --max-delete 5" in plan.notes[-1]


def test_max_bytes_stops_at_the_first_action_that_would_pass_it() -> None:
    plan = plan_of(4, size=100)
    assert apply_caps(plan, None, 250) == 2
    assert [a.result.value for a in plan.actions] == ["planned", "planned"] + ["held-back"] * 2
    assert plan.actions[2].error == "held back by --max-bytes 250"
    nothing = plan_of(3)
    assert apply_caps(nothing, None, None) == 0 and nothing.notes == []
    assert apply_caps(plan_of(3), 0, None) == 3


def test_dry_run_shows_what_the_cap_held_back(
    snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--snapshot", str(snap), "gc", "containers", "--maximum-dead-containers-per-container",
            "0", "--max-delete", "5"]  # fmt: skip
    code, out, err = run([*argv, "-o", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert [a["result"] for a in doc["actions"]] == ["planned"] * 5 + ["held-back"] * 6
    assert doc["summary"]["by_result"]["held-back"] == 6
    assert "6 removal(s) held back by --max-delete 5" in err
    code, out, _ = run(argv, capsys)
    assert "held back by --max-delete 5" in out
    assert "5 container(s) to remove, 500B expected, 6 held back by a cap; 1 kept." in out
    code, out, _ = run([*argv, "-q"], capsys)  # -q: the IDs that would go, no stderr
    assert out.split() == [f"{i:02d}" * 8 for i in range(5)]


def test_bad_caps_are_exit_2(snap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for cap in (["--max-delete", "-1"], ["--max-delete", "x"], ["--max-bytes", "lots"]):
        code, out, err = run(["--snapshot", str(snap), "gc", "containers", *cap], capsys)
        assert code == 2 and out == "" and err.count("\n") == 1 and cap[0] in err


# --- saved plans ----------------------------------------------------------------------------


def test_plan_out_saves_a_plan_that_loads_back(
    snap: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "plan.json"
    code, out, err = run(
        ["--snapshot", str(snap), "gc", "containers", "--max-delete", "3", "--plan-out",
         str(out_file), "-o", "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert f"plan saved to {out_file}" in err
    shown = json.loads(out)
    saved = json.loads(out_file.read_text())
    assert saved["saved"]["command"] == "gc containers"
    assert saved["saved"]["node"] == this_node(Settings())
    assert [a["id"] for a in saved["actions"]] == [a["id"] for a in shown["actions"]]
    assert all(a["object"]["id"] == a["id"] for a in saved["actions"])
    plan, _ = load_saved_plan(out_file, Settings())
    assert [a.result for a in plan.actions] == [Result.PLANNED] * 3 + [Result.HELD_BACK] * 8
    assert [a.container.created_at for a in plan.actions[:1]] == [NOW - 2000 * 10**9]


def test_plan_out_with_yes_is_exit_2(snap: Path, tmp_path: Path, capsys: Any) -> None:
    code, _, err = run(
        ["gc", "containers", "--yes", "--plan-out", str(tmp_path / "p.json")], capsys
    )
    assert code == 2 and "--plan-out" in err and not (tmp_path / "p.json").exists()


def saved_plan(tmp_path: Path, snap: Path, capsys: Any) -> dict[str, Any]:
    f = tmp_path / "plan.json"
    code, _, err = run(["--snapshot", str(snap), "gc", "containers", "--plan-out", str(f)], capsys)
    assert code == 0, err
    doc: dict[str, Any] = json.loads(f.read_text())
    return doc


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda d: d["saved"].update(node="elsewhere"), "was made on node 'elsewhere'"),
        (lambda d: d.pop("saved"), "no 'saved' section"),
        (lambda d: d["actions"][0].update(result="removed"), "only planned or held-back"),
        (lambda d: d.update(kind="ResiduePlan"), "not a gc plan"),
        (lambda d: d.update(kind=[]), "not a gc plan (kind []"),
        (lambda d: d.update(kind={"a": 1}), 'not a gc plan (kind {"a": 1}'),
        (lambda d: d.update(apiVersion="v0"), "apiVersion"),
        (lambda d: d["actions"][0].pop("object"), "missing field 'object'"),
        (lambda d: d["actions"][0]["object"].update(id="other"), "differ"),
        (lambda d: d["actions"].append(d["actions"][0]), "appears twice"),
        (lambda d: d["actions"][0]["object"].update(created_at="yesterday"), "RFC 3339"),
        (lambda d: d["saved"].update(command="rm -rf"), "saved command 'rm -rf' is not"),
        (lambda d: d.update(kind="ImageGCPlan"), "saved command 'gc containers' is not"),
        (lambda d: d["actions"][0].update(rule="guard-newest-record"), "not a rule that removes"),
        (lambda d: d["actions"][0].update(kind="pod-log-dir", path="/var/log/pods/a_b_u",
                                          pod_uid="u"), "cannot be in this plan"),
        # the file's terms, never Python's ('str' object has no attribute 'get', ...)
        (lambda d: d.update(notes="one note"), "notes is a string, not a list"),
        (lambda d: d.update(notes=None), "notes is null, not a list"),
        (lambda d: d["policy"].update(keep="example.com/*"), "policy.keep is a string, not a list"),
        (lambda d: d["policy"].update(keep=None), "policy.keep is null, not a list"),
        (lambda d: d["policy"].update(keep=[1]), "policy.keep[0] is a number, not a string"),
        (lambda d: d["policy"].update(sandbox_image=5), "policy.sandbox_image is a number"),
        (lambda d: d.update(kept=None), "kept is null, not a list"),
        (lambda d: d.update(notes=[1]), "notes[0] is a number, not a string"),
        (lambda d: d.update(actions=["x"]), "actions[0] is a string, not an object"),
        (lambda d: d.update(actions={"a": 1}), "actions is an object, not a list"),
        (lambda d: d.update(actions=None), "actions is null, not a list"),
        (lambda d: d["actions"][0].update(object="x"),
         "actions[0]: object is a string, not an object"),
        (lambda d: d.update(policy=[1]), "policy is a list, not an object"),
        (lambda d: d["actions"][0].update(result=[]), "actions[0]: result []; only planned"),
        (lambda d: d["actions"][0].update(rule=None), "actions[0]: rule null is not a string"),
        (lambda d: d["actions"][0].update(kind=True), "a true action cannot be in this plan"),
        (lambda d: d["kept"].append(7), "kept[1] is a number, not an object"),
        (lambda d: d.update(now=None), "now null is not a string"),
    ],
)  # fmt: skip
def test_apply_refuses_an_unusable_plan_file(
    snap: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: Any, named: str
) -> None:
    doc = saved_plan(tmp_path, snap, capsys)
    change(doc)
    f = tmp_path / "edited.json"
    f.write_text(json.dumps(doc))
    code, out, err = run(["apply", str(f), "--yes", "--state-dir", str(tmp_path / "s")], capsys)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert named in err and str(f) in err, err
    assert not PYTHON_WORDS.search(err), err
    with pytest.raises(BadInput):
        load_saved_plan(f, Settings())


#: How Python, not a plan file, would put it.
PYTHON_WORDS = re.compile(
    r"object has no attribute|'(str|int|float|bool|list|dict|NoneType)' object|subscriptable|"
    r"not iterable|unhashable|dictionary update|invalid literal|argument must be|"
    r"\b(True|False|None)\b"
)


U = "9a1b2c3d-0000-1111-2222-333344445555"


@pytest.mark.parametrize(
    ("kind", "path", "uid", "named"),
    [
        ("pod-log-dir", f"/tmp/{U}", U, "not directly inside podLogsDir"),
        ("pod-log-dir", f"/var/log/pods/../../../tmp/ns_p_{U}", U, "not a clean absolute path"),
        ("pod-log-dir", f"/var/log/pods//ns_p_{U}", U, "not a clean absolute path"),
        ("pod-log-dir", f"/var/log/pods/ns_p_{U}", "other", "does not end in the action's pod"),
        ("pod-log-dir", f"/var/log/pods/ns_p_u/{U}", U, "not directly inside podLogsDir"),
        ("pod-log-dir", "/var/log/pods/ns_p_log", "log", "not named like a pod"),
        ("pod-log-dir", "/var/log", "log", "not named like a pod"),
        ("log-symlink", "/tmp/victim/x.log", "", "not a *.log directly in /var/log/containers"),
        ("log-symlink", "/var/log/containers/../pods/x.log", "", "not a clean absolute path"),
        ("log-symlink", "/var/log/containers/x", "", "not a *.log directly in"),
    ],
)
def test_apply_refuses_log_paths_no_plan_could_hold(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    kind: str,
    path: str,
    uid: str,
    named: str,
) -> None:
    """A saved log plan naming a path outside the kubelet's log roots is exit 2 before the
    runtime is asked or anything is removed (the node tests show nothing is touched)."""
    rule = "deleted-pod" if kind == "pod-log-dir" else "container-gone"
    action = {
        "kind": kind,
        "id": path,
        "path": path,
        "pod_uid": uid,
        "rule": rule,
        "reason": "",
        "result": "planned",
    }
    doc = {"kind": "LogGCPlan", "apiVersion": API_VERSION, "now": "2024-01-01T00:00:00Z",
           "policy": {}, "actions": [action], "kept": [],
           "saved": {"command": "gc logs", "node": this_node(Settings())}}  # fmt: skip
    f = tmp_path / "plan.json"
    f.write_text(json.dumps(doc))
    kubelet = tmp_path / "kubelet.yaml"
    kubelet.write_text("kind: KubeletConfiguration\npodLogsDir: /var/log/pods\n")
    code, out, err = run(["-r", f"unix://{tmp_path}/none.sock", "--state-dir",
                          str(tmp_path / "s"), "--kubelet-config", str(kubelet), "apply", str(f),
                          "--yes"], capsys)  # fmt: skip
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert named in err and str(f) in err, err


def test_empty_lock_timeout_is_exit_2(snap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["--lock-timeout", "", "--snapshot", str(snap), "gc", "containers"],
                         capsys)  # fmt: skip
    assert (code, out) == (2, "") and "--lock-timeout" in err and "empty" in err


def test_end_of_input_at_the_question_is_no(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-D or a closed stdin answers no (nothing done, exit 0), not an interrupt."""
    import io

    from kubegc_cli.cli.common import ConsoleUi

    ui = ConsoleUi(0, "table")
    for typed, answer in (("", False), ("\n", False), ("maybe\nyes\n", True), ("n\n", False)):
        monkeypatch.setattr("sys.stdin", io.StringIO(typed))
        assert ui.confirm("Remove 1 container(s)?") is answer
    assert "Remove 1 container(s)? [y/N]" in capsys.readouterr().err


def test_apply_cannot_take_a_snapshot(snap: Path, tmp_path: Path, capsys: Any) -> None:
    doc = saved_plan(tmp_path, snap, capsys)
    f = tmp_path / "p2.json"
    f.write_text(json.dumps(doc))
    code, _, err = run(["--snapshot", str(snap), "apply", str(f), "--dry-run"], capsys)
    assert code == 2 and "--snapshot" in err


# --- the run lock ---------------------------------------------------------------------------

HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
os.write(fd, f"{os.getpid()}\\n".encode())
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def hold_in_another_process(lock: Path, seconds: float) -> subprocess.Popen[str]:
    lock.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_busy_names_the_holders_pid(tmp_path: Path) -> None:
    holder = hold_in_another_process(tmp_path / "s" / "lock", 30)
    try:
        with pytest.raises(Busy, match=f"pid {holder.pid}") as exc, node_lock(tmp_path / "s"):
            pass
        assert "\n" not in str(exc.value)
        started = time.monotonic()
        with pytest.raises(Busy, match=r"after waiting 0\.3s"), node_lock(tmp_path / "s", 0.3):
            pass
        assert time.monotonic() - started >= 0.3
    finally:
        holder.kill()
        holder.wait()


def test_lock_timeout_waits_for_the_holder_to_finish(tmp_path: Path) -> None:
    holder = hold_in_another_process(tmp_path / "s" / "lock", 0.5)
    try:
        with node_lock(tmp_path / "s", timeout=20):
            assert (tmp_path / "s" / "lock").read_text().strip() == str(os.getpid())
    finally:
        holder.wait()
    assert (tmp_path / "s" / "lock").read_text() == ""  # no stale pid left behind


def test_run_lock_is_held_until_released(tmp_path: Path) -> None:
    state = tmp_path / "s"
    hold_run_lock(state)
    try:
        hold_run_lock(state)  # holding it already is fine
        assert run_lock_held(state)
        with pytest.raises(Busy), node_lock(state):
            pass
    finally:
        release_run_lock()
    assert not run_lock_held(state)
    with node_lock(state):
        pass


def test_changing_run_exits_4_when_the_lock_is_held(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lock is taken before the runtime is asked: a held lock is exit 4 even when the
    runtime cannot be reached, and the line names the holder."""
    holder = hold_in_another_process(tmp_path / "s" / "lock", 30)
    try:
        code, out, err = run(
            ["-r", f"unix://{tmp_path}/none.sock", "--state-dir", str(tmp_path / "s"),
             "--lock-timeout", "200ms", "gc", "containers", "--yes"],
            capsys,
        )  # fmt: skip
    finally:
        holder.kill()
        holder.wait()
    assert code == 4 and out == "" and err.count("\n") == 1
    assert f"pid {holder.pid}" in err
    code, _, err = run(["--lock-timeout", "soon", "gc", "containers", "--yes"], capsys)
    assert code == 2 and "--lock-timeout" in err


# --- stderr ---------------------------------------------------------------------------------


def test_json_log_lines_and_quiet(snap: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--log-format", "json", "--snapshot", "/nonexistent", "gc", "containers"],
                       capsys)  # fmt: skip
    assert code == 2
    line = json.loads(err)
    assert line["level"] == "error" and "/nonexistent" in line["message"]
    assert line["time"].endswith("Z")
    argv = ["--snapshot", str(snap), "gc", "containers", "--max-delete", "1", "-o", "json"]
    code, out, err = run(["--log-format", "json", *argv], capsys)
    assert json.loads(err)["level"] == "warning"
    json.loads(out)  # stdout carries only the result
    code, out, err = run(["-q", *argv], capsys)
    assert code == 0 and err == "" and json.loads(out)["kind"] == "ContainerGCPlan"


def test_progress_draws_nothing_off_a_terminal(capsys: pytest.CaptureFixture[str]) -> None:
    from kubegc_cli.render.log import LOG

    LOG.configure("text", quiet=False)
    plan = plan_of(10)
    with LOG.progress(10, verbose=2) as bar:
        for a in plan.actions:
            a.result = Result.REMOVED
            bar.advance(a)
    _, err = capsys.readouterr()
    assert err.splitlines() == [f"kubegc: container c{i}: removed" for i in range(10)]
    with LOG.progress(10, verbose=0) as bar:
        bar.advance(plan.actions[0])
    assert capsys.readouterr() == ("", "")


# --- completion -----------------------------------------------------------------------------


def complete(words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (none: a trailing space)."""
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    env = {**os.environ, "_KUBEGC_COMPLETE": "bash_complete", "COMP_WORDS": words,
           "COMP_CWORD": str(cword)}  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-m", "kubegc_cli"], env=env, capture_output=True, text=True,
        check=True, cwd=ROOT,
    )  # fmt: skip
    return [line.split(",", 1)[1] for line in proc.stdout.splitlines()]


def test_stderr_lines_on_a_terminal_split_no_id_while_a_progress_bar_shows() -> None:
    """With a progress bar up (its console on the terminal) as without: a line is wrapped at
    spaces to the width, its rows after the first indented, an ID never split by the wrap."""
    from rich.console import Console

    from kubegc_cli.render.log import Log

    cid = "17857f938672682aa7c492a42cd4a2b96cd1b028e4d07ef20303764e22af8d84"
    log = Log()
    out = io.StringIO()
    log._console = Console(file=out, width=80, force_terminal=True, color_system=None)
    log.emit("info", f"container {cid}: removed at --concurrency 8 after a re-check")
    rows = out.getvalue().splitlines()
    assert all(len(r) <= 80 for r in rows) and len(rows) > 1, rows
    assert rows[0] == "kubegc: container" and rows[1].startswith(f"  {cid}: removed")
    assert all(r.startswith("  ") for r in rows[1:]), rows


def test_completion_scripts_are_the_generated_ones(capsys: pytest.CaptureFixture[str]) -> None:
    files = {"bash": "kubegc.bash", "zsh": "_kubegc", "fish": "kubegc.fish"}
    for shell, name in files.items():
        code, out, _ = run(["completion", shell], capsys)
        assert code == 0 and out == (ROOT / "completions" / name).read_text()
    code, _, err = run(["completion", "tcsh"], capsys)
    assert code == 2 and "tcsh" in err


def test_namespaces_and_pods_complete_from_the_pods_file_or_log_dirs(tmp_path: Path) -> None:
    pods = tmp_path / "pods.json"
    known = [("shop", "web-1"), ("data", "db-0"), ("shop", "web-2")]
    items = [{"metadata": {"name": n, "namespace": ns, "uid": f"u{i}"}}
             for i, (ns, n) in enumerate(known)]  # fmt: skip
    pods.write_text(json.dumps({"kind": "PodList", "items": items}))
    assert complete(f"kubegc --pods-file {pods} gc containers -n ") == ["data", "shop"]
    assert complete(f"kubegc gc all --pods-file {pods} -n shop --pod w") == ["web-1", "web-2"]
    assert complete(f"kubegc gc containers --pods-file {pods} --pod data/") == ["data/db-0"]
    logs = tmp_path / "host" / "var" / "log" / "pods"
    (logs / "kube-system_coredns-7_uid1").mkdir(parents=True)
    (logs / "not-a-pod-dir").mkdir()
    host = f"--host-root {tmp_path / 'host'}"
    assert complete(f"kubegc {host} gc sandboxes --exclude-namespace ") == ["kube-system"]
    assert complete(f"kubegc {host} gc containers --pod c") == ["coredns-7"]
    assert complete("kubegc gc co") == ["containers"]


@pytest.mark.parametrize(
    ("name", "escape", "no_byte"),
    [("plan.json", "\\udcff", "\\ud800"), ("plan.yaml", "\\uDCFF", "\\uD800")],
)
def test_a_saved_plan_naming_a_path_with_a_non_utf8_byte_loads_back(
    tmp_path: Path, name: str, escape: str, no_byte: str
) -> None:
    """A pod log directory named with a byte that is not UTF-8 is written into the plan as
    `os.fsdecode` reads it (`\\udcff`, in JSON or YAML); `apply` reads it back as that same
    name. A lone surrogate that stands for no byte is still refused."""
    import os

    from kubegc_cli.node.outfile import yaml_text

    dir_name = os.fsdecode(b"ns_p\xffod_11111111-2222-3333-4444-555555555555")
    path = f"/var/log/pods/{dir_name}"
    action = {"kind": "pod-log-dir", "id": path, "path": path,
              "pod_uid": "11111111-2222-3333-4444-555555555555", "rule": "deleted-pod",
              "reason": "", "result": "planned"}  # fmt: skip
    doc = {"kind": "LogGCPlan", "apiVersion": API_VERSION, "now": "2024-01-01T00:00:00Z",
           "policy": {}, "actions": [action], "kept": [],
           "saved": {"command": "gc logs", "node": this_node(Settings())}}  # fmt: skip
    f = tmp_path / name
    f.write_text(yaml_text(doc) if name.endswith(".yaml") else json.dumps(doc))
    assert escape in f.read_text()
    plan, _ = load_saved_plan(f, Settings())
    assert [os.fsencode(a.path) for a in plan.actions] == [
        b"/var/log/pods/ns_p\xffod_11111111-2222-3333-4444-555555555555"
    ]
    f.write_text(f.read_text().replace(escape, no_byte))
    with pytest.raises(BadInput, match="half of a surrogate pair"):
        load_saved_plan(f, Settings())


# --- plan files in YAML ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["plan.yaml", "plan.YML"])
def test_plan_out_to_a_yaml_name_writes_yaml_that_loads_back_as_the_json_one(
    snap: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    import yaml

    as_json, as_yaml = tmp_path / "plan.json", tmp_path / name
    for f in (as_json, as_yaml):
        code, _, err = run(["--snapshot", str(snap), "gc", "containers", "--max-delete", "3",
                            "--plan-out", str(f)], capsys)  # fmt: skip
        assert code == 0, err
        assert err.rstrip().endswith(f"apply {f} --yes"), err
    text = as_yaml.read_text()
    assert not text.lstrip().startswith("{") and "\nsaved:\n" in text
    doc, twin = yaml.safe_load(text), json.loads(as_json.read_text())
    doc["saved"].pop("saved_at"), twin["saved"].pop("saved_at")
    assert doc == twin  # the same document, only written otherwise
    from_yaml, _ = load_saved_plan(as_yaml, Settings())
    from_json, _ = load_saved_plan(as_json, Settings())
    assert [(a.id, a.result, a.container) for a in from_yaml.actions] == [
        (a.id, a.result, a.container) for a in from_json.actions
    ]
    assert [a.result for a in from_yaml.actions] == [Result.PLANNED] * 3 + [Result.HELD_BACK] * 8


def test_plan_out_to_any_other_name_stays_json(
    snap: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "plan.yaml.txt"
    code, _, err = run(["--snapshot", str(snap), "gc", "containers", "--plan-out", str(f)], capsys)
    assert code == 0, err
    assert json.loads(f.read_text())["kind"] == "ContainerGCPlan"


def test_a_yaml_plan_is_read_from_a_name_that_does_not_say_yaml(
    snap: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pipe (`/dev/fd/63`) or a renamed file: `{` first is JSON, anything else YAML."""
    f = tmp_path / "plan.yaml"
    assert run(["--snapshot", str(snap), "gc", "containers", "--plan-out", str(f)], capsys)[0] == 0
    renamed = tmp_path / "plan"
    renamed.write_text(f.read_text())
    plan, _ = load_saved_plan(renamed, Settings())
    assert len(plan.actions) == 11


def _deep(fmt: str, levels: int) -> str:
    inner = "[" * levels + "]" * levels
    if fmt == "json":
        return '{"kind": "ContainerGCPlan", "notes": ' + inner + "}"
    return "kind: ContainerGCPlan\nnotes: " + inner + "\n"


@pytest.mark.parametrize(
    ("name", "text", "named"),
    [
        ("deep.json", _deep("json", 5000), "nested too deeply"),
        ("deep.yaml", _deep("yaml", 5000), "nested too deeply"),
        ("deep", _deep("yaml", 5000), "nested too deeply"),
        ("bad.yaml", "kind: [unclosed\n", "is not valid YAML"),
        ("bad.json", '{"kind": ', "is not valid JSON"),
        ("twice.yaml", "kind: ContainerGCPlan\nkind: GCPlan\n", "key 'kind' appears twice"),
        ("nul.yaml", 'kind: "Container\\0GCPlan"\n', "NUL"),
        ("surrogate.yaml", 'kind: "\\uD800"\n', "half of a surrogate pair"),
        ("list.yaml", "- kind: ContainerGCPlan\n", "not a gc plan"),
        ("empty.yaml", "", "not a gc plan (kind null"),
    ],
)
def test_apply_refuses_a_malformed_or_too_deep_plan_file_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, named: str
) -> None:
    """Exit 2 with one line naming the file, before the runtime is asked (the socket named
    does not exist: reaching it would be exit 3): nothing is removed."""
    f = tmp_path / name
    f.write_text(text)
    code, out, err = run(["-r", f"unix://{tmp_path}/none.sock", "--state-dir",
                          str(tmp_path / "s"), "apply", str(f), "--yes"], capsys)  # fmt: skip
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert named in err and str(f) in err, err
    assert "Traceback" not in err and not PYTHON_WORDS.search(err), err


def test_a_yaml_plan_with_a_timestamp_left_unquoted_is_refused_in_the_files_words(
    snap: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "plan.yaml"
    assert run(["--snapshot", str(snap), "gc", "containers", "--plan-out", str(f)], capsys)[0] == 0
    text = f.read_text()
    edited = re.sub(r"(?m)^now: '(.*)'$", r"now: \1", text)
    assert edited != text
    f.write_text(edited)
    with pytest.raises(BadInput, match=r"plan file .*plan\.yaml: .* is a YAML datetime, not a "
                                       r"string; quote it"):  # fmt: skip
        load_saved_plan(f, Settings())
