"""``vidlabel demo``: the whole pipeline on a generated clip, every target checked against the generator.

The clip is drawn here, so the truth of every frame is known exactly: four
moving objects (three filled rectangles annotated as boxes, one disc annotated
as a mask), their track ids, a time marker (the background brightens while it
is on), and the frame number written into the pixels as 16 black or white
8x8 blocks in the top-left corner. :func:`run_demo` encodes the clip with
PyAV (H.264, a keyframe every 30 frames), registers it in a dataset,
annotates it from the truth, validates, builds a release, exports it to an
HDF5 frame store, reads a few epochs through a PyTorch ``DataLoader`` over
``StoreFrames`` (random sampler) and over ``VideoStream``, and compares every
sample with the generator: boxes exactly, labels, track ids,
``frame_labels``, masks, and the image (its frame number, and its pixels
within the lossy codec's tolerance). The stored frames must also equal the
reader's frames exactly (the store's default codec is lossless).
"""

from __future__ import annotations

import math
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from vidlabel._demo_truth import (
    BITS,
    BLOCK,
    DemoObject,
    DemoTruth,
    _mean_abs_diff,
    demo_truth,
    read_frame_number,
)
from vidlabel.errors import VidlabelError

__all__ = [
    "BITS",
    "BLOCK",
    "PIXEL_TOLERANCE",
    "STAMP",
    "DemoObject",
    "DemoTruth",
    "annotation_rows",
    "check_image",
    "check_sample",
    "demo_truth",
    "encode_demo_clip",
    "make_demo_dataset",
    "read_frame_number",
    "run_demo",
]

#: Mean absolute difference (0-255 levels, over all pixels and channels) allowed between a decoded frame and
#: the picture the generator drew (H.264 at crf 16 measured 0.8 to 1.4). Neighbouring frames can be as close
#: (objects move a few pixels), so the check also asks that frame ``f`` is nearer than frames ``f - 1`` and
#: ``f + 1``, and the number blocks identify the frame exactly.
PIXEL_TOLERANCE = 3.0
#: Marker file that tells a folder was made by the demo (so a second run may replace it).
STAMP = ".vidlabel_demo"


def encode_demo_clip(path: str | Path, truth: DemoTruth, *, progress: bool = False) -> Path:
    """Encode the demo clip with PyAV: H.264 (libx264, yuv420p, crf 16), a keyframe every ``truth.gop`` frames.

    Parameters
    ----------
    path : str or Path
        Output file (``.mp4``).
    truth : DemoTruth
    progress : bool
        Show a tqdm bar.

    Returns
    -------
    Path
    """
    from tqdm import tqdm

    path = Path(path)
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=truth.fps)
        stream.width, stream.height = truth.width, truth.height
        stream.pix_fmt = "yuv420p"
        g = str(truth.gop)
        stream.options = {"crf": "16", "preset": "veryfast", "g": g, "keyint_min": g, "sc_threshold": "0", "bf": "2"}
        for n in tqdm(
            range(truth.frame_count), desc="encode clip", unit="frame", disable=None if progress else True, leave=False
        ):
            frame = av.VideoFrame.from_ndarray(truth.image(n), format="rgb24")
            frame.pts = n
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


def annotation_rows(truth: DemoTruth) -> tuple[list[dict[str, Any]], list[tuple[int, DemoObject | None]]]:
    """The annotation rows of the demo clip, and what each row stands for.

    Parameters
    ----------
    truth : DemoTruth
        The clip's truth (:func:`demo_truth`).

    Returns
    -------
    rows : list of dict
        Rows for ``Dataset.add_annotations`` (boxes, masks as COCO RLE, tracks, the marker), in a fixed order.
    what : list of (frame, DemoObject or None)
        For row ``i``: its frame and object (None for the marker row).
    """
    from vidlabel.geometry import encode_rle

    rows: list[dict[str, Any]] = []
    what: list[tuple[int, DemoObject | None]] = []
    for n in truth.annotated_frames:
        for obj in truth.objects(n):
            row: dict[str, Any] = {"kind": obj.kind, "label": obj.label, "start_frame": n, "track_id": obj.track_id}
            if obj.mask is not None:
                row["mask"] = encode_rle(obj.mask)
            else:
                row["box"] = obj.box
            row.update(origin="human", status="approved")
            rows.append(row)
            what.append((n, obj))
    label, start, end = truth.marker
    rows.append({"kind": "marker", "label": label, "start_frame": start, "end_frame": end, "origin": "human"})
    what.append((start, None))
    return rows, what


def make_demo_dataset(directory: str | Path, truth: DemoTruth | None = None, *, progress: bool = False) -> dict:
    """Encode the demo clip into ``directory`` and build a dataset of it with one release.

    Parameters
    ----------
    directory : str or Path
        Created if missing; gets ``clip.mp4`` and ``dataset/``.
    truth : DemoTruth, optional
        Defaults to :func:`demo_truth`.
    progress : bool

    Returns
    -------
    dict
        ``truth``, ``clip`` (Path), ``dataset`` (Dataset), ``metadata`` (VideoMetadata), ``release``
        (Release), ``report`` (the build report), ``problems`` (validate's list), ``by_id``
        ({annotation_id: (frame, DemoObject or None)}), ``seconds`` (per step).

    Raises
    ------
    VidlabelError
        When a step refuses the input (that is a bug the demo exists to catch).
    """
    from vidlabel.dataset._dataset import Dataset, make_folder
    from vidlabel.video._probe import probe

    truth = truth or demo_truth()
    directory = Path(directory)
    make_folder(directory, "the demo folder")
    seconds: dict[str, float] = {}
    t = time.perf_counter()
    clip = encode_demo_clip(directory / "clip.mp4", truth, progress=progress)
    seconds["encode"] = time.perf_counter() - t

    t = time.perf_counter()
    ds = Dataset.create(directory / "dataset")
    meta = probe(clip, video_id="demo")
    ds.add_video(meta)
    ds.add_labels(list(truth.labels))
    rows, what = annotation_rows(truth)
    ids = ds.add_annotations(rows, "demo")
    seconds["dataset"] = time.perf_counter() - t

    t = time.perf_counter()
    problems = ds.validate()
    release, report = ds.build()
    seconds["build"] = time.perf_counter() - t
    return {
        "truth": truth, "clip": clip, "dataset": ds, "metadata": meta, "release": release, "report": report,
        "problems": problems, "by_id": dict(zip((int(i) for i in ids), what)), "seconds": seconds,
    }  # fmt: skip


# ---------------------------------------------------------------------------------------------------------------
# Checking samples against the truth


def check_image(image: np.ndarray, truth: DemoTruth, f: int) -> list[str]:
    """Problems with an (H, W, 3) uint8 image that should show frame ``f`` (empty when it does).

    It must carry number ``f`` in its blocks, lie within :data:`PIXEL_TOLERANCE` of the drawn frame ``f``,
    and be nearer to frame ``f`` than to frames ``f - 1`` and ``f + 1``.

    Parameters
    ----------
    image : (H, W, 3) uint8
        The image to check.
    truth : DemoTruth
        The clip's truth.
    f : int
        The frame it should show.
    """
    problems = []
    shown = read_frame_number(image)
    if shown != f:
        problems.append(f"image shows frame {shown}")
    err = _mean_abs_diff(image, truth, f)
    if err > PIXEL_TOLERANCE:
        problems.append(
            f"image differs from the drawn frame by {err:.2f} levels on average (tolerance {PIXEL_TOLERANCE})"
        )
    for g in (f - 1, f + 1):
        if 0 <= g < truth.frame_count and _mean_abs_diff(image, truth, g) <= err:
            problems.append(f"image is at least as close to the drawn frame {g} as to frame {f}")
    return problems


def _np(value: Any) -> np.ndarray:
    """A tensor or array as a NumPy array (no torch import needed)."""
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def _hwc(image: Any) -> np.ndarray:
    """(H, W, 3) uint8 from an (H, W, 3) array or a (3, H, W) tensor."""
    arr = _np(image)
    if arr.ndim == 3 and arr.shape[0] == 3 and arr.shape[-1] != 3:
        arr = np.transpose(arr, (1, 2, 0))
    return np.ascontiguousarray(arr)


def _unbatch(batch: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """Split a batch of ``collate_frames`` back into per-sample dicts of NumPy arrays and plain values."""
    n = len(batch["video_id"])
    for i in range(n):
        sample: dict[str, Any] = {}
        for key, value in batch.items():
            item = value[i]
            sample[key] = item if isinstance(item, (str, type(None))) else _np(item)
        sample["frame_index"] = int(sample["frame_index"])
        yield sample


def _region_problems(
    i: int, aid: int, obj: DemoObject, boxes: np.ndarray, labels: np.ndarray, tracks: np.ndarray,
    masks: np.ndarray | None, class_names: Sequence[str], truth: DemoTruth,
) -> list[str]:  # fmt: skip
    """What is wrong with row ``i`` of a sample (annotation ``aid``, drawn as ``obj``): box, label, track, mask."""
    problems = []
    if boxes[i].tolist() != list(np.asarray(obj.box, np.float32).tolist()):
        problems.append(
            f"annotation {aid} ({obj.label} track {obj.track_id}): box {boxes[i].tolist()}, expected {obj.box}"
        )
    if int(labels[i]) != class_names.index(obj.label):
        problems.append(
            f"annotation {aid}: label {int(labels[i])}, expected {class_names.index(obj.label)} ({obj.label})"
        )
    if int(tracks[i]) != obj.track_id:
        problems.append(f"annotation {aid}: track_id {int(tracks[i])}, expected {obj.track_id}")
    if masks is not None:
        m = masks[i] if masks.shape[0] > i else None
        want = obj.mask if obj.mask is not None else np.zeros((truth.height, truth.width), np.uint8)
        if m is None or m.shape != want.shape or not np.array_equal(m != 0, want != 0):
            diff = (
                "missing" if m is None or m.shape != want.shape else f"{int(np.sum((m != 0) != (want != 0)))} px differ"
            )
            problems.append(f"annotation {aid} ({obj.kind}): mask wrong ({diff})")
    return problems


def check_sample(
    sample: Mapping[str, Any],
    truth: DemoTruth,
    by_id: Mapping[int, tuple[int, DemoObject | None]],
    *,
    class_names: Sequence[str],
    with_masks: bool,
    reference: Callable[[int], np.ndarray] | None = None,
) -> list[str]:
    """Compare one sample (NumPy or torch values) with the generator's truth; returns the problems found.

    Checks: the frame's annotation ids are exactly those of the frame, ascending; each box equals the truth
    exactly (float32 xyxy pixels); labels are the positions in ``class_names``; track ids; ``frame_labels``
    is the marker's multi-hot; masks equal the drawn disc (and are empty on box rows); the image shows frame
    ``frame_index`` (:func:`check_image`), or, when ``reference`` is given, equals ``reference(frame)``
    exactly (the caller checks the reference frames with :func:`check_image` once).

    Parameters
    ----------
    sample : mapping
        One sample (``image``, ``boxes``, ``labels``, ``track_ids``, ``annotation_ids``, ``frame_labels``,
        ``masks``, ``frame_index``).
    truth : DemoTruth
        The clip's truth.
    by_id : mapping annotation_id -> (frame, DemoObject or None)
        What each stored annotation stands for (from :func:`annotation_rows`).
    class_names : sequence of str
        The samples' class names, in label order.
    with_masks : bool
        Whether the sample should carry masks.
    reference : callable frame -> (H, W, 3) uint8, optional
        Frames the image must equal exactly (instead of the tolerance check).

    Returns
    -------
    list of str
        Empty when the sample is right.
    """
    problems: list[str] = []
    f = int(sample["frame_index"])
    where = f"{sample.get('video_id')!r} frame {f}"

    def bad(msg: str) -> None:
        problems.append(f"{where}: {msg}")

    if not 0 <= f < truth.frame_count:
        bad(f"frame_index outside [0, {truth.frame_count})")
        return problems
    expected = sorted(aid for aid, (frame, obj) in by_id.items() if frame == f and obj is not None)
    aids = [int(a) for a in _np(sample["annotation_ids"]).reshape(-1)]
    if aids != expected:
        bad(f"annotation_ids {aids}, expected {expected}")
        return problems
    boxes = _np(sample["boxes"]).reshape(-1, 4)
    labels = _np(sample["labels"]).reshape(-1)
    tracks = _np(sample["track_ids"]).reshape(-1)
    if boxes.dtype != np.float32 or labels.dtype != np.int64 or tracks.dtype != np.int64:
        bad(f"dtypes boxes {boxes.dtype}, labels {labels.dtype}, track_ids {tracks.dtype}; want float32, int64, int64")
    masks = _np(sample["masks"]) if with_masks and "masks" in sample else None
    if with_masks and masks is None:
        bad("no masks although with_masks=True")
    image = _hwc(sample["image"])
    if image.shape != (truth.height, truth.width, 3) or image.dtype != np.uint8:
        bad(f"image {image.shape} {image.dtype}, expected ({truth.height}, {truth.width}, 3) uint8")
        return problems
    for i, aid in enumerate(aids):
        obj = by_id[aid][1]
        assert obj is not None
        for msg in _region_problems(i, aid, obj, boxes, labels, tracks, masks, class_names, truth):
            bad(msg)
    frame_labels = _np(sample["frame_labels"]).reshape(-1)
    want_fl = np.zeros(len(class_names), np.float32)
    if truth.marker_on(f):
        want_fl[class_names.index(truth.marker[0])] = 1.0
    if frame_labels.tolist() != want_fl.tolist():
        bad(f"frame_labels {frame_labels.tolist()}, expected {want_fl.tolist()}")
    if reference is not None:
        if np.array_equal(image, reference(f)):
            return problems  # the reference frame itself was checked against the generator (check_image)
        bad("image differs from the reader's frame (a lossless store must return the decoded pixels exactly)")
    problems.extend(f"{where}: {p}" for p in check_image(image, truth, f))
    return problems


# ---------------------------------------------------------------------------------------------------------------
# The whole job


def _prepare_dir(directory: Path) -> None:
    """Make ``directory`` ready: new, empty, or a previous demo's (which is cleared)."""
    from vidlabel.dataset._dataset import make_folder

    if directory.exists():
        if not directory.is_dir():
            raise VidlabelError(f"demo folder {str(directory)!r} exists and is not a folder", path=str(directory))
        if any(directory.iterdir()):
            if not (directory / STAMP).exists():
                raise VidlabelError(
                    f"demo folder {str(directory)!r} is not empty and was not made by 'vidlabel demo'; "
                    "give a new or empty folder",
                    path=str(directory),
                )
            shutil.rmtree(directory)
    make_folder(directory, "the demo folder")
    (directory / STAMP).write_text("made by 'vidlabel demo'; a new run replaces this folder\n")


def _size_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def _human(nbytes: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if nbytes < 1000 or unit == "GB":
            return f"{nbytes:.0f} {unit}" if unit == "B" else f"{nbytes:.1f} {unit}"
        nbytes /= 1000
    return f"{nbytes:.1f} GB"  # pragma: no cover


def _loader_epoch(
    loader: Any, check: Callable[[dict[str, Any]], None], *, desc: str, progress: bool
) -> tuple[list[int], float]:
    """Iterate a DataLoader once, checking each sample; returns the frames seen and the seconds spent loading."""
    from tqdm import tqdm

    seen: list[int] = []
    t_check = 0.0
    t = time.perf_counter()
    for batch in tqdm(loader, desc=desc, unit="batch", disable=None if progress else True, leave=False):
        t_c = time.perf_counter()
        for sample in _unbatch(batch):
            seen.append(sample["frame_index"])
            check(sample)
        t_check += time.perf_counter() - t_c
    return seen, time.perf_counter() - t - t_check


def _require_torch() -> None:
    """Raise MissingExtraError naming the torch extra when PyTorch is not installed."""
    # importing the package that wraps torch says which extra to install, in one line
    import vidlabel.torch_data  # noqa: F401


def run_demo(
    directory: str | Path = "vidlabel_demo",
    *,
    progress: bool = True,
    epochs: int = 3,
    batch_size: int = 8,
    num_workers: int = 2,
    truth: DemoTruth | None = None,
    log: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Run the whole pipeline on a generated clip and check every target against the generator.

    Parameters
    ----------
    directory : str or Path
        Working folder: created, or replaced if a previous demo made it; refused if it holds other files.
        Receives ``clip.mp4``, ``dataset/`` and the frame store ``store/``.
    progress : bool
        tqdm progress bars.
    epochs : int
        Epochs read through ``StoreFrames`` with a ``RandomSampler`` (``VideoStream`` reads one).
    batch_size : int
        Of both DataLoaders.
    num_workers : int
        DataLoader worker processes for ``StoreFrames`` (``VideoStream`` reads the single video in the main
        process: whole videos are what it shares between workers).
    truth : DemoTruth, optional
        The clip to generate (default :func:`demo_truth`: 240 frames of 320x240 at 30 fps).
    log : callable or None
        Where the report lines go (default ``print``; None for silence).

    Returns
    -------
    dict
        ``ok`` (bool), ``failures`` (list of str, the first 20), ``n_failures``, ``checked`` (samples
        compared, per loader), ``release_id``, ``store`` (Path), ``store_bytes``, ``throughput``
        (samples/s per loader: StoreFrames over one extra unchecked epoch, in this process and with
        the workers; VideoStream with the checking time left out), ``seconds`` (per step), ``paths``.

    Raises
    ------
    MissingExtraError
        When PyTorch is not installed (``pip install "vidlabel[torch]"``), before anything is written.
    VidlabelError
        When the folder cannot be used or a step of the pipeline refuses its input.
    """
    _require_torch()
    import torch

    t_all = time.perf_counter()
    directory = Path(directory)
    _prepare_dir(directory)
    run = _DemoRun(truth or demo_truth(), log or (lambda _line: None), progress)
    run.say(f"vidlabel demo in {directory}/")
    made = _demo_dataset(run, directory)
    store_path, store_bytes = _demo_export(run, directory, made)
    decoded = _demo_reader(run, made)
    torch.manual_seed(0)
    _demo_store_frames(run, store_path, decoded, made["by_id"], epochs, batch_size, num_workers)
    _demo_video_stream(run, made, decoded, batch_size)
    run.seconds["total"] = time.perf_counter() - t_all
    ok = _demo_verdict(run)
    return {
        "ok": ok, "failures": run.failures, "n_failures": run.n_failures, "checked": run.checked,
        "release_id": made["release"].release_id, "store": store_path, "store_bytes": store_bytes,
        "throughput": run.throughput, "seconds": run.seconds,
        "paths": {"dir": directory, "clip": made["clip"], "dataset": directory / "dataset", "store": store_path},
    }  # fmt: skip


class _DemoRun:
    """What the steps of :func:`run_demo` share: the truth, the report, the failures, the numbers."""

    def __init__(self, truth: DemoTruth, say: Callable[[str], None], progress: bool) -> None:
        self.truth = truth
        self.say = say
        self.progress = progress
        self.failures: list[str] = []
        self.n_failures = 0
        self.seconds: dict[str, float] = {}
        self.checked: dict[str, int] = {}
        self.throughput: dict[str, float] = {}

    def fail(self, msgs: Sequence[str]) -> None:
        """Count failures; keep the first 20 messages."""
        self.n_failures += len(msgs)
        self.failures.extend(msgs[: max(0, 20 - len(self.failures))])


def _demo_dataset(run: _DemoRun, directory: Path) -> dict[str, Any]:
    """Encode the clip, register and annotate it, validate and build (:func:`make_demo_dataset`); check the probe."""
    truth, say, fail = run.truth, run.say, run.fail
    made = make_demo_dataset(directory, truth, progress=run.progress)
    run.seconds.update(made["seconds"])
    seconds, meta, release, by_id = run.seconds, made["metadata"], made["release"], made["by_id"]
    say(
        f"  clip      {made['clip']}: {truth.frame_count} frames {truth.width}x{truth.height} H.264, a keyframe "
        f"every {truth.gop}, 4 moving objects, a '{truth.marker[0]}' marker on frames {truth.marker[1]}..{truth.marker[2]}"
        f"  ({seconds['encode']:.1f} s)"
    )
    if (meta.frame_count, meta.width, meta.height) != (truth.frame_count, truth.width, truth.height):
        fail([f"probe: {meta.frame_count} frames {meta.width}x{meta.height}, expected {truth.frame_count} frames "
              f"{truth.width}x{truth.height}"])  # fmt: skip
    if Fraction(meta.fps["num"], meta.fps["den"]) != truth.fps:
        fail([f"probe: fps {meta.fps}, expected {truth.fps}"])
    n_rows = len(by_id)
    say(f"  dataset   {directory / 'dataset'}: video 'demo', labels {', '.join(truth.labels)}; {n_rows} annotations "
        f"({n_rows - 1 - len(truth.annotated_frames)} boxes, {len(truth.annotated_frames)} masks, 4 tracks, "
        f"1 marker)  ({seconds['dataset']:.1f} s)")  # fmt: skip
    errors = [p for p in made["problems"] if getattr(p, "severity", "error") == "error"]
    if errors:
        fail([f"validate: {p}" for p in errors])
    say(f"  release   validate: {len(made['problems'])} problems; build: {release.release_id}  "
        f"({seconds['build']:.1f} s)")  # fmt: skip
    return made


def _demo_export(run: _DemoRun, directory: Path, made: dict[str, Any]) -> tuple[Path, int]:
    """Export the release to an HDF5 frame store; (its path, its bytes on disk)."""
    from vidlabel.export._run import export

    store_path = directory / "store"
    t = time.perf_counter()
    report = export(made["dataset"], store_path, release=made["release"].release_id, progress=run.progress)
    run.seconds["export"] = s = time.perf_counter() - t
    store_bytes = _size_bytes(store_path)
    n_frames = len(run.truth.annotated_frames)
    run.say(f"  export    {store_path}: {n_frames} frames (hdf5, codec {report.codec}), {_human(store_bytes)} on "
            f"disk, {_human(store_bytes / max(1, n_frames))} per frame  ({s:.1f} s, {n_frames / s:.0f} frames/s)")  # fmt: skip
    return store_path, store_bytes


def _demo_reader(run: _DemoRun, made: dict[str, Any]) -> dict[int, np.ndarray]:
    """The reader's annotated frames, each checked against the generator: the reference every sample must equal."""
    from vidlabel.video._reader import FrameReader

    truth = run.truth
    t = time.perf_counter()
    with FrameReader(made["clip"]) as reader:
        decoded = dict(reader.iter_frames(truth.annotated_frames))
    run.seconds["read"] = time.perf_counter() - t
    if sorted(decoded) != truth.annotated_frames:
        run.fail([f"FrameReader.iter_frames returned frames {sorted(decoded)[:10]}..., expected the annotated frames"])
    for f, image in sorted(decoded.items()):
        run.fail([f"reader frame {f}: {p}" for p in check_image(image, truth, f)])
    return decoded


def _demo_store_frames(
    run: _DemoRun,
    store_path: Path,
    decoded: Mapping[int, np.ndarray],
    by_id: Mapping[int, tuple[int, DemoObject | None]],
    epochs: int,
    batch_size: int,
    num_workers: int,
) -> None:
    """Random access over the store (StoreFrames + RandomSampler): ``epochs`` checked epochs, then the throughput
    of one more unchecked epoch with the workers and one in this process alone."""
    from torch.utils.data import DataLoader, RandomSampler

    from vidlabel.store import open_store
    from vidlabel.torch_data import StoreFrames, collate_frames

    truth, fail = run.truth, run.fail
    store = open_store(store_path)
    names = list(store.class_names)
    if names != list(truth.labels):
        fail([f"store class_names {names}, expected {list(truth.labels)}"])
    if len(store) != len(truth.annotated_frames):
        fail([f"store holds {len(store)} samples, expected {len(truth.annotated_frames)}"])

    def check(sample: dict[str, Any]) -> None:
        fail(check_sample(sample, truth, by_id, class_names=names, with_masks=True, reference=decoded.__getitem__))

    frames_ds = StoreFrames(store, with_masks=True)
    loader = DataLoader(
        frames_ds, batch_size=batch_size, sampler=RandomSampler(frames_ds), num_workers=num_workers,
        collate_fn=collate_frames, persistent_workers=num_workers > 0,
    )  # fmt: skip
    n_seen, load_s, orders = 0, 0.0, []
    for epoch in range(epochs):
        seen, s = _loader_epoch(loader, check, desc=f"StoreFrames epoch {epoch}", progress=run.progress)
        n_seen, load_s = n_seen + len(seen), load_s + s
        orders.append(seen)
        if sorted(seen) != truth.annotated_frames:
            fail([f"StoreFrames epoch {epoch}: the random sampler did not see every annotated frame exactly once"])
    if epochs > 1 and all(o == orders[0] for o in orders):
        fail(["StoreFrames: every epoch came in the same order although the sampler is random"])
    # With workers, loading overlaps the checks above; for small frames, handing samples between processes
    # can cost more than reading, hence the same epoch in this process alone.
    rate_workers = _samples_per_second(loader)
    del loader
    rate_main = _samples_per_second(
        DataLoader(frames_ds, batch_size=batch_size, sampler=RandomSampler(frames_ds), collate_fn=collate_frames)
    )
    run.seconds["store_epochs"] = load_s
    run.checked["StoreFrames"] = n_seen
    run.throughput["StoreFrames"] = rate_main
    run.throughput[f"StoreFrames, {num_workers} workers"] = rate_workers
    run.say(f"  train     StoreFrames + RandomSampler, {num_workers} workers: {epochs} epochs, {n_seen} samples "
            f"checked; {rate_workers:,.0f} samples/s ({rate_main:,.0f} in one process)")  # fmt: skip


def _samples_per_second(loader: Any) -> float:
    """Samples per second of one unchecked epoch of ``loader``."""
    t = time.perf_counter()
    n = sum(len(batch["video_id"]) for batch in loader)
    return n / (time.perf_counter() - t)


def _demo_video_stream(run: _DemoRun, made: dict[str, Any], decoded: Mapping[int, np.ndarray], batch_size: int) -> None:
    """Streaming straight from the video (VideoStream): one checked epoch, each frame decoded at most once."""
    from torch.utils.data import DataLoader

    from vidlabel.samples._samples import FrameSamples
    from vidlabel.torch_data import VideoStream, collate_frames

    truth = run.truth
    samples = FrameSamples(made["dataset"], release=made["release"].release_id, with_masks=True)
    stream = VideoStream(samples, shuffle_buffer=16, seed=0)
    stream.set_epoch(0)
    loader = DataLoader(stream, batch_size=batch_size, num_workers=0, collate_fn=collate_frames)
    names = list(samples.class_names)

    def check(sample: dict[str, Any]) -> None:
        run.fail(
            check_sample(
                sample, truth, made["by_id"], class_names=names, with_masks=True, reference=decoded.__getitem__
            )
        )

    seen, load_s = _loader_epoch(loader, check, desc="VideoStream epoch 0", progress=run.progress)
    if sorted(seen) != truth.annotated_frames:
        run.fail(["VideoStream: the epoch did not yield every annotated frame exactly once"])
    run.seconds["video_epoch"] = load_s
    run.checked["VideoStream"] = len(seen)
    run.throughput["VideoStream"] = len(seen) / load_s if load_s > 0 else math.inf
    run.say(f"  train     VideoStream (decoding the video), shuffle buffer 16: 1 epoch, {len(seen)} samples checked; "
            f"{run.throughput['VideoStream']:,.0f} samples/s")  # fmt: skip


def _demo_verdict(run: _DemoRun) -> bool:
    """Say whether every check passed (else the first failures); True when they all did."""
    ok = run.n_failures == 0
    if ok:
        run.say("  checks    all passed: every sample's boxes, labels, track ids, masks and frame_labels equal the "
                "generator's, and every image is the reader's frame, which shows the right picture")  # fmt: skip
        run.say(f"  done in {run.seconds['total']:.1f} s; next: the tutorial on your own video (docs/tutorial.md)")
    else:
        run.say(f"  FAILED    {run.n_failures} check(s) failed; the first:")
        for line in run.failures:
            run.say(f"    {line}")
    return ok
