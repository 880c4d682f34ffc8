"""Two reference submissions for the halo-forensics track.

``random``: seeded uniform scores, the floor any method must beat.

``physics``: re-render every stated condition with the thin-phase engine and compare, image by image,
quantities a physical halo must respect. Each feature is divided by the spread the published
tolerances produce, so 1 means "at the edge of what the tolerance draws did":

- energy: recorded flux against the re-render, in units of the flux calibration tolerance;
- ring scaling: the radius of the first bright ring, found near ``1.6347 lambda / D``, against the
  re-render (it must scale with wavelength and pupil; a pasted asset or bloom does not);
- halo profile: the azimuthal mean profile (flux-normalised) against the re-render, bin by bin;
- far-edge wrap-around: flux in the outer frame of the window against the re-render (a wrapped far
  field brings light back in at the opposite edge).

Every comparison is scaled by what the published tolerances do: besides the nominal re-render, each
stated scene is re-rendered :data:`ENSEMBLE_SIZE` times with nuisances drawn uniformly inside the
tolerances (seeded by the stated scene), and a deviation counts in units of the largest deviation of
those draws from the nominal render, plus detector noise.

NH is the largest of these. DUP multiplies how close an image is to another image stated under a
different condition by how much worse it matches its own stated condition than its twin does. SPL is
the product of the profile mismatch and the spread of the per-block mismatch across the halo against
the best-fitting re-render: a composite misses its stated condition, and in one region more than in
another, while one physical scene explains a genuine image everywhere alike.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from icl.forensics.generate import (
    NOISE_SIGMA,
    PITCH_ARCSEC,
    TOLERANCES,
    axis_arcmin,
    render_scene,
    true_scene,
)

BIN_ARCMIN = 0.25
PROFILE_MAX_ARCMIN = 4.0
EDGE_PX = 6
BLOCK_PX = 16
ENSEMBLE_SIZE = 4  # tolerance draws re-rendered per image
ARCMIN_PER_RAD = 180 * 60 / np.pi


def _centre(img: np.ndarray) -> tuple[float, float]:
    """Flux centroid of the brightest 3 x 3 neighbourhood (arcmin)."""
    i, j = np.unravel_index(np.argmax(img), img.shape)
    i0, i1, j0, j1 = max(i - 1, 0), min(i + 2, img.shape[0]), max(j - 1, 0), min(j + 2, img.shape[1])
    w = np.clip(img[i0:i1, j0:j1], 0, None)
    ax = axis_arcmin()
    yy, xx = np.meshgrid(ax[i0:i1], ax[j0:j1], indexing="ij")
    return float((w * yy).sum() / w.sum()), float((w * xx).sum() / w.sum())


def radial_profile(img: np.ndarray, centre: tuple[float, float], step: float = BIN_ARCMIN) -> np.ndarray:
    """Azimuthal mean of ``img`` in rings of width ``step`` arcmin around ``centre`` (y, x)."""
    ax = axis_arcmin()
    yy, xx = np.meshgrid(ax - centre[0], ax - centre[1], indexing="ij")
    b = (np.hypot(xx, yy) / step).astype(int)
    nb = int(PROFILE_MAX_ARCMIN / step)
    keep = b < nb
    s = np.bincount(b[keep], img[keep], nb)
    c = np.bincount(b[keep], minlength=nb)
    return np.where(c > 0, s / np.maximum(c, 1), 0.0)


def _ring_radius(img: np.ndarray, centre: tuple[float, float], lam_d_arcmin: float) -> float:
    """Radius of the first bright ring: profile maximum between 1.3 and 2.0 lambda/D (fine bins)."""
    step = PITCH_ARCSEC / 120  # half-pixel rings
    p = radial_profile(img, centre, step)
    r = (np.arange(p.size) + 0.5) * step
    sel = (r > 1.3 * lam_d_arcmin) & (r < 2.0 * lam_d_arcmin)
    return float(r[sel][np.argmax(p[sel])]) if sel.any() else float("nan")


def _mean_lambda_over_d(stated: dict[str, Any]) -> float:
    spec = stated["sources"][0]["spectrum"]
    w = sum(p for _, p in spec)
    lam = sum(wl * p for wl, p in spec) / w if w > 0 else spec[0][0]
    return lam * 1e-9 / (stated["pupil"]["diameter_mm"] * 1e-3) * ARCMIN_PER_RAD


def _edges(img: np.ndarray) -> np.ndarray:
    e = EDGE_PX
    return np.array([img[:e].sum(), img[-e:].sum(), img[:, :e].sum(), img[:, -e:].sum()])


def _blocks(img: np.ndarray) -> np.ndarray:
    n = img.shape[0] // BLOCK_PX
    return img[: n * BLOCK_PX, : n * BLOCK_PX].reshape(n, BLOCK_PX, n, BLOCK_PX).sum(axis=(1, 3))


def _measure(img: np.ndarray, lam_d: float, centre: tuple[float, float] | None = None) -> dict[str, Any]:
    """The quantities the physics check compares: energy, ring radius, profile, edges, blocks."""
    e = float(img.sum())
    c = _centre(img) if centre is None else centre
    return {
        "energy": e,
        "centre": c,
        "ring": _ring_radius(img, c, lam_d),
        "profile": radial_profile(img / e, c),
        "edges": _edges(img / e),
        "blocks": np.log(np.clip(_blocks(img / e), 0, None) + 1e-6),
    }


def ensemble(stated: dict[str, Any], seed: int, k: int = ENSEMBLE_SIZE) -> list[np.ndarray]:
    """``k`` renders of ``stated`` with nuisances drawn uniformly inside the published tolerances."""
    rng = np.random.default_rng(seed)
    return [render_scene(true_scene(stated, rng)) for _ in range(k)]


def features(
    img: np.ndarray, stated: dict[str, Any], ref: np.ndarray | None = None,
    spread: list[np.ndarray] | None = None,
) -> dict[str, Any]:
    """Physics-check features of one image against re-renders of its stated condition.

    ``ref`` is the nominal re-render, ``spread`` renders inside the tolerances (default: the nominal
    re-render and :data:`ENSEMBLE_SIZE` tolerance draws, seeded by the stated scene). Each deviation is
    divided by the largest deviation of ``spread`` from ``ref`` plus the detector noise.
    """
    ref = render_scene(stated) if ref is None else ref
    if spread is None:
        spread = ensemble(stated, _scene_seed(stated))
    lam_d = _mean_lambda_over_d(stated)
    m_ref = _measure(ref, lam_d)
    m_img = _measure(img, lam_d)
    m_ens = [_measure(s, lam_d) for s in spread]
    out: dict[str, Any] = {"energy": abs(m_img["energy"] / m_ref["energy"] - 1) / TOLERANCES["flux_relative"]}

    def envelope(key: str) -> np.ndarray:
        return np.max([np.abs(m[key] - m_ref[key]) for m in m_ens], axis=0)

    ring_ok = np.isfinite(m_img["ring"] + m_ref["ring"]) and all(np.isfinite(m["ring"]) for m in m_ens)
    # Half a fine ring bin of measurement on top of the spread.
    ring_allow = envelope("ring") + PITCH_ARCSEC / 240
    out["ring"] = float(abs(m_img["ring"] - m_ref["ring"]) / ring_allow) if ring_ok else 0.0
    pix_per_bin = np.maximum(
        2 * np.pi * (np.arange(m_ref["profile"].size) + 0.5) * (BIN_ARCMIN * 60 / PITCH_ARCSEC) ** 2, 1
    )
    allow = envelope("profile") + 3 * NOISE_SIGMA / np.sqrt(pix_per_bin)
    out["profile"] = float(np.max(np.abs(m_img["profile"] - m_ref["profile"]) / allow))
    edge_allow = envelope("edges") + 3 * NOISE_SIGMA * np.sqrt(EDGE_PX * img.shape[0])
    out["wrap"] = float(np.max(np.abs(m_img["edges"] - m_ref["edges"]) / edge_allow))
    nb = m_ref["blocks"].shape[0]
    ax = (np.arange(nb) - (nb - 1) / 2) * BLOCK_PX * PITCH_ARCSEC / 60
    by, bx = np.meshgrid(ax - m_ref["centre"][0], ax - m_ref["centre"][1], indexing="ij")
    halo = np.hypot(by, bx) > 1.5  # outside the core, where decentre jitter does not move much light
    # Per block, the log-flux deviation from the re-render that fits the halo best (the nominal one or a
    # tolerance draw), in units of what the tolerances do to that block: one physical scene explains a
    # genuine image everywhere, while a composite keeps a region that no single scene explains.
    devs = [np.abs(m_img["blocks"] - m["blocks"])[halo] for m in (m_ref, *m_ens)]
    best = devs[int(np.argmin([np.median(d) for d in devs]))] if halo.any() else np.zeros(0)
    z = best / (envelope("blocks")[halo] + 0.05)
    out["block_spread"] = float(z.max() - np.median(z)) if z.size else 0.0
    out["nh"] = max(out["energy"], out["ring"], out["profile"], out["wrap"])
    out["mismatch"] = out["profile"]
    return out


def _scene_seed(stated: dict[str, Any]) -> int:
    """A seed fixed by the stated scene, so the tolerance draws do not depend on image order."""
    import hashlib
    import json

    return int.from_bytes(hashlib.sha256(json.dumps(stated, sort_keys=True).encode()).digest()[:8], "little")


def _squash(x: float) -> float:
    return float(x / (1.0 + x))


def physics_scores(images: dict[str, np.ndarray], stated: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Physics-check scores for every image (see the module docstring)."""
    ids = sorted(images)
    feats = {i: features(images[i], stated[i]) for i in ids}
    logs = {i: np.log(np.clip(images[i] / images[i].sum(), 0, None) + 1e-7) for i in ids}
    out = {}
    for i in ids:
        best, twin = 0.0, None
        for j in ids:
            if j == i or stated[j] == stated[i]:
                continue
            d = float(np.sqrt(np.mean((logs[i] - logs[j]) ** 2)))
            sim = float(np.exp(-d / 0.05))
            if sim > best:
                best, twin = sim, j
        share = 0.5
        if twin is not None:
            mi, mj = feats[i]["mismatch"], feats[twin]["mismatch"]
            share = mi / (mi + mj) if mi + mj > 0 else 0.5
        out[i] = {
            "NH": _squash(feats[i]["nh"]),
            "DUP": best * share,
            # A composite misses its stated scene (profile) and misses it unevenly (block spread).
            "SPL": _squash(feats[i]["block_spread"]) * _squash(feats[i]["mismatch"]),
        }
    return out


def random_scores(ids: list[str], seed: int) -> dict[str, dict[str, float]]:
    """Seeded uniform scores in [0, 1) for every image and item."""
    rng = np.random.default_rng(seed)
    return {
        i: {k: float(v) for k, v in zip(("NH", "DUP", "SPL"), rng.random(3), strict=True)}
        for i in sorted(ids)
    }


def load_public(release: str | Path) -> tuple[dict[str, np.ndarray], dict[str, dict]]:
    """Images and stated scenes of a release's public part (validated)."""
    from icl.errors import InputError
    from icl.io import load_json, load_npz
    from icl.optics import Scene

    pub = Path(release) / "public"
    index = load_json(pub / "forensics_cases.json")
    ids = index.get("images") if isinstance(index, dict) else None
    if not isinstance(ids, list) or not all(isinstance(i, str) and i.isidentifier() for i in ids):
        raise InputError("expected a list of image ids", str(pub / "forensics_cases.json"), "images")
    images, stated = {}, {}
    for i in ids:
        f = pub / "images" / f"{i}.npz"
        arr = load_npz(f, required=["image"], optional=["x_arcmin", "y_arcmin", "angular_pixel_arcsec"])[
            "image"
        ]
        if (
            arr.ndim != 2
            or arr.shape[0] != arr.shape[1]
            or arr.dtype.kind != "f"
            or not np.all(np.isfinite(arr))
        ):
            raise InputError("expected a finite float [n, n] image", str(f), "image")
        images[i] = arr.astype(np.float64)
        sf = pub / "stated" / f"{i}.json"
        doc = load_json(sf)
        Scene.from_dict(doc, file=str(sf))  # validates; the dict form is what the features use
        stated[i] = doc
    return images, stated


# ---------------------------------------------------------------------------------------------------
# ``fit``: fit the nuisances, then judge what they cannot explain.
#
# A genuine image is a render of its stated scene with nuisances inside the published tolerances, plus
# detector noise. Fitting those nuisances (pupil, defocus, cylinder as two components, decentre, flux)
# by weighted least squares reproduces a genuine image down to its noise, while a forgery keeps a part no
# physical nuisance explains (bloom, a pasted ring, folded or rolled tails, a blended hole model, a
# seam), or needs nuisances outside the tolerances (a copy stated under another pupil or wavelength).
# The fit is what F05 of the professional catalogue asks for, done per image: the energy (flux), the
# sampling and geometry (pupil, decentre), the wavelength response (the ring scale with lambda/D) and
# the hole's light path all enter the re-render that must match.

FIT_NAMES = ("pupil", "defocus", "cyl_0", "cyl_45", "decentre_x", "decentre_y")
FIT_ITERATIONS = 6
FIT_STEP = 0.1  # finite-difference step, in tolerance units
FIT_BOUND = 4.0  # nuisances are clipped to +-4 tolerances while fitting
RELATIVE_FLOOR = 3e-2  # pixel weight 1 / (noise + 3 % of the model): the core counts, the halo too


def nuisance_scene(stated: dict[str, Any], u: np.ndarray) -> dict[str, Any]:
    """``stated`` with nuisances ``u`` in tolerance units (cylinder as two components of magnitude 1)."""
    from icl.forensics.generate import _with

    t = TOLERANCES
    p, icl = stated["pupil"], stated["pupil"]["icl"]
    cyl = t["cylinder_d"] * float(np.hypot(u[2], u[3]))
    axis = float(np.degrees(0.5 * np.arctan2(u[3], u[2]))) % 180.0
    return _with(stated, **{
        "pupil.diameter_mm": p["diameter_mm"] * (1 + t["pupil_diameter_relative"] * u[0]),
        "pupil.eye_excess_d": p["eye_excess_d"] + t["defocus_d"] * u[1],
        "pupil.icl.cylinder_d": icl["cylinder_d"] + cyl,
        "pupil.icl.axis_deg": axis,
        "pupil.icl.decentre_mm": [icl["decentre_mm"][0] + t["decentre_mm"] * u[4],
                                  icl["decentre_mm"][1] + t["decentre_mm"] * u[5]],
    })


def _centroid(img: np.ndarray) -> np.ndarray:
    a = np.clip(img, 0, None)
    ax = axis_arcmin()
    return np.array([a.sum(axis=0) @ ax, a.sum(axis=1) @ ax]) / a.sum()


def fit_nuisances(
    img: np.ndarray, stated: dict[str, Any], iterations: int = FIT_ITERATIONS
) -> dict[str, Any]:
    """Weighted least-squares fit of the nuisances and the flux of ``stated`` to ``img``.

    Start: nominal nuisances, decentre from the prism that moves the nominal render's centroid onto the
    image's. Then Levenberg-Marquardt steps on a forward-difference Jacobian, a step kept only when it
    lowers the misfit: first on the decentre alone (it moves the whole pattern), then on every nuisance,
    with the pixel weights renewed from the model after the first stage.

    Returns
    -------
    dict
        ``u`` (tolerance units), ``flux``, ``chi2`` (mean squared weighted residual; about 1 or less when
        the residual is noise), ``excess`` (how far the nuisances and the flux lie outside the tolerances,
        summed in squares), ``renders`` and the weighted residual image ``residual``.

    """
    u = np.zeros(len(FIT_NAMES))
    nominal = render_scene(stated)
    prism = stated["pupil"]["icl"]["power_d"] * 1e-3 * ARCMIN_PER_RAD  # arcmin of shift per mm of decentre
    if prism:
        u[4:] = np.clip((_centroid(img) - _centroid(nominal)) / prism / TOLERANCES["decentre_mm"],
                        -FIT_BOUND, FIT_BOUND)
    state = {"renders": 1}

    def render(v: np.ndarray) -> np.ndarray:
        state["renders"] += 1
        return render_scene(nuisance_scene(stated, v))

    def misfit(model: np.ndarray, w: np.ndarray) -> tuple[float, float, np.ndarray]:
        mw = model * w
        f = float((img * w * mw).sum() / max((mw * mw).sum(), 1e-300))
        r = (img - f * model) * w
        return float(np.mean(r * r)), f, r

    model = render(u)
    w = 1.0 / (NOISE_SIGMA + RELATIVE_FLOOR * np.abs(model))
    chi, f, r = misfit(model, w)
    stages = [((4, 5), 3, None), (tuple(range(u.size)), iterations, None), (tuple(range(u.size)), 3, "twin")]
    for free, n_iter, start in stages:
        if start == "twin" and chi < 1.0:
            break
        if start == "twin":
            # The sign-flipped aberration (net defocus and cylinder negated) gives almost the same PSF; only
            # the hole and the decentre break the symmetry. Refine from there too and keep the better fit.
            best = (u, model, chi, f, r)
            h = float(np.hypot(u[2], u[3]))
            u = u.copy()
            u[1], u[2], u[3] = -u[1] - h, -u[2], -u[3]
            model = render(u)
        else:
            w = 1.0 / (NOISE_SIGMA + RELATIVE_FLOOR * np.abs(model))
        chi, f, r = misfit(model, w)
        lam = 1e-3
        for _ in range(n_iter):
            cols = []
            for k in free:
                du = np.zeros_like(u)
                du[k] = FIT_STEP
                cols.append(((render(u + du) - model) / FIT_STEP * f * w).ravel())
            jac = np.column_stack([*cols, (model * w).ravel()])
            jtj, jtr = jac.T @ jac, jac.T @ r.ravel()
            improved = False
            for _try in range(5):
                step = np.linalg.solve(jtj + lam * np.diag(np.diag(jtj)), jtr)
                trial = u.copy()
                trial[list(free)] = np.clip(u[list(free)] + step[: len(free)], -FIT_BOUND, FIT_BOUND)
                m_new = render(trial)
                c_new, f_new, r_new = misfit(m_new, w)
                if c_new < chi:
                    u, model, chi, f, r = trial, m_new, c_new, f_new, r_new
                    lam = max(lam / 10, 1e-7)
                    improved = True
                    break
                lam *= 10
            if not improved or chi < 1.0:
                break
        if start == "twin" and best[2] <= chi:
            u, model, chi, f, r = best
    over = np.abs(u).copy()
    over[2] = over[3] = float(np.hypot(u[2], u[3]))
    flux_dev = abs(f / stated["sources"][0]["flux"] - 1) / TOLERANCES["flux_relative"]
    excess = float(np.sum(np.clip(np.r_[over[:3], over[4:], flux_dev] - 1, 0, None) ** 2))
    return {"u": u, "flux": f, "chi2": chi, "excess": excess, "renders": state["renders"], "residual": r}


def _anomaly(fit: dict[str, Any]) -> float:
    """Misfit beyond noise, on a log scale, plus nuisances outside the tolerances."""
    return float(np.log10(max(fit["chi2"], 1.0)) + 2.0 * fit["excess"])


def fit_scores(images: dict[str, np.ndarray], stated: dict[str, dict],
               fits: dict[str, dict] | None = None, progress: bool = False) -> dict[str, dict[str, float]]:
    """Scores of the ``fit`` detector for every image (see the comment above :data:`FIT_NAMES`).

    NH and SPL are the anomaly squashed to [0, 1); DUP is the similarity to the closest image stated
    under another scene times this image's share of the pair's anomaly (a copy misses its stated scene,
    its original does not).
    """
    from rich.progress import Progress

    ids = sorted(images)
    if fits is None:
        fits = {}
        with Progress(disable=not progress) as bar:
            task = bar.add_task("fit nuisances", total=len(ids))
            for i in ids:
                fits[i] = fit_nuisances(images[i], stated[i])
                bar.advance(task)
    anomaly = {i: _anomaly(fits[i]) for i in ids}
    logs = {i: np.log(np.clip(images[i] / images[i].sum(), 0, None) + 1e-7) for i in ids}
    out = {}
    for i in ids:
        best, twin = 0.0, None
        for j in ids:
            if j == i or stated[j] == stated[i]:
                continue
            sim = float(np.exp(-np.sqrt(np.mean((logs[i] - logs[j]) ** 2)) / 0.05))
            if sim > best:
                best, twin = sim, j
        share = 0.5
        if twin is not None and anomaly[i] + anomaly[twin] > 0:
            share = anomaly[i] / (anomaly[i] + anomaly[twin])
        a = _squash(anomaly[i])
        out[i] = {"NH": a, "DUP": best * share, "SPL": a}
    return out
