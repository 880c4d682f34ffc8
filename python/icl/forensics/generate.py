"""Generate the halo-forensics release: physical halo images mixed with forged ones.

Every image claims a *stated condition* (a scene, docs/formats.md). A genuine image is a render of
its stated scene with what the statement leaves open drawn inside published tolerances (flux, pupil
diameter, decentre, residual defocus and cylinder) plus detector noise, so that no re-render of the
stated scene matches it exactly. Forged images change a render by about as much as the tolerances do:

NH (non-human / non-physical)
    ``bloom``: a post-hoc Gaussian bloom of 0.5-2 % mixed in, energy kept;
    ``asset``: a faint ring of fixed radius added, the same at every wavelength;
    ``wrap_fold``: only the far tail (4-16 pixels beyond each edge) folded back (FFT wrap-around);
    ``wrap_roll``: an on-axis render cyclically shifted to the stated off-axis position;
    ``wrong_hole``: the stated hole blended with another hole model (a partly transmitting fill).
DUP
    a genuine image reused (flux recalibrated, fresh noise) under a slightly different stated condition.
SPL
    ``half``: left half of one render, right half of another, flux matched at the seam; ``patch``: a
    square patch of another render pasted into the faint halo.

Labels stay in ``private/labels.json``. Every draw comes from one stream derived from the release key
(:mod:`icl.keys`, ``HMAC-SHA256(key, "forensics/release")``): a secret key drawn from the operating system
and kept in ``private/release.key``, or, with ``--seed``, a public development key whose labels anyone
can rebuild (``answers_rebuildable: true`` in the manifest; such a release is never ranked). A release is
byte-identical for a given key and package version.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from icl import libm
from icl.crosscheck import attach, crosscheck
from icl.keys import KEY_FILE, ReleaseKey, write_key
from icl.optics import Scene

N_PIXELS = 128
PITCH_ARCSEC = 4.0
NOISE_SIGMA = 2e-8  # detector noise per pixel, units of the source flux
# What a stated condition may leave unsaid, as half-widths of uniform draws: photometric calibration,
# pupillometry (0.1 mm at a 3.4 mm pupil), ICL centration on a slit-lamp or OCT image, and the
# refraction's own step (a quarter dioptre of sphere, up to a quarter of cylinder at any axis).
TOLERANCES = {
    "flux_relative": 0.05,
    "pupil_diameter_relative": 0.03,
    "decentre_mm": 0.05,
    "defocus_d": 0.25,
    "cylinder_d": 0.25,
}
COUNTS = {"genuine": 64, "NH": 20, "DUP": 8, "SPL": 8}
NH_KINDS = ("bloom", "asset", "wrap_fold", "wrap_roll", "wrong_hole")
ASSET_RADIUS_ARCMIN = 2.0  # the fixed ring of the "asset" forgery, the same at every wavelength
DEFAULT_SEED = 20261003  # the public development release the documented measurements use


def axis_arcmin() -> np.ndarray:
    """Pixel-centre coordinates of the release detector (arcmin), docs/conventions.md."""
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
        "frame": "visual",
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
    """The scene actually rendered for a stated one: nuisances drawn inside the published tolerances.

    Pupil diameter, decentre and flux move within :data:`TOLERANCES`; the eye keeps a residual defocus
    (up to ``defocus_d`` either way) and a small cylinder (up to ``cylinder_d``, any axis) that the
    stated condition does not mention.
    """
    t = TOLERANCES
    pupil, icl, src = stated["pupil"], stated["pupil"]["icl"], stated["sources"][0]
    return _with(
        stated,
        **{
            "pupil.diameter_mm": pupil["diameter_mm"]
            * (1 + rng.uniform(-1, 1) * t["pupil_diameter_relative"]),
            "pupil.eye_excess_d": pupil["eye_excess_d"] + rng.uniform(-1, 1) * t["defocus_d"],
            "pupil.icl.cylinder_d": icl["cylinder_d"] + rng.uniform(0, 1) * t["cylinder_d"],
            "pupil.icl.axis_deg": float(rng.uniform(0.0, 180.0)),
            "pupil.icl.decentre_mm": [d + rng.uniform(-1, 1) * t["decentre_mm"] for d in icl["decentre_mm"]],
            "sources.0.flux": src["flux"] * (1 + rng.uniform(-1, 1) * t["flux_relative"]),
        },
    )


def physical(stated: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """A genuine-looking render of ``stated`` (nuisances inside tolerance), without noise."""
    return render_scene(true_scene(stated, rng))


def _ring_asset(stated: dict[str, Any], energy: float, width_arcmin: float = 0.15) -> np.ndarray:
    """A Gaussian annulus of fixed radius around the source, carrying ``energy``."""
    src = stated["sources"][0]
    axis = axis_arcmin()
    xx, yy = np.meshgrid(axis - src["x_arcmin"], axis - src["y_arcmin"])
    ring = libm.exp(-0.5 * ((np.hypot(xx, yy) - ASSET_RADIUS_ARCMIN) / width_arcmin) ** 2)
    return energy * ring / ring.sum()


def _fold(big: np.ndarray, n: int) -> np.ndarray:
    """Wrap a centred [m, m] image (m >= n) periodically onto its central [n, n] window."""
    m = big.shape[0]
    idx = (np.arange(m) - (m - n) // 2) % n
    # Sums in index order (np.add.at), not a BLAS product: the same bits on every host.
    rows = np.zeros((n, m))
    np.add.at(rows, idx, big)
    out = np.zeros((n, n))
    np.add.at(out, (slice(None), idx), rows)
    return out


def forge_nh(kind: str, stated: dict[str, Any], rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """One non-physical image claiming ``stated``; returns the image and what was done.

    Every forgery starts from a render within tolerance of ``stated`` and changes it by about as much
    as the tolerances themselves do (ranges in docs/forensics.md).
    """
    if kind == "bloom":
        a, sigma = float(rng.uniform(0.005, 0.02)), float(rng.uniform(1.5, 4.0))
        img = physical(stated, rng)
        return (1 - a) * img + a * libm.gaussian_filter(img, sigma, mode="constant"), {"mix": a, "sigma_px": sigma}
    if kind == "asset":
        d = stated["pupil"]["diameter_mm"]
        share = float(rng.uniform(0.1, 0.3))  # of the light a clear hole would scatter
        width = float(rng.uniform(0.2, 0.5))
        energy = share * (stated["pupil"]["icl"]["hole_mm"] / d) ** 2
        return physical(stated, rng) + _ring_asset(stated, energy, width), {
            "ring_radius_arcmin": ASSET_RADIUS_ARCMIN,
            "ring_width_arcmin": width,
            "energy_share_of_hole": share,
        }
    if kind == "wrap_fold":
        margin = int(rng.integers(4, 17))  # pixels of far tail folded back from each side
        big = physical(_with(stated, **{"detector.n": N_PIXELS + 2 * margin}), rng)
        return _fold(big, N_PIXELS), {"fold_margin_px": margin}
    if kind == "wrap_roll":
        src = stated["sources"][0]
        on_axis = physical(_with(stated, **{"sources.0.x_arcmin": 0.0, "sources.0.y_arcmin": 0.0}), rng)
        step = PITCH_ARCSEC / 60
        shift = (round(src["y_arcmin"] / step), round(src["x_arcmin"] / step))
        return np.roll(on_axis, shift, axis=(0, 1)), {"roll_px": list(shift)}
    if kind == "wrong_hole":
        # A partly transmitting fill faked by blending the stated hole's render with another model's.
        mode = stated["pupil"]["icl"]["hole"]
        used = "black" if mode != "black" else "clear"
        w = float(rng.uniform(0.3, 0.7))
        truth = true_scene(stated, rng)
        img = (1 - w) * render_scene(truth) + w * render_scene(_with(truth, **{"pupil.icl.hole": used}))
        return img, {"blended_hole": used, "blend_weight": w}
    raise ValueError(f"unknown forgery kind {kind!r}")


def _variant(stated: dict[str, Any], rng: np.random.Generator) -> tuple[dict[str, Any], str]:
    """A different stated condition close to ``stated``: 20 nm, 0.2 mm of pupil or 0.05 mm of decentre."""
    which = str(rng.choice(["wavelength", "pupil", "decentre"]))
    if which == "wavelength":
        dw = float(rng.choice([-20.0, 20.0]))
        spec = [[w + dw, p] for w, p in stated["sources"][0]["spectrum"]]
        return _with(stated, **{"sources.0.spectrum": spec}), which
    if which == "pupil":
        d = stated["pupil"]["diameter_mm"]
        d = float(np.round(d + float(rng.choice([-0.2, 0.2])), 1))
        return _with(stated, **{"pupil.diameter_mm": d}), which
    dec = stated["pupil"]["icl"]["decentre_mm"]
    axis = int(rng.integers(2))
    moved = [float(np.round(v + (0.05 * float(rng.choice([-1, 1])) if k == axis else 0.0), 2))
             for k, v in enumerate(dec)]
    return _with(stated, **{"pupil.icl.decentre_mm": moved}), which


def forge_splice(kind: str, stated: dict[str, Any], rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    """A composite of a render of ``stated`` and a render of a nearby different condition.

    ``half``: the right half comes from the other render, scaled so that the two columns either side of
    the seam carry the same flux. ``patch``: a 24 x 24 patch of the other render pasted into the faint
    halo, its centre 1.5 to 3 arcmin from the source.
    """
    other, changed = _variant(stated, rng)
    a, b = physical(stated, rng), physical(other, rng)
    h = N_PIXELS // 2
    if kind == "half":
        out = a.copy()
        seam_a, seam_b = float(a[:, h - 1].sum()), float(b[:, h].sum())
        scale = seam_a / seam_b if seam_b > 0 else 1.0  # blank while the renders are being listed
        out[:, h:] = scale * b[:, h:]
        return out, {"other_changed": changed, "split": "columns >= n/2", "seam_scale": scale}
    size = 24
    src = stated["sources"][0]
    r, phi = rng.uniform(1.5, 3.0), rng.uniform(0, 2 * np.pi)
    step = PITCH_ARCSEC / 60
    ci = (src["y_arcmin"] + r * np.sin(phi)) / step + (N_PIXELS - 1) / 2
    cj = (src["x_arcmin"] + r * np.cos(phi)) / step + (N_PIXELS - 1) / 2
    i0, j0 = (int(np.clip(round(c - size / 2), 0, N_PIXELS - size)) for c in (ci, cj))
    out = a.copy()
    out[i0 : i0 + size, j0 : j0 + size] = b[i0 : i0 + size, j0 : j0 + size]
    return out, {"other_changed": changed, "patch_rows": [i0, i0 + size], "patch_cols": [j0, j0 + size]}


def build(
    key: ReleaseKey, progress: bool = False, counts: dict[str, int] | None = None,
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
        _draw(key, counts)
        _rendered = None  # the tasks render for real, in this process or elsewhere
        scenes = list(wanted.values())
        images = dict(zip(wanted, run_tasks(render_scene, scenes, scheduler=scheduler, workers=workers,
                                            description="render", quiet=not progress)))
        _rendered = lambda scene: images[_key(scene)]  # noqa: E731
        return _draw(key, counts)
    finally:
        _rendered = None


def _draw(key: ReleaseKey, counts: dict[str, int] | None) -> list[dict[str, Any]]:
    counts = dict(COUNTS if counts is None else counts)
    rng = key.rng("forensics", "release")
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
        # The second solver on a pixel subsample: agreement within a third of the noise per pixel.
        check = crosscheck(Scene.from_dict(truth), img, {"max_abs": NOISE_SIGMA}, summed=True)
        attach(entries[-1]["label"], check)
    for k in range(counts["NH"]):
        kind = NH_KINDS[k % len(NH_KINDS)]
        stated = _draw_scene(rng, far=True if kind == "wrap_roll" else None)
        if kind in ("asset", "wrong_hole"):  # both need a hole to misrepresent
            stated = _with(stated, **{"pupil.icl.hole_mm": 0.36})
        img, detail = forge_nh(kind, stated, rng)
        add(img, stated, kind, "NH", detail)
    picks = rng.choice(len(genuine), counts["DUP"], replace=False)
    for g in picks:
        src_stated, img = genuine[int(g)]
        stated, changed = _variant(src_stated, rng)
        # Re-exposed copies come back recalibrated: a flux factor inside the tolerance, fresh noise.
        gain = float(1 + rng.uniform(-1, 1) * TOLERANCES["flux_relative"])
        add(gain * img, stated, "duplicate", "DUP",
            {"copied_from_index": int(g), "stated_changed": changed, "gain": gain})
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
    seed: int | None = None,
    progress: bool = False,
    counts: dict[str, int] | None = None,
    scheduler: str | None = None,
    workers: int = 1,
    key: ReleaseKey | None = None,
) -> dict:
    """Write a release folder (public images and stated scenes, private labels and key, manifest).

    With neither ``seed`` nor ``key`` a fresh secret key is drawn from the operating system; ``seed``
    makes a public development release whose labels anyone can rebuild (never ranked).
    """
    from icl.io import atomic_write_bytes, write_json, write_manifest, write_npz

    out = Path(out)
    if key is None:
        key = ReleaseKey.new() if seed is None else ReleaseKey.from_seed(seed)
    elif seed is not None:
        raise ValueError("give a seed or a key, not both")
    (out / "manifest.json").unlink(missing_ok=True)  # a failed build leaves nothing that looks like a release
    write_key(out, key)  # first (mode 0600), so that a build that fails can be reproduced
    entries = build(key, progress, counts, scheduler, workers)
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
    manifest = write_manifest(
        out,
        {
            "track": "halo-forensics",
            **key.manifest_fields(),
            "counts": counts,
            "noise_sigma_per_pixel": NOISE_SIGMA,
            "tolerances": TOLERANCES,
        },
        exclude=(KEY_FILE,),  # its hash would confirm a guessed key
    )
    return manifest
