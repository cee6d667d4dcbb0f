"""The plugin is only the model: `--user-dir bahdanau_plugin` loads the models and what they need,
while the tools beside it (bahdanau_tools: data preparation, evaluation, figures, alignment
drawing) import the plugin, never the reverse, and one another without a cycle."""

import ast
import importlib.util
import json
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Set

import pytest

from ..support.paths import PLUGIN, REPO
from ..support.tools import python_program

TOOLS = REPO / "bahdanau_tools"
TOOLS_LIBRARIES = ("subword_nmt", "sacremoses", "matplotlib")
FORMER_PLUGIN_TOOLS = (
    "bahdanau_plugin.data",
    "bahdanau_plugin.evaluation",
    "bahdanau_plugin.alignment",
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


TOOLS_MODULES = sorted(_module_name(path) for path in TOOLS.rglob("*.py"))
PLUGIN_MODULES = sorted(_module_name(path) for path in Path(PLUGIN).rglob("*.py"))


def _modules_after(code: str) -> Set[str]:
    """The names in sys.modules after a fresh interpreter has run code."""
    completed = python_program(f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))")
    return set(json.loads(completed.stdout.splitlines()[-1]))


@pytest.fixture(scope="module")
def modules_of_user_dir() -> Set[str]:
    """What fairseq's tools have imported once they have loaded --user-dir bahdanau_plugin."""
    return _modules_after(
        "import argparse\nfrom fairseq import utils\n"
        f"utils.import_user_module(argparse.Namespace(user_dir={PLUGIN!r}))"
    )


def _within(modules: Set[str], packages) -> List[str]:
    """The modules that are one of packages or inside one."""
    return sorted(
        name
        for name in modules
        if any(name == package or name.startswith(package + ".") for package in packages)
    )


def test_user_dir_loads_no_module_of_the_tools(modules_of_user_dir):
    assert _within(modules_of_user_dir, ("bahdanau_tools",) + FORMER_PLUGIN_TOOLS) == []


def test_user_dir_loads_none_of_the_libraries_only_the_tools_use(modules_of_user_dir):
    """subword-nmt, sacremoses and matplotlib. Not sacrebleu, which the evaluation uses too:
    fairseq imports it on its own (fairseq.scoring), with or without the plugin."""
    assert _within(modules_of_user_dir, TOOLS_LIBRARIES) == []


def test_the_server_loads_no_figure_module():
    """bahdanau-serve sends alignments as numbers (its page draws them): no matplotlib."""
    modules = _modules_after("import bahdanau_tools.serving.command_line")
    drawing = ("matplotlib", "bahdanau_tools.figures", "bahdanau_tools.heatmaps")
    assert _within(modules, drawing) == []


def test_every_module_of_the_tools_imports_in_a_fresh_interpreter():
    python_program("\n".join(f"import {name}" for name in TOOLS_MODULES))


def _imported_modules(path: Path) -> Iterator[str]:
    """Every module a file imports, at its top or inside a function, relative imports resolved; for
    `from A import B` both A and A.B, since B may be a module."""
    package = (
        _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    )
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), package)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def _tools_part(module: str) -> Optional[str]:
    """bahdanau_tools.evaluation.bleu -> bahdanau_tools.evaluation; None outside the tools'
    parts."""
    names = module.split(".")
    return ".".join(names[:2]) if names[0] == "bahdanau_tools" and len(names) > 1 else None


def _tools_module(module: str) -> Optional[str]:
    return module if module in TOOLS_MODULES else None


def _import_graph(
    node_of: Callable[[str], Optional[str]], root: Path = TOOLS
) -> Dict[str, Set[str]]:
    """Which node of the package at root imports which other, a node being what node_of makes of
    a module."""
    graph = {}
    for path in root.rglob("*.py"):
        importer = node_of(_module_name(path))
        if importer is not None:
            imported = {node_of(module) for module in _imported_modules(path)}
            graph.setdefault(importer, set()).update(imported - {None, importer})
    return graph


def _find_cycle(graph: Dict[str, Set[str]]) -> List[str]:
    """One cycle of the graph as [a, b, ..., a], or [] if it has none."""
    finished, path = set(), []

    def visit(node: str) -> List[str]:
        if node in path:
            return path[path.index(node) :] + [node]
        if node in finished:
            return []
        path.append(node)
        for target in sorted(graph.get(node, ())):
            cycle = visit(target)
            if cycle:
                return cycle
        path.pop()
        finished.add(node)
        return []

    for start in sorted(graph):
        cycle = visit(start)
        if cycle:
            return cycle
    return []


def test_the_tools_modules_import_one_another_without_a_cycle():
    assert _find_cycle(_import_graph(_tools_module)) == []


def test_the_tools_parts_depend_on_one_another_without_a_cycle():
    """The parts: data, evaluation, hub, alignment, words, heatmaps, figures, serving, errors..."""
    assert _find_cycle(_import_graph(_tools_part)) == []


def test_the_plugin_s_modules_import_one_another_without_a_cycle():
    """Imports inside functions count too: none may hide a cycle (the modules ask the fast path,
    speed/, to compile their code; it never imports them)."""
    graph = {  # a module's own packages are imported before it: no edge back to them
        module: {target for target in targets if not module.startswith(target + ".")}
        for module, targets in _import_graph(
            lambda name: name if name in PLUGIN_MODULES else None, root=Path(PLUGIN)
        ).items()
    }
    assert _find_cycle(graph) == []


def test_no_module_of_the_plugin_imports_the_tools_even_inside_a_function():
    plugin_imports = {
        module for path in Path(PLUGIN).rglob("*.py") for module in _imported_modules(path)
    }
    assert _within(plugin_imports, ("bahdanau_tools",)) == []
