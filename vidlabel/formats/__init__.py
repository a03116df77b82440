"""Labels in and out: import and export the annotation formats users already have.

``import_labels(ds, format, path, ...)`` reads a MOT Challenge, CVAT for video 1.1, YouTube-VIS,
COCO-VID, Label Studio video or MediaSequence (TFRecord) file into a dataset through ``Dataset.add_annotations``
(a file is one ``Dataset.transaction``) and returns an :class:`ImportReport`; ``export_labels(ds, format, out,
release=...)`` writes a release in one of those formats and returns an :class:`ExportLabelsReport`.
``FORMATS`` maps each format name to its record (reader, writer, options, files, help), registered below in one
line per format; one private module per format (``_mot``, ``_cvat``, ``_ytvis``, ``_cocovid``,
``_labelstudio``, ``_mediasequence``) reads and writes it, and its docstring states its conventions.
"""

from __future__ import annotations

from vidlabel.errors import FormatError

from . import _cocovid, _cvat, _cvat_export, _labelstudio, _mediasequence, _mot, _ytvis
from ._api import export_labels, import_labels
from ._registry import FORMATS, LabelFormat, register_format
from ._report import ExportLabelsReport, ImportReport, VideoImport

register_format(LabelFormat(
    "mot", _mot.import_mot, _mot.export_mot,
    summary="MOT Challenge gt/det/results text (1-based frames, xywh boxes)",
    files="`gt.txt` / `det.txt`, our export's folder or MOT Challenge's `train/<sequence>/`; exports "
    "`OUT/<video_id>/gt/gt.txt` (+ `det/det.txt`, `seqinfo.ini`)",
    rows_in="lines 'frame,id,left,top,width,height,...' (6, 7, 9 or 10 comma-separated columns)",
    options=("one_based_pixels", "include_ignored", "read_as", "include_det"),
))  # fmt: skip
register_format(LabelFormat(
    "coco-vid", _cocovid.import_cocovid, _cocovid.export_cocovid,
    summary="mmtracking's COCO-VID JSON (videos, images, annotations)",
    files="one `.json` file",
    rows_in="'annotations' with a 'bbox' or 'segmentation' on an image of a 'videos' entry",
))  # fmt: skip
register_format(LabelFormat(
    "ytvis", _ytvis.import_ytvis, _ytvis.export_ytvis,
    summary="YouTube-VIS 2019/2021 JSON (per-frame boxes and masks per track)",
    files="one `.json` file",
    rows_in="'annotations' with per-frame 'bboxes' or 'segmentations'",
    options=("frames",),
))  # fmt: skip
register_format(LabelFormat(
    "cvat-video", _cvat.import_cvat, _cvat_export.export_cvat,
    summary="CVAT for video 1.1 XML (tracks, keyframe interpolation, masks, tags)",
    files="one `.xml` file or a folder of them; exports `OUT/<video_id>.xml` per video (or one `.xml` file for one "
    "video)",
    rows_in="<track> elements holding <box>, <mask> or <polygon> shapes, or <tag>s in <image> elements",
))  # fmt: skip
register_format(LabelFormat(
    "label-studio", _labelstudio.import_labelstudio, _labelstudio.export_labelstudio,
    summary="Label Studio video JSON (percent boxes, timeline labels)",
    files="one `.json` file of tasks",
    rows_in="tasks whose annotations[].result or predictions[].result hold videorectangle or timelinelabels regions",
    options=("frames_count_mismatch",),
))  # fmt: skip
register_format(LabelFormat(
    "mediasequence", _mediasequence.import_mediasequence, _mediasequence.export_mediasequence_labels,
    summary="MediaSequence tf.train.SequenceExample records (TFRecord)",
    files="a `.tfrecord` file or a folder of shards; exports labels-only records `OUT/part-*.tfrecord`",
    rows_in="tf.train.SequenceExample records with region/bbox, segment or clip label features",
))  # fmt: skip

__all__ = [
    "FORMATS",
    "ExportLabelsReport",
    "FormatError",
    "ImportReport",
    "VideoImport",
    "export_labels",
    "import_labels",
]
