"""The warnings of adding annotations: rows added twice or repeated, said at the user's call."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from vidlabel.dataset._validate import (
    SAME_ANNOTATION,
)
from vidlabel.errors import (
    VidlabelWarning,
)


def warn_added_twice(
    path: Path,
    video_id: str,
    n: int,
    twice: list[tuple[int, int]],
    ids: np.ndarray,
    source: tuple[str, Callable[[int], str]] | None,
) -> None:
    """Warn that rows just added equal rows already stored (a file added twice), naming how to remove them."""
    row, stored = twice[0]
    where = f"row {row} (0-based)" if source is None else f"{source[0]} {source[1](row)}"
    if n == 1:
        head = (
            f"the row just added (annotation {int(ids[row])}) equals annotation {stored} already stored "
            f"({SAME_ANNOTATION})"
        )
    else:
        head = (
            f"{len(twice)} of the {n} rows just added equal rows already stored ({where}, annotation "
            f"{int(ids[row])}, equals annotation {stored}: {SAME_ANNOTATION})"
        )
    _warn_kept(path, video_id, f"{head}, as when one file is added twice", [int(ids[r]) for r, _ in twice])


def warn_repeated(
    path: Path,
    video_id: str,
    n: int,
    repeated: list[tuple[int, int]],
    ids: np.ndarray,
    source: tuple[str, Callable[[int], str]] | None,
) -> None:
    """Warn that the rows just added hold one annotation twice (a file that lists it twice), naming how to remove
    the later ones."""
    row, first = repeated[0]
    if source is None:
        same = f"rows {first} and {row} (0-based) of the input are the same annotation"
    else:
        same = f"{source[1](first)} and {source[1](row)} of {source[0]} are the same annotation"
    if len(repeated) == 1:
        head = f"{same}: annotation {int(ids[row])} just added repeats annotation {int(ids[first])} ({SAME_ANNOTATION})"
    else:
        head = (
            f"{len(repeated)} of the {n} rows just added repeat an earlier row of "
            f"{'the input' if source is None else source[0]} ({same}, annotations "
            f"{int(ids[first])} and {int(ids[row])}: {SAME_ANNOTATION})"
        )
    _warn_kept(path, video_id, head, [int(ids[r]) for r, _ in repeated])


def _outside_vidlabel() -> int:
    """The ``stacklevel`` at which a ``warnings.warn`` in the caller names the first frame outside vidlabel: the
    user's call, however many vidlabel functions (``import_labels``, the command line) lie between."""
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    level = 1
    while caller is not None and caller.f_back is not None:
        name = str(caller.f_globals.get("__name__", ""))
        if name != "vidlabel" and not name.startswith("vidlabel."):
            break
        caller, level = caller.f_back, level + 1
    return level


def _warn_kept(path: Path, video_id: str, head: str, kept: list[int]) -> None:
    """Warn ``head`` of video ``video_id``, then that the rows ``kept`` (annotation ids) are kept and how to remove
    them or leave them out of releases."""
    new_ids = sorted(kept)
    shown = ", ".join(map(str, new_ids[:5])) + (", ..." if len(new_ids) > 5 else "")
    they, them = ("it is", "it") if len(new_ids) == 1 else ("they are", "them")
    warnings.warn(
        f"video {video_id!r}: {head}; {they} kept (validate warns duplicate_annotation): remove {them} with "
        f"Dataset.open({str(path)!r}).delete_annotations([{shown}]) or leave {them} out of releases with "
        f"set_status([{shown}], 'rejected')",
        VidlabelWarning,
        stacklevel=_outside_vidlabel(),
    )
