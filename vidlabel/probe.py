"""The import path ``from vidlabel.probe import probe, read_frame_index`` used by the docs and the spec.

:func:`probe` (a video file's metadata, content hash and frame index) and
:func:`read_frame_index` live in :mod:`vidlabel.video`; ``vidlabel.probe`` is also
the function itself (``vidlabel.probe(path)``). Importing this module makes the
package attribute ``vidlabel.probe`` this module, so the module is callable
too: ``vidlabel.probe(path)`` calls :func:`probe` either way.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from vidlabel.video import content_hash, probe, read_frame_index

__all__ = ["content_hash", "probe", "read_frame_index"]


class _CallableModule(types.ModuleType):
    """This module, callable as the function it is named after."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return probe(*args, **kwargs)


# Python binds a submodule to its package's attribute of the same name once imported, which would hide the
# package's probe function; a callable module keeps ``vidlabel.probe(path)`` working.
sys.modules[__name__].__class__ = _CallableModule
__wrapped__ = probe
