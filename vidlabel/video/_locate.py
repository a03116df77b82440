"""Where a registered video's file is: its recorded paths, else their trailing parts under search roots.

:func:`resolve_video_path` (one video) and :func:`resolve_video_paths` (many,
looking for every file before refusing) try :func:`video_path_candidates` in
order; a refusal names the video and every path tried. :func:`roots_of` reads
the ``roots`` option every reader, export and check takes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePath
from urllib.parse import unquote, urlparse

from vidlabel.errors import OptionError, VideoNotFoundError
from vidlabel.spec import VideoMetadata

__all__ = [
    "NAMED_MISSING",
    "resolve_video_path",
    "resolve_video_paths",
    "roots_not_here",
    "roots_of",
    "tried_words",
    "video_path_candidates",
]


def roots_of(roots: object, name: str = "roots") -> tuple[str, ...]:
    """Video search folders as strings: one folder (a str or path) alone, or a sequence of them.

    Every function with a ``roots`` option (FrameSamples, export, ``Dataset.validate``, the readers) reads it
    through this, so ``roots="/data"`` is the one folder ``/data`` everywhere, never the folders ``/``, ``d``, ...

    Raises
    ------
    OptionError
        If ``roots`` is neither a path nor a sequence of paths (None, bytes, a number, a list holding one);
        names the option and the value.
    """
    if isinstance(roots, (str, os.PathLike)):
        return (str(os.fspath(roots)),)
    hint = "a folder path or a list of folder paths"
    if isinstance(roots, (bytes, bytearray)) or not isinstance(roots, Iterable):
        raise OptionError(f"{name} must be {hint}, got {roots!r}")
    out: list[str] = []
    for r in roots:
        if not isinstance(r, (str, os.PathLike)) or isinstance(os.fspath(r), bytes):
            raise OptionError(f"{name} must be {hint}, got {r!r} among {roots!r}")
        out.append(str(os.fspath(r)))
    return tuple(out)


def resolve_video_path(meta: VideoMetadata, roots: Iterable[str | os.PathLike[str]] = ()) -> Path:
    """The file of a registered video: its recorded path, else the same file under one of ``roots``.

    Under each root the recorded path's trailing parts are tried, longest
    first (``/old/data/cam1/a.mp4`` → ``ROOT/old/data/cam1/a.mp4``, ...,
    ``ROOT/cam1/a.mp4``, ``ROOT/a.mp4``).

    Parameters
    ----------
    meta : VideoMetadata
    roots : iterable of path-like
        Folders to search when the recorded path is stale.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    VideoNotFoundError
        Naming the video id and every path tried; a path that is a folder is said to be one.
    OptionError
        If ``roots`` is neither a path nor a sequence of paths (:func:`roots_of`).
    """
    roots = list(roots_of(roots))
    path, tried = _find_video(meta, roots)
    if path is None:
        raise _not_found([(meta, tried)], roots=roots)
    return path


def resolve_video_paths(metas: Iterable[VideoMetadata], roots: Iterable[str | os.PathLike[str]] = ()) -> list[Path]:
    """:func:`resolve_video_path` of every video in ``metas``, in their order; looks for every file before it
    refuses, so that one error names every video whose file is missing, not only the first.

    Raises
    ------
    VideoNotFoundError
        For one video, :func:`resolve_video_path`'s; for several, one naming the first
        :data:`NAMED_MISSING` with the paths tried (every path for the first; for the others their recorded
        paths and how many more were tried under ``roots``) and counting the rest.
    OptionError
        If ``roots`` is neither a path nor a sequence of paths (:func:`roots_of`).
    """
    roots = list(roots_of(roots))
    found: list[Path] = []
    missing: dict[str, tuple[VideoMetadata, list[str]]] = {}
    for meta in metas:
        path, tried = _find_video(meta, roots)
        if path is None:
            missing.setdefault(meta.video_id, (meta, tried))
        else:
            found.append(path)
    if missing:
        raise _not_found(list(missing.values()), roots=roots)
    return found


#: Videos a refusal for missing files names one by one (:func:`resolve_video_paths`); it counts the rest.
NAMED_MISSING = 10

_ROOTS_HINT = "(pass roots=[...], --roots on the command line, to search folders)"


def _roots_hint(roots: list[str | os.PathLike[str]], n_videos: int) -> str:
    """What to do about videos not found: pass roots, or, when roots were searched, look at the files or the
    roots (naming a root that is no folder here: a typo, or a folder of another machine)."""
    if not roots:
        return _ROOTS_HINT
    files = "the file is" if n_videos == 1 else "the files are"
    return f"(not found under the roots given either: check {files} there, or pass other roots{roots_not_here(roots)})"


def roots_not_here(roots: Iterable[str | os.PathLike[str]]) -> str:
    """``"; no folder at '/a', '/b'"`` for the ``roots`` that are no folder on this machine (a typo, or a folder of
    another machine), else ``""``: the words that end a refusal for files not found under them."""
    absent = [repr(str(r)) for r in roots if not Path(r).is_dir()]
    return f"; no folder at {', '.join(absent)}" if absent else ""


def _find_video(meta: VideoMetadata, roots: Iterable[str | os.PathLike[str]]) -> tuple[Path | None, list[str]]:
    """The file of a registered video, else None and the words for every path tried (a folder is said to be one:
    a folder where the file was registered is otherwise taken for a file gone missing)."""
    tried: list[str] = []
    for cand in video_path_candidates(meta, roots):
        if cand.is_file():
            return cand, tried
        tried.append(tried_words(cand))
    return None, tried


def tried_words(path: Path) -> str:
    """A path tried for a video's file, for a refusal: a folder there is said to be one (it is otherwise taken for
    a file gone missing)."""
    return f"{path} (a folder, not a video file)" if path.is_dir() else str(path)


def _not_found(
    missing: list[tuple[VideoMetadata, list[str]]], *, roots: list[str | os.PathLike[str]]
) -> VideoNotFoundError:
    """The error for videos whose files were found nowhere (each with the paths tried), the first named first;
    ``roots``: the folders searched too."""
    meta, tried = missing[0]
    recorded = [_uri_path(s["uri"]) for s in meta.sources]
    where = str(recorded[0]) if recorded else None
    if len(missing) == 1:
        if not recorded:
            return VideoNotFoundError(f"video {meta.video_id!r} has no recorded source path", video_id=meta.video_id)
        return VideoNotFoundError(
            f"file of video {meta.video_id!r} not found; tried: {', '.join(tried)} {_roots_hint(roots, 1)}",
            video_id=meta.video_id,
            path=where,
        )
    named = [_tried_words(m, t, every=i == 0) for i, (m, t) in enumerate(missing[:NAMED_MISSING])]
    more = len(missing) - len(named)
    return VideoNotFoundError(
        f"files of {len(missing)} videos not found: {'; '.join(named)}{f'; and {more} more' if more else ''} "
        f"{_roots_hint(roots, len(missing))}",
        video_id=meta.video_id,
        path=where,
    )


def _tried_words(meta: VideoMetadata, tried: list[str], *, every: bool) -> str:
    """One video of a refusal for missing files: its id and the paths tried (with ``every`` False, the recorded
    paths and how many were tried under the roots: the same trailing parts as for the first video named)."""
    n_recorded = len(meta.sources)
    if not n_recorded:
        return f"{meta.video_id!r} (no recorded source path)"
    shown = tried if every else tried[:n_recorded]
    under = len(tried) - len(shown)
    rest = f" and {under} path{'s' if under != 1 else ''} under the roots" if under else ""
    return f"{meta.video_id!r} (tried: {', '.join(shown)}{rest})"


def video_path_candidates(meta: VideoMetadata, roots: Iterable[str | os.PathLike[str]] = ()) -> Iterator[Path]:
    """Where a registered video's file may be, in the order :func:`resolve_video_path` tries them.

    The recorded paths, then under each root the recorded paths' trailing
    parts, longest first. Paths are yielded whether or not they exist. Trailing
    parts that hold ``..`` are not tried under a root: a path read from a
    dataset or release file never leaves the root it is looked for under
    (``/x/../../secret/v.mp4`` gave ``ROOT/../../secret/v.mp4``).

    Parameters
    ----------
    meta : VideoMetadata
        The registered video (its ``path`` and ``paths``).
    roots : path-like or iterable of path-like
        Folders to look under when the recorded paths are stale (:func:`roots_of`).
    """
    folders = roots_of(roots)
    recorded = [_uri_path(s["uri"]) for s in meta.sources]
    yield from recorded
    for root in folders:
        for p in recorded:
            parts = [part for part in PurePath(p).parts if part not in (PurePath(p).anchor, "")]
            for i in range(len(parts)):
                if ".." not in parts[i:]:
                    yield Path(root, *parts[i:])


def _uri_path(uri: str) -> Path:
    if uri.startswith("file://"):
        return Path(unquote(urlparse(uri).path))
    return Path(uri)
