"""The package's folders are the flow of docs/ARCHITECTURE.md, one layer each, and the imports
keep them so.

    core      plain data, units, errors, settings        imports nothing of kubegc's
    policy    the kubelet's rules, pure                  core
    node      reads and changes the node                 core, node
    commands  one module per command group + flow        core, policy, node, commands
    render    the only package that imports rich         anything but cli
    report    run records, metrics, events               anything but agent, cli
    agent     the DaemonSet form: cycles, slots, server   anything but cli
    cli       click only, one module per group           anything; nothing imports cli

Every import counts, the ones inside functions too, and a module named as "module:attribute"
(imported by name when it is needed) counts as imported where it is named. An import inside a
function (of kubegc's own modules or a third-party package, or by name through importlib; the
standard library's are not counted) is allowed only where a start-up test pins it: its line, or
a comment line right above its run of import lines, says which test, as
`# deferred: tests/<file>.py::<test>`, and that test exists.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kubegc_cli"
GENERATED = PACKAGE / "node" / "cri" / "v1"

LAYERS = ("core", "policy", "node", "commands", "render", "report", "agent", "cli")
# What each layer may import of kubegc's (besides itself).
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    "policy": {"core"},
    "node": {"core"},
    "commands": {"core", "policy", "node"},
    "render": {"core", "policy", "node", "commands"},
    "report": {"core", "policy", "node", "commands", "render"},
    "agent": {"core", "policy", "node", "commands", "render", "report"},
    "cli": {"core", "policy", "node", "commands", "render", "report", "agent"},
}
# Third-party packages only one layer may import.
ONLY_IN = {"rich": "render", "click": "cli"}
# The layers that import the standard library only (but for these, each where it is needed).
STDLIB_ONLY = {"core": {"yaml"}, "policy": set()}
# What start-up defers: packages slow to load, or (click) loaded after `--version` answers.
HEAVY = {"grpc", "google", "kubernetes", "urllib3", "rich", "yaml", "psutil", "click"}
# Modules outside the layers: the package itself and its `python -m` entry.
TOP = {"kubegc_cli", "kubegc_cli.__main__"}
NAMED = re.compile(r"(kubegc_cli(?:\.\w+)+):(\w+)")
#: The start-up tests a `# deferred:` note may name: each fails when what it guards loads early.
START_UP_TESTS = {
    "tests/unit/test_cli.py::test_help_and_version_do_not_import_heavy_modules",
    "tests/unit/test_cli.py::test_a_stop_signal_during_start_up_is_a_clean_exit",
    "tests/unit/test_startup.py::test_a_plain_dry_run_loads_no_heavy_package",
    "tests/unit/test_startup.py::test_a_command_loads_its_own_group_only",
    "tests/unit/test_render_plain.py::test_a_dry_run_table_into_a_pipe_does_not_import_rich",
    "tests/unit/test_evict_check_cache.py::test_a_second_run_uses_the_cache_and_never_imports_grpc",
    "tests/unit/test_metrics.py::test_help_writes_no_metrics_and_imports_no_heavy_module",
}
DEFERRED = re.compile(r"#\s*deferred:\s*(tests/[\w/]+\.py)::(\w+)")


@dataclass(frozen=True)
class Imp:
    """One import statement: the importing module, what it names, where, and how."""

    module: str
    target: str  # the dotted module imported (for `from a import b` where a.b is a module: a.b)
    names: tuple[str, ...]
    path: Path
    line: int
    in_function: bool


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def sources() -> Iterator[Path]:
    for path in sorted(PACKAGE.rglob("*.py")):
        if GENERATED not in path.parents:
            yield path


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def imports() -> Iterator[Imp]:
    for path in sources():
        mod = module_name(path)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        yield from _walk(tree, mod, package, path, False)


def _walk(node: ast.AST, mod: str, package: str, path: Path, in_fn: bool) -> Iterator[Imp]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Import):
            for alias in child.names:
                yield Imp(mod, alias.name, (), path, child.lineno, in_fn)
        elif isinstance(child, ast.ImportFrom):
            base = child.module or ""
            if child.level:
                up = package.split(".")[: len(package.split(".")) - child.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            names = tuple(a.name for a in child.names)
            submodules = [f"{base}.{n}" for n in names if f"{base}.{n}" in MODULES]
            for target in submodules or [base]:
                yield Imp(mod, target, names, path, child.lineno, in_fn)
        elif isinstance(child, ast.Constant) and isinstance(child.value, str):
            named = NAMED.fullmatch(child.value)
            if named and named.group(1) in MODULES:  # "module:attribute", imported by name
                yield Imp(mod, named.group(1), (named.group(2),), path, child.lineno, False)
        elif _imports_by_name(child):
            assert isinstance(child, ast.Call)
            yield Imp(mod, _name_imported(child), (), path, child.lineno, in_fn)
        fn = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        yield from _walk(child, mod, package, path, in_fn or fn)


#: Functions that import a module by its name.
IMPORTERS = {"import_module", "__import__", "resolve_name", "find_spec", "spec_from_file_location"}
#: A name imported by a value the walk cannot read (`BY_VALUE`) is allowed only here: the root
#: group imports the modules `"module:attribute"` constants name (checked as imports above).
BY_VALUE = "<a name not spelled out>"
IMPORTS_BY_VALUE = {"kubegc_cli.cli.command"}


def _imports_by_name(node: ast.AST) -> bool:
    """A call of `importlib.import_module`, `__import__` and the like (under any alias: the
    name of the function is what counts): an import the statements miss."""
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    return name in IMPORTERS or name in _IMPORTER_ALIASES


def _importer_aliases() -> set[str]:
    """Names an importing function is bound to (`from importlib import import_module as load`)."""
    names = set()
    for path in sources():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom):
                names |= {a.asname for a in node.names if a.name in IMPORTERS and a.asname}
    return names


def _name_imported(call: ast.Call) -> str:
    """The absolute module name an importing call names, or `BY_VALUE` when it is not a
    constant absolute name (a variable, an f-string, a relative name with its package)."""
    args = [*call.args, *(k.value for k in call.keywords if k.arg == "name")]
    first = args[0] if args else None
    if len(call.args) > 1 or not isinstance(first, ast.Constant):
        return BY_VALUE
    value = first.value
    if not isinstance(value, str) or value.startswith(".") or not value:
        return BY_VALUE
    return value.partition(":")[0]


def layer_of(mod: str) -> str | None:
    parts = mod.split(".")
    if parts[0] != "kubegc_cli" or len(parts) < 2 or mod in TOP:
        return None
    return parts[1]


_IMPORTER_ALIASES = _importer_aliases()
ALL = list(imports())
OWN = [i for i in ALL if i.target.split(".")[0] == "kubegc_cli"]


def where(i: Imp) -> str:
    return f"{i.path.relative_to(ROOT)}:{i.line}"


def test_every_module_is_in_a_layer() -> None:
    stray = sorted(m for m in MODULES if m not in TOP and layer_of(m) not in LAYERS)
    assert not stray, f"modules outside the layers {LAYERS}: {stray}"


def test_each_layer_imports_only_the_layers_below_it() -> None:
    bad = []
    for i in OWN:
        src, dst = layer_of(i.module), layer_of(i.target)
        if src is None or dst is None or src == dst:
            continue
        if dst not in ALLOWED[src]:
            bad.append(f"{where(i)}: {src} imports {dst} ({i.target})")
    assert not bad, "\n".join(bad)


def test_a_module_is_imported_by_a_name_spelled_out() -> None:
    """`import_module(variable)` could import anything: only the root group does that, for the
    `"module:attribute"` names it is given."""
    bad = [f"{where(i)}" for i in ALL if i.target == BY_VALUE and i.module not in IMPORTS_BY_VALUE]
    assert not bad, "modules imported by a name the rules cannot read:\n" + "\n".join(bad)


def test_the_entry_points_reach_only_the_cli() -> None:
    bad = [
        f"{where(i)}: {i.target}"
        for i in OWN
        if i.module in TOP and i.target not in TOP and layer_of(i.target) != "cli"
    ]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("package", sorted(ONLY_IN))
def test_a_third_party_package_is_imported_by_its_layer_only(package: str) -> None:
    owner = ONLY_IN[package]
    bad = [
        f"{where(i)}: {i.target}"
        for i in ALL
        if i.target.split(".")[0] == package and layer_of(i.module) != owner
    ]
    assert not bad, f"{package} outside {owner}/:\n" + "\n".join(bad)


@pytest.mark.parametrize("layer", sorted(STDLIB_ONLY))
def test_core_and_policy_import_the_standard_library_only(layer: str) -> None:
    allowed = STDLIB_ONLY[layer]
    bad = []
    for i in ALL:
        top = i.target.split(".")[0]
        if layer_of(i.module) != layer or top in sys.stdlib_module_names or top == "kubegc_cli":
            continue
        if top not in allowed or not i.in_function:
            bad.append(f"{where(i)}: {i.target}")
    assert not bad, f"{layer}/ beyond the standard library:\n" + "\n".join(bad)


def heavy_modules() -> set[str]:
    """kubegc's modules that load a `HEAVY` package when imported (at their top, or through a
    module they import at their top)."""
    top_level: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in ALL:
        if not i.in_function:
            top_level[i.module].add(i.target)
    heavy = {m for m, ts in top_level.items() if any(t.split(".")[0] in HEAVY for t in ts)}
    while True:
        more = {m for m, ts in top_level.items() if m not in heavy and ts & heavy}
        if not more:
            return heavy
        heavy |= more


def test_no_module_imports_another_modules_private_names() -> None:
    bad = [
        f"{where(i)}: {i.target}.{n}"
        for i in OWN
        for n in i.names
        if n.startswith("_") and not n.startswith("__") and i.target != i.module
    ]
    assert not bad, "\n".join(bad)


def test_no_module_reaches_a_private_name_through_a_module_it_imported() -> None:
    """`from kubegc_cli.node.host import residue as scanners; scanners._rule(...)`,
    `kubegc_cli.node.state._kind`, `getattr(state, "_x")`: the same reach into another
    module's privates as importing `_rule`."""
    bad = []
    for path in sources():
        mod = module_name(path)
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        tree = ast.parse(path.read_text(), str(path))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                for a in node.names:
                    if f"{base}.{a.name}" in MODULES:
                        aliases[a.asname or a.name] = f"{base}.{a.name}"
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name.startswith("kubegc_cli"):
                        aliases[a.asname or a.name.partition(".")[0]] = (a.asname and a.name) or ""

        for node in ast.walk(tree):
            reached = None
            if isinstance(node, ast.Attribute) and _private(node.attr):
                reached = _module_of(node.value, aliases, mod), node.attr
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "setattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and isinstance(node.args[1].value, str)
                and _private(node.args[1].value)
            ):
                reached = _module_of(node.args[0], aliases, mod), node.args[1].value
            if reached and reached[0]:
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}: {reached[0]}.{reached[1]}")
    assert not bad, "\n".join(bad)


def _module_of(expr: ast.expr, aliases: dict[str, str], mod: str) -> str | None:
    """The kubegc module (other than `mod`) that `expr` names through `aliases` (the names a
    module's imports bound) or spelled out (`kubegc_cli.node.state`), else None."""
    dotted = _dotted(expr)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    full = aliases.get(head) or (dotted if head == "kubegc_cli" else None)
    if full and rest and aliases.get(head):
        full = f"{full}.{rest}"
    return full if full in MODULES and full != mod else None


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _dotted(expr: ast.expr) -> str | None:
    """`a.b.c` of a chain of names and attributes, else None."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    return ".".join([expr.id, *reversed(parts)])


def test_there_are_no_import_cycles() -> None:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for i in OWN:
        target = i.target
        while target not in MODULES and "." in target:
            target = target.rpartition(".")[0]
        if target != i.module and target in MODULES:
            graph[i.module].add(target)
    cycles = _cycles(graph)
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_an_import_inside_a_function_names_the_start_up_test_that_pins_it() -> None:
    heavy = heavy_modules()
    bad = []
    for i in ALL:
        stdlib = i.target.split(".")[0] in sys.stdlib_module_names
        if not i.in_function or stdlib:
            continue
        said = _deferred_note(i.path.read_text().splitlines(), i.line - 1)
        if said is None:
            bad.append(f"{where(i)}: {i.target} imported inside a function, no `# deferred:`")
            continue
        reach = i.target
        while reach not in MODULES and "." in reach:
            reach = reach.rpartition(".")[0]
        if i.target.split(".")[0] not in HEAVY | {BY_VALUE} and reach not in heavy:
            bad.append(f"{where(i)}: {i.target} loads nothing heavy: import it at the top")
            continue
        if f"{said.group(1)}::{said.group(2)}" not in START_UP_TESTS:
            bad.append(f"{where(i)}: {said.group(2)} is not a start-up test")
            continue
        test_file, test_name = ROOT / said.group(1), said.group(2)
        if not test_file.is_file() or f"def {test_name}(" not in test_file.read_text():
            bad.append(f"{where(i)}: {said.group(1)}::{test_name} does not exist")
    assert not bad, "\n".join(bad)


def _deferred_note(lines: list[str], at: int) -> re.Match[str] | None:
    """The `# deferred:` note of the import at line index `at`: on its line, or on the comment
    line right above the run of import lines it belongs to."""
    said = DEFERRED.search(lines[at])
    while said is None and at > 0:
        at -= 1
        above = lines[at].strip()
        said = DEFERRED.search(above)
        if not above.startswith(("from ", "import ")):
            break
    return said


def test_the_rule_test_sees_what_it_checks() -> None:
    """The walk finds the package's imports, the ones inside functions included (a walk that
    found none would pass every rule above)."""
    assert len(MODULES) > 50 and len(OWN) > 300
    assert any(i.in_function for i in ALL)
    assert {layer_of(m) for m in MODULES} >= set(LAYERS)
