"""Map a thick eye onto the thin-phase model's parameters (DESIGN.md section 3).

The thin model's pupil is the thick eye's entrance pupil. Its terms are read off the traced wavefronts:
``eye_excess_d`` is -2 x the curvature of the host eye's OPD (no implant), the ICL power is -2 x the curvature
of the lens path's OPD minus the host's, and the hole, optic zone and decentre are the traced footprints of
the hole and the optic zone on the entrance pupil (:class:`icl.eye.pupil.ThickPupil`).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from icl.eye.media import Medium
from icl.eye.model import Eye, Implant, path_steps
from icl.eye.paraxial import correcting_icl, paraxial, retina_for_excess
from icl.eye.pupil import ThickPupil
from icl.eye.trace import Surface, TraceOptions, to_plane, trace
from icl.eye.wavefront import host_reference, opd, pupil_rays
from icl.optics import ICL, Pupil


def quadratic_fit(u: np.ndarray, v: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Least-squares ``w = a (u^2 + v^2) + b u + c v + d``; returns (a, b, c, d) in the units of w and u."""
    m = np.column_stack([u * u + v * v, u, v, np.ones_like(u)])
    return np.linalg.lstsq(m, w, rcond=None)[0]


def thin_equivalent(pupil: ThickPupil, wavelength_nm: float = 550.0, samples: int = 41) -> Pupil:
    """Thin-phase :class:`~icl.optics.Pupil` with the same pupil, powers, hole, zone and decentre."""
    r = pupil.diameter_mm / 2.0
    g = (np.arange(samples) - (samples - 1) / 2) * (2 * r / (samples - 1))
    u, v = np.meshgrid(g, g)
    keep = u * u + v * v <= r * r
    u, v = u[keep], v[keep]
    opts = TraceOptions(apertures=False, fresnel=False)
    ref = host_reference(pupil.eye, pupil.field_arcmin, wavelength_nm)
    w_host, _, _ = opd(pupil.eye, None, "host", u, v, pupil.field_arcmin, wavelength_nm, opts, ref)
    k_eye = -2.0 * quadratic_fit(u, v, w_host)[0] * 1e3
    imp = pupil.implant
    if imp is None:
        return Pupil(pupil.diameter_mm, k_eye, None)
    w_lens, _, _ = opd(pupil.eye, imp, "lens", u, v, pupil.field_arcmin, wavelength_nm, opts, ref)
    k_total = -2.0 * quadratic_fit(u, v, w_lens)[0] * 1e3
    fps = pupil.footprints(wavelength_nm)
    zone = fps["lens"][-1]
    # The hole's footprint is small and round, so its centre is the implant centre on the entrance pupil;
    # without a hole the implant decentre is scaled by the paraxial ray-height ratio at its plane.
    if "hole" in fps:
        centre = (fps["hole"][0].cu, fps["hole"][0].cv)
    else:
        scale = 1.0 / height_ratio(pupil.eye, imp.placement(pupil.eye).z, wavelength_nm)
        centre = (imp.decentre_mm[0] * scale, imp.decentre_mm[1] * scale)
    hole_mm = 2.0 * fps["hole"][0].radius if "hole" in fps else 0.0
    icl = ICL(power_d=k_total - k_eye, decentre_mm=centre, optic_zone_mm=2.0 * zone.radius,
              hole_mm=hole_mm, hole="clear")
    return Pupil(pupil.diameter_mm, k_eye, icl)


def height_ratio(eye: Eye, z: float, wavelength_nm: float = 550.0) -> float:
    """Paraxial height at plane ``z`` of an axial ray per unit entrance-pupil height (host eye)."""
    par = paraxial(eye, None, wavelength_nm)
    rays = pupil_rays(np.array([1e-6]), np.zeros(1), (0.0, 0.0), par.entrance_pupil_z)
    steps = [s for s in path_steps(eye, None, "host", wavelength_nm) if s.placement.z + s.surface.offset < z]
    out = trace(steps, rays, TraceOptions(apertures=False, fresnel=False))
    media = eye.media()
    return float(to_plane(out, z, media[len(steps)].index(wavelength_nm)).x[0] / 1e-6)


def thin_limit_eye(excess_d: float = 8.0, thickness_mm: float = 1e-4, wavelength_nm: float = 550.0,
                   **implant_kw) -> tuple[Eye, Implant]:
    """An eye in which the thin-phase model is exact in the limit of a vanishing ICL thickness.

    A flat window (air to index 1.336) images the iris 1:1 laterally into the entrance pupil; the ICL
    sits on the iris plane; a single aspheric surface (index 1.336 to 1.7, radius 6 mm) carries the power. The
    retina makes the eye myopic by ``excess_d`` at the entrance pupil and the surface's a4, a6, a8
    are fitted so that the eye with the (thin) correcting ICL is free of aberration: the thin model's
    corrected eye. Returns the eye and the correcting implant.
    """
    front_medium, back_medium = Medium("window_1.336", 1.336), Medium("power_1.7", 1.7)
    stop = 3.1
    window = Surface("cornea_front", math.inf, offset=0.0)

    def build(a4: float, a6: float, a8: float) -> Eye:
        power = Surface("lens_front", 6.0, 0.0, (a4, a6, a8, 0.0), offset=stop + 0.5)
        return Eye(((window, front_medium), (power, back_medium)), retina_z=30.0, stop_z=stop,
                   name="thin_limit")

    eye = build(0.0, 0.0, 0.0)
    eye = eye.with_vitreous(retina_for_excess(eye, excess_d, wavelength_nm))
    kw = {"thickness_mm": thickness_mm, "vault_mm": 0.5, **implant_kw}
    imp = correcting_icl(eye, wavelength_nm, **kw)
    r = eye.pupil_diameter_mm / 2
    g = np.linspace(-r, r, 25)
    u = g[np.abs(g) <= r]
    v = np.zeros_like(u)
    opts = TraceOptions(apertures=False, fresnel=False)
    centred = replace(imp, decentre_mm=(0.0, 0.0), tilt_deg=(0.0, 0.0), hole_mm=0.0)

    def residual(p: np.ndarray) -> np.ndarray:
        e = replace(build(*p), retina_z=eye.retina_z)
        w, _, _ = opd(e, centred, "lens", u, v, (0.0, 0.0), wavelength_nm, opts)
        return w - w[len(w) // 2]

    p = np.zeros(3)
    steps = np.array([1e-7, 1e-8, 1e-9])
    for _ in range(4):  # Gauss-Newton on (a4, a6, a8); the OPD is nearly linear in them
        f0 = residual(p)
        jac = np.column_stack([(residual(p + np.eye(3)[j] * steps[j]) - f0) / steps[j] for j in range(3)])
        p = p - np.linalg.lstsq(jac, f0, rcond=None)[0]
    return replace(build(*p), retina_z=eye.retina_z), imp
