"""Two reference submissions for the halo-forensics track (the nuisance-fit detector that marks the
track's ceiling is :mod:`icl.forensics.fit`).

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

import math
from pathlib import Path
from typing import Any

import numpy as np

from icl import libm
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
        "blocks": libm.log(np.clip(_blocks(img / e), 0, None) + 1e-6),
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


def squash(x: float) -> float:
    """Map an anomaly in [0, inf) monotonically onto a score in [0, 1)."""
    return float(x / (1.0 + x))


def duplicate_scores(images: dict[str, np.ndarray], stated: dict[str, dict],
                     evidence: dict[str, float]) -> dict[str, float]:
    """DUP of every image, shared by the physics and the fit detectors.

    An image's likeness to the closest image stated under a different condition
    (``exp(-RMS of the log-intensity difference / 0.05)``) times its share of the two images' ``evidence``
    against their own stated conditions (a half when there is no such image or neither has any).
    """
    ids = sorted(images)
    logs = {i: libm.log(np.clip(images[i] / images[i].sum(), 0, None) + 1e-7) for i in ids}
    out = {}
    for i in ids:
        best, twin = 0.0, None
        for j in ids:
            if j == i or stated[j] == stated[i]:
                continue
            sim = float(math.exp(-math.sqrt(np.mean((logs[i] - logs[j]) ** 2)) / 0.05))
            if sim > best:
                best, twin = sim, j
        share = 0.5
        if twin is not None and evidence[i] + evidence[twin] > 0:
            share = evidence[i] / (evidence[i] + evidence[twin])
        out[i] = best * share
    return out


def physics_scores(images: dict[str, np.ndarray], stated: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Physics-check scores for every image (see the module docstring)."""
    ids = sorted(images)
    feats = {i: features(images[i], stated[i]) for i in ids}
    dup = duplicate_scores(images, stated, {i: feats[i]["mismatch"] for i in ids})
    return {
        i: {
            "NH": squash(feats[i]["nh"]),
            "DUP": dup[i],
            # A composite misses its stated scene (profile) and misses it unevenly (block spread).
            "SPL": squash(feats[i]["block_spread"]) * squash(feats[i]["mismatch"]),
        }
        for i in ids
    }


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
