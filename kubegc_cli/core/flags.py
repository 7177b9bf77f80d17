"""Reading a Go program's long flags from its command line, as pflag reads them (the
kubelet's, cri-dockerd's). Standard library only."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence


def long_flags(
    argv: Sequence[str], names: Collection[str], *, go_flag: bool = False
) -> Iterator[tuple[str, str | None]]:
    """The flags `names` (without `--`) in `argv` (`argv[0]` is the program), in order, as
    pflag reads them: `--flag=value` or `--flag value`, `_` and `-` the same in names; parsing
    stops at `--`. Yields (name, value); the value is None for a flag last on the line with
    none (and the iteration ends there).

    With `go_flag`, as Go's `flag` package reads them (urfave/cli, containerd's): one dash or
    two before any name (`-c x`, `-config=x`, `--config x`), names taken as written."""
    args = list(argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg == "--":
            return
        dashes = len(arg) - len(arg.lstrip("-"))
        if dashes != 2 and not (go_flag and dashes == 1):
            continue
        name, eq, value = arg[dashes:].partition("=")
        if not go_flag:
            name = name.replace("_", "-")
        if name not in names:
            continue
        if not eq:
            if i >= len(args):
                yield name, None
                return
            value = args[i]
            i += 1
        yield name, value
