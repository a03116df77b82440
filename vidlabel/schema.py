"""The sample schema: every key of a vidlabel sample, with its shape, dtype, unit and meaning.

A sample is the plain dict of the spec's table "What a sample contains". This
module is the one place that says what is in it, builds it and checks it:

- :data:`FRAME` lists the keys of a frame sample (a :class:`SampleSchema` of
  :class:`SampleKey` records, in the order a sample dict holds them);
- :func:`frame_sample` builds a frame sample; every dataset (FrameSamples,
  StoreSamples, and through them the PyTorch datasets) calls it;
- :func:`check_sample` checks a dict against a schema (NumPy or PyTorch
  layout), naming the key, the shape and dtype found and the ones expected;
- :func:`vidlabel.torch_data.to_torch_sample` converts a sample for PyTorch
  and :func:`vidlabel.torch_data.collate_frames` batches samples, both from
  each key's ``layout`` (which key is an image, which is ragged);
- :class:`SampleOptions` holds the options that decide which targets a
  sample holds and how they are written (kinds, labels, origins,
  min_confidence, with_masks, box_format, normalized, label_offset), checked
  once where a constructor takes them and passed down from there.

Adding a key
    Add one :class:`SampleKey` to the schema's tuple below (name, dims, dtype,
    unit, meaning, layout, and ``when`` if it is not always there), and give
    its value in the schema's builder (:func:`frame_sample` for frames).
    Conversion for PyTorch and collation follow from ``layout``; the schema
    test (``tests/test_schema.py``) checks every dataset's samples against
    the schema, so the new key's test is one more assertion on its value.

Adding a sample kind (e.g. clips)
    Define its keys as one more :class:`SampleSchema` (a clip's ``image`` has
    dims ``("T", "H", "W", 3)``; a per-frame ragged target has
    ``per_frame=True``: a list of T arrays, each with the key's dims), add it
    to :data:`SCHEMAS`, write its builder beside :func:`frame_sample`, and
    add its datasets to the schema test.

Dimension names: ``H``, ``W`` the image's height and width in pixels; ``N``
the regions (targets) of a frame, ordered by annotation id; ``C`` the
classes (``class_names``); ``T`` the frames of a clip.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from vidlabel.errors import OptionError, SampleSchemaError, check_flag, check_label_offset
from vidlabel.spec import BOX_FORMATS, KINDS, ORIGINS

__all__ = [
    "CLIP",
    "FRAME",
    "SCHEMAS",
    "SampleKey",
    "SampleOptions",
    "SampleSchema",
    "check_sample",
    "clip_sample",
    "frame_sample",
]

#: How a key's value is laid out and batched: "image" (an array with channels last in NumPy, first in
#: PyTorch, stacked in a batch), "array" (a fixed-shape array, stacked), "ragged" (an array whose first
#: dimension differs between samples, batched as a list), "scalar" (a Python value, batched as a list or,
#: for numbers, a 1-D tensor).
Layout = Literal["image", "array", "ragged", "scalar"]

Dim = str | int


@dataclass(frozen=True)
class SampleKey:
    """One key of a sample dict.

    Parameters
    ----------
    name : str
        The dict key.
    dims : tuple of str or int
        The NumPy shape, each entry a dimension name (``"H"``, ``"N"``, ...) or a fixed size; ``()`` for a
        scalar. A name must take one value within a sample (every ``N`` of a frame is the same).
    dtype : str
        A NumPy dtype name (``"uint8"``), or for a scalar ``"str"``, ``"str or None"`` or ``"int"``.
    unit : str
        What the numbers count (pixels, class index, microseconds, ...).
    meaning : str
        One sentence for a user.
    layout : {"image", "array", "ragged", "scalar"}
        How the value is converted for PyTorch and batched.
    when : str
        Empty if every sample holds the key; else when it does (e.g. ``"with_masks=True"``).
    per_frame : bool
        The value is a list with one array per frame of a clip (a ragged target of each frame), each with
        ``dims``.
    """

    name: str
    dims: tuple[Dim, ...]
    dtype: str
    unit: str
    meaning: str
    layout: Layout = "array"
    when: str = ""
    per_frame: bool = False

    def __post_init__(self) -> None:
        if self.layout == "image" and (len(self.dims) < 3 or self.dims[-1] != 3):
            raise SampleSchemaError(f"image key {self.name!r} needs dims (..., H, W, 3), got {self.dims}")
        if self.layout == "scalar" and self.dims:
            raise SampleSchemaError(f"scalar key {self.name!r} has no dims, got {self.dims}")

    @property
    def torch_dims(self) -> tuple[Dim, ...]:
        """The shape in PyTorch: an image's channels move before its height and width (``(3, H, W)``)."""
        if self.layout != "image":
            return self.dims
        return (*self.dims[:-3], self.dims[-1], *self.dims[-3:-1])

    def shape_text(self, torch: bool = False) -> str:
        """The shape as the docs write it, e.g. ``(N, 4)``."""
        dims = self.torch_dims if torch else self.dims
        inner = ", ".join(str(d) for d in dims)
        return f"({inner},)" if len(dims) == 1 else f"({inner})"


@dataclass(frozen=True)
class SampleSchema:
    """The keys of one kind of sample, in the order a sample dict holds them.

    Parameters
    ----------
    name : str
        ``"frame"`` (one frame and its targets); more kinds as they are added.
    keys : tuple of SampleKey
    """

    name: str
    keys: tuple[SampleKey, ...]
    _by_name: dict[str, SampleKey] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {k.name: k for k in self.keys}
        if len(by_name) != len(self.keys):
            raise SampleSchemaError(f"schema {self.name!r} names a key twice")
        object.__setattr__(self, "_by_name", by_name)

    def __getitem__(self, name: str) -> SampleKey:
        return self._by_name[name]

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    @property
    def names(self) -> tuple[str, ...]:
        """Every key's name, in order."""
        return tuple(k.name for k in self.keys)

    @property
    def ragged(self) -> frozenset[str]:
        """Keys whose first dimension differs between samples (batched as lists)."""
        return frozenset(k.name for k in self.keys if k.layout == "ragged" or k.per_frame)

    @property
    def images(self) -> frozenset[str]:
        """Keys holding images (channels last in NumPy, first in PyTorch)."""
        return frozenset(k.name for k in self.keys if k.layout == "image")

    def table(self, torch: bool = False) -> str:
        """The schema as a Markdown table (key, shape, dtype, unit, meaning)."""
        rows = ["| key | shape | dtype | unit | meaning |", "| --- | --- | --- | --- | --- |"]
        for k in self.keys:
            shape = "list of T " + k.shape_text(torch) if k.per_frame else (k.shape_text(torch) if k.dims else "")
            meaning = k.meaning + (f" Only with {k.when}." if k.when else "")
            rows.append(f"| `{k.name}` | {shape} | {k.dtype} | {k.unit} | {meaning} |")
        return "\n".join(rows)


_PIXELS = "pixels of image, or fractions of its width and height with normalized=True"

#: A frame sample: one frame of a video (in a view, if one is set) and the targets on it.
FRAME = SampleSchema(
    "frame",
    (
        SampleKey(
            "image", ("H", "W", 3), "uint8", "RGB, 0-255",
            "The frame in displayed orientation, cropped and resized to the view if one is set; (3, H, W) in "
            "PyTorch (a channels-last view of the decoded frame).",
            layout="image",
        ),
        SampleKey(
            "boxes", ("N", 4), "float32", _PIXELS,
            "One box per target, in box_format (xyxy corners, xywh or cxcywh), rows ordered by annotation id.",
            layout="ragged",
        ),
        SampleKey(
            "labels", ("N",), "int64", "class index",
            "Position of each target's label in class_names, plus label_offset.",
            layout="ragged",
        ),
        SampleKey(
            "track_ids", ("N",), "int64", "track id",
            "The track of each target; -1 when the annotation has no track.",
            layout="ragged",
        ),
        SampleKey(
            "annotation_ids", ("N",), "int64", "annotation id",
            "The dataset row of each target, to trace it back.",
            layout="ragged",
        ),
        SampleKey(
            "frame_labels", ("C",), "float32", "0 or 1 per class",
            "Multi-hot of the time markers active on this frame, indexed by class_names (markers never become "
            "boxes).",
        ),
        SampleKey("video_id", (), "str", "video id", "The video the frame comes from.", layout="scalar"),
        SampleKey(
            "view_id", (), "str or None", "view id", "The view the image is cropped to; None for full frames.",
            layout="scalar",
        ),
        SampleKey(
            "frame_index", (), "int", "frame number",
            "The frame's number: 0-based position in presentation order of the displayed stream.",
            layout="scalar",
        ),
        SampleKey(
            "masks", ("N", "H", "W"), "uint8", "0 or 1 per pixel",
            "One mask per target, aligned with boxes (all zero for a box row).",
            layout="ragged", when="with_masks=True",
        ),
        SampleKey(
            "attributes", ("N", "A"), "float32", "attribute value",
            "Each target's attributes named by with_attributes, in its order (true 1, false 0, NaN where the "
            "row has none).",
            layout="ragged", when="with_attributes",
        ),
    ),
)  # fmt: skip


def _per_frame(key: SampleKey) -> SampleKey:
    """A frame sample's ragged target as a clip's: a list of T arrays, frame t's as a frame sample holds it."""
    return SampleKey(
        key.name, key.dims, key.dtype, key.unit, f"Per frame of the clip: {key.meaning}", layout="ragged",
        when=key.when, per_frame=True,
    )  # fmt: skip


#: A clip sample: T frames of one video (``vidlabel.clip.ClipSpec``) and the targets of every frame.
CLIP = SampleSchema(
    "clip",
    (
        SampleKey(
            "image", ("T", "H", "W", 3), "uint8", "RGB, 0-255",
            "The clip's frames in clip order, each as a frame sample's image; (T, 3, H, W) in PyTorch.",
            layout="image",
        ),
        *(_per_frame(FRAME[name]) for name in ("boxes", "labels", "track_ids", "annotation_ids")),
        SampleKey(
            "frame_labels", ("T", "C"), "float32", "0 or 1 per class",
            "Multi-hot of the time markers active on each frame of the clip, indexed by class_names.",
        ),
        SampleKey(
            "clip_labels", ("C",), "float32", "0 or 1 per class",
            "Multi-hot label of the clip: a clip made from a marker (MarkerClips) has exactly that marker's "
            "label; any other clip every class active on any of its frames (frame_labels.max(axis=0)).",
        ),
        SampleKey(
            "frame_indices", ("T",), "int64", "frame number",
            "Each frame's number (0-based, displayed order); a number repeats only with edge='repeat'.",
        ),
        SampleKey(
            "timestamps_us", ("T",), "int64", "microseconds",
            "Each frame's presentation time, from the stream's own timestamps.",
        ),
        SampleKey("video_id", (), "str", "video id", "The video the clip comes from.", layout="scalar"),
        SampleKey(
            "view_id", (), "str or None", "view id", "The view the images are cropped to; None for full frames.",
            layout="scalar",
        ),
        SampleKey(
            "clip_index", (), "int", "position",
            "The clip's position in the epoch's clip index (ClipSamples.index(epoch)).",
            layout="scalar",
        ),
        _per_frame(FRAME["masks"]),
        _per_frame(FRAME["attributes"]),
    ),
)  # fmt: skip

#: Every sample schema by name.
SCHEMAS: dict[str, SampleSchema] = {FRAME.name: FRAME, CLIP.name: CLIP}


def _regions(values: Any, dtype: type, shape: tuple[int, ...] = (-1,)) -> np.ndarray:
    """``values`` as an array of ``dtype`` and ``shape`` (no copy when it already is one)."""
    arr: np.ndarray = np.asarray(values, dtype=dtype)
    return arr if arr.shape[1:] == shape[1:] and arr.ndim == len(shape) else arr.reshape(shape)


def frame_sample(
    *,
    image: np.ndarray | None,
    boxes: np.ndarray,
    labels: np.ndarray,
    track_ids: np.ndarray,
    annotation_ids: np.ndarray,
    frame_labels: np.ndarray,
    video_id: str,
    view_id: str | None,
    frame_index: int,
    masks: np.ndarray | None = None,
    attributes: np.ndarray | None = None,
) -> dict[str, Any]:
    """A frame sample dict (:data:`FRAME`): the one place a frame sample is assembled.

    Values are taken as they are when they already have the schema's dtype and number of dimensions (no
    copy): a caller that hands out arrays it keeps passes copies.

    Parameters
    ----------
    image : (H, W, 3) uint8 or None
        The frame; None builds the targets alone (the dict without ``image``).
    boxes : (N, 4) float32
        In the output box format (already converted and normalized).
    labels, track_ids, annotation_ids : (N,) int64
        ``labels`` already include ``label_offset``.
    frame_labels : (C,) float32
    video_id : str
    view_id : str or None
    frame_index : int
    masks : (N, H, W) uint8, optional
        Only with ``with_masks=True``.
    attributes : (N, A) float32, optional
        Only with ``with_attributes`` (FrameSamples).

    Returns
    -------
    dict
        The keys of :data:`FRAME` in its order (``image`` left out when None, ``masks`` when not given).
    """
    sample: dict[str, Any] = {} if image is None else {"image": image}
    sample["boxes"] = _regions(boxes, np.float32, (-1, 4))
    sample["labels"] = _regions(labels, np.int64)
    sample["track_ids"] = _regions(track_ids, np.int64)
    sample["annotation_ids"] = _regions(annotation_ids, np.int64)
    sample["frame_labels"] = _regions(frame_labels, np.float32)
    sample["video_id"] = video_id
    sample["view_id"] = view_id
    sample["frame_index"] = int(frame_index)
    if masks is not None:
        if image is not None:
            sample["masks"] = _regions(masks, np.uint8, (-1, int(image.shape[0]), int(image.shape[1])))
        else:
            sample["masks"] = np.asarray(masks, dtype=np.uint8)
    if attributes is not None:
        sample["attributes"] = _regions(attributes, np.float32, (-1, int(np.shape(attributes)[-1])))
    return sample


def clip_sample(
    *,
    image: np.ndarray,
    frames: Sequence[Mapping[str, Any]],
    clip_labels: np.ndarray,
    frame_indices: np.ndarray,
    timestamps_us: np.ndarray,
    clip_index: int,
) -> dict[str, Any]:
    """A clip sample dict (:data:`CLIP`): the one place a clip sample is assembled.

    Parameters
    ----------
    image : (T, H, W, 3) uint8
        The clip's frames.
    frames : sequence of T dict
        The frame samples (:func:`frame_sample`, with or without ``image``) of the clip's frames, in clip
        order: their ragged targets become the clip's per-frame lists, their ``frame_labels`` its
        (T, C) ``frame_labels``, the first one's ``video_id`` and ``view_id`` the clip's.
    clip_labels : (C,) float32
    frame_indices, timestamps_us : (T,) int64
    clip_index : int

    Returns
    -------
    dict
        The keys of :data:`CLIP` in its order (``masks`` and ``attributes`` only when the frame samples hold
        them).

    Raises
    ------
    SampleSchemaError
        If ``frames`` is empty or its length differs from the image's T.
    """
    if not frames or len(frames) != len(image):
        raise SampleSchemaError(f"a clip of {len(image)} images needs as many frame samples, got {len(frames)}")
    first = frames[0]
    sample: dict[str, Any] = {"image": image}
    for name in ("boxes", "labels", "track_ids", "annotation_ids"):
        sample[name] = [f[name] for f in frames]
    sample["frame_labels"] = np.stack([_regions(f["frame_labels"], np.float32) for f in frames])
    sample["clip_labels"] = _regions(clip_labels, np.float32)
    sample["frame_indices"] = _regions(frame_indices, np.int64)
    sample["timestamps_us"] = _regions(timestamps_us, np.int64)
    sample["video_id"] = first["video_id"]
    sample["view_id"] = first["view_id"]
    sample["clip_index"] = int(clip_index)
    if "masks" in first:
        sample["masks"] = [f["masks"] for f in frames]
    if "attributes" in first:
        sample["attributes"] = [f["attributes"] for f in frames]
    return sample


# -- checking ----------------------------------------------------------------------------------------------


def _dtype_name(value: Any) -> str:
    """The dtype of a NumPy array or a PyTorch tensor, as NumPy names it (``torch.uint8`` -> ``uint8``)."""
    return str(value.dtype).removeprefix("torch.")


def _scalar_ok(value: Any, dtype: str) -> bool:
    if dtype == "str":
        return isinstance(value, str)
    if dtype == "str or None":
        return value is None or isinstance(value, str)
    if dtype == "int":
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    raise SampleSchemaError(f"unknown scalar dtype {dtype!r}")


class _Dims:
    """The value each dimension name takes within one sample (the first key that shows it sets it)."""

    def __init__(self, known: Mapping[str, int]) -> None:
        self.values: dict[str, tuple[int, str]] = {k: (int(v), "given") for k, v in known.items()}

    def problem(self, key: str, dims: Sequence[Dim], shape: tuple[int, ...], scope: str = "") -> str | None:
        if len(shape) != len(dims):
            return f"has {len(shape)} dimensions {shape}, expected {len(dims)} {tuple(dims)}"
        for d, size in zip(dims, shape):
            if isinstance(d, int):
                if size != d:
                    return f"has shape {shape}, expected {tuple(dims)}"
                continue
            name = d + scope if d == "N" else d
            seen = self.values.setdefault(name, (int(size), key))
            if seen[0] != size:
                return f"has shape {shape}: {d} = {size}, but {d} = {seen[0]} in {seen[1]}"
        return None


def _key_problems(key: SampleKey, value: Any, dims: _Dims, torch: bool) -> list[str]:
    if key.layout == "scalar":
        ok = _scalar_ok(value, key.dtype)
        return [] if ok else [f"{key.name!r} is {value!r} ({type(value).__name__}), expected {key.dtype}"]
    shape_dims = key.torch_dims if torch else key.dims
    items = list(enumerate(value)) if key.per_frame and isinstance(value, (list, tuple)) else [(None, value)]
    if key.per_frame and not isinstance(value, (list, tuple)):
        return [f"{key.name!r} is {type(value).__name__}, expected a list of one array per frame"]
    if key.per_frame and "T" in dims.values and len(items) != dims.values["T"][0]:
        return [f"{key.name!r} holds {len(items)} arrays, expected T = {dims.values['T'][0]}"]
    out = []
    for t, arr in items:
        where = key.name if t is None else f"{key.name}[{t}]"
        if not hasattr(arr, "shape") or not hasattr(arr, "dtype"):
            out.append(f"{where!r} is {type(arr).__name__}, expected an array {key.shape_text(torch)} {key.dtype}")
            continue
        if _dtype_name(arr) != key.dtype:
            out.append(f"{where!r} has dtype {_dtype_name(arr)}, expected {key.dtype}")
        problem = dims.problem(where, shape_dims, tuple(int(s) for s in arr.shape), "" if t is None else f"[{t}]")
        if problem is not None:
            out.append(f"{where!r} {problem}")
    return out


def check_sample(
    sample: Mapping[str, Any],
    schema: SampleSchema | str = FRAME,
    *,
    torch: bool = False,
    dims: Mapping[str, int] | None = None,
    optional: bool | Iterable[str] | None = None,
) -> None:
    """Check a sample dict against a schema: every key known, present unless optional, of its dtype and shape.

    Parameters
    ----------
    sample : mapping
        A NumPy sample (or, with ``torch=True``, one with tensors: anything with ``shape`` and ``dtype``).
    schema : SampleSchema or str
        The schema or its name in :data:`SCHEMAS` (default: a frame sample).
    torch : bool
        Expect the PyTorch layout (images with channels first).
    dims : mapping of str to int, optional
        Known dimension sizes, e.g. ``{"C": len(class_names), "H": 48, "W": 64}``.
    optional : bool or iterable of str, optional
        True: the keys with a ``when`` (``masks``, ``attributes``) must be there; False: they must not; names:
        those must be there and the other keys with a ``when`` must not; None: either.

    Raises
    ------
    SampleSchemaError
        Naming every problem: a missing or unknown key, a wrong dtype, a shape that does not match the key's
        dims or that gives one dimension name two sizes.
    """
    if isinstance(schema, str):
        if schema not in SCHEMAS:
            raise SampleSchemaError(f"unknown sample schema {schema!r}; known: {', '.join(SCHEMAS)}")
        schema = SCHEMAS[schema]
    if not isinstance(sample, Mapping):
        raise SampleSchemaError(f"a {schema.name} sample is a dict, got {type(sample).__name__}")
    problems = [f"unknown key {k!r}" for k in sample if k not in schema]
    sizes = _Dims(dims or {})
    wanted = None if optional is None or isinstance(optional, bool) else frozenset(optional)
    for key in schema.keys:
        must = optional is True or (wanted is not None and key.name in wanted)
        must_not = optional is False or (wanted is not None and key.name not in wanted)
        if key.name not in sample:
            if not key.when or must:
                problems.append(f"missing key {key.name!r}" + (f" (expected {key.when})" if key.when else ""))
            continue
        if key.when and must_not:
            problems.append(f"key {key.name!r} is there, expected only {key.when}")
        problems += _key_problems(key, sample[key.name], sizes, torch)
    if problems:
        raise SampleSchemaError(f"not a {schema.name} sample of vidlabel.schema: " + "; ".join(problems))


# -- options -----------------------------------------------------------------------------------------------


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
