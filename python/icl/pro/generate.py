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

from icl.crosscheck import THICK_NOTE, attach, crosscheck_images, smallest_tolerance
from icl.io import write_json, write_manifest, write_npz
from icl.keys import ReleaseKey, write_key
from icl.pro import noise
from icl.pro import references as ref
from icl.pro.catalog import Catalog, default_path, load_catalog
from icl.pro.package import param, scene_from_package
from icl.pro.splits import SPLITS, check_leakage, pools

N_EYES = {"train": 4, "dev": 4, "test": 8, "ood": 3}
N_FAMILIES = {"train": 2, "dev": 2, "test": 4, "ood": 2}
DET_N, DET_PITCH = 128, 6.0  # small detector: +-6.4 arcmin, Nyquist for pupils up to ~7 mm at 450 nm
NAVARRO = "Escudero-Sanz & Navarro (1999) schematic eye"
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
         "pupil_diameter": (rng.uniform(5.5, 6.5) if ood else rng.uniform(2.6, 4.0)),
         "target_refraction": (rng.uniform(-17.0, -14.0) if ood else rng.uniform(-12.0, -5.0))}
    e["cornea_posterior_radius"] = 6.5 * e["cornea_anterior_radius"] / 7.72
    e["axial_length"] = brentq(lambda al: ref.ocular_refraction_d(eye_surfaces(e), al) - e["target_refraction"], 18.0, 40.0)
    e["refraction"] = ref.ocular_refraction_d(eye_surfaces(e), e["axial_length"])
    e["power"] = ref.equivalent_power_d(eye_surfaces(e))
    return e


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
           "cornea_index": param(e["cornea_index"], "1", NAVARRO + " (550 nm)", "documented"),
           "aqueous_index": param(e["aqueous_index"], "1", NAVARRO + " (550 nm)", "documented"),
           "anterior_chamber_depth": param(e["anterior_chamber_depth"], "mm", se + "; corneal epithelium to crystalline lens anterior pole on the visual axis", uncertainty=0.02),
           "lens_anterior_radius": param(e["lens_anterior_radius"], "mm", se, uncertainty=0.2),
           "lens_thickness": param(e["lens_thickness"], "mm", se, uncertainty=0.02),
           "lens_posterior_radius": param(e["lens_posterior_radius"], "mm", se, uncertainty=0.2),
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
           "index": param(f["index"], "1", sf),
           "vault": param(f["vault"], "mm", sf + "; ICL posterior vertex to crystalline lens anterior pole", uncertainty=0.03),
           "thin_power": param(f["thin_power"], "D", sd + ": refraction without minus refraction with the ICL"),
           "cylinder": param(0.0, "D", sf), "cylinder_axis": param(0.0, "deg", sf),
           "decentre_x": param(0.0, "mm", sf, uncertainty=0.02), "decentre_y": param(0.0, "mm", sf, uncertainty=0.02),
           "optic_zone_diameter": param(f["optic_zone"], "mm", sf),
           "hole_diameter": param(f["hole"], "mm", sf), "hole_model": param("clear", "", sf)}
    for k, v in over.items():
        if k not in imp:
            raise KeyError(k)
        imp[k]["value"] = v
    if imp["cylinder"]["value"]:
        imp["cylinder"]["source"] = ("thin-phase toric term of this case, not in the spherical radii "
                                     "(anterior_radius and posterior_radius carry the sphere, thin_power)")
    ill = {"format": "icl-pro-illumination/1", "sources": [
        {"id": sid, "x_arcmin": param(x, "arcmin", "task"), "y_arcmin": param(y, "arcmin", "task"),
         "flux": param(1.0, "source flux", "task"), "spectrum": param(spec, "[nm, weight]", "task"),
         "extent": {"kind": "point"}}
        for sid, x, y, spec in (sources or [("L1", 0.0, 0.0, [[550.0, 1.0]])])]}
    det = {"format": "icl-pro-detector/1", "n": param(DET_N, "pixels", "task"),
           "pitch_arcsec": param(DET_PITCH, "arcsec", "task")}
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


@dataclass
class Ctx:
    """Inputs of a template builder."""

    rng: np.random.Generator
    e: dict
    f: dict
    eid: str
    fid: str

    def pkg(self, **kw: Any) -> dict:
        return make_package(self.e, self.f, self.eid, self.fid, **kw)


def _render(b: Built, name: str, pkg: dict, thick: bool = False) -> tuple[np.ndarray, dict, np.ndarray]:
    """Reference PSF of one case: thin-phase by default, the thick sequential eye when ``thick``."""
    b.cases[name] = pkg
    if thick and _edge_free(pkg):
        from icl.pro import thick as th

        img, ledger, axis = th.render_thick(pkg)
        b.engines[name] = th.ENGINE
    else:
        img, ledger, axis = ref.render_psf(scene_from_package(pkg))
        b.engines[name] = ref.ENGINE
    b.psf[name] = img
    return img, ledger, axis


def _edge_free(pkg: dict) -> bool:
    """True when no light passes outside the optic zone (pupil within the zone; the cornea only magnifies
    the zone's footprint on the entrance pupil). Light through the edge is defocused by the whole myopia and
    aliases on the reference window, so such cases keep the thin-phase engine.
    """
    return pkg["eye"]["pupil_diameter"]["value"] <= pkg["implant"]["optic_zone_diameter"]["value"]


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
    b.task = {"vocabulary": sorted(LAYERS)}
    b.refs = {"A01.1": {"case": "base", "value": LAYERS, "key_pair": ["icl", "crystalline_lens"]},
              "A01.2": {"case": "base", "value": ant - e["cornea_thickness"]},
              "A01.3": {"case": "base", "value": f["vault"]}}
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
    b.task = {"vault_categories": {"low": "below 0.25 mm", "normal": "0.25 to 0.75 mm", "high": "above 0.75 mm"}}
    b.refs = {"A02.1": {"case": "base", "value": vault}, "A02.2": {"case": "base", "value": cat},
              "A02.3": {"case": "base", "value": c.e["anterior_chamber_depth"] - c.e["cornea_thickness"]}}
    return b


def a03(c: Ctx) -> Built:
    b = Built()
    p = c.pkg()
    b.cases["base"] = p
    d, pupil, k, lam = c.f["hole"], c.e["pupil_diameter"], -c.e["refraction"], _lam(p)
    b.refs = {"A03.1": {"case": "base", "value": (d / pupil) ** 2},
              "A03.2": {"case": "base", "value": (d * 0.5e-3) ** 2 * k / (lam * 1e-9)},
              "A03.3": {"case": "base", "value": d * 1e-3 * k * ref.RAD_TO_ARCMIN}}
    return b


UNKNOWABLE = ["eye.cornea_posterior_radius", "eye.lens_anterior_radius", "eye.lens_posterior_radius",
              "eye.lens_thickness", "implant.anterior_radius", "implant.posterior_radius", "implant.central_thickness",
              "implant.vault", "eye.pupil_diameter"]


def a04(c: Ctx) -> Built:
    b = Built()
    unknown = sorted(c.rng.choice(UNKNOWABLE, size=int(c.rng.integers(2, 5)), replace=False).tolist())
    p = c.pkg(unknown=unknown)
    b.cases["base"] = p
    sources = sorted({v["source"] for fobj in p.values() for v in fobj.values() if isinstance(v, dict) and "source" in v})
    b.refs = {"A04.1": {"case": "base", "value": unknown},
              "A04.2": {"case": "base", "guarded": unknown + [k for k in UNKNOWABLE if k.startswith("implant.")],
                        "input_sources": sources}}
    return b


A05_VOCAB = ["axial_length", "corneal_power", "crystalline_lens_power", "pupil_diameter", "higher_order_aberrations",
             "scatter", "tear_film", "refraction"]


def a05(c: Ctx) -> Built:
    b = Built()
    rx, kc, sep = c.e["refraction"], 43.0 + c.rng.uniform(-2, 2), 5.7
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
    p = c.pkg()
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
    b.task = {"order": ["photopic", "mesopic", "scotopic"], "vocabulary": ["yes", "no"]}
    b.refs = {"A06.1": {"case": "base", "value": [(c.f["hole"] / d) ** 2 for d in pupils]},
              "A06.2": {"case": "base", "value": edge}}
    return b


# ----------------------------------------------------------------------------- group B

INTERFACES = [("air", "cornea"), ("cornea", "aqueous"), ("aqueous", "icl"), ("icl", "aqueous"),
              ("aqueous", "crystalline_lens"), ("crystalline_lens", "vitreous")]


def b01(c: Ctx) -> Built:
    b = Built()
    b.cases["base"] = c.pkg()
    b.refs = {"B01.1": {"case": "base", "value": c.e["power"]}, "B01.2": {"case": "base", "value": c.e["refraction"]},
              "B01.3": {"case": "base", "value": c.f["refraction_with"]}}
    return b


def b02(c: Ctx) -> Built:
    b = Built()
    b.cases["base"] = c.pkg()
    n = {"air": 1.0, "cornea": c.e["cornea_index"], "aqueous": c.e["aqueous_index"], "icl": c.f["index"],
         "crystalline_lens": c.e["lens_index"], "vitreous": c.e["vitreous_index"]}
    r = [ref.fresnel_r(n[a], n[z]) for a, z in INTERFACES]
    b.task = {"interfaces": [f"{a}|{z}" for a, z in INTERFACES]}
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
              "B05.2": {"case": "base", "value": [k * d * 1e-3 * ref.RAD_TO_ARCMIN for d in dec]},
              "B05.3": {"cases": ["base"]}}
    return b


def b06(c: Ctx) -> Built:
    b = Built()
    b.cases["base"] = c.pkg()
    shift = round(float(c.rng.uniform(0.1, 0.3)), 3)
    moved = ref.ocular_refraction_d(icl_surfaces(c.e, c.f, shift), c.e["axial_length"])
    b.task = {"forward_movement_mm": shift}
    b.refs = {"B06.1": {"case": "base", "value": moved - c.f["refraction_with"]},
              "B06.2": {"case": "base", "value": c.f["thin_power"]}}
    return b


# ----------------------------------------------------------------------------- group C

def c01(c: Ctx) -> Built:
    b = Built()
    lam = float(c.rng.choice([500.0, 550.0, 600.0]))
    p = c.pkg(hole_model="solid", thin_power=-(-c.e["refraction"]), sources=[("L1", 0.0, 0.0, [[lam, 1.0]])])
    _, led, _ = _render(b, "base", p)
    pupil = p["eye"]["pupil_diameter"]["value"]
    b.refs = {"C01.1": {"cases": ["base"]}, "C01.2": {"case": "base", "value": ref.airy_radius_arcmin(ref.AIRY_DARK[0], lam, pupil)},
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
    img, led, ax = _render(b, "base", c.pkg(hole_model="solid", thin_power=c.e["refraction"] - cyl / 2,
                                            cylinder=cyl, cylinder_axis=axis))
    b.refs = {"C03.1": {"cases": ["base"]}, "C03.2": {"case": "base", "value": ref.orientation_deg(img, ax)},
              "C03.3": {"cases": {"base": _energy(led)}}}
    return b


def c04(c: Ctx) -> Built:
    b = Built()
    spec = [[450.0, round(float(c.rng.uniform(0.2, 0.4)), 3)], [550.0, 0.4], [650.0, round(float(c.rng.uniform(0.2, 0.4)), 3)]]
    p = c.pkg(hole_model="solid", sources=[("L1", 0.0, 0.0, spec)])
    _, led, _ = _render(b, "base", p)
    pupil = p["eye"]["pupil_diameter"]["value"]
    b.refs = {"C04.1": {"cases": ["base"]},
              "C04.2": {"case": "base", "value": [ref.airy_radius_arcmin(ref.AIRY_DARK[0], w, pupil) for w, _ in spec]},
              "C04.3": {"cases": {"base": _energy(led)}}}
    return b


def _hole_variants(c: Ctx, b: Built, positions: dict[str, list[float]], **kw: Any) -> dict[str, dict]:
    energy = {}
    for model in ("solid", "clear", "black", "index_matched"):
        for tag, pos in positions.items():
            name = f"{model}_{tag}" if len(positions) > 1 else model
            # Hole causality is a thick-eye question: the hole's footprint, its wall and the optic's real
            # surfaces are traced (icl.pro.thick), not folded into a thin phase.
            _, led, _ = _render(b, name, c.pkg(hole_model=model, sources=[("L1", *pos, [[550.0, 1.0]])], **kw),
                                thick=True)
            energy[name] = _energy(led)
    return energy


def _rel_l1(a: np.ndarray, bb: np.ndarray) -> float:
    return float(np.abs(a - bb).sum() / np.abs(bb).sum())


def c05(c: Ctx) -> Built:
    b = Built()
    off = [round(float(c.rng.uniform(1.5, 3.0)), 2), round(float(c.rng.uniform(-1.0, 1.0)), 2)]
    energy = _hole_variants(c, b, {"on": [0.0, 0.0], "off": off})
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
              "D01.2": {"case": "decentred", "value": [k * d * 1e-3 * ref.RAD_TO_ARCMIN for d in dec]}}
    return b


def d02(c: Ctx) -> Built:
    b = Built()
    energy = _hole_variants(c, b, {"on": [0.0, 0.0]}, pupil_diameter=round(float(c.rng.uniform(2.5, 3.5)), 2))
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


def d04(c: Ctx) -> Built:
    b = Built()
    quarter = int(c.rng.integers(1, 4))
    cyl, axis = round(float(c.rng.uniform(0.3, 0.6)), 2), round(float(c.rng.uniform(0, 90)), 1)
    dec = [round(c.rng.uniform(-0.05, 0.05), 3), round(c.rng.uniform(-0.05, 0.05), 3)]
    src = [round(float(c.rng.uniform(2.0, 3.0)), 2), 0.0]
    rot = _rotate(dec, quarter)
    base = dict(hole_model="clear", cylinder=cyl, thin_power=c.e["refraction"] - cyl / 2)
    _render(b, "on_base", c.pkg(cylinder_axis=axis, decentre_x=dec[0], decentre_y=dec[1], **base))
    _render(b, "on_rotated", c.pkg(cylinder_axis=(axis + 90 * quarter) % 180, decentre_x=rot[0], decentre_y=rot[1], **base))
    _render(b, "off_base", c.pkg(cylinder_axis=axis, decentre_x=dec[0], decentre_y=dec[1],
                                 sources=[("L1", *src, [[550.0, 1.0]])], **base))
    _render(b, "off_rotated", c.pkg(cylinder_axis=(axis + 90 * quarter) % 180, decentre_x=rot[0], decentre_y=rot[1],
                                    sources=[("L1", *src, [[550.0, 1.0]])], **base))
    b.task = {"rotation_deg": 90 * quarter, "pairs": {"on_axis": ["on_base", "on_rotated"], "off_axis": ["off_base", "off_rotated"]},
              "vocabulary": ["yes", "no"], "order": ["on_axis", "off_axis"]}
    b.refs = {"D04.1": {"base": "on_base", "rotated": "on_rotated", "quarter_turns": quarter},
              "D04.2": {"cases": ["off_base", "off_rotated"]}, "D04.3": {"case": "on_base", "value": ["yes", "no"]}}
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
    b.refs = {"D06.1": {"case": "moved", "value": moved},
              "D06.2": {"cases": ["moved"]},
              "D06.3": {"case": "moved", "value": ref.strehl_defocus(-moved, c.e["pupil_diameter"], 550.0)}}
    return b


# ----------------------------------------------------------------------------- group E

def _solution_scene(pkg: dict, sol: dict) -> dict:
    scene = scene_from_package(pkg)
    k = scene["pupil"]["eye_excess_d"]
    scene["pupil"]["icl"].update(power_d=sol["residual_sphere_d"] - k, decentre_mm=list(sol["decentre_mm"]))
    for s in scene["sources"]:
        s["x_arcmin"] += sol["fixation_offset_arcmin"][0]
        s["y_arcmin"] += sol["fixation_offset_arcmin"][1]
    return scene


def exposed(img: np.ndarray, exposure: float) -> np.ndarray:
    """Night-photo rendering of a linear image: scaled by ``exposure`` and clipped at 1."""
    return np.minimum(img * exposure, 1.0)


def e01(c: Ctx) -> Built:
    b = Built()
    k = c.e["refraction"]
    p = c.pkg(thin_power=k)
    b.cases["base"] = p
    dec = [round(float(c.rng.choice([-1, 1]) * c.rng.uniform(0.05, 0.1)), 3), 0.0]
    res = round(float(c.rng.choice([-1, 1]) * c.rng.uniform(0.3, 0.6)), 2)
    truth = {"decentre_mm": dec, "residual_sphere_d": res, "fixation_offset_arcmin": [0.0, 0.0]}
    img, _, axis = ref.render_psf(_solution_scene(p, truth))
    exposure = 50.0 / float(img.max())
    b.public_npz["observation"] = {"image": exposed(img, exposure), "x_arcmin": axis, "y_arcmin": axis,
                                   "exposure": np.array(exposure)}
    b.task = {"observation": "observation.npz: image = min(exposure * linear image, 1); the source is nominally at (0, 0)",
              "menu": ["repeat_same_exposure", "longer_exposure", "through_focus_trial_lens", "pupil_position_imaging",
                       "narrower_spectral_filter"],
              "solution_fields": {"decentre_mm": "[u, v]", "residual_sphere_d": "eye excess + ICL power",
                                  "fixation_offset_arcmin": "[x, y]"}}
    b.refs = {"E01.1": {"case": "base", "truth": truth, "exposure": exposure,
                        "scales": {"decentre_mm": 0.05, "residual_sphere_d": 0.2, "fixation_offset_arcmin": 1.0}},
              "E01.2": {"case": "base", "value": "not_identifiable"},
              "E01.3": {"case": "base", "accept": ["through_focus_trial_lens", "pupil_position_imaging"]}}
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
    b.task = {"fixation_uncertainty_arcmin": 1.0}
    b.refs = {"E03.1": {"case": "base", "truth": dec[0], "max_width": 0.12},
              "E03.2": {"case": "base", "truth": dec[1], "max_width": 0.12}}
    return b


E04_MENU = {"repeat_measurement": {}, "pupil_plus_1mm": {"pupil": 1.0}, "trial_lens_plus_0.5D": {"lens": 0.5},
            "wavelength_450nm": {"lam": 450.0}}


def e04(c: Ctx) -> Built:
    b = Built()
    s = round(float(c.rng.uniform(0.3, 0.8)), 2)
    k = -c.e["refraction"]
    p = c.pkg()
    b.cases["base"] = p
    menu = list(E04_MENU)
    c.rng.shuffle(menu)
    dist = []
    for m in menu:
        imgs = []
        for sign in (1, -1):
            q = c.pkg(thin_power=sign * s - k + E04_MENU[m].get("lens", 0.0),
                      pupil_diameter=c.e["pupil_diameter"] + E04_MENU[m].get("pupil", 0.0),
                      sources=[("L1", 0.0, 0.0, [[E04_MENU[m].get("lam", 550.0), 1.0]])])
            imgs.append(ref.render_psf(scene_from_package(q))[0])
        dist.append(_rel_l1(imgs[0], imgs[1]))
    b.task = {"candidates": {"A": {"residual_sphere_d": s}, "B": {"residual_sphere_d": -s}},
              "base_measurement": "PSF at the stated pupil and 550 nm",
              "menu": menu, "menu_effects": {"repeat_measurement": "same PSF again", "pupil_plus_1mm": "pupil 1 mm larger",
                                             "trial_lens_plus_0.5D": "+0.5 D spherical trial lens in the pupil plane (a +0.5 D lens adds myopic excess)",
                                             "wavelength_450nm": "source at 450 nm"}}
    b.refs = {"E04.1": {"case": "base", "accept": [menu[int(np.argmax(dist))]]}, "E04.2": {"case": "base", "value": dist}}
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


def e06(c: Ctx) -> Built:
    b = Built()
    k = -c.e["refraction"]
    truths, nominal, ranges = [], [], []
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
    b.task = {"radius_arcmin": 1.0, "nominal_probability": 0.9, "order": list(b.cases),
              "residual_sphere_ranges_d": ranges}
    b.refs = {"E06.1": {"case": "s1", "truths": truths, "max_mean_width": 0.25},
              "E06.2": {"case": "s1", "value": nominal}}
    return b


# ----------------------------------------------------------------------------- group F

F01_FAULTS = ["renormalised", "missing_blocked", "gain", "window_loss_hidden"]


def f01(c: Ctx) -> Built:
    b = Built()
    _, led, _ = _render(b, "base", c.pkg(hole_model="black"))
    faults = sorted(c.rng.choice(F01_FAULTS, size=int(c.rng.integers(1, 3)), replace=False).tolist())
    sus = {"incident": 1.0, "blocked": led["blocked_by_aperture"], "recorded": led["recorded"],
           "outside_window": led["outside_window"] + led["beyond_grid"], "numerical_residual": 0.0}
    if "renormalised" in faults:
        sus["recorded"] = 1.0 - sus["blocked"] - sus["outside_window"] if "missing_blocked" in faults else 1.0
        sus["outside_window"] = 0.0 if "missing_blocked" not in faults else sus["outside_window"]
    if "missing_blocked" in faults:
        sus["blocked"] = 0.0
    if "gain" in faults:
        sus["recorded"] *= 1.08
    if "window_loss_hidden" in faults:
        sus["outside_window"] = 0.0
    sus["numerical_residual"] = 1.0 - sum(v for k, v in sus.items() if k not in ("incident", "numerical_residual"))
    b.task = {"suspect_ledger": sus, "vocabulary": F01_FAULTS}
    b.refs = {"F01.1": {"cases": {"base": _energy(led)}}, "F01.2": {"case": "base", "value": faults}}
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
    d = p["eye"]["pupil_diameter"]["value"]
    b.refs = {"F03.1": {"case": "base", "value": [ref.airy_radius_arcmin(x, 550.0, d) for x in ref.AIRY_DARK]},
              "F03.2": {"case": "base", "value": ref.airy_radius_arcmin(ref.AIRY_BRIGHT, 550.0, d)},
              "F03.3": {"case": "base", "value": ref.encircled_energy_airy_first_dark()},
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
    from scipy.ndimage import gaussian_filter

    b = Built()
    p = c.pkg()
    raw, _, axis = _render(b, "base", p)
    big = scene_from_package(p)
    big["detector"]["n"] = 2 * DET_N
    wide, _, _ = ref.render_psf(big)
    n = DET_N
    wrap = wide.reshape(2, n, 2, n).sum(axis=(0, 2))  # periodic copies folded back onto the window
    wrap = np.roll(wrap, (n // 2, n // 2), axis=(0, 1))
    bloom = raw + 0.2 * gaussian_filter(raw, 6.0)
    wrong, _, _ = ref.render_psf(scene_from_package(c.pkg(hole_model="black")))
    imgs = {"raw_psf": raw, "bloom": bloom, "fft_wraparound": wrap, "wrong_hole_model": wrong}
    order = list(imgs)
    c.rng.shuffle(order)
    b.public_npz["candidates"] = {f"img_{i}": imgs[o] for i, o in enumerate(order)} | {"x_arcmin": axis, "y_arcmin": axis}
    b.task = {"candidates": [f"img_{i}" for i in range(4)], "vocabulary": list(imgs)}
    b.refs = {"F05.1": {"case": "base", "value": order},
              "F05.2": {"case": "base", "value": [float(imgs[o].sum()) for o in order]}}
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
                            "stream": key.seed_sequence("pro", "instance", tpl.id, k).entropy})
            if split in noise.NOISY_SPLITS:  # held-out: measured inputs, noise budgets beside the checks
                records[-1].update(noise=noise.streams(key, iid), checks=[[ch.id, ch.kind, ch.tolerance, ch.relative]
                                                                          for ch in tpl.auto_checks])
    return records


def _build(task: tuple[dict, dict, dict]) -> Built:
    """Build one instance from its record, base eye and fitted design family (a picklable task)."""
    rec, e, f = task

    def build(e: dict, f: dict) -> Built:
        ctx = Ctx(np.random.default_rng(rec["stream"]), e, f, rec["base_eye"], rec["design_family"])
        return BUILDERS[rec["template"]](ctx)

    return noise.measured(rec, e, f, build) if "noise" in rec else build(e, f)


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
    for sub in ("inputs", "private"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    if key is None:
        key = ReleaseKey.new() if seed is None else ReleaseKey.from_seed(seed)
    elif seed is not None:
        raise ValueError("give a seed or a key, not both")
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
    write_manifest(out, {"kind": "icl-pro-release", **key.manifest_fields(), "per_template": per_template,
                         "instances": counts, "reference_engine": ref.ENGINE})
    write_key(out, key)  # after the manifest: its file hashes hold no key-confirmation value
    return {"instances": counts, "groups": groups, "seconds": time.perf_counter() - t0}


def _write_instance(out: Path, catalog: Catalog, rec: dict, b: Built) -> None:
    tpl = catalog.template(rec["template"])
    idir = out / "inputs" / rec["split"] / rec["id"]
    for case, pkg in b.cases.items():
        for name, obj in pkg.items():
            write_json(idir / "cases" / case / f"{name}.json", obj)
    for name, arrays in b.public_npz.items():
        write_npz(idir / f"{name}.npz", **arrays)
    task = {"format": "icl-pro-task/1", "instance": rec["id"], "template": tpl.id, "title": tpl.title,
            "cases": sorted(b.cases), "deliverables": list(tpl.deliverables),
            "checks": [{"id": ch.id, "text": ch.text, "mode": ch.mode, **({"key": ch.key, "artifact": ch.artifact}
                        if ch.mode == "auto" else {})} for ch in tpl.checks],
            "undeterminable": list(tpl.undeterminable), **b.task}
    write_json(idir / "task.json", task)
    missing = {ch.id for ch in tpl.auto_checks} ^ set(b.refs)
    if missing:
        raise RuntimeError(f"{rec['id']}: references and auto checks differ: {sorted(missing)}")
    engines = sorted(set(b.engines.values()))
    engine = " + ".join(engines) if engines else "icl.pro.references (closed form / paraxial trace)"
    doc = {"instance": rec["id"], "template": tpl.id, "split": rec["split"], "base_eye": rec["base_eye"],
           "design_family": rec["design_family"], "engine": engine, "case_engines": b.engines, "checks": b.refs,
           **({"measurement_noise": b.noise} if b.noise else {})}
    tol = smallest_tolerance(tpl.auto_checks)
    thin = {c: scene_from_package(b.cases[c]) for c in b.psf if b.engines.get(c) == ref.ENGINE}
    attach(doc, crosscheck_images(thin, b.psf, {"full_l1": tol} if tol else {}, THICK_NOTE))
    write_json(out / "private" / "references" / f"{rec['id']}.json", doc)
    axis = (np.arange(DET_N) - (DET_N - 1) / 2.0) * DET_PITCH / 60.0
    for case, img in b.psf.items():
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
