"""StoreSamples: the samples of a frame store, with the same options and sample dict as FrameSamples.

The store keeps every box and mask region of each stored frame and every
marker as a segment; the options here choose what a training run sees,
exactly as :class:`vidlabel.FrameSamples` does from the release: ``kinds``
(which region kinds are targets, and which kinds make a frame a sample),
``labels`` (keep and renumber), ``box_format``/``normalized``/``label_offset``
and ``with_masks``.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from vidlabel._attribute_rows import (
    attributes_pass,
    check_attribute_filter,
    check_declared,
    declaring_from_rows,
    declaring_from_schema,
    decode_attributes,
)
from vidlabel.errors import OptionError, StoreCorruptError, VidlabelWarning, check_flag
from vidlabel.geometry import boxes_from_xyxy, decode_rle, make_sample
from vidlabel.schema import (
    SampleOptions,
    attribute_values,
    check_with_attributes,
    frame_sample,
    option_shown,
    sample_options,
)
from vidlabel.spec import KINDS
from vidlabel.store._fs import STORE_CHANGED
from vidlabel.store._position import positions_by_code, row_in_range, row_number, sample_position

__all__ = ["StoreSamples", "warn_unexported_kinds"]


def _check_frames(frames: str | None) -> None:
    if frames not in (None, "annotated", "stored"):
        raise OptionError(f"unknown frames mode {frames!r}; allowed: None (as exported), 'annotated', 'stored'")


def _check_store(store: Any) -> None:
    """Refuse a ``store`` that is no FrameStore (a path, a Dataset), saying what to pass instead."""
    if not (callable(getattr(store, "video_data", None)) and hasattr(store, "class_names")):
        hint = ""
        if isinstance(store, (str, os.PathLike)):
            hint = " (open a store folder with vidlabel.store.open_store(path) first)"
        elif callable(getattr(store, "snapshot", None)):
            hint = " (for a Dataset: vidlabel.FrameSamples(ds), or export it and open_store the store)"
        raise OptionError(f"StoreSamples takes a FrameStore, got {store!r}{hint}")


def _selected_labels(vocabulary: list[str], labels: Sequence[str] | None) -> list[str]:
    """The class names of a selection: ``labels`` (each in the store's ``vocabulary``), or the whole vocabulary."""
    if labels is None:
        return list(vocabulary)
    unknown = [x for x in labels if x not in vocabulary]
    if unknown:
        raise OptionError(
            f"unknown label {unknown[0]!r} in {option_shown('labels', labels)}; the store's "
            f"labels: {', '.join(vocabulary)}"
        )
    return list(labels)


def warn_unexported_kinds(store: Any, kinds: tuple[str, ...]) -> None:
    """Warn when ``kinds`` asks for frames the export did not store: a ``frames="annotated"`` export holds only
    the frames with an annotation of its own ``kinds``, so frames whose only annotation is of another kind are not
    in the store (the export warned about box and mask rows it left out, never about markers)."""
    narrow: list[tuple[str, list[str], list[str]]] = []  # (store folder, its kinds, the kinds it lacks)
    for part in getattr(store, "_parts", None) or [store]:  # each store of a folder of stores
        export = part.attrs.get("export") or {}
        exported = export.get("kinds")
        if export.get("frames", "annotated") == "all" or not isinstance(exported, list):
            continue
        missing = [k for k in kinds if k not in exported]
        if missing:
            narrow.append((str(getattr(part, "folder", store.path)), exported, missing))
    if not narrow:
        return
    where, exported, missing = narrow[0]
    others = f" (and {len(narrow) - 1} more of the stores read)" if len(narrow) > 1 else ""
    wanted = sorted({*exported, *kinds}, key=KINDS.index)
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    frame, stacklevel = sys._getframe(0), 1  # the warning points at the first caller outside vidlabel
    while frame.f_back is not None and frame.f_code.co_filename.startswith(package):
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(
        f"store {where!r}{others} was exported with frames='annotated', kinds={exported!r}: it holds only the "
        f"frames with a {' or '.join(exported)} annotation, so frames whose only selected annotation is a "
        f"{' or '.join(missing)} are not in it, nor among these samples (kinds={list(kinds)!r}). To have them, "
        f"export with kinds={wanted!r} (vidlabel.export(..., kinds=...)) or every frame (`vidlabel export ... "
        "--frames all`)",
        VidlabelWarning,
        stacklevel=stacklevel,
    )


class StoreSamples:
    """The samples of a :class:`~vidlabel.store.FrameStore` under a choice of targets.

    Parameters
    ----------
    store : FrameStore
    kinds : sequence of {"box", "mask", "marker"}
        Region kinds that become targets; with a store exported with
        ``frames="annotated"`` also which kinds make a stored frame a sample
        ("marker": frames inside a selected marker). Markers always fill
        ``frame_labels``.
    labels : sequence of str, optional
        Keep only these labels; ``class_names`` is this list, in this order.
    box_format : {"xyxy", "xywh", "cxcywh"}
    normalized : bool
    label_offset : int
        Added to ``labels``; an integer >= 0.
    with_masks : bool
        Decode masks into the samples (all-zero for box regions).
    frames : {None, "annotated", "stored"}
        None: as exported (every stored frame of a ``frames="all"`` export,
        else the frames with a selected annotation); "annotated": frames with a
        selected annotation; "stored": every stored frame.
    all_rows : bool
        Shorthand for ``frames="stored"``.
    options : SampleOptions, optional
        ``kinds``, ``labels``, ``with_masks``, ``box_format``, ``normalized``
        and ``label_offset`` in one object (:class:`vidlabel.schema.SampleOptions`);
        those keywords are then left at their defaults. Its ``origins`` and
        ``min_confidence`` must be None: a store keeps no origin or
        confidence of its markers.
    with_attributes : sequence of str, optional
        Deliver these bool or number attributes of each target, as
        :class:`vidlabel.FrameSamples` does: the sample's ``attributes``
        (N, A) float32 in this order (true 1, false 0, NaN where a region
        has none, and for every region of a store exported without
        attributes).
    attributes : mapping name -> value or (op, value), optional
        Keep only the regions whose attributes pass every condition, as
        :class:`vidlabel.FrameSamples` does (``{"occluded": False,
        "visibility": (">=", 0.5)}``): a condition concerns the labels whose
        schema declares the attribute (the release's, recorded by the export;
        for a store exported without it, the labels some region of which
        holds it), other labels' regions pass it. Frames left without a
        selected target are no samples (unless ``frames="stored"``).

    Raises
    ------
    OptionError
        On an unknown kind, label or box format, a label named twice, a bad ``label_offset``, a True/False
        option (``normalized``, ``with_masks``, ``all_rows``) given anything else, or a ``store`` that is no
        FrameStore (a path: open it with ``open_store`` first); on ``options`` that is not a SampleOptions,
        is given with one of its keywords set, or sets ``origins`` or ``min_confidence``; on ``with_attributes``
        that are not distinct names or name an attribute no label declares (where some are), and when a sample
        is read, on one of them that is a text attribute; on ``attributes`` that are not conditions, name an
        attribute no label declares (naming it and the declared ones), or give a value whose type (bool, number,
        text) is not the attribute's declared type (naming the value, the type and the labels).
    """

    def __init__(
        self,
        store: Any,
        *,
        kinds: Sequence[str] = ("box", "mask"),
        labels: Sequence[str] | None = None,
        box_format: str = "xyxy",
        normalized: bool = False,
        label_offset: int = 0,
        with_masks: bool = False,
        frames: str | None = None,
        all_rows: bool = False,
        options: SampleOptions | None = None,
        with_attributes: Sequence[str] | None = None,
        attributes: Mapping[str, Any] | None = None,
    ) -> None:
        _check_store(store)
        targets = sample_options(
            options, "StoreSamples", kinds=kinds, labels=labels, box_format=box_format, normalized=normalized,
            label_offset=label_offset, with_masks=with_masks,
        )  # fmt: skip
        if targets.origins is not None or targets.min_confidence is not None:
            raise OptionError(
                f"StoreSamples: options={targets!r} selects by origins or min_confidence, which a frame store "
                "cannot (it keeps no origin or confidence of its markers): leave them None, or read the release "
                "with vidlabel.FrameSamples"
            )
        _check_frames(frames)
        all_rows = check_flag("all_rows", all_rows)
        self.store = store
        self.options = targets
        self.kinds = targets.kinds
        self.box_format = targets.box_format
        self.normalized = targets.normalized
        self.label_offset = targets.label_offset
        self.with_masks = targets.with_masks
        self.with_attributes = check_with_attributes(with_attributes)
        self.attribute_filter = check_attribute_filter(attributes)
        vocabulary = list(store.class_names)
        self._class_names = _selected_labels(vocabulary, targets.labels)
        class_of = {name: i for i, name in enumerate(self._class_names)}
        self._label_map = np.array([class_of.get(x, -1) for x in vocabulary] + [-1], dtype=np.int64)
        self._want_box = "box" in targets.kinds
        self._want_mask = "mask" in targets.kinds
        exported = store.attrs.get("export", {}).get("frames", "annotated")
        if all_rows:
            frames = "stored"
        if frames is None:
            frames = "stored" if (exported == "all" or store.frames_only) else "annotated"
        self.frames = frames
        self._declaring = self._checked_declaring(vocabulary)
        self._prepared: dict[str, _VideoTargets] = {}
        self._positions = self._select(frames)
        self._positions.setflags(write=False)
        # each selected sample's (video, row), looked up once here rather than through the store's index per read
        chosen = store.rows[self._positions]
        self._codes, self._rows = np.ascontiguousarray(chosen[:, 0]), np.ascontiguousarray(chosen[:, 1])

    # -- selection ----------------------------------------------------------------------------------------

    def _keep_regions(self, data: Any) -> np.ndarray:
        """(N,) bool: regions of a video whose kind and label are selected."""
        reg = data.regions
        if not reg:
            return np.zeros(0, bool)
        is_mask = np.diff(reg["mask_offsets"]) > 0
        keep = np.where(is_mask, self._want_mask, self._want_box)
        keep &= self._label_map[reg["label_index"]] >= 0
        if self.attribute_filter:
            keep &= attributes_pass(_region_decoded(reg), reg["label_index"], self.attribute_filter, self._declaring)
        return keep

    def _checked_declaring(self, vocabulary: list[str]) -> dict[str, dict[int, str]]:
        """:meth:`_attribute_declaring` when attributes are filtered or delivered, after refusing a name no
        label declares or a filter value of another type (see :func:`check_declared`)."""
        if not (self.attribute_filter or self.with_attributes):
            return {}
        declaring = self._attribute_declaring(vocabulary)
        # a store without any attribute delivers NaN columns, so that one pipeline reads any store
        if declaring:
            check_declared(self.with_attributes, declaring, vocabulary, "with_attributes")
        check_declared(self.attribute_filter or {}, declaring, vocabulary)
        return declaring

    def _attribute_declaring(self, vocabulary: list[str]) -> dict[str, dict[int, str]]:
        """Attribute name -> {code (in the store's vocabulary): type} of the labels that declare it: the
        release's schema as the export recorded it, else the labels some region of the store holds it on."""
        schema = self.store.attrs.get("attribute_schema")
        if isinstance(schema, dict) and schema:
            return declaring_from_schema(schema, vocabulary)
        codes: list[int] = []
        decoded: list[Any] = []
        for video_id in self.store.video_ids:
            reg = self.store.video_data(video_id).regions
            if reg and "attr_offsets" in reg:
                codes += reg["label_index"].tolist()
                decoded += _region_decoded(reg)
        return declaring_from_rows(codes, decoded)

    def _select(self, frames: str) -> np.ndarray:
        rows = self.store.rows
        if frames == "stored" or len(rows) == 0:
            return np.arange(len(rows), dtype=np.int64)
        keep_sample = np.zeros(len(rows), bool)
        for code, sel in positions_by_code(rows[:, 0]):
            video_id = self.store.video_ids[code]
            data = self.store.video_data(video_id)
            t = data.frame_number.size
            bad = np.flatnonzero((rows[sel, 1] < 0) | (rows[sel, 1] >= t))
            if bad.size:  # a damaged /index: said as FrameStore.index says it, not numpy's IndexError below
                k = int(sel[int(bad[0])])
                raise self.store._index_row_error(k, int(rows[k, 1]), video_id, t)
            annotated = np.zeros(t, bool)
            if data.regions:
                keep = self._keep_regions(data)
                row_of_region = np.repeat(np.arange(t), np.diff(data.regions["row_offsets"]))
                annotated[row_of_region[keep]] = True
            if "marker" in self.kinds and data.segments:
                seg = data.segments
                ok = (self._label_map[seg["label_index"]] >= 0) & (seg["start_index"] >= 0)
                ok &= seg["end_index"] >= seg["start_index"]
                diff = np.zeros(t + 1, np.int64)
                np.add.at(diff, seg["start_index"][ok], 1)
                np.add.at(diff, seg["end_index"][ok] + 1, -1)
                annotated |= np.cumsum(diff)[:t] > 0
            keep_sample[sel] = annotated[rows[sel, 1]]
        return np.flatnonzero(keep_sample).astype(np.int64)

    # -- what it holds -------------------------------------------------------------------------------------

    @property
    def class_names(self) -> list[str]:
        """Class names; ``labels`` are positions in this list plus ``label_offset``."""
        return list(self._class_names)

    @property
    def positions(self) -> np.ndarray:
        """(M,) int64 positions of these samples in the store's sample list."""
        return self._positions

    def __len__(self) -> int:
        return int(self._positions.shape[0])

    @property
    def index(self) -> list[tuple[str, int]]:
        """(video_id, frame_number) of each sample, in order."""
        return self.store._index_at(self._positions)  # the selected samples only, not the whole store's list

    def locate(self, j: int) -> tuple[str, int]:
        """(video_id, stored row) of sample ``j``.

        Raises
        ------
        SampleIndexTypeError
            If ``j`` is not an integer (a float, a string, a bool).
        SampleOutOfRangeError
            If ``j`` is outside ``[-len(self), len(self))``.
        """
        n = self._rows.shape[0]
        # plain ints in range (what samplers hand over) skip the full check, which builds its message up front
        if type(j) is not int or not -n <= j < n:
            j = sample_position(j, n, f"the {n} selected samples of store {str(self.store.path)!r}")
        return self.store.video_ids[int(self._codes[j])], int(self._rows[j])

    # -- samples ----------------------------------------------------------------------------------------------

    def targets_row(self, video_id: str, row: int) -> dict[str, Any]:
        """The sample dict of a stored row without ``image`` (boxes in the stored frame's pixels).

        Raises
        ------
        UnknownVideoError, FrameOutOfRangeError, SampleIndexTypeError
            As :meth:`sample_row`.
        """
        sample = self.sample_row(video_id, row, read_image=False)
        sample.pop("image", None)
        return sample

    def _targets(self, video_id: str) -> _VideoTargets:
        """The selected regions of a video as CSR over its stored rows (built once per process)."""
        prepared = self._prepared.get(video_id)
        if prepared is None:
            prepared = _VideoTargets(self.store.video_data(video_id), self)
            self._prepared[video_id] = prepared
        return prepared

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_prepared"] = {}
        return state

    def sample_row(
        self, video_id: str, row: int, image: np.ndarray | None = None, *, read_image: bool = True
    ) -> dict[str, Any]:
        """The sample dict of a stored row (``image`` read from the store unless given).

        Raises
        ------
        UnknownVideoError
            If the store does not hold the video.
        FrameOutOfRangeError
            (an IndexError) If ``row`` is outside ``[0, T)`` of the video's T stored rows (-1 too: rows are
            not counted from the end).
        SampleIndexTypeError
            (a TypeError) If ``row`` is not an integer (1.5, True).
        """
        t = self._targets(video_id)
        if type(row) is not int or not 0 <= row < t.rows:
            row = row_number(row, video_id)
            row_in_range(row, t.rows, video_id, self.store.path)
        if image is None:
            image = self.store.read_row(video_id, row) if read_image else np.zeros((t.height, t.width, 3), np.uint8)
        a, b = int(t.offsets[row]), int(t.offsets[row + 1])
        masks = None if not self.with_masks else self._masks(t, video_id, row, a, b)
        frame = int(t.frame_number[row])
        frame_labels = np.zeros(len(self._class_names), np.float32)
        if t.seg_start.size:
            frame_labels[t.seg_class[(t.seg_start <= frame) & (frame <= t.seg_end)]] = 1.0
        attributes = None if t.attributes is None else t.attributes[a:b].copy()
        if image.shape[0] != t.height or image.shape[1] != t.width:
            # an image of another size given by the caller: its size normalizes the boxes
            return make_sample(
                image=image, boxes_xyxy=t.boxes[a:b], label_index=t.labels[a:b], track_ids=t.tracks[a:b].copy(),
                annotation_ids=t.anns[a:b].copy(), frame_labels=frame_labels, video_id=video_id,
                view_id=t.view_id, frame_index=frame, masks=masks, box_format=self.box_format,
                normalized=self.normalized, label_offset=self.label_offset, attributes=attributes,
            )  # fmt: skip
        # the video's targets were converted once (t.out_*): a sample takes copies of its rows, which it may change
        return frame_sample(
            image=image, boxes=t.out_boxes[a:b].copy(), labels=t.out_labels[a:b].copy(),
            track_ids=t.tracks[a:b].copy(), annotation_ids=t.anns[a:b].copy(), frame_labels=frame_labels,
            video_id=video_id, view_id=t.view_id, frame_index=frame, masks=masks, attributes=attributes,
        )  # fmt: skip

    def _masks(self, t: _VideoTargets, video_id: str, row: int, a: int, b: int) -> np.ndarray:
        """(N, H, W) uint8: the masks of regions ``a:b`` of stored row ``row`` (all zero for box regions)."""
        masks = np.zeros((b - a, t.height, t.width), np.uint8)
        mo, mc = t.mask_offsets, t.mask_counts
        for j, r in enumerate(t.region[a:b].tolist()):
            if mo[r + 1] > mo[r]:
                counts = mc[mo[r] : mo[r + 1]].tobytes()
                try:
                    masks[j] = decode_rle({"size": [t.height, t.width], "counts": counts})
                except ValueError as err:
                    raise StoreCorruptError(
                        f"video {video_id!r} of store {str(self.store.path)!r}: the mask of region {r} (stored "
                        f"row {row}) is not a mask of the {t.width}x{t.height} frame ({err}): {STORE_CHANGED}",
                        path=str(self.store.path),
                        video_id=video_id,
                    ) from err
        return masks

    def sample(self, j: int) -> dict[str, Any]:
        """The sample dict of sample ``j`` (NumPy arrays)."""
        video_id, row = self.locate(j)
        return self.sample_row(video_id, row)

    def samples(
        self, js: Sequence[int], allocate: Callable[[tuple[int, ...]], np.ndarray] | None = None
    ) -> list[dict[str, Any]]:
        """Several samples, their frames read grouped by video and chunk (each chunk once).

        ``allocate``, when two or more frames all share a size (H, W), is
        called once with ``(len(js), H, W, 3)`` and returns a C-contiguous
        uint8 array that receives the frames: each sample's ``image`` is then
        a view of its row. When their sizes differ it is called once with
        ``(nbytes,)``, the frames' bytes together, and each ``image`` is a
        view of that flat buffer, back to back in the order of ``js``.
        """
        located = [self.locate(j) for j in js]
        dest_of: list[np.ndarray] | None = None
        if allocate is not None and len(located) > 1:
            shapes = [(t.height, t.width, 3) for t in (self._targets(video_id) for video_id, _row in located)]
            if len(set(shapes)) == 1:
                out = allocate((len(located), *shapes[0]))
                dest_of = [out[k] for k in range(len(located))]
            else:
                ends = np.cumsum([h * w * c for h, w, c in shapes]).tolist()
                flat = allocate((int(ends[-1]),))
                dest_of = [flat[e - h * w * c : e].reshape(h, w, c) for e, (h, w, c) in zip(ends, shapes)]
        by_video: dict[str, list[int]] = {}
        for k, (video_id, _row) in enumerate(located):
            by_video.setdefault(video_id, []).append(k)
        images: list[np.ndarray | None] = [None] * len(located)
        for video_id, ks in by_video.items():
            rows = [located[k][1] for k in ks]
            dest = None if dest_of is None else [dest_of[k] for k in ks]
            for k, img in zip(ks, self.store.read_rows(video_id, rows, dest)):
                images[k] = img
        return [self.sample_row(v, r, image=img) for (v, r), img in zip(located, images)]

    def describe(self) -> dict[str, Any]:
        """The store's description plus these options and the sample count."""
        out = self.store.describe()
        out.update(
            {
                "samples": len(self),
                "class_names": self.class_names,
                "options": {
                    "kinds": list(self.kinds), "box_format": self.box_format, "normalized": self.normalized,
                    "label_offset": self.label_offset, "with_masks": self.with_masks, "frames": self.frames,
                    **({"with_attributes": list(self.with_attributes)} if self.with_attributes else {}),
                    **({"attributes": {k: list(v) for k, v in self.attribute_filter.items()}}
                       if self.attribute_filter else {}),
                },
            }
        )  # fmt: skip
        return out

    def __repr__(self) -> str:
        return f"StoreSamples(store={str(self.store.path)!r}, samples={len(self)}, kinds={self.kinds})"


class _VideoTargets:
    """One video's selected regions (kind and label filters applied, classes renumbered) as CSR over its rows."""

    def __init__(self, data: Any, sel: StoreSamples) -> None:
        self.frame_number = data.frame_number
        self.width, self.height = data.size
        self.view_id = data.attrs.get("view_id")
        t = data.frame_number.size
        reg = data.regions
        if reg:
            keep = sel._keep_regions(data)
            self.region = np.flatnonzero(keep)
            row_of = np.repeat(np.arange(t), np.diff(reg["row_offsets"]))[keep]
            self.offsets = np.zeros(t + 1, np.int64)
            np.cumsum(np.bincount(row_of, minlength=t), out=self.offsets[1:])
            self.boxes = reg["bbox_xyxy"][self.region].astype(np.float64)
            self.labels = sel._label_map[reg["label_index"][self.region]]
            self.tracks = reg["track_id"][self.region]
            self.anns = reg["annotation_id"][self.region]
            self.mask_offsets, self.mask_counts = reg["mask_offsets"], reg["mask_counts"]
        else:
            self.region = np.zeros(0, np.int64)
            self.offsets = np.zeros(t + 1, np.int64)
            self.boxes = np.zeros((0, 4))
            self.labels = self.tracks = self.anns = np.zeros(0, np.int64)
            self.mask_offsets, self.mask_counts = np.zeros(1, np.int64), np.zeros(0, np.uint8)
        self.rows = t
        self.attributes = _region_attributes(reg, self.region, self.anns, sel.with_attributes)
        # the boxes and labels as every sample of the video delivers them: box format, normalized by the stored
        # frame's size, offset added (conversions act per element, so a row's slice equals its own conversion)
        self.out_boxes = boxes_from_xyxy(
            self.boxes, sel.box_format, normalized=sel.normalized, size=(self.width, self.height)
        ).astype(np.float32)
        self.out_labels = np.asarray(self.labels, dtype=np.int64).reshape(-1) + int(sel.label_offset)
        seg = data.segments
        if seg and seg["start_frame"].size:
            cls = sel._label_map[seg["label_index"]]
            ok = cls >= 0
            self.seg_start, self.seg_end, self.seg_class = seg["start_frame"][ok], seg["end_frame"][ok], cls[ok]
        else:
            self.seg_start = self.seg_end = self.seg_class = np.zeros(0, np.int64)


def _region_attributes(
    regions: dict[str, np.ndarray], kept: np.ndarray, annotation_ids: np.ndarray, names: tuple[str, ...]
) -> np.ndarray | None:
    """(N, A) float32: attributes ``names`` of the kept regions (NaN throughout where the store holds none);
    None when none are asked for."""
    if not names:
        return None
    if "attr_offsets" not in regions:
        return np.full((kept.size, len(names)), np.nan, np.float32)
    return attribute_values(regions["attr_offsets"], regions["attr_bytes"], kept, names, annotation_ids)


def _region_decoded(regions: dict[str, np.ndarray]) -> list[dict[str, Any] | None]:
    """Each region's attributes (None for none; every region of a store exported without attributes)."""
    if "attr_offsets" not in regions:
        return [None] * int(regions["label_index"].size)
    return decode_attributes(regions["attr_offsets"], regions["attr_bytes"])
