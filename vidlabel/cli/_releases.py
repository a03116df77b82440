"""``vidlabel build``, ``releases``, ``validate``: pinning releases of a dataset and checking it."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from vidlabel._command import add_command
from vidlabel._words import plural

if TYPE_CHECKING:
    from vidlabel._command import Subparsers


def _cmd_build(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    release, report = Dataset.open(args.dataset).build()
    print(release.release_id)
    print(str(report), file=sys.stderr)
    for problem in report.warnings[:20]:
        print(f"  {problem}", file=sys.stderr)
    if len(report.warnings) > 20:
        print(f"  ... {plural(len(report.warnings) - 20, 'more warning')} (vidlabel validate)", file=sys.stderr)
    return 0


def _cmd_releases(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    records = Dataset.open(args.dataset).release_records()
    if not records:
        print("no releases yet (vidlabel build DATASET)")
    for rec in records:
        latest = "  (latest)" if rec["latest"] else ""
        print(f"{rec['release_id']}  {rec['created']}  {plural(rec['rows'], 'row')}{latest}")
    return 0


_VALIDATE_LINES = 20  # `vidlabel validate` prints at most this many problems of each code


def _cmd_validate(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    problems = Dataset.open(args.dataset).validate(for_export=args.for_export, roots=args.roots)
    errors = sum(p.severity == "error" for p in problems)
    if args.json:
        for problem in problems:
            print(json.dumps(problem.to_dict()))
        return 1 if errors else 0
    seen: dict[str, int] = {}  # problems of each code, in order; the first _VALIDATE_LINES of each are printed
    severity: dict[str, str] = {}
    for problem in problems:
        seen[problem.code] = seen.get(problem.code, 0) + 1
        severity[problem.code] = problem.severity
        if seen[problem.code] <= _VALIDATE_LINES:
            print(str(problem))
    for code, count in seen.items():
        if count > _VALIDATE_LINES:
            rest = plural(count - _VALIDATE_LINES, f"more {code} {severity[code]}")
            print(f"... and {rest} (vidlabel validate --json lists every problem)")
    _print_attributes(args.dataset)
    print(f"{plural(errors, 'error')}, {plural(len(problems) - errors, 'warning')}")
    return 1 if errors else 0


def _print_attributes(path: str) -> None:
    """The attribute schema of the live rows, label by label, with how many rows give each attribute."""
    from vidlabel.dataset._dataset import Dataset
    from vidlabel.dataset._validate import attribute_summary

    ds = Dataset.open(path)
    schema = ds.attribute_schema()
    if schema:
        for line in attribute_summary(ds.snapshot().table, schema):
            print(f"attributes: {line}")


def register(subparsers: Subparsers) -> None:
    """Add ``build``, ``releases`` and ``validate``."""
    p = add_command(
        subparsers, "build", _cmd_build, "Pin an immutable release of the current annotations; prints its id."
    )
    p.add_argument("dataset", metavar="DATASET")

    p = add_command(subparsers, "releases", _cmd_releases, "List the releases of a dataset.")
    p.add_argument("dataset", metavar="DATASET")

    p = add_command(
        subparsers,
        "validate",
        _cmd_validate,
        f"Check a dataset; prints problems with stable codes (at most {_VALIDATE_LINES} of each code, then a count).",
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("--json", action="store_true", help="print every problem as JSON Lines")
    p.add_argument(
        "--for-export",
        action="store_true",
        help="rate missing_video_file and video_file_changed as errors (export refuses those videos): "
        "exit 0 means export will read every video",
    )
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files, as export's")
