"""The public README of a halo release: the whole contract a participant works from.

It states the units of every field, the thin-phase model, the flux rule of every source kind, the
submission format and its validity rules, every scoring term with its weight and scale, what is scored
and what is diagnostic, and what a sandboxed ``run INPUT OUTPUT`` receives and must write. Numbers are
formatted from the constants the evaluator, the ring measurer and the sandbox use, so the text cannot
drift from the code; a test rebuilds test conditions from this text alone with NumPy.
"""

from __future__ import annotations

from icl.halo.cases import FIRST_DARK, HaloCase
from icl.halo.evaluate import (
    COMPLEX_HALO_WEIGHT,
    CONDITION_SHARE,
    GAIN_TOL,
    HALO_FLOOR,
    LEAK_SCALE,
    MAX_SUBMISSION_BYTES,
    NEGATIVE_TOL,
    PAIR_FLOOR,
    PAIR_SCALE,
    PAIR_SHARE,
    SCENE_SUM_TOL,
    TERMS,
)
from icl.halo.geometry import prism_arcmin
from icl.halo.ring import POLAR_ANGLES, POLAR_MAX_ARCMIN, POLAR_RADII
from icl.sandbox.harness import Limits
from icl.sandbox.layout import ALLOWED_DISTRIBUTIONS

# Files shipped in public/ besides the case files (copied from cases/halo/).
PUBLIC_EXTRAS = ("prediction.schema.json", "prediction_example.json")

_TERM_TEXT = {
    "full_l1": ("`sum_k sum_pixels abs(S_k - R_k) / E_ref`", "every pixel, per source component"),
    "halo_l1": (
        "the same sum over the halo region only, divided by `max(sum_k sum_halo R_k, "
        f"{HALO_FLOOR:g} E_ref)`",
        "pixels outside every main lobe",
    ),
    "polar": (
        "`sum r_i abs(P_S - P_R) / sum r_i P_R` over the polar grid of every source",
        "structure at fixed radius and angle about each reference wick",
    ),
    "centroid_arcmin": (
        "distance (arcmin) between the intensity centroids of S_k and R_k over the whole window, "
        "averaged over sources with weights `sum R_k`",
        "overall position",
    ),
    "energy": ("`abs(sum S - E_ref) / E_ref`", "recorded energy, the light that leaves the window included"),
    "ring": (
        "`(abs(c_S - c_R) + abs(r_S - r_R)) / r_R`: centre and radius of the first bright ring measured on S_1 and "
        "R_1 by the release's ring measurer; a ring not detected in S gives the term 0",
        "development calibration conditions only",
    ),
}


def _g(x: float) -> str:
    return f"{x:g}".replace("e-0", "e-")


def _mb(n: int) -> str:
    return f"{n / 1024**2:g} MiB" if n < 1024**3 else f"{n / 1024**3:g} GiB"


def _ids(cases: list[HaloCase], flag: str) -> str:
    return ", ".join(c.id for case in cases for c in case.conditions if getattr(c, flag)) or "none"


def public_readme(dev_cases: list[HaloCase], test_variants: int) -> str:
    """Write the text of ``public/README.md`` for a release with these development cases.

    Parameters
    ----------
    dev_cases : list of HaloCase
        The development split (its calibration and complex-field conditions are listed by name).
    test_variants : int
        Variants per case in the test split (0: no test split).

    """
    ex_prism = prism_arcmin({"pupil": {"icl": {"power_d": -8.0, "decentre_mm": [0.2, 0.0]}}})[0]
    ex_cyl = prism_arcmin(
        {"pupil": {"icl": {"power_d": 0.0, "cylinder_d": 1.0, "axis_deg": 0.0, "decentre_mm": [0.0, 0.2]}}}
    )[1]
    limits = Limits()
    rows = []
    for name, (weight, scale) in TERMS.items():
        error, where = _TERM_TEXT[name]
        shown = f"{weight:.0%}" + (f" ({COMPLEX_HALO_WEIGHT:.0%} on complex fields)" if name == "halo_l1" else "")
        rows.append(f"| `{name}` | {error} | {shown} | {scale:g} | {where} |")
    terms = "\n".join(rows)
    test_line = (
        f"`halo_cases_test.json` is the held-out test split: {test_variants} keyed variants of each of the 14 "
        "cases (`H01_t1_a`, `H01_t1_b`, ...), same format. A variant tests what its case tests on an eye, "
        "spectrum or set of sources the development split does not hold (residual defocus, cylinder, holes "
        "of every kind, an optic zone smaller than the pupil, several wavelengths, several sources, disks)."
        if test_variants
        else "This release has no test split."
    )
    return f"""# ICL-Bench halo release: public part

This folder is everything a participant receives, and this README is the whole contract: the model that
defines every answer, what to return, how it is scored, and how a sandboxed program is run.

| file | what it holds |
|---|---|
| `halo_cases.json` | the development split: 14 paired cases (28 conditions `H01_a` ... `H14_b`) and 6 research cards (`R15`-`R20`: questions without answers, never scored) |
| `halo_cases_test.json` | the held-out test split, when the release has one (below) |
| `prediction.schema.json` | JSON Schema of an optional structured prediction of one condition (diagnostic, below) |
| `prediction_example.json` | one structured prediction that satisfies it |
| `README.md` | this file |

{test_line} Both conditions of a pair are always in the same split. Each condition gives a complete
scene (every field below is present); its `task` text and the case's `predict` list name the
quantities of interest.

## Units of every field
Angles on the sky are arcmin (1 arcmin = 60 arcsec = pi / 10800 rad); pupil lengths are millimetres;
powers are dioptres (1/m); wavelengths are nanometres in vacuum.

| field | unit | meaning |
|---|---|---|
| `pupil.diameter_mm` | mm | diameter D of the uniform circular entrance pupil, centred at (0, 0) |
| `pupil.eye_excess_d` | D | myopic excess E of the eye, acting over the whole pupil |
| `pupil.icl` | | the implanted lens; `null` means none (the eye term only) |
| `pupil.icl.power_d` | D | spherical power K of the optic |
| `pupil.icl.cylinder_d` | D | plus-cylinder power C |
| `pupil.icl.axis_deg` | degrees | cylinder axis alpha, counter-clockwise from +x |
| `pupil.icl.decentre_mm` | mm, mm | decentre c = (c_u, c_v) of the optic, its cylinder, its zone and its hole |
| `pupil.icl.optic_zone_mm` | mm | diameter of the optic zone (a disk centred on c); it may be smaller than the pupil |
| `pupil.icl.hole_mm` | mm | diameter of the central hole (a disk centred on c); 0 means no hole |
| `pupil.icl.hole` | | `clear`, `black` or `index_matched` (the model below) |
| `pupil.icl.optic_opd_um` | um | optical path p the optic's centre adds over the light beside it (a piston); absent from every scene of this track, so p = 0 |
| `detector.n` | pixels | pixels per side (512) |
| `detector.pitch_arcsec` | arcsec | pixel pitch (4) |
| `sources[].id` | | the component's name; components follow the list's order |
| `sources[].x_arcmin`, `y_arcmin` | arcmin | source direction, +x right, +y up, fixation at (0, 0) |
| `sources[].flux` | source-flux units | total flux F of the source (0 is allowed) |
| `sources[].spectrum` | `[[nm, weight], ...]` | wavelengths lambda_j (nm) and weights w_j (dimensionless, not renormalised) |
| `sources[].extent` | | `{{"kind": "point"}}` or `{{"kind": "disk", "diameter_arcmin": d}}` (d in arcmin) |
| `grid.x_arcmin`, `grid.y_arcmin` | arcmin | pixel centres of the columns and rows |

## Coordinates
Fixation is (0, 0) arcmin; +x right, +y up. Arrays are indexed `[row, column]` with the row growing with +y
and the column with +x; pixel centres lie at `(j - 255.5) * 4` arcsec, j = 0 ... 511 (listed in `grid`). No
recentring, no per-image exposure: light that falls outside the window is lost, never wrapped to the
other side.

## The thin-phase model
Pupil plane: (u, v) in metres, +u along +x, +v along +y, origin at the pupil centre. At wavelength lambda
(m) the complex pupil is `P(u) = A(u) exp(2 pi i W(u) / lambda)`, with `A = 1` inside the pupil disk of
diameter D and 0 outside, and the wavefront W in metres, the same at every wavelength (no dispersion):

* everywhere in the pupil, the eye: `W_eye = -(E / 2) |u|^2`;
* inside the optic zone and outside the hole, the eye and the optic: `W = W_eye + W_icl` with
  `W_icl = p - (K / 2) |u - c|^2 - (C / 2) d^2`, `d = -(u - c_u) sin(alpha) + (v - c_v) cos(alpha)`, and
  `p = 0` here (an optic of zero optical thickness whose centre is in phase with the hole's light);
* outside the optic zone (where the pupil is larger than the zone, or the zone is decentred): `W = W_eye`;
* inside the hole: `clear` keeps `W = W_eye` (light passes without the optic's phase), `black` sets `A = 0`
  (no light), `index_matched` acts as the optic (`W = W_eye + W_icl`, exactly as if there were no hole).

The net defocus of the corrected part is `E + K` (0 when the optic corrects the eye fully); the light
through a clear hole or outside the optic zone keeps the eye's whole excess E.

Far field: `U(theta) = (1 / lambda) FT[P](theta / lambda)` with `FT[P](f) = integral P(u) exp(-2 pi i f.u) du`,
theta the angle in radians on the detector's tangent plane. A point source of flux F and spectrum
`[[lambda_j, w_j]]` at direction s has the intensity (flux per steradian)

    I(theta) = F sum_j w_j |U_lambda_j(theta - s)|^2 / (pi D^2 / 4)

so an unobstructed pupil sends the whole `F sum_j w_j` into the plane, and a black hole removes the
fraction of the pupil's area it covers. With this sign convention a linear wavefront `W = a.u` moves the
pattern to `theta = +a`.

The prism of a decentred optic: the sphere holds the tilt `K c` and the cylinder the tilt `C (n.c) n` with
`n = (-sin alpha, cos alpha)`, so the whole pattern of every source moves to its **wick**

    wick = s + K c + C (n.c) n        (radians; divide by pi / 10800 for arcmin)

Examples: `power_d` -8 D decentred +0.2 mm in x moves the pattern by -1.6 mrad = {ex_prism:.4f} arcmin
in x (towards -x), and the ring stays concentric with the wick; a 1 D cylinder at axis 0 decentred
+0.2 mm in y adds {ex_cyl:+.4f} arcmin in y.

This sign is the track's stated convention (the `halo` frame), not what an observer sees: through a real
eye the retinal image is inverted, and the same optic's pattern is seen at {-ex_prism:+.4f} arcmin ("with
motion"; ICL-Bench's other outputs use that visual frame). Every answer of this release is drawn in the
`halo` frame; its scenes carry no `frame` field (`icl render` draws one in this convention when the scene
names `"frame": "halo"`).

## Sources and the flux rule
The model is isoplanatic: every source sees the same pupil, and its pattern is the on-axis pattern moved
to its direction.

| source | its component (intensity; a pixel holds its integral over the pixel) | total over the whole plane |
|---|---|---|
| point, one wavelength | `F w abs(U_lambda(theta - s))^2 / (pi D^2 / 4)` | `F w (1 - b)` |
| point, several wavelengths | the sum of the wavelengths' intensities (incoherent), weights as given | `F (sum_j w_j) (1 - b)` |
| uniform disk of diameter d | the point intensity convolved with a uniform disk of diameter d arcmin and unit integral, centred on s (incoherent) | the same as the point source |
| flux 0 | exact zeros | 0 |

`b` is the black hole's share of the pupil's area (0 without a black hole). Several sources add linearly,
one component each. A pixel holds the flux falling on it: the intensity integrated over the pixel's 4 x 4
arcsec square (in steradians), in units of the source flux. What is recorded is the total minus what
falls outside the window.

## What to return
One file `<condition>.npz` per condition (NumPy's `savez` or `savez_compressed`, no pickled objects):

| member | shape, type | content |
|---|---|---|
| `components` | `[n_sources, 512, 512]`, real | each source's pixel flux, in the scene's source order |
| `scene` | `[512, 512]`, real | the sum of the components |
| `angular_pixel_arcsec` | scalar | 4.0 |
| `x_arcmin`, `y_arcmin` | `[512]`, optional | if given, equal to `grid` within 1e-9 |

A condition scores 0, with the reason, when its file is missing or when any of these rules breaks:
larger than {_mb(MAX_SUBMISSION_BYTES)} uncompressed, an unknown member, a pickled or object array, a non-real
dtype, a wrong shape or pitch, NaN or Inf, a value below `-{_g(NEGATIVE_TOL)}` times the reference's peak pixel
(rounding below zero is accepted), `sum abs(scene - sum_k components_k) > {_g(SCENE_SUM_TOL)} sum abs(sum_k components_k)`,
or a source recording more than `F (sum_j w_j) (1 + {_g(GAIN_TOL)})` (an energy gain; not applied to flux 0).
A missing condition stays in the denominator. Development and test conditions have different names, so
one folder may hold both; each split is scored on its own conditions.

## Scoring (`halo_development_score`, 0-100)
For one condition let `R_k` be the reference component of source k, `S_k` yours and
`E_ref = sum_k sum R_k` (what the reference records).
Each term is `exp(-error / scale)` and the condition scores `100 sum weight x term`:

| term | error | weight | scale | where |
|---|---|---|---|---|
{terms}

* **Main lobe** of a source: the disk about its reference wick of radius
  `{FIRST_DARK:.5f} lambda_max / D` plus the disk's radius (lambda_max: its longest wavelength; D: the pupil).
  **Halo region**: the pixels outside every main lobe. The reference wick is the centre of the reference
  pattern's main image (an intensity-weighted centroid iterated within the main lobe from the geometric
  wick above); the same fixed anchors serve the reference and your arrays.
* **Polar grid** about each reference wick: {POLAR_RADII} radii `(i + 1/2) * {POLAR_MAX_ARCMIN:g} / {POLAR_RADII}`
  arcmin and {POLAR_ANGLES} angles `{360 // POLAR_ANGLES} j` degrees; your pixels are sampled there by
  bilinear interpolation between pixel centres; samples outside the window are left out of both sums.
* **Calibration conditions** (development split only): {_ids(dev_cases, "calibration_ring")}. Every term
  above applies. **Complex fields** (no stable single circle is expected): {_ids(dev_cases, "complex_field")},
  and every condition of the test split: the ring term is dropped and the halo term weighs
  {COMPLEX_HALO_WEIGHT:.0%}. Other conditions drop the ring term and share its weight out in proportion.
* **Zero flux** (every source of the condition has flux 0): the only term is the leaked energy
  `sum abs(S)` in source-flux units, scale {LEAK_SCALE:g}.

**Pair**: `rel = sum_k sum abs((S_b - S_a) - (R_b - R_a)) / max(sum_k sum abs(R_b - R_a), {PAIR_FLOOR:g})` and
`paired = 100 exp(-rel / {PAIR_SCALE:g})`; 0 if either condition is missing or invalid. **Case** =
{CONDITION_SHARE:.0%} of the mean of its two conditions + {PAIR_SHARE:.0%} of `paired`. The split's
`halo_development_score` is the mean over its 14 cases (a case whose reference failed the release's
cross-check is left out and listed under `not_ranked`). The scales are development choices; the score is
not a clinical accuracy, and `clinical_score` and `professional_score` are `null`.

## What is scored and what is diagnostic
* **Scored**: the arrays above, and only they, through `halo_development_score`.
* **Diagnostic, never in the headline**: `diagnostic_subscores` (mean case score over the cases with a
  source off fixation or a decentred optic, and over the others), every per-term error and value in the
  score file, and the structured predictions: the items of each case's `predict` list (wick position,
  halo centre, ring radius, ...) may be written per condition as JSON following `prediction.schema.json`
  (for people to review; the automatic score never reads them). The research cards are not scored.
* Every `null` in a score file comes with its reason (`null_reasons`, or a `reason` beside the value).

## Running in the sandbox (`run INPUT OUTPUT`)
A submission is a folder holding an executable `run` (a `#!` script or a binary) and, optionally,
`manifest.json` with `{{"track": "from-scratch"}}` (the default) or `{{"track": "reference-assisted"}}`.
The evaluator runs it with `icl halo-run` as

    /submission/run /input /output          (working folder /tmp)

* `/input` is a read-only copy of this folder and nothing else: no references, no release key, no gallery.
* `/output` is empty. Write `<condition>.npz` there for every condition of `halo_cases.json` and, when it
  is present, of `halo_cases_test.json` (flat, no subfolders). The evaluator scores one split at a time
  (`--split dev` or `--split test`) on its own conditions; other files are ignored.
* The run must exit with status 0 and break no rule; otherwise it is not ok and scores 0 whatever it
  wrote (the record gives the exit status, the last lines of stderr and the path of the logs).
* On the from-scratch track the reference package `icl` cannot be imported and the submission's files are
  compared with its code (a match moves the run to the reference-assisted board); on the
  reference-assisted track `import icl` works.
* Limits (the defaults): {limits.cpus} cores, capped at the host's (`ICL_CPUS` and the OpenMP / OpenBLAS /
  MKL thread counts say how many were granted); {_mb(limits.memory_bytes)} of memory for all processes
  together; {limits.timeout_s:g} s of wall time; no network; `/tmp` and `/dev/shm` of {_mb(limits.tmp_bytes)} each;
  OUTPUT at most {_mb(limits.output_bytes)} and {limits.output_entries} entries. The interpreter is the
  evaluator's Python with these packages when installed there: {", ".join(ALLOWED_DISTRIBUTIONS)}.
"""
