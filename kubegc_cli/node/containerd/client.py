"""A small client of containerd's images service (`containerd.services.images.v1.Images`),
for pinning images the way containerd's CRI plugin reads pins.

containerd serves its own API on the socket it serves CRI on. Every call carries the
namespace as gRPC metadata (`containerd-namespace`; the kubelet's images live in `k8s.io`)
and a deadline (`timeout` seconds). The CRI plugin reports an image `pinned` (CRI `Image.pinned`,
containerd 1.7 and later) when any of its image records (one per name: tag, digest, ID)
carries the label `io.cri-containerd.pinned=pinned`, and keeps its view current from
containerd's image events (containerd `internal/cri/store/image`, `internal/cri/labels`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import grpc
from google.protobuf.field_mask_pb2 import FieldMask

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.pins import StoredImage
from kubegc_cli.node.containerd.images.v1 import images_pb2, images_pb2_grpc
from kubegc_cli.node.cri.client import describe_rpc_error
from kubegc_cli.node.cri.endpoint import Endpoint

NAMESPACE = "k8s.io"
#: Why `ContainerdImages.set_labels` wrote nothing to a record gone since it was read.
GONE = "the runtime has no record of it any more"


def stored_image(image: Any) -> StoredImage:
    """containerd's image message as a `StoredImage`."""
    created = image.created_at.seconds * 1_000_000_000 + image.created_at.nanos
    return StoredImage(str(image.name), dict(image.labels), str(image.target.digest), created)


class ContainerdImages:
    """containerd's images service in namespace `namespace` at `endpoint` (a unix socket
    that serves CRI too). `timeout`: seconds per call. Errors are `RuntimeUnavailable`, one
    line naming the endpoint and the call."""

    def __init__(self, endpoint: Endpoint, *, timeout: float = 10.0,
                 namespace: str = NAMESPACE) -> None:  # fmt: skip
        self.endpoint = endpoint
        self.timeout = timeout
        self._metadata = (("containerd-namespace", namespace),)
        self._channel = grpc.insecure_channel(
            endpoint.address, options=[("grpc.enable_http_proxy", 0)]
        )
        stubs: Any = images_pb2_grpc
        self._images: Any = stubs.ImagesStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> ContainerdImages:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, name: str) -> Any:
        """The image record `name` (the message); None when containerd has none."""
        pb: Any = images_pb2
        try:
            r = self._images.Get(
                pb.GetImageRequest(name=name), timeout=self.timeout, metadata=self._metadata
            )
        except grpc.RpcError as err:
            code = err.code() if hasattr(err, "code") else None
            if code == grpc.StatusCode.NOT_FOUND:
                return None
            raise RuntimeUnavailable(
                describe_rpc_error(err, self.endpoint.display, "images Get", self.timeout)
            ) from None
        return r.image

    def labels(self, name: str) -> dict[str, str] | None:
        """The labels of the image record `name`; None when containerd has no such record."""
        image = self._get(name)
        return None if image is None else dict(image.labels)

    def records(self, names: Iterable[str]) -> dict[str, dict[str, str]]:
        """The labels of each of `names` that containerd has a record of, by name."""
        out: dict[str, dict[str, str]] = {}
        for name in dict.fromkeys(names):
            found = self.labels(name)
            if found is not None:
                out[name] = found
        return out

    def list_records(self) -> dict[str, StoredImage]:
        """Every image record in the namespace, by name (one `images List`)."""
        pb: Any = images_pb2
        try:
            r = self._images.List(
                pb.ListImagesRequest(), timeout=self.timeout, metadata=self._metadata
            )
        except grpc.RpcError as err:
            raise RuntimeUnavailable(
                describe_rpc_error(err, self.endpoint.display, "images List", self.timeout)
            ) from None
        return {str(i.name): stored_image(i) for i in r.images}

    def set_labels(
        self,
        name: str,
        labels: Mapping[str, str],
        *,
        check: Callable[[StoredImage], str] | None = None,
    ) -> str:
        """Set each label of `labels` (key → value; a value "" removes the label) on the image
        record `name`, nothing else: the record as containerd holds it now, sent back whole
        with one Update and the field mask `labels.<key>` per key (containerd drops a label
        whose value is empty). The whole record, target included, because containerd 2.x's
        Update dereferences the target before it looks at the mask: an image without one
        crashes the daemon.

        `check` is asked about the record as read right before the Update: a non-empty
        answer (why the record is not the one to change any more) leaves it alone. containerd
        has no conditional update, so the record could still change between that read and
        the Update: two calls back to back, the narrowest window its API allows.

        Returns why nothing was written: "" when the labels were set, `GONE` when containerd
        has no record `name` (gone since it was read), else `check`'s answer. Raises
        `RuntimeUnavailable` when a call fails otherwise."""
        pb: Any = images_pb2
        image = self._get(name)
        if image is None:
            return GONE
        if check is not None:
            why = check(stored_image(image))
            if why:
                return why
        for key, value in labels.items():
            if value:
                image.labels[key] = value
            elif key in image.labels:
                del image.labels[key]
        mask = FieldMask(paths=[f"labels.{key}" for key in labels])
        try:
            self._images.Update(
                pb.UpdateImageRequest(image=image, update_mask=mask),
                timeout=self.timeout, metadata=self._metadata,
            )  # fmt: skip
        except grpc.RpcError as err:
            code = err.code() if hasattr(err, "code") else None
            if code == grpc.StatusCode.NOT_FOUND:
                return GONE
            what = f"images Update {name}"
            raise RuntimeUnavailable(
                describe_rpc_error(err, self.endpoint.display, what, self.timeout)
            ) from None
        return ""
