"""The `kubegc` console script. `kubegc --version` answers before click is even imported;
everything else goes to `kubegc_cli.cli.main`."""

from __future__ import annotations

import contextlib
import gc
import os
import signal
import sys

from kubegc_cli import __version__
from kubegc_cli.core import stop
from kubegc_cli.core.errors import ExitCode


def main() -> None:
    """Run kubegc with `sys.argv` (see `kubegc_cli.cli.main.main`)."""
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(f"kubegc {__version__}\n")
        return
    stop.install()
    try:
        # deferred: tests/unit/test_cli.py::test_a_stop_signal_during_start_up_is_a_clean_exit
        from kubegc_cli.cli.main import main as run
    except BaseException:  # a stop signal during start-up (nothing has been done yet)
        if stop.received is None:
            raise
        name = stop.name_of(stop.received)
        if stop.ends_normally(name, sys.argv[1:]):
            os.write(2, f"kubegc: {stop.STOPPED_STARTING}\n".encode())
            os._exit(ExitCode.OK)
        said, code = stop.ending(name)
        os.write(2, f"kubegc: error: {said}\n".encode())
        os._exit(code)
    try:
        run()
    finally:
        freeze_for_exit()


def freeze_for_exit() -> None:
    """Collect the finished command's garbage, then freeze every object left (`gc.freeze`).

    The process ends next. The interpreter's shutdown would otherwise run its cyclic garbage
    collector over every object still alive (grpc's, protobuf's descriptors, click's command
    tree, ~50-90 ms here) only to free memory the process's exit frees anyway. Garbage is
    still collected (and finalized) here first, and reference counting still frees what the
    shutdown releases; only reference cycles among objects alive at exit are left to the
    operating system. kubegc closes its channels, files and databases itself. From here a
    SIGINT or SIGTERM ends the process at once with 130 or 143.
    """
    # The command has finished and reported: a stop signal from here on only ends the
    # process, at once and with its code (130, 143), never a traceback from inside the
    # collector. Output is flushed first, as the interpreter's exit would.
    for stream in (sys.stdout, sys.stderr):
        # (a closed or broken pipe: the command has already said what it could)
        with contextlib.suppress(OSError, ValueError):
            stream.flush()

    def leave(signum: int, frame: object) -> None:
        os._exit(ExitCode.TERMINATED if signum == signal.SIGTERM else ExitCode.INTERRUPTED)

    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) is not signal.SIG_IGN:  # (an ignored signal stays ignored)
            signal.signal(sig, leave)
    gc.collect()
    gc.freeze()
