"""Typed errors that carry their exit code, and the one list of exit codes.

The core raises these; the command-line wrapper (`kubegc_cli.cli.main`) turns each into one
line on stderr and its exit code. Nothing in the core calls `sys.exit`.

Each exit code has one meaning on every command (`EXIT_MEANINGS`: the README's table, the
man pages' EXIT STATUS). A warning never changes the exit code: an Event or a metrics file
that cannot be written is one line on stderr after the run has done its work.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Every exit code kubegc ends with: the one list that decides them (`EXIT_MEANINGS`)."""

    OK = 0  # done, or nothing to do
    FAILED = 1  # part of what the run set out to do failed (a removal, its target, its record)
    BAD_INPUT = 2  # usage or input kubegc cannot use; nothing was changed
    UNAVAILABLE = 3  # the runtime, the inventory or an eviction signal cannot be read
    BUSY = 4  # another kubegc run holds the node lock
    THRESHOLD_MET = 5  # `evict check`: an eviction threshold is met (a finding, not a failure)
    INTERRUPTED = 130  # SIGINT (128 + 2)
    BROKEN_PIPE = 141  # stdout closed by its reader (128 + SIGPIPE)
    TERMINATED = 143  # SIGTERM (128 + 15)


#: What each exit code means, the same on every command: one sentence each.
EXIT_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "Done, or nothing to do; a dry run; evict check: no threshold met.",
    ExitCode.FAILED: "Part of what the run set out to do failed; the rest was done: a removal "
    "failed or its outcome is unknown, a space target (gc images, reclaim) was not reached, "
    "the node reports what GC cannot run on (an image filesystem of capacity 0), the audit "
    "rows of a run that acted could not be written, an agent cycle failed.",
    ExitCode.BAD_INPUT: "Bad input: usage, a value, a file, a state directory or a runtime "
    "kubegc cannot use (images pin on a runtime that reads no pins); nothing was changed.",
    ExitCode.UNAVAILABLE: "What the run must read could not be read: the runtime (or its "
    "inventory), the Kubernetes API where it is required, a host source of an eviction signal; "
    "nothing was removed (a report that can be made without it is printed first).",
    ExitCode.BUSY: "Another kubegc run holds the node lock (past --lock-timeout); the message "
    "names its pid.",
    ExitCode.THRESHOLD_MET: "evict check: an eviction threshold is met (a finding about the "
    "node, not a failure of kubegc).",
    ExitCode.INTERRUPTED: "Interrupted by Ctrl-C (SIGINT): removals in flight finish, nothing "
    "new starts, the report is printed.",
    ExitCode.BROKEN_PIPE: "stdout was closed by its reader (| head); nothing more is written.",
    ExitCode.TERMINATED: "Stopped by SIGTERM, as for Ctrl-C (kubegc agent without --once: 0, "
    "the normal end of a DaemonSet pod).",
}


class KubegcError(Exception):
    """Base class: `str(err)` is the one-line message, `exit_code` the process exit code."""

    exit_code: ExitCode = ExitCode.FAILED


class BadInput(KubegcError):
    """Input kubegc cannot use (a flag value, a file). Exit code 2; nothing was changed."""

    exit_code = ExitCode.BAD_INPUT


#: gRPC status codes of a call the runtime left unanswered: it could not be reached, did not
#: answer in time, or cut the call off (CANCELLED: kubegc never cancels a call of its own, so
#: that is the runtime shutting down with the call in flight). For a change, the outcome is
#: unknown.
UNANSWERED_CODES = frozenset({"UNAVAILABLE", "DEADLINE_EXCEEDED", "CANCELLED"})


class RuntimeUnavailable(KubegcError):
    """The CRI runtime cannot be reached, refused a call, or its full inventory cannot be read.

    Exit code 3. `code` is the gRPC status name of the failed call ("" when no call was made),
    so callers can tell a runtime that stopped answering (`UNANSWERED_CODES`)
    from one that refused one object (`NOT_FOUND`, `FAILED_PRECONDITION`, ...).
    """

    exit_code = ExitCode.UNAVAILABLE

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code

    @property
    def unreachable(self) -> bool:
        """The runtime did not answer at all (as opposed to refusing this one call)."""
        return self.code == "" or self.code in UNANSWERED_CODES


class SignalUnavailable(RuntimeUnavailable):
    """A host source of an eviction signal (a cgroup file, /proc, statvfs) cannot be read.

    Exit code 3, like an unreachable runtime: the node's state is unknown.
    """


class Busy(KubegcError):
    """Another kubegc run holds this node's lock. Exit code 4."""

    exit_code = ExitCode.BUSY


class PartialFailure(KubegcError):
    """Some planned actions failed; the others were carried out. Exit code 1."""

    exit_code = ExitCode.FAILED


class GCFailed(KubegcError):
    """Garbage collection cannot run on what the node reports, as the kubelet's would fail
    (an image filesystem with capacity 0: the kubelet's InvalidDiskCapacity). Exit code 1;
    nothing was removed."""

    exit_code = ExitCode.FAILED


class SandboxImageUnreadable(RuntimeUnavailable):
    """The runtime says which sandbox (pause) image it uses in a form kubegc cannot read, so
    the image the runtime protects is unknown: no image is removed on its word. Exit code 3,
    as an inventory that cannot be read."""

    def __init__(self, why: str) -> None:
        super().__init__(
            f"{why}: the sandbox image the runtime protects is unknown, so no image is taken "
            "for unused (give it with --pod-infra-container-image to go on)",
            code="",
        )
        self.why = why
