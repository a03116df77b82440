"""Gather the changelog fragments ``changes/*.md`` into CHANGELOG.md's section of the coming version.

Each branch writes what it changed for users as ``changes/<name>.md``; this writes them, in file-name order,
between the ``changes`` markers of CHANGELOG.md under a heading for the version in ``vidlabel/_version.py``.
Once the release is tagged the fragments are deleted (``git rm changes/*.md``).

Usage::

    python scripts/make_changelog.py            # rewrite the section
    python scripts/make_changelog.py --check    # exit 1 when the section is not what the fragments give
"""

from __future__ import annotations

import argparse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHANGELOG = ROOT / "CHANGELOG.md"
START, END = "<!-- changes:start -->", "<!-- changes:end -->"


def _fragment(path: Path) -> str:
    """A fragment's text under its own ``###`` heading (its file name when it has none)."""
    text = path.read_text(encoding="utf-8").strip()
    return text if text.startswith("#") else f"### {path.stem}\n\n{text}"


def section(version: str, fragments: list[Path]) -> str:
    """The version's heading and every fragment's text, or nothing when there are no fragments."""
    if not fragments:
        return ""
    body = "\n\n".join(_fragment(f) for f in fragments)
    return f"## {version} (unreleased)\n\n{body}\n"


def render(text: str, version: str, fragments: list[Path]) -> str:
    head, rest = text.split(START, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{START}\n{section(version, fragments)}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when CHANGELOG.md differs")
    ns = ap.parse_args(argv)
    version: dict[str, str] = {}
    exec((ROOT / "vidlabel" / "_version.py").read_text(), version)
    fragments = sorted((ROOT / "changes").glob("*.md"))
    text = CHANGELOG.read_text(encoding="utf-8")
    wanted = render(text, version["__version__"], fragments)
    if ns.check:
        if wanted != text:
            print("CHANGELOG.md is not what changes/*.md give: run python scripts/make_changelog.py")
            return 1
        return 0
    CHANGELOG.write_text(wanted, encoding="utf-8")
    print(f"CHANGELOG.md: {len(fragments)} fragment(s) under {version['__version__']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
