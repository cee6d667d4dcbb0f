"""What the code and the documents name exists: every repository path (``bench/common.py``,
``docs/performance.md``), every dotted module (``bahdanau_plugin.speed.setting``,
``bench.benchmark``) and every member of the repository's classes
(``ConditionalGRUDecoder.context``) they refer to.

Read: every .py and .sh file under bahdanau_plugin, bahdanau_tools, bench and scripts, every .md
file under docs and bench, and README.md. A path counts as a reference to the repository only if
its first component is one of the repository's own top-level entries (what git tracks there), so
that fairseq's paths (``fairseq/models/lstm.py``), URLs, paths relative to a document's folder or a
package (``speed/cpu/gru.py``) and a clone's own outputs (``checkpoints/``) are left out.

Left out as well:
- placeholders: a component in capitals (``bench/NAME.py``, ``OUT/evaluation``) or with a
  wildcard (``docs/gpu/*.json``);
- the retired investigations that bench/README.md lists with the commit that last had them
  (``bench/kernels.py``, ``bench.kernels``): a reference to history, which ``git show`` reaches;
- what is named with its commit (``git show 3433549:scripts/prepare_multi30k.py``): the way to
  refer to any other file the repository no longer has.
"""

import ast
import fnmatch
import importlib
import inspect
import re
import subprocess
import textwrap
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

REPO = Path(__file__).resolve().parents[2]
CODE_FOLDERS = ("bahdanau_plugin", "bahdanau_tools", "bench", "scripts")
DOCUMENT_FOLDERS = ("docs", "bench")
PACKAGES = ("bahdanau_plugin", "bahdanau_tools", "bench", "tests")
# The packages whose classes' members are checked (imported to be read).
CLASS_PACKAGES = ("bahdanau_plugin", "bahdanau_tools", "bench")

# A path: components of letters, digits, '_', '-' and '.', separated by '/', at least one '/';
# not preceded by what would make it the tail of a longer path or of a URL (../shared/data,
# https://github.com/..., COMMIT:bench/NAME.py, $out/checkpoints).
PATH = re.compile(r"(?<![\w./:$~@{-])((?:[\w.-]+/)+[\w.*-]*)")
# A dotted module of the repository's packages, with or without attributes after it.
MODULE = re.compile(r"(?<![\w./-])((?:%s)(?:\.\w+)+)(?![\w-])" % "|".join(PACKAGES))
# A class's member: a capitalized name, a dot, a lowercase one (``GRUEncoder.forward``).
MEMBER = re.compile(r"(?<![\w.])([A-Z]\w*\.(?:__|_?[a-z])\w*)")


def repository_files() -> List[Path]:
    """The files whose references are checked."""
    files = [REPO / "README.md"]
    for folder in CODE_FOLDERS:
        files += sorted((REPO / folder).rglob("*.py")) + sorted((REPO / folder).rglob("*.sh"))
    for folder in DOCUMENT_FOLDERS:
        files += sorted((REPO / folder).rglob("*.md"))
    return [path for path in files if "__pycache__" not in path.parts]


@lru_cache(maxsize=None)
def top_level_entries() -> Set[str]:
    """The repository's own top-level files and folders: what git tracks there, or outside a git
    checkout what the root holds, hidden entries and what .gitignore names left out (a clone's
    checkpoints/ or demo/ are not the repository's)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        listed = []
    if listed:
        return {line.split("/", 1)[0] for line in listed} - {".gitignore"}
    ignored = [
        line.strip().strip("/")
        for line in (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return {
        entry.name
        for entry in REPO.iterdir()
        if not entry.name.startswith(".")
        and not any(fnmatch.fnmatch(entry.name, pattern) for pattern in ignored)
    }


@lru_cache(maxsize=None)
def retired_scripts() -> Set[str]:
    """The names of the investigations bench/README.md lists as retired (``kernels``, ...)."""
    text = (REPO / "bench" / "README.md").read_text(encoding="utf-8")
    retired = text.split("## Retired investigations", 1)[1]
    return set(re.findall(r"^\| `(\w+)` \|", retired, flags=re.M))


# Names in capitals that are files, not placeholders.
CAPITALIZED_FILES = {"README", "LICENSE", "CHANGELOG", "CONTRIBUTING"}


def is_placeholder(component: str) -> bool:
    """``NAME``, ``OUT``, ``COMMIT``, ``*.json``: a component that stands for others."""
    stem = component.split(".", 1)[0]
    if "*" in component:
        return True
    return stem.isupper() and len(stem) > 1 and stem not in CAPITALIZED_FILES


def references(pattern: re.Pattern) -> Iterator[Tuple[str, str]]:
    """(where, token) for every match of ``pattern`` in the files read: where is path:line."""
    for path in repository_files():
        lines = path.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            for match in pattern.finditer(line):
                yield f"{path.relative_to(REPO)}:{number}", match.group(1)


def stale_path(token: str) -> Optional[str]:
    """The path ``token`` names, if it is a repository path that does not exist; else None."""
    path = token.split("#", 1)[0].rstrip(".,;:")
    components = [c for c in path.split("/") if c]
    if len(components) < 2 or components[0] not in top_level_entries():
        return None
    if any(is_placeholder(c) for c in components):
        return None
    if components[0] == "bench" and len(components) == 2:
        if components[1].removesuffix(".py") in retired_scripts():
            return None
    return None if (REPO / path).exists() else path


def defined_names(source: Path) -> Dict[str, ast.AST]:
    """The names a module defines at its top level (functions, classes, assignments, imports)."""
    names: Dict[str, ast.AST] = {}
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        names[name.id] = node
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".", 1)[0]] = node
    return names


def module_source(components: List[str]) -> Optional[Path]:
    """The file of the module these components name (a package's __init__.py), if any."""
    path = REPO.joinpath(*components)
    if (path / "__init__.py").exists():
        return path / "__init__.py"
    if path.with_suffix(".py").exists():
        return path.with_suffix(".py")
    return None


def stale_module(token: str) -> Optional[str]:
    """What of the dotted name ``token`` does not exist (``bench.kernels``, or the attribute
    ``bahdanau_plugin.speed.setting.NO_SUCH_NAME``), if anything; else None."""
    components = token.split(".")
    if components[0] == "bench" and len(components) >= 2 and components[1] in retired_scripts():
        return None
    deepest = max(n for n in range(1, len(components) + 1) if module_source(components[:n]))
    rest = components[deepest:]
    if not rest or rest[0].startswith("__"):  # a module's own attribute (``__file__``)
        return None
    source = module_source(components[:deepest])
    names = defined_names(source)
    if rest[0] not in names:
        if source.name == "__init__.py" and is_placeholder(rest[0]):
            return None  # a placeholder for a module: ``python -m bench.NAME``
        return ".".join(components[: deepest + 1])
    node = names[rest[0]]
    if len(rest) > 1 and isinstance(node, ast.ClassDef) and rest[1] not in class_members(node):
        return ".".join(components[: deepest + 2])
    return None


def class_members(node: ast.ClassDef) -> Set[str]:
    """The names a class body defines: methods, nested classes, class attributes."""
    members = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            members.add(item.name)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            members |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return members


@lru_cache(maxsize=None)
def repository_classes() -> Dict[str, List[type]]:
    """The classes defined at the top level of the modules of CLASS_PACKAGES, by name."""
    classes: Dict[str, List[type]] = {}
    for package in CLASS_PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
            if not names:
                continue
            parts = path.relative_to(REPO).with_suffix("").parts
            module = importlib.import_module(".".join(parts).removesuffix(".__init__"))
            for name in names:
                classes.setdefault(name, []).append(getattr(module, name))
    return classes


def instance_attributes(cls: type) -> Set[str]:
    """What the methods of ``cls`` and of its bases in the repository assign to ``self``."""
    attributes = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith(CLASS_PACKAGES):
            continue
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(klass)))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                attributes.add(node.attr)
    return attributes


def stale_member(token: str) -> Optional[str]:
    """``token`` (Class.member) if Class is one of the repository's classes and none of that name
    has the member (as an attribute of the class or one its methods set); else None."""
    class_name, member = token.split(".", 1)
    candidates = repository_classes().get(class_name)
    if not candidates:
        return None
    if any(hasattr(cls, member) or member in instance_attributes(cls) for cls in candidates):
        return None
    return token


def listing(stale: List[Tuple[str, str]]) -> str:
    return "\n".join(f"  {where}: {name}" for where, name in stale)


def test_every_repository_path_the_code_and_the_documents_name_exists():
    stale = [(where, path) for where, token in references(PATH) if (path := stale_path(token))]
    assert not stale, "paths that do not exist in the repository:\n" + listing(stale)


def test_every_module_of_the_repository_the_code_and_the_documents_name_exists():
    stale = [(where, name) for where, token in references(MODULE) if (name := stale_module(token))]
    assert not stale, "modules or names that the repository does not define:\n" + listing(stale)


def test_every_member_of_the_repository_s_classes_the_code_and_the_documents_name_exists():
    stale = [(where, name) for where, token in references(MEMBER) if (name := stale_member(token))]
    assert not stale, "members that the repository's classes do not have:\n" + listing(stale)
