"""The sample schema: every key of a vidlabel sample, with its shape, dtype, unit and meaning.

A sample is the plain dict of the spec's table "What a sample contains". This
module is the one place that says what is in it, builds it and checks it:

- :data:`FRAME` and :data:`CLIP` list the keys of a frame and a clip sample
  (each a :class:`SampleSchema` of :class:`SampleKey` records, in the order a
  sample dict holds them); :data:`SCHEMAS` holds them by name, and every
  builder and converter looks them up there when it runs;
- :func:`build_sample` assembles every sample: each value as its key holds it
  (:meth:`SampleKey.coerce`), keys with a ``derive`` computed from the
  others; :func:`frame_sample` and :func:`clip_sample` are its front doors,
  which FrameSamples, StoreSamples, ClipSamples and StoreClips (and through
  them every PyTorch dataset) call;
- :func:`check_sample` checks a dict against a schema (NumPy or PyTorch
  layout), naming the key, the shape and dtype found and the ones expected;
- :func:`vidlabel.torch_data.collate_frames` batches frame and clip samples,
  and ``vidlabel.torch_data._collate.to_torch_sample`` converts them for
  PyTorch, both from each key's ``layout`` (:func:`key_layouts`: which key
  is an image, which is ragged);
- :class:`SampleOptions` holds the options that decide which targets a
  sample holds and how they are written (kinds, labels, origins,
  min_confidence, with_masks, box_format, normalized, label_offset), checked
  once where a constructor takes them and passed down from there.

Adding a key
    Add one :class:`SampleKey` to the schema's tuple below (name, dims, dtype,
    unit, meaning, layout, and ``when`` if it is not always there). A value
    that follows from the sample's other keys is its ``derive``, and that is
    all; a new value is passed to :func:`frame_sample` by name where it is
    computed. A frame key that a clip holds per frame is one more
    ``_per_frame`` entry of :data:`CLIP`: :func:`clip_sample` gathers it from
    the clip's frame samples. Conversion for PyTorch and collation follow
    from ``layout``; ``tests/torch_data/test_sample_schema.py`` and
    ``tests/torch_data/test_schema_keys.py`` check every dataset's samples
    against the schemas, so the new key's test is one more assertion on its
    value (``test_schema_keys.py`` shows a toy key reaching every dataset).

Adding a sample kind
    Define its keys as one more :class:`SampleSchema`, add it to
    :data:`SCHEMAS`, write its front door beside :func:`clip_sample`, and
    add its datasets to the schema tests.

Dimension names: ``H``, ``W`` the image's height and width in pixels; ``N``
the regions (targets) of a frame, ordered by annotation id; ``C`` the
classes (``class_names``); ``T`` the frames of a clip.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

# The option helpers stay importable from here, where the datasets import them.
from vidlabel._sample_options import SampleOptions
from vidlabel._sample_options import as_names as as_names
from vidlabel._sample_options import attribute_values as attribute_values
from vidlabel._sample_options import check_kinds as check_kinds
from vidlabel._sample_options import check_with_attributes as check_with_attributes
from vidlabel._sample_options import option_shown as option_shown
from vidlabel._sample_options import sample_options as sample_options
from vidlabel.errors import SampleSchemaError

__all__ = [
    "CLIP",
    "FRAME",
    "SCHEMAS",
    "SampleKey",
    "SampleOptions",
    "SampleSchema",
    "build_sample",
    "check_sample",
    "clip_sample",
    "frame_sample",
    "key_layouts",
    "schema_of",
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
    derive : callable, optional
        The value from the sample's other keys (a function of the sample dict built so far, returning the
        value or None to leave the key out), used when the builder is not given one: a key whose value
        follows from the others is this one entry and nothing else.
    """

    name: str
    dims: tuple[Dim, ...]
    dtype: str
    unit: str
    meaning: str
    layout: Layout = "array"
    when: str = ""
    per_frame: bool = False
    derive: Callable[[Mapping[str, Any]], Any] | None = field(default=None, repr=False, compare=False)
    _np_dtype: np.dtype | None = field(init=False, default=None, repr=False, compare=False)
    _fixed: tuple[tuple[int, int], ...] = field(init=False, default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.layout == "image" and (len(self.dims) < 3 or self.dims[-1] != 3):
            raise SampleSchemaError(f"image key {self.name!r} needs dims (..., H, W, 3), got {self.dims}")
        if self.layout == "scalar" and self.dims:
            raise SampleSchemaError(f"scalar key {self.name!r} has no dims, got {self.dims}")
        if self.layout in ("array", "ragged") and not self.per_frame:
            object.__setattr__(self, "_np_dtype", np.dtype(self.dtype))
        fixed = tuple((axis, d) for axis, d in enumerate(self.dims) if isinstance(d, int))
        object.__setattr__(self, "_fixed", fixed)

    def coerce(self, value: Any, image: Any = None) -> Any:
        """``value`` as this key holds it: an array of the key's dtype and number of dimensions (no copy
        when it already is one; an empty or flat one reshaped, ``H`` and ``W`` taken from ``image``'s shape,
        another named dimension left to NumPy), an ``int`` scalar as a Python int; an image, a per-frame list
        and other scalars as they are."""
        np_dtype = self._np_dtype
        if np_dtype is None:
            return int(value) if self.dtype == "int" else value
        arr: np.ndarray = np.asarray(value, dtype=np_dtype)
        if arr.ndim == len(self.dims):
            shape = arr.shape
            for axis, size in self._fixed:
                if shape[axis] != size:
                    break
            else:
                return arr
        sizes = {} if image is None else {"H": int(image.shape[-3]), "W": int(image.shape[-2])}
        want = [d if isinstance(d, int) else sizes.get(d, -1) for d in self.dims]
        return arr if want.count(-1) > 1 else arr.reshape(want)

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
    #: The key holding the image ("" if none).
    image_key: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {k.name: k for k in self.keys}
        if len(by_name) != len(self.keys):
            raise SampleSchemaError(f"schema {self.name!r} names a key twice")
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "image_key", next((k.name for k in self.keys if k.layout == "image"), ""))

    def with_keys(self, *keys: SampleKey) -> SampleSchema:
        """This schema with ``keys`` added at its end (a new key's test installs one in :data:`SCHEMAS`)."""
        return SampleSchema(self.name, (*self.keys, *keys))

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


def _clip_labels(sample: Mapping[str, Any]) -> np.ndarray:
    """Every class active on any frame of the clip: the clip label of a clip not made from a marker."""
    frame_labels: np.ndarray = sample["frame_labels"]
    return frame_labels.max(axis=0)


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
            derive=_clip_labels,
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


def build_sample(schema: SampleSchema, given: Mapping[str, Any]) -> dict[str, Any]:
    """A sample dict of ``schema`` from the values ``given`` by key name: the one place a sample is assembled.

    Each value is taken as its key holds it (:meth:`SampleKey.coerce`); a key not given, or given as None
    where its dtype does not allow None, is computed by its ``derive`` if it has one, else left out (an
    image left out builds the targets alone; an optional key's ``when`` did not hold).

    Parameters
    ----------
    schema : SampleSchema
    given : mapping of str to value
        Values by key name, as the keys' docs say (a NumPy array or anything ``numpy.asarray`` takes).

    Returns
    -------
    dict
        The schema's keys that have a value, in the schema's order.

    Raises
    ------
    SampleSchemaError
        If ``given`` names a key the schema lacks, or lacks a key every sample holds (other than an image).
    """
    unknown = given.keys() - schema._by_name.keys()
    if unknown:
        first = next(name for name in given if name in unknown)
        raise SampleSchemaError(f"{schema.name} sample: unknown key {first!r}; known: {', '.join(schema.names)}")
    image = given.get(schema.image_key) if schema.image_key else None
    values: dict[str, Any] = {}
    derived = []
    for key in schema.keys:
        value = given.get(key.name)
        if value is not None or (key.dtype == "str or None" and key.name in given):
            values[key.name] = key.coerce(value, image)
        elif key.derive is not None:
            derived.append(key)
        elif not key.when and key.layout != "image":
            raise SampleSchemaError(f"{schema.name} sample: no value for key {key.name!r}")
    for key in derived:
        value = key.derive(values)  # type: ignore[misc]
        if value is not None:
            values[key.name] = key.coerce(value, image)
    return values if not derived else {name: values[name] for name in schema.names if name in values}


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
    **more: Any,
) -> dict[str, Any]:
    """A frame sample dict (``SCHEMAS["frame"]``, :data:`FRAME`), built by :func:`build_sample`.

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
    **more
        The values of any further key of the schema.

    Returns
    -------
    dict
        The keys of the schema in its order (``image`` left out when None, ``masks`` and ``attributes`` when
        not given).

    Raises
    ------
    SampleSchemaError
        If ``more`` names a key the schema lacks.
    """
    given = {
        "image": image, "boxes": boxes, "labels": labels, "track_ids": track_ids, "annotation_ids": annotation_ids,
        "frame_labels": frame_labels, "video_id": video_id, "view_id": view_id, "frame_index": frame_index,
        "masks": masks, "attributes": attributes, **more,
    }  # fmt: skip
    return build_sample(SCHEMAS["frame"], given)


def clip_sample(
    *,
    image: np.ndarray,
    frames: Sequence[Mapping[str, Any]],
    frame_indices: np.ndarray,
    timestamps_us: np.ndarray,
    clip_index: int,
    clip_labels: np.ndarray | None = None,
    **more: Any,
) -> dict[str, Any]:
    """A clip sample dict (``SCHEMAS["clip"]``, :data:`CLIP`), built by :func:`build_sample`.

    A clip key that a frame sample holds too comes from the frame samples: a per-frame key as the list of
    their values, an array whose first dimension is ``T`` as their values stacked, a scalar as the first
    frame's.

    Parameters
    ----------
    image : (T, H, W, 3) uint8
        The clip's frames.
    frames : sequence of T dict
        The frame samples (:func:`frame_sample`, with or without ``image``) of the clip's frames, in clip
        order: their ragged targets become the clip's per-frame lists, their ``frame_labels`` its
        (T, C) ``frame_labels``, the first one's ``video_id`` and ``view_id`` the clip's.
    frame_indices, timestamps_us : (T,) int64
    clip_index : int
    clip_labels : (C,) float32, optional
        None: every class active on any of the clip's frames.
    **more
        The values of any further key of the clip schema.

    Returns
    -------
    dict
        The keys of the schema in its order (``masks`` only when the frame samples hold them).

    Raises
    ------
    SampleSchemaError
        If ``frames`` is empty or its length differs from the image's T.
    """
    if not frames or len(frames) != len(image):
        raise SampleSchemaError(f"a clip of {len(image)} images needs as many frame samples, got {len(frames)}")
    schema = SCHEMAS["clip"]
    given: dict[str, Any] = {
        "image": image, "frame_indices": frame_indices, "timestamps_us": timestamps_us, "clip_index": clip_index,
        "clip_labels": clip_labels, **more,
    }  # fmt: skip
    first = frames[0]
    for key in schema.keys:
        if key.name in given or key.name not in first:
            continue
        if key.per_frame:
            given[key.name] = [f[key.name] for f in frames]
        elif key.layout == "scalar":
            given[key.name] = first[key.name]
        elif key.dims[:1] == ("T",):
            given[key.name] = np.stack([f[key.name] for f in frames])
    return build_sample(schema, given)


# -- what the converters read --------------------------------------------------------------------------------

_KEY_SETS: list[Any] = [(), frozenset(), frozenset()]


def key_layouts() -> tuple[frozenset[str], frozenset[str]]:
    """(image keys, ragged keys) over the schemas of :data:`SCHEMAS`: the keys holding images (channels last in
    NumPy, first in PyTorch) and those whose first dimension differs between samples (a clip's per-frame lists
    too), which the PyTorch converter and collate read; worked out again only when :data:`SCHEMAS` changes.

    Returns
    -------
    (frozenset of str, frozenset of str)
    """
    schemas = tuple(SCHEMAS.values())
    # A tuple compares its items by identity first: this is cheap while the schemas stay the same objects.
    if schemas != _KEY_SETS[0]:
        images = frozenset().union(*(schema.images for schema in schemas))
        ragged = frozenset().union(*(schema.ragged for schema in schemas))
        _KEY_SETS[:] = [schemas, images, ragged]
    return _KEY_SETS[1], _KEY_SETS[2]


def schema_of(sample: Mapping[str, Any]) -> SampleSchema:
    """The schema of :data:`SCHEMAS` that holds the most of ``sample``'s keys (the first one on a tie).

    Parameters
    ----------
    sample : mapping
        A sample dict (NumPy or tensors, extra keys allowed).

    Returns
    -------
    SampleSchema
    """
    schemas = list(SCHEMAS.values())
    held = [sum(name in schema for name in sample) for schema in schemas]
    return schemas[held.index(max(held))]


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
    schema: SampleSchema | str = "frame",
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
