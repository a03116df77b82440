"""An export's options, checked once into a frozen, picklable :class:`ExportOptions`.

:func:`check_options` is the only place an export option is validated (the
frame selection's own options, ``frames``, ``kinds``, ``stride`` and
``view_id``, are checked by :class:`~vidlabel.FrameSamples` when the export
plans, with its messages). Every later step reads the record, and a worker
process receives it with each unit job.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vidlabel.clip import ClipSpec
from vidlabel.dataset._release import Release
from vidlabel.errors import OptionError, check_flag
from vidlabel.schema import check_kinds
from vidlabel.spec import MAX_SIDE, integers
from vidlabel.store._codecs import Codec, get_codec
from vidlabel.store._framestore import BACKENDS
from vidlabel.store._remote import is_url, refuse_url_output
from vidlabel.video._locate import roots_of

__all__ = ["MEDIASEQUENCE", "ExportOptions", "check_options"]

#: The format name of a MediaSequence (TFRecord of SequenceExamples) export, and its default image codec.
MEDIASEQUENCE = "mediasequence"
MEDIASEQUENCE_CODEC = "jpeg:95"


@dataclass(frozen=True)
class ExportOptions:
    """The checked options of one export (see :func:`vidlabel.export` for each).

    Attributes
    ----------
    out : str
        The store folder.
    release : str or None
        The release option as given (a :class:`Release` object is recorded by its id).
    format : {"hdf5", "zarr", "mediasequence"}
    codec : Codec
    view_id : str or None
    frames : {"annotated", "all"}
    kinds : tuple of str
    stride : int
    output_size : (width, height) or None
    chunk_frames : int
        Frames per chunk as asked (a unit holding fewer frames uses fewer, see
        :func:`unit_chunk_frames`).
    workers : int
    progress : bool
    roots : tuple of str
    frames_only : bool
    overwrite : bool
        Replace a store written from another dataset.
    clip_frames : int or None
        MediaSequence: stored frames per SequenceExample (None: one per video).
    shard_frames : int
        MediaSequence: a TFRecord shard is closed once it holds this many frames.
    clip : ClipSpec or None
        HDF5 and Zarr: also store every frame the clip of each selected frame needs.
    """

    out: str
    release: str | None
    format: str
    codec: Codec
    view_id: str | None
    frames: str
    kinds: tuple[str, ...]
    stride: int
    output_size: tuple[int, int] | None
    chunk_frames: int
    workers: int
    progress: bool
    roots: tuple[str, ...]
    frames_only: bool
    overwrite: bool = False
    clip_frames: int | None = None
    shard_frames: int = 1024
    storage_options: dict[str, Any] | None = None
    clip: ClipSpec | None = None

    @property
    def is_url(self) -> bool:
        """True when the store is written straight into an object store (``out`` is a URL)."""
        return is_url(self.out)

    def selection(self) -> dict[str, Any]:
        """The keyword arguments of :meth:`FrameSamples.from_release` that choose the stored frames."""
        return {"view_id": self.view_id, "kinds": self.kinds, "frames": self.frames, "stride": self.stride}

    def unit_chunk_frames(self, frame_count: int) -> int:
        """Frames per chunk of a unit of ``frame_count`` frames: never more than it holds (at least 1)."""
        return max(1, min(self.chunk_frames, int(frame_count)))


def check_options(out: str | os.PathLike[str], release: str | Release | None, **options: Any) -> ExportOptions:
    """Check :func:`vidlabel.export`'s options in its documented order and return them as one record.

    Raises
    ------
    OptionError
        On an unknown format or codec, a bad ``chunk_frames``, ``workers`` or
        ``output_size``, a URL for ``out`` with ``format="hdf5"``, or ``storage_options`` that are not a
        mapping or come with a local ``out``, or a ``release`` that is neither a release id, None nor a Release;
        the message names the option, the value given and what is allowed.
    """
    if release is not None and not isinstance(release, (str, Release)):
        raise OptionError(f"release must be a release id, 'latest', None or a Release, got {release!r}")
    fmt = options["format"]
    if fmt not in (*BACKENDS, MEDIASEQUENCE):
        raise OptionError(f"unknown store format {fmt!r}; allowed: {', '.join((*BACKENDS, MEDIASEQUENCE))}")
    refuse_url_output(out, format=fmt)  # only Zarr stores are written straight into object stores
    _refuse_url_without_conditional_writes(out)
    storage_options = options.get("storage_options")
    _check_storage_options(out, storage_options)
    if fmt == MEDIASEQUENCE:
        _check_mediasequence(options)
    else:
        for name in ("clip_frames", "shard_frames"):
            if options.get(name) is not None:
                hint = " (the clip context of a store: clip=ClipSpec(T, step=...))" if name == "clip_frames" else ""
                raise OptionError(f"{name} applies to format='mediasequence' only, not {fmt!r}{hint}")
    clip = options.get("clip")
    if clip is not None and not isinstance(clip, ClipSpec):
        raise OptionError(f"clip must be a vidlabel.ClipSpec (e.g. ClipSpec(16, step=2)) or None, got {clip!r}")
    if clip is not None and fmt == MEDIASEQUENCE:
        raise OptionError("clip applies to format='hdf5' and 'zarr'; a MediaSequence export takes clip_frames")
    codec, chunk_frames = _check_codec(fmt, options)
    workers = options["workers"]
    if not _is_count(workers):
        raise OptionError(f"workers must be an integer >= 1, got {workers!r}")
    output_size = _check_size(options["output_size"], "output_size")
    return ExportOptions(
        out=str(out),
        release=release if isinstance(release, str) or release is None else release.release_id,
        format=fmt,
        codec=codec,
        view_id=options["view_id"],
        frames=options["frames"],
        kinds=check_kinds(options["kinds"]),
        stride=options["stride"],
        output_size=output_size,
        chunk_frames=int(chunk_frames),
        workers=int(workers),
        progress=check_flag("progress", options["progress"]),
        roots=roots_of(options["roots"]),
        frames_only=check_flag("frames_only", options["frames_only"]),
        overwrite=check_flag("overwrite", options.get("overwrite", False)),
        clip_frames=None if options.get("clip_frames") is None else int(options["clip_frames"]),
        shard_frames=int(options.get("shard_frames") or 1024),
        storage_options=None if storage_options is None else dict(storage_options),
        clip=clip,
    )


def _check_storage_options(out: str | os.PathLike[str], storage_options: Any) -> None:
    """Refuse ``storage_options`` that are not a mapping, or come with a local ``out``."""
    if storage_options is not None:
        if not isinstance(storage_options, Mapping):
            raise OptionError(f"storage_options must be a mapping of fsspec options, got {storage_options!r}")
        if not is_url(out):
            raise OptionError(f"storage_options apply to URLs only; {str(out)!r} is a local path")


def _check_codec(fmt: str, options: dict[str, Any]) -> tuple[Codec, Any]:
    """The codec of an export (a MediaSequence one's default, or one that encodes pictures) and its
    ``chunk_frames`` (1 by default; 1 for a codec of one picture per chunk)."""
    codec = get_codec(MEDIASEQUENCE_CODEC if fmt == MEDIASEQUENCE and options["codec"] is None else options["codec"])
    if fmt == MEDIASEQUENCE and codec.picture_format is None:
        raise OptionError(
            f"a MediaSequence export encodes each image as JPEG or PNG: codec must be 'jpeg[:quality]' or 'png', "
            f"got {codec.spec!r}"
        )
    chunk_frames = 1 if options["chunk_frames"] is None else options["chunk_frames"]
    if not _is_count(chunk_frames):
        raise OptionError(f"chunk_frames must be an integer >= 1, got {chunk_frames!r}")
    if codec.per_frame and chunk_frames != 1:
        raise OptionError(
            f"codec {codec.name!r} stores one picture per chunk: chunk_frames must be 1, got {chunk_frames}"
        )
    return codec, chunk_frames


def _check_mediasequence(options: dict[str, Any]) -> None:
    """The options only a MediaSequence export takes, and those it refuses."""
    for name in ("clip_frames", "shard_frames"):
        value = options.get(name)
        if value is not None and not _is_count(value):
            raise OptionError(f"{name} must be an integer >= 1, got {value!r}")
    if options["chunk_frames"] not in (None, 1):
        raise OptionError(
            f"chunk_frames does not apply to a MediaSequence export (one encoded image per frame), "
            f"got {options['chunk_frames']!r}"
        )
    if options["workers"] != 1:
        raise OptionError(
            f"a MediaSequence export writes its shards in one process: workers must be 1, got {options['workers']!r}"
        )
    if options["frames_only"]:
        raise OptionError("frames_only does not apply to a MediaSequence export (its records carry the labels)")


def _is_count(value: Any) -> bool:
    """True for an integer >= 1 (not a bool)."""
    return bool(not isinstance(value, bool) and isinstance(value, (int, np.integer)) and value >= 1)


def _check_size(value: Any, name: str) -> tuple[int, int] | None:
    if value is None:
        return None
    size = integers(value, 2)
    if size is None:  # 1.5 was cut to 1 and True taken for 1: a store of 1-pixel-wide frames
        raise OptionError(f"{name} must be 2 integers (width, height), got {value!r}")
    w, h = size
    if w <= 0 or h <= 0:
        raise OptionError(f"{name} must be positive, got {value!r}")
    if w > MAX_SIDE or h > MAX_SIDE:
        raise OptionError(
            f"{name} {w}x{h} is larger than {MAX_SIDE} pixels a side (one such RGB frame would take "
            f"{w * h * 3 / 2**30:.1f} GiB); choose a size up to {MAX_SIDE}"
        )
    return (w, h)


#: URL schemes whose filesystems vidlabel does create-only and If-Match writes on (ObjectStore.conditional_kind).
CONDITIONAL_SCHEMES = ("s3", "s3a", "file", "memory")


def _refuse_url_without_conditional_writes(out: Any) -> None:
    """Refuse a plain URL whose scheme has no conditional writes before any connection is tried."""
    if not is_url(out) or "::" in str(out):  # a chained URL ("simplecache::s3://..."): its filesystem decides
        return
    scheme = str(out).split("://", 1)[0].lower()
    if scheme not in CONDITIONAL_SCHEMES:
        raise OptionError(
            f"cannot export to {str(out)!r}: exporting straight into an object store needs conditional writes "
            f"(create-only and If-Match), which vidlabel does on {', '.join(s + '://' for s in CONDITIONAL_SCHEMES)}; "
            f"export to a local folder with format='zarr' and upload it: `vidlabel upload OUT {out}`"
        )
