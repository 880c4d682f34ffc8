"""Gallery canvas: a figure drawn on a reused canvas is the same bytes as on a fresh one, and its picture (a
background of the fixed panels plus what the case changes) is the whole figure drawn at once."""

import io

import numpy as np
from icl.halo.gallery import Canvas, draw_case
from PIL import Image
from test_halo_gallery import refs_of


def _rgb(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)


def test_a_figure_does_not_depend_on_the_cases_drawn_before_it():
    h10, h14 = refs_of("H10"), refs_of("H14")  # H14's zoom panel lies at the detector edge, H10's at the centre
    fresh = Canvas()
    draw_case(*h10, canvas=fresh)
    alone = fresh.png()
    reused = Canvas()
    draw_case(*h14, canvas=reused)
    reused.png()
    draw_case(*h10, canvas=reused)
    assert reused.png() == alone


def test_the_picture_is_the_whole_figure():
    # Every artist a case adds must be drawn over the background: a missing marker, line, legend, hatch or
    # title would change thousands of pixels. Only the junctions of ticks and axis lines may differ (there
    # the background's ticks lie under the axis line instead of over it).
    canvas = Canvas()
    for cid in ("H14", "H10"):
        fig, _ = draw_case(*refs_of(cid), canvas=canvas)
        part = _rgb(canvas.png())
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=fig.dpi)
        whole = _rgb(buf.getvalue())
        diff = np.abs(part - whole).max(axis=-1)
        assert part.shape == whole.shape
        assert np.count_nonzero(diff) <= 150 and diff.max() <= 32, (cid, np.count_nonzero(diff), diff.max())
