"""Typed errors that carry their exit code.

The core raises these; the command-line wrapper (`kubegc_cli.cli.main`) turns each into one
line on stderr and its exit code. Nothing in the core calls `sys.exit`.

Exit codes (documented in the README):

====  =============================================================================
 0    done, or nothing to do
 1    some actions failed (`PartialFailure`); image GC cannot run on what the node
      reports (`GCFailed`)
 2    bad input: usage, a bad duration, an unreadable pods file (`BadInput`);
      nothing is removed
 3    runtime unreachable, inventory or eviction signals unreadable
      (`RuntimeUnavailable`, `SignalUnavailable`)
 4    another kubegc run holds the node lock (`Busy`)
====  =============================================================================
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Every exit code kubegc ends with: the one list that decides them (the README's table)."""

    OK = 0  # done, or nothing to do
    FAILED = 1  # some actions failed; GC cannot run; `evict check`: a threshold is met
    BAD_INPUT = 2  # usage or input kubegc cannot use; nothing was changed
    UNAVAILABLE = 3  # the runtime, the inventory or an eviction signal cannot be read
    BUSY = 4  # another kubegc run holds the node lock
    INTERRUPTED = 130  # SIGINT (128 + 2)
    BROKEN_PIPE = 141  # stdout closed by its reader (128 + SIGPIPE)
    TERMINATED = 143  # SIGTERM (128 + 15)


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
