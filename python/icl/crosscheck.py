"""Second-solver cross-check of rendered references, and the rule that keeps failing ones out of ranking.

Every reference image is rendered by the thin-phase FFT engine (:mod:`icl.optics.render`). Here the same
scene is recomputed by the matrix-Fourier solver (:mod:`icl.optics.mft`), which shares no code with it
(own pupil quadrature, transform and pixel integration), on a regular subsample of pixels (every
``stride``-th row and column: the second solver's cost grows with the pixels it evaluates). On those
pixels the errors the scorers use are measured between the two: relative L1, relative L1 outside the
main lobes (when a mask is given), energy and centroid. A reference whose disagreement in any metric
exceeds one third of the smallest tolerance that metric feeds is marked ``not_ranked`` with the reason;
scorers leave it out of every ranking and report it apart.

Sources with an extent are checked through the point-source pattern of the same pupil at the same
position and spectrum (the extent is a convolution of that pattern by an exact, separately tested
kernel); the record says so.

A scene whose pupil is the traced thick eye (:class:`icl.eye.pupil.ThickPupil`, the professional C05 and D02
references) is recomputed by :func:`icl.eye.far_field.render_thick_mft`: the same eye traced at the
matrix-Fourier solver's own quadrature nodes, with its own footprint search. The two share the ray tracer,
which is checked on its own against optiland (:mod:`icl.eye.optiland_check`); the record names it.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from importlib.metadata import version

import numpy as np

import icl
from icl import linalg
from icl.eye.far_field import ThickMftSampling, render_thick_mft
from icl.eye.pupil import ThickPupil
from icl.optics import Scene, render
from icl.optics.mft import MftSampling, render_mft
from icl.optics.model import Extent

FFT_METHOD = "thin-phase FFT engine: filtered cell coverage, pruned FFTW transform, band-limited pixel taps"
MFT_METHOD = "matrix Fourier transform: edge-exact pupil quadrature, direct sums onto sub-pixel Gauss nodes"
THICK_FFT_METHOD = ("thick sequential eye traced at the FFT engine's pupil grid nodes (fitted footprint "
                    "circles, filtered cell coverage), pruned FFTW transform, band-limited pixel taps")
THICK_MFT_METHOD = ("thick sequential eye traced at the matrix-Fourier quadrature nodes (own footprint "
                    "bisection, edge-exact Gauss-Legendre over disk intersections), direct sums onto "
                    "sub-pixel Gauss nodes")
SHARED_TRACER = ("icl._core.trace_rays through icl.eye.wavefront.opd: shared by both paths, checked against "
                 "optiland on its own (icl.eye.optiland_check)")
ROWS = 64  # rows (and columns) recomputed by the second solver: every 8th at 512 x 512, every 2nd at 128
_NUMPY = version("numpy")  # read once: parsing it per record took 6 % of a halo release's references


def methods(thick: bool = False) -> list[dict]:
    """Names and versions of the two paths (the thick eye's when ``thick``)."""
    if thick:
        return [
            {"name": "icl.eye.pupil.ThickPupil + icl.optics.render", "method": THICK_FFT_METHOD,
             "version": icl.__version__, "tracer": SHARED_TRACER},
            {"name": "icl.eye.far_field + icl.optics.mft", "method": THICK_MFT_METHOD,
             "version": icl.__version__, "numpy": _NUMPY, "tracer": SHARED_TRACER},
        ]
    return [
        {"name": "icl.optics.render", "method": FFT_METHOD, "version": icl.__version__},
        {"name": "icl.optics.mft", "method": MFT_METHOD, "version": icl.__version__,
         "numpy": _NUMPY},
    ]


def subsample(n: int, stride: int) -> np.ndarray:
    """Pixel indices ``stride // 2, stride // 2 + stride, ...`` (every pixel for stride 1)."""
    return np.arange(stride // 2, n, stride) if stride > 1 else np.arange(n)


def point_equivalent(scene: Scene) -> tuple[Scene, bool]:
    """Replace every extended source by a point at its position; return the scene and whether any was."""
    pts = tuple(s if s.extent.kind == "point" else replace(s, extent=Extent()) for s in scene.sources)
    return replace(scene, sources=pts), any(s.extent.kind != "point" for s in scene.sources)


def _centroid(img: np.ndarray, ys: np.ndarray, xs: np.ndarray) -> tuple[float, float] | None:
    tot = float(img.sum())
    if not tot > 0:
        return None
    return linalg.dot(img.sum(axis=0), xs) / tot, linalg.dot(img.sum(axis=1), ys) / tot


def disagreement(a: np.ndarray, b: np.ndarray, ys: np.ndarray, xs: np.ndarray,
                 halo: np.ndarray | None = None) -> dict[str, float]:
    """Scorer-style differences of ``a`` from ``b`` (components [k, rows, cols] on the same pixels).

    ``full_l1``: sum |a - b| / sum b; ``halo_l1``: the same outside the main lobes (``halo`` mask);
    ``energy``: |sum a - sum b| / sum b; ``centroid_arcmin``: energy-weighted mean over sources of the
    centroid distance; ``max_abs``: the largest pixel difference (flux units).
    """
    e = float(b.sum())
    out = {"full_l1": float(np.abs(a - b).sum()) / e, "energy": abs(float(a.sum()) - e) / e,
           "max_abs": float(np.abs(a - b).max())}
    if halo is not None:
        out["halo_l1"] = float(np.abs(a - b)[:, halo].sum()) / max(float(b[:, halo].sum()), 1e-300)
    num = den = 0.0
    for k in range(b.shape[0]):
        ca, cb = _centroid(a[k], ys, xs), _centroid(b[k], ys, xs)
        if cb is None:
            continue
        w = float(b[k].sum())
        num += w * (math.hypot(ca[0] - cb[0], ca[1] - cb[1]) if ca else math.inf)
        den += w
    if den > 0:
        out["centroid_arcmin"] = num / den
    return out


def crosscheck(scene: Scene, components: np.ndarray, scales: dict[str, float], *, stride: int | None = None,
               halo_mask: np.ndarray | None = None, sampling: MftSampling | ThickMftSampling | None = None,
               summed: bool = False) -> dict:
    """Compare a reference's ``components`` (from the FFT engine) with the second solver on a pixel subsample.

    Parameters
    ----------
    scene : Scene
        The reference's scene.
    components : ndarray, shape (n_sources, n, n)
        The reference's components as written.
    scales : dict
        Tolerance (scale) of each metric the reference feeds, by metric name; metrics without a scale
        are recorded but decide nothing.
    stride : int, optional
        Every ``stride``-th row and column is recomputed (default: ``n // ROWS``, at least 1).
    halo_mask : ndarray of bool, shape (n, n), optional
        Pixels outside the main lobes (for ``halo_l1``).
    sampling : MftSampling or ThickMftSampling, optional
        Parameters of the second solver (``ThickMftSampling`` for a thick pupil).
    summed : bool
        ``components`` is the scene image (sum over sources), shape (n, n).

    Returns
    -------
    dict
        Methods, subsample, per-metric ``value``, ``tolerance``, ``limit`` (one third of it) and ``ok``,
        ``ranked`` and, when not ranked, ``reason``.

    """
    det = scene.detector
    stride = stride or max(1, det.n // ROWS)
    idx = subsample(det.n, stride)
    check_scene, replaced = point_equivalent(scene)
    note = None
    if replaced:
        res = render(check_scene)
        components = res.scene if summed else res.components
        note = "extended sources checked through the point-source pattern of the same pupil and position"
    comps = np.asarray(components)[None] if summed else np.asarray(components)
    ref = comps[:, idx][:, :, idx]
    thick = isinstance(scene.pupil, ThickPupil)
    record: dict = {"methods": methods(thick), "subsample": {"stride": stride, "pixels": int(idx.size) ** 2,
                                                              "of": det.n * det.n}, "note": note}
    if not float(np.abs(ref).sum()) > 0:
        record.update(metrics={}, ranked=True, reason=None,
                      note="no flux on the detector: nothing to compare")
        return record
    failed = []
    if thick:
        if isinstance(sampling, MftSampling):
            sampling = ThickMftSampling(mft=sampling)
        alt, stats = render_thick_mft(check_scene, idx, idx, sampling)
        record["second_path"] = {
            "pupil_nodes": sum(st["nodes"] for st in stats),
            "rays": sum(st["rays"] for st in stats),
            "transmission_mismatch": sum(st["transmission_mismatch"] for st in stats),
            "footprint_roundness_mm": float(f"{max(st['roundness_mm'] for st in stats):.3g}"),
        }
        bad = record["second_path"]["transmission_mismatch"]
        if bad:
            failed.append(f"{bad} quadrature nodes traced with the apertures on contradict the footprint "
                          "they were placed in")
    else:
        alt = render_mft(check_scene, idx, idx, sampling)
    if summed:
        alt = alt.sum(axis=0, keepdims=True)
    axis = det.axis_arcmin[idx]
    halo = None if halo_mask is None else np.asarray(halo_mask)[np.ix_(idx, idx)]
    values = disagreement(ref, alt, axis, axis, halo)
    metrics = {}
    for name, value in values.items():
        scale = scales.get(name)
        # Three significant digits: the record does not change with the last bits of a BLAS reduction.
        entry = {"value": float(f"{value:.3g}"), "metric": _DESCRIPTIONS[name]}
        if scale is not None:
            entry.update(tolerance=scale, limit=scale / 3.0, ok=bool(value <= scale / 3.0))
            if not entry["ok"]:
                failed.append(f"{name} {value:.3g} > {scale / 3.0:.3g} (a third of its tolerance {scale:g})")
        metrics[name] = entry
    record.update(metrics=metrics, ranked=not failed,
                  reason=("the two solvers disagree: " + "; ".join(failed)) if failed else None)
    return record


_DESCRIPTIONS = {
    "full_l1": "sum |fft - mft| / sum mft over the subsample",
    "halo_l1": "the same outside the main lobes",
    "energy": "|sum fft - sum mft| / sum mft over the subsample",
    "centroid_arcmin": "distance of the subsample centroids, energy-weighted over sources",
    "max_abs": "largest |fft - mft| of a pixel of the subsample, in units of the source flux",
}


def lobe_mask(axis: np.ndarray, lobes: list[tuple[tuple[float, float], float]]) -> np.ndarray:
    """Pixels outside every main lobe ``((centre_x, centre_y), radius)`` (arcmin) on a square detector."""
    xs, ys = axis[None, :], axis[:, None]  # broadcast, not meshgrid: a release calls it 140 times
    mask = np.ones((axis.size, axis.size), dtype=bool)
    for (cx, cy), r in lobes:
        mask &= (xs - cx) ** 2 + (ys - cy) ** 2 > r * r
    return mask


def crosscheck_images(scenes: dict, images: dict, scales: dict[str, float], others: str) -> dict:
    """Cross-check scene images (one per case) rendered by the FFT engine.

    ``scenes`` are :class:`Scene` objects or their JSON form. ``others`` explains the cases of ``images``
    without a scene here (another engine, which the second
    solver cannot follow). Returns ``{"cases": {case: record}, "ranked": bool, "reason": str | None}``;
    the reference is not ranked when any case fails.
    """
    cases, failed = {}, []
    for case, img in images.items():
        if case in scenes:
            scene = scenes[case] if isinstance(scenes[case], Scene) else Scene.from_dict(scenes[case])
            cases[case] = crosscheck(scene, img, scales, summed=True)
            if not cases[case]["ranked"]:
                failed.append(f"case {case}: {cases[case]['reason']}")
        else:
            cases[case] = {"methods": [], "metrics": {}, "ranked": True, "reason": None, "note": others}
    return {"cases": cases, "ranked": not failed, "reason": "; ".join(failed) if failed else None}


PSF_CHECK_KINDS = ("psf", "pair", "rotation", "repeat", "solutions")  # checks on the relative L1 of PSFs


def smallest_tolerance(checks, kinds: tuple[str, ...] = PSF_CHECK_KINDS) -> float | None:
    """Smallest tolerance among ``checks`` (objects with ``kind`` and ``tolerance``) of the given kinds."""
    tols = [c.tolerance for c in checks if c.kind in kinds and c.tolerance is not None]
    return min(tols) if tols else None


def with_true_values(doc: dict, noise: dict) -> dict:
    """Copy a data package with its noisy parameters set back to their true values.

    ``noise`` is ``{"file.name": {"true": v, ...}}``. The reference was computed from the true values; the
    stated ones are what a solver reads. Entries with ``reference_uses: "stated"`` (forward tasks, whose
    references compute from the stated values) are left as stated.
    """
    out = json.loads(json.dumps(doc))
    for dotted, entry in noise.items():
        if entry.get("reference_uses") == "stated":  # a forward task: the reference used the stated value
            continue
        node = out
        *path, last = dotted.split(".")
        for key in path:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        if isinstance(node, dict) and isinstance(node.get(last), dict) and "value" in node[last]:
            node[last]["value"] = entry["true"]
    return out


def attach(record: dict, check: dict) -> dict:
    """Write ``check`` into a reference record; a failed check marks it ``not_ranked`` with the reason."""
    record["crosscheck"] = check
    if not check["ranked"]:
        record["not_ranked"] = check["reason"]
    return record


def not_ranked_reason(record: dict) -> str | None:
    """Reason a reference record is kept out of ranking (``None`` when it is ranked)."""
    if not isinstance(record, dict):
        return None
    if record.get("not_ranked"):
        return str(record["not_ranked"])
    check = record.get("crosscheck")
    if isinstance(check, dict) and check.get("ranked") is False:
        return str(check.get("reason") or "the two solvers disagree")
    return None
