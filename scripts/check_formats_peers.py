"""Our label exports, read by the tools' own readers: the rows each reader sees must equal the release's rows.

Not part of CI (it installs packages): the peers live in their own virtual environment (``--venv``, default
``/work/venv-fpeers``; ``--install`` creates it and installs Datumaro, label-studio-sdk, TrackEval, py-motmetrics
and pycocotools there), so none of them enters vidlabel's. This script builds a small dataset (two videos, tracks
with gaps, untracked boxes, two labels, ``occluded`` and ``visibility`` attributes), builds a release, exports it as
MOT, CVAT for video, COCO-VID, YouTube-VIS and Label Studio with ``vidlabel export-labels``, then runs one reader
script per peer in the peers' interpreter; each prints the boxes it read as ``[video, frame, track or null, label,
x0, y0, x1, y1, attributes?]`` and this script compares them with the release's rows (boxes within 0.01 px, tracks
compared as a partition of the rows: a reader may renumber them, and an untracked box, which a format without
untracked boxes writes as a one-frame track, is a block of its own). Each attribute a reader reports is held to
the release's value.

Readers: MOT by TrackEval's ``MotChallenge2DBox`` (the folder as ground truth; it keeps no visibility),
py-motmetrics' ``io.loadtxt`` (visibility; it subtracts 1 from x and y as MOT's 1-based pixels, which vidlabel
writes as they are, so the reader adds it back) and Datumaro's ``mot_seq`` (visibility); CVAT by Datumaro's
``cvat`` (occluded, attributes); COCO-VID by pycocotools' ``COCO`` (image to video frame, instance ids, occluded,
visibility) and Datumaro's ``coco_instances`` (images, not videos: boxes only, no tracks); YouTube-VIS by the
loading logic of the YouTube-VIS API (youtubevos/cocoapi ``ytvos.py``: its index, ``annToRLE`` with pycocotools'
masks); Label Studio by label-studio-sdk (each annotation validated against a video labelling config by
``LabelInterface``, each region's value parsed by the SDK's ``VideoRectangleValue``, per-region numbers read as
attributes; the SDK does not interpolate keyframes, so the reader does, as Label Studio's editor does). A reader
that fails is reported as failed, never as passed.

Usage: python scripts/check_formats_peers.py [--venv /work/venv-fpeers] [--install] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import numpy as np

PEERS = ("datumaro", "label-studio-sdk", "trackeval", "motmetrics", "pycocotools")


def make_release(root: Path) -> Any:
    """A dataset of two 64x48 videos, 20 and 12 frames, with tracks (gaps included) and untracked boxes."""
    from vidlabel import Dataset, VideoMetadata

    ds = Dataset.create(root / "ds")
    ds.add_labels(["person", "car"])
    for label in ("person", "car"):
        ds.set_attribute_schema(label, {"occluded": "bool", "visibility": "number"})
    for vid, n in (("cam1", 20), ("cam2", 12)):
        ds.add_video(
            VideoMetadata(
                video_id=vid, frame_count=n, fps={"num": 25, "den": 1}, width=64, height=48,
                sources=[{"uri": f"/videos/{vid}.mp4"}],
            )
        )  # fmt: skip
    rng = np.random.default_rng(0)
    for vid, n in (("cam1", 20), ("cam2", 12)):
        rows: list[dict[str, Any]] = []
        for track, label in enumerate(("person", "car", "person")):
            frames = sorted(rng.choice(n, size=6, replace=False).tolist())
            for f in frames:
                x, y = float(rng.integers(0, 40)), float(rng.integers(0, 30))
                w, h = float(rng.integers(2, 20)), float(rng.integers(2, 15))
                attrs = {"occluded": bool(rng.random() < 0.3), "visibility": round(float(rng.random()), 2)}
                rows.append({"kind": "box", "label": label, "start_frame": f, "box": (x, y, x + w, y + h),
                             "track_id": track, "attributes": attrs})  # fmt: skip
        for f in rng.choice(n, size=3, replace=False).tolist():
            x, y = float(rng.integers(0, 40)), float(rng.integers(0, 30))
            attrs = {"occluded": bool(rng.random() < 0.3), "visibility": round(float(rng.random()), 2)}
            rows.append({"kind": "box", "label": "car", "start_frame": f, "box": (x, y, x + 5.5, y + 4.25),
                         "attributes": attrs})  # fmt: skip
        ds.add_annotations(rows, vid)
    ds.build()
    return ds


def truth(ds: Any) -> list[list[Any]]:
    """``[video, frame, track, label, x0, y0, x1, y1, attributes]`` of every box row."""
    return [
        [r["video_id"], r["start_frame"], r["track_id"], r["label"], *map(float, r["box"]), r.get("attributes", {})]
        for r in ds.annotations()
        if r["kind"] == "box"
    ]


def export_all(ds: Any, out: Path) -> dict[str, Path]:
    from vidlabel.cli import main

    paths = {"mot": out / "mot", "cvat-video": out / "cvat", "coco-vid": out / "cocovid.json",
             "ytvis": out / "ytvis.json", "label-studio": out / "ls.json"}  # fmt: skip
    for fmt, path in paths.items():
        if main(["export-labels", str(ds.path), fmt, str(path)]) != 0:
            raise SystemExit(f"export-labels {fmt} failed")
    return paths


# Each reader runs in the peers' interpreter with argv [script, path] and prints a JSON list of boxes.
READERS: dict[str, str] = {
    "trackeval MOT gt": textwrap.dedent(
        """
        import json, shutil, sys, tempfile
        from pathlib import Path
        import numpy as np
        from trackeval.datasets import MotChallenge2DBox
        src = Path(sys.argv[1])
        seqs = sorted(p.name for p in src.iterdir() if p.is_dir())
        root = Path(tempfile.mkdtemp())
        gt = root / "gt" / "VL-train"
        for s in seqs:
            shutil.copytree(src / s, gt / s)
        (root / "seqmap.txt").write_text("name\\n" + "".join(f"{s}\\n" for s in seqs))
        trk = root / "trackers" / "VL-train" / "empty" / "data"
        trk.mkdir(parents=True)
        for s in seqs:
            (trk / f"{s}.txt").write_text("")
        labels = (src / seqs[0] / "gt" / "labels.txt").read_text().split()
        cfg = MotChallenge2DBox.get_default_dataset_config()
        cfg.update(GT_FOLDER=str(root / "gt"), TRACKERS_FOLDER=str(root / "trackers"), BENCHMARK="VL", SPLIT_TO_EVAL="train",
                   SEQMAP_FILE=str(root / "seqmap.txt"), TRACKERS_TO_EVAL=["empty"], PRINT_CONFIG=False, DO_PREPROC=False,
                   CLASSES_TO_EVAL=["pedestrian"])
        ds = MotChallenge2DBox(cfg)
        out = []
        for s in seqs:
            raw = ds._load_raw_file("empty", s, is_gt=True)
            for t, (ids, boxes, classes) in enumerate(zip(raw["gt_ids"], raw["gt_dets"], raw["gt_classes"])):
                for i, b, c in zip(ids.tolist(), boxes.tolist(), classes.tolist()):
                    x, y, w, h = b
                    out.append([s, t, int(i) - 1, labels[int(c) - 1], x, y, x + w, y + h])
        print(json.dumps(out))
        """
    ),
    "datumaro mot_seq": textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        import datumaro as dm
        out = []
        for seq in sorted(p for p in Path(sys.argv[1]).iterdir() if p.is_dir()):
            d = dm.Dataset.import_from(str(seq), "mot_seq")
            names = [c.name for c in d.categories()[dm.AnnotationType.label]]
            for item in d:
                frame = int(item.id) - 1  # the item id is the MOT frame, 1-based
                for a in item.annotations:
                    if a.type != dm.AnnotationType.bbox:
                        continue
                    tid = a.attributes.get("track_id")
                    out.append([seq.name, frame, None if tid in (None, -1) else int(tid) - 1, names[a.label],
                                a.x, a.y, a.x + a.w, a.y + a.h, {"visibility": float(a.attributes["visibility"])}])
        print(json.dumps(out))
        """
    ),
    "datumaro cvat": textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        import datumaro as dm
        out = []
        for xml in sorted(Path(sys.argv[1]).glob("*.xml")):
            d = dm.Dataset.import_from(str(xml), "cvat")
            names = [c.name for c in d.categories()[dm.AnnotationType.label]]
            for item in d:
                frame = int(item.attributes.get("frame", 0))
                for a in item.annotations:
                    # an outside shape closes a track's run: the object is not on that frame
                    if a.type != dm.AnnotationType.bbox or a.attributes.get("outside"):
                        continue
                    tid = a.attributes.get("track_id")
                    attrs = {k: v for k, v in a.attributes.items() if k not in ("track_id", "keyframe", "outside")}
                    out.append([xml.stem, frame, None if tid is None else int(tid), names[a.label],
                                a.x, a.y, a.x + a.w, a.y + a.h, attrs])
        print(json.dumps(out))
        """
    ),
    "label-studio-sdk": textwrap.dedent(
        """
        import json, sys
        from label_studio_sdk.label_interface import LabelInterface
        from label_studio_sdk.label_interface.control_tags import VideoRectangleValue
        config = ('<View><Video name="video" value="$video"/><VideoRectangle name="box" toName="video"/>'
                  '<Labels name="videoLabels" toName="video"><Label value="person"/><Label value="car"/></Labels>'
                  '<Number name="visibility" toName="video" perRegion="true"/></View>')
        li = LabelInterface(config)
        width, height = 64, 48
        out = []
        for task in json.load(open(sys.argv[1])):
            vid = task["data"]["video_id"]
            for ann in task["annotations"]:
                assert li.validate_annotation(ann), ann["id"]
                # a region's per-region results (a number the editor shows beside it) share its id
                numbers = {r["id"]: {r["from_name"]: r["value"]["number"]} for r in ann["result"] if r["type"] == "number"}
                for region in ann["result"]:
                    if region["type"] != "videorectangle":
                        continue
                    track, attrs = region["id"], numbers.get(region["id"], {})
                    value = VideoRectangleValue(**region["value"])
                    keys = sorted(value.sequence, key=lambda k: k.frame)
                    raw = sorted(region["value"]["sequence"], key=lambda k: k["frame"])
                    enabled = [k.get("enabled", True) for k in raw]  # not a field of the SDK's model
                    # Label Studio's video rectangles: linear between keyframes, a disabled keyframe ends the span
                    for j, k in enumerate(keys):
                        nxt = keys[j + 1] if j + 1 < len(keys) else None
                        stop = k.frame + 1 if not enabled[j] else (nxt.frame if nxt else value.framesCount + 1)
                        for f in range(k.frame, stop):
                            t = 0.0 if nxt is None or not enabled[j] else (f - k.frame) / (nxt.frame - k.frame)
                            x, y, w, h = (a + (getattr(nxt, c) - a) * t if nxt is not None else a
                                          for c, a in (("x", k.x), ("y", k.y), ("width", k.width), ("height", k.height)))
                            x0, y0 = x / 100 * width, y / 100 * height
                            out.append([vid, f - 1, track, value.labels[0], x0, y0, x0 + w / 100 * width,
                                        y0 + h / 100 * height, attrs])
        print(json.dumps(out))
        """
    ),
    "motmetrics MOT gt": textwrap.dedent(
        """
        import json, sys
        from pathlib import Path
        import motmetrics as mm
        out = []
        for seq in sorted(p for p in Path(sys.argv[1]).iterdir() if p.is_dir()):
            labels = (seq / "gt" / "labels.txt").read_text().split()
            df = mm.io.loadtxt(str(seq / "gt" / "gt.txt"), fmt="mot16")
            for (frame, tid), r in df.iterrows():
                # motmetrics takes MOT's pixels as 1-based and subtracts 1; vidlabel writes them as they are
                x, y = r["X"] + 1, r["Y"] + 1
                out.append([seq.name, int(frame) - 1, None if tid <= 0 else int(tid) - 1, labels[int(r["ClassId"]) - 1],
                            x, y, x + r["Width"], y + r["Height"], {"visibility": float(r["Visibility"])}])
        print(json.dumps(out))
        """
    ),
    "pycocotools COCO-VID": textwrap.dedent(
        """
        import json, sys
        from pycocotools.coco import COCO
        coco = COCO(sys.argv[1])
        videos = {v["id"]: v["name"] for v in coco.dataset["videos"]}
        out = []
        for ann in coco.loadAnns(coco.getAnnIds()):
            img = coco.loadImgs(ann["image_id"])[0]
            x, y, w, h = ann["bbox"]
            tid = ann.get("instance_id")
            attrs = {k: ann[k] for k in ("occluded", "visibility") if k in ann}
            if "occluded" in attrs:
                attrs["occluded"] = bool(attrs["occluded"])
            out.append([videos[img["video_id"]], img["frame_id"], None if tid is None or tid < 0 else tid,
                        coco.loadCats(ann["category_id"])[0]["name"], x, y, x + w, y + h, attrs])
        print(json.dumps(out))
        """
    ),
    "datumaro coco_instances": textwrap.dedent(
        """
        import json, shutil, sys, tempfile
        from pathlib import Path
        import datumaro as dm
        # the importer wants COCO's layout: annotations/instances_<subset>.json beside an images folder
        root = Path(tempfile.mkdtemp())
        (root / "annotations").mkdir()
        (root / "images").mkdir()
        shutil.copy(sys.argv[1], root / "annotations" / "instances_default.json")
        d = dm.Dataset.import_from(str(root / "annotations" / "instances_default.json"), "coco_instances")
        names = [c.name for c in d.categories()[dm.AnnotationType.label]]
        out = []
        for item in d:
            # Datumaro reads images, not videos: the item id is the file name, <video>/<frame>
            vid, frame = item.id.rsplit("/", 1)
            for a in item.annotations:
                if a.type == dm.AnnotationType.bbox:
                    out.append([vid, int(frame), "n/a", names[a.label], a.x, a.y, a.x + a.w, a.y + a.h])
        print(json.dumps(out))
        """
    ),
    "youtube-vis reader + pycocotools": textwrap.dedent(
        """
        import json, sys
        from collections import defaultdict
        from pycocotools import mask as maskUtils

        class YTVOS:
            # the loading and index of youtubevos/cocoapi's ytvos.py (YTVOS.createIndex, loadAnns, annToRLE)
            def __init__(self, path):
                self.dataset = json.load(open(path))
                self.anns = {a["id"]: a for a in self.dataset.get("annotations", [])}
                self.vids = {v["id"]: v for v in self.dataset.get("videos", [])}
                self.cats = {c["id"]: c for c in self.dataset.get("categories", [])}
                self.vidToAnns = defaultdict(list)
                for a in self.anns.values():
                    self.vidToAnns[a["video_id"]].append(a)

            def annToRLE(self, ann, frameId):
                t = self.vids[ann["video_id"]]
                h, w = t["height"], t["width"]
                segm = ann["segmentations"][frameId]
                if isinstance(segm, list):
                    return maskUtils.merge(maskUtils.frPyObjects(segm, h, w))
                if isinstance(segm["counts"], list):
                    return maskUtils.frPyObjects(segm, h, w)
                return segm

        yt = YTVOS(sys.argv[1])
        out = []
        for vid_id, vid in yt.vids.items():
            # YouTube-VIS videos carry no name: the frames' folder is the video
            name = vid["file_names"][0].rsplit("/", 1)[0]
            for ann in yt.vidToAnns[vid_id]:
                label = yt.cats[ann["category_id"]]["name"]
                for f, box in enumerate(ann["bboxes"]):
                    if box is None:
                        continue
                    if ann.get("segmentations") and ann["segmentations"][f] is not None:
                        # a mask's box, as pycocotools computes it, must agree with the file's bbox
                        mx, my, mw, mh = maskUtils.toBbox(yt.annToRLE(ann, f)).tolist()
                        assert abs(mx - box[0]) <= 1 and abs(my - box[1]) <= 1, (ann["id"], f)
                    x, y, w, h = box
                    out.append([name, f, ann["id"], label, x, y, x + w, y + h])
        print(json.dumps(out))
        """
    ),
}

#: The track a reader reports when the format, as the reader sees it, has none.
NO_TRACKS = "n/a"

#: The exported path each reader gets.
READER_INPUT = {"trackeval MOT gt": "mot", "datumaro mot_seq": "mot", "datumaro cvat": "cvat-video",
                "label-studio-sdk": "label-studio", "motmetrics MOT gt": "mot", "pycocotools COCO-VID": "coco-vid",
                "datumaro coco_instances": "coco-vid", "youtube-vis reader + pycocotools": "ytvis"}  # fmt: skip


def canonical(rows: list[list[Any]]) -> tuple[list[tuple[Any, ...]], list[frozenset[int]], np.ndarray]:
    """Rows sorted without their track ids, the track partition by position, the boxes."""
    keyed = sorted(rows, key=lambda r: (str(r[0]), int(r[1]), str(r[3]), *(round(float(v), 2) for v in r[4:8])))
    keys = [(str(r[0]), int(r[1]), str(r[3])) for r in keyed]
    tracks: dict[Any, set[int]] = {}
    for i, r in enumerate(keyed):
        # an untracked row is a block of its own: formats without untracked boxes write it as a one-frame track
        tracked = r[2] not in (None, NO_TRACKS) and not (isinstance(r[2], int) and r[2] < 0)
        tracks.setdefault((r[0], r[2]) if tracked else ("untracked", i), set()).add(i)
    boxes = np.array([[float(v) for v in r[4:8]] for r in keyed]).reshape(-1, 4)
    return keys, sorted((frozenset(t) for t in tracks.values()), key=min), boxes


def compare(got: list[list[Any]], want: list[list[Any]]) -> str | None:
    """None when equal; else what differs first. Attributes are compared where the reader gives them (a ninth
    entry), each one the reader reports against the row's."""
    diff = _compare_rows(got, want)
    if diff is not None:
        return diff
    order = lambda r: (str(r[0]), int(r[1]), str(r[3]), *(round(float(v), 2) for v in r[4:8]))  # noqa: E731
    for g, w in zip(sorted(got, key=order), sorted(want, key=order)):
        if len(g) > 8:
            mine = {k: w[8].get(k) for k in g[8]}
            if g[8] != mine:
                return f"attributes {g[8]} read where the release has {mine} ({g[:2]})"
    return None


def _compare_rows(got: list[list[Any]], want: list[list[Any]]) -> str | None:
    g, w = canonical(got), canonical(want)
    if len(g[0]) != len(w[0]):
        return f"{len(g[0])} boxes read, {len(w[0])} in the release"
    for a, b in zip(g[0], w[0]):
        if a != b:
            return f"row {a} read where the release has {b}"
    worst = float(np.abs(g[2] - w[2]).max()) if len(g[2]) else 0.0
    if worst > 0.01:
        return f"boxes differ by up to {worst:.3f} px"
    # a reader that cannot see tracks (Datumaro's COCO importer) is held to the boxes alone
    if g[1] != w[1] and not all(r[2] == NO_TRACKS for r in got):
        return "the track partition differs"
    return None


def seen(got: list[list[Any]], boxes: int) -> str:
    """What a reading was held to: the boxes, the tracks unless the reader cannot see them, each attribute's count."""
    counts: dict[str, int] = {}
    for r in got:
        for k in r[8] if len(r) > 8 else ():
            counts[k] = counts.get(k, 0) + 1
    tracks = "tracks not seen by this reader" if got and all(r[2] == NO_TRACKS for r in got) else "tracks"
    attrs = ", ".join(f"{k} on {n}" for k, n in sorted(counts.items())) or "none"
    return f"{boxes} boxes, {tracks}, attributes compared: {attrs}"


def install(venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PEERS], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--venv", type=Path, default=Path("/work/venv-fpeers"))
    ap.add_argument("--install", action="store_true", help="create the venv and install the peers into it")
    ap.add_argument("--keep", type=Path, help="write the dataset and exports here (default: a temporary folder)")
    args = ap.parse_args()
    if args.install:
        install(args.venv)
    python = args.venv / "bin" / "python"
    if not python.exists():
        print(f"no peers' environment at {args.venv}: run with --install", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp)
        ds = make_release(root)
        want = truth(ds)
        paths = export_all(ds, root / "out")
        failed = 0
        for name, code in READERS.items():
            proc = subprocess.run([str(python), "-c", code, str(paths[READER_INPUT[name]])], capture_output=True,
                                  text=True, timeout=600)  # fmt: skip
            if proc.returncode != 0:
                print(f"{name}: NOT RUN or failed: {proc.stderr.strip().splitlines()[-1:]}")
                failed += 1
                continue
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            diff = compare(got, want)
            print(f"{name}: {'rows equal' if diff is None else 'DIFFERENT: ' + diff} ({seen(got, len(want))})")
            failed += diff is not None
        print(f"{len(READERS) - failed} of {len(READERS)} peer readings equal the release's rows")
        return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
