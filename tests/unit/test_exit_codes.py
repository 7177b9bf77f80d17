"""One meaning per exit code on every command: `core.errors.ExitCode` is the one list, its
`EXIT_MEANINGS` the README's table, the man pages' EXIT STATUS and `kubegc --help`'s line; no
place in kubegc exits with a number of its own."""

from __future__ import annotations

import ast
import re

from kubegc_cli.cli import docgen
from kubegc_cli.cli.main import cli
from kubegc_cli.core.errors import EXIT_MEANINGS, ExitCode, KubegcError

PACKAGE = docgen.ROOT / "kubegc_cli"


def test_every_exit_code_has_one_meaning() -> None:
    assert list(EXIT_MEANINGS) == list(ExitCode)
    assert len(set(EXIT_MEANINGS.values())) == len(ExitCode)
    assert len({int(c) for c in ExitCode}) == len(ExitCode)  # no alias: one name per number


def test_the_readme_table_is_the_one_list() -> None:
    readme = (docgen.ROOT / "README.md").read_text()
    section = readme.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| (\d+) \| (.*) \|$", section, flags=re.MULTILINE)
    assert [int(code) for code, _ in rows] == [int(c) for c in ExitCode]
    for code, meaning in rows:
        assert meaning.replace("\\|", "|") == EXIT_MEANINGS[ExitCode(int(code))]
    assert readme.count("\n## Exit codes\n") == 1


def test_the_help_names_every_exit_code() -> None:
    text = " ".join((cli.help or "").split())
    said = text.split("Exit codes, the same on every command", 1)[1]
    for code in ExitCode:
        assert re.search(rf"\b{int(code)}\b", said), code


def _literal_exits(tree: ast.AST) -> list[tuple[int, str]]:
    """Calls `sys.exit(N)`, `os._exit(N)`, `fail(..., N)` and assignments `exit_code = N`
    with a literal number N other than through `ExitCode`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            if name in ("sys.exit", "os._exit", "exit", "fail", "ctx.exit") and node.args:
                arg = node.args[-1]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, int):
                    found.append((node.lineno, ast.unparse(node)))
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [ast.unparse(t) for t in targets]
            value = node.value
            if (
                any(n.endswith("exit_code") or n == "code" for n in names)
                and isinstance(value, ast.Constant)
                and isinstance(value.value, int)
                and value.value != 0
            ):
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_exits_with_a_number_of_its_own() -> None:
    stray = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cri/v1" in str(path):
            continue  # generated protobuf stubs
        found = _literal_exits(ast.parse(path.read_text()))
        if found:
            stray[str(path.relative_to(docgen.ROOT))] = found
    assert stray == {}


def test_the_literal_exit_finder_finds_what_it_looks_for() -> None:
    tree = ast.parse(
        "import sys\nsys.exit(1)\nexit_code = 7\nfail('x', 2)\nsys.exit(ExitCode.OK)\n"
    )
    assert sorted(line for line, _ in _literal_exits(tree)) == [2, 3, 4]


def test_every_error_type_carries_a_listed_code() -> None:
    def subclasses(cls: type) -> list[type]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    # (the error types of every layer: importing the report layer brings MetricsError)
    import kubegc_cli.report.run  # noqa: F401

    for err in subclasses(KubegcError):
        assert isinstance(err.exit_code, ExitCode) and err.exit_code in EXIT_MEANINGS, err
