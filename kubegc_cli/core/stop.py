"""Stop signals in the console script: the first SIGINT or SIGTERM is an exception the run
handles (calls in flight finish, what was done is reported and recorded, exit 130 or 143);
from the moment it arrives, any further stop signal ends the process at once with its code,
wherever the run is (reporting, writing audit rows, exiting), never with a traceback.

Kept free of heavy imports: `install` runs before the rest of kubegc is imported, so a
Ctrl-C during start-up is a clean exit too.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

from kubegc_cli.core.errors import ExitCode

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

#: The first stop signal received (None before): an exception raised while it was being
#: delivered may reach the run wrapped in another (Python 3.11 wraps one raised inside
#: `__set_name__`, as a class is made during an import, in a RuntimeError).
received: int | None = None


class Terminated(KeyboardInterrupt):
    """SIGTERM (systemd stop, `timeout`): handled like Ctrl-C, reported as exit 143."""

    signal_name = "SIGTERM"


def name_of(signum: int) -> str:
    """ "SIGTERM" or "SIGINT" (any other signal number is named SIGINT)."""
    return "SIGTERM" if signum == signal.SIGTERM else "SIGINT"


def ending(signal_name: str) -> tuple[str, ExitCode]:
    """What a run a stop signal ended says and its exit code: ("terminated", 143) for
    "SIGTERM", ("interrupted", 130) for "SIGINT"."""
    if signal_name == "SIGTERM":
        return "terminated", ExitCode.TERMINATED
    return "interrupted", ExitCode.INTERRUPTED


def _again(signum: int, frame: object) -> None:
    name = name_of(signum)
    os.write(2, f"kubegc: error: {name} again: exiting at once\n".encode())
    os._exit(ending(name)[1])


def first_stop(signum: int, frame: object) -> None:
    """The handler of the first stop signal: any later one exits at once (`_again`); this one
    raises `Terminated` (SIGTERM) or `KeyboardInterrupt` (SIGINT) for the run to handle."""
    global received
    received = signum
    for sig in STOP_SIGNALS:
        signal.signal(sig, _again)
    if signum == signal.SIGTERM:
        raise Terminated
    raise KeyboardInterrupt


def install() -> None:
    """Handle SIGINT and SIGTERM with `first_stop` (a signal ignored by the parent, as under
    `nohup`, stays ignored)."""
    for sig in STOP_SIGNALS:
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, first_stop)


#: What a long-running agent stopped before its loop says (its exit code is 0).
STOPPED_STARTING = "SIGTERM: stopped while starting, before the first cycle; exit 0"


def ends_normally(signal_name: str, words: Sequence[str]) -> bool:
    """True when a stop signal `signal_name` is the normal end of the run whose command line is
    `words`: SIGTERM to a long-running `kubegc agent` (no `--once`), as a DaemonSet pod is
    stopped — exit 0 at any moment, start-up included (nothing is removed before its loop
    runs). A word `agent` that is an option's value counts too: such a run exits 0 rather
    than 143 on a SIGTERM in its first moments, before it has done anything."""
    return signal_name == "SIGTERM" and "agent" in words and "--once" not in words
