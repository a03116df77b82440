"""The viewer's Flask application: one page, its two static files, and read-only JSON and picture endpoints.

No URL carries a file path: videos are named by id and looked up in the
source, and the page's files come from a fixed list inside the package. Every
request whose ``Host`` header is not one the server was started for is
refused (a page elsewhere cannot reach it through DNS rebinding). Errors are
JSON ``{"error": message}`` with a 4xx status; nothing answers with a
traceback.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from importlib import resources
from typing import Any

import numpy as np

from vidlabel.errors import (
    FrameOutOfRangeError,
    OptionError,
    UnknownVideoError,
    VideoDecodeError,
    VideoNotFoundError,
    VidlabelError,
)
from vidlabel.spec import ORIGINS, STATUSES
from vidlabel.viewer._colors import PALETTE, UNTRACKED_COLOR

#: The page's files: URL name -> (package file, content type). Nothing else is served from the package.
STATIC = {
    "view.js": ("view.js", "text/javascript; charset=utf-8"),
    "view.css": ("view.css", "text/css; charset=utf-8"),
}
#: Encoded pictures kept per server (the page asks for neighbours ahead of time; a key press may repeat one).
PICTURE_CACHE = 64
#: HTTP status of each error a source raises; any other vidlabel error is 422 (understood, but unreadable).
STATUS_OF: tuple[tuple[type[Exception], int], ...] = (
    (UnknownVideoError, 404),
    (FrameOutOfRangeError, 404),
    (VideoNotFoundError, 404),
    (OptionError, 400),
    (VideoDecodeError, 422),
)
_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'"
    ),
    "Cache-Control": "no-store",
}


def _package_file(name: str) -> bytes:
    return resources.files("vidlabel.viewer").joinpath("static", name).read_bytes()


def encode_png(image: np.ndarray) -> bytes:
    """Lossless PNG of an (H, W, 3) uint8 RGB image (PyAV's encoder), stored without compression.

    Deflate at any level costs several times the frame's read (video frames hardly compress losslessly),
    and the bytes only cross the loopback; ``format=jpeg`` is the small one.
    """
    import av

    ctx = av.CodecContext.create("png", "w")
    ctx.width, ctx.height, ctx.pix_fmt = int(image.shape[1]), int(image.shape[0]), "rgb24"
    ctx.options = {"compression_level": "0", "pred": "none"}
    frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(image), format="rgb24")  # type: ignore[attr-defined]
    packets = list(ctx.encode(frame)) + list(ctx.encode(None))
    return b"".join(bytes(p) for p in packets)


def encode_jpeg(image: np.ndarray, quality: int) -> bytes:
    """JPEG of an (H, W, 3) uint8 RGB image at ``quality`` (1..100)."""
    import simplejpeg

    return bytes(simplejpeg.encode_jpeg(np.ascontiguousarray(image), quality=quality, colorspace="RGB"))


class _Pictures:
    """Encoded pictures by (video, frame, format, quality), least recently used dropped first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, int, str, int], bytes] = OrderedDict()

    def get(self, key: tuple[str, int, str, int]) -> bytes | None:
        with self._lock:
            data = self._cache.get(key)
            if data is not None:
                self._cache.move_to_end(key)
            return data

    def put(self, key: tuple[str, int, str, int], data: bytes) -> None:
        with self._lock:
            self._cache[key] = data
            while len(self._cache) > PICTURE_CACHE:
                self._cache.popitem(last=False)


def _int_arg(args: Any, name: str, *, default: int | None = None) -> int:
    text = args.get(name)
    if text is None:
        if default is None:
            raise OptionError(f"missing query parameter {name!r}")
        return default
    try:
        return int(text, 10)
    except ValueError:
        raise OptionError(f"query parameter {name}={text!r} is not an integer") from None


def _video_arg(args: Any) -> str:
    video_id = args.get("video")
    if not video_id:
        raise OptionError("missing query parameter 'video' (a video id from /api/videos)")
    return str(video_id)


def make_app(source: Any, allowed_hosts: set[str]) -> Any:
    """The Flask application serving ``source`` (a :mod:`vidlabel.viewer._sources` source).

    ``allowed_hosts`` holds the ``Host`` header values accepted (``host:port``, lower case); the server fills
    it once it knows its port, and may add names later.
    """
    from flask import Flask

    app = Flask("vidlabel.viewer", static_folder=None)
    app.config.update(PROPAGATE_EXCEPTIONS=False, MAX_CONTENT_LENGTH=0, JSON_SORT_KEYS=False)
    _guard(app, allowed_hosts)
    _page(app)
    _data(app, source)
    _frames(app, source)
    return app


def _guard(app: Any, allowed_hosts: set[str]) -> None:
    """The Host check before every request, the headers of every answer, and errors as JSON."""
    from flask import request
    from werkzeug.exceptions import HTTPException

    @app.before_request
    def _check_host() -> Any:
        host = (request.headers.get("Host") or "").lower()
        if host not in allowed_hosts:
            known = ", ".join(sorted(allowed_hosts))
            return _error(403, f"refused: Host {host or '(none)'!r} is not this server's address ({known})")
        return None

    @app.after_request
    def _headers(response: Any) -> Any:
        for name, value in _HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.errorhandler(HTTPException)
    def _http_error(err: Any) -> Any:
        return _error(int(err.code or 500), f"{err.name}: {err.description}")

    @app.errorhandler(VidlabelError)
    def _vidlabel_error(err: VidlabelError) -> Any:
        status = next((code for cls, code in STATUS_OF if isinstance(err, cls)), 422)
        return _error(status, str(err))

    @app.errorhandler(Exception)
    def _any_error(err: Exception) -> Any:
        return _error(500, f"internal error: {type(err).__name__}: {err}")


def _page(app: Any) -> None:
    """The page and its two files, from the package (nothing else)."""
    from flask import Response

    @app.get("/")
    def _index() -> Any:
        return Response(_package_file("index.html"), mimetype="text/html")

    @app.get("/static/<name>")
    def _static(name: str) -> Any:
        if name not in STATIC:
            return _error(404, f"no file {name!r} here; the page's files are {', '.join(sorted(STATIC))}")
        file, mimetype = STATIC[name]
        return Response(_package_file(file), content_type=mimetype)


def _data(app: Any, source: Any) -> None:
    """The JSON endpoints: what is shown, the videos, a frame's rows, a video's markers."""
    from flask import jsonify, request

    @app.get("/api/info")
    def _info() -> Any:
        return jsonify(
            title=source.title,
            kind=source.kind,
            release_id=source.release_id,
            labels=source.labels,
            origins=list(ORIGINS),
            statuses=list(STATUSES),
            palette=[list(c) for c in PALETTE],
            untracked_color=list(UNTRACKED_COLOR),
        )

    @app.get("/api/videos")
    def _videos() -> Any:
        return jsonify([source.video(v) for v in source.video_ids()])

    @app.get("/api/rows")
    def _rows() -> Any:
        video_id, frame = _video_arg(request.args), _int_arg(request.args, "n")
        return jsonify(video_id=video_id, frame=frame, rows=source.rows(video_id, frame))

    @app.get("/api/segments")
    def _segments() -> Any:
        video_id = _video_arg(request.args)
        return jsonify(video_id=video_id, segments=source.segments(video_id))


def _frames(app: Any, source: Any) -> None:
    """``/api/frame?video=ID&n=N[&format=png|jpeg][&quality=Q]``: exactly frame N as a picture."""
    from flask import Response, request

    pictures = _Pictures()

    @app.get("/api/frame")
    def _frame() -> Any:
        args = request.args
        video_id, frame = _video_arg(args), _int_arg(args, "n")
        fmt = args.get("format", "png")
        if fmt not in ("png", "jpeg"):
            raise OptionError(f"format={fmt!r}: allowed png (lossless) or jpeg")
        quality = _int_arg(args, "quality", default=90) if fmt == "jpeg" else 0
        if not 1 <= quality <= 100 and fmt == "jpeg":
            raise OptionError(f"quality={quality} out of range [1, 100]")
        key = (video_id, frame, fmt, quality)
        data = pictures.get(key)
        if data is None:
            image = source.frame(video_id, frame)
            data = encode_png(image) if fmt == "png" else encode_jpeg(image, quality)
            pictures.put(key, data)
        response = Response(data, mimetype=f"image/{fmt}")
        response.headers["Cache-Control"] = "private, max-age=3600"
        return response


def _error(status: int, message: str) -> Any:
    from flask import jsonify

    response = jsonify(error=message, status=status)
    response.status_code = status
    return response
