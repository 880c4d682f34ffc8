"""Generate the halo-forensics release: physical halo images mixed with forged ones.

Every image claims a *stated condition* (a scene, DESIGN.md section 4). A genuine image is a render of
its stated scene within published tolerances (flux calibration, pupil diameter, decentre) plus detector
noise. Forged images are of three kinds, matching the contest items:

NH (non-human / non-physical)
    ``bloom``: a sharp render (no hole) with a post-hoc Gaussian bloom mixed in, energy kept;
    ``asset``: a sharp render plus a fixed-radius ring asset that does not scale with wavelength;
    ``wrap_fold``: the far field folded back periodically into the window (FFT wrap-around);
    ``wrap_roll``: an on-axis render cyclically shifted to the stated off-axis position;
    ``wrong_hole``: rendered with another hole model than the stated one (e.g. black for clear).
DUP
    a genuine image reused, with fresh noise, under a different stated condition.
SPL
    ``half``: left half of one render, right half of another; ``patch``: a square patch of another
    render pasted in.

Labels stay in ``private/labels.json``. All draws come from one seeded generator, so a release is
byte-identical for a given seed and package version.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy.ndimage import gaussian_filter

N_PIXELS = 128
PITCH_ARCSEC = 4.0
NOISE_SIGMA = 2e-8  # detector noise per pixel, units of the source flux
TOLERANCES = {"flux_relative": 0.02, "pupil_diameter_relative": 0.01, "decentre_mm": 0.002}
COUNTS = {"genuine": 64, "NH": 20, "DUP": 8, "SPL": 8}
NH_KINDS = ("bloom", "asset", "wrap_fold", "wrap_roll", "wrong_hole")
ASSET_RADIUS_ARCMIN = 2.0  # the fixed ring of the "asset" forgery, the same at every wavelength
DEFAULT_SEED = 20261003


def axis_arcmin() -> np.ndarray:
    """Pixel-centre coordinates of the release detector (arcmin), DESIGN.md section 2."""
    return (np.arange(N_PIXELS) - (N_PIXELS - 1) / 2) * PITCH_ARCSEC / 60


def _draw_scene(rng: np.random.Generator, far: bool | None = None) -> dict[str, Any]:
    """A stated condition: one source through a thin-phase eye with an ICL, 128 x 128 at 4 arcsec."""
    if rng.random() < 0.25:
        spectrum = [[450.0, 0.3], [550.0, 0.4], [650.0, 0.3]]
    else:
        spectrum = [[float(rng.choice([450.0, 500.0, 550.0, 600.0, 650.0])), 1.0]]
    hole_mm = 0.36 if rng.random() < 0.8 else 0.0
    hole = str(rng.choice(["clear", "black", "index_matched"], p=[0.7, 0.15, 0.15]))
    far = rng.random() < 0.25 if far is None else far
    if far:
        x = float(np.round(rng.choice([-1, 1]) * rng.uniform(2.5, 3.2), 1))
        y = float(np.round(rng.uniform(-0.5, 0.5), 1))
    else:
        x, y = (float(v) for v in np.round(rng.uniform(-1.0, 1.0, 2), 1))
    extent = {"kind": "point"}
    if rng.random() < 0.2:
        extent = {"kind": "disk", "diameter_arcmin": float(np.round(rng.uniform(0.3, 0.8), 2))}
    return {
        "pupil": {
            "diameter_mm": float(np.round(rng.uniform(2.8, 4.0), 1)),
            "eye_excess_d": 8.0,
            "icl": {
                "power_d": -8.0,
                "cylinder_d": 0.0,
                "axis_deg": 0.0,
                "decentre_mm": [float(v) for v in np.round(rng.uniform(-0.04, 0.04, 2), 2)],
                "optic_zone_mm": 6.0,
                "hole_mm": hole_mm,
                "hole": hole,
            },
        },
        "detector": {"n": N_PIXELS, "pitch_arcsec": PITCH_ARCSEC},
        "sources": [
            {"id": "L1", "x_arcmin": x, "y_arcmin": y, "flux": 1.0, "spectrum": spectrum, "extent": extent}
        ],
    }


def _with(scene: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """Deep-copied scene with dotted-path changes, e.g. ``{'pupil.icl.hole': 'black'}``."""
    import copy

    out = copy.deepcopy(scene)
    for path, value in changes.items():
        *head, last = path.split(".")
        d = out
        for k in head:
            d = d[int(k)] if isinstance(d, list) else d[k]
        d[last] = value
    return out


# While a release is drawn, renders are looked up here (see :func:`build`); None renders directly.
_rendered: Callable[[dict[str, Any]], np.ndarray] | None = None


def render_scene(scene: dict[str, Any]) -> np.ndarray:
    """Render a scene dict to its [n, n] image (linear, units of the source flux)."""
    if _rendered is not None:
        return _rendered(scene)
    from icl.optics import Scene, render

    return render(Scene.from_dict(scene)).scene


def _key(scene: dict[str, Any]) -> str:
    return json.dumps(scene, sort_keys=True)


def true_scene(stated: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """The scene actually rendered for a stated one: nuisances drawn inside the published tolerances."""
    t = TOLERANCES
    dec = stated["pupil"]["icl"]["decentre_mm"]
    src = stated["sources"][0]
    return _with(
        stated,
        **{
            "pupil.diameter_mm": stated["pupil"]["diameter_mm"]
            * (1 + rng.uniform(-1, 1) * t["pupil_diameter_relative"]),
            "pupil.icl.decentre_mm": [d + rng.uniform(-1, 1) * t["decentre_mm"] for d in dec],
            "sources.0.flux": src["flux"] * (1 + rng.uniform(-1, 1) * t["flux_relative"]),
        },
    )


def physical(stated: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """A genuine-looking render of ``stated`` (nuisances inside tolerance), without noise."""
    return render_scene(true_scene(stated, rng))


def _sharp(stated: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    return physical(_with(stated, **{"pupil.icl.hole_mm": 0.0}), rng)


def _ring_asset(stated: dict[str, Any], energy: float) -> np.ndarray:
    """A thin Gaussian annulus of fixed radius around the source, carrying ``energy``."""
    src = stated["sources"][0]
    axis = axis_arcmin()
    xx, yy = np.meshgrid(axis - src["x_arcmin"], axis - src["y_arcmin"])
    ring = np.exp(-0.5 * ((np.hypot(xx, yy) - ASSET_RADIUS_ARCMIN) / 0.15) ** 2)
    return energy * ring / ring.sum()


def forge_nh(kind: str, stated: dict[str, Any], rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """One non-physical image claiming ``stated``; returns the image and what was done."""
    if kind == "bloom":
        a, sigma = float(rng.uniform(0.02, 0.06)), float(rng.uniform(4.0, 10.0))
        sharp = _sharp(stated, rng)
        return (1 - a) * sharp + a * gaussian_filter(sharp, sigma, mode="constant"), {
            "mix": a,
            "sigma_px": sigma,
        }
    if kind == "asset":
        d = stated["pupil"]["diameter_mm"]
        energy = (stated["pupil"]["icl"]["hole_mm"] / d) ** 2  # what a clear hole would scatter
        return _sharp(stated, rng) + _ring_asset(stated, energy), {"ring_radius_arcmin": ASSET_RADIUS_ARCMIN}
    if kind == "wrap_fold":
        big = physical(_with(stated, **{"detector.n": 3 * N_PIXELS}), rng)
        return big.reshape(3, N_PIXELS, 3, N_PIXELS).sum(axis=(0, 2)), {"fold": 3}
    if kind == "wrap_roll":
        src = stated["sources"][0]
        on_axis = physical(_with(stated, **{"sources.0.x_arcmin": 0.0, "sources.0.y_arcmin": 0.0}), rng)
        step = PITCH_ARCSEC / 60
        shift = (round(src["y_arcmin"] / step), round(src["x_arcmin"] / step))
        return np.roll(on_axis, shift, axis=(0, 1)), {"roll_px": list(shift)}
    if kind == "wrong_hole":
        mode = stated["pupil"]["icl"]["hole"]
        used = "black" if mode != "black" else "clear"
        return physical(_with(stated, **{"pupil.icl.hole": used}), rng), {"rendered_hole": used}
    raise ValueError(f"unknown forgery kind {kind!r}")


def _variant(stated: dict[str, Any], rng: np.random.Generator) -> tuple[dict[str, Any], str]:
    """A different stated condition close to ``stated`` (one parameter changed)."""
    which = str(rng.choice(["wavelength", "pupil", "hole", "position"]))
    if which == "wavelength":
        spec = [
            [w + float(rng.choice([-100.0, -50.0, 50.0, 100.0])), p]
            for w, p in stated["sources"][0]["spectrum"]
        ]
        spec = [[min(max(w, 420.0), 700.0), p] for w, p in spec]
        return _with(stated, **{"sources.0.spectrum": spec}), which
    if which == "pupil":
        d = stated["pupil"]["diameter_mm"]
        return _with(
            stated, **{"pupil.diameter_mm": float(np.round(d + (0.5 if d < 3.4 else -0.5), 1))}
        ), which
    if which == "hole":
        hole = stated["pupil"]["icl"]
        if hole["hole_mm"] == 0.0:
            return _with(stated, **{"pupil.icl.hole_mm": 0.36, "pupil.icl.hole": "clear"}), which
        return _with(stated, **{"pupil.icl.hole": "black" if hole["hole"] != "black" else "clear"}), which
    x = stated["sources"][0]["x_arcmin"]
    return _with(stated, **{"sources.0.x_arcmin": float(np.round(x + (0.6 if x < 0 else -0.6), 1))}), which


def forge_splice(kind: str, stated: dict[str, Any], rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """A composite of the render of ``stated`` and the render of a nearby different condition."""
    other, changed = _variant(stated, rng)
    a, b = physical(stated, rng), physical(other, rng)
    if kind == "half":
        out = a.copy()
        out[:, N_PIXELS // 2 :] = b[:, N_PIXELS // 2 :]
        return out, {"other_changed": changed, "split": "columns >= n/2"}
    size = 24
    i0, j0 = (int(v) for v in rng.integers(N_PIXELS // 4, 3 * N_PIXELS // 4 - size, 2))
    out = a.copy()
    out[i0 : i0 + size, j0 : j0 + size] = b[i0 : i0 + size, j0 : j0 + size]
    return out, {"other_changed": changed, "patch_rows": [i0, i0 + size], "patch_cols": [j0, j0 + size]}


def build(
    seed: int = DEFAULT_SEED, progress: bool = False, counts: dict[str, int] | None = None,
    scheduler: str | None = None, workers: int = 1,
) -> list[dict[str, Any]]:
    """Draw and render every image of a release (``counts`` overrides :data:`COUNTS`, for small tests).

    The random draws never depend on image values, so a first pass with blank images lists every
    scene to render; the renders then run as independent tasks (``scheduler``, ``workers``: see
    :func:`icl.parallel.run_tasks`) and a second, identical pass assembles the release from them.
    The result is the same bytes whichever way the renders ran.

    Returns
    -------
    list of dict
        Entries ``{"image", "stated", "label"}`` in release order (shuffled, ids assigned).

    """
    from icl.parallel import run_tasks

    global _rendered
    wanted: dict[str, dict[str, Any]] = {}

    def blank(scene: dict[str, Any]) -> np.ndarray:
        wanted.setdefault(_key(scene), scene)
        n = scene.get("detector", {}).get("n", N_PIXELS)
        return np.zeros((n, n))

    try:
        _rendered = blank
        _draw(seed, counts)
        _rendered = None  # the tasks render for real, in this process or elsewhere
        scenes = list(wanted.values())
        images = dict(zip(wanted, run_tasks(render_scene, scenes, scheduler=scheduler, workers=workers,
                                            description="render", quiet=not progress)))
        _rendered = lambda scene: images[_key(scene)]  # noqa: E731
        return _draw(seed, counts)
    finally:
        _rendered = None


def _draw(seed: int, counts: dict[str, int] | None) -> list[dict[str, Any]]:
    counts = dict(COUNTS if counts is None else counts)
    rng = np.random.default_rng(seed)
    entries: list[dict[str, Any]] = []

    def add(image: np.ndarray, stated: dict, kind: str, item: str | None, detail: dict) -> None:
        noisy = image + rng.normal(0.0, NOISE_SIGMA, image.shape)
        label = {
            "NH": int(item == "NH"),
            "DUP": int(item == "DUP"),
            "SPL": int(item == "SPL"),
            "kind": kind,
            "detail": detail,
        }
        entries.append({"image": noisy, "stated": stated, "label": label})

    genuine = []
    for _ in range(counts["genuine"]):
        stated = _draw_scene(rng)
        truth = true_scene(stated, rng)
        img = render_scene(truth)
        genuine.append((stated, img))
        add(img, stated, "genuine", None, {"true_scene": truth})
    for k in range(counts["NH"]):
        kind = NH_KINDS[k % len(NH_KINDS)]
        stated = _draw_scene(rng, far=True if kind == "wrap_roll" else None)
        if kind in ("bloom", "asset", "wrong_hole"):
            stated = _with(stated, **{"pupil.icl.hole_mm": 0.36})
        img, detail = forge_nh(kind, stated, rng)
        add(img, stated, kind, "NH", detail)
    picks = rng.choice(len(genuine), counts["DUP"], replace=False)
    for g in picks:
        src_stated, img = genuine[int(g)]
        stated, changed = _variant(src_stated, rng)
        add(img, stated, "duplicate", "DUP", {"copied_from_index": int(g), "stated_changed": changed})
    for k in range(counts["SPL"]):
        kind = ("half", "patch")[k % 2]
        stated = _draw_scene(rng, far=False)
        img, detail = forge_splice(kind, stated, rng)
        add(img, stated, f"splice_{kind}", "SPL", detail)
    order = rng.permutation(len(entries))
    # Duplicates name their source by release id once ids are known.
    index_to_id = {int(old): f"img_{new:03d}" for new, old in enumerate(order)}
    out = []
    for new, old in enumerate(order):
        e = entries[int(old)]
        e["id"] = f"img_{new:03d}"
        if e["label"]["kind"] == "duplicate":
            e["label"]["detail"]["copied_from"] = index_to_id[e["label"]["detail"].pop("copied_from_index")]
        out.append(e)
    return out


README = """# Halo forensics release

Each image in `images/<id>.npz` (keys `image` [128, 128], `x_arcmin`, `y_arcmin`, `angular_pixel_arcsec`;
linear flux in units of the source flux, row = +y, column = +x) claims the scene in `stated/<id>.json`
(the scene JSON of the thin-phase engine). A genuine image is a render of its stated scene within the
tolerances listed in `forensics_cases.json` plus Gaussian detector noise. Other images were forged:

- NH, non-physical: post-hoc bloom, a fixed ring asset, FFT wrap-around, or a wrong hole model;
- DUP, duplicate: a genuine image reused under another image's stated conditions;
- SPL, splice: two renders composited (half and half, or a pasted patch).

Return one JSON file:

    {"scores": {"img_000": {"NH": 0.1, "DUP": 0.0, "SPL": 0.7}, ...}}

with a finite score for every image and every item (higher = more likely forged of that kind).
Each item is scored by `icl.contest` (NH and SPL: step precision-recall area over recall
[0.05, 0.50] divided by 0.45; DUP: full area) on that item's forgeries against the genuine images;
the safety score S is their harmonic mean, 0 if any item is 0 or unreadable.
"""


def write_release(
    out: str | Path,
    seed: int = DEFAULT_SEED,
    progress: bool = False,
    counts: dict[str, int] | None = None,
    scheduler: str | None = None,
    workers: int = 1,
) -> dict:
    """Write a release folder (public images and stated scenes, private labels, manifest)."""
    from icl.io import atomic_write_bytes, write_json, write_manifest, write_npz

    out = Path(out)
    entries = build(seed, progress, counts, scheduler, workers)
    axis = axis_arcmin()
    labels = {}
    for e in entries:
        write_npz(
            out / "public" / "images" / f"{e['id']}.npz",
            image=e["image"],
            x_arcmin=axis,
            y_arcmin=axis,
            angular_pixel_arcsec=np.float64(PITCH_ARCSEC),
        )
        write_json(out / "public" / "stated" / f"{e['id']}.json", e["stated"])
        labels[e["id"]] = e["label"]
    ids = [e["id"] for e in entries]
    write_json(
        out / "public" / "forensics_cases.json",
        {
            "images": ids,
            "items": ["NH", "DUP", "SPL"],
            "detector": {"n": N_PIXELS, "pitch_arcsec": PITCH_ARCSEC},
            "tolerances": TOLERANCES,
            "noise_sigma_per_pixel": NOISE_SIGMA,
            "submission_format": {
                "scores": {"<image id>": {"NH": "number", "DUP": "number", "SPL": "number"}}
            },
        },
    )
    atomic_write_bytes(out / "public" / "README.md", README.encode())
    write_json(out / "private" / "labels.json", labels)
    counts = {k: sum(1 for lab in labels.values() if lab[k]) for k in ("NH", "DUP", "SPL")}
    counts["genuine"] = sum(1 for lab in labels.values() if lab["kind"] == "genuine")
    return write_manifest(
        out,
        {
            "track": "halo-forensics",
            "seed": seed,
            "counts": counts,
            "noise_sigma_per_pixel": NOISE_SIGMA,
            "tolerances": TOLERANCES,
        },
    )
