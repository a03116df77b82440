"""The viewer: a local, read-only web page over a dataset's release or a frame store (``vidlabel view``).

:func:`view` serves it from a background thread (a notebook) and returns a
:class:`ViewServer` (its address, and ``stop()``); ``vidlabel view PATH``
serves it in the foreground. Private modules: ``_sources`` (what is shown:
frames, rows, markers), ``_app`` (the Flask application), ``_server``,
``_colors`` (a track's colour), ``_cli`` (the command), and ``static/`` (the
page: plain HTML and JavaScript on a canvas). Flask is the ``view`` extra:
``import vidlabel.viewer`` does not import it.
"""

from __future__ import annotations

from vidlabel.viewer._colors import PALETTE, UNTRACKED_COLOR, track_color
from vidlabel.viewer._server import ViewServer, view

__all__ = ["PALETTE", "UNTRACKED_COLOR", "ViewServer", "track_color", "view"]
