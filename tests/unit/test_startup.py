"""What a plain run loads: a dry run whose table goes into a pipe, with no pod source, loads
none of the heavy packages it does not use. The imports kubegc defers to functions for this
name these tests (`# deferred: ...`; tests/unit/test_layers.py checks that they do)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from tests.unit.faultcri import FaultCri, synthetic_inventory

PROBE = (
    "import os, sys, runpy; sys.argv = ['kubegc', *sys.argv[1:]]\n"
    "try:\n    runpy.run_module('kubegc_cli', run_name='__main__')\n"
    "finally:\n    sys.stderr.write('loaded: %s\\n' % ' '.join(sorted("
    "set(sys.modules) if os.environ.get('PROBE_MODULES') else "
    "{m.split('.')[0] for m in sys.modules})))\n"
)


def loaded_by(argv: list[str], modules: bool = False) -> tuple[int, str, str, set[str]]:
    """Run kubegc in a fresh interpreter; (exit code, stdout, stderr, top-level packages loaded —
    or, with `modules`, every module loaded)."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    if modules:
        env["PROBE_MODULES"] = "1"
    # As root, in a PID namespace of its own with its own /proc: a kubelet another test run
    # has running on this machine is not found (its config file would load a YAML reader).
    alone = ["unshare", "--mount", "--pid", "--fork", "--mount-proc"] if os.geteuid() == 0 else []
    proc = subprocess.run(
        [*alone, sys.executable, "-c", PROBE, *argv],
        capture_output=True,
        text=True,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    line = next(ln for ln in proc.stderr.splitlines() if ln.startswith("loaded: "))
    return proc.returncode, proc.stdout, proc.stderr, set(line.removeprefix("loaded: ").split())


def test_a_plain_dry_run_loads_no_heavy_package(tmp_path: Path) -> None:
    inv = synthetic_inventory(60, 10, 5, pods=10)
    with FaultCri(tmp_path / "c.sock", inv) as cri:
        argv = ["-r", cri.endpoint, "--state-dir", str(tmp_path / "st"), "--pod-source", "none",
                "gc", "containers", "--dry-run"]  # fmt: skip
        code, out, _, loaded = loaded_by(argv)
    assert code == 0, out
    assert "Container GC (dry run)" in out and "to remove" in out
    assert "grpc" in loaded  # the probe sees what the run loaded
    for heavy in ("kubernetes", "urllib3", "yaml", "rich", "psutil"):
        assert heavy not in loaded, f"a dry run loaded {heavy}"


@pytest.mark.parametrize("with_config", [False, True])
def test_a_command_loads_its_own_group_only(tmp_path: Path, with_config: bool) -> None:
    """`gc containers` imports the gc commands, not those of `evict`, `memory`, `df` or
    `residue` (the root group imports a command group's module when a run needs it) — with a
    config file too, when the file names no other group."""
    inv = synthetic_inventory(10, 2, 1, pods=2)
    config = tmp_path / "kubegc.yaml"
    config.write_text("timeout: 30s\ngc:\n  containers:\n    maximum-dead-containers: 50\n")
    with FaultCri(tmp_path / "c.sock", inv) as cri:
        argv = ["-r", cri.endpoint, "--state-dir", str(tmp_path / "st"), "--pod-source", "none",
                *(["--config", str(config)] if with_config else []),
                "gc", "containers", "--dry-run"]  # fmt: skip
        code, _, err, loaded = loaded_by(argv, modules=True)
    assert code == 0, err
    assert ("yaml" in {m.split(".")[0] for m in loaded}) is with_config  # the file was read
    assert "kubegc_cli.commands.gc" in loaded and "kubegc_cli.cli.gc" in loaded
    for other in ("evict", "memory", "df", "residue"):
        assert f"kubegc_cli.cli.{other}" not in loaded
        assert f"kubegc_cli.commands.{other}" not in loaded


HELP_PROBE = """
import json, sys
from kubegc_cli.cli.main import SUBCOMMANDS, cli

def helps():
    return [cli.get_help(cli.make_context("kubegc", [], resilient_parsing=True, terminal_width=w))
            for w in (40, 60, 80, 120, 200)]

before = helps()
groups = sorted(m for m in sys.modules if m.rpartition(".")[2] in SUBCOMMANDS and ".cli." in m)
cli.commands  # every group imported
print(json.dumps({"same": before == helps(), "groups": groups, "help": before[2]}))
"""


def test_help_lists_the_commands_without_importing_them() -> None:
    """`kubegc --help` writes its list of commands from `cli.main.LISTING` and `SUMMARIES`,
    importing no command group, and it is the same list once the commands are imported, at
    every width."""
    proc = subprocess.run(
        [sys.executable, "-c", HELP_PROBE], capture_output=True, text=True, check=True
    )
    got = json.loads(proc.stdout)
    assert got["groups"] == [] and got["same"] is True
    assert "Disk space commands:" in got["help"] and "  residue scan " in got["help"]


def test_each_summary_is_its_commands_own_first_sentence() -> None:
    """Each listed path names a real command, and its summary is the first sentence of that
    command's own help."""
    from kubegc_cli.cli.command import WHOLE
    from kubegc_cli.cli.main import LISTING, SUMMARIES, cli

    listed = [path for _, paths in LISTING for path in paths]
    assert sorted(SUMMARIES) == sorted(listed)
    ctx = cli.make_context("kubegc", [], resilient_parsing=True)
    for path, summary in SUMMARIES.items():
        real: click.Command | None = cli
        for word in path.split():
            assert isinstance(real, click.Group), path
            real = real.get_command(ctx, word)
        assert real is not None and not real.hidden and not real.deprecated, path
        assert summary == real.get_short_help_str(WHOLE), path
