"""Generate the man pages, the CLI reference and shell completions from the click tree.

`python -m kubegc_cli.cli.docgen` rewrites `man/kubegc.1` (every command), one page per
command and group (`man/kubegc-gc-containers.1`, ...), `docs/CLI.md` and `completions/`, and
deletes pages of commands that no longer exist; `python -m kubegc_cli.cli.docgen --check`
exits 1 if any of them is stale or left over (tests/unit/test_docs.py runs the check).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Collection, Iterator
from pathlib import Path

import click

from kubegc_cli import __version__
from kubegc_cli.cli.command import WHOLE
from kubegc_cli.cli.completion import SHELLS, script
from kubegc_cli.cli.main import HELP_OPTIONS, LISTING, SUMMARIES, cli
from kubegc_cli.cli.options import GLOBAL_NAMES
from kubegc_cli.core.errors import EXIT_MEANINGS

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


#: Every page starts `.nh`: no hyphenation, so an option, a path or a command is never broken
#: where a reader would copy it.
#: Columns a verbatim line (an example) may take at the page's indent so that `man` on an
#: 80-column terminal fits it: man-db sets the line length to 78 there, less the 7 columns
#: of indent.
VERBATIM = 71


def _roff(text: str) -> str:
    r"""Text as roff: backslashes and hyphens escaped (`\-` is the minus an option is typed
    with), other than ASCII as `\[u` and its code point in 4 hex digits (`\[u00E9]` for é),
    a line starting with `.` or `'` made text."""
    out = []
    for line in text.splitlines():
        line = line.replace("\\", "\\e").replace("-", "\\-")
        line = "".join(ch if ord(ch) < 128 else f"\\[u{ord(ch):04X}]" for ch in line)
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def _term(record: str) -> str:
    """An option's help record (`-n, --namespace NS`) as the tag of a `.TP` paragraph: the
    option names bold, the value's name italic."""
    words = []
    for word in record.split(" "):
        bare = word.rstrip(",")
        if bare.startswith("-"):
            words.append(f"\\fB{_roff(bare)}\\fR" + ("," if word.endswith(",") else ""))
        elif word == "/":
            words.append("/")
        else:
            words.append(f"\\fI{_roff(word)}\\fR")
    return " ".join(words)


def _fit(line: str, width: int = VERBATIM) -> list[str]:
    r"""One verbatim line as lines of at most `width` columns where it can be: a trailing
    `# comment` goes on its own line above its command; a command still too long is broken at
    a space with a `\` (a shell reads it as one line again), its continuation indented; other
    text is wrapped at a space."""
    if len(line) <= width:
        return [line]
    indent = line[: len(line) - len(line.lstrip())]
    command, sep, comment = line.partition("  #")
    if sep and comment.strip() and command.strip():
        return [f"{indent}# {comment.strip()}", *_fit(command.rstrip(), width)]
    is_command = line.lstrip().startswith(("kubegc ", "kubectl ", "<", "$"))
    more = indent + ("    " if is_command else "")
    out, rest = [], line
    while len(rest) > width:
        room = width - (2 if is_command else 0)
        cut = rest.rfind(" ", len(more) + 1, room)
        if cut <= len(more):
            break  # (one word longer than the page: left whole)
        out.append(rest[:cut] + (" \\" if is_command else ""))
        rest = more + rest[cut + 1 :]
    return [*out, rest]


def _blocks(help_text: str) -> tuple[list[tuple[str, str]], list[str]]:
    r"""A command's help as (kind, text) blocks — "p" a paragraph to fill, "nf" a block kept
    as written (click's `\b`) — and its example lines (the blocks headed `Example...`)."""
    blocks: list[tuple[str, str]] = []
    examples: list[str] = []
    for para in inspect.cleandoc(help_text).split("\n\n"):
        if not para.strip():
            continue
        if para.startswith("\b"):
            lines = para.splitlines()[1:]
            if lines and lines[0].startswith("Example"):
                examples += [line[2:] if line.startswith("  ") else line for line in lines[1:]]
            else:
                blocks.append(("nf", "\n".join(lines)))
        else:
            blocks.append(("p", " ".join(para.split())))
    return blocks, examples


def _description(blocks: list[tuple[str, str]]) -> list[str]:
    lines: list[str] = []
    for kind, text in blocks:
        if kind == "p":
            lines += [".PP", _roff(text)]
        else:
            fitted = [piece for line in text.splitlines() for piece in _fit(line)]
            lines += [".PP", ".nf", _roff("\n".join(fitted)), ".fi"]
    return lines[1:] if lines[:1] == [".PP"] else lines


def _examples(examples: list[str]) -> list[str]:
    if not examples:
        return []
    fitted = [piece for line in examples for piece in _fit(line)]
    return [".SH EXAMPLES", ".nf", _roff("\n".join(fitted)), ".fi"]


def _options(cmd: click.Command, ctx: click.Context, names: Collection[str]) -> list[str]:
    """`.TP` paragraphs of `cmd`'s options whose names are in `names` (help included)."""
    lines: list[str] = []
    for p in cmd.get_params(ctx):
        record = p.get_help_record(ctx) if isinstance(p, click.Option) else None
        if record is None or p.name not in names:
            continue
        lines += [".TP", _term(record[0]), _roff(" ".join(record[1].split()))]
    return lines


def _exit_status() -> list[str]:
    lines = [".SH EXIT STATUS", "The same on every command:"]
    for code, meaning in EXIT_MEANINGS.items():
        lines += [".TP", f".B {int(code)}", _roff(meaning)]
    return lines


def _context(path: tuple[str, ...], cmd: click.Command) -> click.Context:
    """A context for `cmd` at `path`, as a run of it would have (its help option -h/--help)."""
    helps = HELP_OPTIONS
    parent: click.Context | None = None
    for i, name in enumerate(path[:-1]):
        parent = click.Context(
            cli if i == 0 else click.Command(name), info_name=name, parent=parent,
            help_option_names=helps,
        )  # fmt: skip
    return click.Context(cmd, info_name=path[-1], parent=parent, help_option_names=helps)


def man_page() -> str:
    """man/kubegc.1 (roff): name, synopsis, description, every command (each with its own
    page), the global options as tagged paragraphs, exit status, environment, files,
    examples."""
    ctx = _context(("kubegc",), cli)
    blocks, examples = _blocks(cli.help or "")
    lines = [
        f'.TH KUBEGC 1 "" "kubegc {__version__}" "User Commands"',
        ".nh",
        ".SH NAME",
        "kubegc \\- the kubelet's garbage collection for one Kubernetes node, "
        "shown before it is done",
        ".SH SYNOPSIS",
        ".B kubegc",
        "[\\fIGLOBAL OPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]",
        ".br",
        ".B kubegc",
        "\\fB\\-\\-version\\fR | \\fB\\-\\-help\\fR",
        ".SH DESCRIPTION",
        *_description(blocks),
        ".SH COMMANDS",
    ]
    for heading, paths in LISTING:
        lines += [f".SS {_roff(heading)}"]
        for path in paths:
            page = page_name(("kubegc", *path.split()))
            lines += [".TP", f"\\fBkubegc {_roff(path)}\\fR",
                      f"{_roff(SUMMARIES[path])} See \\fB{_roff(page)}\\fR(1)."]  # fmt: skip
    lines += [".SH OPTIONS", "These global options go before or after the command's name."]
    lines += _options(cli, ctx, {p.name for p in cli.get_params(ctx) if p.name})
    lines += [
        *_exit_status(),
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
        *_examples(examples),
        ".SH SEE ALSO",
        ", ".join(f"\\fB{_roff(page_name(p))}\\fR(1)" for p, _ in walk(cli) if len(p) > 1)
        + ", crictl(1), kubelet(8)",
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
    """The man page of one command or group (roff): name, synopsis, description, its
    commands (a group) or its options as tagged paragraphs, exit status, examples, see also."""
    name = page_name(path)
    ctx = _context(path, cmd)
    summary = cmd.get_short_help_str(WHOLE).rstrip(".")
    synopsis = "[\\fIOPTIONS\\fR]"
    if isinstance(cmd, click.Group):
        synopsis = "\\fICOMMAND\\fR [\\fIOPTIONS\\fR]"
    else:
        args = [p.make_metavar(ctx) for p in cmd.params if isinstance(p, click.Argument)]
        if args:
            synopsis += " " + " ".join(f"\\fI{_roff(a)}\\fR" for a in args)
    blocks, examples = _blocks(cmd.help or "")
    related = ["kubegc"]
    if len(path) > 2:
        related.append(page_name(path[:-1]))
    lines = [
        f'.TH {_roff(name.upper())} 1 "" "kubegc {__version__}" "User Commands"',
        ".nh",
        ".SH NAME",
        f"{_roff(name)} \\- {_roff(summary)}",
        ".SH SYNOPSIS",
        f".B {_roff(' '.join(path))}",
        synopsis,
        ".SH DESCRIPTION",
        *_description(blocks),
    ]
    if isinstance(cmd, click.Group):
        lines += [".SH COMMANDS"]
        if not examples:  # a group's examples: the first of each of its commands
            examples = [ex for sub in sorted(cmd.commands)
                        for ex in _blocks(cmd.commands[sub].help or "")[1][:1]]  # fmt: skip
        for sub in sorted(cmd.commands):
            related.append(page_name((*path, sub)))
            lines += [".TP", f"\\fB{_roff(' '.join((*path, sub)))}\\fR",
                      _roff(cmd.commands[sub].get_short_help_str(WHOLE)) +
                      f" See \\fB{_roff(page_name((*path, sub)))}\\fR(1)."]  # fmt: skip
    own = {p.name for p in cmd.get_params(ctx) if p.name and p.name not in GLOBAL_NAMES}
    lines += [".SH OPTIONS", *_options(cmd, ctx, own)]
    lines += [
        ".PP",
        "The global options of \\fBkubegc\\fR(1) (\\fB\\-r\\fR, \\fB\\-\\-timeout\\fR, "
        "\\fB\\-o\\fR, \\fB\\-\\-host\\-root\\fR, ...) apply as well, before or after the "
        "command's name.",
        *_exit_status(),
        *_examples(examples),
        ".SH SEE ALSO",
        ", ".join(f"\\fB{_roff(r)}\\fR(1)" for r in related),
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
