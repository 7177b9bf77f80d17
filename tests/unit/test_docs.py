"""Man page, CLI reference and completions are generated from the click tree and kept fresh."""

from __future__ import annotations

from kubegc_cli.cli import docgen
from kubegc_cli.cli.main import cli


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
        assert f".SS {' '.join(path)}" in page
    for code in ("0", "1", "2", "3", "4"):
        assert f"\n {code}" in page


def test_every_command_has_its_own_man_page() -> None:
    files = docgen.outputs()
    for path, _ in docgen.walk(cli):
        if len(path) == 1:
            continue
        page = files[docgen.ROOT / "man" / f"{'-'.join(path)}.1"]
        assert page.startswith(f".TH {'-'.join(path).upper()} 1")
        assert f".B {' '.join(path)}".replace("-", "\\-") in page
        assert "kubegc(1)" in page
    assert docgen.leftovers(files) == []  # no page of a command that is gone


def test_readme_residue_section_documents_what_decides_safety() -> None:
    """The README's residue section says which mount table is read and what an unreadable
    one means, the grace periods, what needs the host's processes (and what happens in a pod
    with another --host-root), the host-network case, and the split of `action` (what clean
    does) from `manual_action` (what to run by hand)."""
    readme = (docgen.ROOT / "README.md").read_text()
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
