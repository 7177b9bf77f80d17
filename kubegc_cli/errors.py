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


class KubegcError(Exception):
    """Base class: `str(err)` is the one-line message, `exit_code` the process exit code."""

    exit_code = 1


class BadInput(KubegcError):
    """Input kubegc cannot use (a flag value, a file). Exit code 2; nothing was changed."""

    exit_code = 2


class RuntimeUnavailable(KubegcError):
    """The CRI runtime cannot be reached, refused a call, or its full inventory cannot be read.

    Exit code 3. `code` is the gRPC status name of the failed call ("" when no call was made),
    so callers can tell a runtime that stopped answering (`UNAVAILABLE`, `DEADLINE_EXCEEDED`)
    from one that refused one object (`NOT_FOUND`, `FAILED_PRECONDITION`, ...).
    """

    exit_code = 3

    def __init__(self, message: str, code: str = "") -> None:
        super().__init__(message)
        self.code = code

    @property
    def unreachable(self) -> bool:
        """The runtime did not answer at all (as opposed to refusing this one call)."""
        return self.code in ("UNAVAILABLE", "DEADLINE_EXCEEDED", "")


class SignalUnavailable(RuntimeUnavailable):
    """A host source of an eviction signal (a cgroup file, /proc, statvfs) cannot be read.

    Exit code 3, like an unreachable runtime: the node's state is unknown.
    """


class Busy(KubegcError):
    """Another kubegc run holds this node's lock. Exit code 4."""

    exit_code = 4


class PartialFailure(KubegcError):
    """Some planned actions failed; the others were carried out. Exit code 1."""

    exit_code = 1


class GCFailed(KubegcError):
    """Garbage collection cannot run on what the node reports, as the kubelet's would fail
    (an image filesystem with capacity 0: the kubelet's InvalidDiskCapacity). Exit code 1;
    nothing was removed."""

    exit_code = 1
