"""Run the bench scripts into ``bench_out/`` and render ``docs/benchmarks.md`` from what they printed.

The benchmark page holds nothing but what a script printed: each script's output is saved whole, with
the command, the machine line and the versions, as ``bench_out/<script>.json``; the page shows every saved
output, and the headline table (on the page and in the README, between the ``bench:headlines`` markers) is
lines picked out of those outputs by the patterns in ``HEADLINES``; the frame-store guide's codec table
(between the ``bench:store-codecs`` markers) is the table bench_store printed. Older figures go to
``CHANGELOG.md``.

Usage::

    python scripts/make_bench_page.py run bench_store -- --frames 120 --clips 2 --codecs none,lz4,zstd,jpeg
    python scripts/make_bench_page.py render            # docs/benchmarks.md, the README's and the guide's tables
    python scripts/make_bench_page.py render --check    # exit 1 when either is not what bench_out/ gives
"""

from __future__ import annotations

import argparse
import json
import platform
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench_out"
PAGE = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
CODECS_PAGE = ROOT / "docs" / "how-to" / "frame-store.md"


@dataclass(frozen=True)
class Headline:
    """A figure of the headline table: ``template`` filled with the groups of the first line of ``script``'s
    output that ``pattern`` matches."""

    script: str
    figure: str
    pattern: str
    template: str


_STORE_ROW = r"^\| {codec} \| (?:[^|]+\|){{4}} ([^|]+) \| ([^|]+) \| ([^|]+) \|"
HEADLINES = [
    Headline("bench_reader", "`FrameReader` sequential decode against raw PyAV, 720p",
             r"^sequential to RGB: .*\(best ([\d.]+x) raw", "{0}"),
    Headline("bench_reader", "`FrameReader` random single reads against a naive seek + decode, 720p",
             r"^random single reads.*FrameReader [\d.]+ frames/s \((\d+) wrong.*: ([\d.]+x) naive",
             "{1}, {0} wrong frames"),
    Headline("bench_reader", "`read_many` of 120 random frames against one at a time",
             r"^read_many batches of 120: .* = ([\d.]+x) \((\d+) wrong\)", "{0}, {1} wrong frames"),
    Headline("bench_store", "frame store, codec none: size, random reads/s (vs FrameReader)",
             _STORE_ROW.format(codec="none"), "{0} a frame, {1} reads/s ({2})"),
    Headline("bench_store", "frame store, codec lz4", _STORE_ROW.format(codec="lz4"), "{0} a frame, {1} reads/s ({2})"),
    Headline("bench_store", "frame store, codec zstd", _STORE_ROW.format(codec=r"zstd(?::\d+)?"),
             "{0} a frame, {1} reads/s ({2})"),
    Headline("bench_store", "frame store, codec jpeg", _STORE_ROW.format(codec=r"jpeg(?::\d+)?"),
             "{0} a frame, {1} reads/s ({2})"),
]  # fmt: skip


def _machine() -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _benchlib import machine

    return machine()


def run(script: str, args: list[str]) -> Path:
    """Run ``scripts/<script>.py ARGS``, echo its output, save it with the command and machine to bench_out/."""
    path = ROOT / "scripts" / f"{script}.py"
    if not path.is_file():
        sys.exit(f"make_bench_page: no script {path}")
    command = [sys.executable, str(path), *args]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        sys.stdout.write(line)
        lines.append(line.rstrip("\n"))
    if proc.wait() != 0:
        sys.exit(f"make_bench_page: {script} exited with {proc.returncode}; nothing saved")
    import vidlabel

    record = {
        "script": script,
        "command": " ".join(["python", f"scripts/{script}.py", *args]),
        "machine": _machine(),
        "python": platform.python_version(),
        "vidlabel": vidlabel.__version__,
        "output": lines,
    }
    OUT.mkdir(exist_ok=True)
    saved = OUT / f"{script}.json"
    saved.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return saved


def load() -> dict[str, dict]:
    """Every saved output of bench_out/, by script name."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted(OUT.glob("bench_*.json"))}


def headline_rows(records: dict[str, dict]) -> list[str]:
    """The headline table's markdown lines: figure, what was measured, the script (missing scripts left out)."""
    rows = ["| figure | measured | script |", "| --- | --- | --- |"]
    for h in HEADLINES:
        if h.script not in records:
            continue
        found = next((m for line in records[h.script]["output"] if (m := re.match(h.pattern, line))), None)
        if found is None:
            raise SystemExit(f"make_bench_page: no line of {h.script}'s output matches {h.pattern!r}")
        value = h.template.format(*(g.strip() for g in found.groups()))
        rows.append(f"| {h.figure} | {value} | `{h.script}` |")
    return rows


def _output_blocks(lines: list[str]) -> list[str]:
    """A script's output as markdown: its markdown tables as tables, every other run of lines as text."""
    runs: list[tuple[bool, list[str]]] = []
    for line in lines:
        table = line.startswith("|")
        if not runs or runs[-1][0] != table:
            runs.append((table, []))
        runs[-1][1].append(line)
    out = []
    for table, run_lines in runs:
        body = "\n".join(run_lines).strip("\n")
        if body:
            out.append(body if table else f"```text\n{body}\n```")
    return out


def render_page(records: dict[str, dict]) -> str:
    parts = [
        "# Benchmarks",
        "",
        "<!-- generated by scripts/make_bench_page.py from bench_out/: do not edit by hand -->",
        "",
        "Every figure here is what a `scripts/bench_*.py` script printed, saved by",
        "`python scripts/make_bench_page.py run SCRIPT -- ARGS` and rendered by",
        "`python scripts/make_bench_page.py render`. Each script measures its baselines in the same run and prints",
        "ratios against them: compare ratios, not absolute rates, between machines. The machines these ran on are",
        "shared and small, so expect runs to move by tens of percent; run the scripts on your own hardware.",
        "Figures of earlier runs are in the [changelog](changelog.md).",
        "",
        "## Headline figures",
        "",
        *headline_rows(records),
        "",
    ]
    for name, rec in records.items():
        parts += [
            f"## {name}",
            "",
            f"`{rec['command']}`",
            "",
            f"Machine: {rec['machine']}; Python {rec['python']}, vidlabel {rec['vidlabel']}.",
            "",
        ]
        for block in _output_blocks(rec["output"]):
            parts += [block, ""]
    return "\n".join(parts).rstrip("\n") + "\n"


def fill(text: str, name: str, lines: list[str]) -> str:
    """``text`` with the lines between its ``<!-- bench:NAME:start -->`` and ``...:end -->`` markers replaced."""
    start, end = f"<!-- bench:{name}:start -->", f"<!-- bench:{name}:end -->"
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{start}\n" + "".join(f"{line}\n" for line in lines) + f"{end}{tail}"


def render_readme(readme: str, records: dict[str, dict]) -> str:
    return fill(readme, "headlines", headline_rows(records))


def codec_rows(records: dict[str, dict]) -> list[str]:
    """The codec table bench_store printed (its lines from ``| codec |`` to the table's end), and its machine."""
    if "bench_store" not in records:
        return []
    rec = records["bench_store"]
    out = rec["output"]
    first = next((i for i, line in enumerate(out) if line.startswith("| codec |")), None)
    if first is None:
        raise SystemExit("make_bench_page: bench_store's output holds no '| codec |' table")
    table = []
    for line in out[first:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return [*table, "", f"`{rec['command']}` on {rec['machine']}."]


def render_codecs(page: str, records: dict[str, dict]) -> str:
    return fill(page, "store-codecs", codec_rows(records))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run one bench script and save its output to bench_out/")
    r.add_argument("script", help="e.g. bench_store")
    r.add_argument("args", nargs=argparse.REMAINDER, help="after --: the script's own arguments")
    g = sub.add_parser("render", help="write docs/benchmarks.md and the README's headline table")
    g.add_argument("--check", action="store_true", help="write nothing; exit 1 when either differs")
    ns = ap.parse_args(argv)
    if ns.command == "run":
        args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
        print(f"saved {run(ns.script, args).relative_to(ROOT)}")
        return 0
    records = load()
    wanted = {
        PAGE: render_page(records),
        README: render_readme(README.read_text(encoding="utf-8"), records),
        CODECS_PAGE: render_codecs(CODECS_PAGE.read_text(encoding="utf-8"), records),
    }
    stale = [p for p, text in wanted.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if ns.check:
        for p in stale:
            print(f"{p.relative_to(ROOT)} is not what bench_out/ gives: run scripts/make_bench_page.py render")
        return 1 if stale else 0
    for p in stale:
        p.write_text(wanted[p], encoding="utf-8")
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
