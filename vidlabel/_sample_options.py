"""The target options of a sample (:class:`SampleOptions`) and their checks, re-exported by :mod:`vidlabel.schema`.

Which targets a sample holds and how they are written is one object,
checked once where a constructor takes it and passed down from there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidlabel.errors import OptionError, check_flag, check_label_offset
from vidlabel.spec import BOX_FORMATS, KINDS, ORIGINS

__all__ = [
    "SampleOptions",
    "as_names",
    "attribute_values",
    "check_kinds",
    "check_with_attributes",
    "option_shown",
    "sample_options",
]


def option_shown(name: str, values: Iterable[str], limit: int = 10) -> str:
    """``name=[...]`` as it was given (its first ``limit`` entries), for messages."""
    items = list(values)
    more = f", ... ({len(items)} in all)" if len(items) > limit else ""
    return f"{name}=[{', '.join(repr(x) for x in items[:limit])}{more}]"


def as_names(value: Any, name: str) -> tuple[str, ...]:
    """A string or a sequence of strings as a tuple of strings.

    Raises
    ------
    OptionError
        Naming ``name``, if ``value`` is not iterable or holds something other than strings.
    """
    if isinstance(value, str):
        value = (value,)
    try:
        out = tuple(value)
    except TypeError as err:
        raise OptionError(f"{name} must be a list of strings, got {value!r}") from err
    bad = [x for x in out if not isinstance(x, str)]
    if bad:
        raise OptionError(f"{name} must hold strings, got {bad[0]!r}")
    return out


def check_kinds(kinds: str | Sequence[str]) -> tuple[str, ...]:
    """The ``kinds`` option (one kind alone, or a sequence of kinds) as a tuple of known kinds, at least one.

    Raises
    ------
    OptionError
        On an unknown kind, a value that is not a string, or no kind at all.
    """
    kinds_t = as_names(kinds, "kinds")
    for k in kinds_t:
        if k not in KINDS:
            raise OptionError(f"unknown kind {k!r} in {option_shown('kinds', kinds_t)}; allowed: {', '.join(KINDS)}")
    if not kinds_t:
        raise OptionError(f"kinds must name at least one of {', '.join(KINDS)}")
    return kinds_t


def _check_labels(labels: Any) -> tuple[str, ...] | None:
    labels_t = None if labels is None else as_names(labels, "labels")
    if labels_t is not None:
        if not labels_t:
            raise OptionError("labels=[] selects nothing; pass None for the whole vocabulary")
        dup = [x for i, x in enumerate(labels_t) if x in labels_t[:i]]
        if dup:
            raise OptionError(f"label {dup[0]!r} appears twice in {option_shown('labels', labels_t)}")
    return labels_t


def _check_origins(origins: Any) -> tuple[str, ...] | None:
    origins_t = None if origins is None else as_names(origins, "origins")
    for o in origins_t or ():
        if o not in ORIGINS:
            shown = option_shown("origins", origins_t or ())
            raise OptionError(f"unknown origin {o!r} in {shown}; allowed: {', '.join(ORIGINS)}")
    return origins_t


def _check_min_confidence(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise OptionError(f"min_confidence must be a number in [0, 1] or None, got {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise OptionError(f"min_confidence must lie in [0, 1], got {value!r}")
    return float(value)


@dataclass(frozen=True)
class SampleOptions:
    """Which targets a sample holds and how they are written: the options FrameSamples, StoreSamples,
    StoreFrames and StoreStream share, checked once on construction.

    Parameters
    ----------
    kinds : {"box", "mask", "marker"} or sequence of them
        Which annotation kinds become targets (and, where frames are chosen by their annotations, make a
        frame a sample); markers always fill ``frame_labels``.
    labels : sequence of str, optional
        Keep only these labels; ``class_names`` is this list, in this order. None: the whole vocabulary.
    origins : sequence of {"human", "model"}, optional
        Keep only rows of these origins (None: all).
    min_confidence : float in [0, 1], optional
        Drop model rows whose confidence is below this.
    with_masks : bool
        Decode masks into the samples (``masks`` (N, H, W) uint8).
    box_format : {"xyxy", "xywh", "cxcywh"}
    normalized : bool
        Boxes as fractions of the image's width and height.
    label_offset : int
        Added to ``labels`` (not to ``frame_labels`` positions); an integer >= 0.

    Raises
    ------
    OptionError
        On an unknown kind, origin or box format, no kind at all, ``labels=[]`` or a label named twice, a
        ``min_confidence`` outside [0, 1], a ``label_offset`` that is not an integer >= 0, or a True/False
        option given anything else. The values are kept normalised: tuples of str, a float, bools, an int.
    """

    kinds: tuple[str, ...] = ("box", "mask")
    labels: tuple[str, ...] | None = None
    origins: tuple[str, ...] | None = None
    min_confidence: float | None = None
    with_masks: bool = False
    box_format: str = "xyxy"
    normalized: bool = False
    label_offset: int = 0

    def __post_init__(self) -> None:
        checked = {
            "kinds": check_kinds(self.kinds),
            "labels": _check_labels(self.labels),
            "origins": _check_origins(self.origins),
            "min_confidence": _check_min_confidence(self.min_confidence),
        }
        if self.box_format not in BOX_FORMATS:
            raise OptionError(f"unknown box_format {self.box_format!r}; allowed: {', '.join(BOX_FORMATS)}")
        checked["label_offset"] = check_label_offset(self.label_offset)
        checked["with_masks"] = check_flag("with_masks", self.with_masks)
        checked["normalized"] = check_flag("normalized", self.normalized)
        for name, value in checked.items():
            object.__setattr__(self, name, value)


def _as_given(value: Any) -> Any:
    """A keyword's value as SampleOptions keeps it, to compare with a default (a list of names as a tuple)."""
    return tuple(value) if isinstance(value, list) else value


def sample_options(options: SampleOptions | None, owner: str, **keywords: Any) -> SampleOptions:
    """The target options of a constructor that takes both ``options=`` and the keywords of the block.

    Parameters
    ----------
    options : SampleOptions or None
        Given: used as it is (already checked), and every keyword must be left at its default.
    owner : str
        The constructor's name, for messages.
    **keywords
        The constructor's keywords of the block (those of :class:`SampleOptions` it takes).

    Raises
    ------
    OptionError
        If ``options`` is not a SampleOptions, or is given together with a keyword of the block set to
        anything but its default; or as :class:`SampleOptions` for the keywords.
    """
    if options is None:
        return SampleOptions(**keywords)
    if not isinstance(options, SampleOptions):
        raise OptionError(f"{owner}: options must be a vidlabel.schema.SampleOptions or None, got {options!r}")
    default = SampleOptions()
    both = [name for name, value in keywords.items() if _as_given(value) != getattr(default, name)]
    if both:
        raise OptionError(
            f"{owner}: {both[0]}={keywords[both[0]]!r} given together with options=; give it in the "
            f"SampleOptions (options={options!r}) or as a keyword, not both"
        )
    return options


def check_with_attributes(names: Sequence[str] | None) -> tuple[str, ...]:
    """``with_attributes=`` as a tuple of distinct names (``()`` for None).

    Raises
    ------
    OptionError
        If ``names`` is not a sequence of distinct non-empty strings.
    """
    if names is None:
        return ()
    items = (names,) if isinstance(names, str) else tuple(names)
    if not all(isinstance(n, str) and n for n in items) or len(set(items)) != len(items):
        raise OptionError(f"with_attributes must be distinct attribute names, got {names!r}")
    return items


def attribute_values(
    offsets: np.ndarray, data: np.ndarray, rows: np.ndarray, names: Sequence[str], annotation_ids: np.ndarray
) -> np.ndarray:
    """The ``attributes`` sample key of some rows whose attributes are JSON in CSR form.

    Parameters
    ----------
    offsets : (N + 1,) int64
        CSR offsets: row ``i``'s attributes are the JSON object ``data[offsets[i]:offsets[i + 1]]`` (empty: none).
    data : (M,) uint8
        The JSON bytes.
    rows : (R,) int
        The rows wanted.
    names : sequence of str
        The attributes wanted, in column order.
    annotation_ids : (R,) int64
        The annotation id of each wanted row (named by an error).

    Returns
    -------
    (R, A) float32
        Attribute ``names[a]`` of row ``rows[r]``: true 1, false 0, a number as it is, NaN where it has none.

    Raises
    ------
    OptionError
        If a wanted attribute is text (it has no number), naming it, its value and the annotation.
    """
    out = np.full((len(rows), len(names)), np.nan, np.float32)
    if not names or not len(rows):
        return out
    raw = np.asarray(data, np.uint8).tobytes()
    seen: dict[bytes, dict[str, Any]] = {}
    for j, i in enumerate(np.asarray(rows).tolist()):
        a, b = int(offsets[i]), int(offsets[i + 1])
        if a == b:
            continue
        text = raw[a:b]
        attrs = seen.get(text)
        if attrs is None:
            attrs = seen[text] = json.loads(text)
        for k, name in enumerate(names):
            value = attrs.get(name)
            if isinstance(value, str):
                raise OptionError(
                    f"with_attributes: {name!r} is a text attribute ({value!r} on annotation "
                    f"{int(annotation_ids[j])}); only bool and number attributes are delivered as numbers"
                )
            if value is not None:
                out[j, k] = float(value)
    return out
