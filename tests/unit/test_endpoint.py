"""Runtime endpoint discovery in crictl's order, under --host-root."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubegc_cli.core.errors import BadInput, RuntimeUnavailable
from kubegc_cli.node.cri.endpoint import resolve_endpoint, socket_path


def make_sock(root: Path, path: str) -> None:
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.touch()


def test_flag_beats_env_and_config(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/crictl.yaml").write_text("runtime-endpoint: unix:///run/crio/crio.sock\n")
    ep = resolve_endpoint(
        "unix:///flag.sock", {"CONTAINER_RUNTIME_ENDPOINT": "/env.sock"}, tmp_path
    )
    assert (ep.path, ep.source) == ("/flag.sock", "--runtime-endpoint")


def test_env_beats_config(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/crictl.yaml").write_text("runtime-endpoint: unix:///run/crio/crio.sock\n")
    ep = resolve_endpoint(None, {"CONTAINER_RUNTIME_ENDPOINT": "/env.sock"}, tmp_path)
    assert (ep.path, ep.source) == ("/env.sock", "CONTAINER_RUNTIME_ENDPOINT")


def test_crictl_yaml_is_read_under_host_root(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/crictl.yaml").write_text(
        "runtime-endpoint: unix:///run/crio/crio.sock\nimage-endpoint: x\ntimeout: 2\n"
    )
    ep = resolve_endpoint(None, {}, tmp_path)
    assert ep.path == str(tmp_path / "run/crio/crio.sock")
    assert ep.source == "/etc/crictl.yaml"
    assert ep.address == "unix://" + str(tmp_path / "run/crio/crio.sock")


def test_a_crictl_yaml_endpoint_never_leaves_the_host_root(tmp_path: Path) -> None:
    """`..` in crictl.yaml's endpoint climbs no higher than the host's `/` (the file is the
    host's, read under `--host-root`)."""
    (tmp_path / "host/etc").mkdir(parents=True)
    (tmp_path / "host/etc/crictl.yaml").write_text(
        "runtime-endpoint: unix:///../../run/../run/containerd/containerd.sock\n"
    )
    ep = resolve_endpoint(None, {}, tmp_path / "host")
    assert ep.path == str(tmp_path / "host/run/containerd/containerd.sock")


def test_well_known_sockets_in_order(tmp_path: Path) -> None:
    make_sock(tmp_path, "/run/k3s/containerd/containerd.sock")
    make_sock(tmp_path, "/run/crio/crio.sock")
    ep = resolve_endpoint(None, {}, tmp_path)
    assert ep.path == str(tmp_path / "run/crio/crio.sock")
    assert ep.source == "well-known socket"


def test_nothing_found_lists_what_was_tried(tmp_path: Path) -> None:
    with pytest.raises(RuntimeUnavailable) as err:
        resolve_endpoint(None, {}, tmp_path)
    msg = str(err.value)
    assert "containerd.sock" in msg and "crio.sock" in msg and "cri-dockerd.sock" in msg
    assert "\n" not in msg


def test_bad_crictl_yaml_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/crictl.yaml").write_text("runtime-endpoint: [unclosed\n")
    with pytest.raises(BadInput) as err:
        resolve_endpoint(None, {}, tmp_path)
    assert "crictl.yaml" in str(err.value)


@pytest.mark.parametrize(
    ("value", "path"),
    [("unix:///run/x.sock", "/run/x.sock"), ("/run/x.sock", "/run/x.sock"), ("unix://x", "x")],
)
def test_socket_path(value: str, path: str) -> None:
    assert socket_path(value, what="-r") == path


@pytest.mark.parametrize("value", ["tcp://1.2.3.4:5", "npipe:////./pipe/x", "unix://"])
def test_socket_path_rejects(value: str) -> None:
    with pytest.raises(BadInput) as err:
        socket_path(value, what="--runtime-endpoint")
    assert value in str(err.value)
