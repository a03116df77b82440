"""The viewer's server over HTTP: what it answers, and a clear 4xx (never a traceback) for every bad request."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tests.media import read_frame_number
from vidlabel import view
from vidlabel.errors import DatasetNotFoundError, MissingExtraError, OptionError, ReleaseNotFoundError
from vidlabel.store._codecs import get_codec
from vidlabel.viewer import PALETTE, track_color

ROOT = Path(__file__).resolve().parents[2]


def get(server, target: str, *, host: str | None = None, method: str = "GET") -> tuple[int, str, bytes]:
    """(status, content type, body) of one raw request: the target is sent as written (no normalising)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        if host is not False:
            conn.putheader("Host", host or f"127.0.0.1:{server.port}")
        conn.endheaders()
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        conn.close()


def error_of(status: int, ctype: str, body: bytes) -> str:
    """The message of a JSON error answer (and that it is one, not a page with a traceback)."""
    assert ctype.startswith("application/json"), (status, ctype, body[:200])
    assert b"Traceback" not in body and b"<html" not in body.lower()
    answer = json.loads(body)
    assert answer["status"] == status
    return str(answer["error"])


def decode_png(body: bytes) -> np.ndarray:
    out = np.empty((1, 48, 64, 3), np.uint8)
    return get_codec("png").decode(body, out, "hdf5")[0]


# -- what it serves ------------------------------------------------------------------------------------------


def test_it_listens_on_127_0_0_1_and_a_free_port(servers):
    ports = {s.port for s in servers.values()}
    assert len(ports) == 3 and all(p > 0 for p in ports)
    for server in servers.values():
        assert server.url == f"http://127.0.0.1:{server.port}/" and server._server.server_address[0] == "127.0.0.1"


@pytest.mark.parametrize("source", ["dataset", "store"])
def test_frames_are_exactly_frame_n_as_png_or_jpeg(servers, source):
    for n in (0, 6, 28):
        status, ctype, body = get(servers[source], f"/api/frame?video=cam&n={n}")
        assert (status, ctype) == (200, "image/png")
        assert read_frame_number(decode_png(body)) == n
    status, ctype, body = get(servers[source], "/api/frame?video=cam&n=6&format=jpeg&quality=80")
    assert (status, ctype, body[:2]) == (200, "image/jpeg", b"\xff\xd8")


def test_videos_rows_and_segments(servers, view_data):
    status, _, body = get(servers["dataset"], "/api/videos")
    assert status == 200
    (video,) = json.loads(body)
    t = view_data.release.table
    assert video["video_id"] == "cam" and video["frame_count"] == 30 and video["frames"] is None
    assert video["counts"] == {k: int((t.kind == i).sum()) for i, k in enumerate(("box", "mask", "marker"))}
    assert video["annotated"] == sorted({int(n) for n in t.start_frame[t.kind != 2]})
    status, _, body = get(servers["store"], "/api/videos")
    assert status == 200
    (stored,) = json.loads(body)
    assert stored["frames"] == video["annotated"]  # exported frames="annotated"
    rows = json.loads(get(servers["dataset"], "/api/rows?video=cam&n=6")[2])["rows"]
    person = next(r for r in rows if r["label"] == "person")
    assert person["origin"] == "model" and person["confidence"] == pytest.approx(0.8) and person["track_id"] is None
    assert person["box"] == [30.0, 20.0, 50.0, 44.0] and person["status"] == "unreviewed"
    (segment,) = json.loads(get(servers["store"], "/api/segments?video=cam")[2])["segments"]
    assert (segment["label"], segment["start_frame"], segment["end_frame"]) == ("event", 10, 20)
    info = json.loads(get(servers["store"], "/api/info")[2])
    assert info["palette"] == [list(c) for c in PALETTE] and info["labels"] == ["obj", "person", "event"]


def test_track_colour_is_a_fixed_function_of_the_track_id():
    assert track_color(1) == PALETTE[1] and track_color(21) == PALETTE[1] and track_color(0) == PALETTE[0]
    assert track_color(None) == track_color(-1) != PALETTE[0]
    assert len(set(PALETTE)) == len(PALETTE) == 20


def test_the_page_and_its_files(servers):
    status, ctype, body = get(servers["dataset"], "/")
    assert status == 200 and ctype.startswith("text/html") and b'<canvas id="frame"' in body
    assert b"<video" not in body
    for name, kind in (("view.js", "text/javascript"), ("view.css", "text/css")):
        status, ctype, _ = get(servers["dataset"], f"/static/{name}")
        assert status == 200 and ctype.startswith(kind)


# -- bad requests: a 4xx with a message ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "status", "message"),
    [
        ("/api/frame?video=cam&n=30", 404, r"frame 30 out of range \[0, 30\) in video 'cam'"),
        ("/api/frame?video=cam&n=-1", 404, r"frame -1 out of range \[0, 30\)"),
        ("/api/rows?video=cam&n=99", 404, r"frame 99 out of range \[0, 30\)"),
        ("/api/frame?video=cam&n=six", 400, r"n='six' is not an integer"),
        ("/api/frame?video=cam", 400, r"missing query parameter 'n'"),
        ("/api/frame?n=3", 400, r"missing query parameter 'video'"),
        ("/api/frame?video=nope&n=3", 404, r"unknown video 'nope' in dataset .*; known: 'cam'"),
        ("/api/frame?video=cam&n=3&format=gif", 400, r"format='gif': allowed png \(lossless\) or jpeg"),
        ("/api/frame?video=cam&n=3&format=jpeg&quality=0", 400, r"quality=0 out of range \[1, 100\]"),
        ("/api/nothing", 404, r"Not Found"),
    ],
)
def test_bad_requests_are_4xx_with_a_message(servers, target, status, message):
    got = get(servers["dataset"], target)
    assert got[0] == status
    assert re.search(message, error_of(*got)), error_of(*got)


def test_a_store_without_the_frame_asked_for(servers, view_data):
    for target in ("/api/frame?video=cam&n=15", "/api/rows?video=cam&n=15"):
        got = get(servers["store"], target)
        assert got[0] == 404
        message = error_of(*got)
        assert message.startswith(f"frame 15 of video 'cam' is not in the store {view_data.store}")
        assert "17 stored frames, frames 0..28" in message


@pytest.mark.parametrize(
    "target",
    [
        "/static/../setup.py",
        "/static/%2e%2e/setup.py",
        "/static/..%2fsetup.py",
        "/static/%2e%2e%2f%2e%2e%2fsetup.py",
        "/static/..%5c..%5csetup.py",
        "/../../../etc/passwd",
        "/%2e%2e/%2e%2e/etc/passwd",
        "/static/index.html/../../_app.py",
        "/static/_app.py",
        "/api/frame?video=../../../etc/passwd&n=0",
        "/api/frame?video=%2e%2e%2fcam&n=0",
    ],
)
def test_no_path_in_a_url_leaves_the_server(servers, target):
    got = get(servers["dataset"], target)
    assert 400 <= got[0] < 500
    message = error_of(*got)
    assert message and b"root:" not in got[2] and b"setup(" not in got[2] and b"import" not in got[2]


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost", "127.0.0.1"])
def test_a_foreign_host_header_is_refused(servers, host):
    server = servers["dataset"]
    for target in ("/", "/api/videos", "/api/frame?video=cam&n=0"):
        got = get(server, target, host=host.format(port=server.port))
        assert got[0] == 403
        assert error_of(*got).startswith(f"refused: Host {host.format(port=server.port)!r} is not this server's")
    got = get(server, "/api/videos", host=False)
    assert got[0] == 403 and "Host '(none)'" in error_of(*got)
    for good in (f"127.0.0.1:{server.port}", f"localhost:{server.port}", f"LOCALHOST:{server.port}"):
        assert get(server, "/api/videos", host=good)[0] == 200


def test_the_host_given_is_accepted(view_data):
    with view(view_data.dataset, host="localhost") as server:
        assert server.url == f"http://localhost:{server.port}/"
        assert get(server, "/api/videos", host=f"localhost:{server.port}")[0] == 200
        assert get(server, "/api/videos", host=f"evil.example:{server.port}")[0] == 403


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_it_is_read_only(servers, method):
    got = get(servers["dataset"], "/api/rows?video=cam&n=6", method=method)
    assert got[0] == 405 and "Method Not Allowed" in error_of(*got)


def test_nothing_is_written(view_data, servers):
    def listing(folder: Path) -> dict[str, tuple[int, int]]:
        return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(folder.rglob("*")) if p.is_file()}

    before = {k: listing(p) for k, p in (("ds", view_data.dataset), ("store", view_data.store))}
    with view(view_data.dataset, release="live") as live, view(view_data.store) as store:
        for server in (live, store, servers["dataset"]):
            for target in ("/", "/api/videos", "/api/rows?video=cam&n=6", "/api/frame?video=cam&n=6"):
                assert get(server, target)[0] == 200
    after = {k: listing(p) for k, p in (("ds", view_data.dataset), ("store", view_data.store))}
    assert after == before


def test_an_unexpected_error_is_a_json_500_without_traceback(view_data):
    with view(view_data.dataset) as server:
        server.source.rows = lambda video_id, frame: 1 / 0
        got = get(server, "/api/rows?video=cam&n=6")
        assert got[0] == 500 and error_of(*got) == "internal error: ZeroDivisionError: division by zero"


# -- bad arguments: one clear error -------------------------------------------------------------------------


def test_bad_paths_and_options_raise_clear_errors(view_data, tmp_path):
    with pytest.raises(
        DatasetNotFoundError, match=r"nope does not exist \(expected a dataset folder or a frame store\)"
    ):
        view(tmp_path / "nope")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("hello")
    with pytest.raises(DatasetNotFoundError, match=r"'.*other' is neither a vidlabel dataset .* nor a frame store"):
        view(tmp_path / "other")
    with pytest.raises(DatasetNotFoundError, match=r"neither a vidlabel dataset"):
        view(view_data.root / "cam.mp4")
    with pytest.raises(OptionError, match=r"--release is for a dataset; the store .* holds one release"):
        view(view_data.store, release="latest")
    with pytest.raises(ReleaseNotFoundError, match=r"unknown release 'r000000000000'.*known: r"):
        view(view_data.dataset, release="r000000000000")
    with pytest.raises(OptionError, match=r"port=70000: give an integer in \[0, 65535\]"):
        view(view_data.dataset, port=70000)
    with pytest.raises(OptionError, match=r"path must be a dataset folder, a frame store or a store's URL, not None"):
        view(None)  # type: ignore[arg-type]


def test_a_port_in_use_is_a_clear_error(servers, view_data):
    port = servers["dataset"].port
    with pytest.raises(OptionError, match=rf"cannot listen on 127.0.0.1:{port}: the address is in use \(give another"):
        view(view_data.dataset, port=servers["dataset"].port)


def test_missing_flask_names_the_extra(view_data, monkeypatch):
    monkeypatch.setitem(sys.modules, "flask", None)
    with pytest.raises(MissingExtraError, match=r"needs Flask, which is not installed: pip install 'vidlabel\[view\]'"):
        view(view_data.dataset)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "vidlabel", "view", *args], capture_output=True, text=True,
                          timeout=120, env=env)  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("{root}/nope",),
            r"^vidlabel: error: .*nope does not exist \(expected a dataset folder or a frame store\)\n$",
        ),
        (("{root}/cam.mp4",), r"^vidlabel: error: '.*cam.mp4' is neither a vidlabel dataset"),
        (("{root}/store", "--release", "latest"), r"^vidlabel: error: --release is for a dataset"),
        (("{root}/ds", "--port", "-5"), r"^vidlabel: error: port=-5: give an integer in \[0, 65535\]"),
        (("{root}/ds", "--release", "rnope"), r"^vidlabel: error: unknown release 'rnope'"),
    ],
)
def test_the_command_refuses_bad_input_in_one_line(view_data, args, message):
    done = _cli(*(a.format(root=view_data.root) for a in args))
    assert done.returncode == 1 and done.stdout == ""
    assert re.search(message, done.stderr) and done.stderr.count("\n") == 1, done.stderr


def test_the_command_prints_the_address_and_serves(view_data):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "vidlabel", "view", str(view_data.store)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
    try:
        line = proc.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("vidlabel view: store store (r") and " at http://127.0.0.1:" in line, line
        port = int(line.rsplit(":", 1)[1].split("/")[0])
        status, _, body = get(SimpleNamespace(port=port), "/api/videos")
        assert status == 200 and json.loads(body)[0]["video_id"] == "cam"
        proc.send_signal(signal.SIGINT)  # Ctrl+C: the normal way to stop it
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0 and err == "vidlabel view: stopped\n", err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)


def test_a_zarr_store_by_url(view_data, tmp_path):
    from vidlabel import Dataset, export

    export(Dataset.open(view_data.dataset), tmp_path / "zarr", format="zarr", frames="all", progress=False)
    with view((tmp_path / "zarr").as_uri()) as server:
        assert str(server) == server.url and server.url in server._repr_html_()
        for n in (0, 15, 29):
            status, _, body = get(server, f"/api/frame?video=cam&n={n}")
            assert status == 200 and read_frame_number(decode_png(body)) == n
        got = get(server, "/api/frame?video=cam&n=30")
        assert got[0] == 404 and "frame 30 of video 'cam' is not in the store file://" in error_of(*got)


def test_frames_asked_in_any_order_are_exact(view_data):
    """Forward catch-up and backward read-around keep decoded frames: each must still be its own frame."""
    order = [*range(29, -1, -1), 3, 11, 4, 12, 28, 27, 0, 9, 8, 17, 16, 25]
    with view(view_data.dataset) as server:
        for n in order:
            status, _, body = get(server, f"/api/frame?video=cam&n={n}&format=png")
            assert status == 200 and read_frame_number(decode_png(body)) == n, n


def test_a_video_file_gone_is_a_404_naming_it(tmp_path):
    from tests.store_support import make_dataset

    make_dataset(tmp_path, n_frames=12)
    (tmp_path / "cam.mp4").unlink()
    with view(tmp_path / "ds") as server:
        assert get(server, "/api/rows?video=cam&n=3")[0] == 200  # the rows need no file
        got = get(server, "/api/frame?video=cam&n=3")
        assert got[0] == 404 and "cam.mp4" in error_of(*got)


def test_a_dataset_without_a_release_points_to_the_live_rows(tmp_path):
    from vidlabel import Dataset

    Dataset.create(tmp_path / "fresh").close()
    with pytest.raises(ReleaseNotFoundError, match=r"has no release yet.*; or view the live rows with --release live"):
        view(tmp_path / "fresh")
    with view(tmp_path / "fresh", release="live") as server:
        status, _, body = get(server, "/api/videos")
        assert status == 200 and json.loads(body) == []


def test_a_rows_attributes_are_listed_with_it(tmp_path):
    from tests.store_support import make_dataset

    ds = make_dataset(tmp_path, n_frames=12)
    ds.set_attribute_schema("obj", {"occluded": "bool", "visibility": "number"})
    box = {"kind": "box", "label": "obj", "start_frame": 3, "box": (1.0, 2.0, 11.0, 12.0)}
    ds.add_annotations([{**box, "attributes": {"occluded": True, "visibility": 0.5}}], "cam")
    with view(ds.path, release="live") as server:
        rows = json.loads(get(server, "/api/rows?video=cam&n=3")[2])["rows"]
    held = [r for r in rows if r.get("attributes")]
    assert [(r["box"], r["attributes"]) for r in held] == [
        ([1.0, 2.0, 11.0, 12.0], {"occluded": True, "visibility": 0.5})
    ]
    assert all("attributes" not in r for r in rows if r not in held)
