"""The colour of each track on the page: a fixed palette indexed by the track id, so a track keeps its colour."""

from __future__ import annotations

#: Kelly's colours of maximum contrast without white and black, as (r, g, b) 0..255.
PALETTE: tuple[tuple[int, int, int], ...] = tuple(
    (int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16))
    for h in (
        "F3C300", "875692", "F38400", "A1CAF1", "BE0032", "C2B280", "848482", "008856", "E68FAC", "0067A5",
        "F99379", "604E97", "F6A600", "B3446C", "DCD300", "882D17", "8DB600", "654522", "E25822", "2B3D26",
    )
)  # fmt: skip

#: The colour of a row without a track.
UNTRACKED_COLOR: tuple[int, int, int] = (255, 255, 255)


def track_color(track_id: int | None) -> tuple[int, int, int]:
    """The (r, g, b) colour, 0..255, the page draws a track's boxes and masks in.

    ``PALETTE[track_id % len(PALETTE)]`` (20 colours: tracks 20 apart share one); a row without a track
    (None or -1) is drawn in :data:`UNTRACKED_COLOR`. The page reads the palette from the server, so this
    function is what it draws.

    Parameters
    ----------
    track_id : int or None

    Returns
    -------
    tuple of 3 int
    """
    if track_id is None or track_id < 0:
        return UNTRACKED_COLOR
    return PALETTE[int(track_id) % len(PALETTE)]
