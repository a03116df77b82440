"""The house rules: the public API is a checked-in list, documented; every module is public or private;
imports point down the layers; ARCHITECTURE.md names what exists.

Regenerate the API list after a deliberate change with ``python tests/test_house.py --write``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import subprocess
import sys
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
    | {"vidlabel._words", "vidlabel._json", "vidlabel._lru", "vidlabel.schema", "vidlabel.clip"},
    frozenset({"vidlabel.video", "vidlabel.probe", "vidlabel.frames", "vidlabel.readplan"}),
    frozenset({"vidlabel.dataset", "vidlabel.validate"}),
    frozenset({"vidlabel.store"}),
    frozenset({"vidlabel.samples"}),
    frozenset({"vidlabel.export"}),
    frozenset({"vidlabel.formats"}),
    frozenset({"vidlabel.torch_data"}),
    frozenset({"vidlabel.cli", "vidlabel.demo", "vidlabel.viewer", "vidlabel.__main__"}),
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
    neither = [m for m in module_names() if m not in public and not _is_private(m) and m != "vidlabel.__main__"]
    assert not neither, (
        f"modules neither public (in test_house.PUBLIC_MODULES, with __all__) nor private (a leading "
        f"underscore, or inside a private package): {neither}"
    )


def test_every_package_init_has_a_docstring() -> None:
    for init in sorted(PACKAGE.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc.split()) >= 5, f"{init.relative_to(ROOT)} needs a docstring saying what it holds"


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
