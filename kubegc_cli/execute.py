"""Act: carry out a plan's actions, re-checking each object right before touching it.

State may change between plan and act (a container restarts, someone else removes it), so
the executor asks the runtime again for each container and skips it, with the reason, if it
is gone, now running, or no longer the container that was planned. Calls run with bounded
concurrency; one failure never stops the run.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kubegc_cli.errors import RuntimeUnavailable
from kubegc_cli.host.logs import LogRemovalError, LogRoots, remove_container_logs
from kubegc_cli.host.mounts import MountTable
from kubegc_cli.model import ContainerState
from kubegc_cli.plan import INTERRUPTED, ContainerAction, Result

if TYPE_CHECKING:
    from kubegc_cli.cri.client import CriClient


class Interrupted(Exception):
    """The run was interrupted (Ctrl-C); actions not attempted are marked `skipped`."""


# The kubelet kills an UNKNOWN container with its minimum grace period (2 s).
UNKNOWN_STOP_GRACE_SECONDS = 2


@dataclass
class ContainerRemover:
    """Removes containers the way the kubelet's container GC does.

    For each action: re-read `ContainerStatus`; stop it first if it is UNKNOWN (failure → the
    action fails, as the kubelet skips it); remove its log files and legacy symlink (failure →
    the action fails and the container stays); then `RemoveContainer`.
    """

    client: CriClient
    log_roots: LogRoots
    mounts: MountTable
    concurrency: int = 4

    def run(self, actions: list[ContainerAction]) -> None:
        """Carry out `actions` in place: each ends `removed`, `skipped` or `failed`.

        On Ctrl-C, calls in flight finish, nothing new starts, every action not attempted is
        marked `skipped` ("interrupted"), and `Interrupted` is raised.
        """
        if not actions:
            return
        pool = ThreadPoolExecutor(max_workers=max(1, self.concurrency))
        futures = [pool.submit(self._one, a) for a in actions]
        try:
            for f in futures:
                f.result()
        except KeyboardInterrupt:
            pool.shutdown(wait=True, cancel_futures=True)
            for a in actions:
                if a.result is Result.PLANNED:
                    a.result, a.error = Result.SKIPPED, INTERRUPTED
            raise Interrupted from None
        finally:
            pool.shutdown(wait=True)

    def _one(self, a: ContainerAction) -> None:
        try:
            self._act(a)
        except RuntimeUnavailable as exc:
            a.result, a.error = Result.FAILED, str(exc)
        except Exception as exc:  # one failure never stops the run
            a.result, a.error = Result.FAILED, f"{type(exc).__name__}: {exc}"

    def _act(self, a: ContainerAction) -> None:
        planned = a.container
        status = self.client.container_status(planned.id)
        if status is None:
            a.result, a.error = Result.SKIPPED, "gone before removal"
            return
        if status.state is ContainerState.RUNNING:
            a.result, a.error = Result.SKIPPED, "running now; no longer garbage"
            return
        if status.created_at != planned.created_at:
            a.result, a.error = Result.SKIPPED, "changed since the plan (creation time differs)"
            return
        if status.state is ContainerState.UNKNOWN:
            try:
                self.client.stop_container(planned.id, UNKNOWN_STOP_GRACE_SECONDS)
            except RuntimeUnavailable as exc:
                a.result, a.error = Result.FAILED, f"stop of UNKNOWN container failed: {exc}"
                return
        try:
            freed, note = remove_container_logs(
                self.log_roots, planned, status.log_path, self.mounts
            )
        except LogRemovalError as exc:
            a.result, a.error = Result.FAILED, f"{exc}; container left in place"
            return
        self.client.remove_container(planned.id)
        a.result, a.bytes_freed, a.log_note = Result.REMOVED, freed, note
