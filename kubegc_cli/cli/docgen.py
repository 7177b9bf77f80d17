"""Generate the man pages, the CLI reference and shell completions from the click tree.

`python -m kubegc_cli.cli.docgen` rewrites `man/kubegc.1` (every command), one page per
command and group (`man/kubegc-gc-containers.1`, ...), `docs/CLI.md` and `completions/`, and
deletes pages of commands that no longer exist; `python -m kubegc_cli.cli.docgen --check`
exits 1 if any of them is stale or left over (tests/unit/test_docs.py runs the check).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

from kubegc_cli import __version__
from kubegc_cli.cli.completion import SHELLS, script
from kubegc_cli.cli.main import cli
from kubegc_cli.core.errors import __doc__ as ERRORS_DOC

ROOT = Path(__file__).resolve().parents[2]


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
        "CRI socket used when \\-r/\\-\\-runtime\\-endpoint is not given (as crictl); "
        "it outranks runtime\\-endpoint in the config file.",
        ".TP",
        ".B KUBECONFIG",
        "kubeconfig of the API pod source when \\-\\-kubeconfig is not given (as kubectl); "
        "it outranks kubeconfig in the config file.",
        ".TP",
        ".B KUBEGC_CONFIG",
        "the config file when \\-\\-config is not given.",
        ".SH FILES",
        ".TP",
        ".B /etc/kubegc/config.yaml",
        "the config file (when present): global options at the top, a command's options under "
        "its path (gc: containers: ...), by long name. Precedence: flag, environment, config "
        "file, kubelet config, defaults. See kubegc config view.",
        ".TP",
        ".B /etc/crictl.yaml",
        "runtime\\-endpoint, read under \\-\\-host\\-root.",
        ".TP",
        ".B /var/lib/kubelet/config.yaml",
        "the kubelet configuration (podLogsDir), read under \\-\\-host\\-root.",
        ".TP",
        ".B /var/lib/kubegc",
        "the run lock (lock, holding the holder's pid) and the audit log (state.db).",
        ".SH SEE ALSO",
        "crictl(1), kubelet(8)",
        "",
    ]
    return "\n".join(lines)


def completion(shell: str) -> str:
    """click's completion script for `shell`, as `kubegc completion <shell>` prints it."""
    return script(cli, shell)


def page_name(path: tuple[str, ...]) -> str:
    """`kubegc-gc-containers` for ("kubegc", "gc", "containers")."""
    return "-".join(path)


def command_page(path: tuple[str, ...], cmd: click.Command) -> str:
    """The man page of one command or group (roff): name, synopsis, its help, see also."""
    name = page_name(path)
    summary = (cmd.get_short_help_str(limit=90) or "").rstrip(".")
    synopsis = "[\\fIOPTIONS\\fR]"
    if isinstance(cmd, click.Group):
        synopsis = "\\fICOMMAND\\fR [\\fIOPTIONS\\fR]"
    else:
        args = [p.make_metavar(click.Context(cmd)) for p in cmd.params
                if isinstance(p, click.Argument)]  # fmt: skip
        if args:
            synopsis += " " + " ".join(f"\\fI{_roff(a)}\\fR" for a in args)
    related = ["kubegc(1)"]
    if len(path) > 2:
        related.append(f"{page_name(path[:-1])}(1)")
    if isinstance(cmd, click.Group):
        related += [f"{page_name((*path, sub))}(1)" for sub in sorted(cmd.commands)]
    lines = [
        f'.TH {name.upper()} 1 "" "kubegc {__version__}" "User Commands"',
        ".SH NAME",
        f"{_roff(name)} \\- {_roff(summary)}",
        ".SH SYNOPSIS",
        f".B {_roff(' '.join(path))}",
        synopsis,
        ".SH DESCRIPTION",
        ".nf",
        _roff(help_text(path, cmd).rstrip()),
        ".fi",
        ".SH SEE ALSO",
        ", ".join(_roff(r) for r in related),
        "",
    ]
    return "\n".join(lines)


def outputs() -> dict[Path, str]:
    files = {ROOT / "man/kubegc.1": man_page(), ROOT / "docs/CLI.md": cli_reference()}
    for path, cmd in walk(cli):
        if len(path) > 1:
            files[ROOT / "man" / f"{page_name(path)}.1"] = command_page(path, cmd)
    ext = {"bash": "kubegc.bash", "zsh": "_kubegc", "fish": "kubegc.fish"}
    for shell in SHELLS:
        files[ROOT / "completions" / ext[shell]] = completion(shell)
    return files


def leftovers(files: dict[Path, str]) -> list[Path]:
    """Generated-looking files that `outputs` no longer makes (pages of removed commands)."""
    out = []
    for directory, pattern in ((ROOT / "man", "kubegc*.1"), (ROOT / "completions", "*")):
        if directory.is_dir():
            out += [p for p in sorted(directory.glob(pattern)) if p not in files]
    return out


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    files = outputs()
    for path, text in files.items():
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(path)
            if not check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    extra = leftovers(files)
    for path in extra:
        if not check:
            path.unlink()
    for path in stale:
        print(f"{'stale' if check else 'wrote'}: {path.relative_to(ROOT)}")
    for path in extra:
        print(f"{'left over' if check else 'deleted'}: {path.relative_to(ROOT)}")
    return 1 if check and (stale or extra) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
