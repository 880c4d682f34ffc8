"""Generate the professional instances: base eyes x ICL design families x seeds, grouped splits,
data packages, and private references for every auto check.

Layout of a release (``icl pro-generate --output DIR``)::

    DIR/catalog.json                        the task catalogue
    DIR/inputs/<split>/<instance>/task.json what to do, vocabulary, menus; no answers
    DIR/inputs/<split>/<instance>/cases/<case>/{eye,implant,illumination,detector}.json
    DIR/inputs/<split>/<instance>/*.npz     observations / candidate images (E01-E03, F05)
    DIR/private/references/<instance>.json  reference of every auto check, engine and tolerances
    DIR/private/psf/<instance>/<case>.npz   reference PSFs (psf, x_arcmin, y_arcmin)
    DIR/private/splits.json                 split and groups of every instance, leakage summary
    DIR/manifest.json                       version, parameters, SHA-256 of every file

Everything is a deterministic function of the release key (:mod:`icl.keys`): every random draw comes from
a stream named by its role (``pro/base_eye/E03``, ``pro/instance/B05/2``) and derived from the key by
HMAC-SHA256. The key is secret (``private/release.key``) unless the release was made from a public
``--seed``; such a release is marked ``answers_rebuildable`` and cannot be ranked.
"""

from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import brentq

from icl import libm
from icl.crosscheck import attach, crosscheck_images, smallest_tolerance, with_true_values
from icl.io import write_json, write_manifest, write_npz
from icl.keys import KEY_FILE, ReleaseKey, write_key
from icl.optics.model import ARCSEC
from icl.pro import noise
from icl.pro import references as ref
from icl.pro.catalog import Catalog, default_path, load_catalog
from icl.pro.package import param, scene_from_package
from icl.pro.splits import SPLITS, check_leakage, pools

N_EYES = {"train": 4, "dev": 4, "test": 8, "ood": 3}
N_FAMILIES = {"train": 2, "dev": 2, "test": 4, "ood": 2}
# Detector: 128 pixels of 6 arcsec (+-6.4 arcmin) unless an instance's pupil needs finer pixels (detector_grid).
DET_N, DET_PITCH = 128, 6.0
REDRAWS = 3  # redraw streams per instance (_build)
WITHHELD = "withheld: derive it by a paraxial trace of this package's surfaces"
PUPIL_RANGE = {False: (2.6, 4.0), True: (5.5, 6.5)}  # base eyes' pupil diameters (mm): in distribution, OOD
DET_PITCHES = (6.0, 5.0, 4.5, 4.0)  # arcsec, coarsest first
# The pixel-integration filter exists up to about 0.42 cycles per pixel of intensity band (pitch D / lambda);
# instances stay at or below 0.40, at the shortest wavelength any template uses, with the pupil grown by the
# largest change a template makes to it (E04: +1 mm).
DET_MAX_BAND, DET_LAMBDA_NM, DET_PUPIL_MARGIN_MM = 0.40, 450.0, 1.0
NAVARRO = "Escudero-Sanz & Navarro (1999) schematic eye"
LENS_SPHERICAL = ("; spherical: the schematic eye's crystalline-lens asphericities (conic -0.94 front, +0.96 "
                  "back) are dropped")
CENTRAL_PORT = ("documented product value: central port (KS-AquaPORT) of the Visian ICL V4c / EVO, 0.36 mm "
                "(Shimizu K. et al., Br J Ophthalmol 2012;96:409-412; STAAR Surgical)")
COLLAMER_INDEX = ("documented product value: refractive index of Collamer, 1.45 (STAAR Surgical Visian ICL "
                  "product information); dispersion not modelled")
# The eye's indices are the schematic eye's values near its 589 nm reference (cornea rounded), not 550 nm ones.
INDEX_WAVELENGTH = (" (value near the schematic eye's 589 nm reference wavelength, rounded; used at every "
                    "wavelength: no dispersion)")
LAYERS = ["tear_film", "cornea", "anterior_chamber", "iris_pupil", "icl", "posterior_chamber_gap",
          "crystalline_lens", "vitreous", "retina"]


# ----------------------------------------------------------------------------- base eyes, families

def base_eye(eid: str, key: ReleaseKey, ood: bool) -> dict[str, float]:
    """Synthetic myopic base eye: Navarro surfaces perturbed, axial length solved for a target refraction."""
    rng = key.rng("pro", "base_eye", eid)
    e = {"cornea_anterior_radius": 7.72 + rng.uniform(-0.3, 0.3), "cornea_anterior_conic": -0.26 + rng.uniform(-0.1, 0.1),
         "cornea_thickness": 0.55 + rng.uniform(-0.04, 0.04), "cornea_index": 1.376, "aqueous_index": 1.3374,
         "anterior_chamber_depth": 3.6 + rng.uniform(-0.35, 0.35) - (0.5 if ood else 0.0),
         "lens_anterior_radius": 10.2 + rng.uniform(-0.6, 0.6), "lens_thickness": 4.0 + rng.uniform(-0.25, 0.25),
         "lens_posterior_radius": -6.0 + rng.uniform(-0.3, 0.3), "lens_index": 1.42, "vitreous_index": 1.336,
         "pupil_diameter": rng.uniform(*PUPIL_RANGE[ood]),
         "target_refraction": (rng.uniform(-17.0, -14.0) if ood else rng.uniform(-12.0, -5.0))}
    e["cornea_posterior_radius"] = 6.5 * e["cornea_anterior_radius"] / 7.72
    # The detector serves the widest pupil of the split, so no measured pupil (icl.pro.noise) changes the grid.
    e["detector_pupil_mm"] = PUPIL_RANGE[ood][1]
    e["axial_length"] = brentq(lambda al: ref.ocular_refraction_d(eye_surfaces(e), al) - e["target_refraction"], 18.0, 40.0)
    e["refraction"] = ref.ocular_refraction_d(eye_surfaces(e), e["axial_length"])
    e["power"] = ref.equivalent_power_d(eye_surfaces(e))
    return e


def detector_grid(pupil_mm: float) -> tuple[int, float]:
    """Pixels and pitch (arcsec) of an instance's detector: the coarsest pitch of :data:`DET_PITCHES` whose
    intensity band stays within :data:`DET_MAX_BAND` for the instance's pupil plus the margin, and as many
    pixels as keep the default field (768 arcsec) or just more (an even count).

    Every case of an instance shares it (:func:`make_package` passes the widest pupil of the instance's split),
    so images of one instance, and of its noisy re-builds, can be compared pixel by pixel.
    """
    d = (pupil_mm + DET_PUPIL_MARGIN_MM) * 1e-3
    for pitch in DET_PITCHES:
        if pitch * ARCSEC * d / (DET_LAMBDA_NM * 1e-9) <= DET_MAX_BAND:
            return 2 * math.ceil(DET_N * DET_PITCH / (2 * pitch)), pitch
    raise ValueError(f"no detector pitch in {DET_PITCHES} arcsec samples a {pupil_mm} mm pupil at {DET_LAMBDA_NM} nm")


def eye_surfaces(e: dict) -> list[ref.Surface]:
    """Cornea and crystalline lens as refracting surfaces (vertex depths from the corneal epithelium)."""
    acd = e["anterior_chamber_depth"]
    return [ref.Surface(0.0, e["cornea_anterior_radius"], e["cornea_index"]),
            ref.Surface(e["cornea_thickness"], e["cornea_posterior_radius"], e["aqueous_index"]),
            ref.Surface(acd, e["lens_anterior_radius"], e["lens_index"]),
            ref.Surface(acd + e["lens_thickness"], e["lens_posterior_radius"], e["vitreous_index"])]


def family(fid: str, key: ReleaseKey, ood: bool) -> dict[str, float]:
    """Synthetic ICL design family (no manufacturer surface is used or implied)."""
    rng = key.rng("pro", "family", fid)
    return {"posterior_radius": rng.uniform(8.5, 11.0), "central_thickness": rng.uniform(0.08, 0.14), "index": 1.45,
            "optic_zone": (4.6 if ood else rng.uniform(5.3, 6.0)), "hole": (0.5 if ood else 0.36),
            "vault": rng.uniform(0.3, 0.7), "residual_target": float(rng.choice([0.0, 0.0, -0.25, 0.25]))}


def icl_surfaces(e: dict, f: dict, shift: float = 0.0) -> list[ref.Surface]:
    """Eye with the ICL; the ICL posterior vertex sits ``vault`` in front of the lens, moved forward by ``shift``."""
    s = eye_surfaces(e)
    z_back = e["anterior_chamber_depth"] - f["vault"] - shift
    ics = [ref.Surface(z_back - f["central_thickness"], f["anterior_radius"], f["index"]),
           ref.Surface(z_back, f["posterior_radius"], e["aqueous_index"])]
    return s[:2] + ics + s[2:]


def fit_icl(e: dict, f: dict) -> dict:
    """Solve the ICL anterior radius so the refraction with the ICL equals the family's residual target."""
    f = dict(f)

    def resid(c1: float) -> float:
        f["anterior_radius"] = 1.0 / c1 if c1 else math.inf
        return ref.ocular_refraction_d(icl_surfaces(e, f), e["axial_length"]) - f["residual_target"]

    # Between a meniscus of zero curvature difference (no correction) and a strongly biconcave optic.
    c1 = brentq(resid, -0.3, 1.0 / f["posterior_radius"])
    f["anterior_radius"] = 1.0 / c1 if c1 else math.inf
    f["refraction_with"] = ref.ocular_refraction_d(icl_surfaces(e, f), e["axial_length"])
    f["thin_power"] = e["refraction"] - f["refraction_with"]
    return f


def fit_icl_power(e: dict, f: dict, thin_power: float) -> dict:
    """Re-solve the ICL anterior radius of design ``f`` in eye ``e`` for a stated thin power (D).

    The thin power is refraction without minus refraction with the ICL, so the residual target of the
    solve is ``e["refraction"] - thin_power``; every other design parameter (and the vault) is kept.
    """
    return fit_icl(e, dict(f, residual_target=e["refraction"] - thin_power))


# ----------------------------------------------------------------------------- data packages

def make_package(e: dict, f: dict, eid: str, fid: str, *, sources=None, unknown=(), **over: Any) -> dict:
    """The four data-package files of one case; ``over`` overrides implant values by parameter name.

    A ``thin_power`` override re-solves the ICL anterior radius (:func:`fit_icl_power`), so the thick
    geometry of the package (radii, thickness, index, vault) gives the thin power it states. A non-zero
    ``cylinder`` is a thin-phase toric term: the package's spherical radii carry the sphere only, and the
    cylinder's source says so.
    """
    if "thin_power" in over:
        f = fit_icl_power(e, f, over["thin_power"])
    se = f"synthetic base eye {eid} ({NAVARRO}, perturbed)"
    sf = f"synthetic ICL design family {fid} (not a manufacturer surface)"
    sd = "derived by paraxial trace of this package"
    eye = {"format": "icl-pro-eye/1",
           "cornea_anterior_radius": param(e["cornea_anterior_radius"], "mm", se, uncertainty=0.02),
           "cornea_anterior_conic": param(e["cornea_anterior_conic"], "1", se, uncertainty=0.05),
           "cornea_thickness": param(e["cornea_thickness"], "mm", se, uncertainty=0.005),
           "cornea_posterior_radius": param(e["cornea_posterior_radius"], "mm", se, uncertainty=0.05),
           "cornea_index": param(e["cornea_index"], "1", NAVARRO + INDEX_WAVELENGTH, "documented"),
           "aqueous_index": param(e["aqueous_index"], "1", NAVARRO + INDEX_WAVELENGTH, "documented"),
           "anterior_chamber_depth": param(e["anterior_chamber_depth"], "mm", se + "; corneal epithelium to crystalline lens anterior pole on the visual axis", uncertainty=0.02),
           "lens_anterior_radius": param(e["lens_anterior_radius"], "mm", se + LENS_SPHERICAL, uncertainty=0.2),
           "lens_thickness": param(e["lens_thickness"], "mm", se, uncertainty=0.02),
           "lens_posterior_radius": param(e["lens_posterior_radius"], "mm", se + LENS_SPHERICAL, uncertainty=0.2),
           "lens_index": param(e["lens_index"], "1", NAVARRO + " (homogeneous equivalent)", "documented"),
           "vitreous_index": param(e["vitreous_index"], "1", NAVARRO, "documented"),
           "axial_length": param(e["axial_length"], "mm", se, uncertainty=0.02),
           "pupil_diameter": param(over.pop("pupil_diameter", e["pupil_diameter"]), "mm", se, uncertainty=0.1),
           "thin_eye_excess": param(-e["refraction"], "D",
                                    sd + ": minus the refraction at the corneal vertex without the ICL")}
    imp = {"format": "icl-pro-implant/1",
           "anterior_radius": param(f["anterior_radius"], "mm", sf + "; solved by paraxial trace of this package "
                                    "so that the ICL gives the stated thin_power"),
           "posterior_radius": param(f["posterior_radius"], "mm", sf),
           "central_thickness": param(f["central_thickness"], "mm", sf),
           "index": (param(f["index"], "1", COLLAMER_INDEX, "documented") if f["index"] == 1.45
                     else param(f["index"], "1", sf)),
           "vault": param(f["vault"], "mm", sf + "; ICL posterior vertex to crystalline lens anterior pole", uncertainty=0.03),
           "thin_power": param(f["thin_power"], "D", sd + ": refraction without minus refraction with the ICL"),
           "cylinder": param(0.0, "D", sf), "cylinder_axis": param(0.0, "deg", sf),
           "decentre_x": param(0.0, "mm", sf, uncertainty=0.02), "decentre_y": param(0.0, "mm", sf, uncertainty=0.02),
           "optic_zone_diameter": param(f["optic_zone"], "mm", sf),
           "hole_diameter": (param(f["hole"], "mm", CENTRAL_PORT, "documented") if f["hole"] == 0.36
                             else param(f["hole"], "mm", sf)),
           "hole_model": param("clear", "", sf)}
    for k, v in over.items():
        if k not in imp:
            raise KeyError(k)
        if imp[k]["status"] == "documented" and v != imp[k]["value"]:
            imp[k].update(status="synthetic", source=sf + "; set by this case")
        imp[k]["value"] = v
    if imp["cylinder"]["value"]:
        imp["cylinder"]["source"] = ("thin-phase toric term of this case, not in the spherical radii "
                                     "(anterior_radius and posterior_radius carry the sphere, thin_power)")
    ill = {"format": "icl-pro-illumination/1", "sources": [
        {"id": sid, "x_arcmin": param(x, "arcmin", "task"), "y_arcmin": param(y, "arcmin", "task"),
         "flux": param(1.0, "source flux", "task"), "spectrum": param(spec, "[nm, weight]", "task"),
         "extent": {"kind": "point"}}
        for sid, x, y, spec in (sources or [("L1", 0.0, 0.0, [[550.0, 1.0]])])]}
    n, pitch = detector_grid(e["detector_pupil_mm"])
    det = {"format": "icl-pro-detector/1", "n": param(n, "pixels", "task"),
           "pitch_arcsec": param(pitch, "arcsec", "task")}
    pkg = {"eye": eye, "implant": imp, "illumination": ill, "detector": det}
    for dotted in unknown:
        fname, name = dotted.split(".", 1)
        pkg[fname][name].update(value=None, status="unknown", source="not measured", uncertainty=None)
    return pkg


@dataclass
class Built:
    """What a template builder returns for one instance."""

    cases: dict[str, dict] = field(default_factory=dict)
    task: dict = field(default_factory=dict)
    refs: dict[str, dict] = field(default_factory=dict)
    psf: dict[str, np.ndarray] = field(default_factory=dict)
    public_npz: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    engines: dict[str, str] = field(default_factory=dict)  # case -> engine of its reference PSF
    noise: dict[str, dict] = field(default_factory=dict)  # parameter -> true and stated value (icl.pro.noise)
    redraws: list[dict[str, str]] = field(default_factory=list)  # draws that failed before this one (_build)
    # Fields written as unknown in every case's package (the references used them): what the task asks to
    # derive by tracing the stated geometry, so that no answer is a copy of a stated field.
    withheld: list[str] = field(default_factory=list)


@dataclass
class Ctx:
    """Inputs of a template builder."""

    rng: np.random.Generator
    e: dict
    f: dict
    eid: str
    fid: str
    ood: bool = False

    def pkg(self, **kw: Any) -> dict:
        return make_package(self.e, self.f, self.eid, self.fid, **kw)


VISUAL = ("images are in visual coordinates (+x right, +y up as the observer sees them; detector row i grows "
          "with +y, column j with +x): a source at +x appears at +x, and a minus ICL decentred by +c mm shifts "
          "the light through it by -thin_power * c (radians) toward +c (Prentice's rule, 'with motion')")
THIN_MODEL = {
    "engine": "thin-phase pupil model",
    "pupil_plane": "thin model: the ICL, its central hole and its optic zone are coplanar with the pupil "
                   "(diameter eye.pupil_diameter, the entrance pupil: the iris as seen through the cornea) at "
                   "their stated diameters and decentres; the cornea's magnification of the ICL plane is not "
                   "modelled (seen through the cornea the hole and the zone are larger by 1/m, m the paraxial "
                   "beam-height ratio of the ICL plane, about 0.88-0.94 in these eyes: a 0.36 mm hole appears "
                   "0.38-0.41 mm; the thick model traces that footprint)",
    "powers": "eye.thin_eye_excess and implant.thin_power (and implant.cylinder, acting perpendicular to "
              "implant.cylinder_axis) are refractions at the corneal vertex applied as quadratic phases "
              "W = -(K/2) r^2 in that plane; light through the hole or outside the optic zone sees the eye "
              "excess only",
    "optic_phase": "the optic adds no constant optical path (piston) over the light through the hole: at the "
                   "optic's centre the two wavefronts are equal. A real optic of thickness t adds "
                   "(implant.index - eye.aqueous_index) t, many waves whose fractional part changes the PSF "
                   "by up to about 0.15 relative L1; the thin model sets it to 0",
    "dispersion": "none: no index or power depends on wavelength; wavelength enters through diffraction only "
                  "(the eye's chromatic aberration is known and omitted)",
    "fresnel": "no reflection losses",
    "visual_frame": VISUAL,
}
THICK_MODEL = {
    "engine": "thick sequential eye, traced (paths through the optic, the hole and outside the optic zone), "
              "far field of the traced pupil field",
    "surfaces": "conic cornea front (eye.cornea_anterior_conic), spherical cornea back, spherical ICL surfaces "
                "(implant radii, thickness, index, vault), spherical crystalline lens (the schematic eye's lens "
                "asphericities are dropped), retina at eye.axial_length",
    "stop": "the iris rests on the ICL: the aperture stop lies in the plane of the ICL anterior vertex; "
            "eye.pupil_diameter is the entrance pupil diameter (the stop seen through the cornea)",
    "hole": "a cylinder of implant.hole_diameter through the optic along its axis; a clear hole is filled "
            "with aqueous; the hole footprint on the entrance pupil is traced (the cornea magnifies it)",
    "optic_phase": "traced: every path's optical path is taken to the same reference sphere (centred on the host "
                   "eye's chief-ray point on the retina) and referred to the host eye's axial ray, so the optic "
                   "keeps its extra path over the hole light ((implant.index - eye.aqueous_index) t plus the sag "
                   "terms, about 20 waves at 550 nm); the fractional part sets the interference of the hole's "
                   "and the optic's light in the window: an eighth of a wave moves a 0.5 mm clear hole's "
                   "recorded energy by about 0.008, and dropping the piston (the thin model's convention) by "
                   "0.006-0.010, more than the 0.005 energy tolerance",
    "dispersion": "none: constant indices of the package",
    "fresnel": "off: no reflection losses at any surface, so the energy checks isolate the hole",
    "visual_frame": VISUAL,
}


def _render(b: Built, name: str, pkg: dict, thick: bool = False) -> tuple[np.ndarray, dict, np.ndarray]:
    """Reference PSF of one case: thin-phase by default, the thick sequential eye when ``thick``.

    The model of the reference is stated in task.json (``model``); a thick case whose pupil reaches past the
    optic zone is an error, never a silent switch of engine.
    """
    b.cases[name] = pkg
    if thick:
        from icl.pro import thick as th

        if not _edge_free(pkg):
            raise ValueError(f"case {name}: the pupil reaches past the optic zone; thick references need it inside")
        img, ledger, axis = th.render_thick(pkg)
        b.engines[name] = th.ENGINE
        b.task["model"] = THICK_MODEL
    else:
        img, ledger, axis = ref.render_psf(scene_from_package(pkg))
        b.engines[name] = ref.ENGINE
    b.psf[name] = img
    return img, ledger, axis


def _edge_free(pkg: dict) -> bool:
    """True when no light passes outside the optic zone: the entrance pupil's footprint at the ICL (smaller
    than the pupil: the beam converges behind the cornea) lies within the zone.
    """
    return pkg["eye"]["pupil_diameter"]["value"] <= pkg["implant"]["optic_zone_diameter"]["value"]


def _aperture(pkg: dict) -> float:
    """Limiting aperture of a corrected, centred case (:func:`icl.pro.references.limiting_aperture_mm`)."""
    return ref.limiting_aperture_mm(pkg["eye"]["pupil_diameter"]["value"], pkg["implant"]["optic_zone_diameter"]["value"])


def _energy(ledger: dict) -> dict:
    return {"incident": ledger["source_flux"], "blocked": ledger["blocked_by_aperture"], "recorded": ledger["recorded"]}


def _lam(pkg: dict) -> float:
    return pkg["illumination"]["sources"][0]["spectrum"]["value"][0][0]


# ----------------------------------------------------------------------------- builders, group A

def a01(c: Ctx) -> Built:
    b = Built()
    p = c.pkg()
    b.cases["base"] = p
    e, f = c.e, c.f
    ant = e["anterior_chamber_depth"] - f["vault"] - f["central_thickness"]
    # A ray parallel to the axis through the hole (its height at the ICL is at most 0.6 of the hole radius
    # even before the cornea bends it inward) or through the optic (well outside the hole, inside the pupil).
    through_hole = bool(c.rng.integers(0, 2))
    h = round(float(c.rng.uniform(0.0, 0.3 * f["hole"])) if through_hole else float(c.rng.uniform(0.5, 1.0)), 3)
    layers = [("icl_central_hole" if through_hole and x == "icl" else x) for x in LAYERS]
    # Axial clearance between the ICL back surface and the lens front surface at a radial height (spheres).
    hc = round(float(c.rng.uniform(1.0, 2.0)), 2)
    clear = f["vault"] + float(ref.conic_sag(hc, e["lens_anterior_radius"], 0.0)) - float(
        ref.conic_sag(hc, f["posterior_radius"], 0.0))
    b.task = {"vocabulary": sorted(LAYERS + ["icl_central_hole"]), "ray_height_mm": h, "clearance_height_mm": hc}
    b.refs = {"A01.1": {"case": "base", "value": layers, "key_pair": [["icl", "icl_central_hole"], "crystalline_lens"]},
              "A01.2": {"case": "base", "value": ant - e["cornea_thickness"]},
              "A01.3": {"case": "base", "value": clear}}
    return b


def a02(c: Ctx) -> Built:
    b = Built()
    vault = float(c.rng.choice([c.rng.uniform(0.1, 0.24), c.rng.uniform(0.3, 0.7), c.rng.uniform(0.8, 1.1)]))
    f = fit_icl(c.e, dict(c.f, vault=vault))  # the same residual target at this vault
    p = make_package(c.e, f, c.eid, c.fid)
    post = c.e["anterior_chamber_depth"] - vault
    p["implant"]["posterior_vertex_depth"] = param(post, "mm", "synthetic AS-OCT reading: corneal epithelium to ICL posterior vertex, visual axis", uncertainty=0.02)
    p["implant"]["anterior_vertex_depth"] = param(post - f["central_thickness"], "mm", "synthetic AS-OCT reading: corneal epithelium to ICL anterior vertex, visual axis", uncertainty=0.02)
    p["implant"]["vault"].update(value=None, status="unknown", source="to be derived", uncertainty=None)
    b.cases["base"] = p
    cat = "low" if vault < 0.25 else ("high" if vault > 0.75 else "normal")
    b.task = {"vault_categories": {"low": "below 0.25 mm", "normal": "0.25 to 0.75 mm", "high": "above 0.75 mm"},
              "vault_categories_source": "task convention: the 250-750 micrometre central vault often quoted as "
                                         "the acceptable range; not a clinical decision rule"}
    b.refs = {"A02.1": {"case": "base", "value": vault}, "A02.2": {"case": "base", "value": cat},
              "A02.3": {"case": "base", "value": c.e["anterior_chamber_depth"] - c.e["cornea_thickness"]}}
    return b


def a03(c: Ctx) -> Built:
    b = Built()
    p = c.pkg()
    b.cases["base"] = p
    d, pupil, k, lam = c.f["hole"], c.e["pupil_diameter"], -c.e["refraction"], _lam(p)
    b.task = {"model": THIN_MODEL}
    b.refs = {"A03.1": {"case": "base", "value": (d / pupil) ** 2},
              "A03.2": {"case": "base", "value": (d * 0.5e-3) ** 2 * k / (lam * 1e-9)},
              "A03.3": {"case": "base", "value": d * 1e-3 * k * ref.RAD_TO_ARCMIN}}
    return b


UNKNOWABLE = ["eye.cornea_posterior_radius", "eye.lens_anterior_radius", "eye.lens_posterior_radius",
              "eye.lens_thickness", "implant.anterior_radius", "implant.posterior_radius", "implant.central_thickness",
              "implant.vault", "eye.pupil_diameter"]


_EYE_TRACE = {"eye.cornea_anterior_radius", "eye.cornea_posterior_radius", "eye.cornea_thickness",
              "eye.anterior_chamber_depth", "eye.lens_anterior_radius", "eye.lens_posterior_radius",
              "eye.lens_thickness"}
_ICL_TRACE = {"implant.anterior_radius", "implant.posterior_radius", "implant.central_thickness", "implant.vault"}
# Derived quantities and the parameters each needs (the definitions in task.json say how each is computed).
A04_DERIVED = {
    "icl_to_endothelium_mm": ({"eye.cornea_thickness", "eye.anterior_chamber_depth", "implant.vault",
                               "implant.central_thickness"},
                              "axial distance from the corneal endothelium to the ICL anterior vertex"),
    "eye_power_d": (_EYE_TRACE, "equivalent power of the eye without the ICL, paraxial trace of its surfaces"),
    "refraction_without_icl_d": (_EYE_TRACE | {"eye.axial_length"},
                                 "ocular refraction at the corneal vertex without the ICL, paraxial trace"),
    "refraction_with_icl_d": (_EYE_TRACE | _ICL_TRACE | {"eye.axial_length"},
                              "ocular refraction at the corneal vertex with the ICL, paraxial trace of every "
                              "surface (not from thin_power)"),
    "hole_area_fraction": ({"eye.pupil_diameter"}, "thin model: hole area over pupil area"),
    "icl_posterior_vertex_depth_mm": ({"eye.anterior_chamber_depth", "implant.vault"},
                                      "depth of the ICL posterior vertex below the corneal epithelium"),
}


def a04(c: Ctx) -> Built:
    b = Built()
    unknown = sorted(c.rng.choice(UNKNOWABLE, size=int(c.rng.integers(2, 5)), replace=False).tolist())
    p = c.pkg(unknown=unknown)
    b.cases["base"] = p
    sources = sorted({v["source"] for fobj in p.values() for v in fobj.values() if isinstance(v, dict) and "source" in v})
    blocked = sorted(k for k, (needs, _) in A04_DERIVED.items() if needs & set(unknown))
    b.task = {"derived_quantities": {k: text for k, (_, text) in A04_DERIVED.items()}}
    b.refs = {"A04.1": {"case": "base", "value": blocked},
              "A04.2": {"case": "base", "guarded": unknown + [k for k in UNKNOWABLE if k.startswith("implant.")],
                        "input_sources": sources}}
    return b


A05_VOCAB = ["axial_length", "corneal_power", "crystalline_lens_power", "pupil_diameter", "higher_order_aberrations",
             "scatter", "tear_film", "refraction"]


def a05(c: Ctx) -> Built:
    b = Built()
    rx, kc, sep = c.e["refraction"], ref.equivalent_power_d(eye_surfaces(c.e)[:2]), 5.7
    lens_lo, lens_hi = 19.0, 23.0
    given = {"refraction", "corneal_power"} | set(c.rng.choice(["pupil_diameter", "higher_order_aberrations", "tear_film"],
                                                               size=int(c.rng.integers(0, 3)), replace=False).tolist())

    def axial(fc: float, fl: float) -> float:  # thin cornea, thin lens at sep mm, n = 1.336 behind
        n = 1.336
        v = rx + fc  # vergence just after the cornea (in air units -> reduced)
        v2 = n / (n / v - sep * 1e-3) if v != 0 else 0.0
        return sep + n / (v2 + fl) * 1e3

    true_fl = c.rng.uniform(lens_lo, lens_hi)
    corners = [axial(fc, fl) for fc in (kc - 0.25, kc + 0.25) for fl in (lens_lo, lens_hi)]
    # The package withholds what the task says the inputs cannot determine (axial length, the lens that
    # sets the crystalline power, the pupil unless it is given); its cornea gives the stated corneal power.
    hidden = ["eye.axial_length", "eye.lens_anterior_radius", "eye.lens_posterior_radius", "eye.lens_thickness",
              "eye.lens_index"]
    if "pupil_diameter" not in given:
        hidden.append("eye.pupil_diameter")
    p = c.pkg(unknown=hidden)
    b.cases["base"] = p
    b.task = {"reduced_eye": "thin cornea of power K (D) in air, thin crystalline lens of power F_L (D) 5.7 mm behind it, "
                             "medium index 1.336 behind the cornea; axial length from the cornea to the image of the "
                             "far point", "vocabulary": A05_VOCAB,
              "given": {"refraction_d": {"value": rx, "uncertainty": 0.0},
                        "corneal_power_d": {"value": kc, "uncertainty": 0.25},
                        "crystalline_lens_power_range_d": [lens_lo, lens_hi]},
              "also_given": sorted(given - {"refraction", "corneal_power"})}
    b.refs = {"A05.1": {"case": "base", "value": [min(corners), max(corners)], "truth": axial(kc, true_fl)},
              "A05.2": {"case": "base", "value": sorted(set(A05_VOCAB) - given)}}
    return b


def a06(c: Ctx) -> Built:
    b = Built()
    pupils = [round(c.rng.uniform(2.5, 3.2), 2), round(c.rng.uniform(4.0, 5.0), 2), round(c.rng.uniform(5.5, 7.0), 2)]
    dec = [round(c.rng.uniform(-0.3, 0.3), 3), round(c.rng.uniform(-0.3, 0.3), 3)]
    p = c.pkg(decentre_x=dec[0], decentre_y=dec[1])
    p["eye"]["pupil_diameters_by_light_level"] = param({"photopic": pupils[0], "mesopic": pupils[1], "scotopic": pupils[2]},
                                                       "mm", f"synthetic base eye {c.eid}", uncertainty=0.2)
    b.cases["base"] = p
    oz = c.f["optic_zone"]
    edge = ["yes" if d / 2 > oz / 2 - math.hypot(*dec) else "no" for d in pupils]
    b.task = {"order": ["photopic", "mesopic", "scotopic"], "vocabulary": ["yes", "no"], "model": THIN_MODEL}
    b.refs = {"A06.1": {"case": "base", "value": [(c.f["hole"] / d) ** 2 for d in pupils]},
              "A06.2": {"case": "base", "value": edge}}
    return b


# ----------------------------------------------------------------------------- group B

INTERFACES = [("air", "cornea"), ("cornea", "aqueous"), ("aqueous", "icl"), ("icl", "aqueous"),
              ("aqueous", "crystalline_lens"), ("crystalline_lens", "vitreous")]


def b01(c: Ctx) -> Built:
    b = Built()
    # The ICL leaves a residual of 0.15-0.6 D of either sign: with the families' targets (0, 0, -0.25, +0.25
    # D) a refraction of 0 written without any trace passed B01.3 in half the instances.
    residual = float(c.rng.choice([-1.0, 1.0]) * c.rng.uniform(0.15, 0.6))
    f = fit_icl(c.e, dict(c.f, residual_target=residual))
    b.cases["base"] = make_package(c.e, f, c.eid, c.fid)
    # The package's thin fields are these very refractions (minus the excess, minus excess plus power).
    b.withheld = ["eye.thin_eye_excess", "implant.thin_power"]
    al = c.e["axial_length"]
    b.refs = {"B01.1": {"case": "base", "value": c.e["power"]},
              "B01.2": {"case": "base", "value": ref.ocular_refraction_d(eye_surfaces(c.e), al)},
              "B01.3": {"case": "base", "value": ref.ocular_refraction_d(icl_surfaces(c.e, f), al)}}
    return b


def b02(c: Ctx) -> Built:
    b = Built()
    b.cases["base"] = c.pkg()
    n = {"air": 1.0, "cornea": c.e["cornea_index"], "aqueous": c.e["aqueous_index"], "icl": c.f["index"],
         "crystalline_lens": c.e["lens_index"], "vitreous": c.e["vitreous_index"]}
    # Each interface is met at its own angle of incidence (an oblique ray): the reflectances depend on the
    # instance, not only on the media.
    angles = [round(float(c.rng.uniform(0.0, 35.0)), 1) for _ in INTERFACES]
    r = [ref.fresnel_unpolarised(n[a], n[z], th) for (a, z), th in zip(INTERFACES, angles)]
    b.task = {"interfaces": [f"{a}|{z}" for a, z in INTERFACES], "incidence_deg": angles}
    # Ghost between the two ICL surfaces (adjacent: no interface between them) relative to the direct beam.
    b.refs = {"B02.1": {"case": "base", "value": r}, "B02.2": {"case": "base", "value": r[2] * r[3]},
              "B02.3": {"case": "base", "value": float(np.prod([1 - x for x in r]))}}
    return b


def b03(c: Ctx) -> Built:
    b = Built()
    dec = [round(c.rng.uniform(-0.1, 0.1), 3), round(c.rng.uniform(-0.1, 0.1), 3)]
    src = [round(c.rng.uniform(-2, 2), 2), round(c.rng.uniform(-2, 2), 2)]
    img, _, axis = _render(b, "base", c.pkg(decentre_x=dec[0], decentre_y=dec[1], sources=[("L1", *src, [[550.0, 1.0]])]))
    b.refs = {"B03.1": {"cases": ["base"]}, "B03.2": {"case": "base", "value": ref.centroid_arcmin(img, axis)}}
    return b


def b04(c: Ctx) -> Built:
    b = Built()
    b.cases["base"] = c.pkg()
    heights = [0.5, 1.0, 1.5, 2.0, 2.5]
    h = round(float(c.rng.uniform(1.0, 2.0)), 2)
    r, q, n = c.e["cornea_anterior_radius"], c.e["cornea_anterior_conic"], c.e["cornea_index"]
    b.task = {"sag_heights_mm": heights, "ray_height_mm": h}
    b.refs = {"B04.1": {"case": "base", "value": ref.conic_sag(np.array(heights), r, q).tolist()},
              "B04.2": {"case": "base", "value": ref.longitudinal_sa(r, q, n, h)}}
    return b


def b05(c: Ctx) -> Built:
    b = Built()
    dec = [round(c.rng.uniform(-0.12, 0.12), 3), round(c.rng.uniform(-0.12, 0.12), 3)]
    _render(b, "base", c.pkg(decentre_x=dec[0], decentre_y=dec[1]))
    k = c.f["thin_power"]
    b.refs = {"B05.1": {"case": "base", "value": math.hypot(*dec) * 0.1 * abs(k)},
              "B05.2": {"case": "base", "value": [ref.prentice_shift_arcmin(k, d) for d in dec]},
              "B05.3": {"cases": ["base"]}}
    return b


def b06(c: Ctx) -> Built:
    b = Built()
    b.cases["base"] = c.pkg()
    shift = round(float(c.rng.uniform(0.1, 0.3)), 3)
    moved = ref.ocular_refraction_d(icl_surfaces(c.e, c.f, shift), c.e["axial_length"])
    b.task = {"forward_movement_mm": shift}
    b.withheld = ["implant.thin_power"]  # B06.2 asks for it: it is traced from the ICL's stated surfaces
    b.refs = {"B06.1": {"case": "base", "value": moved - c.f["refraction_with"]},
              "B06.2": {"case": "base", "value": c.f["thin_power"]}}
    return b


# ----------------------------------------------------------------------------- group C

def c01(c: Ctx) -> Built:
    b = Built()
    lam = float(c.rng.choice([500.0, 550.0, 600.0]))
    p = c.pkg(hole_model="solid", thin_power=-(-c.e["refraction"]), sources=[("L1", 0.0, 0.0, [[lam, 1.0]])])
    _, led, _ = _render(b, "base", p)
    d = _aperture(p)
    b.refs = {"C01.1": {"cases": ["base"]}, "C01.2": {"case": "base", "value": ref.airy_radius_arcmin(ref.AIRY_DARK[0], lam, d)},
              "C01.3": {"cases": {"base": _energy(led)}}}
    return b


def c02(c: Ctx) -> Built:
    b = Built()
    res = float(c.rng.choice([-1, 1]) * c.rng.uniform(0.25, 1.0))
    k = -c.e["refraction"]
    p = c.pkg(thin_power=res - k)
    _, led, _ = _render(b, "base", p)
    b.refs = {"C02.1": {"cases": ["base"]},
              "C02.2": {"case": "base", "value": ref.strehl_defocus(res, p["eye"]["pupil_diameter"]["value"], 550.0)},
              "C02.3": {"cases": {"base": _energy(led)}}}
    return b


def c03(c: Ctx) -> Built:
    b = Built()
    cyl, axis = round(float(c.rng.uniform(0.4, 0.8)), 2), round(float(c.rng.uniform(0, 180)), 1)
    # A residual sphere beside the cylinder: with a zero spherical equivalent the blur is round and the
    # second moments have no major axis.
    sph = round(float(c.rng.choice([-1, 1]) * c.rng.uniform(0.3, 0.5)), 2)
    img, led, ax = _render(b, "base", c.pkg(hole_model="solid", thin_power=c.e["refraction"] - cyl / 2 + sph,
                                            cylinder=cyl, cylinder_axis=axis))
    b.refs = {"C03.1": {"cases": ["base"]}, "C03.2": {"case": "base", "value": ref.orientation_deg(img, ax)},
              "C03.3": {"cases": {"base": _energy(led)}}}
    return b


def c04(c: Ctx) -> Built:
    b = Built()
    spec = [[450.0, round(float(c.rng.uniform(0.2, 0.4)), 3)], [550.0, 0.4], [650.0, round(float(c.rng.uniform(0.2, 0.4)), 3)]]
    # Full correction (no residual sphere: 0.25 D is about 0.9 waves at 450 nm, which would fill the first
    # dark ring), so each wavelength's first dark ring is the Airy zero of the limiting aperture.
    p = c.pkg(hole_model="solid", thin_power=c.e["refraction"], sources=[("L1", 0.0, 0.0, spec)])
    _, led, _ = _render(b, "base", p)
    d = _aperture(p)
    b.refs = {"C04.1": {"cases": ["base"]},
              "C04.2": {"case": "base", "value": [ref.airy_radius_arcmin(ref.AIRY_DARK[0], w, d) for w, _ in spec]},
              "C04.3": {"cases": {"base": _energy(led)}}}
    return b


def min_rms_power(c: Ctx, pupil: float) -> tuple[float, dict[str, float]]:
    """ICL thin power whose traced solid optic has no Zernike defocus over ``pupil`` (minimum-RMS focus).

    Paraxial focus leaves the defocus that balances the eye's spherical aberration (about 0.3 waves at
    3.5 mm), which would swamp the hole's effect; at minimum-RMS focus only the higher orders remain.
    """
    from icl.pro import thick as th

    def defocus(tp: float) -> float:
        return th.solid_wavefront_zernike(c.pkg(thin_power=tp, hole_model="solid", pupil_diameter=pupil))["defocus"]

    x0, x1 = c.e["refraction"], c.e["refraction"] - 0.25
    f0, f1 = defocus(x0), defocus(x1)
    for _ in range(4):  # secant: the defocus term is nearly linear in the power
        x0, f0, x1 = x1, f1, x1 - f1 * (x1 - x0) / (f1 - f0)
        f1 = defocus(x1)
        if abs(f1) < 1e-4:
            break
    terms = th.solid_wavefront_zernike(c.pkg(thin_power=x1, hole_model="solid", pupil_diameter=pupil))
    return float(x1), terms


def _hole_variants(c: Ctx, b: Built, positions: dict[str, list[float]], pupil: float) -> dict[str, dict]:
    power, terms = min_rms_power(c, pupil)
    energy = {}
    for model in ("solid", "clear", "black", "index_matched"):
        for tag, pos in positions.items():
            name = f"{model}_{tag}" if len(positions) > 1 else model
            # Hole causality is a thick-eye question: the hole's footprint, its wall and the optic's real
            # surfaces are traced (icl.pro.thick), not folded into a thin phase.
            pkg = c.pkg(hole_model=model, sources=[("L1", *pos, [[550.0, 1.0]])], pupil_diameter=pupil,
                        thin_power=power)
            _, led, _ = _render(b, name, pkg, thick=True)
            energy[name] = _energy(led)
    b.task["model"] = dict(THICK_MODEL, focus=(
        "implant.anterior_radius is solved so that the traced on-axis wavefront of the solid optic over the "
        "entrance pupil (550 nm) has no Zernike defocus Z(2,0): minimum-RMS focus, not paraxial focus; what "
        f"remains is spherical aberration, Z(4,0) = {terms['spherical']:.4f} and Z(6,0) = "
        f"{terms['secondary_spherical']:.4f} waves (RMS {terms['rms']:.4f} waves)"))
    return energy


def _rel_l1(a: np.ndarray, bb: np.ndarray) -> float:
    return float(np.abs(a - bb).sum() / np.abs(bb).sum())


def c05(c: Ctx) -> Built:
    b = Built()
    off = [round(float(c.rng.uniform(1.5, 3.0)), 2), round(float(c.rng.uniform(-1.0, 1.0)), 2)]
    # Out of distribution: the larger hole with a 2.5 mm pupil (the pupil stays inside the optic zone).
    energy = _hole_variants(c, b, {"on": [0.0, 0.0], "off": off}, 2.5 if c.ood else c.e["pupil_diameter"])
    b.refs = {"C05.1": {"cases": sorted(b.cases)}, "C05.2": {"cases": energy},
              "C05.3": {"equal": [["index_matched_on", "solid_on"], ["index_matched_off", "solid_off"]],
                        "differ": [["clear_on", "solid_on", _rel_l1(b.psf["clear_on"], b.psf["solid_on"])]]}}
    return b


def c06(c: Ctx) -> Built:
    b = Built()
    pupil, oz = round(float(c.rng.uniform(6.0, 7.0)), 2), round(float(c.rng.uniform(5.0, 5.6)), 2)
    _, led, _ = _render(b, "base", c.pkg(pupil_diameter=pupil, optic_zone_diameter=oz))
    k = -c.e["refraction"]
    b.refs = {"C06.1": {"cases": ["base"]}, "C06.2": {"case": "base", "value": ref.annulus_fraction(pupil, oz)},
              "C06.3": {"case": "base", "value": [k * r * 0.5e-3 * ref.RAD_TO_ARCMIN for r in (oz, pupil)]},
              "C06.4": {"cases": {"base": _energy(led)}}}
    return b


# ----------------------------------------------------------------------------- group D

def d01(c: Ctx) -> Built:
    b = Built()
    dec = [round(c.rng.uniform(-0.1, 0.1), 3), round(c.rng.uniform(-0.1, 0.1), 3)]
    k = c.e["refraction"]  # the ICL fully corrects the thin eye here
    _render(b, "centred", c.pkg(thin_power=k))
    _render(b, "decentred", c.pkg(thin_power=k, decentre_x=dec[0], decentre_y=dec[1]))
    b.refs = {"D01.1": {"cases": ["decentred"]},
              "D01.2": {"case": "decentred", "value": [ref.prentice_shift_arcmin(k, d) for d in dec]}}
    return b


def d02(c: Ctx) -> Built:
    b = Built()
    energy = _hole_variants(c, b, {"on": [0.0, 0.0]}, round(float(c.rng.uniform(2.5, 3.5)), 2))
    rec = {k: v["recorded"] for k, v in energy.items()}
    b.refs = {"D02.1": {"cases": sorted(b.cases)},
              "D02.2": {"case": "solid", "value": [rec[m] - rec["solid"] for m in ("clear", "black", "index_matched")]},
              "D02.3": {"equal": [["index_matched", "solid"]],
                        "differ": [["clear", "solid", _rel_l1(b.psf["clear"], b.psf["solid"])]]}}
    return b


def d03(c: Ctx) -> Built:
    b = Built()
    pupils = [round(float(c.rng.uniform(2.8, 3.2)), 2), round(float(c.rng.uniform(4.6, 5.0)), 2)]
    rec = []
    for name, d in zip(("small", "large"), pupils):
        _, led, _ = _render(b, name, c.pkg(pupil_diameter=d))
        rec.append(led["recorded"])
    b.task = {"order": ["small", "large"]}
    b.refs = {"D03.1": {"cases": ["small", "large"]},
              "D03.2": {"case": "small", "value": [(c.f["hole"] / d) ** 2 for d in pupils]},
              "D03.3": {"case": "small", "value": rec}}
    return b


def _rotate(v: list[float], quarter: int) -> list[float]:
    a = math.radians(90 * quarter)
    return [round(v[0] * math.cos(a) - v[1] * math.sin(a), 12), round(v[0] * math.sin(a) + v[1] * math.cos(a), 12)]


# Pairs of D04.3: (first case, second case, whether the second is the first rotated by the stated angle).
D04_PAIRS = {"on_axis_all_rotated": ("on_base", "on_rotated", "yes"),
             "off_axis_source_fixed": ("off_base", "off_rotated", "no"),
             "off_axis_source_rotated": ("off_base", "off_rotated_source", "yes"),
             "cylinder_axis_only": ("on_base", "on_cylinder_only", "no")}


def d04(c: Ctx) -> Built:
    b = Built()
    quarter = int(c.rng.integers(1, 4))
    cyl, axis = round(float(c.rng.uniform(0.3, 0.6)), 2), round(float(c.rng.uniform(0, 90)), 1)
    # At least 0.02 mm, so a decentre left unrotated moves the pattern by about half an arcmin or more.
    rad, ang = float(c.rng.uniform(0.02, 0.05)), float(c.rng.uniform(0, 2 * math.pi))
    dec = [round(rad * math.cos(ang), 3), round(rad * math.sin(ang), 3)]
    src = [round(float(c.rng.uniform(2.0, 3.0)), 2), 0.0]
    rot, rot_src = _rotate(dec, quarter), _rotate(src, quarter)
    axis_rot = (axis + 90 * quarter) % 180
    base = dict(hole_model="clear", cylinder=cyl, thin_power=c.e["refraction"] - cyl / 2)

    def case(ax: float, d: list[float], s_xy: list[float] | None = None) -> dict:
        sources = [("L1", *s_xy, [[550.0, 1.0]])] if s_xy else None
        return c.pkg(cylinder_axis=ax, decentre_x=d[0], decentre_y=d[1], sources=sources, **base)

    _render(b, "on_base", case(axis, dec))
    _render(b, "on_rotated", case(axis_rot, rot))
    _render(b, "off_base", case(axis, dec, src))
    _render(b, "off_rotated", case(axis_rot, rot, src))
    b.cases["off_rotated_source"] = case(axis_rot, rot, rot_src)
    b.cases["on_cylinder_only"] = case(axis_rot, dec)
    names = c.rng.choice(list(D04_PAIRS), 3, replace=False).tolist()  # two "yes" and two "no" types: both occur
    b.task = {"rotation_deg": 90 * quarter, "pairs": {k: list(D04_PAIRS[k][:2]) for k in names},
              "vocabulary": ["yes", "no"], "order": names}
    b.refs = {"D04.1": {"base": "on_base", "rotated": "on_rotated", "quarter_turns": quarter},
              "D04.2": {"cases": ["off_base", "off_rotated"]},
              "D04.3": {"case": "on_base", "value": [D04_PAIRS[k][2] for k in names]}}
    return b


def d05(c: Ctx) -> Built:
    b = Built()
    lam2 = float(c.rng.choice([450.0, 650.0]))
    for name, lam in (("first", 550.0), ("second", lam2)):
        _render(b, name, c.pkg(sources=[("L1", 0.0, 0.0, [[lam, 1.0]])]))
    k, a = -c.e["refraction"], c.f["hole"] * 0.5e-3
    b.refs = {"D05.1": {"cases": ["first", "second"]}, "D05.2": {"case": "first", "value": lam2 / 550.0},
              "D05.3": {"case": "first", "value": [a * a * k / (lam * 1e-9) for lam in (550.0, lam2)]}}
    return b


def d06(c: Ctx) -> Built:
    b = Built()
    shift = round(float(c.rng.uniform(0.1, 0.3)), 3)
    moved = ref.ocular_refraction_d(icl_surfaces(c.e, c.f, shift), c.e["axial_length"])
    b.cases["base"] = c.pkg()
    # The same lens (same radii) moved forward: the eye is unchanged and the ICL's thin power is that of its
    # new place (refraction without minus refraction with the ICL), so the thin residual is minus ``moved``.
    f_moved = dict(c.f, vault=c.f["vault"] + shift, refraction_with=moved,
                   thin_power=c.e["refraction"] - moved)
    _render(b, "moved", make_package(c.e, f_moved, c.eid, c.fid))
    b.task = {"forward_movement_mm": shift}
    # The moved ICL's thin power would give the residual away (minus thin_eye_excess minus thin_power): it
    # is traced from the stated surfaces and the moved vault; the PSF and the Strehl ratio also read the
    # measured pupil (icl.pro.noise: noisy_inputs).
    b.withheld = ["implant.thin_power"]
    pupil = ["eye.pupil_diameter"]
    b.refs = {"D06.1": {"case": "moved", "value": moved},
              "D06.2": {"cases": ["moved"], "noisy_inputs": pupil},
              "D06.3": {"case": "moved", "value": ref.strehl_defocus(-moved, c.e["pupil_diameter"], 550.0),
                        "noisy_inputs": pupil}}
    return b


# ----------------------------------------------------------------------------- group E

def _solution_scene(pkg: dict, sol: dict) -> dict:
    """Scene of one E01 parameter set: the package with the set's decentre and residual sphere, sources moved
    by the fixation offset (through :func:`scene_from_package`, so in the visual frame).
    """
    import copy

    q = copy.deepcopy(pkg)
    k = q["eye"]["thin_eye_excess"]["value"]
    q["implant"]["thin_power"]["value"] = sol["residual_sphere_d"] - k
    q["implant"]["decentre_x"]["value"], q["implant"]["decentre_y"]["value"] = (float(v) for v in sol["decentre_mm"])
    scene = scene_from_package(q)
    for s in scene["sources"]:
        s["x_arcmin"] += sol["fixation_offset_arcmin"][0]
        s["y_arcmin"] += sol["fixation_offset_arcmin"][1]
    return scene


def exposed(img: np.ndarray, exposure: float) -> np.ndarray:
    """Night-photo rendering of a linear image: scaled by ``exposure`` and clipped at 1."""
    return np.minimum(img * exposure, 1.0)


# E01 queries: whether the clipped observation with the stated inputs determines each quantity. The residual
# sphere (sign included: the hole's uncorrected light and the clipping break the sign symmetry) and the
# total pattern shift are determined; decentre and fixation offset trade against each other. The package
# withholds the ICL's power, anterior radius and vault: the thin-phase image fixes the thin power only, and
# the paraxial solve gives a different anterior radius for each vault, so neither is identifiable.
E01_QUERIES = {"residual_sphere_d": "determined", "residual_sphere_sign": "determined",
               "pattern_shift_x_arcmin": "determined", "decentre_x_mm": "not_identifiable",
               "fixation_offset_x_arcmin": "not_identifiable", "vault_mm": "not_identifiable",
               "icl_anterior_radius_mm": "not_identifiable"}
E01_STEPS = (0.036, 0.03, 0.024, 0.018, 0.012)  # mm, partner decentre steps tried in turn
E01_TOLERANCE = 0.03  # the catalogue's E01.1 tolerance (relative L1 of the exposed images)
# Extra measurements: exactly one that breaks the decentre/fixation trade is offered per instance.
E01_BREAKERS = ["pupil_position_imaging", "retroillumination_of_icl_position", "purkinje_image_icl_centration"]
E01_OTHERS = ["repeat_same_exposure", "longer_exposure", "through_focus_trial_lens", "narrower_spectral_filter",
              "second_wavelength"]
E01_MEASUREMENTS = {
    "pupil_position_imaging": "image of the pupil with the ICL: measures the ICL centre against the pupil",
    "retroillumination_of_icl_position": "retroillumination photograph: measures the ICL decentre in the pupil",
    "purkinje_image_icl_centration": "Purkinje images of the ICL surfaces: measure the ICL decentre",
    "repeat_same_exposure": "the same observation again",
    "longer_exposure": "the same observation at a ten times longer exposure",
    "through_focus_trial_lens": "observations with trial lenses of -0.5, 0 and +0.5 D in the spectacle plane",
    "narrower_spectral_filter": "the same observation through a 10 nm filter",
    "second_wavelength": "the same observation at 650 nm",
}


def e01(c: Ctx) -> Built:
    b = Built()
    k = c.e["refraction"]
    # Out of distribution the pupil stays inside the 4.6 mm optic zone: light past the zone edge would
    # locate the ICL and make the decentre identifiable.
    p = c.pkg(thin_power=k, **({"pupil_diameter": 4.0} if c.ood else {}))
    b.cases["base"] = p
    dec = [round(float(c.rng.choice([-1, 1]) * c.rng.uniform(0.05, 0.1)), 3), 0.0]
    res = round(float(c.rng.choice([-1, 1]) * c.rng.uniform(0.3, 0.6)), 2)
    truth = {"decentre_mm": dec, "residual_sphere_d": res, "fixation_offset_arcmin": [0.0, 0.0]}
    img, _, axis = ref.render_psf(_solution_scene(p, truth))
    exposure = 50.0 / float(img.max())
    obs = exposed(img, exposure)
    # The degenerate partner: the decentre moved toward the centre, the fixation offset taking up the
    # Prentice shift. The coherent mix of the hole's light with the corrected light carries a little of the
    # decentre (more at high myopia), so the step is the largest of E01_STEPS whose partner fits within 0.9
    # of the tolerance; "structurally different" is a decentre difference of 1 / 1.2 of that step.
    thin = res - p["eye"]["thin_eye_excess"]["value"]

    def misfit_of(sol: dict) -> float:
        return _rel_l1(exposed(ref.render_psf(_solution_scene(p, sol))[0], exposure), obs)

    for size in E01_STEPS:
        step = -size if dec[0] > 0 else size
        partner = {"decentre_mm": [round(dec[0] + step, 3), 0.0], "residual_sphere_d": res,
                   "fixation_offset_arcmin": [round(-ref.prentice_shift_arcmin(thin, step), 4), 0.0]}
        fit = misfit_of(partner)
        if fit <= 0.9 * E01_TOLERANCE:
            break
    else:
        raise ValueError(f"E01: no decentre/fixation partner fits (misfit {fit:.4f} at a {size} mm step)")
    misfit = [fit, misfit_of(dict(truth, residual_sphere_d=-res))]
    scales = {"decentre_mm": round(size / 1.2, 4), "residual_sphere_d": 0.2, "fixation_offset_arcmin": 0.5}
    b.public_npz["observation"] = {"image": obs, "x_arcmin": axis, "y_arcmin": axis, "exposure": np.array(exposure)}
    # What the observation is to find is not stated (before, the package stated a centred, fully correcting
    # ICL while the truth was decentred with a residual).
    for name in ("decentre_x", "decentre_y", "thin_power"):
        p["implant"][name].update(value=None, status="unknown", source="to be inferred", uncertainty=None)
    p["implant"]["anterior_radius"].update(value=None, status="unknown", uncertainty=None,
                                           source="not given: with the other radii and the vault it would state thin_power")
    p["implant"]["vault"].update(value=None, status="unknown", source="not measured", uncertainty=None)
    queries = c.rng.choice(list(E01_QUERIES), 4, replace=False).tolist()
    menu = [str(c.rng.choice(E01_BREAKERS))] + c.rng.choice(E01_OTHERS, 3, replace=False).tolist()
    c.rng.shuffle(menu)
    b.task = {"observation": "observation.npz: image = min(exposure * linear image, 1); the source is nominally at (0, 0)",
              "model": THIN_MODEL, "menu": {m: E01_MEASUREMENTS[m] for m in menu},
              "queries": queries, "query_vocabulary": ["determined", "not_identifiable"],
              "identifiability": "a quantity is determined when every parameter set that reproduces the observation "
                                 "within the E01.1 tolerance, with the stated inputs and model, gives it the same "
                                 "value; the package withholds the ICL's thin power, anterior radius and vault (the "
                                 "thin model's image depends on the thin power only; the paraxial solve of the "
                                 "anterior radius needs the vault)",
              "structural_scales": scales,
              "solution_fields": {"decentre_mm": "[u, v]", "residual_sphere_d": "eye excess + ICL power",
                                  "fixation_offset_arcmin": "[x, y]"}}
    b.refs = {"E01.1": {"case": "base", "truth": truth, "partner": partner, "exposure": exposure,
                        "misfit": {"partner": misfit[0], "sign_flipped": misfit[1]},
                        "scales": scales},
              "E01.2": {"case": "base", "value": [E01_QUERIES[q] for q in queries]},
              "E01.3": {"case": "base", "accept": [m for m in menu if m in E01_BREAKERS]}}
    return b


def e02(c: Ctx) -> Built:
    b = Built()
    hole = round(float(c.rng.uniform(0.25, 0.45)), 3)
    res = round(float(c.rng.choice([-1, 1]) * c.rng.uniform(0.3, 1.0)), 2)
    k = -c.e["refraction"]
    p = c.pkg(thin_power=res - k, hole_diameter=hole)
    img, _, axis = ref.render_psf(scene_from_package(p))
    photons = 1e6
    noisy = c.rng.poisson(img * photons).astype(float)
    for name in ("thin_power", "hole_diameter"):
        p["implant"][name].update(value=None, status="unknown", source="to be inferred", uncertainty=None)
    # The anterior radius fixes the thin power by paraxial trace, so it is withheld with it.
    p["implant"]["anterior_radius"].update(value=None, status="unknown", uncertainty=None,
                                           source="not given: with the other radii it would state thin_power")
    b.cases["base"] = p
    b.public_npz["observation"] = {"counts": noisy, "x_arcmin": axis, "y_arcmin": axis, "photons": np.array(photons)}
    b.task = {"observation": "observation.npz: Poisson counts of a linear PSF times the photon number",
              "residual_sphere_definition": "eye excess + ICL thin power (D)"}
    b.refs = {"E02.1": {"case": "base", "truth": abs(res), "max_width": 0.5},
              "E02.2": {"case": "base", "truth": hole, "max_width": 0.15}}
    return b


def e03(c: Ctx) -> Built:
    b = Built()
    k = c.e["refraction"]
    dec = [round(c.rng.uniform(-0.08, 0.08), 3), round(c.rng.uniform(-0.08, 0.08), 3)]
    srcs = [("L1", -2.0, 0.0, [[550.0, 1.0]]), ("L2", 2.0, 1.0, [[550.0, 0.5]])]
    p = c.pkg(thin_power=k, decentre_x=dec[0], decentre_y=dec[1], sources=srcs)
    img, _, axis = ref.render_psf(scene_from_package(p))
    for name in ("decentre_x", "decentre_y"):
        p["implant"][name].update(value=None, status="unknown", source="to be inferred", uncertainty=None)
    b.cases["base"] = p
    b.public_npz["observation"] = {"image": img, "x_arcmin": axis, "y_arcmin": axis}
    b.task = {"fixation_uncertainty_arcmin": 1.0,
              "fixation_uncertainty": "a bound, not a standard deviation: the eye's fixation (one offset shared by "
                                      "both sources) lies within 1.0 arcmin of the nominal source positions in x "
                                      "and in y, with no distribution implied; a fixation offset and a decentre "
                                      "shift the pattern alike (Prentice), so an interval holds every decentre the "
                                      "observation allows for some offset within the bound"}
    b.refs = {"E03.1": {"case": "base", "truth": dec[0], "max_width": 0.12},
              "E03.2": {"case": "base", "truth": dec[1], "max_width": 0.12}}
    return b


E04_MENU = {"repeat_measurement": ({}, "the same PSF again"),
            "pupil_plus_1mm": ({"pupil": 1.0}, "pupil 1 mm larger"),
            "pupil_minus_1mm": ({"pupil": -1.0}, "pupil 1 mm smaller"),
            "trial_lens_plus_0.5D": ({"lens": 0.5}, "+0.5 D spherical trial lens over the whole pupil (hole and "
                                     "optic alike: it adds 0.5 D to the eye excess)"),
            "wavelength_450nm": ({"lam": 450.0}, "source at 450 nm (no dispersion: diffraction changes only)")}
# Candidate pairs: a residual sphere of either sign (a trial lens separates them), or two hole diameters
# (a smaller pupil, in which the hole takes a larger share, separates them best).
E04_TYPES = ("sphere_sign", "hole_diameter")


def e04(c: Ctx) -> Built:
    b = Built()
    s = round(float(c.rng.uniform(0.3, 0.8)), 2)
    k = -c.e["refraction"]
    kind = str(c.rng.choice(E04_TYPES))
    if kind == "sphere_sign":
        cands = {"A": {"residual_sphere_d": s}, "B": {"residual_sphere_d": -s}}
    else:
        holes = sorted(round(float(x), 2) for x in (c.rng.uniform(0.25, 0.32), c.rng.uniform(0.42, 0.5)))
        cands = {"A": {"residual_sphere_d": s, "hole_diameter_mm": holes[0]},
                 "B": {"residual_sphere_d": s, "hole_diameter_mm": holes[1]}}
    p = c.pkg()
    b.cases["base"] = p
    menu = list(E04_MENU)
    c.rng.shuffle(menu)
    dist = []
    for m in menu:
        eff = E04_MENU[m][0]
        imgs = []
        for cand in cands.values():
            q = c.pkg(thin_power=cand["residual_sphere_d"] - k, hole_diameter=cand.get("hole_diameter_mm", c.f["hole"]),
                      pupil_diameter=c.e["pupil_diameter"] + eff.get("pupil", 0.0),
                      sources=[("L1", 0.0, 0.0, [[eff.get("lam", 550.0), 1.0]])])
            q["eye"]["thin_eye_excess"]["value"] += eff.get("lens", 0.0)
            imgs.append(ref.render_psf(scene_from_package(q))[0])
        dist.append(_rel_l1(imgs[0], imgs[1]))
    order = np.argsort(dist)
    b.task = {"candidates": cands, "base_measurement": "PSF at the stated pupil and 550 nm", "model": THIN_MODEL,
              "menu": menu, "menu_effects": {m: E04_MENU[m][1] for m in menu}}
    b.refs = {"E04.1": {"case": "base", "accept": [menu[int(order[-1])]], "margin": dist[order[-1]] / dist[order[-2]]},
              "E04.2": {"case": "base", "value": dist}}
    return b


E05_QUERIES = {"hole_area_fraction": "answer", "first_dark_ring_arcmin_if_corrected": "answer",
               "patient_halo_severity": "abstain", "manufacturer_anterior_surface_profile": "abstain",
               "night_driving_safety": "abstain", "lens_gradient_index_profile": "abstain",
               "vault_mm": None, "recorded_fraction_on_detector": "answer"}


def e05(c: Ctx) -> Built:
    b = Built()
    vault_known = bool(c.rng.integers(0, 2))
    p = c.pkg(unknown=() if vault_known else ("implant.vault",))
    b.cases["base"] = p
    queries = ["hole_area_fraction"] + c.rng.choice([q for q in E05_QUERIES if q != "hole_area_fraction"], 5, replace=False).tolist()
    c.rng.shuffle(queries)
    dec = [E05_QUERIES[q] or ("answer" if vault_known else "abstain") for q in queries]
    b.task = {"queries": queries, "vocabulary": ["answer", "abstain"]}
    b.refs = {"E05.1": {"case": "base", "value": dec},
              "E05.2": {"case": "base", "value": (c.f["hole"] / c.e["pupil_diameter"]) ** 2}}
    return b


# E06.1: the allowed mean width is that of the calibrated 90 % intervals (percentiles over a grid of the
# stated uniform range) times a factor, plus a slack for the grid and for intervals as narrow as a point.
E06_GRID, E06_WIDTH_FACTOR, E06_WIDTH_SLACK = 11, 1.25, 0.02


def e06(c: Ctx) -> Built:
    b = Built()
    k = -c.e["refraction"]
    truths, nominal, ranges, widths = [], [], [], []
    for i in range(6):
        lo = round(float(c.rng.uniform(-0.8, 0.2)), 2)
        hi = round(lo + float(c.rng.uniform(0.3, 0.8)), 2)
        true = float(c.rng.uniform(lo, hi))
        mid = 0.5 * (lo + hi)
        q = c.pkg(thin_power=mid - k)
        q["implant"]["thin_power"].update(uncertainty={"range": [lo - k, hi - k], "distribution": "uniform"},
                                          status="estimated")
        # The radius is solved for the nominal power; its range is that of the power range, by the same solve.
        radii = sorted(fit_icl_power(c.e, c.f, x - k)["anterior_radius"] for x in (lo, hi))
        q["implant"]["anterior_radius"].update(status="estimated",
                                               uncertainty={"range": radii, "distribution": "that of thin_power"})
        name = f"s{i + 1}"
        b.cases[name] = q
        img_true, _, axis = ref.render_psf(scene_from_package(c.pkg(thin_power=true - k)))
        img_mid, _, _ = ref.render_psf(scene_from_package(q))
        truths.append(ref.encircled(img_true, axis, 1.0))
        nominal.append(ref.encircled(img_mid, axis, 1.0))
        ranges.append([lo, hi])
        # The calibrated interval: 5th to 95th percentile of the encircled energy over the uniform range.
        ee = [ref.encircled(ref.render_psf(scene_from_package(c.pkg(thin_power=x - k)))[0], axis, 1.0)
              for x in np.linspace(lo, hi, E06_GRID)]
        widths.append(float(np.percentile(ee, 95.0) - np.percentile(ee, 5.0)))
    b.task = {"radius_arcmin": 1.0, "nominal_probability": 0.9, "order": list(b.cases),
              "residual_sphere_ranges_d": ranges}
    calibrated = float(np.mean(widths))
    b.refs = {"E06.1": {"case": "s1", "truths": truths, "calibrated_widths": widths,
                        "max_mean_width": E06_WIDTH_FACTOR * calibrated + E06_WIDTH_SLACK},
              "E06.2": {"case": "s1", "value": nominal}}
    return b


# ----------------------------------------------------------------------------- group F

F01_FAULTS = {"renormalised": "recorded set to the incident flux (the window image normalised to unit sum)",
              "missing_blocked": "the flux blocked by the black disk left out (blocked reported as 0)",
              "gain": "recorded multiplied by a factor between 1.05 and 1.10",
              "window_loss_hidden": "the flux falling outside the detector window left out (outside_window 0)"}


def suspect_ledger(true: dict[str, float], faults: list[str], gain: float) -> dict[str, float]:
    """The ledger a faulty solver reports: each fault touches its own entry (renormalising comes before a
    gain), and the residual closes the sum, so every set of faults has its own signature.
    """
    sus = dict(true)
    if "renormalised" in faults:
        sus["recorded"] = sus["incident"]
    if "gain" in faults:
        sus["recorded"] *= gain
    if "missing_blocked" in faults:
        sus["blocked"] = 0.0
    if "window_loss_hidden" in faults:
        sus["outside_window"] = 0.0
    sus["numerical_residual"] = sus["incident"] - sus["blocked"] - sus["recorded"] - sus["outside_window"]
    return sus


def f01(c: Ctx) -> Built:
    b = Built()
    # A small pupil (the black disk blocks 1.6-1.9 % of it) and a residual sphere of 1.5-2 D, whose blur
    # (radius 7-9 arcmin) reaches past the 6.4-arcmin half-width of the window: every entry is visible.
    pupil = round(float(c.rng.uniform(2.6, 2.8)), 2)
    res = round(float(c.rng.choice([-1, 1]) * c.rng.uniform(1.5, 2.0)), 2)
    _, led, _ = _render(b, "base", c.pkg(hole_model="black", pupil_diameter=pupil, thin_power=c.e["refraction"] + res))
    true = {"incident": led["source_flux"], "blocked": led["blocked_by_aperture"], "recorded": led["recorded"],
            "outside_window": led["outside_window"] + led["beyond_grid"], "numerical_residual": 0.0}
    faults = sorted(c.rng.choice(list(F01_FAULTS), size=int(c.rng.integers(1, 3)), replace=False).tolist())
    gain = round(float(c.rng.uniform(1.05, 1.10)), 3)
    b.task = {"suspect_ledger": suspect_ledger(true, faults, gain), "vocabulary": list(F01_FAULTS),
              "fault_definitions": F01_FAULTS}
    b.refs = {"F01.1": {"cases": {"base": _energy(led)}}, "F01.2": {"case": "base", "value": faults,
                                                                   "true_ledger": true, "gain": gain}}
    return b


def f02(c: Ctx) -> Built:
    b = Built()
    img, led, axis = _render(b, "base", c.pkg())
    ee = ref.encircled(img, axis, 1.0)
    b.refs = {"F02.1": {"case": "base", "value": ee}, "F02.2": {"case": "base", "value": ee},
              "F02.3": {"cases": {"base": _energy(led)}}}
    return b


def f03(c: Ctx) -> Built:
    b = Built()
    p = c.pkg(hole_model="solid", thin_power=c.e["refraction"])
    _render(b, "base", p)
    pupil = p["eye"]["pupil_diameter"]["value"]
    d = _aperture(p)
    # The radius is 0.5-2 first dark rings of the pool's middle pupil, not of this eye's: drawn from the
    # measured pupil it would follow the pupil's error, and the noise budget would miss that error.
    mid = 6.0 if c.ood else 3.3
    rho = round(float(c.rng.uniform(0.5, 2.0)) * ref.airy_radius_arcmin(ref.AIRY_DARK[0], 550.0, mid), 3)
    b.task = {"encircled_radius_arcmin": rho}
    b.refs = {"F03.1": {"case": "base", "value": [ref.airy_radius_arcmin(x, 550.0, d) for x in ref.AIRY_DARK]},
              "F03.2": {"case": "base", "value": ref.airy_radius_arcmin(ref.AIRY_BRIGHT, 550.0, d)},
              # Of the incident flux: the light outside the optic zone (if any) spreads far beyond rho.
              "F03.3": {"case": "base", "value": (d / pupil) ** 2 * ref.encircled_energy_airy(rho, 550.0, d)},
              "F03.4": {"cases": ["base"]}}
    return b


def f04(c: Ctx) -> Built:
    b = Built()
    cyl = round(float(c.rng.uniform(0.3, 0.8)), 2)
    _render(b, "base", c.pkg(cylinder=cyl, cylinder_axis=round(float(c.rng.uniform(0, 180)), 1),
                             thin_power=c.e["refraction"] - cyl / 2))
    b.refs = {"F04.1": {"cases": ["base"]}, "F04.2": {"equal_files": [["psf_linear", "psf_alt", "base"]]}}
    return b


def f05(c: Ctx) -> Built:
    b = Built()
    p = c.pkg()
    raw, _, axis = _render(b, "base", p)
    big = scene_from_package(p)
    n = big["detector"]["n"]
    big["detector"]["n"] = 2 * n
    wide, _, _ = ref.render_psf(big)
    wrap = wide.reshape(2, n, 2, n).sum(axis=(0, 2))  # periodic copies folded back onto the window
    wrap = np.roll(wrap, (n // 2, n // 2), axis=(0, 1))
    bloom = raw + 0.2 * libm.gaussian_filter(raw, 6.0)
    wrong, _, _ = ref.render_psf(scene_from_package(c.pkg(hole_model="black")))
    imgs = {"raw_psf": raw, "bloom": bloom, "fft_wraparound": wrap, "wrong_hole_model": wrong}
    order = list(imgs)
    c.rng.shuffle(order)
    b.public_npz["candidates"] = {f"img_{i}": imgs[o] for i, o in enumerate(order)} | {"x_arcmin": axis, "y_arcmin": axis}
    b.task = {"candidates": [f"img_{i}" for i in range(4)], "vocabulary": list(imgs)}
    # The totals are in the candidates; what needs work is relating them to the stated package: each total
    # over the recorded fraction of a correct render of it (bloom adds, wrap-around keeps the light a window
    # loses, a black disk removes its share).
    b.refs = {"F05.1": {"case": "base", "value": order},
              "F05.2": {"case": "base", "value": [float(imgs[o].sum() / raw.sum()) for o in order]}}
    return b


def f06(c: Ctx) -> Built:
    b = Built()
    _render(b, "base", c.pkg())
    b.refs = {"F06.1": {"case": "base"}, "F06.2": {"cases": ["base"]}, "F06.3": {}}
    return b


BUILDERS: dict[str, Callable[[Ctx], Built]] = {
    "A01": a01, "A02": a02, "A03": a03, "A04": a04, "A05": a05, "A06": a06,
    "B01": b01, "B02": b02, "B03": b03, "B04": b04, "B05": b05, "B06": b06,
    "C01": c01, "C02": c02, "C03": c03, "C04": c04, "C05": c05, "C06": c06,
    "D01": d01, "D02": d02, "D03": d03, "D04": d04, "D05": d05, "D06": d06,
    "E01": e01, "E02": e02, "E03": e03, "E04": e04, "E05": e05, "E06": e06,
    "F01": f01, "F02": f02, "F03": f03, "F04": f04, "F05": f05, "F06": f06,
}


# ----------------------------------------------------------------------------- driver

def split_counts(per_template: int) -> dict[str, int]:
    """Train / dev / test instances per template: 2 / 2 / 4 for the standard 8."""
    if per_template < 4:
        raise ValueError("per_template must be at least 4 (one train, one dev, two test)")
    n = max(1, round(per_template / 4))
    return {"train": n, "dev": n, "test": per_template - 2 * n}


def plan(catalog: Catalog, per_template: int, key: ReleaseKey) -> list[dict]:
    """Instance records (id, template, split, base eye, design family) with disjoint group pools."""
    counts = split_counts(per_template)
    pool = pools(N_EYES, N_FAMILIES)
    records = []
    for t_index, tpl in enumerate(catalog.templates):
        ks = [(s, i) for s in ("train", "dev", "test") for i in range(counts[s])] + [("ood", 0)]
        for k, (split, _) in enumerate(ks):
            rng = key.rng("pro", "plan", tpl.id, k)
            iid = f"{tpl.id}-{k:02d}" if split != "ood" else f"{tpl.id}-X{k - per_template:01d}"
            records.append({"id": iid, "template": tpl.id, "split": split,
                            "base_eye": str(rng.choice(pool[split]["base_eye"])),
                            "design_family": str(rng.choice(pool[split]["design_family"])),
                            "stream": key.seed_sequence("pro", "instance", tpl.id, k).entropy,
                            "redraws": [key.seed_sequence("pro", "instance", tpl.id, k, "redraw", j).entropy
                                        for j in range(1, REDRAWS + 1)]})
            if split in noise.NOISY_SPLITS and tpl.id not in noise.EXACT_TEMPLATES:  # measured inputs, budgets
                records[-1].update(noise=noise.streams(key, iid), checks=[[ch.id, ch.kind, ch.tolerance, ch.relative]
                                                                          for ch in tpl.auto_checks])
    return records


class InstanceBuildError(RuntimeError):
    """An instance that no draw of its builder could build; the message names where and why."""


def _build(task: tuple[dict, dict, dict]) -> Built:
    """Build one instance from its record, base eye and fitted design family (a picklable task).

    A draw whose build fails (a sampling the engines refuse, a solve without a root) is replaced by the
    next redraw stream of the instance (``pro/instance/<template>/<k>/redraw/<j>``), and the failures are
    recorded with the reference; when every draw fails, the error names template, instance, split, base
    eye, design family and each draw's reason.
    """
    rec, e, f = task

    def build(stream: int) -> Built:
        def one(e: dict, f: dict) -> Built:
            ctx = Ctx(np.random.default_rng(stream), e, f, rec["base_eye"], rec["design_family"], rec["split"] == "ood")
            return BUILDERS[rec["template"]](ctx)

        return noise.measured(rec, e, f, one) if "noise" in rec else one(e, f)

    failures: list[dict[str, str]] = []
    for j, stream in enumerate([rec["stream"], *rec["redraws"]]):
        name = "draw" if j == 0 else f"redraw {j}"
        try:
            b = build(stream)
        except Exception as exc:  # any failure of one draw; the next draw or the named error follows
            failures.append({"draw": name, "error": f"{type(exc).__name__}: {exc}"})
            continue
        b.redraws = failures
        return b
    reasons = "; ".join(f"{x['draw']}: {x['error']}" for x in failures)
    raise InstanceBuildError(
        f"template {rec['template']}, instance {rec['id']}, split {rec['split']} (base eye {rec['base_eye']}, "
        f"design family {rec['design_family']}): no draw builds: {reasons}")


def generate(output: str | Path, per_template: int = 8, seed: int | None = None,
             catalog_path: str | Path | None = None, progress: bool = True, only: list[str] | None = None,
             scheduler: str | None = None, workers: int = 1, key: ReleaseKey | None = None) -> dict[str, Any]:
    """Write a release of professional instances to ``output`` (see the module docstring).

    With neither ``seed`` nor ``key`` a fresh secret key is drawn from the operating system; ``seed``
    makes a public development release whose answers anyone can rebuild.

    Instances are built by :func:`icl.parallel.run_tasks` (serially, on ``workers`` local processes, or on
    a dask scheduler) and written here in plan order, so the bytes do not depend on the execution mode.

    Returns
    -------
    dict
        Summary: instance counts per split, group counts, engines, seconds.

    """
    import time

    from icl.parallel import run_tasks

    t0 = time.perf_counter()
    catalog = load_catalog(catalog_path)
    out = Path(output)
    (out / "manifest.json").unlink(missing_ok=True)  # a failed build leaves nothing that looks like a release
    for sub in ("inputs", "private"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    if key is None:
        key = ReleaseKey.new() if seed is None else ReleaseKey.from_seed(seed)
    elif seed is not None:
        raise ValueError("give a seed or a key, not both")
    write_key(out, key)  # first (mode 0600), so that a build that fails can be reproduced
    only = catalog.select(only)  # unknown ids and an empty selection are refused, listing the valid ids
    records = [r for r in plan(catalog, per_template, key) if only is None or r["template"] in only]
    groups = check_leakage(records)
    eyes: dict[str, dict] = {}
    fams: dict[tuple[str, str], dict] = {}
    tasks = []
    for rec in records:
        ood = rec["split"] == "ood"
        eid, fid = rec["base_eye"], rec["design_family"]
        if eid not in eyes:
            eyes[eid] = base_eye(eid, key, ood)
        if (eid, fid) not in fams:
            fams[(eid, fid)] = fit_icl(eyes[eid], family(fid, key, ood))
        tasks.append((rec, eyes[eid], fams[(eid, fid)]))
    built = run_tasks(_build, tasks, scheduler=scheduler, workers=workers, description="building instances",
                      quiet=not progress)
    for rec, b in zip(records, built):
        _write_instance(out, catalog, rec, b)
    split_rows = [{k: r[k] for k in ("id", "template", "split", "base_eye", "design_family")} for r in records]
    write_json(out / "private" / "splits.json", {**key.manifest_fields(), "per_template": per_template,
                                                 "groups": groups, "instances": split_rows})
    shutil.copyfile(default_path() if catalog_path is None else catalog_path, out / "catalog.json")
    (out / "README.md").write_text(README, encoding="utf-8")
    counts = {s: sum(1 for r in records if r["split"] == s) for s in SPLITS}
    # The manifest hashes every file but the key: its hashes hold no key-confirmation value.
    write_manifest(out, {"kind": "icl-pro-release", **key.manifest_fields(), "per_template": per_template,
                         "instances": counts, "reference_engine": ref.ENGINE}, exclude=(KEY_FILE,))
    return {"instances": counts, "groups": groups, "seconds": time.perf_counter() - t0}


def _write_instance(out: Path, catalog: Catalog, rec: dict, b: Built) -> None:
    tpl = catalog.template(rec["template"])
    idir = out / "inputs" / rec["split"] / rec["id"]
    for case, pkg in b.cases.items():
        for name, obj in pkg.items():
            obj = {k: (dict(v, value=None, status="unknown", uncertainty=None, source=WITHHELD)
                       if f"{name}.{k}" in b.withheld else v) for k, v in obj.items()}
            write_json(idir / "cases" / case / f"{name}.json", obj)
    for name, arrays in b.public_npz.items():
        write_npz(idir / f"{name}.npz", **arrays)
    task = {"format": "icl-pro-task/1", "instance": rec["id"], "template": tpl.id, "title": tpl.title,
            "cases": sorted(b.cases), "deliverables": list(tpl.deliverables),
            "checks": [{"id": ch.id, "text": ch.text, "mode": ch.mode, **({"key": ch.key, "artifact": ch.artifact}
                        if ch.mode == "auto" else {})} for ch in tpl.checks],
            "undeterminable": list(tpl.undeterminable), **b.task}
    # Every task states its model: the thick one where a builder set it, else the thin model, which also
    # states the frame and conventions of the closed-form and paraxial answers.
    from icl.pro import thick as th

    task.setdefault("model", THICK_MODEL if th.ENGINE in b.engines.values() else THIN_MODEL)
    write_json(idir / "task.json", task)
    missing = {ch.id for ch in tpl.auto_checks} ^ set(b.refs)
    if missing:
        raise RuntimeError(f"{rec['id']}: references and auto checks differ: {sorted(missing)}")
    engines = sorted(set(b.engines.values()))
    engine = " + ".join(engines) if engines else "icl.pro.references (closed form / paraxial trace)"
    doc = {"instance": rec["id"], "template": tpl.id, "split": rec["split"], "base_eye": rec["base_eye"],
           "design_family": rec["design_family"], "engine": engine, "case_engines": b.engines, "checks": b.refs,
           **({"measurement_noise": b.noise} if b.noise else {}), **({"redraws": b.redraws} if b.redraws else {})}
    tol = smallest_tolerance(tpl.auto_checks)
    # The reference PSFs come from the true values of noisy inputs; so does their cross-check. Thick-eye
    # cases (C05, D02) go through the thick second path (icl.eye.far_field), thin ones through icl.optics.mft.
    build = {ref.ENGINE: scene_from_package, th.ENGINE: th.thick_scene}
    scenes = {c: build[b.engines[c]](with_true_values(b.cases[c], b.noise))
              for c in b.psf if b.engines.get(c) in build}
    attach(doc, crosscheck_images(scenes, b.psf, {"full_l1": tol} if tol else {},
                                  "no second solver follows this case's engine"))
    write_json(out / "private" / "references" / f"{rec['id']}.json", doc)
    for case, img in b.psf.items():
        det = b.cases[case]["detector"]
        n, pitch = det["n"]["value"], det["pitch_arcsec"]["value"]
        axis = (np.arange(n) - (n - 1) / 2.0) * pitch / 60.0
        write_npz(out / "private" / "psf" / rec["id"] / f"{case}.npz", psf=img, x_arcmin=axis, y_arcmin=axis)


README = """# ICL-Bench professional release

- `catalog.json`: the 36 task templates, their checks and rubrics.
- `inputs/<split>/<instance>/`: `task.json` and one data package per case under `cases/<case>/`
  (`eye.json`, `implant.json`, `illumination.json`, `detector.json`; every parameter is
  `{value, unit, source, uncertainty, status}`), plus observation or candidate arrays where a task has them.
  Splits: `train`, `dev`, `test` (private) and `ood` (out of distribution, reported apart). In `test` and
  `ood`, parameters with `status: "measured"` state the true value plus an error within +-`uncertainty`
  (see `measurement_noise` in each `task.json`).
- `private/`: references for every auto check, reference PSFs, the split table and the release key. The
  evaluator keeps `private/`, `inputs/test` and `inputs/ood` away from participants.

A submission's `run INPUT OUTPUT` reads a folder of instances and writes, per instance,
`OUTPUT/results/<instance>/<case>/{psf_linear.npz, energy.json, metrics.json}` and
`OUTPUT/results/<instance>/experiments.json` as the checks in `task.json` ask, in the results schema of
the submission contract (`psf_linear.npz` with its grid, field of view, units and normalisation;
`energy.json` with `units`, `incident`, `reflected`, `transmitted`, `absorbed`, `blocked`, `clipped`,
`numerical_residual`).
"""
