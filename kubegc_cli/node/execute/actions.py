"""Act: carry out a plan's actions, re-checking each object right before touching it.

State may change between plan and act (a container restarts, someone else removes it), so
the executor asks the runtime again for each container and skips it, with the reason, if it
is gone, now running, or no longer the container that was planned. Calls run with bounded
concurrency; one failure never stops the run — but a runtime that stops answering does: after
`max(3, concurrency)` calls in a row found it unreachable, nothing new is started and the rest
is marked skipped, so a hung runtime costs seconds, not hours.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from kubegc_cli.core import stop
from kubegc_cli.core.errors import UNANSWERED_CODES, RuntimeUnavailable
from kubegc_cli.core.model import (
    LABEL_POD_UID,
    Container,
    ContainerState,
    SandboxState,
    image_refs_in_use,
)
from kubegc_cli.core.plan import (
    GONE,
    INTERRUPTED,
    MAY_START,
    POD_ALIVE,
    POD_RULES,
    A,
    ContainerAction,
    ImageAction,
    LogAction,
    Result,
    SandboxAction,
    skip_planned,
)
from kubegc_cli.core.stop import STOP_SIGNALS, ending, name_of
from kubegc_cli.node.host.logs import LogRemovalError, LogRoots, host_path_of, remove_container_logs
from kubegc_cli.node.host.mounts import MountTable
from kubegc_cli.node.host.podlogs import LogDirChanged, remove_dangling_link, remove_pod_log_dir

if TYPE_CHECKING:
    from kubegc_cli.node.cri.client import CriClient


@contextlib.contextmanager
def _stop_signals_held() -> Iterator[None]:
    """Within, a SIGINT or SIGTERM is only noted; on leaving, the first one noted is handed to
    the handler that was in place (which raises `KeyboardInterrupt` for the run to handle).
    Only in the main thread (where Python runs signal handlers), and not for an ignored
    signal; a second signal while one is held goes to the held handler at once (a second
    stop exits at once)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    before: dict[int, Any] = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def note(signum: int, frame: object) -> None:
        if held:
            _hand_over(before[signum], signum)
        held.append(signum)

    for sig, handler in before.items():
        if handler is not signal.SIG_IGN:
            signal.signal(sig, note)
    try:
        yield
    finally:
        for sig, handler in before.items():
            if handler is not signal.SIG_IGN:
                signal.signal(sig, handler)
    if held:
        _hand_over(before[held[0]], held[0])


def _hand_over(handler: object, signum: int) -> None:
    """Deliver `signum` as `handler` (a Python handler, or the default action) would."""
    if callable(handler):
        handler(signum, None)
    elif handler == signal.SIG_DFL:
        os.kill(os.getpid(), signum)


LAST_WORDS_SECONDS = 1.0
"""How long a second stop signal waits for the audit rows of what was done to be written."""

# What an action whose call was in flight when a second stop signal ended kubegc says.
EXITED_IN_FLIGHT = "kubegc exited at a second stop signal with the call in flight; outcome unknown"


def _exit_now(
    signum: int, frame: object, *, marks: Callable[[], None], last_words: Callable[[], None] | None
) -> None:
    """A second stop signal while removals in flight finish: leave at once (130 or 143).

    `marks` gives the actions their results as they stand (`Executor._mark_at_exit`); then
    `last_words` (the run's audit rows) gets at most `LAST_WORDS_SECONDS`, so that what was
    removed is recorded. The calls still in flight may or may not complete; no report."""
    name = name_of(signum)
    written = False
    if last_words is not None:
        marks()
        done = threading.Event()

        def write() -> None:
            with contextlib.suppress(Exception):
                last_words()
                done.set()

        threading.Thread(target=write, daemon=True).start()
        written = done.wait(LAST_WORDS_SECONDS)
    audit = "audit rows written (kubegc history)" if written else "no audit rows"
    os.write(
        2,
        f"kubegc: error: {name} again: exiting without waiting for the calls in flight "
        f"(their outcome is unknown; no report, {audit})\n".encode(),
    )
    os._exit(ending(name)[1])


class Interrupted(Exception):
    """The run was interrupted (Ctrl-C, SIGTERM); actions not attempted are marked `skipped`.

    `signal_name` says which ("SIGINT" or "SIGTERM").
    """

    def __init__(self, signal_name: str = "SIGINT") -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


# The kubelet kills an UNKNOWN container with its minimum grace period (2 s).
UNKNOWN_STOP_GRACE_SECONDS = 2


# What an action not attempted because the runtime stopped answering says.
HALTED = "not attempted: the runtime stopped answering"
# What an action not begun because the run was abandoned (`Executor.abandon`) says, then why.
NOT_ATTEMPTED = "not attempted: "
# What a removal the runtime did not answer says (it may have happened all the same).
OUTCOME_UNKNOWN = "outcome unknown"


def _maybe_done(exc: RuntimeUnavailable, what: str) -> RuntimeUnavailable:
    """`exc`, from a call that changes the runtime (`RemoveContainer`, `StopPodSandbox`...),
    saying the outcome is unknown when the call may have been carried out unanswered: its
    deadline passed, or the connection went (`UNAVAILABLE`: the runtime may have died after
    doing it). `what` ends "the runtime may still ..."."""
    if exc.code not in UNANSWERED_CODES:
        return exc
    return RuntimeUnavailable(
        f"{exc}; {OUTCOME_UNKNOWN} (the runtime may still {what})", code=exc.code
    )


@dataclass
class Executor(ABC, Generic[A]):
    """Runs one kind of action with bounded concurrency; subclasses say how to act on one.

    Each `_act` re-checks its object and sets the action's result; a `RuntimeUnavailable`
    it raises marks the action failed (and counts toward halting the run). `on_done`, when
    set, hears of each action once it has its result (a progress bar).
    """

    client: CriClient
    concurrency: int = 4
    on_done: Callable[[A], None] | None = field(default=None, kw_only=True)
    #: Hears of each action right before its re-check and removal start (from a worker
    #: thread): the audit log's in-flight row.
    on_start: Callable[[A], None] | None = field(default=None, kw_only=True)
    last_words: Callable[[], None] | None = field(default=None, kw_only=True)
    #: Why no further action may start ("" to go on), asked before each: once it names a
    #: reason, the actions not begun are `skipped` ("not attempted: <reason>") and the calls
    #: in flight finish, as for a stop signal.
    abandon: Callable[[], str] | None = field(default=None, kw_only=True)
    _halt: threading.Event = field(default_factory=threading.Event, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _unreachable_in_a_row: int = field(default=0, init=False)
    _attempted: int = field(default=0, init=False)
    _unanswered: int = field(default=0, init=False)
    _unanswered_error: str = field(default="", init=False)
    _abandoned: str = field(default="", init=False)
    _in_flight: dict[int, A] = field(default_factory=dict, init=False)
    _pods: PodLiveness | None = field(default=None, init=False, repr=False)

    @property
    def pods(self) -> PodLiveness:
        """Whether a pod is alive now, for this executor's removals (one baseline for all)."""
        with self._lock:
            if self._pods is None:
                self._pods = PodLiveness(self.client)
            return self._pods

    def run(self, actions: list[A]) -> None:
        """Carry out `actions` in place: each ends `removed`, `skipped` or `failed`.

        On Ctrl-C, calls in flight finish, nothing new starts (from the moment the signal's
        handler has run, `core.stop.received`), every action not attempted is
        marked `skipped` ("interrupted"), and `Interrupted` is raised. A second Ctrl-C (or
        SIGTERM) meanwhile exits at once: the actions in flight are `failed` ("outcome
        unknown"), then `last_words`, when set, marks the others `skipped` and writes the
        run's audit rows.
        """
        if not actions:
            return
        pool = ThreadPoolExecutor(max_workers=max(1, self.concurrency))
        futures: list[Future[None]] = []
        try:
            # a stop signal while queueing is held until the queue is full, then raised here:
            # raised inside `submit`, it could leave the pool's own locks held (a hang)
            with _stop_signals_held():
                futures.extend(pool.submit(self._one, a) for a in actions)
            for f in futures:
                f.result()
        except KeyboardInterrupt as exc:
            # While the calls in flight finish, a second Ctrl-C (or SIGTERM) exits at once.
            leave = partial(_exit_now, marks=self._mark_at_exit, last_words=self.last_words)
            previous = {sig: signal.signal(sig, leave) for sig in STOP_SIGNALS}
            try:
                pool.shutdown(wait=True, cancel_futures=True)
            finally:
                for sig, handler in previous.items():
                    signal.signal(sig, handler)
            skip_planned(actions, INTERRUPTED)
            raise Interrupted(getattr(exc, "signal_name", "SIGINT")) from None
        finally:
            pool.shutdown(wait=True)

    def _mark_at_exit(self) -> None:
        """When kubegc exits at a second stop signal: an action whose call is in flight is
        `failed` (outcome unknown); `last_words` marks the ones not attempted."""
        with self._lock:
            in_flight = list(self._in_flight.values())
        for a in in_flight:
            if a.result is Result.PLANNED:
                a.result, a.error = Result.FAILED, EXITED_IN_FLIGHT

    def _abandon_why(self) -> str:
        """Why no further action may start ("" to go on): the first reason `abandon` gave,
        kept (a failing `abandon` is a reason too)."""
        if self.abandon is None:
            return ""
        with self._lock:
            if self._abandoned:
                return self._abandoned
        try:
            why = self.abandon()
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
        if why:
            with self._lock:
                self._abandoned = self._abandoned or why
                return self._abandoned
        return ""

    def _may_change(self, a: A) -> bool:
        """Asked again right before an action's first change, after its re-checks (which
        may take several runtime calls): False, and `a` skipped as not attempted, once the
        run is abandoned meanwhile."""
        why = self._abandon_why()
        if why:
            a.result, a.error = Result.SKIPPED, f"{NOT_ATTEMPTED}{why}"
            return False
        return True

    @property
    def abandoned(self) -> str:
        """The reason this executor stopped starting actions ("" when it did not)."""
        with self._lock:
            return self._abandoned

    @property
    def halted(self) -> bool:
        """True once the runtime stopped answering and the rest of the run was given up."""
        return self._halt.is_set()

    @property
    def runtime_gone(self) -> str:
        """Why this executor takes the runtime to have stopped answering ("" when it does
        not): the run was halted (`halted`), or every action it attempted failed unanswered
        (with fewer actions than the halting count, or as many calls in flight, all of them
        can fail before the run is halted). The message is the last unanswered call's."""
        with self._lock:
            gone = self._halt.is_set() or (0 < self._attempted == self._unanswered)
            return (self._unanswered_error or "the runtime stopped answering") if gone else ""

    def _one(self, a: A) -> None:
        try:
            self._one_action(a)
        finally:
            with self._lock:
                self._in_flight.pop(id(a), None)
            if self.on_done is not None:
                self.on_done(a)  # progress: called once per action, from a worker thread

    def _one_action(self, a: A) -> None:
        if self._halt.is_set():
            a.result, a.error = Result.SKIPPED, HALTED
            return
        if stop.received is not None:
            # the stop signal's handler has run (`core.stop.first_stop`): no removal starts
            # after it, even before its exception reaches `run` to cancel the queue
            a.result, a.error = Result.SKIPPED, INTERRUPTED
            return
        why = self._abandon_why()
        if why:
            a.result, a.error = Result.SKIPPED, f"{NOT_ATTEMPTED}{why}"
            return
        with self._lock:
            self._attempted += 1
            self._in_flight[id(a)] = a
        if self.on_start is not None:
            self.on_start(a)
        try:
            self._act(a)
        except RuntimeUnavailable as exc:
            a.result, a.error = Result.FAILED, str(exc)
            if exc.unreachable:
                with self._lock:
                    self._unanswered += 1
                    self._unanswered_error = str(exc)
            self._count(unreachable=exc.unreachable)
            return
        except Exception as exc:  # one failure never stops the run
            a.result, a.error = Result.FAILED, f"{type(exc).__name__}: {exc}"
        self._count(unreachable=False)

    def _count(self, *, unreachable: bool) -> None:
        with self._lock:
            self._unreachable_in_a_row = self._unreachable_in_a_row + 1 if unreachable else 0
            if self._unreachable_in_a_row >= max(3, self.concurrency):
                self._halt.set()

    @abstractmethod
    def _act(self, a: A) -> None:
        """Re-check `a`'s object and act on it, setting `a.result` (and error, bytes)."""


@dataclass
class ContainerRemover(Executor[ContainerAction]):
    """Removes containers as the kubelet's container GC does, with kubegc's re-checks.

    For each action: re-read `ContainerStatus` (gone → skipped; RUNNING or re-created →
    skipped); a CREATED one whose sandbox is READY (`PodSandboxStatus`) → skipped: the
    kubelet may be about to start it, and CRI's `RemoveContainer` removes a running container
    by force. Only a CREATED container in a READY sandbox can start (the kubelet never starts
    an exited one again, the runtime starts none in a sandbox that is not READY), so what
    passes the re-check cannot be running when it is removed. A removal planned for a deleted
    or terminated pod (`POD_RULES`) then re-checks the pod: a READY sandbox or a RUNNING
    container of its UID → skipped, `POD_ALIVE` (`pod_refusal`).

    Only then is anything changed: stop it first if it is UNKNOWN (failure → failed, as the
    kubelet skips it); remove its log files and legacy symlink; `RemoveContainer`. The log goes
    before the container, as the kubelet's `removeContainer` does: a crash, or a
    `RemoveContainer` that fails, between the two leaves a container that a later run plans
    again, never a log that nothing plans again. A log that cannot be removed (an error, not a
    log kubegc leaves on purpose) leaves the container too: failed, as the kubelet. A log left
    on purpose (not where the kubelet puts it, a mount) is reported in `log_note`.
    """

    log_roots: LogRoots | None = None
    mounts: MountTable | None = None

    def _act(self, a: ContainerAction) -> None:
        planned = a.container
        status = self.client.container_status(planned.id)
        if status is None:
            a.result, a.error = Result.SKIPPED, GONE
            return
        if status.state is ContainerState.RUNNING:
            a.result, a.error = Result.SKIPPED, "running now; no longer garbage"
            return
        if status.created_at != planned.created_at:
            a.result, a.error = Result.SKIPPED, "changed since the plan (creation time differs)"
            return
        if status.state is ContainerState.CREATED:
            sandbox = self.client.pod_sandbox_status(planned.pod_sandbox_id)
            if sandbox is not None and sandbox[0] is SandboxState.READY:
                a.result, a.error = Result.SKIPPED, MAY_START
                return
        if why := pod_refusal(self.pods, a.rule, planned.pod_uid):
            a.result, a.error = Result.SKIPPED, why
            return
        if not self._may_change(a):
            return
        if status.state is ContainerState.UNKNOWN:
            try:
                if not self.client.stop_container(planned.id, UNKNOWN_STOP_GRACE_SECONDS):
                    a.result, a.error = Result.SKIPPED, GONE
                    return
            except RuntimeUnavailable as exc:
                if exc.unreachable:
                    raise _maybe_done(exc, "stop it") from None
                a.result, a.error = Result.FAILED, f"stop of UNKNOWN container failed: {exc}"
                return
        assert self.log_roots is not None and self.mounts is not None
        try:
            a.bytes_freed, a.log_note = remove_container_logs(
                self.log_roots, planned, status.log_path, self.mounts
            )
        except LogRemovalError as exc:
            a.result, a.error = Result.FAILED, f"{LOG_NOT_REMOVED}: {exc}"
            return
        try:
            existed = self.client.remove_container(planned.id)
        except RuntimeUnavailable as exc:
            if "removing state" in str(exc):
                a.result, a.error = Result.SKIPPED, "already being removed by someone else"
                return
            raise _maybe_done(exc, "remove it") from None
        if not existed:
            a.result, a.error = Result.SKIPPED, GONE
            return
        a.result = Result.REMOVED
        a.bytes_freed += a.layer_bytes or 0  # the runtime removed its writable layer with it


# What a container whose log could not be removed says (the kubelet leaves it too).
LOG_NOT_REMOVED = "its log could not be removed, so the container is left (a later run tries again)"


def pod_refusal(pods: PodLiveness, rule: str, uid: str) -> str:
    """Why a removal selected by `rule` for the pod `uid` may not happen now ("" when it may):
    for a deleted or terminated pod's (`POD_RULES`), a pod alive on the node right now
    (`pods.alive`) is `POD_ALIVE`, and a pod without a UID cannot be re-checked. Other rules:
    "". Raises `RuntimeUnavailable` when the runtime cannot be asked.

    Source of the rule: the kubelet keeps a pod's containers, sandboxes and logs until it has
    terminated the pod (`podStateProvider.ShouldPodContentBeRemoved`); a pod that has a READY
    sandbox or a RUNNING container has not been terminated, whatever the pod source says."""
    if rule not in POD_RULES:
        return ""
    if not uid:
        return "no pod UID to re-check that the pod is gone; left"
    return POD_ALIVE if pods.alive(uid) else ""


class PodLiveness:
    """Whether a pod is alive now — a READY sandbox or a RUNNING container of its UID — asked
    right before each of many removals, for one filtered `ListPodSandbox` each.

    The first question takes a baseline: every sandbox (`ListPodSandbox`), then every container
    (`ListContainers`). After it, by CRI's state machine, a pod that had no READY sandbox and
    no RUNNING or UNKNOWN container then can only have a RUNNING container later in a sandbox
    that was not there then: CRI has no call that makes a NOTREADY sandbox READY again (the
    kubelet runs a new one), the runtime starts a container only in a READY sandbox, an EXITED
    container never runs again, and removing a sandbox removes its containers. So for such a
    pod, `alive(uid)` lists only its sandboxes (`io.kubernetes.pod.uid` label): alive when one
    is READY or new since the baseline. A pod alive at the baseline, or with a container there
    in a sandbox not its own (not as the kubelet makes them), is asked in full every time
    (`pod_alive_now`: its sandboxes, then its containers). Either way the answer is as of the
    moment of the question, never of the baseline.

    A pod's liveness is one fact for all its containers: questions about the same pod asked
    at the same moment (concurrent removals of one pod's containers) share one reading begun
    after each asked (`SharedReading`), so the answer is never older than a call of each
    question's own would be, and a batch of one pod's containers at `--concurrency N` costs
    about one list per N removals. Thread-safe.
    """

    def __init__(self, client: CriClient) -> None:
        self.client = client
        self._lock = threading.Lock()
        self._base: tuple[frozenset[str], dict[str, frozenset[str]]] | None = None
        self._readings: dict[str, SharedReading[bool]] = {}

    def _baseline(self) -> tuple[frozenset[str], dict[str, frozenset[str]]]:
        """(UIDs to ask in full, the sandbox IDs each other UID had, all NOTREADY)."""
        with self._lock:
            if self._base is None:
                sandboxes = self.client.list_sandboxes()  # first: see the class doc
                containers = self.client.list_containers(annotations=False)
                full: set[str] = set()
                known: dict[str, set[str]] = {}
                for sb in sandboxes:
                    known.setdefault(sb.uid, set()).add(sb.id)
                    if sb.state is SandboxState.READY:
                        full.add(sb.uid)
                for c in containers:
                    own = c.pod_sandbox_id in known.get(c.pod_uid, ())
                    if c.state in (ContainerState.RUNNING, ContainerState.UNKNOWN) or not own:
                        full.add(c.pod_uid)
                notready = {uid: frozenset(ids) for uid, ids in known.items() if uid not in full}
                self._base = (frozenset(full), notready)
            return self._base

    def alive(self, uid: str) -> bool:
        """Whether the pod `uid` has a READY sandbox or a RUNNING container now (see the class
        doc). Raises `RuntimeUnavailable`."""
        self._baseline()
        with self._lock:
            reading = self._readings.get(uid)
            if reading is None:
                reading = self._readings[uid] = SharedReading(partial(self._ask, uid))
        return reading.get()

    def _ask(self, uid: str) -> bool:
        """One reading of whether the pod `uid` is alive now, as `alive` describes."""
        full, notready = self._baseline()
        if uid in full:
            return pod_alive_now(self.client, uid)[0]
        then = notready.get(uid, frozenset())
        return any(
            sb.state is SandboxState.READY or sb.id not in then
            for sb in self.client.list_sandboxes({LABEL_POD_UID: uid})
        )


def pod_alive_now(client: CriClient, uid: str) -> tuple[bool, list[Container]]:
    """(alive, containers): whether the pod `uid` has a READY sandbox or a RUNNING container
    now, asked of the runtime at this moment (`ListPodSandbox`, then `ListContainers`, both
    filtered by the `io.kubernetes.pod.uid` label), and the containers the runtime has of it
    (empty when a READY sandbox already answered). Raises `RuntimeUnavailable`."""
    of_pod = {LABEL_POD_UID: uid}
    if any(sb.state is SandboxState.READY for sb in client.list_sandboxes(of_pod)):
        return True, []
    containers = client.list_containers(labels=of_pod)
    return any(c.state is ContainerState.RUNNING for c in containers), containers


@dataclass
class LogRemover(Executor[LogAction]):
    """Removes pod log directories and dangling legacy symlinks, re-checking each first.

    A pod log directory is skipped if the pod is alive now (a READY sandbox or a RUNNING
    container of its UID: `POD_ALIVE`), if the runtime has any container of it, or if it has
    become a mount point or holds one (or the mount table could not be read); a symlink is
    skipped if it no longer dangles (its target resolved under `host_root`). Both are removed
    relative to podLogsDir and the legacy link directory as pinned when the plan was made
    (`roots`).
    """

    mounts: MountTable | None = None
    host_root: Path = Path("/")
    roots: LogRoots | None = None

    def _act(self, a: LogAction) -> None:
        assert self.mounts is not None and self.roots is not None
        try:
            if a.kind == "pod-log-dir":
                alive, containers = pod_alive_now(self.client, a.pod_uid)
                if alive or containers:
                    why = POD_ALIVE if alive else "the runtime has containers of it now"
                    a.result, a.error = Result.SKIPPED, why
                    return
                if not self._may_change(a):
                    return
                done = remove_pod_log_dir(a.local_path, self.mounts, self.roots.pin)
                a.bytes_freed = done.bytes_freed
                if not done.complete:
                    shown = partial(host_path_of, self.host_root)
                    a.result, a.error = Result.FAILED, done.problem(shown)
                    return
            else:
                remove_dangling_link(a.local_path, self.host_root, self.roots.links_pin)
        except LogDirChanged as exc:
            a.result, a.error = Result.SKIPPED, str(exc)
            return
        except FileNotFoundError:
            a.result, a.error = Result.SKIPPED, GONE
            return
        except OSError as exc:
            a.result, a.error = Result.FAILED, f"cannot remove {a.path}: {exc.strerror or exc}"
            return
        a.result = Result.REMOVED


T = TypeVar("T")


class SharedReading(Generic[T]):
    """One reading of the runtime (`read`, e.g. a container list) shared by the removals that
    need it at the same moment, never older than the asking.

    `get()` returns the result of a `read` call that began after `get` was called: when a
    call is already in flight (begun before), the caller waits for it to end and then joins
    the next one, which every caller arriving meanwhile shares. So each removal acts on a
    reading at least as fresh as a call of its own would be (no wider window between check and
    removal), while `concurrency` removals waiting together cost one call. An exception from
    the call is raised to every caller that shared it. Thread-safe.
    """

    def __init__(self, read: Callable[[], T]) -> None:
        self._read = read
        self._cond = threading.Condition()
        self._begun = 0  # calls begun
        self._done = 0  # the last call ended
        self._busy = False
        self._value: T | None = None
        self._error: BaseException | None = None
        self.calls = 0  # `read` calls made (for measurements)

    def get(self) -> T:
        """A reading begun after this call (see the class doc); raises what `read` raised."""
        with self._cond:
            needed = self._begun + 1
            while self._done < needed:
                if self._busy:
                    self._cond.wait()
                    continue
                self._busy = True
                self._begun += 1
                mine = self._begun
                self.calls += 1
                self._cond.release()
                value: T | None = None
                error: BaseException | None = None
                try:
                    value = self._read()
                except Exception as exc:
                    error = exc
                finally:
                    self._cond.acquire()
                self._value, self._error, self._done, self._busy = value, error, mine, False
                self._cond.notify_all()
            if self._error is not None:
                raise self._error
            return self._value  # type: ignore[return-value]  # (set with `_done`)


@dataclass
class ImageRemover(Executor[ImageAction]):
    """Removes images as the kubelet's image GC does, re-checking each one right before its
    `RemoveImage`: gone (`ImageStatus`) → skipped; then referenced by any container the runtime
    has at that moment, in any state, by image ID, tag or digest (`ListContainers`, read after
    the image's status, with nothing between it and `RemoveImage`: `image_refs_in_use`) →
    skipped, "used by a container now"; then `RemoveImage`. containerd removes an image a
    running container uses without complaint, so this list is what keeps a container created
    while the stage runs from losing its image. Removals that need the list at the same moment
    share one call begun after each asked (`SharedReading`). `bytes_freed` is the runtime's
    image size (shared layers make the sum overstate what the filesystem regains; callers
    measure that with statvfs)."""

    _refs: SharedReading[frozenset[str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:

        self._refs = SharedReading(
            lambda: frozenset(image_refs_in_use(self.client.list_containers(annotations=False)))
        )

    def _act(self, a: ImageAction) -> None:
        if not self.client.image_exists(a.id):
            a.result, a.error = Result.SKIPPED, GONE
            return
        img = a.image
        if self._refs.get() & {img.id, *img.repo_tags, *img.repo_digests}:
            a.result, a.error = Result.SKIPPED, "used by a container now"
            return
        if not self._may_change(a):
            return
        try:
            gone_already = not self.client.remove_image(a.id)
        except RuntimeUnavailable as exc:
            raise _maybe_done(exc, "remove it") from None
        if gone_already:
            a.result, a.error = Result.SKIPPED, GONE
            return
        a.result, a.bytes_freed = Result.REMOVED, a.image.size


@dataclass
class SandboxRemover(Executor[SandboxAction]):
    """Removes pod sandboxes as the kubelet's sandbox GC does, with kubegc's re-checks.

    For each action: re-read `PodSandboxStatus` (gone → skipped; READY or re-created →
    skipped); for a deleted or terminated pod's sandbox, re-check the pod (`pod_refusal`:
    another READY sandbox or a RUNNING container of its UID → skipped, `POD_ALIVE`); list its
    containers (any → skipped: it is active again); `StopPodSandbox`
    (failure → failed, and no removal, as the kubelet); `RemovePodSandbox`.
    """

    def _act(self, a: SandboxAction) -> None:
        planned = a.sandbox
        status = self.client.pod_sandbox_status(planned.id)
        if status is None:
            a.result, a.error = Result.SKIPPED, GONE
            return
        state, created_at = status
        if state is SandboxState.READY:
            a.result, a.error = Result.SKIPPED, "READY now; no longer garbage"
            return
        if created_at != planned.created_at:
            a.result, a.error = Result.SKIPPED, "changed since the plan (creation time differs)"
            return
        if why := pod_refusal(self.pods, a.rule, planned.uid):
            a.result, a.error = Result.SKIPPED, why
            return
        if self.client.list_containers(sandbox_id=planned.id):
            a.result, a.error = Result.SKIPPED, "has containers now; active"
            return
        if not self._may_change(a):
            return
        try:
            if not self.client.stop_pod_sandbox(planned.id):
                a.result, a.error = Result.SKIPPED, GONE
                return
        except RuntimeUnavailable as exc:
            raise _maybe_done(exc, "stop it") from None
        try:
            gone_already = not self.client.remove_pod_sandbox(planned.id)
        except RuntimeUnavailable as exc:
            raise _maybe_done(exc, "remove it") from None
        if gone_already:
            a.result, a.error = Result.SKIPPED, GONE
            return
        a.result = Result.REMOVED
