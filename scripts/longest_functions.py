"""Print the longest functions under a folder: ``python scripts/longest_functions.py vidlabel [N]``.

Length is from the ``def`` line to the function's last line (docstring included, decorators not);
methods are named ``Class.method``, nested functions ``outer.inner``.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path


def function_lengths(root: Path) -> list[tuple[int, str]]:
    """(lines, "path:line name") of every function under ``root``, longest first."""
    rows: list[tuple[int, str]] = []

    def walk(node: ast.AST, path: Path, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                assert child.end_lineno is not None
                rows.append((child.end_lineno - child.lineno + 1, f"{path}:{child.lineno} {prefix}{child.name}"))
                walk(child, path, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, path, f"{prefix}{child.name}.")
            else:
                walk(child, path, prefix)

    for path in sorted(root.rglob("*.py")):
        walk(ast.parse(path.read_text()), path, "")
    return sorted(rows, reverse=True)


if __name__ == "__main__":
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 15
    for n, name in function_lengths(Path(sys.argv[1] if len(sys.argv) > 1 else "vidlabel"))[:top]:
        print(n, name)
