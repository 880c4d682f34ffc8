"""Run one baseline strategy over a folder of professional instances.

Strategies
----------
constant      one fixed 1-arcmin Gaussian for every case; no metrics.
gaussian      a Gaussian of the Airy core's width at each source, correct total flux; no other physics.
hand_halo     Gaussian core plus a hand-drawn ring of fixed radius; knows the anatomy, nothing else.
geometric     geometric optics only: paraxial and closed-form quantities right, PSF from ray blur, no diffraction.
ignores_hole  full thin-phase wave optics with the central hole removed from every case.
knowledge-qa  task text and catalogue definitions only, no computation (:mod:`icl.pro.baselines.full`).
full-model    every auto check answered from the inputs with this package's engines (the ceiling).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from icl import libm
from icl.io import load_json, write_json
from icl.optics.model import decentre_shift_arcmin
from icl.pro import references as ref
from icl.pro.generate import LAYERS, eye_surfaces
from icl.pro.package import load_package, scene_from_package
from icl.pro.results_schema import ENERGY_UNITS, write_psf

STRATEGIES = ("constant", "gaussian", "hand_halo", "geometric", "ignores_hole", "knowledge-qa", "full-model",
              "placeholder")


def _grid(pkg: dict) -> np.ndarray:
    n, pitch = pkg["detector"]["n"]["value"], pkg["detector"]["pitch_arcsec"]["value"]
    return (np.arange(n) - (n - 1) / 2.0) * pitch / 60.0


def _gauss(axis: np.ndarray, x0: float, y0: float, sigma: float) -> np.ndarray:
    x, y = np.meshgrid(axis, axis)
    g = libm.exp(-((x - x0) ** 2 + (y - y0) ** 2) / (2 * sigma**2))
    return g / (2 * math.pi * sigma**2) * (axis[1] - axis[0]) ** 2


def _disk(axis: np.ndarray, x0: float, y0: float, radius: float) -> np.ndarray:
    x, y = np.meshgrid(axis, axis)
    step = axis[1] - axis[0]
    if radius < step:
        return _gauss(axis, x0, y0, step / 2)
    m = ((x - x0) ** 2 + (y - y0) ** 2 <= radius**2).astype(float)
    return m / (math.pi * radius**2) * step**2


def psf_for(strategy: str, pkg: dict) -> tuple[np.ndarray, float]:
    """PSF on the case's detector and the blocked flux."""
    axis = _grid(pkg)
    scene = scene_from_package(pkg)
    pupil = scene["pupil"]
    if strategy == "ignores_hole":
        scene["pupil"]["icl"]["hole_mm"] = 0.0
        img, led, _ = ref.render_psf(scene)
        return img, led["blocked_by_aperture"]
    img = np.zeros((axis.size, axis.size))
    blocked = 0.0
    for s in scene["sources"]:
        flux = s["flux"] * sum(w for _, w in s["spectrum"])
        lam = s["spectrum"][0][0]
        x0, y0 = s["x_arcmin"], s["y_arcmin"]
        sigma = 0.42 * lam * 1e-9 / (pupil["diameter_mm"] * 1e-3) * ref.RAD_TO_ARCMIN
        if strategy == "constant":
            img += _gauss(axis, 0.0, 0.0, 1.0)
        elif strategy == "gaussian":
            img += flux * _gauss(axis, x0, y0, sigma)
        elif strategy == "hand_halo":
            x, y = np.meshgrid(axis, axis)
            ring = libm.exp(-((np.hypot(x - x0, y - y0) - 3.0) ** 2) / (2 * 0.3**2))
            img += flux * (0.95 * _gauss(axis, x0, y0, sigma) + 0.05 * ring / ring.sum())
        else:  # geometric: Prentice shift, defocus blur disk, hole light blurred by the eye excess
            icl, d = pupil["icl"], pupil["diameter_mm"]
            k, p = pupil["eye_excess_d"], icl["power_d"]
            cx, cy = icl["decentre_mm"]
            # In the scene's frame the corrected light moves by the optic's prism and the hole's light by the
            # eye's own prism over the decentred hole (the tilt -k c of its wavefront).
            sx, sy = (decentre_shift_arcmin(p, c, scene["frame"]) for c in (cx, cy))
            hx, hy = (decentre_shift_arcmin(k, c, scene["frame"]) for c in (cx, cy))
            hole = icl["hole_mm"] if icl["hole"] != "index_matched" else 0.0
            frac = (hole / d) ** 2
            main = 1.0 - frac
            img += flux * main * _disk(axis, x0 + sx, y0 + sy, abs(k + p) * d * 0.5e-3 * ref.RAD_TO_ARCMIN)
            if hole and icl["hole"] == "clear":
                img += flux * frac * _disk(axis, x0 - hx, y0 - hy, abs(k) * hole * 0.5e-3 * ref.RAD_TO_ARCMIN)
            elif hole:
                blocked += flux * frac
    return img, blocked


def _claim(m: dict, name: str, value: Callable[[], object]) -> None:
    """Set ``m[name]`` unless a value it needs is unknown (``None``) or was not claimed: the baseline then
    abstains on the checks that read it instead of failing the whole input set.
    """
    try:
        m[name] = value()
    except (TypeError, KeyError):
        pass


def metrics_for(strategy: str, task: dict, pkg: dict, img: np.ndarray | None) -> dict:
    """What each strategy claims to know (``img`` None: the strategy has no PSF of this case)."""
    m: dict = {}
    if strategy == "constant":
        return m
    m["layer_order"] = LAYERS if strategy != "gaussian" else []
    if strategy in ("gaussian", "hand_halo"):
        return m
    v = lambda d: pkg[d.split(".")[0]][d.split(".")[1]]["value"]  # noqa: E731
    axis = _grid(pkg)
    e = {k: v(f"eye.{k}") for k in ("cornea_anterior_radius", "cornea_posterior_radius", "cornea_thickness", "cornea_index",
                                     "aqueous_index", "anterior_chamber_depth", "lens_anterior_radius", "lens_thickness",
                                     "lens_posterior_radius", "lens_index", "vitreous_index", "cornea_anterior_conic")}
    d = v("eye.pupil_diameter") or 3.0
    hole = v("implant.hole_diameter") or 0.0
    if strategy == "ignores_hole":
        hole = 0.0
    vault = v("implant.vault")
    if vault is not None:
        m["vault_mm"] = vault
        m["vault_category"] = "low" if vault < 0.25 else "high" if vault > 0.75 else "normal"
        _claim(m, "icl_to_endothelium_mm", lambda: e["anterior_chamber_depth"] - vault
               - v("implant.central_thickness") - e["cornea_thickness"])
    if "posterior_vertex_depth" in pkg["implant"]:
        _claim(m, "vault_mm", lambda: e["anterior_chamber_depth"] - pkg["implant"]["posterior_vertex_depth"]["value"])
        if "vault_mm" in m:
            vault = m["vault_mm"]
            m["vault_category"] = "low" if vault < 0.25 else "high" if vault > 0.75 else "normal"
    _claim(m, "acd_endothelium_mm", lambda: e["anterior_chamber_depth"] - e["cornea_thickness"])
    k = v("eye.thin_eye_excess")
    lam = pkg["illumination"]["sources"][0]["spectrum"]["value"][0][0]
    _claim(m, "hole_area_fraction", lambda: (hole / d) ** 2)
    _claim(m, "hole_geometric_blur_arcmin", lambda: hole * 1e-3 * k * ref.RAD_TO_ARCMIN)
    _claim(m, "hole_fresnel_number", lambda: (hole * 0.5e-3) ** 2 * k / (lam * 1e-9))
    if "pupil_diameters_by_light_level" in pkg["eye"]:
        pupils = pkg["eye"]["pupil_diameters_by_light_level"]["value"].values()
        _claim(m, "hole_area_fraction_by_pupil", lambda: [(hole / x) ** 2 for x in pupils])
    _claim(m, "eye_power_d", lambda: ref.equivalent_power_d(eye_surfaces(e)))
    angles = task.get("incidence_deg", [0.0] * 6)
    pairs = ((1.0, e["cornea_index"]), (e["cornea_index"], e["aqueous_index"]),
             (e["aqueous_index"], v("implant.index")), (v("implant.index"), e["aqueous_index"]),
             (e["aqueous_index"], e["lens_index"]), (e["lens_index"], e["vitreous_index"]))
    _claim(m, "interface_reflectance", lambda: [ref.fresnel_unpolarised(a, b, th) for (a, b), th in zip(pairs, angles)])
    _claim(m, "icl_ghost_relative_intensity", lambda: m["interface_reflectance"][2] * m["interface_reflectance"][3])
    _claim(m, "total_transmittance", lambda: float(np.prod([1 - r for r in m["interface_reflectance"]])))
    if "sag_heights_mm" in task:
        heights = np.array(task["sag_heights_mm"])
        _claim(m, "sag_mm",
               lambda: ref.conic_sag(heights, e["cornea_anterior_radius"], e["cornea_anterior_conic"]).tolist())
    cx, cy = v("implant.decentre_x") or 0.0, v("implant.decentre_y") or 0.0
    p = v("implant.thin_power")
    if p is not None:
        _claim(m, "prism_dioptres", lambda: math.hypot(cx, cy) * 0.1 * abs(p))
        _claim(m, "image_shift_arcmin", lambda: [ref.prentice_shift_arcmin(p, cx), ref.prentice_shift_arcmin(p, cy)])
        _claim(m, "pattern_shift_arcmin", lambda: m["image_shift_arcmin"])
    oz = v("implant.optic_zone_diameter")
    _claim(m, "edge_annulus_fraction", lambda: ref.annulus_fraction(d, oz))
    _claim(m, "edge_halo_radii_arcmin", lambda: [k * r * 0.5e-3 * ref.RAD_TO_ARCMIN for r in (oz, d)])
    if img is not None:
        _claim(m, "centroid_arcmin", lambda: ref.centroid_arcmin(img, axis) if img.sum() > 0 else [0.0, 0.0])
        _claim(m, "psf_orientation_deg", lambda: ref.orientation_deg(img, axis) if img.sum() > 0 else 0.0)
        _claim(m, "encircled_energy_1arcmin", lambda: ref.encircled(img, axis, 1.0))
    if strategy == "ignores_hole":  # wave optics: diffraction quantities of the limiting aperture
        core = ref.limiting_aperture_mm(d, oz) if d is not None and oz is not None else d
        _claim(m, "first_dark_ring_arcmin", lambda: ref.airy_radius_arcmin(ref.AIRY_DARK[0], lam, core))
        waves = [w for w, _ in pkg["illumination"]["sources"][0]["spectrum"]["value"]]
        _claim(m, "first_dark_ring_arcmin_by_wavelength",
               lambda: [ref.airy_radius_arcmin(ref.AIRY_DARK[0], w, core) for w in waves])
        _claim(m, "airy_dark_rings_arcmin", lambda: [ref.airy_radius_arcmin(x, lam, core) for x in ref.AIRY_DARK])
        _claim(m, "first_bright_ring_arcmin", lambda: ref.airy_radius_arcmin(ref.AIRY_BRIGHT, lam, core))
        if "encircled_radius_arcmin" in task:
            radius = task["encircled_radius_arcmin"]
            _claim(m, "encircled_energy_airy",
                   lambda: (core / d) ** 2 * ref.encircled_energy_airy(radius, lam, core))
        if p is not None:
            _claim(m, "strehl_ratio", lambda: ref.strehl_defocus(k + p, d, lam))
    return m


def energy_ledger(incident: float, blocked: float, rec: float) -> dict:
    """energy.json in the results schema: no reflection or absorption is modelled; light past the aperture
    is transmitted, and what the image does not hold of it is clipped. An image holding more than passed
    the aperture books the excess as a negative numerical residual (an energy gain the scorer flags).
    """
    through = incident - blocked
    transmitted, residual = (through, 0.0) if rec <= through else (rec, through - rec)
    return {"units": ENERGY_UNITS, "incident": incident, "reflected": 0.0, "absorbed": 0.0, "blocked": blocked,
            "transmitted": transmitted, "clipped": transmitted - rec, "numerical_residual": residual}


def run(strategy: str, input_dir: Path, output_dir: Path) -> int:
    """Process every instance folder under ``input_dir``; return the number of instances written."""
    if strategy in ("full-model", "knowledge-qa"):
        from icl.pro.baselines import full

        return full.run(strategy, input_dir, output_dir)
    if strategy == "placeholder":
        from icl.pro.baselines import placeholder

        return placeholder.run(input_dir, output_dir)
    count = 0
    for idir in sorted(p for p in input_dir.iterdir() if (p / "task.json").is_file()):
        task = load_json(idir / "task.json")
        out = output_dir / "results" / idir.name
        last = None  # the last case answered (package, image)
        for case in task["cases"]:
            pkg = load_package(idir / "cases" / case)
            try:
                img, blocked = psf_for(strategy, pkg)
            except (TypeError, ValueError):  # the package leaves a needed parameter unknown: no PSF, but
                # what the known parameters answer is still written (the instance is attempted)
                write_json(out / case / "metrics.json", metrics_for(strategy, task, pkg, None))
                continue
            axis = _grid(pkg)
            pitch = pkg["detector"]["pitch_arcsec"]["value"]
            waves = sorted({w for s in pkg["illumination"]["sources"] for w, _ in s["spectrum"]["value"]})
            for stem in ("psf_linear", "psf_repeat"):
                write_psf(out / case / f"{stem}.npz", img, axis, axis, pitch, waves)
            incident = sum(s["flux"]["value"] * sum(w for _, w in s["spectrum"]["value"]) for s in pkg["illumination"]["sources"])
            write_json(out / case / "energy.json", energy_ledger(incident, blocked, float(img.sum())))
            write_json(out / case / "metrics.json", metrics_for(strategy, task, pkg, img))
            last = (pkg, img)
        ee = metrics_for(strategy, task, *last).get("encircled_energy_1arcmin") if last else None
        if strategy == "ignores_hole" and ee is not None and "F02.1" in {c["id"] for c in task["checks"]}:
            write_json(out / "experiments.json", {"experiments": [
                {"id": "ee-fft-factor", "kind": "convergence", "description": "one value written three times",
                 "metric": "encircled_energy_1arcmin", "parameter": "fft_factor", "levels": [2, 3, 4],
                 "values": [ee, ee, ee]}]})
        count += 1
    write_json(output_dir / "manifest.json", {"random_seeds": {}, "versions": {"submission": "baseline-" + strategy}})
    return count


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: ``python -m icl.pro.baselines.runner STRATEGY INPUT OUTPUT``."""
    ap = argparse.ArgumentParser()
    ap.add_argument("strategy", choices=STRATEGIES)
    ap.add_argument("input", type=Path)
    ap.add_argument("output", type=Path)
    a = ap.parse_args(argv)
    run(a.strategy, a.input, a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
