"""The dev-warp attack: a test answer made from the public development answers with no optics.

The development answers are the same for every release key and anyone can rebuild them. For each test
condition this baseline takes the development image of the same case and condition label and follows the
scene's stated changes with similarity transforms only: it moves each source's pattern from the
development wick to the test wick (source position plus the prism of the decentred optic, as the
public README states), scales it by the ratio of ``lambda / D`` (one scaled copy per wavelength of the test
spectrum, weighted), turns it by the change of cylinder axis, convolves a disk source with its disk and
rescales the flux. NumPy and ``scipy.ndimage`` only: nothing here knows the pupil, the wavefront or the
far field, so a test split on which this scores high does not need the model to be solved.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage

from icl.halo.geometry import wicks_arcmin


def _wick(scene: dict, k: int) -> tuple[float, float]:
    return wicks_arcmin(scene)[k]


def _mean_wavelength(src: dict) -> float:
    total = sum(w for _, w in src["spectrum"])
    if total <= 0:
        return float(np.mean([lam for lam, _ in src["spectrum"]]))
    return sum(lam * w for lam, w in src["spectrum"]) / total


def _axis_deg(scene: dict) -> float:
    icl = scene["pupil"].get("icl") or {}
    return float(icl.get("axis_deg", 0.0)) if icl.get("cylinder_d", 0.0) else 0.0


def _disk_kernel(diameter_arcmin: float, pitch_arcmin: float) -> np.ndarray:
    """Sample a uniform disk on the pixel grid (4 x 4 points per pixel), unit sum."""
    r = 0.5 * diameter_arcmin / pitch_arcmin
    half = math.ceil(r) + 1
    fine = (np.arange(-half * 4, half * 4) + 0.5) / 4.0
    inside = (fine[None, :] ** 2 + fine[:, None] ** 2 <= r * r).astype(float)
    k = inside.reshape(2 * half, 4, 2 * half, 4).sum(axis=(1, 3))
    k = np.pad(k, ((0, 1), (0, 1)))  # odd size, centred on a pixel
    return k / k.sum()


def warp_image(
    image: np.ndarray,
    pitch_arcmin: float,
    src_wick: tuple[float, float],
    dst_wick: tuple[float, float],
    scale: float,
    turn_deg: float,
) -> np.ndarray:
    """Move ``image`` from ``src_wick`` to ``dst_wick``, magnified by ``scale`` and turned by ``turn_deg``.

    Pixel values are flux per pixel, so a magnification spreads each value over ``scale**2`` pixels.
    Light moved in from outside the window is zero; nothing wraps around.
    """
    n = image.shape[0]
    centre = (n - 1) / 2.0
    phi = math.radians(turn_deg)
    # Output (row, column) -> input: x_in - w_in = R(-phi) (x_out - w_out) / scale, in (y, x) order.
    rot = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]]) / scale
    w_out = np.array([dst_wick[1], dst_wick[0]]) / pitch_arcmin + centre
    w_in = np.array([src_wick[1], src_wick[0]]) / pitch_arcmin + centre
    offset = w_in - rot @ w_out
    out = ndimage.affine_transform(image, rot, offset=offset, order=3, mode="constant", cval=0.0)
    return np.clip(out, 0.0, None) / (scale * scale)


def _template(src: dict, label: str, dev: dict[str, tuple[dict, np.ndarray]], k: int) -> tuple[dict, int]:
    """Choose the development source to warp: the same label and index where it is lit.

    A polychromatic template is not rescaled per wavelength when a monochromatic one exists, and a disk
    of another size is not deconvolved when a point source exists (in the case's other condition).
    """
    lit = [
        (lab, j)
        for lab, (scene, comps) in dev.items()
        for j, s in enumerate(scene["sources"])
        if s["flux"] > 0 and comps[j].sum() > 0
    ]
    if not lit:
        return {}, -1
    same = [(lab, j) for lab, j in lit if lab == label]
    pool = same or lit
    lab, j = next(((lab, j) for lab, j in pool if j == k), pool[min(k, len(pool) - 1)])
    dev_src = dev[lab][0]["sources"][j]
    ext = src.get("extent", {}).get("kind", "point")
    if len(dev_src["spectrum"]) > 1 and dev_src["spectrum"] != src["spectrum"]:
        mono = [(b, i) for b, i in lit if len(dev[b][0]["sources"][i]["spectrum"]) == 1]
        lab, j = mono[0] if mono else (lab, j)
    dev_src = dev[lab][0]["sources"][j]
    if ext == "disk" and dev_src.get("extent", {}) not in ({"kind": "point"}, src.get("extent")):
        points = [(b, i) for b, i in lit if dev[b][0]["sources"][i].get("extent", {}).get("kind") == "point"]
        lab, j = points[0] if points else (lab, j)
    return {"label": lab}, j


def dev_warp_components(
    test_scene: dict, label: str, dev: dict[str, tuple[dict, np.ndarray]], pitch_arcmin: float
) -> np.ndarray:
    """Components of a test scene made by similarity transforms of the development answers.

    Parameters
    ----------
    test_scene : dict
        Scene JSON of the test condition.
    label : str
        Its condition label (``"a"`` or ``"b"``).
    dev : dict
        The development case's conditions by label: ``(scene JSON, answer [n_sources, n, n])``.
    pitch_arcmin : float
        Detector pitch.

    Returns
    -------
    ndarray
        ``[n_test_sources, n, n]``, non-negative, no source above its incident flux.

    """
    n = next(iter(dev.values()))[1].shape[-1]
    out = np.zeros((len(test_scene["sources"]), n, n))
    d_test = test_scene["pupil"]["diameter_mm"]
    for k, src in enumerate(test_scene["sources"]):
        incident = src["flux"] * sum(w for _, w in src["spectrum"])
        where, j = _template(src, label, dev, k)
        if incident <= 0 or j < 0:
            continue
        dev_scene, dev_comps = dev[where["label"]]
        dev_src = dev_scene["sources"][j]
        base = dev_comps[j] / (dev_src["flux"] * sum(w for _, w in dev_src["spectrum"]))
        d_dev = dev_scene["pupil"]["diameter_mm"]
        turn = _axis_deg(test_scene) - _axis_deg(dev_scene)
        same_spectrum = dev_src["spectrum"] == src["spectrum"]
        lam_dev = _mean_wavelength(dev_src)
        total_w = sum(w for _, w in src["spectrum"])
        copies = [(lam_dev, 1.0)] if same_spectrum else [(lam, w / total_w) for lam, w in src["spectrum"]]
        img = np.zeros((n, n))
        for lam, w in copies:
            if w > 0:
                scale = (lam / d_test) / (lam_dev / d_dev)
                img += w * warp_image(
                    base, pitch_arcmin, _wick(dev_scene, j), _wick(test_scene, k), scale, turn
                )
        ext, dev_ext = src.get("extent", {}), dev_src.get("extent", {})
        if ext.get("kind") == "disk" and ext != dev_ext:
            have = dev_ext.get("diameter_arcmin", 0.0) if dev_ext.get("kind") == "disk" else 0.0
            need = math.sqrt(max(ext["diameter_arcmin"] ** 2 - have**2, 0.0))
            if need > pitch_arcmin:
                img = np.clip(
                    ndimage.convolve(img, _disk_kernel(need, pitch_arcmin), mode="constant"), 0, None
                )
        img *= incident
        if img.sum() > incident:  # the scorer refuses an energy gain
            img *= incident / img.sum()
        out[k] = img
    return out
