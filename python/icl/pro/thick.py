"""Thick-eye references for the hole-causality cases (C05, D02), through :mod:`icl.eye`.

A case's data package is turned into a sequential schematic eye (:class:`icl.eye.model.Eye`: conic cornea
front, spherical cornea back and crystalline lens (the Navarro lens asphericity is dropped: the package
gives lens radii only), constant indices of the package, no dispersion, Fresnel losses off, iris (the stop)
in the plane of the ICL anterior vertex, ``pupil_diameter`` the entrance pupil diameter)
and a thick synthetic ICL (:class:`icl.eye.model.Implant`: the package's radii, thickness, index, optic
zone, hole, decentre and vault). :class:`icl.eye.pupil.ThickPupil` traces the lens, hole and edge paths and
:func:`icl.optics.render` propagates the result on the same detector as the thin-phase references.

The four hole models:

``solid``
    the implant without a hole.
``clear``
    the hole open to aqueous (lens, hole and edge paths).
``black``
    the hole path ablated: the hole is opaque and its light is blocked (in the ledger as blocked).
``index_matched``
    a fill of the optic's index: every ray meets the same surfaces and media as in the solid optic, so it
    is built as the solid implant (the thick tracer's hole medium also sets the surrounding aqueous, so a
    separate fill medium cannot be given to it).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from icl import linalg
from icl.pro.package import value

ENGINE = "icl.eye (thick sequential eye: traced paths lens/hole/edge) + icl.optics.render far field"


def thick_eye(pkg: dict):
    """Build the package's eye and implant as :mod:`icl.eye` objects (constant indices, no dispersion)."""
    from icl.eye.media import Medium
    from icl.eye.model import Eye, Implant
    from icl.eye.trace import Surface

    v = lambda d: value(pkg, d)  # noqa: E731
    acd, t_lens = v("eye.anterior_chamber_depth"), v("eye.lens_thickness")
    aqueous = Medium("aqueous_package", constant=v("eye.aqueous_index"))
    surfaces = (
        (
            Surface(
                "cornea_front", v("eye.cornea_anterior_radius"), v("eye.cornea_anterior_conic"), offset=0.0
            ),
            Medium("cornea_package", constant=v("eye.cornea_index")),
        ),
        (
            Surface("cornea_back", v("eye.cornea_posterior_radius"), 0.0, offset=v("eye.cornea_thickness")),
            aqueous,
        ),
        (
            Surface("lens_front", v("eye.lens_anterior_radius"), 0.0, offset=acd),
            Medium("lens_package", constant=v("eye.lens_index")),
        ),
        (
            Surface("lens_back", v("eye.lens_posterior_radius"), 0.0, offset=acd + t_lens),
            Medium("vitreous_package", constant=v("eye.vitreous_index")),
        ),
    )
    eye = Eye(
        surfaces,
        retina_z=v("eye.axial_length"),
        # The iris rests on the ICL: the stop is the plane of the ICL anterior vertex, in front of the ICL.
        stop_z=acd - v("implant.vault") - v("implant.central_thickness"),
        pupil_diameter_mm=v("eye.pupil_diameter"),
        name="pro_package_eye",
    )
    t = v("implant.central_thickness")
    model = v("implant.hole_model")
    implant = Implant(
        Surface("icl_front", v("implant.anterior_radius"), 0.0, offset=-t),
        Surface("icl_back", v("implant.posterior_radius"), 0.0, offset=0.0),
        t,
        Medium("collamer_synthetic", constant=v("implant.index")),
        optic_zone_mm=v("implant.optic_zone_diameter"),
        hole_mm=0.0 if model in ("solid", "index_matched") else v("implant.hole_diameter"),
        decentre_mm=(v("implant.decentre_x"), v("implant.decentre_y")),
        vault_mm=v("implant.vault"),
        hole_medium=aqueous,
    )
    return eye, implant


def thick_scene(pkg: dict):
    """Build the case's scene with the traced thick eye as its pupil (:class:`icl.eye.pupil.ThickPupil`)."""
    from icl.eye.pupil import ThickPupil
    from icl.optics import Scene
    from icl.pro.package import scene_from_package

    scene = Scene.from_dict(scene_from_package(pkg))
    if len(scene.sources) != 1:
        raise ValueError("thick references are built for one source per case")
    src = scene.sources[0]
    eye, implant = thick_eye(pkg)
    model = value(pkg, "implant.hole_model")
    paths = (
        ("lens", "edge")
        if model == "black"
        else ("lens", "hole", "edge")
        if implant.hole_mm > 0
        else ("lens", "edge")
    )
    # The scene's visual frame (icl.pro.package) point-reflects the traced pupil function in the engine.
    pupil = ThickPupil(eye, implant, field_arcmin=(src.x_arcmin, src.y_arcmin), paths=paths, fresnel=False)
    return replace(scene, pupil=pupil)


# Pupil samples across the diameter tried in turn when a path's wavefront is too steep for the default grid.
PUPIL_SAMPLES_STEPS = (256, 384, 512, 768, 1024)


def render_thick(pkg: dict) -> tuple[np.ndarray, dict, np.ndarray]:
    """Thick-eye PSF of a one-source case on its detector: (image, ledger, axis).

    The pupil grid starts at the default sampling and is refined (:data:`PUPIL_SAMPLES_STEPS`) until every
    path's wavefront changes by at most half a wave between samples; the ledger's ``sampling`` records
    the ``min_pupil_samples`` used.
    """
    from icl.eye.pupil import PupilUndersampled
    from icl.optics import Sampling, render

    scene = thick_scene(pkg)
    for samples in PUPIL_SAMPLES_STEPS[:-1]:
        try:
            res = render(scene, Sampling(min_pupil_samples=samples))
            break
        except PupilUndersampled:
            continue
    else:
        samples = PUPIL_SAMPLES_STEPS[-1]
        res = render(scene, Sampling(min_pupil_samples=samples))
    return res.scene, {**res.ledger, "sampling": {"min_pupil_samples": samples}}, res.x_arcmin


def solid_wavefront_zernike(pkg: dict, n_rings: int = 24) -> dict[str, float]:
    """Rotationally symmetric Zernike terms (waves, 550 nm) of the traced on-axis wavefront of the solid optic.

    The OPD of the lens path (apertures off) is sampled on a polar grid over the entrance pupil and fitted by
    least squares with Z(2,0), Z(4,0), Z(6,0) and piston; returns ``defocus``, ``spherical``,
    ``secondary_spherical`` and ``rms`` (of the fitted non-piston part) in waves.
    """
    from icl.eye.trace import TraceOptions
    from icl.eye.wavefront import opd

    eye, implant = thick_eye(pkg)
    implant = replace(implant, hole_mm=0.0)
    radius = eye.pupil_diameter_mm / 2.0
    rho = np.sqrt((np.arange(n_rings) + 0.5) / n_rings)  # equal-area rings
    phi = 2.0 * np.pi * np.arange(32) / 32
    rr, pp = np.meshgrid(rho, phi)
    u, v = (radius * rr * np.cos(pp)).ravel(), (radius * rr * np.sin(pp)).ravel()
    w_mm, _, flags = opd(
        eye, implant, "lens", u, v, (0.0, 0.0), 550.0, TraceOptions(apertures=False, fresnel=False)
    )
    if np.any(flags != 0):
        raise ValueError("solid-optic rays lost inside the entrance pupil")
    r = rr.ravel()
    r2 = r * r  # powers by products: NumPy's r**4 and r**6 differ in the last bits between CPUs
    basis = np.column_stack(
        [
            np.ones_like(r),
            np.sqrt(3) * (2 * r2 - 1),
            np.sqrt(5) * (6 * r2 * r2 - 6 * r2 + 1),
            np.sqrt(7) * (20 * r2 * r2 * r2 - 30 * r2 * r2 + 12 * r2 - 1),
        ]
    )
    coef = linalg.lstsq(basis, w_mm / 550e-6)
    return {
        "defocus": float(coef[1]),
        "spherical": float(coef[2]),
        "secondary_spherical": float(coef[3]),
        "rms": float(math.sqrt(np.sum(coef[1:] ** 2))),
    }
