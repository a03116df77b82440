"""``vidlabel attributes DATASET show | declare | set``: the attribute schema and the rows' attributes."""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any

from vidlabel._command import add_command
from vidlabel._words import plural, shown
from vidlabel.errors import OptionError

if TYPE_CHECKING:
    from vidlabel._command import Subparsers
    from vidlabel.dataset._dataset import Dataset

_TYPES = ("bool", "number", "text")
_TRUE, _FALSE = ("true", "yes", "1"), ("false", "no", "0")

_SET_HELP = """\
Set attributes of existing annotations, by id (as `vidlabel export-labels` or Dataset.annotations() give
them). Each NAME=VALUE is read as the type the schema declares for NAME: bool (true/false, yes/no, 1/0),
number (0.5, 3) or text (as written). --remove NAME drops an attribute. Every row is checked against the
schema of its label; one bad value refuses the whole change.
"""


def _cmd_show(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    schema = Dataset.open(args.dataset).attribute_schema()
    if not schema:
        print("no label declares attributes (vidlabel attributes DATASET declare LABEL NAME --type TYPE)")
    for label in sorted(schema):
        print(f"{label}: " + ", ".join(f"{name} ({kind})" for name, kind in sorted(schema[label].items())))
    return 0


def _cmd_declare(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    ds = Dataset.open(args.dataset)
    have = ds.attribute_schema().get(args.label, {})
    whole = ds.set_attribute_schema(args.label, {name: args.type for name in args.names})
    new = [name for name in args.names if name not in have]
    print(
        f"label {args.label!r}: declared {plural(len(new), 'new attribute')}; its attributes: "
        + ", ".join(f"{name} ({kind})" for name, kind in sorted(whole.items()))
    )
    return 0


def _types_of(schema: dict[str, dict[str, str]], name: str) -> set[str]:
    """The types the labels that declare ``name`` give it."""
    return {names[name] for names in schema.values() if name in names}


def _value(text: str, kind: str, name: str) -> Any:
    """``text`` read as a value of type ``kind`` for attribute ``name``."""
    if kind == "text":
        return text
    if kind == "bool":
        if text.lower() in _TRUE + _FALSE:
            return text.lower() in _TRUE
        raise OptionError(f"attribute {shown(name)} is a bool: {shown(text)} is none of {', '.join(_TRUE + _FALSE)}")
    try:
        number = float(text)
    except ValueError:
        number = math.nan
    if not math.isfinite(number):
        raise OptionError(f"attribute {shown(name)} is a number: {shown(text)} is not a finite number (e.g. 0.5)")
    return number


def _values(ds: Dataset, pairs: list[str], removed: list[str]) -> dict[str, Any]:
    """The NAME=VALUE pairs and --remove names as ``Dataset.set_attributes`` takes them."""
    schema = ds.attribute_schema()
    declared = sorted({name for names in schema.values() for name in names})
    out: dict[str, Any] = {}
    for pair in pairs:
        name, eq, text = pair.partition("=")
        if not eq or not name:
            raise OptionError(f"{shown(pair)} is not NAME=VALUE (e.g. occluded=true)")
        kinds = _types_of(schema, name)
        if not kinds:
            raise OptionError(f"no label declares attribute {shown(name)}; declared: {', '.join(declared) or 'none'}")
        if len(kinds) > 1:
            raise OptionError(f"attribute {shown(name)} has types {', '.join(sorted(kinds))} in different labels: set "
                              "it from Python (Dataset.set_attributes) with a value of the type you mean")  # fmt: skip
        out[name] = _value(text, kinds.pop(), name)
    for name in removed:
        # a name no label declares is a typo: refused like NAME=VALUE, not reported as removed
        if not _types_of(schema, name):
            raise OptionError(f"no label declares attribute {shown(name)}; declared: {', '.join(declared) or 'none'}")
        out[name] = None
    if not out:
        raise OptionError("nothing to set: give NAME=VALUE pairs or --remove NAME")
    return out


def _ids(text: str) -> list[int]:
    """``--ids 3,4,9`` as integers."""
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a comma-separated list of annotation ids (e.g. 3,4,9)"
        ) from None
    if not ids:
        raise argparse.ArgumentTypeError("no annotation id given (e.g. --ids 3,4,9)")
    return ids


def _cmd_set(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset

    ds = Dataset.open(args.dataset)
    values = _values(ds, args.values, args.remove)
    ds.set_attributes(args.ids, values)
    shown = ", ".join(f"{k}={'(removed)' if v is None else v}" for k, v in values.items())
    print(f"set {shown} on {plural(len(set(args.ids)), 'annotation')}")
    return 0


def register(subparsers: Subparsers) -> None:
    """Add ``attributes`` (with its actions ``show``, ``declare`` and ``set``)."""
    p = add_command(
        subparsers, "attributes", _cmd_show,
        "Show or declare the attributes each label's rows may carry, and set them on annotations.",
    )  # fmt: skip
    p.add_argument("dataset", metavar="DATASET")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    a = actions.add_parser("show", help="print each label's attributes and their types")
    a.set_defaults(func=_cmd_show, command_parser=a)

    a = actions.add_parser(
        "declare", help="declare attributes of a label (a name keeps its type once declared)",
        description="Declare attributes the rows of LABEL may carry. The schema only grows: a name keeps its "
        "type once declared.",
    )  # fmt: skip
    a.set_defaults(func=_cmd_declare, command_parser=a)
    a.add_argument("label", metavar="LABEL")
    a.add_argument("names", metavar="NAME", nargs="+", help="attribute names, e.g. occluded truncated")
    a.add_argument("--type", required=True, choices=_TYPES, help="bool, number or text (at most 200 characters)")

    a = actions.add_parser("set", help="set attributes of annotations by id", description=_SET_HELP)
    a.set_defaults(func=_cmd_set, command_parser=a)
    a.add_argument("values", metavar="NAME=VALUE", nargs="*", help="e.g. occluded=true visibility=0.4 pose=left")
    a.add_argument("--ids", required=True, type=_ids, help="annotation ids, comma-separated: 3,4,9")
    a.add_argument("--remove", metavar="NAME", action="append", default=[], help="drop this attribute (repeatable)")
