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
