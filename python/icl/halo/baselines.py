"""Baselines computed from the public case files alone (they never open ``private/``).

``reference``
    Renders each scene with the reference engine: a format self-check, not a modelling result.
``wrong-position``
    Renders the right pattern but at fixation: every source moved to (0, 0) and the optic's decentre
    (its prism) set to zero.
``no-halo``
    Keeps each source's transmitted flux in its wick pixels only: the 2 x 2 pixels around the geometric
    wick (source position plus prism), split by bilinear weights so that flux and centroid are kept.
``fixed-circle``
    Paints one fixed asset at each geometric wick whatever the wavelength, pupil or flux: a Gaussian
    core (FWHM 0.6 arcmin, 0.84 of unit flux) and a Gaussian ring (radius 1.0 arcmin, FWHM 0.3 arcmin,
    0.16 of unit flux), the look of a drawn halo sticker.
``x-flip``, ``y-flip``
    The reference render with the x (column) or y (row) axis reversed: the convention errors of a
    submission that gets the physics right but mirrors the picture. The grid is symmetric about the
    origin, so a flip is an exact mirror.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np

from icl import libm
from icl.errors import InputError
from icl.halo.cases import halo_scene
from icl.halo.geometry import wicks_arcmin
from icl.io import load_json, write_npz
from icl.optics import Scene, render

MODES = ("reference", "wrong-position", "no-halo", "fixed-circle", "x-flip", "y-flip", "dev-warp")
FWHM_TO_SIGMA = 1.0 / (2.0 * math.sqrt(2.0 * math.log(2.0)))
ASSET = {"core_fraction": 0.84, "core_fwhm_arcmin": 0.6, "ring_radius_arcmin": 1.0, "ring_fwhm_arcmin": 0.3}


def _geometric_wick(scene: Scene, k: int) -> tuple[float, float]:
    return wicks_arcmin(scene.to_dict())[k]


def _transmitted(scene: Scene, k: int) -> float:
    src = scene.sources[k]
    return src.flux * sum(w for _, w in src.spectrum) * (1.0 - scene.pupil.blocked_fraction())


def wrong_position(scene: Scene) -> np.ndarray:
    """Components of the right pattern drawn at fixation, ignoring source positions and prism."""
    icl = scene.pupil.icl
    pupil = (
        scene.pupil
        if icl is None
        else dataclasses.replace(scene.pupil, icl=dataclasses.replace(icl, decentre_mm=(0.0, 0.0)))
    )
    moved = dataclasses.replace(
        scene,
        pupil=pupil,
        sources=tuple(dataclasses.replace(s, x_arcmin=0.0, y_arcmin=0.0) for s in scene.sources),
    )
    return render(moved).components


def no_halo(scene: Scene) -> np.ndarray:
    """Each source's transmitted flux on the 2 x 2 pixels nearest its geometric wick (bilinear split)."""
    det = scene.detector
    n, step = det.n, det.pitch_arcsec / 60.0
    out = np.zeros((len(scene.sources), n, n))
    for k in range(len(scene.sources)):
        x, y = _geometric_wick(scene, k)
        fc, fr = x / step + (n - 1) / 2.0, y / step + (n - 1) / 2.0
        c0, r0 = math.floor(fc), math.floor(fr)
        tx, ty = fc - c0, fr - r0
        flux = _transmitted(scene, k)
        for dr, wr in ((0, 1 - ty), (1, ty)):
            for dc, wc in ((0, 1 - tx), (1, tx)):
                r, c = r0 + dr, c0 + dc
                if 0 <= r < n and 0 <= c < n:  # flux off the window is lost, not wrapped
                    out[k, r, c] += flux * wr * wc
    return out


def fixed_circle(scene: Scene) -> np.ndarray:
    """Paint the fixed core-and-ring asset, unit flux, at each geometric wick, whatever lambda or pupil."""
    det = scene.detector
    axis = det.axis_arcmin
    area = (det.pitch_arcsec / 60.0) ** 2
    sc = ASSET["core_fwhm_arcmin"] * FWHM_TO_SIGMA
    sr = ASSET["ring_fwhm_arcmin"] * FWHM_TO_SIGMA
    rr = ASSET["ring_radius_arcmin"]
    # Densities per arcmin^2 normalised analytically (the ring integral 2 pi R sigma sqrt(2 pi) is exact
    # to e^-35 here because R / sigma = 7.8).
    core_norm = ASSET["core_fraction"] / (2 * math.pi * sc * sc)
    ring_norm = (1 - ASSET["core_fraction"]) / (2 * math.pi * rr * sr * math.sqrt(2 * math.pi))
    out = np.zeros((len(scene.sources), det.n, det.n))
    for k in range(len(scene.sources)):
        x, y = _geometric_wick(scene, k)
        r = np.hypot(axis[None, :] - x, axis[:, None] - y)
        dens = core_norm * libm.exp(-0.5 * (r / sc) ** 2) + ring_norm * libm.exp(-0.5 * ((r - rr) / sr) ** 2)
        out[k] = dens * area
    return out


def flip(components: np.ndarray, axis: str) -> np.ndarray:
    """Components mirrored about the y axis (``"x"``: x -> -x, columns reversed) or the x axis (``"y"``)."""
    return np.ascontiguousarray(components[:, :, ::-1] if axis == "x" else components[:, ::-1, :])


class _DevAnswers:
    """The development answers, rendered from ``public/halo_cases.json`` on first use.

    A test condition is matched to the development case of the same name (``H07_t2_b`` -> ``H07``) and,
    by preference, its condition of the same label (:func:`icl.halo.dev_warp.dev_warp_components`).
    """

    def __init__(self, release: str | Path) -> None:
        from icl.halo.release import split_paths

        self.file = Path(release) / split_paths("dev")[0]
        pub = load_json(self.file)
        if not isinstance(pub, dict) or not isinstance(pub.get("cases"), list):
            raise InputError("expected an object with a 'cases' list", str(self.file), "cases")
        self.scenes = {
            c.get("id"): c.get("scene") for case in pub["cases"] for c in case.get("conditions", [])
        }
        self.rendered: dict[str, np.ndarray] = {}

    def warp(self, where: str, cond: dict, pitch_arcmin: float) -> np.ndarray:
        from icl.halo.dev_warp import dev_warp_components

        cid = cond["id"]
        case, label = cid.split("_")[0], cid.rsplit("_", 1)[-1]
        dev = {}
        for lab in ("a", "b"):
            dev_id = f"{case}_{lab}"
            if dev_id not in self.scenes:
                raise InputError(f"no development condition {dev_id} to warp", str(self.file), where + ".id")
            if dev_id not in self.rendered:
                scene = halo_scene(self.scenes[dev_id], file=str(self.file))
                self.rendered[dev_id] = np.asarray(render(scene).components)
            dev[lab] = (self.scenes[dev_id], self.rendered[dev_id])
        return dev_warp_components(cond["scene"], label, dev, pitch_arcmin)


def run_baseline(
    release: str | Path, output: str | Path, mode: str, progress: bool = True, split: str = "dev"
) -> list[str]:
    """Write ``<condition>.npz`` for every condition of one split of ``release/public`` into ``output``.

    Returns the condition ids written.
    """
    from rich.progress import Progress

    from icl.halo.release import split_paths

    if mode not in MODES:
        raise InputError(f"must be one of {list(MODES)}", None, "mode")
    pub_file = Path(release) / split_paths(split)[0]
    pub = load_json(pub_file)
    if not isinstance(pub, dict) or not isinstance(pub.get("cases"), list):
        raise InputError("expected an object with a 'cases' list", str(pub_file), "cases")
    conds = [
        (f"cases[{i}].conditions[{j}]", c)
        for i, case in enumerate(pub["cases"])
        for j, c in enumerate(case.get("conditions", []))
    ]
    dev = _DevAnswers(release) if mode == "dev-warp" else None
    written = []
    out = Path(output)
    with Progress(disable=not progress) as bar:
        task = bar.add_task(f"baseline {mode}", total=len(conds))
        for where, c in conds:
            cid = c.get("id")
            if not isinstance(cid, str) or not cid.replace("_", "").isalnum():
                raise InputError("bad condition id", str(pub_file), where + ".id")
            try:
                scene = halo_scene(c.get("scene"), file=str(pub_file))
            except InputError as exc:
                raise InputError(exc.reason, str(pub_file), f"{where}.scene.{exc.field}") from None
            if mode == "reference":
                comps = render(scene).components
            elif mode == "wrong-position":
                comps = wrong_position(scene)
            elif mode == "no-halo":
                comps = no_halo(scene)
            elif mode in ("x-flip", "y-flip"):
                comps = flip(render(scene).components, mode[0])
            elif mode == "dev-warp":
                comps = dev.warp(where, c, scene.detector.pitch_arcsec / 60.0)
            else:
                comps = fixed_circle(scene)
            write_npz(
                out / f"{cid}.npz",
                components=comps,
                scene=comps.sum(axis=0),
                angular_pixel_arcsec=np.float64(scene.detector.pitch_arcsec),
            )
            written.append(cid)
            bar.advance(task)
    return written


def baseline_table(
    release: str | Path, output: str | Path, splits: tuple[str, ...] = ("dev", "test"), progress: bool = True
) -> list[dict]:
    """Run every baseline on each split of ``release``, score it, and return one row per (split, mode).

    Runs and score files go to ``output/<split>/<mode>/`` (``score.json`` beside the arrays). A row holds
    the headline and the two diagnostic subscores.
    """
    from icl.halo.evaluate import evaluate, load_release, write_score

    rows = []
    for split in splits:
        loaded = load_release(release, split)
        for mode in MODES:
            sub = Path(output) / split / mode
            run_baseline(release, sub, mode, progress=progress, split=split)
            doc = evaluate(release, sub, loaded, split=split)
            write_score(doc, sub / "score.json")
            rows.append(
                {
                    "split": split,
                    "mode": mode,
                    "score": doc["halo_development_score"],
                    **doc["diagnostic_subscores"],
                }
            )
    return rows
