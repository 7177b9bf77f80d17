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

    run()
