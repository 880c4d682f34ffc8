"""Evaluator-only gallery: one figure per case with both conditions, their difference and profiles.

One display mapping for every picture (docs/halo.md): the colour is ``log10`` of the flux per pixel
over the fixed range [-9, -1.5] (values at or below 1e-9, including exact zeros, take the lowest
colour); a difference ``d`` is shown as ``sign(d) * (log10|d| + 9)`` over [-7.5, 7.5], i.e. the same
decades with a sign. No per-image exposure. Rows are displayed with +y up (``origin='lower'``); the
arrays themselves are never flipped.
"""

from __future__ import annotations

import html
import io
import math
from pathlib import Path

import numpy as np

LOG_MIN, LOG_MAX = -9.0, -1.5
ZOOM_HALF_ARCMIN = 3.0


def log_flux(a: np.ndarray) -> np.ndarray:
    """Fixed display mapping of pixel flux: log10 clipped to [LOG_MIN, LOG_MAX]."""
    with np.errstate(divide="ignore"):
        v = np.log10(np.where(a > 0, a, 0.0))
    return np.clip(v, LOG_MIN, LOG_MAX)


def signed_log(d: np.ndarray) -> np.ndarray:
    """Difference mapping: sign(d) * (log10|d| - LOG_MIN), clipped to the same number of decades."""
    span = LOG_MAX - LOG_MIN
    with np.errstate(divide="ignore"):
        mag = np.clip(np.log10(np.abs(d)) - LOG_MIN, 0.0, span)
    return np.sign(d) * np.where(np.abs(d) > 0, mag, 0.0)


def _markers(ax, record: dict, colour: str) -> None:
    for s in record["sources"]:
        x, y = s["input_position_arcmin"]
        ax.plot([x], [y], marker="x", ms=6, mew=1.2, color="cyan", ls="none")
        if s["wick_arcmin"]:
            ax.plot([s["wick_arcmin"][0]], [s["wick_arcmin"][1]], marker="+", ms=9, mew=1.2, color=colour, ls="none")
        ring = s.get("calibration_ring")
        if ring and ring.get("status") == "detected":
            cx, cy = ring["centre_arcmin"]
            t = np.linspace(0, 2 * math.pi, 241)
            ax.plot(cx + ring["radius_arcmin"] * np.cos(t), cy + ring["radius_arcmin"] * np.sin(t), color=colour,
                    lw=0.8, ls="--")


def case_png(task: tuple) -> bytes:
    """PNG bytes of one case's figure; ``task`` is ``(case, refs)`` with the references of its conditions."""
    case, refs = task
    buf = io.BytesIO()
    _case_figure(case, refs, buf)
    return buf.getvalue()


def _case_figure(case, refs: dict, path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ra, rb = (refs[c.id] for c in case.conditions)
    axis = ra.result.x_arcmin
    pitch = axis[1] - axis[0]
    ext = [axis[0] - pitch / 2, axis[-1] + pitch / 2] * 2
    # A fixed grid (no layout engine): every figure has the same geometry and draws once.
    fig, axes = plt.subplots(2, 4, figsize=(17, 8.4), dpi=72, gridspec_kw={"wspace": 0.42, "hspace": 0.3})
    fig.subplots_adjust(left=0.04, right=0.985, bottom=0.07, top=0.91)
    panels = [(ra, "a"), (rb, "b")]
    for col, (ref, _) in enumerate(panels):
        ax = axes[0, col]
        im = ax.imshow(log_flux(ref.result.scene), origin="lower", extent=ext, cmap="magma", vmin=LOG_MIN,
                       vmax=LOG_MAX, interpolation="nearest")
        _markers(ax, ref.record, "lime")
        ax.set_title(f"{ref.condition.id}: {ref.condition.label}", fontsize=9)
        ax.set_xlabel("x (arcmin)")
        ax.set_ylabel("y (arcmin)")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03, label="log10 flux per pixel")
        zx = np.mean([s["wick_arcmin"][0] if s["wick_arcmin"] else s["expected_wick_arcmin"][0]
                      for s in ref.record["sources"]])
        zy = np.mean([s["wick_arcmin"][1] if s["wick_arcmin"] else s["expected_wick_arcmin"][1]
                      for s in ref.record["sources"]])
        spread = max(abs(s["expected_wick_arcmin"][0] - zx) for s in ref.record["sources"])
        half = max(ZOOM_HALF_ARCMIN, spread + 2.0)
        ax = axes[1, col]
        im = ax.imshow(log_flux(ref.result.scene), origin="lower", extent=ext, cmap="magma", vmin=LOG_MIN,
                       vmax=LOG_MAX, interpolation="nearest")
        _markers(ax, ref.record, "lime")
        ax.set_xlim(zx - half, zx + half)
        ax.set_ylim(zy - half, zy + half)
        ax.set_title(f"{ref.condition.id} zoom", fontsize=9)
        ax.set_xlabel("x (arcmin)")
        ax.set_ylabel("y (arcmin)")
        fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03, label="log10 flux per pixel")
    ax = axes[0, 2]
    im = ax.imshow(signed_log(rb.result.scene - ra.result.scene), origin="lower", extent=ext, cmap="RdBu_r",
                   vmin=-(LOG_MAX - LOG_MIN), vmax=LOG_MAX - LOG_MIN, interpolation="nearest")
    ax.set_title(f"{case.id}: b - a (signed decades above 1e-9)", fontsize=9)
    ax.set_xlabel("x (arcmin)")
    ax.set_ylabel("y (arcmin)")
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.03, label="sign * (log10|b-a| + 9)")
    _profiles(axes[0, 3], axes[1, 3], axes[1, 2], ra, rb)
    fig.suptitle(f"{case.id}  {case.title}", fontsize=11)
    fig.savefig(path, format="png", dpi=72, metadata={"Software": None}, pil_kwargs={"compress_level": 4})
    plt.close(fig)


def _profiles(ax_r, ax_a, ax_t, ra, rb) -> None:
    radii = np.asarray(ra.record["polar"]["radii_arcmin"])
    angles = np.asarray(ra.record["polar"]["angles_deg"])
    for ref, colour in ((ra, "tab:blue"), (rb, "tab:red")):
        prof = np.array(ref.record["polar"]["profiles"][0], dtype=float)
        with np.errstate(all="ignore"):
            mean = np.nanmean(np.where(np.isnan(prof), np.nan, prof), axis=1) if np.any(np.isfinite(prof)) \
                else np.full(len(radii), np.nan)
        ok = np.isfinite(mean) & (mean > 0)
        ax_r.semilogy(radii[ok], mean[ok], color=colour, label=f"{ref.condition.id} mean over angle")
        ring = ref.record["sources"][0].get("calibration_ring")
        if ring and ring.get("status") == "detected":
            ax_r.axvline(ring["radius_arcmin"], color=colour, ls="--", lw=0.8)
        lobe = ref.record["sources"][0]["main_lobe_radius_arcmin"]
        beyond = np.flatnonzero((radii > lobe) & ok)
        if beyond.size:
            i = int(beyond[np.argmax(mean[beyond])])
            row = prof[i]
            sel = np.isfinite(row)
            ax_a.plot(angles[sel], row[sel] / mean[i], color=colour, marker=".", ms=3,
                      label=f"{ref.condition.id} at r = {radii[i]:.3f} arcmin")
    ax_r.set_xlabel("radius about wick 1 (arcmin)")
    ax_r.set_ylabel("flux per pixel")
    ax_r.set_title("radial profile (fixed polar anchor)", fontsize=9)
    ax_r.set_ylim(10**LOG_MIN, 10**LOG_MAX)
    ax_r.legend(fontsize=7)
    ax_a.set_xlabel("angle from +x, counter-clockwise (deg)")
    ax_a.set_ylabel("flux / mean over angle")
    ax_a.set_title("angular profile, brightest radius beyond the main lobe", fontsize=9)
    ax_a.set_xlim(0, 360)
    if ax_a.get_legend_handles_labels()[0]:
        ax_a.legend(fontsize=7)
    ax_t.axis("off")
    lines = []
    for ref in (ra, rb):
        rec = ref.record
        lines.append(f"{rec['condition']}  recorded {rec['ledger']['recorded']:.6f}, "
                     f"outside window {rec['ledger']['outside_window']:.2e}")
        for s in rec["sources"]:
            w = s["wick_arcmin"]
            lines.append(f"  {s['id']} wick " + (f"({w[0]:+.4f}, {w[1]:+.4f})" if w else "none"))
            ring = s.get("calibration_ring")
            if ring and ring.get("status") == "detected":
                lines.append(f"  ring r {ring['radius_arcmin']:.4f} (analytic "
                             f"{s['analytic']['first_bright_ring_arcmin']:.4f}), FWHM {ring['fwhm_arcmin']:.4f}, "
                             f"coverage {ring['arc_coverage']:.3f}")
    ax_t.text(0.0, 1.0, "\n".join(lines), va="top", ha="left", family="monospace", fontsize=7,
              transform=ax_t.transAxes)


PAGE_HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ICL-Bench halo gallery (evaluator only)</title>
<style>body{font-family:sans-serif;margin:1.5em;max-width:1250px}img{max-width:100%;border:1px solid #ccc}
section{margin-bottom:2.5em}code{background:#f3f3f3}</style></head><body>
<h1>ICL-Bench halo gallery</h1>
<p><strong>Evaluator only: these pictures show the reference answers.</strong> Every image uses one display
mapping: colour = log10 of the linear flux per pixel over [-9, -1.5] (zeros take the lowest colour), no
per-image exposure; differences b - a use sign(d) (log10|d| + 9) over [-7.5, 7.5]. Axes are arcmin, +y up.
Markers: cyan x = input source position, green + = measured wick, dashed circle = measured calibration ring.
Profiles come from the fixed polar grid (96 radii to 12 arcmin, 72 angles) about the wick of source 1.</p>
"""


def write_gallery(folder: str | Path, cases, pngs: dict[str, bytes]) -> None:
    """Write one PNG per case (from :func:`case_png`) and ``index.html`` into ``folder``."""
    from icl.io import atomic_write_bytes

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    parts = [PAGE_HEAD]
    for case in cases:
        name = f"{case.id}.png"
        atomic_write_bytes(folder / name, pngs[case.id])
        parts.append(f'<section id="{case.id}"><h2>{case.id}: {html.escape(case.title)}</h2>\n'
                     f"<p>{html.escape(case.purpose)}</p><p><em>Expected:</em> {html.escape(case.expectation)}</p>\n"
                     f'<img src="{name}" alt="{case.id} conditions, difference and profiles" '
                     f'width="1224" height="605"></section>\n')
    parts.append("</body></html>\n")
    atomic_write_bytes(folder / "index.html", "".join(parts).encode("utf-8"))
