"""The config file: precedence (flag > env > file > kubelet config > defaults), `config view`,
and errors naming the key and the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubegc_cli.cli.main import main
from kubegc_cli.core.model import NodeSnapshot
from tests.unit.factories import NOW, ctr

KEY = "gc.containers.maximum-dead-containers-per-container"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


@pytest.fixture
def snap(tmp_path: Path) -> Path:
    """Six exited attempts of one evict unit."""
    cs = tuple(ctr(f"{i:02d}" * 8, attempt=i, age_s=1000 - i, log_bytes=100) for i in range(6))
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(NodeSnapshot(NOW, "unix:///x", containers=cs).to_dict()))
    return f


def config(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "config.yaml"
    f.write_text(text)
    return f


def view(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    code, out, err = run([*argv, "-o", "json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "Config"
    return {row["key"]: row for row in doc["values"]}


def test_flag_beats_the_config_file_and_view_says_flag(
    tmp_path: Path, snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue case 2: file says 2, the flag says 3: 3 is in force and config view says flag."""
    cfg = config(tmp_path, "gc:\n  containers:\n    maximum-dead-containers-per-container: 2\n")
    base = ["--config", str(cfg), "--snapshot", str(snap)]
    code, out, err = run(
        [*base, "gc", "containers", "--maximum-dead-containers-per-container", "3", "-o", "json"],
        capsys,
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["policy"]["maximum_dead_containers_per_container"] == 3
    assert len(doc["actions"]) == 3  # six attempts, three kept
    rows = view(
        ["--config", str(cfg), "config", "view", "gc", "containers",
         "--maximum-dead-containers-per-container", "3"],
        capsys,
    )  # fmt: skip
    assert rows[KEY]["value"] == 3 and rows[KEY]["source"] == "flag"

    # without the flag the file's 2 is in force, and view names the file
    code, out, _ = run([*base, "gc", "containers", "-o", "json"], capsys)
    assert json.loads(out)["policy"]["maximum_dead_containers_per_container"] == 2
    rows = view(["--config", str(cfg), "config", "view", "gc", "containers"], capsys)
    assert rows[KEY] == {"key": KEY, "value": 2, "source": f"config {cfg}"}
    assert rows["gc.containers.maximum-dead-containers"]["source"] == "default"
    rows = view(["--config", str(cfg), "config", "view"], capsys)
    assert rows[KEY]["source"] == f"config {cfg}" and rows["config"]["source"] == "flag"


def test_global_options_from_the_file_and_the_environment(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = config(
        tmp_path,
        "timeout: 30s\nruntime-endpoint: unix:///from/file.sock\nstate-dir: /srv/kubegc\n",
    )
    monkeypatch.setenv("KUBEGC_CONFIG", str(cfg))
    monkeypatch.delenv("CONTAINER_RUNTIME_ENDPOINT", raising=False)
    rows = view(["config", "view", "--timeout", "5s"], capsys)
    assert rows["config"] == {"key": "config", "value": str(cfg), "source": "env KUBEGC_CONFIG"}
    assert rows["timeout"]["value"] == "5s" and rows["timeout"]["source"] == "flag"
    assert rows["state-dir"] == {
        "key": "state-dir", "value": "/srv/kubegc", "source": f"config {cfg}"
    }  # fmt: skip
    assert rows["runtime-endpoint"]["value"] == "unix:///from/file.sock"
    # the environment outranks the file (as crictl reads CONTAINER_RUNTIME_ENDPOINT)
    monkeypatch.setenv("CONTAINER_RUNTIME_ENDPOINT", "unix:///from/env.sock")
    rows = view(["config", "view"], capsys)
    assert rows["runtime-endpoint"]["source"] == "env CONTAINER_RUNTIME_ENDPOINT"
    assert rows["runtime-endpoint"]["value"] == "unix:///from/env.sock"


def test_image_settings_file_beats_kubelet_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubelet = tmp_path / "kubelet.yaml"
    kubelet.write_text(
        "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n"
        "imageGCHighThresholdPercent: 90\nimageGCLowThresholdPercent: 70\n"
    )
    cfg = config(tmp_path, "gc:\n  images:\n    image-gc-high-threshold: 75\n")
    rows = view(
        ["--config", str(cfg), "--kubelet-config", str(kubelet), "config", "view", "gc",
         "images"],
        capsys,
    )  # fmt: skip
    assert rows["gc.images.image-gc-high-threshold"]["value"] == 75
    assert rows["gc.images.image-gc-high-threshold"]["source"] == f"config {cfg}"
    assert rows["gc.images.image-gc-low-threshold"] == {
        "key": "gc.images.image-gc-low-threshold", "value": 70,
        "source": f"kubelet config {kubelet}: imageGCLowThresholdPercent",
    }  # fmt: skip
    assert rows["gc.images.minimum-image-ttl-duration"]["source"] == "default"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("gc:\n  containers:\n    maximum-dead-containers-per-containr: 2\n",
         "unknown key 'gc.containers.maximum-dead-containers-per-containr'"),
        ("timout: 30s\n", "unknown key 'timout'"),
        ("gc:\n  containers:\n    maximum-dead-containers-per-container: two\n",
         "gc.containers.maximum-dead-containers-per-container in"),
        ("timeout: soon\n", "timeout in"),
        ("gc:\n  containers:\n    max-delete: -1\n", "gc.containers.max-delete in"),
        ("gc:\n  containers:\n    max-bytes: lots\n", "gc.containers.max-bytes in"),
        ("output: xml\n", "output in"),
        ("gc: 3\n", "gc must be a mapping"),
        ("yes: true\n", "yes cannot be set in a config file"),
        ("gc:\n  containers:\n    dry-run: maybe\n", "gc.containers.dry-run in"),
        ("- a\n- b\n", "expected a mapping"),
        ("timeout: [\n", "not valid YAML"),
        # values shown as written in YAML/JSON, never as Python spells them (True, None)
        ("gc:\n  containers:\n    maximum-dead-containers: true\n",
         "maximum-dead-containers in CFG: true (expected an integer)"),
        ("gc:\n  containers:\n    maximum-dead-containers: {a: 1}\n",
         'CFG: {"a": 1} (expected a single value)'),
        ("timeout: null\n", "timeout in CFG: null (expected a single value)"),
        ("output: true\n", "output in CFG: true (expected one of table, wide, name, json, yaml)"),
        # a key given twice: which one counts? (YAML, as JSON, says a key is unique)
        ("timeout: 30s\ntimeout: 1s\n", "CFG: key 'timeout' appears twice in one mapping (line 2)"),
        ("gc:\n  containers:\n    max-delete: 1\n    max-delete: 1000\n",
         "CFG: key 'max-delete' appears twice in one mapping (line 4)"),
        ("gc: {images: {}}\ngc: {containers: {max-delete: 9}}\n", "key 'gc' appears twice"),
        ("{timeout: 30s, timeout: 1s}\n", "key 'timeout' appears twice"),
    ],
)  # fmt: skip
def test_bad_key_or_value_is_exit_2_naming_key_and_file(
    tmp_path: Path, snap: Path, capsys: pytest.CaptureFixture[str], text: str, named: str
) -> None:
    cfg = config(tmp_path, text)
    code, out, err = run(
        ["--config", str(cfg), "--snapshot", str(snap), "gc", "containers"], capsys
    )
    assert code == 2 and out == ""
    named = named.replace("CFG", str(cfg))
    assert err.count("\n") == 1 and named in err and str(cfg) in err, err


def test_a_key_twice_is_refused_only_in_kubegcs_own_files(
    tmp_path: Path, snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kubelet config keeps the kubelet's leniency (the last value counts), and a merge
    key (`<<`) overridden by a key of the same mapping is no key given twice."""
    kubelet = tmp_path / "kubelet.yaml"
    kubelet.write_text(
        "kind: KubeletConfiguration\napiVersion: kubelet.config.k8s.io/v1beta1\n"
        "imageGCHighThresholdPercent: 70\nimageGCHighThresholdPercent: 90\n"
    )
    cfg = config(tmp_path, "gc:\n  containers:\n    <<: {max-delete: 5, max-bytes: 1Gi}\n"
                 "    max-delete: 7\n")  # fmt: skip
    rows = view(["--config", str(cfg), "--kubelet-config", str(kubelet), "config", "view", "gc",
                 "containers"], capsys)  # fmt: skip
    assert rows["gc.containers.max-delete"]["value"] == 7
    rows = view(["--kubelet-config", str(kubelet), "config", "view", "gc", "images"], capsys)
    assert rows["gc.images.image-gc-high-threshold"]["value"] == 90


def test_value_only_the_command_can_judge_names_the_file(
    tmp_path: Path, snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = config(tmp_path, "timeout: 48h\n")
    code, _, err = run(["--config", str(cfg), "--snapshot", str(snap), "gc", "containers"], capsys)
    assert code == 2 and "--timeout" in err and f"timeout in {cfg}" in err


def test_named_config_file_must_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBEGC_CONFIG", str(tmp_path / "missing.yaml"))
    code, _, err = run(["config", "view"], capsys)
    assert code == 2 and "missing.yaml" in err and err.count("\n") == 1


def test_config_view_of_an_unknown_command_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["config", "view", "gc", "containerz"], capsys)
    assert code == 2 and "containerz" in err
    code, _, err = run(["config", "view", "gc", "containers", "--no-such-flag"], capsys)
    assert code == 2 and "--no-such-flag" in err


def test_table_view_lists_key_value_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = config(tmp_path, "gc:\n  containers:\n    namespace: [ci, build]\n")
    code, out, _ = run(["--config", str(cfg), "config", "view"], capsys)
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("gc.containers.namespace"))
    assert line.split() == ["gc.containers.namespace", "ci,build", "config", str(cfg)]
    assert out.splitlines()[0].split() == ["KEY", "VALUE", "SOURCE"]


def test_a_fraction_for_a_whole_number_is_exit_2_as_the_flag(
    tmp_path: Path, snap: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """2.5 in the file is refused, not cut to 2, as --flag 2.5 is; 2 is fine."""
    cfg = config(tmp_path, f"gc:\n  containers:\n    {KEY.rsplit('.', 1)[1]}: 2.5\n")
    for argv in (["--snapshot", str(snap), "gc", "containers"], ["config", "view"],
                 ["config", "view", "gc", "containers"]):  # fmt: skip
        code, out, err = run(["--config", str(cfg), *argv], capsys)
        assert (code, out) == (2, ""), err
        assert err.count("\n") == 1 and f"{KEY} in {cfg}" in err and "'2.5'" in err
    code, _, err = run(["--snapshot", str(snap), "gc", "containers",
                        "--maximum-dead-containers-per-container", "2.5"], capsys)  # fmt: skip
    assert code == 2 and "'2.5' is not a whole number" in err


@pytest.mark.parametrize(
    ("command", "text", "named"),
    [
        ("gc images", "gc:\n  images:\n    image-gc-high-threshold: 150\n",
         "invalid value for gc.images.image-gc-high-threshold in {cfg}: 150 must be between 0 "
         "and 100"),
        ("gc images", "gc:\n  images:\n    image-gc-low-threshold: 90\n",
         "gc.images.image-gc-low-threshold in {cfg} (90) must be less than"),
        ("gc logs", "gc:\n  logs:\n    pod-logs-dir: var/log/pods\n",
         "--pod-logs-dir 'var/log/pods' must be an absolute path (set by gc.logs.pod-logs-dir "
         "in {cfg})"),
        ("apply plan.json", "apply:\n  pod-logs-dir: /\n",
         "(set by apply.pod-logs-dir in {cfg})"),
    ],
)  # fmt: skip
def test_config_view_refuses_what_the_run_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, text: str, named: str
) -> None:
    """config view checks each command's values as its run does: exit 2, the run's message."""
    cfg = config(tmp_path, text)
    message = named.format(cfg=cfg)
    runs = [["config", "view"], ["config", "view", *command.split()]]
    if command.startswith("gc"):
        runs.append([*command.split(), "--dry-run", "-r", f"unix://{tmp_path}/none.sock",
                     "--state-dir", str(tmp_path / "s")])  # fmt: skip
    for argv in runs:
        code, out, err = run(["--config", str(cfg), *argv], capsys)
        assert (code, out) == (2, ""), (argv, err)
        assert err.count("\n") == 1 and message in err, (argv, err)


@pytest.mark.parametrize(
    ("text", "flag", "code", "said"),
    [
        ("runtime-endpoint: /nowhere/k.sock\n", [], 3,
         "no CRI runtime socket at unix:///nowhere/k.sock (from runtime-endpoint in {cfg})"),
        ("runtime-endpoint: 5\n", [], 3, "unix://5 (from runtime-endpoint in {cfg})"),
        ('runtime-endpoint: "tcp://h:1"\n', [], 2,
         "runtime-endpoint in {cfg} 'tcp://h:1': unsupported scheme 'tcp'"),
        ("runtime-endpoint: /nowhere/k.sock\n", ["-r", "/elsewhere/k.sock"], 3,
         "unix:///elsewhere/k.sock (from --runtime-endpoint)"),
    ],
)  # fmt: skip
def test_an_endpoint_error_names_where_the_endpoint_was_given(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    text: str,
    flag: list[str],
    code: int,
    said: str,
) -> None:
    """An unreachable or malformed endpoint from the config file names the file's key and the
    file, not `--runtime-endpoint` (which the user did not type); a flag still names the flag."""
    monkeypatch.delenv("CONTAINER_RUNTIME_ENDPOINT", raising=False)
    cfg = config(tmp_path, text)
    got, out, err = run(["--config", str(cfg), *flag, "gc", "containers", "--dry-run"], capsys)
    assert (got, out) == (code, "") and err.count("\n") == 1, err
    assert said.format(cfg=cfg) in err


def test_table_view_shows_values_escaped_as_tables_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = config(tmp_path, 'state-dir: "/srv/k\\e]0;owned\\a"\n')
    code, out, err = run(["--config", str(cfg), "config", "view"], capsys)
    assert code == 0, err
    assert "\x1b" not in out and "/srv/k\\x1b]0;owned\\x07" in out
