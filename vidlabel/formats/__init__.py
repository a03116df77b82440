"""Labels in and out: import and export the annotation formats users already have.

``import_labels(ds, format, path, ...)`` reads a MOT Challenge, CVAT for video 1.1, YouTube-VIS,
COCO-VID, Label Studio video or MediaSequence (TFRecord) file into a dataset through ``Dataset.add_annotations`` (a file
is one transaction) and returns an :class:`ImportReport`; ``export_labels(ds, format, out,
release=...)`` writes a release in one of those formats and returns an
:class:`ExportLabelsReport`. ``FORMATS`` maps each format name to its ``(importer, exporter)``
pair: one private module per format (``_mot``, ``_cvat``, ``_ytvis``, ``_cocovid``,
``_labelstudio``, ``_mediasequence``) adds itself there. Each module's docstring states its conventions.
"""

from __future__ import annotations

from vidlabel.errors import FormatError

from . import _cocovid, _cvat, _labelstudio, _mediasequence, _mot, _ytvis
from ._api import export_labels, import_labels
from ._common import FORMATS
from ._report import ExportLabelsReport, ImportReport, VideoImport

FORMATS["mot"] = (_mot.import_mot, _mot.export_mot)
FORMATS["coco-vid"] = (_cocovid.import_cocovid, _cocovid.export_cocovid)
FORMATS["ytvis"] = (_ytvis.import_ytvis, _ytvis.export_ytvis)
FORMATS["cvat-video"] = (_cvat.import_cvat, _cvat.export_cvat)
FORMATS["label-studio"] = (_labelstudio.import_labelstudio, _labelstudio.export_labelstudio)
FORMATS["mediasequence"] = (_mediasequence.import_mediasequence, _mediasequence.export_mediasequence_labels)

__all__ = [
    "FORMATS",
    "ExportLabelsReport",
    "FormatError",
    "ImportReport",
    "VideoImport",
    "export_labels",
    "import_labels",
]
