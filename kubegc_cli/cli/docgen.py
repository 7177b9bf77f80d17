"""Generate the man page, the CLI reference and shell completions from the click tree.

`python -m kubegc_cli.cli.docgen` rewrites `man/kubegc.1`, `docs/CLI.md` and `completions/`;
`python -m kubegc_cli.cli.docgen --check` exits 1 if any of them is stale
(tests/unit/test_docs.py runs the check).
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click

from kubegc_cli import __version__
from kubegc_cli.cli.main import cli
from kubegc_cli.errors import __doc__ as ERRORS_DOC

ROOT = Path(__file__).resolve().parents[2]
SHELLS = ("bash", "zsh", "fish")


def walk(
    cmd: click.Command, path: tuple[str, ...] = ("kubegc",)
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and group with its full name, depth first, in name order."""
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.commands):
            yield from walk(cmd.commands[name], (*path, name))


def help_text(path: tuple[str, ...], cmd: click.Command) -> str:
    """The command's `--help` text at a fixed width of 100 columns."""
    parent: click.Context | None = None
    for i, name in enumerate(path[:-1]):
        parent = click.Context(
            cli if i == 0 else click.Command(name), info_name=name, parent=parent
        )
    ctx = click.Context(
        cmd,
        info_name=path[-1],
        parent=parent,
        terminal_width=100,
        max_content_width=100,
        help_option_names=["-h", "--help"],
    )
    return cmd.get_help(ctx)


def cli_reference() -> str:
    """docs/CLI.md: every command's help, generated."""
    parts = [
        "# kubegc command reference\n",
        "Generated from the command tree by `python -m kubegc_cli.cli.docgen`; do not edit.\n",
    ]
    for path, cmd in walk(cli):
        parts.append(f"\n## `{' '.join(path)}`\n\n```\n{help_text(path, cmd).rstrip()}\n```\n")
    return "".join(parts)


def _roff(text: str) -> str:
    out = []
    for line in text.splitlines():
        line = line.replace("\\", "\\e").replace("-", "\\-")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def man_page() -> str:
    """man/kubegc.1 (roff): synopsis, every command's help, exit status, environment, files."""
    lines = [
        f'.TH KUBEGC 1 "" "kubegc {__version__}" "User Commands"',
        ".SH NAME",
        "kubegc \\- the kubelet's garbage collection for one Kubernetes node, "
        "shown before it is done",
        ".SH SYNOPSIS",
        ".B kubegc",
        "[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".SH COMMANDS",
    ]
    for path, cmd in walk(cli):
        lines += [f".SS {' '.join(path)}", ".nf", _roff(help_text(path, cmd).rstrip()), ".fi"]
    exit_doc = (ERRORS_DOC or "").split("Exit codes (documented in the README):", 1)[-1]
    lines += [
        ".SH EXIT STATUS",
        ".nf",
        _roff(exit_doc.strip()),
        ".fi",
        ".SH ENVIRONMENT",
        ".TP",
        ".B CONTAINER_RUNTIME_ENDPOINT",
        "CRI socket used when \\-r/\\-\\-runtime\\-endpoint is not given (as crictl).",
        ".SH FILES",
        ".TP",
        ".B /etc/crictl.yaml",
        "runtime\\-endpoint, read under \\-\\-host\\-root.",
        ".TP",
        ".B /var/lib/kubelet/config.yaml",
        "the kubelet configuration (podLogsDir), read under \\-\\-host\\-root.",
        ".TP",
        ".B /var/lib/kubegc",
        "the run lock and the audit log (state.db).",
        ".SH SEE ALSO",
        "crictl(1), kubelet(8)",
        "",
    ]
    return "\n".join(lines)


def completion(shell: str) -> str:
    """click's completion script for `shell`, as `_KUBEGC_COMPLETE=<shell>_source kubegc` prints."""
    env = {**os.environ, "_KUBEGC_COMPLETE": f"{shell}_source"}
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from kubegc_cli.cli.main import cli; "
         "sys.exit(cli.main(prog_name='kubegc'))"],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    return proc.stdout


def outputs() -> dict[Path, str]:
    files = {ROOT / "man/kubegc.1": man_page(), ROOT / "docs/CLI.md": cli_reference()}
    ext = {"bash": "kubegc.bash", "zsh": "_kubegc", "fish": "kubegc.fish"}
    for shell in SHELLS:
        files[ROOT / "completions" / ext[shell]] = completion(shell)
    return files


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for path, text in outputs().items():
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(path)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    for path in stale:
        print(f"{'stale' if check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
