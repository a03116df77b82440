"""``vidlabel export``, ``cache``, ``verify``, ``upload``: frame stores, written, checked and put in object stores."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from vidlabel._command import add_command
from vidlabel._words import plural
from vidlabel.cli._parser import json_arg
from vidlabel.errors import OptionError

if TYPE_CHECKING:
    from vidlabel._command import Subparsers


def _clip_option(args: argparse.Namespace) -> tuple[Any, int | None]:
    """``(clip, clip_frames)`` of ``vidlabel export``: ``--clip-frames`` is a MediaSequence record's frames, and
    for a store (with ``--clip-step/--clip-anchor/--clip-edge``) the clip whose context is stored."""
    from vidlabel.clip import ClipSpec

    shape = {"step": args.clip_step, "anchor": args.clip_anchor, "edge": args.clip_edge}
    given = [f"--clip-{k}" for k, v in shape.items() if v is not None]
    if args.store_format == "mediasequence" or args.clip_frames is None:
        if given:
            raise OptionError(
                f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --clip-frames and --format hdf5 or zarr "
                "(a MediaSequence record is --clip-frames stored frames)"
            )
        return None, args.clip_frames
    kept = {k: v for k, v in shape.items() if v is not None}
    return ClipSpec(args.clip_frames, **kept), None


_OVERWRITE_HELP = "replace a store at OUT exported from another dataset (refused by default)"


def _cmd_export(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset
    from vidlabel.export._run import export

    ds = Dataset.open(args.dataset)
    clip, clip_frames = _clip_option(args)
    options = dict(
        release=args.release, format=args.store_format, codec=args.codec, view_id=args.view_id, frames=args.frames,
        stride=args.stride, output_size=tuple(args.output_size) if args.output_size else None,
        chunk_frames=args.chunk_frames, workers=args.workers, progress=not args.no_progress, roots=args.roots,
        storage_options=args.storage_options, overwrite=args.overwrite, clip_frames=clip_frames,
        shard_frames=args.shard_frames, clip=clip,
    )  # fmt: skip
    if args.dask_scheduler is None:
        report = export(ds, args.out, **options)  # type: ignore[arg-type]
    else:
        with _dask_client(args.dask_scheduler) as client:
            report = export(ds, args.out, executor=client.get_executor(), **options)  # type: ignore[arg-type]
    print(report.summary())
    return 0


def _dask_client(address: str) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address`` (Dask is imported only here)."""
    from vidlabel.errors import OptionError

    try:
        from distributed import Client
    except ImportError as err:
        raise OptionError(
            f"--dask-scheduler {address} needs Dask's distributed scheduler: pip install 'vidlabel[dask]'"
        ) from err
    try:
        return Client(address)  # connect timeout: Dask's distributed.comm.timeouts.connect
    except (OSError, TimeoutError) as err:
        raise OptionError(f"cannot reach the Dask scheduler at {address!r}: {err}") from err


def _cmd_cache(args: argparse.Namespace) -> int:
    from vidlabel.dataset._dataset import Dataset
    from vidlabel.export._run import cache

    report = cache(
        Dataset.open(args.dataset), args.out, release=args.release, codec=args.codec,
        progress=not args.no_progress, roots=args.roots, overwrite=args.overwrite,
    )  # fmt: skip
    print(report.summary())
    return 0


def _cmd_verify(args: argparse.Namespace) -> int:
    from vidlabel.store import verify_store

    report = verify_store(args.out, progress=sys.stderr.isatty())
    for problem in report["problems"]:
        print(f"problem: {problem}")
    status = "ok" if report["ok"] else plural(len(report["problems"]), "problem")
    chunks = plural(report["chunks_total"], "chunk")
    if report["chunks"] != report["chunks_total"]:  # a chunk file missing or a folder could not be checked
        chunks = f"{report['chunks']} of {chunks}"
    print(
        f"{status}: {plural(len(report['stores']), 'store')}, {plural(report['videos'], 'video')}, "
        f"{plural(report['frames'], 'frame')}, {chunks} ({report['bytes'] / 2**20:.1f} MiB) checked"
    )
    return 0 if report["ok"] else 1


def _cmd_upload(args: argparse.Namespace) -> int:
    from vidlabel.errors import StoreError
    from vidlabel.store import backend_for, upload
    from vidlabel.store._framestore import find_stores
    from vidlabel.store._remote import is_url

    if not is_url(args.store):
        # Refuse a store that upload() refuses before it draws its progress bar or puts a store of a folder:
        # upload() checks each store only when it reaches it.
        for folder in find_stores(args.store):
            name = backend_for(folder).name
            if name != "zarr":
                raise StoreError(
                    f"{str(folder)!r} is an {name.upper()} store: only Zarr stores go to object stores; "
                    "export it again with format='zarr' (vidlabel export ... --format zarr)",
                    path=str(folder),
                )
    report = upload(args.store, args.url, storage_options=args.storage_options, progress=not args.no_progress)
    print(report.summary())
    return 0


def register(subparsers: Subparsers) -> None:
    """Add ``export``, ``cache``, ``verify`` and ``upload``."""
    _add_export(subparsers)

    p = add_command(
        subparsers,
        "cache",
        _cmd_cache,
        "Write a frame cache: the full frames a release trains on (no annotations), for FrameSamples(cache=OUT).",
    )
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--release", default="latest", help="release id whose frames to cache, or 'latest' (default)")
    p.add_argument(
        "--format", dest="codec", choices=["jpeg", "png", "none"], default="jpeg", help="picture codec (default jpeg)"
    )
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--overwrite",
        action="store_true",
        help="replace a store at OUT exported from another dataset, or one that holds labels (refused by default)",
    )

    p = add_command(
        subparsers, "verify", _cmd_verify, "Check a frame store's structure, counts and per-chunk checksums."
    )
    p.add_argument("out", metavar="OUT", help="a frame store folder, or a Zarr store's URL")

    p = add_command(
        subparsers,
        "upload",
        _cmd_upload,
        "Upload a complete local Zarr store to an object store (fsspec URL), the root's 'complete' last; "
        "rerun to resume.",
    )
    p.add_argument("store", metavar="STORE", help="a local Zarr frame store (vidlabel export ... --format zarr)")
    p.add_argument("url", metavar="URL", help="where to put it, e.g. s3://bucket/store or file:///data/store")
    p.add_argument(
        "--storage-options", type=json_arg, default=None, help="JSON options of the fsspec filesystem (credentials)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _add_export(subparsers: Subparsers) -> None:
    p = add_command(subparsers, "export", _cmd_export, "Decode a release once into a chunked frame store.")
    p.add_argument("dataset", metavar="DATASET")
    p.add_argument("out", metavar="OUT")
    p.add_argument("--release", default="latest", help="release id to export, or 'latest' (default)")
    p.add_argument(
        "--format",
        dest="store_format",
        choices=["hdf5", "zarr", "mediasequence"],
        default="hdf5",
        help="store format (default hdf5); mediasequence: TFRecord shards of tf.train.SequenceExample (TensorFlow, "
        "MediaPipe)",
    )
    p.add_argument(
        "--codec",
        default=None,
        help="none, lz4, zstd, gzip, png or jpeg[:Q]; mediasequence: jpeg[:Q] (default 95) or png",
    )
    _add_clip_arguments(p)
    p.add_argument("--view", dest="view_id", default=None, help="store this view's crop and its annotations only")
    p.add_argument(
        "--frames",
        choices=["annotated", "all"],
        default="annotated",
        help="annotated (default): frames with a box or mask; all: every frame of each video",
    )
    p.add_argument(
        "--stride", type=int, default=1, help="keep every Nth of those frames, counted per video (default 1)"
    )
    p.add_argument("--output-size", type=int, nargs=2, metavar=("W", "H"), help="resize the stored frames")
    p.add_argument(
        "--chunk-frames",
        type=int,
        default=None,
        help="frames per chunk (default 1: one chunk read per random frame; larger suits sequential reading; "
        "png and jpeg need 1)",
    )
    p.add_argument("--workers", type=int, default=1, help="processes decoding and writing videos (default 1)")
    p.add_argument("--roots", nargs="*", default=[], help="folders to search for moved video files")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--dask-scheduler",
        metavar="ADDRESS",
        default=None,
        help="run one task per video on this Dask scheduler (tcp://HOST:PORT) instead of local processes",
    )
    p.add_argument(
        "--storage-options",
        type=json_arg,
        default=None,
        help="JSON fsspec options when OUT is a URL (s3://bucket/store; default: credentials from the environment)",
    )
    p.add_argument("--overwrite", action="store_true", help=_OVERWRITE_HELP)


def _add_clip_arguments(p: argparse.ArgumentParser) -> None:
    """``export``'s clip options: the clip context stored (hdf5, zarr) or a record's frames (mediasequence)."""
    p.add_argument(
        "--clip-frames",
        type=int,
        default=None,
        help="hdf5/zarr: also store the frames of a clip of T frames around each selected frame (the clip "
        "context StoreClips reads); mediasequence: stored frames per SequenceExample (default: a video)",
    )
    p.add_argument("--clip-step", type=int, default=None, help="frames between a clip's frames (default 1)")
    p.add_argument(
        "--clip-anchor",
        choices=["start", "center", "end"],
        default=None,
        help="where the selected frame sits in its clip (default start)",
    )
    p.add_argument(
        "--clip-edge",
        choices=["error", "shift", "repeat", "skip"],
        default=None,
        help="a clip leaving the video or touching an untrusted frame: refuse, shift it inside (default), repeat "
        "the edge frame, or leave it out",
    )
    p.add_argument(
        "--shard-frames",
        type=int,
        default=None,
        help="mediasequence: close a TFRecord shard at this many frames (1024)",
    )
