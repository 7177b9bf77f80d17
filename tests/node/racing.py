"""A real CRI client with a race forced at one chosen moment, for the re-check tests.

The node's state is real (containerd through CRI); only the timing is forced: `Racing` runs
`race` — which changes the real containerd, e.g. creates a container or gives a pod a READY
sandbox — once, right before the first call of `method` (the executor's first re-check),
so the change lands after the plan was made and while the removals run.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubegc_cli.node.cri.client import CriClient
from kubegc_cli.node.cri.endpoint import Endpoint
from tests.node.localnode import LocalNode
from tests.unit.memorycri import run_cli, use_runtime


class Racing:
    """`CriClient` for `node`, except that `race()` runs once right before the `nth` call of
    `method` (the first by default). `fired` says whether it ran."""

    def __init__(
        self, node: LocalNode, method: str, race: Callable[[], None], nth: int = 1
    ) -> None:
        self._client = CriClient(Endpoint(str(node.socket), "test"))
        self._method, self._race, self._nth = method, race, nth
        self._lock = threading.Lock()
        self._calls = 0
        self.fired = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name != self._method:
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self._calls += 1
                if self._calls == self._nth:
                    self.fired = True
                    self._race()
            return attr(*args, **kwargs)

        return call


@contextmanager
def racing(
    node: LocalNode, method: str, race: Callable[[], None], nth: int = 1
) -> Iterator[Racing]:
    """Within the block, kubegc run in-process (`kubegc_in_process`) talks to `node` through
    a `Racing` client."""
    client = Racing(node, method, race, nth)
    with use_runtime(client):
        yield client


def kubegc_in_process(node: LocalNode, tmp_path: Path, *args: str) -> tuple[int, str, str]:
    """`kubegc` run in this process against `node` (through the client `racing` installs, if
    within one): (exit code, stdout, stderr)."""
    return run_cli(
        ["-r", node.endpoint, "--kubelet-config", str(node.kubelet_config),
         "--state-dir", str(tmp_path / "state"), *args]
    )  # fmt: skip
