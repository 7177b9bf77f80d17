"""One observation of the CRI runtime, shared by every read of a cycle: `ObservedCri`.

Several commands read the runtime in one `kubegc agent` cycle (`df`, `residue scan`, the gc
dry runs, `evict check`'s image filesystem). Through an `ObservedCri` each kind of read
reaches the runtime once: the first `ListContainers`, `ListPodSandbox`, `ListImages`,
`ImageFsInfo`, `Status`, `ListContainerStats` and `Version` answers are kept and handed to
every later caller (new objects each time, as the real client's, since `observe_node` fills
in dead containers' log fields in place); a filtered list (`sandbox_id`, `labels`) is
answered from the full one; `ContainerStatus` and verbose `PodSandboxStatus` are asked once
per ID. Every change is refused (`RemovalRefused`): a plan made from an observation is never
carried out through it. The first call the runtime fails (`RuntimeUnavailable`) is the
answer to every later call of the cycle too, so an unreachable runtime costs one timeout per
cycle, not one per command.

Not thread-safe for concurrent first reads of the same kind; the commands of a cycle run one
after the other.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.model import Container, FilesystemUsage, Image, RuntimeInfo, Sandbox

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient

T = TypeVar("T")


class RemovalRefused(RuntimeError):
    """A change (stop, remove) asked of an `ObservedCri`: it only serves an observation."""


class ObservedCri:
    """A read-only CRI client over one observation of `client` (a `CriClient`, or anything
    with its read methods): each read reaches `client` at most once (see the module doc);
    `calls` counts the calls that did, by CRI method name. `close()` does not close `client`:
    whoever opened it closes it once the cycle is over."""

    def __init__(self, client: CriClient | Any) -> None:
        self._client = client
        self.endpoint = client.endpoint
        self.timeout = getattr(client, "timeout", 10.0)
        self.calls: dict[str, int] = {}
        self._kept: dict[str, Any] = {}
        self._statuses: dict[str, Any] = {}
        self._netns: dict[str, str | None] = {}
        self._failed: RuntimeUnavailable | None = None

    def _once(self, method: str, read: Callable[[], T]) -> T:
        """The kept answer of `method`, else `read()`'s, kept; a failure is kept as well."""
        if method in self._kept:
            return self._kept[method]  # type: ignore[no-any-return]
        value = self._ask(method, read)
        self._kept[method] = value
        return value

    def _ask(self, method: str, read: Callable[[], T]) -> T:
        if self._failed is not None:
            raise self._failed
        self.calls[method] = self.calls.get(method, 0) + 1
        try:
            return read()
        except RuntimeUnavailable as exc:
            self._failed = exc
            raise

    def close(self) -> None:
        """Nothing: the observed client stays open for its owner."""

    # ---- runtime ----

    def version(self) -> RuntimeInfo:
        info: RuntimeInfo = self._once("Version", self._client.check)
        return info

    def check(self) -> RuntimeInfo:
        """`Version`, checked to be CRI v1 (`CriClient.check`), once."""
        return self.version()

    def status_info(self) -> dict[str, str]:
        return dict(self._once("Status", self._client.status_info))

    def _containers(self) -> tuple[list[Container], int]:
        sized = getattr(self._client, "list_containers_sized", None)
        if sized is not None:
            return self._once("ListContainers", sized)  # type: ignore[no-any-return]
        return self._once("ListContainers", lambda: (self._client.list_containers(), 0))

    def _sandboxes(self) -> tuple[list[Sandbox], int]:
        sized = getattr(self._client, "list_sandboxes_sized", None)
        if sized is not None:
            return self._once("ListPodSandbox", sized)  # type: ignore[no-any-return]
        return self._once("ListPodSandbox", lambda: (self._client.list_sandboxes(), 0))

    def list_containers(
        self,
        sandbox_id: str = "",
        labels: Mapping[str, str] | None = None,
        *,
        annotations: bool = True,
    ) -> list[Container]:
        """`ListContainers` from the observation (annotations always kept), filtered here as
        the runtime filters: by sandbox, and by every label given."""
        return [
            replace(c)
            for c in self._containers()[0]
            if (not sandbox_id or c.pod_sandbox_id == sandbox_id)
            and all(c.labels.get(k) == v for k, v in (labels or {}).items())
        ]

    def list_containers_sized(self) -> tuple[list[Container], int]:
        listed, size = self._containers()
        return [replace(c) for c in listed], size

    def list_sandboxes(self, labels: Mapping[str, str] | None = None) -> list[Sandbox]:
        return self.list_sandboxes_sized(labels)[0]

    def list_sandboxes_sized(
        self, labels: Mapping[str, str] | None = None
    ) -> tuple[list[Sandbox], int]:
        listed, size = self._sandboxes()
        wanted = [
            replace(sb)
            for sb in listed
            if all(sb.labels.get(k) == v for k, v in (labels or {}).items())
        ]
        return wanted, size

    def writable_layers(self) -> dict[str, tuple[int | None, int | None]]:
        return dict(self._once("ListContainerStats", self._client.writable_layers))

    def container_status(self, container_id: str) -> Any:
        return dict(self.container_statuses([container_id]))[container_id]

    def container_statuses(
        self, ids: Iterable[str], *, window: int = 64
    ) -> Iterator[tuple[str, Any]]:
        """`ContainerStatus` of each ID, asked of the runtime once per ID (the new ones in one
        batch); None for a container gone."""
        wanted = list(ids)
        new = [i for i in dict.fromkeys(wanted) if i not in self._statuses]
        if new:
            self._statuses.update(
                self._ask("ContainerStatus", lambda: dict(self._client.container_statuses(new)))
            )
        return iter([(i, self._statuses.get(i)) for i in wanted])

    def pod_sandbox_status(self, sandbox_id: str) -> Any:
        """(state, created_at) of a sandbox of the observation, None when it was not listed."""
        sb = next((s for s in self._sandboxes()[0] if s.id == sandbox_id), None)
        return None if sb is None else (sb.state, sb.created_at)

    def sandbox_netns(
        self, ids: Iterable[str], *, window: int = 64
    ) -> Iterator[tuple[str, str | None]]:
        """The network namespace of each sandbox (`CriClient.sandbox_netns`), asked once per ID."""
        wanted = list(ids)
        new = [i for i in dict.fromkeys(wanted) if i not in self._netns]
        if new:
            self._netns.update(
                self._ask("PodSandboxStatus", lambda: dict(self._client.sandbox_netns(new)))
            )
        return iter([(i, self._netns.get(i, "")) for i in wanted])

    # ---- images ----

    def list_images(self) -> list[Image]:
        return list(self._once("ListImages", self._client.list_images))

    def image_exists(self, image_id: str) -> bool:
        return any(i.id == image_id for i in self.list_images())

    def image_fs_info(self) -> tuple[list[FilesystemUsage], list[FilesystemUsage]]:
        images, containers = self._once("ImageFsInfo", self._client.image_fs_info)
        return list(images), list(containers)

    # ---- changes: refused ----

    def _refuse(self, what: str, object_id: str) -> bool:
        raise RemovalRefused(
            f"{what} {object_id}: refused, this client only serves an observation of "
            f"{self.endpoint.display}"
        )

    def stop_container(self, container_id: str, grace_seconds: int) -> bool:
        return self._refuse("StopContainer", container_id)

    def remove_container(self, container_id: str) -> bool:
        return self._refuse("RemoveContainer", container_id)

    def stop_pod_sandbox(self, sandbox_id: str) -> bool:
        return self._refuse("StopPodSandbox", sandbox_id)

    def remove_pod_sandbox(self, sandbox_id: str) -> bool:
        return self._refuse("RemovePodSandbox", sandbox_id)

    def remove_image(self, image_id: str) -> bool:
        return self._refuse("RemoveImage", image_id)
