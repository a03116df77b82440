"""Checks that what a :class:`~vidlabel.store.FrameStore` reads is of the export it opened: frames that are the
video's own, arrays and labels of the same export, and errors of a read that say so when the store was exported
again since it was opened. ``store`` is the :class:`~vidlabel.store.FrameStore` read (typed Any: it imports
this module).
"""

from __future__ import annotations

from typing import Any

from vidlabel.errors import StoreCorruptError, StoreError, VidlabelError
from vidlabel.store._backend import FramesHeader, FramesReader
from vidlabel.store._discovery import backend_for
from vidlabel.store._fs import STORE_CHANGED
from vidlabel.store._process import reader_path

__all__ = ["check_frames", "check_same_export", "check_same_labels", "chunk_error", "exported_again"]


def check_frames(store: Any, video_id: str, reader: FramesReader | FramesHeader) -> None:
    """Refuse frames that are not the video's own: another unit's (its recorded key differs from the video's
    ``frames_key``), or of another size or row count than the video's arrays say. A frames link edited or
    a file swapped after export would otherwise give another video's pictures without a word (each chunk's
    CRC is the frames file's own, so it matches). ``reader`` is the frames' reader (a read), or only their
    header (:meth:`check_files`).

    Raises
    ------
    StoreCorruptError
        Naming the video, the store and the frames file.
    """
    data = store.video_data(video_id)
    where = f"video {video_id!r} of store {str(store.path)!r}: its frames {str(reader_path(reader))!r}"
    want_key, key = data.attrs.get("frames_key"), reader.unit_key
    problem = None
    want_codec = data.attrs.get("codec")
    if want_key is not None and key is not None and key != want_key:
        problem = f"are frames unit {key!r}, not the video's own unit {want_key!r}"
    elif isinstance(reader, FramesReader) and isinstance(want_codec, str) and reader.codec.spec != want_codec:
        # the codec is part of the unit (its pixel key), but the file's codec attribute is what a read decodes by
        problem = f"say codec {reader.codec.spec!r}, not the video's codec {want_codec!r}"
    else:
        width, height = data.size
        want = (int(data.frame_number.size), height, width, 3)
        if tuple(reader.shape) != want:
            problem = f"have shape {tuple(reader.shape)}, not the video's {want} (T, H, W, 3)"
    if problem is not None:
        raise StoreCorruptError(
            f"{where} {problem}: {exported_again(store, video_id) or STORE_CHANGED}",
            path=str(store.path),
            video_id=video_id,
        )


def check_same_export(store: Any, video_id: str, rows: int) -> None:
    """Refuse a video's small arrays, just read, of another export than the one this FrameStore opened: the
    store exported again into the same folder since (its stored rows differ from the number the root read at
    open records, and so does the root now). The index read at open would otherwise name rows of the new
    export: another frame each, its targets with it, without a word (a DataLoader worker started by spawn,
    or a video first read after the export).

    Raises
    ------
    StoreError
        Saying when the store was exported again, and to open it again.
    """
    part = store._video_part.get(video_id)
    recorded = store._parts[part].attrs.get("videos", {}).get(video_id) if part is not None else None
    if not isinstance(recorded, dict) or recorded.get("frames") in (None, rows):
        return
    again = exported_again(store, video_id)
    if again is not None:
        raise StoreError(
            f"video {video_id!r} of store {str(store.path)!r} holds {rows} stored frames, not the "
            f"{recorded['frames']} its index was read with: {again}",
            path=str(store.path),
            video_id=video_id,
        )


def check_same_labels(store: Any, video_id: str, key: Any) -> None:
    """Refuse a video file whose ``labels_key`` is not the one the store's root records for it: the file of
    another export of the video (another release, other options) copied into its place, whose boxes and
    labels would be read under this store's release without a word (the file is sound in itself). A root
    written before roots recorded the key (2026-12) is not checked.

    Raises
    ------
    StoreCorruptError
        Naming the video, the store and both keys (a StoreError if the store was exported again since it
        was opened).
    """
    part = store._video_part.get(video_id)
    recorded = store._parts[part].attrs.get("videos", {}).get(video_id) if part is not None else None
    if not isinstance(recorded, dict) or "labels_key" not in recorded or recorded["labels_key"] == key:
        return
    problem = (
        f"video {video_id!r} of store {str(store.path)!r}: its file holds labels {key!r}, not the "
        f"{recorded['labels_key']!r} the store's root records for it (a file of another export of the video, "
        "such as another release's)"
    )
    again = exported_again(store, video_id)
    if again is not None:
        raise StoreError(f"{problem}: {again}", path=str(store.path), video_id=video_id)
    raise StoreCorruptError(f"{problem}: {STORE_CHANGED}", path=str(store.path), video_id=video_id)


def chunk_error(store: Any, err: StoreError, video_id: str, reader: FramesReader, c: int) -> StoreError:
    """``err`` of reading chunk ``c`` of a video, as the same error class naming the video, chunk, rows, store."""
    cf = reader.chunk_frames
    rows_of = f"rows {c * cf}..{c * cf + reader.chunk_rows(c) - 1}"
    remedy = "`vidlabel verify` checks every chunk"
    if isinstance(err, StoreCorruptError):
        remedy = "`vidlabel verify` lists every damaged chunk; export again into an empty folder to rewrite it"
    said = "`vidlabel verify`" in str(err)  # the error gives its own remedy: one is enough
    again = exported_again(store, video_id)
    if again is not None:  # not damage: this process holds the export before it
        remedy, said = again, False
    return type(err)(
        f"video {video_id!r}, chunk {c} ({rows_of}) of store {str(store.path)!r}: {err}"
        + ("" if said else f" ({remedy})"),
        path=str(store.path),
        video_id=video_id,
    )


def exported_again(store: Any, video_id: str) -> str | None:
    """Where a read failed: what to do if the store part holding ``video_id`` was exported again (or is being
    exported) since this FrameStore was opened, judged by its root's attributes (``created`` has whole seconds:
    two exports in one second differ in their options or videos, or store the same chunks); else None."""
    part = store._parts[store._video_part[video_id]] if video_id in store._video_part else None
    if part is None:
        return None
    try:
        attrs, _ = backend_for(part.folder, storage_options=store.storage_options).read_root()
    except (VidlabelError, OSError):
        return None
    created, opened = attrs.get("created"), part.attrs.get("created")
    if attrs == part.attrs:
        return None
    if not attrs:
        now = "removed, or is being exported again,"
    elif not attrs.get("complete", True):
        now = "is being exported again"
    else:
        now = f"was exported again at {created}"
    return f"the store {now} after this process opened it (the export of {opened}): open it again"
