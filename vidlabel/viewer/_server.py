"""The viewer's HTTP server: Werkzeug's threaded server on 127.0.0.1 and a free port unless told otherwise."""

from __future__ import annotations

import os
import threading
from typing import Any

from vidlabel.errors import MissingExtraError, OptionError

#: Addresses that mean "every interface": the page is then still opened at 127.0.0.1.
_ANY = ("0.0.0.0", "::", "")


def _bracketed(host: str) -> str:
    """An IPv6 address as a URL and a ``Host`` header write it (``[::1]``); any other name as it is."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def _require_flask() -> None:
    try:
        import flask  # noqa: F401
    except ImportError as err:
        raise MissingExtraError(
            "vidlabel view needs Flask, which is not installed: pip install 'vidlabel[view]'"
        ) from err


class ViewServer:
    """A running viewer: its address, and how to stop it.

    Made by :func:`view` (started in a background thread) and by ``vidlabel
    view`` (served in the foreground). A context manager: leaving the block
    stops it.

    Attributes
    ----------
    url : str
        ``http://127.0.0.1:PORT/``, the page's address.
    host : str
        The address listened on.
    port : int
        The port listened on (the free one chosen when 0 was asked).
    source : object
        What is shown (a dataset's release or a frame store).
    """

    def __init__(self, source: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        from werkzeug.serving import WSGIRequestHandler, make_server

        from vidlabel.viewer._app import make_app

        class _Quiet(WSGIRequestHandler):
            """Werkzeug's handler without a log line per request (the page asks for many frames)."""

            def log_request(self, *args: Any, **kwargs: Any) -> None:
                pass

        self.source = source
        self._allowed: set[str] = set()
        app = make_app(source, self._allowed)
        try:
            self._server = make_server(host, port, app, threaded=True, request_handler=_Quiet)
        except OSError as err:
            raise OptionError(f"cannot listen on {host}:{port}: {err}") from err
        except SystemExit as err:
            # werkzeug exits (status 1) when the port is taken, after printing why
            raise OptionError(
                f"cannot listen on {host}:{port}: the address is in use (give another --port, or 0 for a free one)"
            ) from err
        self.host = host
        self.port = int(self._server.server_port)
        names = {"127.0.0.1", "localhost"} | ({_bracketed(host.lower())} if host not in _ANY else set())
        self._allowed.update(f"{name}:{self.port}" for name in names)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The page's address."""
        shown = "127.0.0.1" if self.host in _ANY else _bracketed(self.host)
        return f"http://{shown}:{self.port}/"

    def start(self) -> ViewServer:
        """Serve in a daemon thread (returns at once); returns self."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, name="vidlabel-view", daemon=True)
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`stop` is called from another thread or the process is interrupted."""
        try:
            self._server.serve_forever()
        finally:
            self._close()

    def stop(self) -> None:
        """Stop serving and close the files it opened; calling it again does nothing."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._close()

    def _close(self) -> None:
        self._server.server_close()
        self.source.close()

    def __enter__(self) -> ViewServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ViewServer({self.url!r}, {self.source.title})"

    def __str__(self) -> str:
        return self.url

    def _repr_html_(self) -> str:
        from html import escape

        return f'<a href="{escape(self.url)}" target="_blank">{escape(self.source.title)}: {escape(self.url)}</a>'


def start_server(
    path: str | os.PathLike[str],
    *,
    release: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    storage_options: Any = None,
) -> ViewServer:
    """Open ``path`` and bind the server (not yet serving); see :func:`view` for the arguments and errors."""
    _require_flask()
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise OptionError(f"port={port!r}: give an integer in [0, 65535] (0: a free port)")
    if not isinstance(host, str) or not host:
        raise OptionError(f"host={host!r}: give an address to listen on, e.g. 127.0.0.1")
    if release is not None and not isinstance(release, str):
        raise OptionError(f"release={release!r}: give a release id, 'latest' or 'live'")
    from vidlabel.viewer._sources import open_source

    source = open_source(path, release=release, storage_options=storage_options)
    try:
        return ViewServer(source, host=host, port=port)
    except BaseException:
        source.close()
        raise


def view(
    path: str | os.PathLike[str],
    *,
    release: str | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    storage_options: Any = None,
) -> ViewServer:
    """Serve the viewer page over a dataset, a release or a frame store from a background thread.

    The page shows each video's frames (exactly frame N, decoded or read
    from the store) with their boxes, masks and markers, filters and a table
    of the frame's rows. Nothing is written. Open ``server.url`` in a browser;
    ``server.stop()`` (or leaving a ``with`` block) stops it.

    Parameters
    ----------
    path : path or str
        A dataset folder, a frame store (or a folder of stores), or a Zarr store's URL.
    release : str, optional
        For a dataset: a release id, ``"latest"`` (default) or ``"live"`` (the rows as they are now, every
        review status). Not for a store, which holds one release.
    host : str
        Address to listen on; 127.0.0.1 unless another is asked for. The page answers only requests whose
        ``Host`` is ``127.0.0.1:PORT``, ``localhost:PORT`` or ``host:PORT``.
    port : int
        Port to listen on; 0 (default) picks a free one.
    storage_options : mapping, optional
        fsspec options for a store's URL.

    Returns
    -------
    ViewServer
        Running; ``str(server)`` and ``server.url`` are the page's address.

    Raises
    ------
    DatasetNotFoundError
        If ``path`` does not exist or is neither a dataset nor a frame store.
    ReleaseNotFoundError
        If the dataset has no such release (or none yet: use ``release="live"``).
    OptionError
        On a bad port or host, a ``release`` given for a store, or an address that cannot be listened on.
    MissingExtraError
        If Flask is not installed (``pip install 'vidlabel[view]'``).
    StoreError
        If the store cannot be read.
    """
    return start_server(path, release=release, host=host, port=port, storage_options=storage_options).start()
