"""Evaluator-only gallery: one figure per case with both conditions, what changed, and profiles.

Raw images keep one display mapping in every panel of every case (docs/halo.md): the colour is
``log10`` of the flux per pixel over the fixed range [-9, -1.5] (values at or below 1e-9, including
exact zeros, take the lowest colour). No per-image exposure. Rows are displayed with +y up
(``origin='lower'``); the arrays themselves are never flipped.

Beside them, the change from a to b is shown on a symmetric scale: ``log10(b_s / a_s)`` over
[-0.5, 0.5] decades, where ``_s`` is the image smoothed by a Gaussian of 1 arcmin FWHM (the resolution of a
20/20 eye, wider than the diffraction-ring spacing of every case, so the fringes of the two patterns do
not beat into false rings). Its mean along circles about the wick of b's first source gives the change
profile, and when no wick moved, the radius where b gains most on a beyond three lambda/D (at least 0.1
decade) is marked as the ring of added light, in the change panel and in both profile panels.
"""

from __future__ import annotations

import functools
import html
import io
import json
import math
from pathlib import Path

import numpy as np

LOG_MIN, LOG_MAX = -9.0, -1.5
ZOOM_HALF_ARCMIN = 3.0
CHANGE_DECADES = 0.5  # symmetric range of the change panel: a gain or loss by a factor 3.16 saturates
SMOOTH_FWHM_ARCMIN = 1.0
CHANGE_FLOOR = 1e-12  # added to both images before the ratio: far below the lowest display colour (1e-9)
GAIN_MIN_DECADES = 0.1  # a ring of added light is marked only where b gains at least 26 % on a
GAIN_START_LOD = 3.0  # ... and beyond three lambda/D from the wick (outside the core and first rings)
WICK_STILL_ARCMIN = 0.1  # ... and only when no wick moved more than this between a and b
ANGULAR_RANGE = (0.0, 2.0)  # flux / mean over angle; widened only if a profile leaves it
FONT = 12  # points at 72 dpi: 12 px in the PNG shown at its natural size
FIG_SIZE, DPI = (20.0, 9.6), 72
FIG_PX = (int(FIG_SIZE[0] * DPI), int(FIG_SIZE[1] * DPI))


def log_flux(a: np.ndarray) -> np.ndarray:
    """Map pixel flux to the fixed display range: log10 clipped to [LOG_MIN, LOG_MAX]."""
    with np.errstate(divide="ignore"):
        v = np.log10(np.where(a > 0, a, 0.0))
    return np.clip(v, LOG_MIN, LOG_MAX)


def smoothed(img: np.ndarray, pitch_arcmin: float) -> np.ndarray:
    """Smooth an image by a Gaussian of SMOOTH_FWHM_ARCMIN; zero outside the window (nothing reflected)."""
    from scipy.ndimage import gaussian_filter

    sigma = SMOOTH_FWHM_ARCMIN / (2.0 * math.sqrt(2.0 * math.log(2.0))) / pitch_arcmin
    return gaussian_filter(np.asarray(img, dtype=float), sigma, mode="constant", cval=0.0)


def change_map(a: np.ndarray, b: np.ndarray, pitch_arcmin: float) -> np.ndarray:
    """``log10(b_s / a_s)`` in decades, clipped to +-CHANGE_DECADES (see the module docstring)."""
    ratio = (smoothed(b, pitch_arcmin) + CHANGE_FLOOR) / (smoothed(a, pitch_arcmin) + CHANGE_FLOOR)
    return np.clip(np.log10(ratio), -CHANGE_DECADES, CHANGE_DECADES)


def change_profile(
    change: np.ndarray,
    axis: np.ndarray,
    centre: tuple[float, float],
    step: float = 0.125,
    r_max: float = 12.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean of the change map on annuli of width ``step`` about ``centre``: (radii, mean); NaN where empty."""
    xs, ys = np.meshgrid(axis, axis)
    r = np.hypot(xs - centre[0], ys - centre[1])
    nb = int(round(r_max / step))
    idx = np.floor(r / step).astype(np.int64).ravel()
    ok = idx < nb
    count = np.bincount(idx[ok], minlength=nb)
    total = np.bincount(idx[ok], weights=change.ravel()[ok], minlength=nb)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / np.maximum(count, 1), np.nan)
    return (np.arange(nb) + 0.5) * step, mean


def gain_ring(radii: np.ndarray, mean: np.ndarray, lambda_over_d: float) -> tuple[float, float] | None:
    """Find (radius, decades) where b gains most on a beyond GAIN_START_LOD lambda/D.

    None when the gain stays below GAIN_MIN_DECADES.
    """
    sel = (radii > GAIN_START_LOD * lambda_over_d) & np.isfinite(mean)
    if not np.any(sel):
        return None
    i = int(np.flatnonzero(sel)[np.argmax(mean[sel])])
    return (float(radii[i]), float(mean[i])) if mean[i] >= GAIN_MIN_DECADES else None


def fmt(v: float, digits: int = 4, sign: bool = True) -> str:
    """Format a number with fixed decimals and no negative zero (-0.0000 prints as +0.0000)."""
    v = round(float(v), digits)
    if v == 0:
        v = 0.0  # drops the sign of -0.0
    return f"{v:+.{digits}f}" if sign else f"{v:.{digits}f}"


def fmt_point(p) -> str:
    """``(x, y)`` in arcmin with four decimals, or a dash."""
    return "&ndash;" if p is None else f"({fmt(p[0])}, {fmt(p[1])})"


def _wick(rec: dict, k: int = 0) -> tuple[float, float]:
    s = rec["sources"][k]
    return tuple(s["wick_arcmin"] or s["expected_wick_arcmin"])


def case_figure(task: tuple) -> tuple[bytes, dict]:
    """PNG bytes and panel geometry of one case's figure; ``task`` is ``(case, refs)``.

    The geometry gives, for the change panel, its pixel box in the PNG (left, top, right, bottom, from
    the top-left corner), its data limits (arcmin), the centre of the change profile and the marked
    ring radius (None when nothing is marked), so that a test can read the picture back. The figure is
    drawn on this process's :class:`Canvas` (not thread-safe; :func:`icl.parallel.run_tasks` uses
    processes).
    """
    canvas = _canvas()
    _, geometry = draw_case(*task, canvas=canvas)
    return canvas.png(), geometry


class Canvas:
    """The figure's frame, built once and reused for every case, and the picture of its fixed part.

    Building the axes and their tick objects cost as much as drawing them, and most of the drawing is
    tick labels and colour bars that are the same in every case. The frame (axes, colour bars, scales,
    fixed labels) is therefore built once; a case removes the artists of the one before and adds its own
    (:meth:`clear`); and :meth:`png` draws the fixed part (the colour bars, and the ticks and labels of
    the panels whose limits do not depend on the case) once into a background, then draws on a copy of
    it only what the case changes: the content of those panels, the zoom and angular panels whole, and
    the title. Every limit is set explicitly and the background depends only on the fixed panels'
    limits, so a figure's bytes do not depend on the cases drawn on the canvas before it (tested); they
    differ from a whole-figure draw only where a tick meets an axis line (a few dozen pixels, by at
    most 21 of 255 levels).
    """

    def __init__(self) -> None:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.cm import ScalarMappable
        from matplotlib.colors import Normalize
        from matplotlib.figure import Figure

        # A fixed grid (no layout engine): every figure has the same geometry and draws once.
        self.fig = Figure(figsize=FIG_SIZE, dpi=DPI)
        # Its own Agg canvas keeps one renderer, whose text-metric and mathtext caches then serve every case.
        self.agg = FigureCanvasAgg(self.fig)
        self.axes = self.fig.subplots(2, 4, gridspec_kw={"wspace": 0.5, "hspace": 0.32})
        self.fig.subplots_adjust(left=0.04, right=0.985, bottom=0.075, top=0.91)
        self.title = self.fig.suptitle("", fontsize=FONT + 3)
        raw = ScalarMappable(Normalize(LOG_MIN, LOG_MAX), "magma")
        bars = [(self.axes[row, col], raw, "log10 flux per pixel") for col in (0, 1) for row in (0, 1)]
        change = ScalarMappable(Normalize(-CHANGE_DECADES, CHANGE_DECADES), "RdBu_r")
        bars.append((self.axes[0, 2], change, "log10(b / a), decades"))
        for ax, mappable, label in bars:
            cb = self.fig.colorbar(mappable, ax=ax, fraction=0.046, pad=0.03)
            cb.set_label(label, fontsize=FONT)
            cb.ax.tick_params(labelsize=FONT)
        for ax in self.axes.flat:
            ax.tick_params(labelsize=FONT)
            ax.xaxis.label.set_size(FONT)
            ax.yaxis.label.set_size(FONT)
        for ax in self.axes[:, :2].flat:
            ax.set_xlabel("x (arcmin)")
            ax.set_ylabel("y (arcmin)")
        self.axes[0, 2].set_xlabel("x (arcmin)")
        self.axes[0, 2].set_ylabel("y (arcmin)")
        self.axes[1, 2].set_xlabel("radius about the wick of b (arcmin)")
        self.axes[1, 2].set_ylabel("log10(b / a), decades")
        ax_r, ax_a = self.axes[0, 3], self.axes[1, 3]
        ax_r.set_yscale("log")
        ax_r.set_xlabel("radius about each wick (arcmin)")
        ax_r.set_ylabel("flux per pixel (mean over angle)")
        ax_a.set_xlabel("angle from +x, counter-clockwise (deg)")
        ax_a.set_ylabel("flux / mean over angle")
        ax_a.set_xticks([0, 90, 180, 270, 360])
        # Panels whose limits are the same in every case (full fields, change, profiles), and the rest.
        self.fixed = [self.axes[0, 0], self.axes[0, 1], self.axes[0, 2], self.axes[1, 2], self.axes[0, 3]]
        self.varying = [self.axes[1, 0], self.axes[1, 1], self.axes[1, 3]]
        self._background = None
        self._background_limits = None

    def clear(self) -> None:
        """Remove the artists of the case drawn last (images, lines, patches, texts, legends)."""
        for ax in self.axes.flat:
            for artist in (*ax.images, *ax.lines, *ax.patches, *ax.texts, *ax.collections):
                artist.remove()
            if ax.get_legend():
                ax.get_legend().remove()

    def png(self) -> bytes:
        """Draw the current case (see the class docstring) and return it as PNG bytes (RGB)."""
        from PIL import Image

        limits = [(ax.get_xlim(), ax.get_ylim()) for ax in self.fixed]
        if limits != self._background_limits:
            self._background = self._draw_background()
            self._background_limits = limits
        renderer = self.agg.get_renderer()
        self.agg.restore_region(self._background)
        for ax in self.fixed:
            ax.xaxis.set_visible(False)
            ax.yaxis.set_visible(False)
            ax.draw(renderer)
            ax.xaxis.set_visible(True)
            ax.yaxis.set_visible(True)
        for ax in self.varying:
            ax.draw(renderer)
        self.title.draw(renderer)
        rgb = np.asarray(self.agg.buffer_rgba())[:, :, :3]
        buf = io.BytesIO()
        Image.fromarray(np.ascontiguousarray(rgb)).save(buf, format="png", compress_level=1, dpi=(DPI, DPI))
        return buf.getvalue()

    def _draw_background(self):
        """Draw the colour bars and the fixed panels' axes (ticks, tick labels, axis labels) alone."""
        hidden = [a for ax in self.fixed for a in ax.get_children() if a not in (ax.xaxis, ax.yaxis)]
        hidden += [*self.varying, self.title]
        shown = [a.get_visible() for a in hidden]
        for artist in hidden:
            artist.set_visible(False)
        self.agg.draw()
        for artist, visible in zip(hidden, shown, strict=True):
            artist.set_visible(visible)
        return self.agg.copy_from_bbox(self.fig.bbox)


@functools.lru_cache(maxsize=1)
def _canvas() -> Canvas:
    """Return the canvas of this process."""
    return Canvas()


def prepare_canvas() -> None:
    """Build this process's canvas (and import matplotlib) ahead of its first figure."""
    _canvas()


def _title(ax, title: str) -> None:
    # An explicit y keeps matplotlib from measuring every tick label to place the title; the ticks are
    # below the axes, so the title sits where it would anyway.
    ax.set_title(title, fontsize=FONT + 1, y=1.0)


def _markers(ax, record: dict) -> None:
    for s in record["sources"]:
        x, y = s["input_position_arcmin"]
        ax.plot([x], [y], marker="x", ms=8, mew=1.6, color="cyan", ls="none")
        if s["wick_arcmin"]:
            ax.plot(
                [s["wick_arcmin"][0]],
                [s["wick_arcmin"][1]],
                marker="+",
                ms=12,
                mew=1.6,
                color="lime",
                ls="none",
            )
        ring = s.get("calibration_ring")
        if ring and ring.get("status") == "detected":
            cx, cy = ring["centre_arcmin"]
            t = np.linspace(0, 2 * math.pi, 241)
            ax.plot(
                cx + ring["radius_arcmin"] * np.cos(t),
                cy + ring["radius_arcmin"] * np.sin(t),
                color="lime",
                lw=1.0,
                ls="--",
            )
            if ring.get("ring_centre_arcmin"):
                ax.plot(
                    *ring["ring_centre_arcmin"],
                    marker="o",
                    ms=7,
                    mfc="none",
                    mew=1.4,
                    color="orange",
                    ls="none",
                )


def _outside(ax, axis: np.ndarray, lims: tuple[float, float, float, float], pitch: float) -> None:
    """Hatch and label the part of a zoom window that lies outside the detector."""
    from matplotlib.patches import Rectangle

    edge = axis[-1] + pitch / 2
    x0, x1, y0, y1 = lims
    ax.add_patch(
        Rectangle(
            (x0, y0), x1 - x0, y1 - y0, facecolor="#c8c8c8", edgecolor="#6e6e6e", hatch="//", lw=0, zorder=0
        )
    )
    if max(abs(x0), abs(x1), abs(y0), abs(y1)) > edge:
        tx = x1 - 0.05 * (x1 - x0) if x1 > edge else x0 + 0.05 * (x1 - x0)
        ty = y1 - 0.05 * (y1 - y0) if y1 > edge else y0 + 0.05 * (y1 - y0)
        ha = "right" if x1 > edge else "left"
        if abs(x0) <= edge and abs(x1) <= edge:  # only a y edge: put the label at the middle
            tx, ha = 0.5 * (x0 + x1), "center"
        ax.text(
            tx,
            ty,
            "outside detector",
            fontsize=FONT,
            ha=ha,
            va="top" if ty > 0 else "bottom",
            bbox={"facecolor": "white", "edgecolor": "#6e6e6e", "pad": 2},
            zorder=5,
        )


def draw_case(case, refs: dict, canvas: Canvas | None = None):
    """Draw one case on ``canvas`` (a new one by default); return its figure and panel geometry.

    See :func:`case_figure` for the geometry.
    """
    canvas = canvas or Canvas()
    canvas.clear()
    fig, axes = canvas.fig, canvas.axes
    ra, rb = (refs[c.id] for c in case.conditions)
    axis = ra.result.x_arcmin
    pitch = float(axis[1] - axis[0])
    ext = [axis[0] - pitch / 2, axis[-1] + pitch / 2] * 2
    imkw = {"origin": "lower", "extent": ext, "interpolation": "nearest", "zorder": 1}
    for col, ref in enumerate((ra, rb)):
        img = log_flux(ref.result.scene)
        ax = axes[0, col]
        ax.imshow(img, cmap="magma", vmin=LOG_MIN, vmax=LOG_MAX, **imkw)
        _markers(ax, ref.record)
        ax.set_xlim(ext[0], ext[1])
        ax.set_ylim(ext[2], ext[3])
        _title(ax, f"{ref.condition.id}: {ref.condition.label}"[:44])
        wicks = [_wick(ref.record, k) for k in range(len(ref.record["sources"]))]
        zx, zy = np.mean([w[0] for w in wicks]), np.mean([w[1] for w in wicks])
        spread = max(max(abs(w[0] - zx), abs(w[1] - zy)) for w in wicks)
        half = max(ZOOM_HALF_ARCMIN, spread + 2.0)
        ax = axes[1, col]
        ax.imshow(img, cmap="magma", vmin=LOG_MIN, vmax=LOG_MAX, **imkw)
        _markers(ax, ref.record)
        lims = (zx - half, zx + half, zy - half, zy + half)
        ax.set_xlim(lims[0], lims[1])
        ax.set_ylim(lims[2], lims[3])
        _outside(ax, axis, lims, pitch)
        _title(ax, f"{ref.condition.id} zoom, same colours")

    change = change_map(ra.result.scene, rb.result.scene, pitch)
    centre = _wick(rb.record)
    radii, mean = change_profile(change, axis, centre)
    lod = max(ra.condition.lambda_over_d_arcmin(), rb.condition.lambda_over_d_arcmin())
    # A ring of added light is a change of structure about a wick that stayed put; when the pattern
    # moves, the change panel shows where light left (blue) and arrived (red) instead.
    moved = max(math.dist(_wick(ra.record, k), _wick(rb.record, k)) for k in range(len(ra.record["sources"])))
    ring = gain_ring(radii, mean, lod) if moved < WICK_STILL_ARCMIN else None
    ax = axes[0, 2]
    ax.imshow(change, cmap="RdBu_r", vmin=-CHANGE_DECADES, vmax=CHANGE_DECADES, **imkw)
    t = np.linspace(0, 2 * math.pi, 361)
    if ring:
        ax.plot(
            centre[0] + ring[0] * np.cos(t), centre[1] + ring[0] * np.sin(t), color="black", lw=1.0, ls=":"
        )
    ax.set_xlim(ext[0], ext[1])
    ax.set_ylim(ext[2], ext[3])
    _title(ax, f"{case.id} change b vs a (1' smoothing)")

    ax = axes[1, 2]
    ok = np.isfinite(mean)
    ax.plot(radii[ok], mean[ok], color="black", lw=1.5)
    ax.axhline(0.0, color="#888888", lw=0.8)
    ax.set_ylim(-CHANGE_DECADES, CHANGE_DECADES)
    ax.set_xlim(0, radii[-1] + 0.0625)
    if ring:
        ax.axvline(ring[0], color="black", ls=":", lw=1.2)
        ax.text(
            ring[0],
            0.92 * CHANGE_DECADES,
            f" ring of added light\n r = {ring[0]:.2f}'",
            fontsize=FONT,
            va="top",
            ha="left" if ring[0] < 8 else "right",
        )
    _title(ax, "change along radius (mean over angle)")

    _profiles(axes[0, 3], axes[1, 3], ra, rb, ring)
    canvas.title.set_text(f"{case.id}  {case.title}"[:150])
    ax = axes[0, 2]
    ax.apply_aspect()  # the box an equal-aspect image takes at draw time, without drawing twice
    x0, y0, x1, y1 = (float(v) for v in ax.get_position().extents)
    w, h = FIG_PX
    geometry = {
        "change_panel": {
            "box_px": [x0 * w, (1 - y1) * h, x1 * w, (1 - y0) * h],
            "xlim": [float(v) for v in ax.get_xlim()],
            "ylim": [float(v) for v in ax.get_ylim()],
        },
        "change_centre_arcmin": [float(v) for v in centre],
        "ring_radius_arcmin": ring[0] if ring else None,
        "ring_gain_decades": ring[1] if ring else None,
    }
    return fig, geometry


def _profiles(ax_r, ax_a, ra, rb, ring) -> None:
    radii = np.asarray(ra.record["polar"]["radii_arcmin"])
    angles = np.asarray(ra.record["polar"]["angles_deg"])
    top = ANGULAR_RANGE[1]
    for ref, colour in ((ra, "tab:blue"), (rb, "tab:red")):
        prof = np.array(ref.record["polar"]["profiles"][0], dtype=float)
        with np.errstate(all="ignore"):
            mean = np.nanmean(prof, axis=1) if np.any(np.isfinite(prof)) else np.full(len(radii), np.nan)
        ok = np.isfinite(mean) & (mean > 0)
        ax_r.plot(radii[ok], mean[ok], color=colour, lw=1.3, label=f"{ref.condition.id}")
        cal = ref.record["sources"][0].get("calibration_ring")
        if cal and cal.get("status") == "detected":
            ax_r.axvline(cal["radius_arcmin"], color=colour, ls="--", lw=1.0)
        lobe = ref.record["sources"][0]["main_lobe_radius_arcmin"]
        beyond = np.flatnonzero((radii > lobe) & ok)
        if beyond.size:
            i = int(beyond[np.argmax(mean[beyond])])
            row = prof[i]
            sel = np.isfinite(row)
            rel = row[sel] / mean[i]
            top = max(top, 1.4 * float(rel.max()))
            ax_a.plot(
                angles[sel],
                rel,
                color=colour,
                marker=".",
                ms=4,
                label=f"{ref.condition.id}, r = {radii[i]:.2f}': {rel.min():.3f} to {rel.max():.3f}",
            )
    if ring:
        ax_r.axvline(ring[0], color="black", ls=":", lw=1.2, label="ring of added light")
    ax_r.set_ylim(10**LOG_MIN, 10**LOG_MAX)
    ax_r.set_xlim(0, 12)
    ax_r.legend(fontsize=FONT, loc="upper right")
    _title(ax_r, "radial profile, log axis")
    ax_a.set_xlim(0, 360)
    ax_a.set_ylim(ANGULAR_RANGE[0], top)
    ax_a.axhline(1.0, color="#888888", lw=0.8)
    if ax_a.get_legend_handles_labels()[0]:
        ax_a.legend(fontsize=FONT, loc="upper center")
    _title(ax_a, "angular profile, brightest radius")


def _measurements(refs: list) -> str:
    """HTML table of the measured geometry of both conditions."""
    head = (
        "<tr><th>condition</th><th>source</th><th>input (arcmin)</th><th>wick (arcmin)</th>"
        "<th>wick &minus; input</th><th>ring radius (analytic)</th><th>ring FWHM</th><th>ring centre</th>"
        "<th>offset = ring centre &minus; wick</th><th>arc coverage</th>"
        "<th>recorded / outside window</th></tr>"
    )
    rows = []
    for ref in refs:
        rec = ref.record
        led = rec["ledger"]
        for k, s in enumerate(rec["sources"]):
            ring = s.get("calibration_ring") or {}
            detected = ring.get("status") == "detected"
            radius = (
                f"{fmt(ring['radius_arcmin'], sign=False)} "
                f"({fmt(s['analytic']['first_bright_ring_arcmin'], sign=False)})"
                if detected
                else "&ndash;"
            )
            fwhm = fmt(ring["fwhm_arcmin"], sign=False) if detected and ring.get("fwhm_arcmin") else "&ndash;"
            cov = fmt(ring["arc_coverage"], 3, sign=False) if detected else "&ndash;"
            energy = f"{fmt(led['recorded'], 6, sign=False)} / {led['outside_window']:.2e}" if k == 0 else ""
            rows.append(
                f"<tr><td>{rec['condition']}</td><td>{html.escape(s['id'])}</td>"
                f"<td>{fmt_point(s['input_position_arcmin'])}</td><td>{fmt_point(s['wick_arcmin'])}</td>"
                f"<td>{fmt_point(s['wick_minus_input_arcmin'])}</td><td>{radius}</td><td>{fwhm}</td>"
                f"<td>{fmt_point(ring.get('ring_centre_arcmin') if detected else None)}</td>"
                f"<td>{fmt_point(s.get('ring_minus_wick_arcmin') if detected else None)}</td>"
                f"<td>{cov}</td><td>{energy}</td></tr>"
            )
    return f'<table class="m">{head}{"".join(rows)}</table>\n'


PAGE_HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ICL-Bench halo gallery (evaluator only)</title>
<style>body{font-family:sans-serif;font-size:16px;margin:1.5em;max-width:1460px}img{max-width:none;
border:1px solid #ccc}div.fig{overflow-x:auto}section{margin-bottom:2.5em}code{background:#f3f3f3}
dt{font-weight:bold}
table.m{border-collapse:collapse;font-size:14px;margin:.5em 0}table.m td,table.m th{border:1px solid #bbb;
padding:2px 6px;text-align:right}table.m th{background:#f0f0f0}</style></head><body>
<h1>ICL-Bench halo gallery</h1>
<p><strong>Evaluator only: these pictures show the reference answers.</strong></p>
<h2>How to read a figure</h2>
<dl>
<dt>Raw images (first two columns)</dt><dd>One fixed mapping in every panel of every case: colour = log10 of
the linear flux per pixel over [-9, -1.5] (zeros take the lowest colour), no per-image exposure. The log
mapping shows nine decades, so the ordinary diffraction rings of every pupil fill the field: a ring in these
panels is not by itself a halo. Axes are arcmin, fixation at (0, 0), +x right, +y up. Hatched grey: outside
the detector (no data; light there is lost, never wrapped).</dd>
<dt>Change b vs a (third column)</dt><dd>log10(b / a) after smoothing both images with a Gaussian of 1 arcmin
FWHM (the resolution of a 20/20 eye, wider than the diffraction-ring spacing), on a symmetric scale of
&plusmn;0.5 decade (a factor 3.2 saturates): red where b has more light, blue where it has less,
white where nothing changed. Below it,
its mean along circles about the wick of b. The dotted circle and dotted lines mark the <em>ring of added
light</em>: the radius, beyond 3 &lambda;/D, where b gains most on a, marked when the gain reaches 0.1 decade
(26 %) and no wick moved (when the pattern moves, blue shows where light left and red where it arrived).</dd>
<dt>Profiles (fourth column)</dt><dd>Radial: mean over angle of the flux per pixel on the fixed polar grid
(96 radii to 12 arcmin, 72 angles) about each condition's wick of source 1, log axis; dashed lines mark the
measured calibration rings. Angular: flux along the circle of the brightest radius beyond the main lobe,
divided by its mean, on a fixed range 0 to 2 (widened only if a profile leaves it) so that the
&plusmn;1-2 % ripple of pixel sampling is not drawn as structure; the legend gives each curve's
range (0.99 to 1.01 is sampling ripple of a round pattern, not structure).</dd>
<dt>Markers</dt><dd>Cyan &times;: input source position. Green +: <em>wick</em>, the centre of a source's
main image, found by iterating an intensity-weighted centroid within the first dark ring (it includes the
prism of a decentred optic). Dashed green circle: the measured first bright ring of a declared calibration
condition. Orange &#9675;: <em>ring centre</em>, the centre of a circle fitted to the ring's ridge in 16
angular sectors, measured without using the wick. <em>Offset</em> = ring centre &minus; wick: zero for a
concentric pattern, whatever the prism.</dd>
</dl>
"""


def write_gallery(
    folder: str | Path,
    cases,
    pngs: dict[str, bytes],
    refs: dict | None = None,
    geometry: dict[str, dict] | None = None,
) -> None:
    """Write one PNG per case (from :func:`case_figure`) and ``index.html`` into ``folder``.

    Figures are shown at their natural size (never shrunk, so text stays at 12 px; a narrow window
    scrolls sideways). ``refs`` (condition id to reference) adds each case's table of measurements;
    ``geometry`` (case id to the panel geometry of :func:`case_figure`) is kept on each image as
    ``data-geometry``.
    """
    from icl.io import atomic_write_bytes

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    parts = [PAGE_HEAD]
    for case in cases:
        name = f"{case.id}.png"
        atomic_write_bytes(folder / name, pngs[case.id])
        geo = ""
        if geometry and case.id in geometry:
            geo = f' data-geometry="{html.escape(json.dumps(geometry[case.id]))}"'
        table = _measurements([refs[c.id] for c in case.conditions]) if refs else ""
        parts.append(
            f'<section id="{case.id}"><h2>{case.id}: {html.escape(case.title)}</h2>\n'
            f"<p>{html.escape(case.purpose)}</p><p><em>Expected:</em> {html.escape(case.expectation)}</p>\n"
            f'<div class="fig"><img src="{name}" alt="{case.id} conditions, change and profiles" '
            f'width="{FIG_PX[0]}" height="{FIG_PX[1]}"{geo}></div>\n{table}</section>\n'
        )
    parts.append("</body></html>\n")
    atomic_write_bytes(folder / "index.html", "".join(parts).encode("utf-8"))
