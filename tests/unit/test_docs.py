"""Man page, CLI reference and completions are generated from the click tree and kept fresh."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from kubegc_cli.cli import docgen
from kubegc_cli.cli.main import cli
from kubegc_cli.core.errors import ExitCode


def test_generated_docs_are_fresh() -> None:
    stale = [
        str(path.relative_to(docgen.ROOT))
        for path, text in docgen.outputs().items()
        if not path.exists() or path.read_text() != text
    ]
    assert not stale, f"stale: {stale}; run python -m kubegc_cli.cli.docgen"


def test_every_command_has_help_with_an_example() -> None:
    for path, cmd in docgen.walk(cli):
        assert cmd.help, f"{' '.join(path)} has no help text"
        if not hasattr(cmd, "commands"):
            assert "Example" in cmd.help, f"{' '.join(path)} help has no example"


def test_man_page_names_every_command_and_exit_code() -> None:
    page = docgen.man_page()
    for path, _ in docgen.walk(cli):
        if len(path) > 1 and not hasattr(_, "commands"):
            assert f"\\fBkubegc {' '.join(path[1:])}\\fR".replace("-", "\\-") in page, path
    for code in ExitCode:
        assert f".TP\n.B {int(code)}\n" in page


def pages() -> dict[str, str]:
    """Every generated man page by file name."""
    return {p.name: text for p, text in docgen.outputs().items() if p.suffix == ".1"}


def sections(page: str) -> list[str]:
    return [line[4:].strip('"') for line in page.splitlines() if line.startswith(".SH ")]


def test_every_man_page_has_the_sections_of_a_man_page_in_order() -> None:
    """NAME, SYNOPSIS, DESCRIPTION, (COMMANDS), OPTIONS, EXIT STATUS, EXAMPLES, SEE ALSO;
    options and exit codes as tagged paragraphs (.TP), one per option and code."""
    for name, page in pages().items():
        found = sections(page)
        want = ["NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "EXIT STATUS", "EXAMPLES",
                "SEE ALSO"]  # fmt: skip
        assert [s for s in found if s in want] == want, (name, found)
        options = page.split(".SH OPTIONS")[1].split(".SH ")[0]
        assert options.count(".TP\n") >= 1 and "\\fB\\-\\-help\\fR" in options, name
        status = page.split(".SH EXIT STATUS")[1].split(".SH ")[0]
        assert status.count(".TP\n") == len(ExitCode), name
        assert ".nh" in page.splitlines()[:3], name  # no option broken by hyphenation


def test_a_commands_options_are_its_own_tagged_paragraphs() -> None:
    page = pages()["kubegc-gc-containers.1"]
    options = page.split(".SH OPTIONS")[1].split(".SH ")[0]
    assert ".TP\n\\fB\\-\\-maximum\\-dead\\-containers\\fR \\fIN\\fR\n" in options
    assert ".TP\n\\fB\\-n\\fR, \\fB\\-\\-namespace\\fR \\fINS\\fR\n" in options
    assert "runtime\\-endpoint" not in options.split(".PP")[0]  # global: kubegc(1)'s
    view = pages()["kubegc-config-view.1"].split(".SH OPTIONS")[1].split(".SH ")[0]
    assert "COMMAND" not in view  # an argument is no option (it is in the SYNOPSIS)
    root = pages()["kubegc.1"].split(".SH OPTIONS")[1].split(".SH ")[0]
    assert "\\fB\\-\\-runtime\\-endpoint\\fR \\fIENDPOINT\\fR" in root


def test_verbatim_lines_of_every_man_page_fit_80_columns() -> None:
    """Lines kept as written (.nf: examples, click's \\b blocks) are at most VERBATIM columns
    once rendered, the page's indent added; checked on the roff, with or without groff."""
    for name, page in pages().items():
        verbatim = False
        for line in page.splitlines():
            if line in (".nf", ".fi"):
                verbatim = line == ".nf"
            elif verbatim:
                shown = re.sub(r"\\\[u([0-9A-F]{4})\]", "x", line)
                shown = shown.replace("\\-", "-").replace("\\e", "\\").replace("\\&", "")
                assert len(shown) <= docgen.VERBATIM, (name, shown)


def test_long_example_lines_are_fitted_and_stay_one_command() -> None:
    long = "  kubegc gc containers --pods-file pods.json --yes    # also deleted pods' containers"
    assert docgen._fit(long) == [
        "  # also deleted pods' containers",
        "  kubegc gc containers --pods-file pods.json --yes",
    ]
    cmd = "kubegc gc images --image-gc-high-threshold 70 --image-gc-low-threshold 60 --yes"
    fitted = docgen._fit(cmd)
    assert len(fitted) == 2 and all(len(x) <= docgen.VERBATIM for x in fitted)
    assert fitted[0].endswith(" \\") and fitted[1].startswith("    ")
    assert " ".join(x.removesuffix(" \\").strip() for x in fitted) == cmd  # same words
    prose = "The config file (YAML): global options at the top, a command's options under its path,"
    wrapped = docgen._fit(prose)
    assert len(wrapped) == 2 and not any(x.endswith("\\") for x in wrapped)
    assert " ".join(wrapped) == prose and not wrapped[1].startswith(" ")


def render(path: Path) -> tuple[str, str]:
    """The page as `man -l` shows it on an 80-column terminal (groff's -man at man-db's line
    length of 78 when man is not installed): (text, warnings)."""
    env = {**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": "", "LC_ALL": "C.UTF-8"}
    if shutil.which("man"):
        res = subprocess.run(["man", "-l", str(path)], capture_output=True, env=env,
                             timeout=60, check=True)  # fmt: skip
    else:
        res = subprocess.run(["groff", "-man", "-Tutf8", "-rLL=78n", "-P-cbou", str(path)],
                             capture_output=True, env=env, timeout=60, check=True)  # fmt: skip
    return res.stdout.decode(), res.stderr.decode()


@pytest.mark.skipif(not (shutil.which("man") or shutil.which("groff")),
                    reason="neither man nor groff is installed here")  # fmt: skip
def test_every_man_page_renders_within_80_columns_without_warnings(tmp_path: Path) -> None:
    for name, page in pages().items():
        path = tmp_path / name
        path.write_text(page)
        text, warnings = render(path)
        assert warnings == "", (name, warnings)
        wide = [line for line in text.splitlines() if len(line) > 80]
        assert not wide, (name, wide)
        assert "EXIT STATUS" in text and "EXAMPLES" in text, name


@pytest.mark.skipif(not shutil.which("groff"), reason="groff is not installed here")
def test_groff_reads_every_man_page_without_a_warning(tmp_path: Path) -> None:
    """Every warning groff has (-ww): no unknown macro, escape or character."""
    for name, page in pages().items():
        path = tmp_path / name
        path.write_text(page)
        res = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", str(path)],
                             capture_output=True, text=True, timeout=60)  # fmt: skip
        assert res.returncode == 0 and res.stderr == "", (name, res.stderr)


def test_readme_residue_section_documents_what_decides_safety() -> None:
    """The reference's residue section says which mount table is read and what an unreadable
    one means, the grace periods, what needs the host's processes (and what happens in a pod
    with another --host-root), the host-network case, and the split of `action` (what clean
    does) from `manual_action` (what to run by hand)."""
    readme = (docgen.ROOT / "docs/REFERENCE.md").read_text()
    start = readme.index("### `kubegc residue scan` / `kubegc residue clean`")
    section = readme[start : readme.index("\n### ", start + 1)]
    for needle in (
        "/proc/self/mountinfo",
        "If the table cannot be read",
        "younger than 10 minutes",
        "started N s ago",
        "hostPID",
        "--host-root /",
        "host networking",
        "`manual_action`",
        "not named like a pod",
        "NOTREADY",
        "ctr --address",
    ):
        assert needle in section, needle


def _anchors(markdown: str) -> set[str]:
    """The anchors a Markdown renderer gives `markdown`'s headings, as GitHub makes them:
    lower case, punctuation other than `-` and `_` dropped, spaces to `-`, `-1`, `-2`... for
    a heading seen before."""
    seen: dict[str, int] = {}
    anchors = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        text = line.lstrip("#").strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def test_every_relative_link_in_the_docs_resolves() -> None:
    """Each link from the README and docs/*.md to a file of this repository names a file that
    exists, and a `#fragment` names a heading of that file."""
    pages = [docgen.ROOT / "README.md", *sorted((docgen.ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        text = page.read_text()
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif (
                fragment and linked.suffix == ".md" and fragment not in _anchors(linked.read_text())
            ):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_readme_starts_with_the_two_commands_and_stays_short() -> None:
    """The README's first code block is the two commands that set up a fresh machine (the
    demo node, the whole test suite), the 3 a.m. workflow comes next, and the reference lives
    in docs/: the README stays under 200 lines."""
    readme = (docgen.ROOT / "README.md").read_text()
    blocks = re.findall(r"```sh\n(.*?)```", readme, flags=re.DOTALL)
    commands = [line.split("#")[0].strip() for line in blocks[0].splitlines()]
    assert [c for c in commands if c] == ["scripts/demo", "scripts/test"]
    assert "kubegc df" in blocks[1] and "kubegc reclaim" in blocks[1]
    assert len(readme.splitlines()) < 200
