"""The `kubegc` console script. `kubegc --version` answers before click is even imported;
everything else goes to `kubegc_cli.cli.main`."""

from __future__ import annotations

import sys


def main() -> None:
    """Run kubegc with `sys.argv` (see `kubegc_cli.cli.main.main`)."""
    if sys.argv[1:] == ["--version"]:
        from kubegc_cli import __version__

        sys.stdout.write(f"kubegc {__version__}\n")
        return
    from kubegc_cli.cli.main import main as run

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
    operating system. kubegc closes its channels, files and databases itself.
    """
    import gc

    gc.collect()
    gc.freeze()
