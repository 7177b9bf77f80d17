"""The command line without a runtime: option handling, errors, exit codes, snapshot planning."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.cli.main import main
from kubegc_cli.core.model import NodeSnapshot
from tests.unit.factories import NOW, ctr


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.fixture
def snapshot_file(tmp_path: Path) -> Path:
    snap = NodeSnapshot(
        captured_at=NOW,
        endpoint="unix:///run/containerd/containerd.sock",
        containers=(
            ctr("i0" * 8, name="init", attempt=0, age_s=300, log_bytes=1000),
            ctr("i1" * 8, name="init", attempt=1, age_s=200, log_bytes=500),
            ctr("ap" * 8, name="app", state="RUNNING", age_s=190),
            ctr("g0" * 8, uid="gone", name="app", age_s=900),
        ),
    )
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(snap.to_dict()))
    return f


def test_global_options_before_or_after_the_subcommand(
    snapshot_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code1, out1, _ = run(
        ["-o", "json", "--snapshot", str(snapshot_file), "gc", "containers"], capsys
    )
    code2, out2, _ = run(
        ["gc", "containers", "--snapshot", str(snapshot_file), "-o", "json"], capsys
    )
    code3, out3, _ = run(
        ["gc", "-o", "json", "containers", "--snapshot", str(snapshot_file)], capsys
    )
    assert code1 == code2 == code3 == 0
    assert json.loads(out1) == json.loads(out2) == json.loads(out3)


def test_snapshot_plan_is_a_dry_run_with_the_kubelet_rules(
    snapshot_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(["--snapshot", str(snapshot_file), "-o", "json", "gc", "containers"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["dry_run"] is True
    assert [a["id"] for a in doc["actions"]] == ["i0" * 8]
    assert doc["actions"][0]["rule"] == "max-per-pod-container"
    assert doc["summary"]["bytes_planned"] == 1000
    assert doc["now"] == "2027-01-15T08:00:00Z"


def test_pods_file_marks_missing_pods_deleted(
    snapshot_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = tmp_path / "pods.json"
    pods.write_text(json.dumps({"kind": "PodList", "items": [{"metadata": {"uid": "uid-p"}}]}))
    code, out, _ = run(
        [
            "--snapshot",
            str(snapshot_file),
            "--pods-file",
            str(pods),
            "-o",
            "yaml",
            "gc",
            "containers",
        ],
        capsys,
    )
    assert code == 0
    import yaml

    doc = yaml.safe_load(out)
    assert {a["id"]: a["rule"] for a in doc["actions"]} == {
        "i0" * 8: "max-per-pod-container",
        "g0" * 8: "deleted-pod",
    }


def test_table_says_why_nothing_is_planned(
    snapshot_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(
        [
            "--snapshot", str(snapshot_file), "gc", "containers",
            "--minimum-container-ttl-duration", "1h",
        ],
        capsys,
    )  # fmt: skip
    assert code == 0
    assert "nothing to remove" in out
    assert "younger than MinAge" in out and "1h0m0s" in out


def test_quiet_prints_ids(snapshot_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["-q", "--snapshot", str(snapshot_file), "gc", "containers"], capsys)
    assert code == 0 and out.split() == ["i0" * 8]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["gc", "containers", "--minimum-container-ttl-duration", "5"], "'5'"),
        (["gc", "containers", "--maximum-dead-containers", "many"], "many"),
        (["gc", "containers", "--older-than", "1d"], "'1d'"),
        (["gc", "containers", "--concurrency", "0"], "--concurrency"),
        (["gc", "containers", "--bogus"], "--bogus"),
        (["-o", "xml", "gc", "containers"], "xml"),
        (["--timeout", "0s", "gc", "containers"], "--timeout"),
        (["--max-recv-size", "lots", "gc", "containers"], "lots"),
        (["--host-root", "/does/not/exist", "gc", "containers"], "/does/not/exist"),
        (["--now", "yesterday", "gc", "containers"], "yesterday"),
        (["--pods-file", "/no/such/pods.json", "gc", "containers"], "/no/such/pods.json"),
        (["--pod-source", "file", "gc", "containers"], "--pods-file"),
        (["gc", "containers", "--include-terminated-pods"], "pod source"),
        (["gc", "nosuchkind"], "nosuchkind"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(["-r", "unix:///nonexistent.sock", *argv], capsys)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and "Traceback" not in err
    assert needle in err


def test_invalid_pods_file_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "pods.json"
    bad.write_text("{oops")
    code, _, err = run(["--pods-file", str(bad), "gc", "containers", "--yes"], capsys)
    assert code == 2 and str(bad) in err and err.count("\n") == 1


def test_snapshot_cannot_act(snapshot_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["--snapshot", str(snapshot_file), "gc", "containers", "--yes"], capsys)
    assert code == 2 and "--yes" in err


def test_bad_snapshot_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "s.json"
    f.write_text('{"kind": "PodList"}')
    code, _, err = run(["--snapshot", str(f), "gc", "containers"], capsys)
    assert code == 2 and "not a kubegc snapshot" in err


def test_unreachable_runtime_is_exit_3(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["-r", "unix:///nonexistent.sock", "gc", "containers"], capsys)
    assert code == 3 and out == ""
    assert "unix:///nonexistent.sock" in err and err.count("\n") == 1


def test_socket_that_is_not_a_server_is_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sock = tmp_path / "dead.sock"
    sock.touch()  # a file, not a listening socket
    code, _, err = run(["-r", str(sock), "--timeout", "2s", "gc", "containers"], capsys)
    assert code == 3 and str(sock) in err and err.count("\n") == 1


def test_no_socket_anywhere_lists_candidates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CONTAINER_RUNTIME_ENDPOINT", raising=False)
    code, _, err = run(["--host-root", str(tmp_path), "gc", "containers"], capsys)
    assert code == 3
    assert "containerd.sock" in err and "crio.sock" in err


def test_help_and_version_do_not_import_heavy_modules() -> None:
    for args in (
        ["--version"],
        ["--help"],
        ["gc", "containers", "--help"],
        ["fleet", "--help"],
        ["agent", "--help"],
    ):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "kubegc_cli", *args],
            capture_output=True,
            text=True,
            check=True,
        )
        imported = {line.split("|")[-1].strip() for line in proc.stderr.splitlines()}
        for heavy in ("grpc", "kubernetes", "rich", "google.protobuf", "yaml"):
            assert heavy not in imported, f"{args} imported {heavy}"
    proc = subprocess.run(
        [sys.executable, "-m", "kubegc_cli", "--version"], capture_output=True, text=True
    )
    assert proc.stdout.strip().startswith("kubegc ")


def test_the_console_script_collects_garbage_then_freezes_for_exit(snapshot_file: Path) -> None:
    """A run through the console script ends with its garbage collected (finalizers run) and
    the rest frozen, so the interpreter's shutdown does not walk every object again."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: sys.stderr.write('frozen: %d\\n' % gc.get_freeze_count()))\n"
        "class Cycle:\n"
        "    def __del__(self): sys.stderr.write('finalized\\n')\n"
        "c = Cycle(); c.me = c; del c\n"
        "gc.disable()\n"
        f"sys.argv = ['kubegc', '--snapshot', {str(snapshot_file)!r}, 'gc', 'containers']\n"
        "from kubegc_cli.cli.entry import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "Container GC (dry run)" in proc.stdout
    assert "finalized" in proc.stderr
    assert int(proc.stderr.split("frozen: ")[1].split()[0]) > 10_000


@pytest.mark.parametrize(("sig", "code"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_stop_signal_while_exiting_ends_at_once_without_a_traceback(
    snapshot_file: Path, sig: str, code: int
) -> None:
    """The command has reported; a stop signal that arrives while the console script frees up
    for exit (here: from inside the collector's pass) ends the process with 130/143, with no
    traceback, even under a handler that raises."""
    program = (
        "import gc, os, signal, sys\n"
        "def raising(signum, frame): raise KeyboardInterrupt\n"
        "signal.signal(signal.SIGTERM, raising)\n"
        "sent = []\n"
        "def send(phase, info):\n"
        "    if phase == 'start' and not sent:\n"
        f"        sent.append(1); os.kill(os.getpid(), signal.{sig})\n"
        f"sys.argv = ['kubegc', '--snapshot', {str(snapshot_file)!r}, 'gc', 'containers']\n"
        "from kubegc_cli.cli import entry\n"
        "freeing = entry.freeze_for_exit\n"
        "def freeing_with_a_signal():\n"
        "    gc.callbacks.append(send)\n"
        "    freeing()\n"
        "entry.freeze_for_exit = freeing_with_a_signal\n"
        "entry.main()\n"
        "sys.stderr.write('still running\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert proc.returncode == code, proc.stderr
    assert "Container GC (dry run)" in proc.stdout  # the report came first, whole
    assert "Traceback" not in proc.stderr and "still running" not in proc.stderr


def test_grpc_server_without_cri_is_exit_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gRPC server that does not serve runtime.v1: one line saying it is not CRI v1."""
    from concurrent import futures

    import grpc

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=1))
    sock = tmp_path / "other.sock"
    server.add_insecure_port(f"unix://{sock}")
    server.start()
    try:
        code, _, err = run(["-r", f"unix://{sock}", "gc", "containers"], capsys)
    finally:
        server.stop(None)
    assert code == 3 and "not a CRI v1 runtime" in err and err.count("\n") == 1


def test_permission_denied_on_socket(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    sock = tmp_path / "cri.sock"
    sock.touch()
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    code, _, err = run(["-r", str(sock), "gc", "containers"], capsys)
    assert code == 3 and "permission denied" in err and str(sock) in err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--max-recv-size", "3Gi", "gc", "containers"], "2Gi-1"),
        (["--max-recv-size", "1e100", "gc", "containers"], "1e100"),
        (["--timeout", "2562047h", "gc", "containers"], "24h"),
        (["gc", "containers", "--older-than", "9" * 400 + "h"], "too large"),
        (["gc", "containers", "--minimum-container-ttl-duration", "\u0663s"], "\u0663s"),
        (["--now", "9999-12-31T23:59:59-23:59", "gc", "containers"], "9999-12-31"),
        (["--pods-file", "", "gc", "containers"], "'' is empty"),
        (["gc", "containers", "--dry-run", "--yes"], "contradict"),
        (["-r", "unix:///" + "x" * 200, "gc", "containers"], "unix socket path"),
    ],
)
def test_extreme_values_are_bad_input(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(argv, capsys)
    assert code == 2, err
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert needle in err


def test_deeply_nested_pods_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "pods.json"
    f.write_text("[" * 100_000)
    code, _, err = run(["--pods-file", str(f), "gc", "containers"], capsys)
    assert code == 2 and "nested too deeply" in err


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d["containers"][0].__setitem__("attempt", float("inf")),
         "containers[0]: attempt Infinity is not a whole number from 0 to 4294967295"),
        (lambda d: d["containers"][0].__setitem__("labels", ["not", "a", "map"]),
         'containers[0]: labels ["not", "a", "map"] is not a mapping of strings to strings'),
        (lambda d: d["containers"][0].__setitem__("state", "ZOMBIE"),
         'containers[0]: state "ZOMBIE" is not one of CREATED, RUNNING, EXITED, UNKNOWN'),
        (lambda d: d["containers"][0].pop("created_at"), "containers[0] has no 'created_at'"),
    ],
)  # fmt: skip
def test_malformed_snapshot_is_bad_input(
    snapshot_file: Path, mutate: Any, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(snapshot_file.read_text())
    mutate(doc)
    snapshot_file.write_text(json.dumps(doc))
    code, _, err = run(["--snapshot", str(snapshot_file), "gc", "containers"], capsys)
    assert code == 2 and err == f"kubegc: error: snapshot {snapshot_file}: {message}\n"


def test_markup_in_names_is_shown_not_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Names from the runtime are data: rich markup and escape sequences are shown, not run."""
    cs = [
        ctr("m0", uid="u1", ns="weird[", pod="evil]", age_s=300),
        ctr("m1", uid="u1", ns="weird[", pod="evil]", attempt=1, age_s=200),
        ctr("x0", uid="u2", ns="x", pod="p\x1b]0;pwned\x07", age_s=300),
        ctr("x1", uid="u2", ns="x", pod="p\x1b]0;pwned\x07", attempt=1, age_s=200),
    ]
    doc = NodeSnapshot(captured_at=NOW, containers=tuple(cs)).to_dict()
    f = tmp_path / "s.json"
    f.write_text(json.dumps(doc))
    code, out, err = run(["--snapshot", str(f), "gc", "containers"], capsys)
    assert code == 0, err
    assert "weird[/evil]" in out
    assert "\x1b" not in out and "\\x1b]0;pwned\\x07" in out


def test_pods_file_listing_none_of_the_running_pods_is_refused(
    snapshot_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An empty (or another node's) pod list would make every pod here look deleted."""
    empty = tmp_path / "pods.json"
    empty.write_text(json.dumps({"kind": "List", "items": []}))
    code, out, err = run(
        ["--snapshot", str(snapshot_file), "--pods-file", str(empty), "gc", "containers"], capsys
    )
    assert code == 2 and out == ""
    assert "lists none of the 1 pod(s) alive on this node" in err


def test_snapshot_yaml_round_trip(
    snapshot_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    from kubegc_cli.commands.gc import load_snapshot

    snap = load_snapshot(snapshot_file)
    y = tmp_path / "s.yaml"
    y.write_text(yaml.safe_dump(snap.to_dict()))
    assert load_snapshot(y) == snap


def test_broken_pipe_is_quiet(snapshot_file: Path) -> None:
    """`kubegc ... | head -1`: no traceback, and the same exit code for every output format."""
    codes = set()
    for fmt in ("table", "json", "yaml"):
        proc = subprocess.run(
            f"{sys.executable} -m kubegc_cli -o {fmt} --snapshot {snapshot_file} "
            "gc containers --maximum-dead-containers-per-container 0 --match-kubelet | head -c 1",
            shell=True, capture_output=True, text=True, executable="/bin/bash",
        )  # fmt: skip
        assert "Traceback" not in proc.stderr and "Error" not in proc.stderr
        codes.add(proc.returncode)
    assert codes == {0}  # the shell reports head's status; kubegc itself is checked below
    proc = subprocess.run(
        f"set -o pipefail; {sys.executable} -m kubegc_cli --snapshot {snapshot_file} "
        "gc containers | head -c 1 >/dev/null",
        shell=True, capture_output=True, text=True, executable="/bin/bash",
    )  # fmt: skip
    assert proc.returncode in (0, 141) and proc.stderr == ""


def test_image_gc_settings_come_from_flags_then_kubelet_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "kind: KubeletConfiguration\nimageGCHighThresholdPercent: 50\n"
        "imageGCLowThresholdPercent: 60\nimageMinimumGCAge: 5m0s\n"
    )
    code, _, err = run(["--kubelet-config", str(cfg), "-r", "unix:///nonexistent.sock", "gc",
                        "images"], capsys)  # fmt: skip
    assert code == 2 and "must be less than" in err  # the file's values, validated
    code, _, err = run(
        ["-v", "--kubelet-config", str(cfg), "-r", "unix:///nonexistent.sock", "gc", "images",
         "--image-gc-low-threshold", "40"],
        capsys,
    )  # fmt: skip
    assert code == 3  # valid now; the runtime is what is missing
    assert f"image_gc_high_threshold = 50 (from {cfg})" in err
    assert "image_gc_low_threshold = 40 (from --image-gc-low-threshold)" in err
    assert f"minimum_image_ttl_duration = 5m0s (from {cfg})" in err
    assert "image_maximum_gc_age = 0s (from kubelet default)" in err


@pytest.mark.parametrize(
    ("first", "second", "code", "said"),
    [
        ("SIGTERM", "SIGTERM", 143, "kubegc: error: SIGTERM again: exiting at once\n"),
        ("SIGTERM", "SIGINT", 130, "kubegc: error: SIGINT again: exiting at once\n"),
        ("SIGINT", "SIGTERM", 143, "kubegc: error: SIGTERM again: exiting at once\n"),
    ],
)
def test_after_a_first_stop_signal_the_next_one_exits_at_once(
    first: str, second: str, code: int, said: str
) -> None:
    """The console script's handlers (`kubegc_cli.core.stop`): the first stop signal is an
    exception the run handles; from that moment any other ends the process at once with its
    code and one line, wherever the run is (here: while it handles the first)."""
    program = (
        "import os, signal, sys, time\n"
        "from kubegc_cli.core import stop\n"
        "stop.install()\n"
        "try:\n"
        f"    os.kill(os.getpid(), signal.{first}); time.sleep(5)\n"
        "except KeyboardInterrupt as exc:\n"
        "    sys.stdout.write(type(exc).__name__ + '\\n'); sys.stdout.flush()\n"
        f"    os.kill(os.getpid(), signal.{second}); time.sleep(5)\n"
        "sys.stderr.write('still running\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert proc.returncode == code and proc.stderr == said, proc.stderr
    assert proc.stdout == ("Terminated\n" if first == "SIGTERM" else "KeyboardInterrupt\n")


@pytest.mark.parametrize(("sig", "code", "said"), [("SIGINT", 130, "interrupted"),
                                                    ("SIGTERM", 143, "terminated")])  # fmt: skip
@pytest.mark.parametrize("wrapped", [False, True])
def test_a_stop_signal_during_start_up_is_a_clean_exit(
    sig: str, code: int, said: str, wrapped: bool
) -> None:
    """Ctrl-C while kubegc is still importing itself: one line and 130/143, no traceback —
    also when the interrupt surfaces wrapped in another exception (Python 3.11 wraps one
    raised while a class is made, in `__set_name__`, in a RuntimeError)."""
    program = (
        "import os, signal, sys, time, types\n"
        "class Loading(types.ModuleType):\n"
        "    def __getattr__(self, name):\n"
        "        try:\n"
        f"            os.kill(os.getpid(), signal.{sig}); time.sleep(5)\n"
        "        except KeyboardInterrupt as exc:\n"
        f"            if {wrapped}: raise RuntimeError('Error calling __set_name__') from exc\n"
        "            raise\n"
        "sys.modules['kubegc_cli.cli.main'] = Loading('kubegc_cli.cli.main')\n"
        "sys.argv = ['kubegc', 'gc', 'containers']\n"
        "from kubegc_cli.cli import entry\n"
        "entry.main()\n"
        "sys.stderr.write('still running\\n')\n"
    )
    proc = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert proc.returncode == code and proc.stderr == f"kubegc: error: {said}\n", proc.stderr


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["gc", "containers", "--dry-run"], 2, "var/lib/kubelet/config.yaml"),
        (["--kubelet-config", "KC", "gc", "containers", "--dry-run"], 3, "ermission"),
        (["evict", "check"], 2, "var/lib/kubelet/config.yaml"),
    ],
)
def test_default_paths_a_user_may_not_look_into_are_a_clear_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    code: int,
    says: str,
) -> None:
    """A user other than root meets directories it may not search (`/var/lib/kubelet`,
    `/run/containerd` at 0700): whether the default kubelet config or a well-known socket is
    there cannot be told. They count as there, so reading them fails with one clear line
    (never a traceback from `Path.exists`)."""
    import os as os_

    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    (tmp_path / "run/containerd").mkdir(parents=True)
    (tmp_path / "var/lib/kubelet/config.yaml").write_text("kind: KubeletConfiguration\n")
    closed = tuple(str(tmp_path / d) + "/" for d in ("var/lib/kubelet", "run/containerd"))
    real_stat, real_open = os_.stat, os_.open

    def stat(path: Any, *args: Any, **kw: Any) -> Any:
        if str(path).startswith(closed):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kw)

    def open_(path: Any, *args: Any, **kw: Any) -> Any:
        if str(path).startswith(closed):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kw)

    monkeypatch.setattr(os_, "stat", stat)
    monkeypatch.setattr(os_, "open", open_)
    state, kc = tmp_path / "state", tmp_path / "kc.yaml"
    kc.write_text("kind: KubeletConfiguration\n")
    argv = [str(kc) if a == "KC" else a for a in argv]
    got, _, err = run(
        ["--host-root", str(tmp_path), "--state-dir", str(state), "--timeout", "1s", *argv],
        capsys,
    )
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert got == code and says in err, err


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_a_document_into_a_pipe_its_reader_closes_exits_141(tmp_path: Path, fmt: str) -> None:
    """`kubegc ... -o yaml | head -c 10` when the reader is gone before kubegc is done (here:
    before it starts writing): kubegc sees the closed pipe while writing (141, nothing on
    stderr), whatever the format — not at exit."""
    cs = [ctr(f"c{i:05d}", uid=f"u{i % 50}", attempt=i, age_s=900 - i / 10) for i in range(3000)]
    f = tmp_path / "s.json"
    f.write_text(json.dumps(NodeSnapshot(captured_at=NOW, containers=tuple(cs)).to_dict()))
    proc = subprocess.run(
        f"{sys.executable} -m kubegc_cli -o {fmt} --snapshot {f} gc containers "
        "| true; echo ${PIPESTATUS[0]}",
        shell=True, capture_output=True, text=True, executable="/bin/bash",
    )  # fmt: skip
    assert proc.stdout.strip() == "141" and proc.stderr == ""


def test_residue_scan_q_lists_host_paths_escaped_as_the_table_does(tmp_path: Path) -> None:
    """`-q` prints one target a line: a directory whose name holds an escape sequence and a
    newline shows them as escapes, on its one line, as the table shows it."""
    from tests.unit.memorycri import no_runtime, run_cli

    name = "x\x1b]0;owned\x07\nkubegc: forged"
    (tmp_path / "host/var/lib/kubelet/pods" / name).mkdir(parents=True)
    argv = ["--host-root", str(tmp_path / "host"), "--state-dir", str(tmp_path / "s"),
            "--pod-source", "none", "residue", "scan", "--kind", "orphaned-pod-dir"]  # fmt: skip
    with no_runtime():
        code, out, err = run_cli([*argv, "-q"])
        _, table, _ = run_cli(argv)
    assert code == 3 and "\x1b" not in out and "\x1b" not in err, (out, err)
    shown = "/var/lib/kubelet/pods/x\\x1b]0;owned\\x07\\x0akubegc: forged"
    assert out == shown + "\n" and shown in table


def test_removing_commands_default_to_8_in_flight_the_agent_and_evict_to_4() -> None:
    """`--concurrency` defaults to `REMOVAL_CONCURRENCY` (8) for the commands an operator
    runs to remove, and to `GENTLE_CONCURRENCY` (4) for the unattended agent and for evict's
    API calls; every removing command's help names the value for a node under pressure."""
    import click

    from kubegc_cli.cli.main import cli
    from kubegc_cli.core.plan import GENTLE_CONCURRENCY, PRESSURE_CONCURRENCY, REMOVAL_CONCURRENCY

    def option(path: tuple[str, ...]) -> click.Option:
        command: Any = cli
        with click.Context(cli) as ctx:
            for name in path:
                command = command.get_command(ctx, name)
        found: click.Option = next(p for p in command.params if p.name == "concurrency")
        return found

    assert (REMOVAL_CONCURRENCY, PRESSURE_CONCURRENCY, GENTLE_CONCURRENCY) == (8, 16, 4)
    for path in [("gc", "containers"), ("gc", "all"), ("gc", "images"), ("reclaim",),
                 ("residue", "clean"), ("apply",)]:  # fmt: skip
        opt = option(path)
        assert opt.default == 8, path
        assert "16 on a node under pressure" in (opt.help or ""), path
    assert option(("agent",)).default == 4
    assert option(("evict", "prune")).default == 4
