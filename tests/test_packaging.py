"""Packaging: setup.py and environment.yml agree; the public API is importable and documented."""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.metadata
import inspect
import re
import subprocess
import sys
from pathlib import Path

import vidlabel

ROOT = Path(__file__).resolve().parents[1]
# conda-forge names that differ from the PyPI ones
CONDA_TO_PIP = {"pytorch": "torch"}


def _setup_lists() -> tuple[list[str], dict[str, list[str]]]:
    """INSTALL_REQUIRES and EXTRAS_REQUIRE as written in setup.py (read with ast, nothing executed)."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    found: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
            if node.targets[0].id in ("INSTALL_REQUIRES", "EXTRAS_REQUIRE"):
                found[node.targets[0].id] = ast.literal_eval(node.value)
    install, extras = found["INSTALL_REQUIRES"], found["EXTRAS_REQUIRE"]
    assert isinstance(install, list) and isinstance(extras, dict)
    return install, extras


def _normalise(requirement: str) -> tuple[str, str]:
    # pip extras ("dask[distributed]", "moto[s3]") have no conda spelling: conda-forge's package of that name
    # is compared (environment.yml lists what the extra adds where conda-forge splits it out)
    m = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*(?:\[[A-Za-z0-9_,\- ]*\])?\s*(.*?)\s*", requirement)
    assert m, requirement
    name = m.group(1).lower().replace("_", "-")
    return CONDA_TO_PIP.get(name, name), m.group(2).replace(" ", "")


def _environment() -> list[str]:
    """The conda dependencies of environment.yml (without python, pip and the pip: section)."""
    deps: list[str] = []
    in_deps = False
    for line in (ROOT / "environment.yml").read_text().splitlines():
        stripped = line.split("#", 1)[0].rstrip()
        if not stripped:
            continue
        if not line.startswith(" "):
            in_deps = stripped.startswith("dependencies:")
            continue
        m = re.fullmatch(r"  - (.+)", stripped)
        if in_deps and m:
            item = m.group(1).strip()
            if item.endswith(":") or item == "pip" or item.startswith("python"):
                continue
            deps.append(item)
    return deps


def test_setup_and_environment_agree() -> None:
    install, extras = _setup_lists()
    from_setup = {_normalise(r) for r in install} | {_normalise(r) for reqs in extras.values() for r in reqs}
    from_env = {_normalise(r) for r in _environment()}
    assert from_setup == from_env, (
        f"only in setup.py: {sorted(from_setup - from_env)}; only in environment.yml: {sorted(from_env - from_setup)}"
    )


def test_setup_declares_what_the_issue_asks() -> None:
    install, extras = _setup_lists()
    names = {_normalise(r)[0] for r in install}
    assert {"numpy", "h5py", "hdf5plugin", "av", "tqdm", "zarr"} <= names
    assert {"torch", "dev"} <= set(extras)
    assert any(_normalise(r)[0] == "torch" for r in extras["torch"])
    # the spec installs `vidlabel[video]` to read pixels: the extra exists (pip warned "does not provide the
    # extra 'video'"), and adds nothing, as the decoder (PyAV) is part of every install
    assert extras["video"] == [] and "av" in names
    text = (ROOT / "setup.py").read_text()
    assert "vidlabel = vidlabel.cli:main" in text
    from vidlabel.cli import main

    assert callable(main)


def test_public_names_import_and_have_docstrings() -> None:
    assert vidlabel.__all__, "vidlabel.__all__ is empty"
    missing_doc = []
    for name in vidlabel.__all__:
        obj = getattr(vidlabel, name)  # AttributeError here: exported but not importable
        if inspect.isclass(obj) or inspect.isfunction(obj) or inspect.ismodule(obj) or callable(obj):
            if not (inspect.getdoc(obj) or "").strip():
                missing_doc.append(name)
    assert not missing_doc, f"public names without a docstring: {missing_doc}"
    assert not [n for n in vidlabel.__all__ if n in dir(builtins)], "exported names shadow builtins"


def test_public_modules_all_lists_resolve() -> None:
    for module_name in (
        "vidlabel.dataset",
        "vidlabel.video",
        "vidlabel.samples",
        "vidlabel.export",
        "vidlabel.validate",
        "vidlabel.spec",
        "vidlabel.errors",
    ):
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert (inspect.getdoc(obj) or "").strip(), f"{module_name}.{name} has no docstring"


def _imported_top_level_modules() -> set[str]:
    """Top-level names of every module vidlabel imports (deferred imports inside functions included)."""
    names: set[str] = set()
    for path in (ROOT / "vidlabel").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - set(sys.stdlib_module_names) - {"vidlabel", "vidlabel_spec", "__future__"}


def test_every_package_vidlabel_imports_is_declared() -> None:
    # google_crc32c and numcodecs were imported but arrived only through zarr
    install, extras = _setup_lists()
    declared = {_normalise(r)[0] for r in install} | {_normalise(r)[0] for reqs in extras.values() for r in reqs}
    # a pip extra declares its packages too ("dask[distributed]" installs distributed)
    declared |= {x.strip() for reqs in extras.values() for r in reqs for x in re.findall(r"\[(.*?)\]", r)}
    # used only when the user has it: the SequenceExample classes of an installed TensorFlow
    declared.add("tensorflow")
    dists = importlib.metadata.packages_distributions()
    undeclared = {}
    for module in sorted(_imported_top_level_modules()):
        names = {d.lower().replace("_", "-") for d in dists.get(module, [module])}
        if not names & declared:
            undeclared[module] = sorted(names)
    assert not undeclared, f"imported by vidlabel but declared nowhere in setup.py: {undeclared}"


def test_license_urls_and_typing_marker_are_shipped() -> None:
    text = (ROOT / "setup.py").read_text()
    assert (ROOT / "LICENSE").read_text().startswith("MIT License")
    assert 'license="MIT"' in text and 'license_files=["LICENSE"]' in text
    assert re.search(r'"Documentation": .*"Source": .*"Changelog"', text, re.S)
    assert (ROOT / "vidlabel" / "py.typed").is_file()
    assert re.search(r'package_data=\{"vidlabel": \["py.typed"\]', text)
    _, extras = _setup_lists()
    assert {_normalise(r)[0] for r in extras["docs"]} == {"mkdocs", "mkdocs-material", "mkdocstrings-python"}


# torch made unimportable in the child, as on an install without the extra
_NO_TORCH = """
import sys

class NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)

sys.meta_path.insert(0, NoTorch())
from vidlabel.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_the_demo_without_torch_names_the_extra_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _NO_TORCH, "demo", str(tmp_path / "demo")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    assert done.stderr == (
        'vidlabel: error: vidlabel.torch_data needs PyTorch, which is not installed: pip install "vidlabel[torch]"\n'
    )
    assert not (tmp_path / "demo").exists()  # stopped before anything was made


def test_torch_data_without_torch_raises_missing_extra_error() -> None:
    code = _NO_TORCH.split("from vidlabel.cli")[0] + (
        "from vidlabel.errors import MissingExtraError\n"
        "try:\n    import vidlabel.torch_data\n"
        "except MissingExtraError as err:\n    print(isinstance(err, ImportError), err)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout == (
        'True vidlabel.torch_data needs PyTorch, which is not installed: pip install "vidlabel[torch]"\n'
    ), done.stderr
