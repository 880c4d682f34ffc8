"""The ``fit`` detector of the halo-forensics track: fit the nuisances, score what they cannot explain.

A genuine image is a render of its stated scene with nuisances drawn inside the published tolerances
(pupil diameter, residual defocus, residual cylinder at any axis, ICL decentre, flux) plus detector noise
of ``NOISE_SIGMA`` per pixel. The engine is deterministic, so the right nuisances reproduce a genuine
image down to its noise: the mean squared noise-weighted residual ``chi2`` is then 1 to within about 0.01
(16 384 pixels). The peak pixel holds about 1e-2 of the flux, 5e5 times the noise, so a forgery that moves
even 0.5 % of the light, or a faint ring or tail of 1e-7 per pixel, leaves ``chi2`` far above 1 unless a
nuisance inside its tolerance reproduces it. What F05 of the professional catalogue names is what the
re-render has to match, pixel by pixel:

- energy: the fitted flux must lie inside the flux tolerance, and a bloom that redistributes energy
  from the core into a blur is light no pupil, defocus or cylinder puts there;
- sampling: the re-render is the engine's converged far field on the stated window, so a tail folded
  back by FFT wrap-around, or a pattern rolled across the window's edge, is light it does not hold;
- wavelength response: the core and the first rings scale with lambda / D at the stated wavelength and
  pupil while the hole's halo is geometric (hole size times the eye's excess power), so a copy made at
  another wavelength or pupil, and a ring asset of fixed radius, match no nuisance inside tolerance;
- light paths: the ICL zone and the hole are separate paths of the same render (decentre moves the
  core by the ICL's prism but not the hole's halo), so a blend of two hole models is neither path's render.

The fit is weighted least squares (Levenberg-Marquardt on forward-difference Jacobians of re-renders).
A coarse stage with weights ``1 / (noise + 3 % of the model)`` finds the basin of the pattern's shape
(decentre from the centroid's shift first, then every nuisance); a fine stage with the noise alone as
weight converges to the noise floor. Even aberrations have a twin: negated defocus and cylinder give
the same core (exactly so without a hole, since the point-spread function of an even wavefront on a
centred pupil is centrosymmetric), and only the hole and the decentre break the tie, so the fine stage
also starts from the twin (unless the first fine fit is already at the noise inside every tolerance).
When no candidate reaches :data:`CONVERGED_CHI2`, the fit restarts from the next (pupil, defocus)
corner of :data:`STARTS`. The answer is the candidate with the lowest anomaly,
``log10(max(chi2, 1)) + 2 * excess``, where ``excess`` sums the squares of how far each nuisance and the
flux lie outside their tolerances: of two explanations alike to the noise, the one inside the
tolerances.

Scores: NH and SPL are the anomaly squashed to [0, 1). DUP is the similarity to the closest image stated
under another scene times this image's share of the pair's anomaly (a copy misses its stated scene or
needs nuisances outside tolerance; its original does not). For an image the nuisances do not explain,
:func:`probes` reports which of F05's four probes accounts for the rest; the scores do not use them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from icl import libm, linalg
from icl.forensics.baseline import duplicate_scores, squash
from icl.forensics.generate import NOISE_SIGMA, TOLERANCES, _fold, _with, render_scene
from icl.optics.model import decentre_shift_arcmin

FIT_NAMES = ("pupil", "defocus", "cyl_0", "cyl_45", "decentre_x", "decentre_y")
FIT_BOUND = 4.0  # nuisances are clipped to +-4 tolerances while fitting
COARSE_FLOOR = 3e-2  # coarse weights 1 / (noise + 3 % of the model): core and halo shape count alike
COARSE_STEP = 0.1  # finite-difference step of the coarse stage (tolerance units)
COARSE_ITERATIONS = 6
FINE_STEP = 1e-2  # of the fine stage (0.01 tolerance units moves the core by 0.2 pixel at most)
FINE_ITERATIONS = 12
MIN_GAIN = 0.01  # a stage ends at a step that lowers chi2 by less than 1 % (a valley floor, not a basin)
# Starts (pupil, defocus in tolerance units), tried in turn until a fit is converged.
STARTS = ((0.0, 0.0), (-0.5, 0.5), (0.5, -0.5))
# A pure-noise residual has chi2 = 1 +- 0.011; a fit above 1.5 has not found the scene's basin.
CONVERGED_CHI2 = 1.5


def nuisance_scene(stated: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
    """``stated`` with nuisances ``u`` in tolerance units (cylinder as two components of magnitude 1)."""
    t = TOLERANCES
    p, icl = stated["pupil"], stated["pupil"]["icl"]
    cyl = t["cylinder_d"] * float(np.hypot(u[2], u[3]))
    axis = math.degrees(0.5 * math.atan2(float(u[3]), float(u[2]))) % 180.0
    return _with(stated, **{
        "pupil.diameter_mm": p["diameter_mm"] * (1 + t["pupil_diameter_relative"] * u[0]),
        "pupil.eye_excess_d": p["eye_excess_d"] + t["defocus_d"] * u[1],
        "pupil.icl.cylinder_d": icl["cylinder_d"] + cyl,
        "pupil.icl.axis_deg": axis,
        "pupil.icl.decentre_mm": [icl["decentre_mm"][0] + t["decentre_mm"] * u[4],
                                  icl["decentre_mm"][1] + t["decentre_mm"] * u[5]],
    })


def twin(u: np.ndarray) -> np.ndarray:
    """Return the twin aberration: net defocus and cylinder negated (cylinder C holds C/2 of sphere)."""
    v = u.copy()
    h = float(np.hypot(u[2], u[3]))
    v[1], v[2], v[3] = -u[1] - h, -u[2], -u[3]
    return v


def excess(u: np.ndarray, flux: float, stated_flux: float) -> float:
    """Sum of squares of how far the nuisances and the flux lie outside their tolerances (tolerance units)."""
    over = np.abs(u).copy()
    over[2] = over[3] = float(np.hypot(u[2], u[3]))
    flux_dev = abs(flux / stated_flux - 1) / TOLERANCES["flux_relative"]
    return float(np.sum(np.clip(np.r_[over[:3], over[4:], flux_dev] - 1, 0, None) ** 2))


def anomaly(fit: dict[str, Any]) -> float:
    """Misfit beyond noise, on a log scale, plus nuisances outside the tolerances."""
    return float(math.log10(max(fit["chi2"], 1.0)) + 2.0 * fit["excess"])


def _centroid(img: np.ndarray, pitch_arcsec: float) -> np.ndarray:
    """Flux centroid (x, y) in arcmin of an [n, n] image centred on the axis (docs/conventions.md)."""
    a = np.clip(img, 0, None)
    ax = (np.arange(img.shape[0]) - (img.shape[0] - 1) / 2) * pitch_arcsec / 60
    return np.array([linalg.dot(a.sum(axis=0), ax), linalg.dot(a.sum(axis=1), ax)]) / a.sum()


class _Fit:
    """Renders of one stated scene under nuisances, and the weighted misfit of one image."""

    def __init__(self, img: np.ndarray, stated: dict[str, Any]) -> None:
        self.img, self.stated, self.renders = img, stated, 0

    def render(self, u: np.ndarray) -> np.ndarray:
        self.renders += 1
        return render_scene(nuisance_scene(self.stated, u))

    def misfit(self, model: np.ndarray, w: np.ndarray) -> tuple[float, float, np.ndarray]:
        """Mean squared weighted residual at the best flux, the flux and the weighted residual."""
        mw = model * w
        f = float((self.img * w * mw).sum() / max((mw * mw).sum(), 1e-300))
        r = (self.img - f * model) * w
        return float(np.mean(r * r)), f, r

    def lm(
        self, u: np.ndarray, floor: float, free: tuple[int, ...], iterations: int, step: float, stop: float,
        model: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray, float, float, np.ndarray]:
        """Run Levenberg-Marquardt on the ``free`` nuisances from ``u`` (``model``: its render, if known).

        Weights are fixed from the start's model; a step is kept only when it lowers the misfit, and the
        stage ends at ``stop``, after ``iterations`` or when a step gains less than :data:`MIN_GAIN`.
        Returns ``u``, the model, chi2, flux and the weighted residual.
        """
        model = self.render(u) if model is None else model
        w = 1.0 / (NOISE_SIGMA + floor * np.abs(model))
        chi, f, r = self.misfit(model, w)
        lam = 1e-3
        idx = list(free)
        for _ in range(iterations):
            if chi <= stop:
                break
            cols = []
            for k in idx:
                du = np.zeros_like(u)
                du[k] = step
                cols.append(((self.render(u + du) - model) / step * f * w).ravel())
            jac = np.column_stack([*cols, (model * w).ravel()])
            jtj, jtr = linalg.matmul(jac.T, jac), linalg.matmul(jac.T, r.ravel())
            for _try in range(5):
                d = linalg.lstsq(jtj + lam * np.diag(np.diag(jtj)), jtr)  # square: the solution
                trial = u.copy()
                trial[idx] = np.clip(u[idx] + d[: len(idx)], -FIT_BOUND, FIT_BOUND)
                m_new = self.render(trial)
                c_new, f_new, r_new = self.misfit(m_new, w)
                if c_new < chi:
                    stalled = c_new > (1 - MIN_GAIN) * chi
                    u, model, chi, f, r = trial, m_new, c_new, f_new, r_new
                    lam = max(lam / 10, 1e-9)
                    break
                lam *= 10
            else:
                break  # no step lowers the misfit: a minimum at this step size
            if stalled:
                break
        return u, model, chi, f, r


def fit_nuisances(img: np.ndarray, stated: dict[str, Any]) -> dict[str, Any]:
    """Fit the nuisances and the flux of ``stated`` to ``img`` (the procedure of the module docstring).

    Returns
    -------
    dict
        ``u`` (tolerance units, :data:`FIT_NAMES`), ``flux``, ``chi2`` (mean squared noise-weighted
        residual: about 1 when the residual is noise), ``excess``, ``anomaly``, ``renders`` (engine calls),
        ``starts`` (starts tried) and the noise-weighted residual image ``residual``.

    """
    fit = _Fit(img, stated)
    u0 = np.zeros(len(FIT_NAMES))
    # Arcmin of pattern shift per mm of decentre, in the scene's frame (the sign starts the fit on the right side).
    prism = decentre_shift_arcmin(stated["pupil"]["icl"]["power_d"], 1.0, stated.get("frame", "visual"))
    if prism:
        pitch = stated["detector"]["pitch_arcsec"]
        shift = _centroid(img, pitch) - _centroid(fit.render(u0), pitch)
        u0[4:] = np.clip(shift / prism / TOLERANCES["decentre_mm"], -FIT_BOUND, FIT_BOUND)
    flux0 = stated["sources"][0]["flux"]
    noise_level = 1.0 + 3.0 * np.sqrt(2.0 / img.size)  # 3 standard deviations of a pure-noise chi2
    everything = tuple(range(len(FIT_NAMES)))
    candidates: list[dict[str, Any]] = []
    starts = 0
    for pupil, defocus in STARTS:
        starts += 1
        u = u0.copy()
        u[0], u[1] = pupil, defocus
        u, model = fit.lm(u, COARSE_FLOOR, (4, 5), 3, COARSE_STEP, 1.0)[:2]
        u, model = fit.lm(u, COARSE_FLOOR, everything, COARSE_ITERATIONS, COARSE_STEP, 1.0, model)[:2]
        for start, known in ((u, model), (twin(u), None)):
            v, _m, chi, f, r = fit.lm(start, 0.0, everything, FINE_ITERATIONS, FINE_STEP, noise_level, known)
            c = {"u": v, "flux": f, "chi2": chi, "excess": excess(v, f, flux0), "residual": r}
            c["anomaly"] = anomaly(c)
            candidates.append(c)
            if chi <= noise_level and c["excess"] == 0.0:
                break  # explained to the noise inside every tolerance: the twin cannot do better
        if min(c["chi2"] for c in candidates) <= CONVERGED_CHI2:
            break
    best = min(candidates, key=lambda c: c["anomaly"])
    return {**best, "renders": fit.renders, "starts": starts}


PROBE_BLUR_PX = (1.0, 2.0, 3.0, 4.0)  # bloom widths tried by the energy probe
PROBE_FOLD_PX = (4, 8, 16)  # tail margins folded back by the sampling probe
PROBE_WAVELENGTH_NM = 20.0  # half-step of the wavelength probe's central difference


def probes(img: np.ndarray, stated: dict[str, Any], fit: dict[str, Any]) -> dict[str, float]:
    """Share of the misfit beyond noise that each probe of F05 explains at the fitted nuisances.

    Each probe is one extra term ``a * T`` fitted by least squares on the noise weights together with a
    linear re-adjustment of the nuisances and the flux (their Jacobian at the fit), and reports
    ``(chi2_J - chi2_JT) / (chi2_J - 1)`` clipped to [0, 1], ``chi2_J`` being the misfit after the
    re-adjustment alone. With ``M`` the fitted render:

    - ``energy``: energy moved from the render into a blur of itself, ``T = G_s * M - M`` (s in
      :data:`PROBE_BLUR_PX` pixels, the best), a post-hoc bloom;
    - ``sampling``: the fitted scene rendered on a window wider by ``m`` pixels a side and folded back
      onto the stated one as a too-short FFT period would, ``T = fold(M_wide) - M`` (m in
      :data:`PROBE_FOLD_PX`, the best);
    - ``wavelength``: the render's response to the wavelength, ``T = (M(lambda + d) - M(lambda - d)) / 2``
      with d = :data:`PROBE_WAVELENGTH_NM` on every line of the spectrum;
    - ``path``: the hole's light path ablated, ``T = M_other - M`` with the hole black (clear when it is
      stated black); 0 without a hole.

    Costs 11 renders.
    """
    u, f = np.asarray(fit["u"], dtype=float), fit["flux"]
    scene = nuisance_scene(stated, u)
    n = img.shape[0]
    base = render_scene(scene)
    model = f * base
    r = ((img - model) / NOISE_SIGMA).ravel()
    cols = []
    for k in range(u.size):
        du = np.zeros_like(u)
        du[k] = FINE_STEP
        cols.append((f * render_scene(nuisance_scene(stated, u + du)) - model).ravel() / FINE_STEP)
    jac = np.column_stack([*cols, base.ravel()]) / NOISE_SIGMA

    def chi2(a: np.ndarray) -> float:
        coef = linalg.lstsq(a, r)
        return float(np.mean((r - linalg.matmul(a, coef)) ** 2))

    chi_j = chi2(jac)

    def explained(term: np.ndarray) -> float:
        t = term.ravel() / NOISE_SIGMA
        if chi_j <= 1.0 or not np.any(t):
            return 0.0
        return float(np.clip((chi_j - chi2(np.column_stack([jac, t]))) / (chi_j - 1.0), 0.0, 1.0))

    out = {"energy": max(explained(libm.gaussian_filter(model, s, mode="constant") - model)
                         for s in PROBE_BLUR_PX)}
    big = max(PROBE_FOLD_PX)
    wide = f * render_scene(_with(scene, **{"detector.n": n + 2 * big}))
    crops = (wide[big - m: n + big + m, big - m: n + big + m] for m in PROBE_FOLD_PX)
    out["sampling"] = max(explained(_fold(c, n) - model) for c in crops)
    spec = scene["sources"][0]["spectrum"]
    shifted = [f * render_scene(_with(scene, **{"sources.0.spectrum": [[w + d, p] for w, p in spec]}))
               for d in (PROBE_WAVELENGTH_NM, -PROBE_WAVELENGTH_NM)]
    out["wavelength"] = explained(0.5 * (shifted[0] - shifted[1]))
    icl = scene["pupil"]["icl"]
    out["path"] = 0.0
    if icl["hole_mm"] > 0:
        other = "clear" if icl["hole"] == "black" else "black"
        out["path"] = explained(f * render_scene(_with(scene, **{"pupil.icl.hole": other})) - model)
    return out


def _fit_task(task: tuple[np.ndarray, dict[str, Any]]) -> dict[str, Any]:
    img, stated = task
    out = fit_nuisances(img, stated)
    del out["residual"]  # the scores need the numbers only
    if out["chi2"] > CONVERGED_CHI2:  # not explained by the nuisances: which probe of F05 explains it
        out["probes"] = probes(img, stated, out)
    return out


def fit_scores(
    images: dict[str, np.ndarray], stated: dict[str, dict], fits: dict[str, dict] | None = None,
    progress: bool = False, scheduler: str | None = None, workers: int = 1,
    details: dict[str, dict] | None = None,
) -> dict[str, dict[str, float]]:
    """Scores of the ``fit`` detector for every image (module docstring); ``fits`` reuses earlier fits.

    The fits run as independent tasks (``scheduler``, ``workers``: :func:`icl.parallel.run_tasks`); the
    scores are the same whichever way they ran. ``details``, when given, receives each image's fit
    (nuisances, flux, chi2, excess, anomaly, renders, starts, and the :func:`probes` of an image the
    nuisances do not explain).
    """
    from icl.parallel import run_tasks

    ids = sorted(images)
    if fits is None:
        done = run_tasks(_fit_task, [(images[i], stated[i]) for i in ids], scheduler=scheduler,
                         workers=workers, description="fit nuisances", quiet=not progress)
        fits = dict(zip(ids, done, strict=True))
    if details is not None:
        details.update({i: {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in fits[i].items()}
                        for i in ids})
    score = {i: anomaly(fits[i]) for i in ids}
    dup = duplicate_scores(images, stated, score)
    return {i: {"NH": squash(score[i]), "DUP": dup[i], "SPL": squash(score[i])} for i in ids}
