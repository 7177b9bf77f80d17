"""An in-memory CRI runtime with `CriClient`'s interface, and ways to run the command line
against it in-process.

`MemoryCri` lists, answers status and removes containers and sandboxes from dicts and
records every removal, so a test can say exactly what kubegc removed. `use_runtime(cri)`
makes the commands' edges (`commands.edges`) hand it out; `run_cli(argv)` runs `kubegc`
in-process and returns (exit code, stdout, stderr), failing the test on anything but
`SystemExit`.
"""

from __future__ import annotations

import contextlib
import io
import threading
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any
from unittest import mock

from kubegc_cli.commands.edges import using
from kubegc_cli.core.errors import RuntimeUnavailable
from kubegc_cli.core.model import (
    Container,
    FilesystemUsage,
    Image,
    RuntimeInfo,
    Sandbox,
    SandboxState,
)


class Status:
    """What `CriClient.container_status` returns, for an in-memory container."""

    def __init__(self, c: Container) -> None:
        self.id, self.state, self.created_at = c.id, c.state, c.created_at
        self.finished_at, self.exit_code, self.log_path = c.finished_at, c.exit_code, ""
        self.labels = dict(c.labels)


@dataclass
class MemoryCri:
    """An in-memory CRI runtime with `CriClient`'s interface: lists, statuses, removals."""

    containers: dict[str, Container]
    sandboxes: dict[str, Sandbox]
    removed: list[str] = field(default_factory=list)
    images: dict[str, Image] = field(default_factory=dict)
    layers: dict[str, int] = field(default_factory=dict)  # container ID -> writable layer bytes
    lock: threading.Lock = field(default_factory=threading.Lock)
    endpoint: Any = field(default_factory=lambda: mock.Mock(display="unix:///memory.sock"))
    cgroup_driver: str | None = None  # what RuntimeConfig answers (None: Unimplemented)

    def check(self) -> RuntimeInfo:
        return RuntimeInfo("memory", "1", "v1")

    def runtime_config(self) -> str | None:
        return self.cgroup_driver

    def close(self) -> None:
        pass

    def list_containers(
        self,
        sandbox_id: str = "",
        labels: Mapping[str, str] | None = None,
        *,
        annotations: bool = True,  # the real client's option; these containers keep theirs
    ) -> list[Container]:
        # New objects on each call, as the real client's: observe_node fills in dead
        # containers' log fields in place.
        with self.lock:
            return [
                replace(c)
                for c in self.containers.values()
                if (not sandbox_id or c.pod_sandbox_id == sandbox_id)
                and all(c.labels.get(k) == v for k, v in (labels or {}).items())
            ]

    def list_sandboxes(self, labels: Mapping[str, str] | None = None) -> list[Sandbox]:
        with self.lock:
            return [
                sb
                for sb in self.sandboxes.values()
                if all(sb.labels.get(k) == v for k, v in (labels or {}).items())
            ]

    def writable_layers(self) -> dict[str, tuple[int | None, int | None]]:
        """`ListContainerStats`: every container, with the writable layer bytes `layers` gives
        it (None when it gives none; inodes unknown)."""
        with self.lock:
            return {cid: (self.layers.get(cid), None) for cid in self.containers}

    def list_containers_sized(self) -> tuple[list[Container], int]:
        """The containers, and 0 for the reply's size (residue's list-size check)."""
        return self.list_containers(), 0

    def list_sandboxes_sized(self) -> tuple[list[Sandbox], int]:
        return self.list_sandboxes(), 0

    def sandbox_netns(self, ids: Iterable[str]) -> Iterator[tuple[str, str | None]]:
        """No sandbox has a network namespace of its own here."""
        for sid in ids:
            yield sid, ""

    def container_status(self, cid: str) -> Status | None:
        with self.lock:
            c = self.containers.get(cid)
        return Status(c) if c else None

    def container_statuses(self, ids: Iterable[str]) -> Iterable[tuple[str, Status | None]]:
        return [(i, self.container_status(i)) for i in ids]

    def stop_container(self, cid: str, grace: int) -> bool:
        with self.lock:
            return cid in self.containers

    def remove_container(self, cid: str) -> bool:
        with self.lock:
            self.removed.append(cid)
            return self.containers.pop(cid, None) is not None

    def pod_sandbox_status(self, sid: str) -> tuple[SandboxState, int] | None:
        with self.lock:
            s = self.sandboxes.get(sid)
        return (s.state, s.created_at) if s else None

    def stop_pod_sandbox(self, sid: str) -> bool:
        with self.lock:
            return sid in self.sandboxes

    def remove_pod_sandbox(self, sid: str) -> bool:
        with self.lock:
            self.removed.append(sid)
            return self.sandboxes.pop(sid, None) is not None

    def status_info(self) -> dict[str, str]:
        return {}  # (no sandbox image named)

    def list_images(self) -> list[Image]:
        with self.lock:
            return list(self.images.values())

    def image_fs_info(self) -> tuple[list[FilesystemUsage], list[FilesystemUsage]]:
        """One image filesystem at "/" (under the caller's host root: a real directory)."""
        return [FilesystemUsage("/", None, None)], []

    def image_exists(self, image_id: str) -> bool:
        with self.lock:
            return image_id in self.images

    def remove_image(self, image_id: str) -> bool:
        with self.lock:
            self.removed.append(image_id)
            return self.images.pop(image_id, None) is not None


def use_runtime(cri: Any) -> contextlib.AbstractContextManager[Any]:
    """Within the block, every command talks to `cri` instead of a socket (`None`: the
    runtime is unreachable, exit 3): the commands' edges (`commands.edges.using`) name it."""

    def open_client(*_: Any) -> Any:
        if cri is None:
            raise RuntimeUnavailable("no CRI runtime (test)", "UNAVAILABLE")
        return cri

    return using(cri=open_client)


#: Warnings Python does not print by default outside `__main__`.
_HIDDEN = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Run `kubegc argv` in this process: (exit code, stdout, stderr). Python warnings that
    a real run would print on stderr are written to the returned stderr as well."""
    from kubegc_cli.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with (
        warnings.catch_warnings(record=True) as caught,
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        warnings.simplefilter("default")
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code
    for w in caught:
        if not issubclass(w.category, _HIDDEN):
            err.write(warnings.formatwarning(w.message, w.category, w.filename, w.lineno))
    return int(code or 0), out.getvalue(), err.getvalue()


@contextlib.contextmanager
def no_runtime() -> Iterator[None]:
    """Every command finds the runtime unreachable (exit 3), without touching a socket."""
    with use_runtime(None):
        yield
