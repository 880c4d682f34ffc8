"""Map a thick eye onto the thin-phase model's parameters (docs/conventions.md, "The thin-phase eye").

The thin model's pupil is the thick eye's entrance pupil. Its terms are read off the traced wavefronts:
``eye_excess_d`` is -2 x the curvature of the host eye's OPD (no implant), the ICL power is -2 x the curvature
of the lens path's OPD minus the host's, and the hole, optic zone and decentre are the traced footprints of
the hole and the optic zone on the entrance pupil (:class:`icl.eye.pupil.ThickPupil`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

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
    icl = ICL(
        power_d=k_total - k_eye,
        decentre_mm=centre,
        optic_zone_mm=2.0 * zone.radius,
        hole_mm=hole_mm,
        hole="clear",
    )
    return Pupil(pupil.diameter_mm, k_eye, icl)


def height_ratio(eye: Eye, z: float, wavelength_nm: float = 550.0) -> float:
    """Paraxial height at plane ``z`` of an axial ray per unit entrance-pupil height (host eye)."""
    par = paraxial(eye, None, wavelength_nm)
    rays = pupil_rays(np.array([1e-6]), np.zeros(1), (0.0, 0.0), par.entrance_pupil_z)
    steps = [s for s in path_steps(eye, None, "host", wavelength_nm) if s.placement.z + s.surface.offset < z]
    out = trace(steps, rays, TraceOptions(apertures=False, fresnel=False))
    media = eye.media()
    return float(to_plane(out, z, media[len(steps)].index(wavelength_nm)).x[0] / 1e-6)


def thin_limit_eye(
    excess_d: float = 8.0, thickness_mm: float = 1e-4, wavelength_nm: float = 550.0, **implant_kw
) -> tuple[Eye, Implant]:
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
        return Eye(
            ((window, front_medium), (power, back_medium)), retina_z=30.0, stop_z=stop, name="thin_limit"
        )

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


def icl_plane_heights(
    eye: Eye,
    u: np.ndarray,
    v: np.ndarray,
    z: float,
    field_arcmin: tuple[float, float],
    wavelength_nm: float = 550.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Real ray heights (x, y) (mm) on the plane ``z`` of rays aimed at entrance-pupil points (u, v), host eye."""
    par = paraxial(eye, None, wavelength_nm)
    rays = pupil_rays(u, v, field_arcmin, par.entrance_pupil_z)
    steps = [s for s in path_steps(eye, None, "host", wavelength_nm) if s.placement.z + s.surface.offset < z]
    out = trace(steps, rays, TraceOptions(apertures=False, fresnel=False))
    out = to_plane(out, z, eye.media()[len(steps)].index(wavelength_nm))
    return out.x, out.y


@dataclass(frozen=True)
class TracedThinPupil:
    """The thin-phase ICL (docs/conventions.md), placed on the ICL plane, added to the host eye's traced
    wavefront.

    ``P = A_eye exp(2 pi i W_eye / lambda) * [(1 - f) + f exp(2 pi i W_icl / lambda)]`` with
    ``W_icl = p - (K/2)|h - c|^2``: ``h(u, v)`` is where the host eye's ray aimed at entrance-pupil point (u, v)
    crosses the ICL plane (traced, so the cornea's pupil aberration is in the mapping), ``K``, ``c``, hole
    and optic zone are the thin ICL's own on that plane, and ``f`` is the exact area fraction of each
    cell covered by the optic outside the (clear) hole, using the preimages of the hole and zone circles
    on the entrance pupil. ``W_eye`` is traced through the thick host eye without the ICL, so everything
    but the ICL is identical in the two models and a comparison isolates what the thin model claims.

    Parameters
    ----------
    host : ThickPupil
        The host eye without implant (its field angle and Fresnel switch are used).
    power_d : float
        Thin ICL power ``K`` on the ICL plane (D).
    plane_z : float
        Axial position of the ICL plane (mm).
    centre_mm : tuple of float
        Optic centre ``c`` on the ICL plane (mm).
    optic_zone_mm, hole_mm : float
        Optic zone and hole diameters on the ICL plane (mm).
    piston_mm : float
        The optic's piston ``p`` (mm of optical path over the light beside it; the thin model's
        ``optic_opd_um`` / 1000).

    """

    host: ThickPupil
    power_d: float
    plane_z: float
    centre_mm: tuple[float, float] = (0.0, 0.0)
    optic_zone_mm: float = 6.0
    hole_mm: float = 0.0
    piston_mm: float = 0.0

    @property
    def diameter_mm(self) -> float:
        """Entrance pupil diameter (mm)."""
        return self.host.diameter_mm

    def _heights(self, u: np.ndarray, v: np.ndarray, lam_nm: float) -> tuple[np.ndarray, np.ndarray]:
        return icl_plane_heights(self.host.eye, u, v, self.plane_z, self.host.field_arcmin, lam_nm)

    def preimage(self, radius_mm: float, lam_nm: float = 550.0, n_az: int = 32) -> tuple[float, float, float]:
        """Circle (cu, cv, r) on the entrance pupil whose rays meet the ICL plane on the circle of
        ``radius_mm`` about the optic centre (Newton along azimuths from the centre's preimage).
        """
        m = height_ratio(self.host.eye, self.plane_z, lam_nm)
        c = np.array(self.centre_mm, dtype=float)
        e = c / m
        for _ in range(6):
            hx, hy = self._heights(np.array([e[0]]), np.array([e[1]]), lam_nm)
            e = e + (c - np.array([hx[0], hy[0]])) / m
        phi = 2.0 * math.pi * np.arange(n_az) / n_az
        rho = np.full(n_az, radius_mm / m)
        for _ in range(6):
            hx, hy = self._heights(e[0] + rho * np.cos(phi), e[1] + rho * np.sin(phi), lam_nm)
            rho = rho + (radius_mm - np.hypot(hx - c[0], hy - c[1])) / m
        x, y = e[0] + rho * np.cos(phi), e[1] + rho * np.sin(phi)
        sol = np.linalg.lstsq(np.column_stack([x, y, np.ones_like(x)]), x * x + y * y, rcond=None)[0]
        cu, cv = sol[0] / 2, sol[1] / 2
        return float(cu), float(cv), float(math.sqrt(sol[2] + cu * cu + cv * cv))

    def field(self, n: int, du: float, wavelength: float) -> np.ndarray:
        """Complex pupil on an n x n grid of pitch ``du`` (m), row = v, column = u."""
        from icl._core_loader import core

        lam_nm = self.host.wavelength_nm or wavelength * 1e9
        base = self.host.field(n, du, wavelength)
        idx = np.nonzero(base)
        g = (np.arange(n) - (n - 1) / 2.0) * du * 1e3
        hx, hy = self._heights(g[idx[1]], g[idx[0]], lam_nm)
        w_icl = self.piston_mm - (self.power_d / 2.0) * 1e-3 * (
            (hx - self.centre_mm[0]) ** 2 + (hy - self.centre_mm[1]) ** 2)
        cu, cv, rz = self.preimage(self.optic_zone_mm / 2, lam_nm)
        lens = core.disk_coverage(cu * 1e-3, cv * 1e-3, rz * 1e-3, n, du)
        if self.hole_mm > 0:
            cu, cv, rh = self.preimage(self.hole_mm / 2, lam_nm)
            lens = np.clip(lens - core.disk_coverage(cu * 1e-3, cv * 1e-3, rh * 1e-3, n, du), 0.0, 1.0)
        out = np.zeros((n, n), dtype=complex)
        f = lens[idx]
        out[idx] = base[idx] * ((1.0 - f) + f * np.exp(2j * math.pi * w_icl * 1e-3 / wavelength))
        return out

    def blocked_fraction(self) -> float:
        """Opaque fraction of the pupil: none (the hole is clear)."""
        return self.host.blocked_fraction()


def optic_opd_mm(pupil: ThickPupil, wavelength_nm: float = 550.0) -> float:
    """The thin model's piston of ``pupil``'s optic: ``(n_optic - n_hole) x centre thickness`` (mm).

    The optical path the optic's centre adds over the medium of its hole (the aqueous, unless the implant
    names another), at ``wavelength_nm``.
    """
    imp = pupil.implant
    if imp is None:
        raise ValueError("the pupil has no implant")
    beside = imp.hole_medium or pupil.eye.surfaces[1][1]  # the aqueous behind the cornea
    return (imp.material.index(wavelength_nm) - beside.index(wavelength_nm)) * imp.thickness_mm


def thin_on_traced(pupil: ThickPupil, wavelength_nm: float = 550.0, samples: int = 41,
                   piston: bool = True) -> TracedThinPupil:
    """The thin model of ``pupil``'s ICL, on its plane, on top of its host eye's traced wavefront.

    The ICL plane is the implant's back vertex plane. ``W_lens - W_eye`` (the traced lens-path wavefront
    minus the host's) is fitted, in ICL-plane coordinates ``h``, over the optic outside the hole by
    ``-(K/2)|h - c|^2 + const``: ``K`` is the thin power and ``c`` the effective centre, which the thin
    model gives to the optic and its hole together (docs/conventions.md). ``c`` differs from the implant's
    decentre by about 0.5 %: the prism at the ICL moves the ray on the crystalline lens 0.5 mm behind it,
    whose power adds to the prism. Hole and optic zone diameters are the implant's own. The optic's piston is
    the thin model's stated one, :func:`optic_opd_mm` (``piston=False``: none, an optic of zero optical
    thickness); the fitted constant is not used.
    """
    imp = pupil.implant
    if imp is None:
        raise ValueError("the pupil has no implant")
    z = imp.placement(pupil.eye).z
    r = pupil.diameter_mm / 2.0
    g = (np.arange(samples) - (samples - 1) / 2) * (2 * r / (samples - 1))
    u, v = np.meshgrid(g, g)
    keep = u * u + v * v <= r * r
    u, v = u[keep], v[keep]
    hx, hy = icl_plane_heights(pupil.eye, u, v, z, pupil.field_arcmin, wavelength_nm)
    rho2 = (hx - imp.decentre_mm[0]) ** 2 + (hy - imp.decentre_mm[1]) ** 2
    on = (rho2 >= (imp.hole_mm / 2 * 1.5) ** 2) & (rho2 <= (imp.optic_zone_mm / 2) ** 2)
    opts = TraceOptions(apertures=False, fresnel=False)
    ref = host_reference(pupil.eye, pupil.field_arcmin, wavelength_nm)
    w_eye, _, _ = opd(pupil.eye, None, "host", u[on], v[on], pupil.field_arcmin, wavelength_nm, opts, ref)
    w_lens, _, _ = opd(pupil.eye, imp, "lens", u[on], v[on], pupil.field_arcmin, wavelength_nm, opts, ref)
    a, b, c, _ = quadratic_fit(hx[on], hy[on], w_lens - w_eye)
    # -(K/2)|h - c|^2 = a|h|^2 + K c.h + const: K = -2a and the effective centre c = (b, c) / K.
    k = -2.0 * a * 1e3
    centre = (float(-b / (2 * a)), float(-c / (2 * a)))
    host = ThickPupil(
        pupil.eye, None, pupil.field_arcmin, fresnel=pupil.fresnel, wavelength_nm=pupil.wavelength_nm
    )
    p = optic_opd_mm(pupil, wavelength_nm) if piston else 0.0
    return TracedThinPupil(host, k, z, centre, imp.optic_zone_mm, imp.hole_mm, p)
