"""The MediaSequence keys vidlabel writes and reads, with their SequenceExample types (one table, both directions).

Names and types are those of MediaPipe's MediaSequence reference (``media_sequence.py``); the keys under
``vidlabel/`` are our own (MediaSequence leaves room for them: readers ignore keys they do not know).
``CONTEXT`` keys live in ``SequenceExample.context``; ``FEATURE_LISTS`` keys have one entry per stored frame.
A type is ``"byte"``, ``"int"`` or ``"float"`` (the ``tfrecord`` package's names for ``bytes_list``,
``int64_list``, ``float_list``); ``list`` says whether a feature holds a list (or one value).
"""

from __future__ import annotations

__all__ = ["CONTEXT", "FEATURE_LISTS", "PROTO_FIELD"]

#: Context keys: name -> (type, holds a list).
CONTEXT: dict[str, tuple[str, bool]] = {
    "example/id": ("byte", False),
    "example/dataset_name": ("byte", False),
    "clip/data_path": ("byte", False),
    "clip/media_id": ("byte", False),
    "clip/start/timestamp": ("int", False),
    "clip/end/timestamp": ("int", False),
    "clip/label/index": ("int", True),
    "clip/label/string": ("byte", True),
    "clip/label/confidence": ("float", True),
    "segment/start/timestamp": ("int", True),
    "segment/end/timestamp": ("int", True),
    "segment/start/index": ("int", True),
    "segment/end/index": ("int", True),
    "segment/label/index": ("int", True),
    "segment/label/string": ("byte", True),
    "segment/label/confidence": ("float", True),
    "image/format": ("byte", False),
    "image/channels": ("int", False),
    "image/height": ("int", False),
    "image/width": ("int", False),
    "image/frame_rate": ("float", False),
    "INSTANCE_SEGMENTATION/image/format": ("byte", False),
    "INSTANCE_SEGMENTATION/image/height": ("int", False),
    "INSTANCE_SEGMENTATION/image/width": ("int", False),
    # ours
    "vidlabel/release_id": ("byte", False),
    "vidlabel/view_id": ("byte", False),
    "vidlabel/clip/label/start/timestamp": ("int", True),
    "vidlabel/clip/label/end/timestamp": ("int", True),
    "vidlabel/clip/label/origin": ("byte", True),
    "vidlabel/segment/origin": ("byte", True),
}

#: Feature-list keys (one feature per stored frame): name -> (type, each feature holds a list).
FEATURE_LISTS: dict[str, tuple[str, bool]] = {
    "image/encoded": ("byte", False),
    "image/timestamp": ("int", False),
    "image/label/index": ("int", True),
    "image/label/string": ("byte", True),
    "image/label/confidence": ("float", True),
    "region/bbox/ymin": ("float", True),
    "region/bbox/xmin": ("float", True),
    "region/bbox/ymax": ("float", True),
    "region/bbox/xmax": ("float", True),
    "region/label/index": ("int", True),
    "region/label/string": ("byte", True),
    "region/label/confidence": ("float", True),
    "region/track/string": ("byte", True),
    "region/track/index": ("int", True),
    "region/is_annotated": ("int", False),
    "region/is_generated": ("int", True),
    "region/timestamp": ("int", False),
    "INSTANCE_SEGMENTATION/image/multi_encoded": ("byte", True),
    "INSTANCE_SEGMENTATION/image/timestamp": ("int", False),
    # ours
    "vidlabel/region/kind": ("byte", True),
    "vidlabel/region/origin": ("byte", True),
}

#: The ``tf.train.Feature`` field of each type.
PROTO_FIELD = {"byte": "bytes_list", "int": "int64_list", "float": "float_list"}
