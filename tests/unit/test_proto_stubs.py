"""The committed CRI stubs are exactly what regenerating them from proto/ gives."""

from __future__ import annotations

import importlib.metadata
import importlib.resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Each vendored proto and the stubs generated from it.
PROTOS = {
    "kubegc_cli/node/cri/v1/api.proto": ("api_pb2.py", "api_pb2.pyi", "api_pb2_grpc.py"),
    "kubegc_cli/node/containerd/images/v1/images.proto": (
        "images_pb2.py", "images_pb2.pyi", "images_pb2_grpc.py",
    ),
}  # fmt: skip
PINNED_TOOLS = "1.85.1"  # the dev extra in pyproject.toml pins grpcio-tools to this


@pytest.mark.parametrize("proto", sorted(PROTOS))
def test_stubs_are_fresh(tmp_path: Path, proto: str) -> None:
    protoc = pytest.importorskip("grpc_tools.protoc", reason="install the dev extra")
    version = importlib.metadata.version("grpcio-tools")
    assert version == PINNED_TOOLS, (
        f"grpcio-tools {version} installed; the stubs are generated with {PINNED_TOOLS} "
        "(pip install -e '.[dev]')"
    )
    rc = protoc.main(
        [
            "protoc",
            f"-I{ROOT / 'proto'}",
            # the well-known types (google/protobuf/*.proto), as `python -m grpc_tools.protoc`
            f"-I{importlib.resources.files('grpc_tools') / '_proto'}",
            f"--python_out={tmp_path}",
            f"--pyi_out={tmp_path}",
            f"--grpc_python_out={tmp_path}",
            str(ROOT / "proto" / proto),
        ]
    )
    assert rc == 0
    package = Path(proto).parent
    for name in PROTOS[proto]:
        fresh = (tmp_path / package / name).read_text()
        committed = (ROOT / package / name).read_text()
        assert fresh == committed, f"{name} is stale: run scripts/regen-proto"


def test_wire_names_match_cri_v1() -> None:
    """Package, services and methods carry CRI v1's real names (what the wire uses)."""
    from kubegc_cli.node.cri.v1 import api_pb2

    d = api_pb2.DESCRIPTOR
    assert d.package == "runtime.v1"
    rs = d.services_by_name["RuntimeService"]
    for method in ("Version", "ListContainers", "ContainerStatus", "RemoveContainer",
                   "StopContainer", "ListPodSandbox", "RunPodSandbox", "CreateContainer",
                   "StartContainer", "StopPodSandbox", "RemovePodSandbox"):  # fmt: skip
        assert method in rs.methods_by_name
    fields = {f.name: f.number for f in d.message_types_by_name["Container"].fields}
    assert fields == {
        "id": 1, "pod_sandbox_id": 2, "metadata": 3, "image": 4, "image_ref": 5, "state": 6,
        "created_at": 7, "labels": 8, "annotations": 9, "image_id": 10,
    }  # fmt: skip
    status = {f.name: f.number for f in d.message_types_by_name["ContainerStatus"].fields}
    assert status["log_path"] == 15 and status["finished_at"] == 6 and status["image_id"] == 17


def test_wire_names_match_containerd_images_v1() -> None:
    """containerd's images service: its package, service, methods and the field numbers of
    the messages kubegc sends (an Update carries the whole image, target included)."""
    from kubegc_cli.node.containerd.images.v1 import images_pb2

    d = images_pb2.DESCRIPTOR
    assert d.package == "containerd.services.images.v1"
    assert set(d.services_by_name["Images"].methods_by_name) == {"Get", "List", "Update"}
    image = {f.name: f.number for f in d.message_types_by_name["Image"].fields}
    assert image == {"name": 1, "labels": 2, "target": 3, "created_at": 7, "updated_at": 8}
    target = {f.name: f.number for f in d.message_types_by_name["Descriptor"].fields}
    assert target == {"media_type": 1, "digest": 2, "size": 3, "annotations": 5}
    update = {f.name: f.number for f in d.message_types_by_name["UpdateImageRequest"].fields}
    assert update == {"image": 1, "update_mask": 2}
