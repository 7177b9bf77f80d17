"""containerLogMaxSize and containerLogMaxFiles as the kubelet reads them: the config file,
its drop-ins, the running kubelet's flags and `/configz` (container_log_manager.go
`parseMaxSize`, `NewContainerLogManager`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegc_cli.core.errors import BadInput
from kubegc_cli.core.podlogs import LogRotation
from kubegc_cli.node.host.kubelet import load_kubelet_config, parse_kubelet_config
from tests.unit.test_kubelet_dropins import KIND, put


def test_the_kubelets_defaults_without_a_file(tmp_path: Path) -> None:
    kcfg = load_kubelet_config(None, tmp_path, running=None)
    assert kcfg.log_rotation == LogRotation(10 * 1024 * 1024, 5, "defaults")


@pytest.mark.parametrize(
    ("size", "files", "want"),
    [
        ('"20Mi"', 3, (20 * 1024 * 1024, 3)),
        ('"1G"', 2, (10**9, 2)),
        ('"-1"', 5, (-1, 5)),  # negative: rotation disabled
        ('""', 0, (10 * 1024 * 1024, 5)),  # unset fields take the defaults
    ],
)
def test_values_from_the_file(tmp_path: Path, size: str, files: int, want: tuple[int, int]) -> None:
    cfg = put(
        tmp_path, "c.yaml", KIND + f"containerLogMaxSize: {size}\ncontainerLogMaxFiles: {files}\n"
    )
    kcfg = load_kubelet_config(cfg, tmp_path, running=None)
    assert (kcfg.log_rotation.max_size, kcfg.log_rotation.max_files) == want


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("containerLogMaxFiles: 1", "containerLogMaxFiles 1 must be more than 1"),
        ("containerLogMaxFiles: true", "containerLogMaxFiles true must be an integer"),
        ('containerLogMaxSize: "500m"', "'500m' is not a whole number of bytes"),
        ('containerLogMaxSize: "ten"', "'ten' is not a quantity"),
        ("containerLogMaxSize: 10", "containerLogMaxSize 10 must be a quantity"),
    ],
)
def test_values_the_kubelet_refuses_are_bad_input(tmp_path: Path, line: str, message: str) -> None:
    cfg = put(tmp_path, "c.yaml", KIND + line + "\n")
    with pytest.raises(BadInput, match=message):
        load_kubelet_config(cfg, tmp_path, running=None)


def test_a_dropin_and_the_command_line_each_name_what_they_set(tmp_path: Path) -> None:
    """kubeletConfigFlagPrecedence: the command line over the merged files."""
    put(tmp_path, "etc/k/kubelet.yaml", KIND + "containerLogMaxSize: 5Mi\n")
    dropin = put(tmp_path, "etc/k/conf.d/10-logs.conf", KIND + "containerLogMaxFiles: 3\n")
    argv = ["kubelet", "--config=/etc/k/kubelet.yaml", "--config-dir=/etc/k/conf.d"]
    kcfg = load_kubelet_config(None, tmp_path, running=(7, argv))
    assert (kcfg.log_rotation.max_size, kcfg.log_rotation.max_files) == (5 * 1024 * 1024, 3)
    assert kcfg.sources["container_log_max_files"] == str(dropin)
    assert str(dropin) in kcfg.log_rotation.source
    flagged = load_kubelet_config(
        None, tmp_path, running=(7, [*argv, "--container-log-max-size", "1Mi"])
    )
    assert flagged.log_rotation.max_size == 1024 * 1024
    assert flagged.log_rotation.max_files == 3
    flag = "kubelet command line (pid 7): --container-log-max-size"
    assert flagged.sources["container_log_max_size"] == flag
    assert flagged.log_rotation.source == f"{flag}, {dropin}"
    with pytest.raises(BadInput, match="--container-log-max-files 1 must be more than 1"):
        load_kubelet_config(None, tmp_path, running=(7, [*argv, "--container-log-max-files=1"]))


def test_configz_values() -> None:
    """/configz serves the effective configuration as JSON: the same fields."""
    doc = {"podLogsDir": "/var/log/pods", "containerLogMaxSize": "4Ki", "containerLogMaxFiles": 2}
    kcfg = parse_kubelet_config(doc, source="kubelet /configz")
    assert kcfg.log_rotation == LogRotation(4096, 2, "kubelet /configz")
