"""The demo: its generator tells the truth, its checker catches wrong samples, and the whole job passes."""

from __future__ import annotations

import re
from pathlib import Path

import av
import numpy as np
import pytest

from vidlabel import Dataset, cli
from vidlabel.demo import (
    BLOCK,
    DemoTruth,
    annotation_rows,
    check_sample,
    demo_truth,
    encode_demo_clip,
    read_frame_number,
    run_demo,
)
from vidlabel.errors import DatasetCreateError, VidlabelError

SHORT = demo_truth(frame_count=40, annotate_every=4, marker=("lights_on", 8, 15))


@pytest.fixture(scope="module")
def short_clip(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[np.ndarray]]:
    path = encode_demo_clip(tmp_path_factory.mktemp("demo_clip") / "clip.mp4", SHORT)
    with av.open(str(path)) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    return path, frames


def _by_id(truth: DemoTruth) -> dict[int, tuple]:
    _, what = annotation_rows(truth)
    return {i + 1: w for i, w in enumerate(what)}


def _true_sample(truth: DemoTruth, f: int, image: np.ndarray) -> dict:
    """The sample a correct loader returns for frame ``f``, built by hand from the truth."""
    by_id = _by_id(truth)
    aids = sorted(a for a, (frame, obj) in by_id.items() if frame == f and obj is not None)
    objs = [by_id[a][1] for a in aids]
    zeros = np.zeros((truth.height, truth.width), np.uint8)
    frame_labels = np.zeros(len(truth.labels), np.float32)
    frame_labels[truth.labels.index("lights_on")] = float(truth.marker_on(f))
    return {
        "image": image,
        "boxes": np.array([o.box for o in objs], np.float32),
        "labels": np.array([truth.labels.index(o.label) for o in objs], np.int64),
        "track_ids": np.array([o.track_id for o in objs], np.int64),
        "annotation_ids": np.array(aids, np.int64),
        "masks": np.stack([o.mask if o.mask is not None else zeros for o in objs]),
        "frame_labels": frame_labels,
        "video_id": "demo",
        "view_id": None,
        "frame_index": f,
    }


def test_clip_decodes_to_the_drawn_frames(short_clip):
    _, frames = short_clip
    assert len(frames) == SHORT.frame_count
    assert [read_frame_number(f) for f in frames] == list(range(SHORT.frame_count))
    for n, frame in enumerate(frames):
        err = np.abs(frame.astype(int) - SHORT.image(n).astype(int)).mean()
        assert err < 3.0, (n, err)


def test_clip_has_a_keyframe_every_gop(short_clip):
    path, _ = short_clip
    with av.open(str(path)) as container:
        keys = [i for i, f in enumerate(container.decode(video=0)) if f.key_frame]
    assert keys == list(range(0, SHORT.frame_count, SHORT.gop))


def test_truth_objects_are_what_is_drawn(short_clip):
    _, frames = short_clip
    for n in (0, 13, 27):
        drawn = SHORT.image(n)
        for obj in SHORT.objects(n):
            x0, y0, x1, y1 = (int(v) for v in obj.box)
            assert 2 * BLOCK <= y0 < y1 <= SHORT.height and 0 <= x0 < x1 <= SHORT.width
            if obj.mask is not None:  # the disc: its pixels, and its box is the mask's extent
                ys, xs = np.nonzero(obj.mask)
                assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == (x0, y0, x1, y1)
                assert np.all(drawn[obj.mask.astype(bool)] == (50, 90, 235))
                # decoded pixels inside the disc are blue-ish (lossy codec)
                inside = frames[n][obj.mask.astype(bool)].astype(int).mean(axis=0)
                assert inside[2] > 180 and inside[0] < 100
    # the second person appears only in the middle half of the clip
    assert [o.track_id for o in SHORT.objects(0)] == [1, 2, 3]
    assert [o.track_id for o in SHORT.objects(10)] == [1, 2, 4, 3]


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"frame_count": 0}, "frame_count must be >= 1"),
        ({"width": 321}, "size must be even and at least 128x96, got 321x240"),
        ({"height": 64}, "at least 128x96"),
        ({"marker": ("lights_on", 10, 300)}, r"0 <= start <= end < 240, got 10..300"),
        ({"marker": ("car", 1, 2)}, "marker's label must be 'lights_on'"),
        ({"annotate_every": 0}, "annotate_every must be >= 1"),
    ],
)
def test_demo_truth_refuses_a_clip_it_cannot_draw(changes, match):
    with pytest.raises(ValueError, match=match):
        demo_truth(**changes)


def test_annotation_rows_cover_every_annotated_object_and_the_marker():
    rows, what = annotation_rows(SHORT)
    n_objects = sum(len(SHORT.objects(n)) for n in SHORT.annotated_frames)
    assert len(rows) == len(what) == n_objects + 1
    assert rows[-1] == {"kind": "marker", "label": "lights_on", "start_frame": 8, "end_frame": 15, "origin": "human"}
    masks = [r for r in rows if r["kind"] == "mask"]
    assert len(masks) == len(SHORT.annotated_frames) and all("box" not in r for r in masks)
    assert {r["track_id"] for r in rows if "track_id" in r} == {1, 2, 3, 4}


def test_check_sample_accepts_the_truth(short_clip):
    _, frames = short_clip
    by_id = _by_id(SHORT)
    for f in SHORT.annotated_frames:
        sample = _true_sample(SHORT, f, frames[f])
        assert check_sample(sample, SHORT, by_id, class_names=SHORT.labels, with_masks=True) == []


def _problems(sample: dict, **kwargs) -> str:
    return "\n".join(check_sample(sample, SHORT, _by_id(SHORT), class_names=SHORT.labels, with_masks=True, **kwargs))


@pytest.mark.parametrize(
    ("spoil", "match"),
    [
        (lambda s: s["boxes"].__setitem__((0, 0), s["boxes"][0, 0] + 1), "box"),
        (lambda s: s["labels"].__setitem__(0, 3), "label 3, expected"),
        (lambda s: s["track_ids"].__setitem__(0, 9), "track_id 9"),
        (lambda s: s["frame_labels"].__setitem__(3, 1 - s["frame_labels"][3]), "frame_labels"),
        (lambda s: s["masks"][-1].__setitem__((slice(None), slice(None)), 0), "mask wrong"),
        (lambda s: s["masks"][0].__setitem__((100, 100), 1), r"mask wrong \(1 px differ\)"),
        (lambda s: s.update(annotation_ids=s["annotation_ids"][::-1].copy()), "annotation_ids"),
        (lambda s: s.update(boxes=s["boxes"].astype(np.float64)), "dtypes"),
        (lambda s: s.update(image=SHORT.image(s["frame_index"] + 1)), "image shows frame"),
    ],
)
def test_check_sample_catches_a_wrong_target(short_clip, spoil, match):
    _, frames = short_clip
    sample = _true_sample(SHORT, 12, frames[12])
    spoil(sample)
    assert _problems(sample) and re.search(match, _problems(sample)), _problems(sample)


def test_check_sample_catches_a_neighbouring_picture_with_the_right_number(short_clip):
    _, frames = short_clip
    sample = _true_sample(SHORT, 12, frames[12])
    image = SHORT.image(13)
    image[: 2 * BLOCK, : 8 * BLOCK] = frames[12][: 2 * BLOCK, : 8 * BLOCK]  # frame 13 wearing frame 12's number
    sample["image"] = image
    assert "as close to the drawn frame 13" in _problems(sample)


def test_check_sample_compares_with_the_reference(short_clip):
    _, frames = short_clip
    sample = _true_sample(SHORT, 12, frames[12])
    other = frames[12].copy()
    other[100, 100] += 1
    assert "differs from the reader's frame" in _problems(sample, reference=lambda f: other)
    assert _problems(sample, reference=lambda f: frames[f]) == ""


def test_check_sample_accepts_torch_layout(short_clip):
    torch = pytest.importorskip("torch")
    _, frames = short_clip
    sample = _true_sample(SHORT, 12, frames[12])
    tsample = {k: torch.from_numpy(v) if isinstance(v, np.ndarray) else v for k, v in sample.items()}
    tsample["image"] = tsample["image"].permute(2, 0, 1)
    assert _problems(tsample) == ""


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "precious.txt").write_text("keep me")
    with pytest.raises(VidlabelError, match="not empty and was not made by 'vidlabel demo'"):
        run_demo(tmp_path, progress=False, log=None)
    assert (tmp_path / "precious.txt").read_text() == "keep me"


def test_demo_refuses_a_file(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(VidlabelError, match="exists and is not a folder"):
        run_demo(tmp_path / "f", progress=False, log=None)


def test_demo_says_which_folder_it_cannot_create(tmp_path, capsys):
    (tmp_path / "f").write_text("")
    with pytest.raises(DatasetCreateError, match=rf"cannot create the demo folder {re.escape(str(tmp_path))}/f/d: "):
        run_demo(tmp_path / "f" / "d", progress=False, log=None)
    assert cli.main(["demo", str(tmp_path / "f" / "d")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == (
        f"vidlabel: error: cannot create the demo folder {tmp_path}/f/d: {tmp_path}/f is a file, not a folder; "
        "choose a writable location\n"
    )
    if Path("/proc/self").is_dir():  # Linux: /proc takes no new folders, whoever asks
        assert cli.main(["demo", "/proc/nope"]) == 1
        err = capsys.readouterr().err
        assert err.startswith("vidlabel: error: cannot create the demo folder /proc/nope: /proc does not allow")
        assert "FileNotFoundError" not in err


def test_cli_demo_exit_status_follows_the_checks(monkeypatch, tmp_path):
    import vidlabel.demo

    for ok, status in ((True, 0), (False, 1)):
        monkeypatch.setattr(vidlabel.demo, "run_demo", lambda d, progress, ok=ok: {"ok": ok})
        assert cli.main(["demo", str(tmp_path / "d")]) == status


def test_run_demo_passes_every_check(tmp_path, capsys):
    truth = demo_truth(frame_count=90, annotate_every=3, marker=("lights_on", 20, 44))
    result = run_demo(tmp_path / "demo", progress=False, epochs=2, truth=truth)
    assert result["failures"] == [] and result["ok"]
    n = len(truth.annotated_frames)
    assert result["checked"] == {"StoreFrames": 2 * n, "VideoStream": n}
    assert result["store"] == tmp_path / "demo" / "store" and result["store_bytes"] > 0
    assert set(result["throughput"]) == {"StoreFrames", "StoreFrames, 2 workers", "VideoStream"}
    out = capsys.readouterr().out
    assert "checks    all passed" in out and result["release_id"] in out
    # a second run in the same folder replaces the first: its dataset holds the new run's release alone.
    # (The two release ids may differ: libx264 with threads need not give the same bytes twice, and the
    # clip's content hash is part of the release id.)
    again = run_demo(tmp_path / "demo", progress=False, epochs=1, truth=truth, log=None)
    assert again["ok"]
    assert Dataset.open(tmp_path / "demo" / "dataset").releases() == [again["release_id"]]
