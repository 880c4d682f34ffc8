"""Geometric rendering of one light path onto the detector (used for the strongly defocused ghosts).

A ghost reflected twice inside the anterior segment carries hundreds of waves of defocus: its far field
spreads over degrees (``ghost_icl``: about +-20 deg; ``ghost_icl_lens``: about +-1.4 deg for the example
eye), far beyond what the FFT window of a 4 arcsec detector holds (:class:`icl.eye.pupil.ThickPupil`
refuses such a grid rather than alias it). With that much wavefront error diffraction changes the pattern
only at its edges, so the ray density is the right intensity: rays on a uniform grid of the entrance pupil,
each carrying its cell's share of the flux times its Fresnel weight, are binned into detector pixels.

Angles are drawn in the scene frames of the far-field engine (docs/conventions.md, "Frames"): a retinal
offset ``d`` (mm) from the host chief ray's point is the angle ``-d / f`` from the source in the ``visual``
frame (the retinal image is inverted: light landing beside a source's spot toward +x is seen toward -x) and
``+d / f`` in the ``halo`` frame, with ``f`` the implanted eye's equivalent focal length.
"""

from __future__ import annotations

import math

import numpy as np

from icl.eye.ledger import uniform_pupil
from icl.eye.model import Eye, Implant, index_after
from icl.eye.paraxial import paraxial
from icl.eye.trace import TraceOptions, to_plane
from icl.eye.wavefront import ARCMIN, host_reference, pupil_rays, trace_path
from icl.optics.model import FRAMES, Detector, Source


def retinal_angles(
    eye: Eye,
    implant: Implant | None,
    path: str,
    source: Source,
    wavelength_nm: float,
    n_side: int,
    options: TraceOptions = TraceOptions(),
    frame: str = "visual",
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Angles (arcmin, in ``frame``) and flux (units of the source flux per unit spectral weight) of rays
    along ``path``.

    Rays fill the entrance pupil on an ``n_side`` square grid; stopped rays carry zero flux.
    """
    if frame not in FRAMES:
        raise ValueError(f"frame must be one of {FRAMES}, got {frame!r}")
    sign = -1.0 if frame == "visual" else 1.0
    par = paraxial(eye, None, wavelength_nm)
    field = (source.x_arcmin, source.y_arcmin)
    u, v, w0 = uniform_pupil(n_side, eye.pupil_diameter_mm)
    rays = pupil_rays(u, v, field, par.entrance_pupil_z, w0)
    out = to_plane(
        trace_path(eye, implant, path, rays, wavelength_nm, options),
        eye.retina_z,
        index_after(eye, wavelength_nm),
    )
    ref = host_reference(eye, field, wavelength_nm, par)
    f_mm = paraxial(eye, implant, wavelength_nm).efl_mm if implant is not None else par.efl_mm
    tx = source.x_arcmin + sign * (out.x - ref.centre[0]) / f_mm / ARCMIN
    ty = source.y_arcmin + sign * (out.y - ref.centre[1]) / f_mm / ARCMIN
    flux = np.where(out.flags == 0, out.w, 0.0)
    return tx, ty, flux


def geometric_component(
    eye: Eye,
    implant: Implant | None,
    path: str,
    source: Source,
    detector: Detector,
    n_side: int = 401,
    options: TraceOptions = TraceOptions(),
    frame: str = "visual",
) -> tuple[np.ndarray, float]:
    """Pixel flux [n, n] of ``source`` along ``path`` (row = +y, drawn in ``frame``) and the flux that
    arrives outside it.

    Summed over the source spectrum with its weights, scaled by its flux (same units as
    :func:`icl.optics.render`).
    """
    n = detector.n
    half = detector.half_width_arcmin
    edges = np.linspace(-half, half, n + 1)
    img = np.zeros((n, n))
    outside = 0.0
    for lam, weight in source.spectrum:
        tx, ty, flux = retinal_angles(eye, implant, path, source, lam, n_side, options, frame)
        flux = flux * (source.flux * weight)
        h, _, _ = np.histogram2d(ty, tx, bins=(edges, edges), weights=flux)
        img += h
        outside += float(flux.sum() - h.sum())
    return img, outside


def spread_arcmin(eye: Eye, implant: Implant, path: str, wavelength_nm: float = 550.0) -> float:
    """Largest angular distance (arcmin) of the path's rays from the source (on-axis source)."""
    tx, ty, flux = retinal_angles(eye, implant, path, Source(), wavelength_nm, 41)
    keep = flux > 0
    return float(math.sqrt(np.max(tx[keep] ** 2 + ty[keep] ** 2))) if keep.any() else 0.0
