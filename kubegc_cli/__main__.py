"""`python -m kubegc_cli` runs the kubegc command line."""

from kubegc_cli.cli.entry import main

main()
