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
