"""Generate the synthetic night-road scene spec and its radiance maps (run from anywhere).

Every number here is a synthetic design choice for a demonstration, not a measurement. Source flux
is the illuminance the source produces at the eye, ``E = L * Omega`` (luminance times solid angle),
in microlux; 1 arcmin^2 = 8.4616e-8 sr.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from icl.imaging.scene_image import write_map_npz
from icl.io import write_json

HERE = Path(__file__).resolve().parent
SR_PER_ARCMIN2 = (math.pi / (180 * 60)) ** 2
LED_4000K = [[450.0, 0.30], [500.0, 0.12], [550.0, 0.24], [600.0, 0.22], [650.0, 0.12]]
HALOGEN = [[450.0, 0.08], [500.0, 0.14], [550.0, 0.22], [600.0, 0.27], [650.0, 0.29]]
RED_LED = [[600.0, 0.1], [650.0, 0.9]]


def flux_ulux(luminance_cd_m2: float, area_arcmin2: float) -> float:
    return round(luminance_cd_m2 * area_arcmin2 * SR_PER_ARCMIN2 * 1e6, 6)


def ellipse(rows: int, cols: int) -> np.ndarray:
    y = (np.arange(rows) - (rows - 1) / 2) / (rows / 2)
    x = (np.arange(cols) - (cols - 1) / 2) / (cols / 2)
    return (x[None, :] ** 2 + y[:, None] ** 2 <= 1.0).astype(float)


def main() -> None:
    q = 3.0  # arcsec per map cell
    lamp = ellipse(10, 30)  # 0.5 x 1.5 arcmin lamp head, seen from below
    head = ellipse(8, 12)  # 0.4 x 0.6 arcmin headlight lens
    window = np.ones((40, 60))  # 2 x 3 arcmin window with a cross mullion
    window[19:21, :] = 0.0
    window[:, 29:31] = 0.0
    write_map_npz(HERE / "lamp_head.npz", lamp, q)
    write_map_npz(HERE / "headlight.npz", head, q)
    write_map_npz(HERE / "window.npz", window, q)
    area = lambda m: float(m.sum()) * (q / 60) ** 2  # noqa: E731
    sources = []
    for i, (x, y, scale) in enumerate([(-21.0, 13.0, 1.0), (-11.5, 7.0, 0.55), (-6.5, 4.0, 0.32),
                                       (19.0, 12.0, 1.0), (10.5, 6.5, 0.55)]):
        # Farther lamps look smaller: the map pitch scales with 1 / distance, luminance is the same.
        sources.append({"id": f"lamp{i + 1}", "x_arcmin": x, "y_arcmin": y,
                        "flux": flux_ulux(20000.0, area(lamp) * scale**2), "spectrum": LED_4000K,
                        "extent": {"kind": "image", "path": "lamp_head.npz"} if scale == 1.0 else
                        {"kind": "disk", "diameter_arcmin": round(1.0 * scale, 4)}})
    for side, x in (("L", 3.2), ("R", 5.8)):
        sources.append({"id": f"headlight_{side}", "x_arcmin": x, "y_arcmin": -2.5,
                        "flux": flux_ulux(50000.0, area(head)), "spectrum": HALOGEN,
                        "extent": {"kind": "image", "path": "headlight.npz"}})
    sources.append({"id": "traffic_red", "x_arcmin": -3.0, "y_arcmin": 2.0, "flux": flux_ulux(5000.0, math.pi * 0.2**2),
                    "spectrum": RED_LED, "extent": {"kind": "disk", "diameter_arcmin": 0.4}})
    sources.append({"id": "window", "x_arcmin": -24.0, "y_arcmin": -4.0, "flux": flux_ulux(20.0, area(window)),
                    "spectrum": HALOGEN, "extent": {"kind": "image", "path": "window.npz"}})
    spec = {
        "notes": "Synthetic night road (not a photograph or a measured scene): LED street lamps at 20000 cd/m2, "
                 "halogen headlights at 50000 cd/m2, a red traffic light at 5000 cd/m2 and a lit window at 20 "
                 "cd/m2, fixation on the road's vanishing point. Flux = luminance x solid angle = illuminance at "
                 "the eye in microlux; spectra are five-band weights summing to 1.",
        "flux_unit": "microlux at the eye",
        "detector": {"n": 600, "pitch_arcsec": 6.0},
        "sources": sources,
        "display": {"white": 2000.0, "knee": 0.005},
        "variants": {
            "no_icl": {"diameter_mm": 3.2, "eye_excess_d": 0.0, "icl": None},
            "icl_solid": {"diameter_mm": 3.2, "eye_excess_d": 8.0, "icl": {"hole_mm": 0.0}},
            "icl_hole": {"diameter_mm": 3.2, "eye_excess_d": 8.0, "icl": {"hole_mm": 0.36}},
            "icl_hole_decentred": {"diameter_mm": 3.2, "eye_excess_d": 8.0,
                                   "icl": {"hole_mm": 0.36, "decentre_mm": [0.3, 0.1]}},
            "icl_hole_pupil5": {"diameter_mm": 5.0, "eye_excess_d": 8.0, "icl": {"hole_mm": 0.36}},
        },
        "order": ["no_icl", "icl_solid", "icl_hole", "icl_hole_decentred", "icl_hole_pupil5"],
        "labels": {"no_icl": "emmetropic eye, no ICL, 3.2 mm", "icl_solid": "ICL, no hole, 3.2 mm",
                   "icl_hole": "ICL, 0.36 mm hole, 3.2 mm",
                   "icl_hole_decentred": "ICL with hole, decentred (0.3, 0.1) mm",
                   "icl_hole_pupil5": "ICL with hole, 5 mm night pupil"},
    }
    write_json(HERE / "scene.json", spec)


if __name__ == "__main__":
    main()
