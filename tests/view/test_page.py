"""The viewer's page in a real Chromium: the canvas shows exactly the frame asked for, with its overlay."""

from __future__ import annotations

import numpy as np
import pytest

from tests.media import read_frame_number
from tests.store_support import LABELS, MARKER, MASK_FRAME, disc_mask
from tests.view.browser import canvas_pixels, open_page, wait_frame
from tests.view.conftest import REJECTED_FRAME
from vidlabel import Release
from vidlabel.viewer import UNTRACKED_COLOR, track_color

OBJ_TRACK = 1  # tests.store_support: the moving 'obj' box is track 1
PERSON_BOX = (30, 20, 50, 44)  # the model 'person' box on frames 6..9, no track, confidence 0.8


def frame_rows(release: Release, frame: int, *, kinds: tuple[int, ...] = (0, 1)) -> list[int]:
    """Annotation ids of the release's boxes and masks on one frame of video 'cam'."""
    t = release.table
    hit = (t.start_frame == frame) & np.isin(t.kind, kinds)
    return sorted(int(i) for i in t.annotation_id[hit])


def obj_box(release: Release, frame: int) -> tuple[int, int, int, int]:
    """The release's full-frame 'obj' box of track 1 on a frame (the generator's moving box)."""
    t = release.table
    hit = (t.start_frame == frame) & (t.track_id == OBJ_TRACK)
    (i,) = np.flatnonzero(hit)
    return tuple(int(v) for v in t.box[i])  # type: ignore[return-value]


def shown_number(page) -> int:
    return read_frame_number(canvas_pixels(page, "frame")[:, :, :3])


def table_ids(page) -> list[int]:
    return sorted(
        int(i) for i in page.eval_on_selector_all("#rows tbody tr", "rs => rs.map(r => r.dataset.annotationId)")
    )


@pytest.mark.parametrize("source", ["dataset", "store"])
def test_a_box_edge_has_its_tracks_colour(servers, browser, view_data, source):
    page = open_page(browser, servers[source].url + "#video=cam&n=6")
    wait_frame(page, 6)
    x0, y0, x1, y1 = obj_box(view_data.release, 6)
    overlay = canvas_pixels(page, "overlay")
    mid = (y0 + y1) // 2
    colour = (*track_color(OBJ_TRACK), 255)
    # the 2-pixel stroke straddles the box's edge: the columns either side of x0, and of x1
    for x in (x0 - 1, x0, x1 - 1, x1):
        assert tuple(overlay[mid, x]) == colour, (x, overlay[mid, x])
    assert overlay[mid, (x0 + x1) // 2, 3] == 0  # inside: the picture shows through
    assert track_color(OBJ_TRACK) != UNTRACKED_COLOR
    # the model box, untracked, dashed: some of its left edge in the untracked colour, the gaps not
    left = overlay[PERSON_BOX[1] + 1 : PERSON_BOX[3] - 1, PERSON_BOX[0]]
    drawn = (left[:, 3] == 255) & np.all(left[:, :3] == UNTRACKED_COLOR, axis=1)
    assert drawn.any() and (left[:, 3] == 0).any()
    assert shown_number(page) == 6
    assert not page.js_errors
    page.close()


def test_arrow_keys_show_exactly_the_next_frame_from_video(servers, browser):
    page = open_page(browser, servers["dataset"].url + "#video=cam&n=6")
    wait_frame(page, 6)
    steps = [("ArrowRight", 7), ("ArrowRight", 8), ("Shift+ArrowRight", 18), ("ArrowLeft", 17),
             ("Shift+ArrowLeft", 7), ("End", 29), ("ArrowRight", 29), ("Home", 0), ("ArrowLeft", 0)]  # fmt: skip
    for key, expected in steps:
        page.keyboard.press(key)
        wait_frame(page, expected)
        assert shown_number(page) == expected, key
        assert page.input_value("#frame-number") == str(expected)
    page.close()


def test_arrow_keys_step_through_the_stored_frames_of_a_store(servers, browser, view_data):
    stored = sorted({int(n) for n in view_data.release.table.start_frame[view_data.release.table.kind != 2]})
    page = open_page(browser, servers["store"].url + "#video=cam&n=10")
    wait_frame(page, 10)
    i = stored.index(10)
    for _ in range(3):
        page.keyboard.press("ArrowRight")
        i += 1
        wait_frame(page, stored[i])
        assert shown_number(page) == stored[i]
    page.keyboard.press("End")
    wait_frame(page, stored[-1])
    assert shown_number(page) == stored[-1]
    page.close()


def test_the_frame_number_box_jumps_and_refuses_what_is_not_there(servers, browser, view_data):
    page = open_page(browser, servers["dataset"].url + "#video=cam&n=0")
    wait_frame(page, 0)
    page.fill("#frame-number", "25")
    page.press("#frame-number", "Enter")
    wait_frame(page, 25)
    assert shown_number(page) == 25
    page.fill("#frame-number", "30")
    page.press("#frame-number", "Enter")
    page.wait_for_function("document.getElementById('message').textContent.includes('out of range')")
    assert page.inner_text("#message") == "frame 30 out of range [0, 30)"
    assert page.get_attribute("#stage", "data-frame") == "25"
    page.close()
    page = open_page(browser, servers["store"].url + "#video=cam&n=0")
    page.fill("#frame-number", "15")  # inside the marker, not stored
    page.press("#frame-number", "Enter")
    page.wait_for_function("document.getElementById('message').textContent.includes('not stored')")
    assert "frame 15 is not stored" in page.inner_text("#message")
    page.close()


@pytest.mark.parametrize("source", ["dataset", "store"])
def test_a_markers_bar_spans_exactly_its_frames_and_a_click_seeks(servers, browser, source):
    page = open_page(browser, servers[source].url + "#video=cam&n=0")
    wait_frame(page, 0)
    count = 30
    track = page.locator('.tl-row[data-label="event"] .tl-track').bounding_box()
    bar = page.locator('.tl-row[data-label="event"] .tl-bar')
    assert bar.count() == 1
    box = bar.bounding_box()

    def frame_at(x: float) -> int:
        return int((x - track["x"]) / track["width"] * count)

    start, end = MARKER
    assert (frame_at(box["x"] + 0.5), frame_at(box["x"] + box["width"] - 0.5)) == (start, end)
    assert frame_at(box["x"] - 0.5) == start - 1 and frame_at(box["x"] + box["width"] + 0.5) == end + 1
    if source == "dataset":  # every frame is there: a click lands on the very frame under it
        y = track["y"] + track["height"] / 2
        for x, expected in ((box["x"] + 1, start), (box["x"] + box["width"] - 1, end), (box["x"] - 1, start - 1)):
            page.mouse.click(x, y)
            wait_frame(page, expected)
            assert shown_number(page) == expected
    page.close()


def test_filters_hide_their_rows_in_overlay_and_table(servers, browser, view_data):
    page = open_page(browser, servers["dataset"].url + "#video=cam&n=6")
    wait_frame(page, 6)
    every = frame_rows(view_data.release, 6)
    t = view_data.release.table
    person = [int(i) for i in t.annotation_id[(t.start_frame == 6) & (t.label == LABELS.index("person"))]]
    assert len(every) == 2 and len(person) == 1
    assert table_ids(page) == every

    def person_drawn() -> bool:
        overlay = canvas_pixels(page, "overlay")
        return bool((overlay[PERSON_BOX[1], PERSON_BOX[0] : PERSON_BOX[2], 3] == 255).any())

    assert person_drawn()
    for hide, restore in (
        (lambda: page.uncheck('#filter-labels input[value="person"]'),
         lambda: page.check('#filter-labels input[value="person"]')),
        (lambda: page.uncheck('#filter-origins input[value="model"]'),
         lambda: page.check('#filter-origins input[value="model"]')),
        (lambda: page.fill("#min-confidence", "0.9"), lambda: page.fill("#min-confidence", "0.5")),
    ):  # fmt: skip
        hide()
        assert table_ids(page) == sorted(set(every) - set(person))
        assert not person_drawn()
        assert "1 hidden by the filters" in page.inner_text("#rows-summary")
        restore()
        assert table_ids(page) == every and person_drawn()
    page.click('#filter-labels input[value="obj"]')
    page.click('#filter-labels input[value="obj"]')
    page.keyboard.press("ArrowRight")  # the focus is on a checkbox: the key still steps
    wait_frame(page, 7)
    assert table_ids(page) == frame_rows(view_data.release, 7)
    page.close()


def test_the_status_filter_hides_rejected_rows_of_the_live_dataset(servers, browser, view_data):
    page = open_page(browser, servers["live"].url + f"#video=cam&n={REJECTED_FRAME}")
    wait_frame(page, REJECTED_FRAME)
    every = frame_rows(view_data.release, REJECTED_FRAME)  # built before the row was rejected: it holds it
    assert view_data.rejected_id in every and table_ids(page) == every
    statuses = page.eval_on_selector_all("#rows tbody tr td:nth-child(7)", "tds => tds.map(t => t.textContent)")
    assert sorted(statuses) == sorted(["rejected"] + ["unreviewed"] * (len(every) - 1))
    page.uncheck('#filter-statuses input[value="rejected"]')
    assert table_ids(page) == sorted(set(every) - {view_data.rejected_id})
    page.close()


def test_a_mask_is_a_translucent_overlay_in_its_colour(servers, browser):
    page = open_page(browser, servers["dataset"].url + f"#video=cam&n={MASK_FRAME}")
    wait_frame(page, MASK_FRAME)
    overlay = canvas_pixels(page, "overlay")
    inside = disc_mask().astype(bool)
    alpha = overlay[:, :, 3]
    # around the disc (its caption lies above its top row, no box is near on this frame): the mask's pixels only,
    # all of them, translucent, in the untracked colour
    near = np.zeros_like(inside)
    top = int(np.flatnonzero(inside.any(axis=1))[0])
    near[top:, 25:60] = True
    assert np.all((alpha[near] > 0) == inside[near])
    assert np.all((alpha[inside] > 60) & (alpha[inside] < 160))
    rgb = overlay[inside][:, :3].astype(int)
    assert np.all(np.abs(rgb - np.array(UNTRACKED_COLOR)) <= 2)
    page.close()


def test_the_table_lists_the_frames_rows(servers, browser, view_data):
    page = open_page(browser, servers["dataset"].url + "#video=cam&n=7")
    wait_frame(page, 7)
    expected = frame_rows(view_data.release, 7)
    assert table_ids(page) == expected and len(expected) == 2  # the model person, the box made in view "left"
    cells = page.eval_on_selector_all(
        "#rows tbody tr", "rs => rs.map(r => Array.from(r.cells).map(c => c.textContent))"
    )
    t = view_data.release.table
    for row in cells:
        i = int(np.flatnonzero(t.annotation_id == int(row[0]))[0])
        assert row[2] == t.labels[int(t.label[i])]
        assert row[3] == ("" if t.track_id[i] < 0 else str(int(t.track_id[i])))
        assert row[4] == ("model" if t.origin[i] else "human")
        assert row[5] == ("" if np.isnan(t.confidence[i]) else f"{float(t.confidence[i]):.3f}")
        assert row[6] == "unreviewed"
    page.keyboard.press("ArrowRight")
    wait_frame(page, 8)
    assert table_ids(page) == frame_rows(view_data.release, 8)
    page.close()


@pytest.mark.parametrize("prefetch", [True, False])
def test_the_neighbouring_frames_are_fetched_ahead(servers, browser, prefetch):
    query = "" if prefetch else "?prefetch=0"
    page = open_page(browser, servers["dataset"].url + query + "#video=cam&n=6")
    wait_frame(page, 6)
    asked = (
        "() => [...window.vidlabelView.pictures.keys()].map(k => Number(k.split('\\u0000')[1])).sort((a, b) => a - b)"
    )
    if prefetch:  # 8 ahead, 2 behind, pictures and rows, without a key pressed
        page.wait_for_function(f"({asked})().length >= 11")
        assert page.evaluate(asked) == list(range(4, 15))
        page.wait_for_function("window.vidlabelView.rows.size >= 11")
    else:
        page.wait_for_timeout(500)
        assert page.evaluate(asked) == [6]
    page.close()
