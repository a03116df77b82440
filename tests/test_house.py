"""The house rules: the public API is a checked-in list, documented; every module is public or private;
imports point down the layers; ARCHITECTURE.md names what exists.

Regenerate the API list after a deliberate change with ``python tests/test_house.py --write``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "vidlabel"
API_FILE = Path(__file__).with_name("public_api.txt")
REGENERATE = "python tests/test_house.py --write"

#: The public modules: the package, its concept packages, and the modules of the spec's import paths.
PUBLIC_MODULES = (
    "vidlabel",
    "vidlabel_spec",
    "vidlabel.video",
    "vidlabel.dataset",
    "vidlabel.samples",
    "vidlabel.export",
    "vidlabel.store",
    "vidlabel.torch_data",
    "vidlabel.formats",
    "vidlabel.errors",
    "vidlabel.spec",
    "vidlabel.geometry",
    "vidlabel.schema",
    "vidlabel.clip",
    "vidlabel.cli",
    "vidlabel.demo",
    "vidlabel.viewer",
    "vidlabel.frames",
    "vidlabel.readplan",
    "vidlabel.probe",
    "vidlabel.validate",
)
#: Public modules that may not exist yet (being written on another branch): listed when they import.
OPTIONAL = frozenset({"vidlabel.formats"})

#: The layers, lowest first: a module may import its own layer and the layers below it, never above.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"vidlabel.errors", "vidlabel.spec", "vidlabel.geometry", "vidlabel._version", "vidlabel._env"})
    | {"vidlabel._words", "vidlabel._json", "vidlabel._lru", "vidlabel._command", "vidlabel.schema", "vidlabel.clip"}
    | {"vidlabel._attribute_rows"},
    frozenset({"vidlabel.video", "vidlabel.probe", "vidlabel.frames", "vidlabel.readplan"}),
    frozenset({"vidlabel.dataset", "vidlabel.validate"}),
    frozenset({"vidlabel.store"}),
    frozenset({"vidlabel.samples"}),
    frozenset({"vidlabel.export"}),
    frozenset({"vidlabel.formats"}),
    frozenset({"vidlabel.torch_data"}),
    frozenset({"vidlabel.cli", "vidlabel.demo", "vidlabel._demo_truth", "vidlabel.viewer", "vidlabel.__main__"}),
)
#: The package's ``__init__`` re-exports from every layer: it sits on top (only the name itself, not what is inside).
_TOP = {"vidlabel": len(LAYERS) - 1}


def _in_tree(module: str) -> bool:
    """The module's source is in this checkout (not merely importable from another one on the path)."""
    path = ROOT.joinpath(*module.split("."))
    return (path / "__init__.py").exists() or path.with_suffix(".py").exists()


def public_modules() -> list[str]:
    return [m for m in PUBLIC_MODULES if m not in OPTIONAL or _in_tree(m)]


def live_api() -> list[str]:
    """``module:name`` of every name in every public module's ``__all__``, sorted."""
    out = []
    for name in public_modules():
        module = importlib.import_module(name)
        names = getattr(module, "__all__", None)
        assert names is not None, f"public module {name} has no __all__"
        out += [f"{name}:{n}" for n in names]
    return sorted(out)


def test_public_api_is_the_checked_in_list() -> None:
    live = live_api()
    listed = [line for line in API_FILE.read_text().splitlines() if line and not line.startswith("#")]
    added = sorted(set(live) - set(listed))
    removed = sorted(set(listed) - set(live))
    assert not added and not removed, (
        f"the public API changed: added {added}, removed {removed}; if that is meant, regenerate "
        f"tests/public_api.txt with `{REGENERATE}` and commit the diff"
    )
    assert listed == live, f"tests/public_api.txt is not sorted or has repeats; regenerate it with `{REGENERATE}`"


def test_every_all_entry_exists_once() -> None:
    for name in public_modules():
        module = importlib.import_module(name)
        names = list(module.__all__)
        assert len(names) == len(set(names)), f"{name}.__all__ repeats a name"
        missing = [n for n in names if not hasattr(module, n)]
        assert not missing, f"{name}.__all__ names {missing}, which the module does not have"


def _parameters(obj: Any) -> list[str]:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return []
    return [p for p in sig.parameters if p not in ("self", "cls")]


_SECTION = re.compile(r"^Parameters\n-{3,}$", re.M)


def docstring_problems(qualname: str, obj: Any) -> list[str]:
    """What ``obj`` (a public class or function) lacks of a numpydoc docstring."""
    doc = inspect.getdoc(obj) if obj.__doc__ else None
    if not doc or not doc.strip().splitlines()[0].strip():
        return [f"{qualname}: no docstring summary line"]
    if inspect.isfunction(obj) and _parameters(obj) and not _SECTION.search(doc):
        return [f"{qualname}: takes {', '.join(_parameters(obj))} but its docstring has no Parameters section"]
    return []


#: Public names whose docstring is being rewritten on another branch (vidlabel/export/ is split there);
#: the test fails once one of them passes, so the entry is removed at the merge.
PENDING_DOCSTRINGS: frozenset[str] = frozenset()


def test_every_public_name_has_a_numpydoc_docstring() -> None:
    problems = {}
    for name in public_modules():
        module = importlib.import_module(name)
        for n in module.__all__:
            obj = getattr(module, n)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found = docstring_problems(f"{name}.{n}", obj)
                if found:
                    problems[f"{name}.{n}"] = found
    pending_done = sorted(PENDING_DOCSTRINGS - set(problems))
    assert not pending_done, f"{pending_done} now pass: remove them from test_house.PENDING_DOCSTRINGS"
    left = [line for name, found in problems.items() if name not in PENDING_DOCSTRINGS for line in found]
    assert not left, "\n".join(left)


def test_docstring_check_can_fail() -> None:
    def bare(x: int) -> int:
        """Add one."""
        return x + 1

    def documented(x: int) -> int:
        """Add one.

        Parameters
        ----------
        x : int
        """
        return x + 1

    class Undocumented:
        pass

    assert docstring_problems("bare", bare) == ["bare: takes x but its docstring has no Parameters section"]
    assert docstring_problems("documented", documented) == []
    assert docstring_problems("Undocumented", Undocumented) == ["Undocumented: no docstring summary line"]


def module_names() -> list[str]:
    """Dotted names of every module under vidlabel/ (packages by their ``__init__``)."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out.append(".".join(parts))
    return out


def _is_private(module: str) -> bool:
    return any(part.startswith("_") and part != "__main__" for part in module.split(".")[1:])


def test_every_module_is_public_or_private() -> None:
    public = set(PUBLIC_MODULES)
    # ``python -m vidlabel`` and ``python -m vidlabel.cli`` run the command: neither public nor private.
    mains = {"vidlabel.__main__", "vidlabel.cli.__main__"}
    neither = [m for m in module_names() if m not in public and not _is_private(m) and m not in mains]
    assert not neither, (
        f"modules neither public (in test_house.PUBLIC_MODULES, with __all__) nor private (a leading "
        f"underscore, or inside a private package): {neither}"
    )


def test_every_package_init_has_a_docstring() -> None:
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.split()) >= 5, f"{init.relative_to(ROOT)} needs a docstring saying what it holds"


# -- size: modules under MAX_MODULE_LINES lines, functions under MAX_FUNCTION_LINES lines of code ---------------

#: Lines a module may have (blank lines, comments and docstrings counted).
MAX_MODULE_LINES = 800
#: Lines of code a function may have: its docstring, comments and blank lines are not counted; a nested
#: function's lines count in the function around it too.
MAX_FUNCTION_LINES = 60

#: Modules over MAX_MODULE_LINES today, with their lines: each may shrink but not grow, and no other module may
#: pass the limit. An entry that is under the limit (or gone) fails the test until it is removed, so the list
#: only shrinks; an empty list is the whole rule.
LONG_MODULES: dict[str, int] = {}

#: Functions over MAX_FUNCTION_LINES today (``path:qualified name``), with their lines of code; the same rules
#: as LONG_MODULES.
LONG_FUNCTIONS: dict[str, int] = {}


def function_sizes(source: str) -> list[tuple[str, int]]:
    """(qualified name, lines of code) of every function in ``source``, methods and nested functions included.

    A line of code holds a token that is not a comment; the lines of a module's, class's or function's
    docstring are not code.
    """
    tree = ast.parse(source)
    docstrings: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                docstrings.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    code = {
        line
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type not in skip
        for line in range(tok.start[0], tok.end[0] + 1)
    }
    out: list[tuple[str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = range(child.lineno, (child.end_lineno or child.lineno) + 1)
                out.append((prefix + child.name, sum(1 for n in lines if n in code and n not in docstrings)))
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return out


def _over_limits() -> tuple[dict[str, int], dict[str, int]]:
    """The modules over MAX_MODULE_LINES and the functions over MAX_FUNCTION_LINES, with their sizes."""
    modules, functions = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > MAX_MODULE_LINES:
            modules[name] = len(source.splitlines())
        for qualname, lines in function_sizes(source):
            if lines > MAX_FUNCTION_LINES:
                functions[f"{name}:{qualname}"] = max(lines, functions.get(f"{name}:{qualname}", 0))
    return modules, functions


def size_problems(found: dict[str, int], allowed: dict[str, int], limit: int, what: str) -> list[str]:
    """What breaks the size rule: an entry of ``found`` (over ``limit``) not in ``allowed`` or grown past its
    allowed size, and an entry of ``allowed`` no longer found (under the limit, or gone)."""
    problems = [
        f"{name}: {size} {what}, over the limit of {limit}: split it by concept"
        for name, size in sorted(found.items())
        if name not in allowed
    ]
    problems += [
        f"{name}: grew to {size} {what} (allowed {allowed[name]} while it waits to be split; the limit is {limit})"
        for name, size in sorted(found.items())
        if name in allowed and size > allowed[name]
    ]
    problems += [
        f"{name}: no longer over {limit} {what}: remove it from the list in tests/test_house.py"
        for name in sorted(set(allowed) - set(found))
    ]
    return problems


def test_no_module_over_the_line_limit() -> None:
    problems = size_problems(_over_limits()[0], LONG_MODULES, MAX_MODULE_LINES, "lines")
    assert not problems, "\n".join(problems)


def test_no_function_over_the_code_line_limit() -> None:
    problems = size_problems(_over_limits()[1], LONG_FUNCTIONS, MAX_FUNCTION_LINES, "lines of code")
    assert not problems, "\n".join(problems)


def test_size_checks_can_fail() -> None:
    source = (
        '"""Module."""\n'
        "class A:\n"
        "    def f(self):\n"
        '        """Doc\n'
        '        more doc."""\n'
        "        # a comment\n"
        "\n"
        "        x = (1,\n"
        "             2)\n"
        "        def g():\n"
        "            return x\n"
        "        return g\n"
    )
    assert function_sizes(source) == [("A.f", 6), ("A.f.g", 2)]
    found = {"a.py": 900, "b.py": 850, "c.py": 801}
    assert size_problems(found, {"b.py": 840, "c.py": 900, "d.py": 1000}, 800, "lines") == [
        "a.py: 900 lines, over the limit of 800: split it by concept",
        "b.py: grew to 850 lines (allowed 840 while it waits to be split; the limit is 800)",
        "d.py: no longer over 800 lines: remove it from the list in tests/test_house.py",
    ]


def layer_of(module: str) -> int:
    """The layer of a vidlabel module: that of the longest layer entry it equals or lies inside."""
    if module in _TOP:
        return _TOP[module]
    best, depth = -1, -1
    for i, layer in enumerate(LAYERS):
        for entry in layer:
            if (module == entry or module.startswith(entry + ".")) and entry.count(".") > depth:
                best, depth = i, entry.count(".")
    if best < 0:
        raise AssertionError(f"module {module} is in no layer of test_house.LAYERS")
    return best


def _source_path(module: str) -> Path:
    path = ROOT.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def imports_in(source: str, package: str) -> list[tuple[str, int]]:
    """(imported vidlabel module, line) of every import in ``source``, deferred ones inside functions too.

    ``package`` resolves relative imports; ``from vidlabel.store import _layout`` counts as importing
    the module ``vidlabel.store._layout``.
    """
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "vidlabel"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = parts[: len(parts) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != "vidlabel":
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub if sub in _MODULES else base, node.lineno))
    return out


def imports_of(module: str) -> list[tuple[str, int]]:
    path = _source_path(module)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    return imports_in(path.read_text(), package)


_MODULES = frozenset(module_names())


def test_imports_point_down_the_layers() -> None:
    upward = []
    for module in module_names():
        mine = layer_of(module)
        for target, line in imports_of(module):
            if layer_of(target) > mine:
                upward.append(f"{module}:{line} imports {target} (layer {layer_of(target)} > {mine})")
    assert not upward, "imports must point down the layers:\n" + "\n".join(upward)


#: Packages held to fewer layers than their own allows, as ARCHITECTURE.md says: the store needs neither the
#: videos nor the dataset.
ONLY_LAYER_1 = ("vidlabel.store",)


def test_the_store_imports_only_layer_1() -> None:
    wider = []
    for module in module_names():
        if not any(module == p or module.startswith(p + ".") for p in ONLY_LAYER_1):
            continue
        own = module.split(".")[:2]
        for target, line in imports_of(module):
            if layer_of(target) > 0 and target.split(".")[:2] != own:
                wider.append(f"{module}:{line} imports {target} (layer {layer_of(target) + 1})")
    assert not wider, "the store imports only layer 1 (ARCHITECTURE.md):\n" + "\n".join(wider)


#: Modules that may import torch inside a function (never at import time): the demo runs the PyTorch datasets.
TORCH_IN_FUNCTIONS = frozenset({"vidlabel.demo"})


def torch_imports(source: str) -> list[tuple[int, bool]]:
    """(line, inside a function) of every import of torch or a torch submodule in ``source``."""
    out = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and not child.level:
                names = [child.module or ""]
            if any(n.split(".")[0] == "torch" for n in names):
                out.append((child.lineno, in_function))
            visit(child, in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef))

    visit(ast.parse(source), False)
    return out


def test_only_torch_data_imports_torch() -> None:
    found = []
    for module in module_names():
        if module == "vidlabel.torch_data" or module.startswith("vidlabel.torch_data."):
            continue
        for line, in_function in torch_imports(_source_path(module).read_text()):
            if not (in_function and module in TORCH_IN_FUNCTIONS):
                found.append(f"{module}:{line}")
    assert not found, "only vidlabel.torch_data imports torch (the demo inside its functions):\n" + "\n".join(found)


def test_torch_import_check_can_fail() -> None:
    source = "import torch\nfrom torch.utils.data import DataLoader\ndef f():\n    import torch.nn\nimport numpy\n"
    assert torch_imports(source) == [(1, False), (2, False), (4, True)]


def find_circle(graph: dict[str, set[str]]) -> list[str] | None:
    """A circle of imports in ``graph`` (module -> modules it imports), as a path back to its start; or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                return [*stack[stack.index(t) :], t]
            if t not in state and (circle := visit(t)) is not None:
                return circle
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (circle := visit(m)) is not None:
            return circle
    return None


def test_no_import_circle() -> None:
    graph = {m: {t for t, _ in imports_of(m) if t in _MODULES and t != m} for m in module_names()}
    # A private module importing its own package's __init__ counts too (that __init__ imports it).
    circle = find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle or [])


def test_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_circle(graph) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_layer_check_sees_deferred_and_relative_imports() -> None:
    source = (
        "import numpy\n"
        "from vidlabel.errors import OptionError\n"
        "def f():\n"
        "    from vidlabel.torch_data import StoreFrames\n"
        "    import vidlabel.cli\n"
        "from . import _rows\n"
        "from vidlabel.store import _layout\n"
    )
    found = imports_in(source, "vidlabel.dataset")
    assert found == [
        ("vidlabel.errors", 2),
        ("vidlabel.dataset._rows", 6),
        ("vidlabel.store._layout", 7),
        ("vidlabel.torch_data", 4),
        ("vidlabel.cli", 5),
    ]
    assert [layer_of(t) > layer_of("vidlabel.dataset._db") for t, _ in found] == [False, False, True, True, True]
    with pytest.raises(AssertionError, match=r"vidlabel\.nowhere is in no layer"):
        layer_of("vidlabel.nowhere")


def test_spec_paths_import_and_vidlabel_does_not_import_torch() -> None:
    code = (
        "import sys, vidlabel, vidlabel_spec\n"
        "from vidlabel.frames import FrameReader\n"
        "from vidlabel.readplan import ReadPlan\n"
        "from vidlabel_spec import FrameIndex\n"
        "assert FrameIndex is vidlabel.FrameIndex and ReadPlan is vidlabel.ReadPlan\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False", "import vidlabel imported torch"


# ARCHITECTURE.md


def architecture_names(text: str | None = None) -> set[str]:
    """Every ``vidlabel...`` dotted name (and ``vidlabel_spec``) ARCHITECTURE.md mentions in backquotes."""
    if text is None:
        text = (ROOT / "ARCHITECTURE.md").read_text()
    names = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        for m in re.finditer(r"\b(vidlabel(?:_spec)?(?:\.[A-Za-z_][A-Za-z0-9_]*)*)", span):
            names.add(m.group(1))
    return names


def _exists(name: str) -> bool:
    if name in _MODULES or name == "vidlabel_spec":
        return True
    parent, _, attr = name.rpartition(".")
    if parent in _MODULES and not _is_private(parent):
        return hasattr(importlib.import_module(parent), attr)
    return parent in _MODULES and attr in {n for n, _ in _top_level_names(parent)}


def _top_level_names(module: str) -> list[tuple[str, int]]:
    out = []
    for node in ast.parse(_source_path(module).read_text()).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            out.append((node.name, node.lineno))
    return out


def test_architecture_names_only_what_exists() -> None:
    missing = sorted(n for n in architecture_names() if not _exists(n) and n not in OPTIONAL)
    assert not missing, f"ARCHITECTURE.md names modules or names that do not exist: {missing}"


def test_architecture_names_every_public_module() -> None:
    named = architecture_names()
    unnamed = [m for m in PUBLIC_MODULES if m not in named]
    assert not unnamed, f"ARCHITECTURE.md does not name the public modules {unnamed}"


def test_architecture_check_can_fail() -> None:
    text = "`vidlabel.video._reader` and `vidlabel.Dataset`; `from vidlabel.store import x`; not vidlabel.cli"
    assert architecture_names(text) == {"vidlabel.video._reader", "vidlabel.Dataset", "vidlabel.store"}
    assert _exists("vidlabel.video._reader.usable_index") and _exists("vidlabel.Dataset")
    assert not _exists("vidlabel.video._gone") and not _exists("vidlabel.dataset.NoSuchName")
    assert not _exists("vidlabel.rows")  # a module of the flat layout before the regrouping


# -- environment variables: one documented list ---------------------------------------------------------------

_VARIABLE = re.compile(r"\bVIDLABEL_[A-Z0-9_]*[A-Z0-9]")
ENVIRONMENT_DOC = ROOT / "docs" / "reference" / "environment.md"


def variables_named(text: str) -> set[str]:
    """The ``VIDLABEL_*`` names in ``text``, but the tests' own (``VIDLABEL_TEST_*``)."""
    return {name for name in _VARIABLE.findall(text) if not name.startswith("VIDLABEL_TEST")}


def _files_naming_variables() -> list[Path]:
    folders = [(PACKAGE, "*.py"), (ROOT / "scripts", "*.py"), (ROOT / "tests", "*.py"), (ROOT / "docs", "*.md"),
               (ROOT / "notebooks", "*.ipynb")]  # fmt: skip
    return [path for folder, pattern in folders if folder.is_dir() for path in sorted(folder.rglob(pattern))]


#: Variables vidlabel itself never reads: a shell variable of a how-to, and the browser of the viewer's tests.
NOT_READ_BY_VIDLABEL = frozenset({"VIDLABEL_CLONE", "VIDLABEL_CHROMIUM"})


def test_every_vidlabel_variable_is_in_the_documented_list() -> None:
    from vidlabel._env import SETTINGS

    unknown = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in _files_naming_variables()
        for name in variables_named(path.read_text(encoding="utf-8")) - set(SETTINGS)
        if name not in NOT_READ_BY_VIDLABEL or path.is_relative_to(PACKAGE)
    }
    assert not unknown, f"VIDLABEL_* names outside vidlabel._env.SETTINGS: {sorted(unknown)}"
    doc = ENVIRONMENT_DOC.read_text(encoding="utf-8")
    env_doc = importlib.import_module("vidlabel._env").__doc__ or ""
    assert set(SETTINGS) <= variables_named(doc), "docs/reference/environment.md must describe every setting"
    assert set(SETTINGS) <= variables_named(env_doc), "vidlabel._env's docstring must list every setting"


def test_variable_check_can_fail() -> None:
    gone = "VIDLABEL_" + "FIRST_TOUCH"  # a switch that was deleted, spelt so that this file does not name it
    assert variables_named(f"set {gone}=fault or VIDLABEL_SHM_POOL=0; VIDLABEL_TEST_X") == {gone, "VIDLABEL_SHM_POOL"}


# -- prose: comments and docstrings say why, not which issue, machine or benchmark day ------------------------

_LAB_NOTES = re.compile(
    r"\b[Ii]ssue\s*#?\d+"  # this project's issues (a link to an upstream tracker names "issues/<n>", allowed)
    r"|\b(?:EPYC|Xeon|Ryzen|Graviton)\b|\bVMs?\b|\b\d+-core\b"  # the machines a measurement ran on
    r"|\b20\d\d-[01]\d-[0-3]\d\b"  # the day it ran
)


def prose_of(source: str) -> list[tuple[int, str]]:
    """(line, text) of every comment and docstring of a Python source."""
    import io
    import tokenize

    found = [
        (tok.start[0], tok.string)
        for tok in tokenize.generate_tokens(io.StringIO(source).readline)
        if tok.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None and node.body:
                found.append((node.body[0].lineno, doc))
    return found


def lab_notes(source: str) -> list[str]:
    """Each comment or docstring of ``source`` that names an issue of ours, a machine or a benchmark date."""
    return [f"line {line}: {m.group(0)!r}" for line, text in prose_of(source) for m in _LAB_NOTES.finditer(text)]


def test_no_comment_or_docstring_is_a_lab_note() -> None:
    notes = [
        f"{path.relative_to(ROOT)} {note}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for note in lab_notes(path.read_text(encoding="utf-8"))
    ]
    assert not notes, (
        "comments and docstrings say why; numbers go to scripts/bench_*.py, history to git:\n" + "\n".join(notes)
    )


def test_lab_note_check_can_fail() -> None:
    source = (
        '"""Faster (issue 15)."""\n'
        "x = 1  # on the EPYC VM, 2026-12-04\n"
        "def f():\n"
        '    """See https://github.com/pytorch/pytorch/issues/95606 for why."""\n'
    )
    assert lab_notes(source) == ["line 2: 'EPYC'", "line 2: 'VM'", "line 2: '2026-12-04'", "line 1: 'issue 15'"]


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        sys.path.insert(0, str(ROOT))
        API_FILE.write_text(
            "# Every name in every public module's __all__ (tests/test_house.py checks it). Regenerate with\n"
            f"# `{REGENERATE}` after a deliberate API change.\n" + "\n".join(live_api()) + "\n"
        )
        print(f"wrote {API_FILE} ({len(live_api())} names)")
    else:
        sys.exit(pytest.main([__file__, "-q"]))
