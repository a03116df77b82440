"""The vidlabel error hierarchy.

Every error is a :class:`VidlabelError` that also inherits the builtin a caller
would naturally catch (``FileNotFoundError``, ``LookupError``, ``ValueError``,
``IndexError``, ...). Every class is constructible from one message string, so
PyTorch's DataLoader can rebuild an error raised in a worker
(``torch/_utils.py`` ``ExceptionWrapper.reraise``). Extra context travels in
keyword-only attributes with defaults.
"""

from __future__ import annotations

import os
import shlex

import numpy as np

__all__ = [
    "AnnotationError",
    "BuildError",
    "ClipError",
    "DatasetCreateError",
    "DatasetError",
    "DatasetExistsError",
    "DatasetNotFoundError",
    "DatasetReadOnlyError",
    "FormatError",
    "FrameOutOfRangeError",
    "MissingExtraError",
    "NoVideoStreamError",
    "OptionError",
    "ReleaseCorruptError",
    "ReleaseNotFoundError",
    "SampleIndexTypeError",
    "SampleOutOfRangeError",
    "SampleSchemaError",
    "SchemaVersionError",
    "StoreCorruptError",
    "StoreError",
    "StoreIncompleteError",
    "StoreLockedError",
    "SwitchValueWarning",
    "TransformError",
    "UnknownVideoError",
    "VidlabelError",
    "VideoChangedError",
    "VideoDecodeError",
    "VideoNotFoundError",
    "VidlabelWarning",
    "replace_command",
]


class VidlabelError(Exception):
    """Root of every error vidlabel raises.

    Raised when: never directly; catch it to catch any vidlabel error.

    Parameters
    ----------
    message : str
        The whole explanation: what was wrong, where (file, video id, row,
        frame) and what is allowed.
    path : str, optional
        The file or folder concerned.
    video_id : str, optional
        The video concerned.
    """

    def __init__(self, message: str = "", *, path: str | None = None, video_id: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.video_id = video_id

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # type: ignore[no-untyped-def]
        # Pickle through the one-string constructor, keeping the context.
        return (_rebuild, (type(self), self.message, self.__dict__.copy()))


def _rebuild(cls: type[VidlabelError], message: str, state: dict) -> VidlabelError:  # type: ignore[type-arg]
    err = cls(message)
    err.__dict__.update(state)
    return err


class DatasetError(VidlabelError, RuntimeError):
    """Raised when a dataset folder cannot be used as asked (corrupt database, concurrent misuse)."""


class DatasetCreateError(VidlabelError, OSError):
    """Raised when the folder of a new dataset (or of ``vidlabel demo``) cannot be made: a parent is a file,
    or the filesystem refuses new folders there (read-only, no permission, ``/proc``); names the folder and why."""


class DatasetNotFoundError(VidlabelError, FileNotFoundError):
    """Raised when ``Dataset.open`` is given a folder that does not exist or holds no vidlabel dataset."""


class DatasetReadOnlyError(VidlabelError, PermissionError):
    """Raised when a change is asked of a dataset opened read-only (its folder or database is not writable)."""


class DatasetExistsError(VidlabelError, FileExistsError):
    """Raised when ``Dataset.create`` is given a folder that already holds a dataset or other files."""


class SchemaVersionError(VidlabelError, RuntimeError):
    """Raised when a dataset or store was written by a newer vidlabel with a schema this one cannot read."""


class UnknownVideoError(VidlabelError, LookupError):
    """Raised when a video id is not registered in the dataset, release or store; the message lists known ids."""


class VideoNotFoundError(VidlabelError, FileNotFoundError):
    """Raised when a video file cannot be found at its recorded path nor under any of ``roots``."""


class ReleaseNotFoundError(VidlabelError, LookupError):
    """Raised when a release id is unknown (or ``"latest"`` is asked of a dataset with no release); lists the known ids."""


class ReleaseCorruptError(VidlabelError, ValueError):
    """Raised when a release file's content does not give its content-derived id (edited or damaged on disk)."""


class FrameOutOfRangeError(VidlabelError, IndexError):
    """Raised when a frame number lies outside ``[0, frame_count)`` of a video; names the video and the range."""


class SampleOutOfRangeError(VidlabelError, IndexError):
    """Raised when a sample position lies outside ``[-n, n)`` of a store or dataset of n samples; names both."""


class SampleIndexTypeError(VidlabelError, TypeError):
    """Raised when a sample index is not an integer (a float such as 1.5, a string such as '3', a bool).

    The message echoes the value and its type and gives the valid range; an index is never rounded or parsed.
    """


class SampleSchemaError(VidlabelError, ValueError):
    """Raised when a sample dict does not match its schema (:mod:`vidlabel.schema`): a missing or unknown key,
    a wrong dtype or shape; names each problem."""


class VideoDecodeError(VidlabelError, ValueError):
    """Raised when a video file is empty, truncated, corrupt or cannot be decoded at a frame; names file and frame."""


class VideoChangedError(VideoDecodeError):
    """Raised when a registered video's file no longer holds the registered bytes (its content hash differs).

    Its frames are not the release's frames, so they are neither served nor
    stored; the message names the video, the file, both hashes and the remedy
    (re-register the file with ``vidlabel add-video ... --replace``, or restore
    it, or point ``roots=`` at the original).

    Parameters
    ----------
    message : str
    path, video_id : str, optional
    expected_hash, actual_hash : str, optional
        The registered content hash and the file's (``"sha256:<hex>"``).
    """

    def __init__(
        self,
        message: str = "",
        *,
        path: str | None = None,
        video_id: str | None = None,
        expected_hash: str | None = None,
        actual_hash: str | None = None,
    ) -> None:
        super().__init__(message, path=path, video_id=video_id)
        self.expected_hash = expected_hash
        self.actual_hash = actual_hash


class NoVideoStreamError(VideoDecodeError):
    """Raised when a media file holds no video stream (audio only, or not a media file)."""


class AnnotationError(VidlabelError, ValueError):
    """Raised when an annotation batch, label or view is invalid; names the row index, field, value and what is allowed.

    The whole batch is rejected and the dataset is left unchanged.
    """


class FormatError(VidlabelError, ValueError):
    """Raised when a label file (MOT, CVAT, YouTube-VIS, COCO-VID, Label Studio) cannot be imported as it is.

    The message names the file, the line or element, the value and what is
    allowed: malformed XML, JSON or CSV, an XML entity declaration, a frame
    outside the video, a label the dataset lacks, a ``seqinfo.ini`` or
    ``framesCount`` that disagrees with the registered video. Nothing is written.
    """


class ClipError(VidlabelError, ValueError):
    """Raised when a clip cannot be made as asked: ``frames_per_clip`` or ``step`` below 1, a clip longer than
    its video, a clip (``edge="error"``) that leaves the video or touches a frame without a trustworthy picture.

    The message names the video (when known), the clip's frames and the valid range ``[0, frame_count)``.
    """


class BuildError(VidlabelError, ValueError):
    """Raised when ``Dataset.build`` refuses to pin a release because validation found errors."""


class StoreError(VidlabelError, OSError):
    """Raised when a frame store cannot be written or read as asked (bad layout, checksum mismatch, bad argument)."""


class StoreCorruptError(StoreError):
    """Raised when a stored frame chunk's bytes do not match their CRC-32C checksum (a damaged frames file), or a
    store was changed after export: a video's small arrays do not fit together or differ from those its export
    recorded (its ``labels_key``), or its frames are not its own.

    The message names the store, the video (for a chunk: the chunk, its rows and both checksums), and how to
    repair the store (rerun the export, which rewrites the unit, or export again into an empty folder;
    ``vidlabel verify`` lists every damaged chunk and array).
    """


class StoreIncompleteError(StoreError):
    """Raised when a frame store, or a video in it, was not completely written (no ``complete`` marker)."""


class StoreLockedError(StoreError):
    """Raised when another process holds the single-writer lock of a frame store."""


class OptionError(VidlabelError, ValueError):
    """Raised when a function is given an invalid option: an unknown label, view, kind or box format, ``stride < 1``, a shard outside ``[0, num_shards)``, ...; names the option, the value and what is allowed."""


class TransformError(VidlabelError, TypeError):
    """Raised when a sample transform returns the wrong types or shapes (e.g. no ``tv_tensors.Image``, boxes and
    labels of different lengths); names the sample (video, frame) and what was expected."""


class MissingExtraError(VidlabelError, ImportError):
    """Raised when a feature needs an optional dependency that is not installed; names the extra to install
    (``pip install "vidlabel[torch]"`` for PyTorch, ``pip install "vidlabel[vision]"`` for torchvision,
    ``pip install 'vidlabel[view]'`` for the viewer's Flask)."""


class VidlabelWarning(UserWarning):
    """Warned when vidlabel recovers from a problem on its own (an index for another file, a disagreeing index, an untrusted frame)."""


class SwitchValueWarning(VidlabelWarning, RuntimeWarning):
    """Warned (once per value) when a ``VIDLABEL_*`` environment switch holds neither an on value (``1``,
    ``true``, ``yes``, ``on``) nor an off value (``0``, ``false``, ``no``, ``off``): the switch keeps its
    default. A ``RuntimeWarning`` too, as it was before it had its own class; the command line prints it as
    ``vidlabel: warning: ...`` like vidlabel's other warnings."""


def check_flag(name: str, value: object) -> bool:
    """``value`` of the True/False option ``name``, as a bool (NumPy's bool too).

    Anything else is refused rather than taken for its truth value: a string from a config file such as
    ``"false"`` or ``"no"`` is true to Python, and ``overwrite="no"`` must not overwrite a store.

    Raises
    ------
    OptionError
        If ``value`` is not True or False; names the option and the value.
    """
    if isinstance(value, (bool, np.bool_)):  # np.bool_: NumPy 1's bool_ and NumPy 2's bool alike
        return bool(value)
    raise OptionError(f"{name} must be True or False, got {value!r}")


def check_path(value: object, what: str, thing: str, hint: str = "") -> str | os.PathLike[str]:
    """``value``, the path argument of ``what``, if it is a ``str`` or ``os.PathLike`` (of str).

    Raises
    ------
    OptionError
        If ``value`` is anything else (None, a number, bytes, an open Dataset or store); names ``what``,
        the ``thing`` expected (e.g. "video file"), the value and ``hint`` (what to pass instead).
    """
    if isinstance(value, str) or (isinstance(value, os.PathLike) and isinstance(os.fspath(value), str)):
        return value
    raise OptionError(f"{what} takes a {thing} path (str or os.PathLike), got {value!r}{hint}")


def check_label_offset(value: object) -> int:
    """``value`` of the ``label_offset`` option (added to every class index), as an int.

    A negative offset is refused: it turns class 0 into -1 (or lower), a value that PyTorch's losses may
    ignore (``ignore_index``) or index from the end, so a class would silently stop being trained.

    Raises
    ------
    OptionError
        If ``value`` is not an integer >= 0 (bools refused); names the value.
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise OptionError(f"label_offset must be an integer, got {value!r}")
    if value < 0:
        raise OptionError(
            f"label_offset must be an integer >= 0, got {value!r}: a negative offset turns class 0 into "
            f"{int(value)}, which losses may ignore or index from the end"
        )
    return int(value)


def replace_command(dataset: str | None, path: str | os.PathLike[str] | None, video_id: str) -> str:
    """The shell command that re-registers video ``video_id`` from its file, as error messages give it.

    ``DATASET`` and ``FILE`` stand in for an unknown dataset folder or file.

    Parameters
    ----------
    dataset : str or None
        The dataset folder (None: ``DATASET``).
    path : path-like or None
        The video file (None: ``FILE``).
    video_id : str
        The video to re-register.
    """
    words = ("vidlabel", "add-video", dataset or "DATASET", path or "FILE", "--video-id", video_id, "--replace")
    return " ".join(shlex.quote(str(w)) for w in words)
