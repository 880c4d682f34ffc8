"""The one schema of professional-track result files, shared by the contract validator and the scorer.

A result file is checked by its name (:data:`SCHEMAS`): the six files of a case in the submission
contract (``psf_linear.npz``, ``energy.json``, ``paths.npz``, ``metrics.json``, ``retinal_linear.npz``,
``preview.png``), the further PSFs some checks ask for (``psf_repeat.npz``, ``psf_alt.npz``, same schema
as ``psf_linear.npz``) and an instance's ``experiments.json`` in a run's OUTPUT. :mod:`icl.pro.contract`
validates a submission's ``results/<case>/`` with these checkers; :mod:`icl.pro.score` validates every
file before a check reads it (an invalid file scores 0 for the checks it feeds, with the file, field and
reason) and :func:`validate_output` lists every problem of a run's OUTPUT for the run record.

Every checker has the signature ``check(report, root, rel)`` and reports each problem with
``report.add(file, field, message)``; it never raises on bad content and opens only the file named.

``energy.json`` (units of the incident source flux)::

    incident = reflected + transmitted + absorbed + blocked + numerical_residual    (within 1e-9)
    clipped <= transmitted          (transmitted light falling outside the detector window)
    recorded = transmitted - clipped                                  (what reaches the detector)
"""

from __future__ import annotations

import math
import os
import re
import stat
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from icl.errors import InputError
from icl.io import load_json, load_npz, write_npz

#: Pixel values are flux per pixel in units of the source flux.
FLUX_UNITS = "source_flux_per_pixel"
#: How a PSF is normalised: ``source_flux`` means unit source flux into the infinite plane, cropped to the
#: window (what falls outside is counted as ``clipped`` in energy.json, never renormalised away).
NORMALISATIONS = ("source_flux",)
ENERGY_UNITS = "source_flux"
#: Relative tolerance on grid arithmetic (axis spacing, field of view): float32 axes are accepted.
GRID_RTOL = 1e-6
#: Largest negative pixel accepted, relative to the peak: FFT round-off, not negative light.
NEGATIVE_RTOL = 1e-9
#: Relative tolerance on the energy identity; the residual is declared, so only rounding remains.
ENERGY_RTOL = 1e-9
ENERGY_TERMS = (
    "incident",
    "reflected",
    "transmitted",
    "absorbed",
    "blocked",
    "clipped",
    "numerical_residual",
)
PSF_KEYS = (
    "psf",
    "x_arcmin",
    "y_arcmin",
    "angular_pixel_arcsec",
    "fov_arcmin",
    "wavelength_nm",
    "units",
    "normalisation",
)
MAX_PNG_SIDE = 16384
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: The six files of a case in the submission contract.
RESULT_FILES = (
    "psf_linear.npz",
    "energy.json",
    "paths.npz",
    "metrics.json",
    "retinal_linear.npz",
    "preview.png",
)
#: Bounds on :func:`validate_output`'s walk, so a hostile OUTPUT cannot stall it.
MAX_OUTPUT_ENTRIES = 200_000
MAX_DEPTH = 4  # results/<instance>/<case>/<file>


class Findings:
    """A plain collector of problems: ``add(file, field, message)``; ``items`` as dicts."""

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []

    def add(self, file: str, fld: str, message: str) -> None:
        """Record one problem."""
        self.items.append({"file": file, "field": fld, "message": message})


# ------------------------------------------------------------------------------------------ helpers


def _json(report: Any, root: Path, rel: str) -> Any:
    try:
        return load_json(root / rel)
    except InputError as exc:
        report.add(rel, exc.field or "", exc.reason)
        return None


def _npz(
    report: Any, root: Path, rel: str, required: tuple[str, ...], optional: tuple[str, ...]
) -> dict[str, np.ndarray] | None:
    try:
        return load_npz(root / rel, required=required, optional=optional)
    except InputError as exc:
        report.add(rel, exc.field or "", exc.reason)
        return None


def finite_number(x: Any) -> bool:
    """A JSON number that is finite as a float (booleans are not numbers here; nor is a 400-digit integer)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return False
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


def _text_scalar(
    report: Any, rel: str, arrays: dict[str, np.ndarray], key: str, allowed: tuple[str, ...]
) -> None:
    a = arrays[key]
    if a.shape != () or a.dtype.kind != "U":
        report.add(rel, key, f"must be a 0-d unicode string array, got {a.dtype} {a.shape}")
    elif str(a) not in allowed:
        report.add(rel, key, f"must be one of {list(allowed)}, got {str(a)!r}")


def _float_array(report: Any, rel: str, key: str, a: np.ndarray, ndim: tuple[int, ...]) -> bool:
    if a.dtype.kind != "f":
        report.add(rel, key, f"must be a floating-point array (linear, not display-mapped), got {a.dtype}")
        return False
    if a.ndim not in ndim:
        report.add(rel, key, f"must have {' or '.join(map(str, ndim))} dimensions, got shape {a.shape}")
        return False
    if a.size == 0:
        report.add(rel, key, "is empty")
        return False
    if not np.all(np.isfinite(a)):
        report.add(rel, key, "holds NaN or infinite values")
        return False
    return True


def _linear_image(report: Any, rel: str, key: str, a: np.ndarray) -> None:
    peak = float(np.max(np.abs(a)))
    if float(np.min(a)) < -NEGATIVE_RTOL * peak:
        report.add(
            rel, key, f"negative intensity {float(np.min(a)):.3g} (more than round-off of peak {peak:.3g})"
        )


def _grid(report: Any, rel: str, arrays: dict[str, np.ndarray], shape: tuple[int, int]) -> None:
    """Check ``x_arcmin``, ``y_arcmin`` and ``angular_pixel_arcsec`` against an image of ``shape``."""
    pitch_a = arrays["angular_pixel_arcsec"]
    if pitch_a.shape != () or pitch_a.dtype.kind not in "fiu" or not np.isfinite(pitch_a) or pitch_a <= 0:
        report.add(rel, "angular_pixel_arcsec", "must be a positive finite scalar (arcsec)")
        return
    step = float(pitch_a) / 60.0
    for key, n in (("y_arcmin", shape[0]), ("x_arcmin", shape[1])):
        axis = arrays[key]
        if not _float_array(report, rel, key, axis, (1,)):
            continue
        if axis.shape != (n,):
            report.add(rel, key, f"length {axis.shape[0]} does not match the image side {n}")
            continue
        if n > 1 and not np.allclose(np.diff(axis), step, rtol=GRID_RTOL, atol=0):
            report.add(rel, key, f"must increase in steps of angular_pixel_arcsec/60 = {step:.6g} arcmin")
    if "fov_arcmin" in arrays:
        fov = arrays["fov_arcmin"]
        want = np.array([shape[1], shape[0]], dtype=float) * step
        if fov.shape != (2,) or fov.dtype.kind not in "fiu":
            report.add(rel, "fov_arcmin", f"must be [width, height] in arcmin, got {fov.dtype} {fov.shape}")
        elif not np.allclose(fov, want, rtol=GRID_RTOL, atol=0):
            report.add(rel, "fov_arcmin", f"{fov.tolist()} differs from n * pitch = {want.tolist()} arcmin")


# --------------------------------------------------------------------------------------- file checks


def check_psf(report: Any, root: Path, rel: str) -> None:
    """``psf_linear.npz`` (and ``psf_repeat.npz``, ``psf_alt.npz``): every key of :data:`PSF_KEYS`."""
    arrays = _npz(report, root, rel, PSF_KEYS, ())
    if arrays is None:
        return
    _text_scalar(report, rel, arrays, "units", (FLUX_UNITS,))
    _text_scalar(report, rel, arrays, "normalisation", NORMALISATIONS)
    psf = arrays["psf"]
    wl = arrays["wavelength_nm"]
    if _float_array(report, rel, "wavelength_nm", wl, (1,)) and np.any(wl <= 0):
        report.add(rel, "wavelength_nm", "wavelengths must be positive (nm)")
    if not _float_array(report, rel, "psf", psf, (2, 3)):
        return
    _linear_image(report, rel, "psf", psf)
    if psf.ndim == 3 and wl.ndim == 1 and wl.shape[0] != psf.shape[0]:
        report.add(rel, "wavelength_nm", f"length {wl.shape[0]} does not match psf planes {psf.shape[0]}")
    _grid(report, rel, arrays, psf.shape[-2:])


def check_retinal(report: Any, root: Path, rel: str) -> None:
    """``retinal_linear.npz``: a linear HDR image on the detector grid, optional per-source components."""
    arrays = _npz(
        report,
        root,
        rel,
        ("image", "x_arcmin", "y_arcmin", "angular_pixel_arcsec", "units"),
        ("components", "source_ids", "fov_arcmin"),
    )
    if arrays is None:
        return
    _text_scalar(report, rel, arrays, "units", (FLUX_UNITS,))
    image = arrays["image"]
    if not _float_array(report, rel, "image", image, (2,)):
        return
    _linear_image(report, rel, "image", image)
    _grid(report, rel, arrays, image.shape)
    comps = arrays.get("components")
    if comps is not None and _float_array(report, rel, "components", comps, (3,)):
        if comps.shape[1:] != image.shape:
            report.add(rel, "components", f"shape {comps.shape} does not stack images of shape {image.shape}")
        else:
            _linear_image(report, rel, "components", comps)
    ids = arrays.get("source_ids")
    if ids is not None:
        if ids.dtype.kind != "U" or ids.ndim != 1:
            report.add(rel, "source_ids", "must be a 1-d unicode array")
        elif comps is not None and ids.shape[0] != comps.shape[0]:
            report.add(rel, "source_ids", f"{ids.shape[0]} ids for {comps.shape[0]} components")


def check_paths(report: Any, root: Path, rel: str) -> None:
    """``paths.npz``: sampled ray polylines with branch weights, optionally a wavefront."""
    wave = ("wavefront_nm", "pupil_u_mm", "pupil_v_mm")
    arrays = _npz(report, root, rel, ("points_mm", "weights", "branch"), wave)
    if arrays is None:
        return
    pts, w, br = arrays["points_mm"], arrays["weights"], arrays["branch"]
    n = None
    if _float_array(report, rel, "points_mm", pts, (3,)):
        if pts.shape[2] != 3 or pts.shape[1] < 2:
            report.add(
                rel, "points_mm", f"must be [n_rays, n_vertices >= 2, 3] (x, y, z in mm), got {pts.shape}"
            )
        else:
            n = pts.shape[0]
    if _float_array(report, rel, "weights", w, (1,)) and np.any(w < 0):
        report.add(rel, "weights", "branch weights must be non-negative (fraction of the ray's flux)")
    if br.dtype.kind not in "iu" or br.ndim != 1:
        report.add(rel, "branch", f"must be a 1-d integer array of branch ids, got {br.dtype} {br.shape}")
    for key, a in (("weights", w), ("branch", br)):
        if n is not None and a.ndim == 1 and a.shape[0] != n:
            report.add(rel, key, f"length {a.shape[0]} does not match {n} rays in points_mm")
    given = [k for k in wave if k in arrays]
    if given and len(given) != len(wave):
        report.add(rel, "wavefront_nm", f"a wavefront needs all of {list(wave)}, got {given}")
    elif given:
        wf = arrays["wavefront_nm"]
        if _float_array(report, rel, "wavefront_nm", wf, (2,)):
            for key, n_ax in (("pupil_v_mm", wf.shape[0]), ("pupil_u_mm", wf.shape[1])):
                ax = arrays[key]
                if _float_array(report, rel, key, ax, (1,)) and ax.shape != (n_ax,):
                    report.add(rel, key, f"length {ax.shape[0]} does not match the wavefront side {n_ax}")


def energy_terms(obj: Any, report: Any, rel: str) -> dict[str, float] | None:
    """The seven terms of a parsed ``energy.json`` if it follows the schema, else None (problems reported)."""
    local = Findings()
    values: dict[str, float] = {}
    if not isinstance(obj, dict):
        local.add(rel, "", "must be a JSON object")
        obj = {}
    else:
        for key in sorted(set(obj) - set(ENERGY_TERMS) - {"units", "notes"}):
            local.add(rel, key, "unknown field")
        if obj.get("units") != ENERGY_UNITS:
            local.add(
                rel, "units", "must be 'source_flux' (every term is a fraction of the incident source flux)"
            )
        if "notes" in obj and not isinstance(obj["notes"], str):
            local.add(rel, "notes", "must be a string")
        for key in ENERGY_TERMS:
            v = obj.get(key)
            if not finite_number(v):
                local.add(rel, key, "missing or not a finite number")
            elif key != "numerical_residual" and v < 0:
                local.add(rel, key, f"must be non-negative, got {v}")
            else:
                values[key] = float(v)
    if len(values) == len(ENERGY_TERMS):
        booked = sum(
            values[k] for k in ("reflected", "transmitted", "absorbed", "blocked", "numerical_residual")
        )
        if abs(values["incident"] - booked) > ENERGY_RTOL * max(1.0, abs(values["incident"])):
            local.add(
                rel,
                "numerical_residual",
                f"incident {values['incident']!r} != reflected + transmitted + absorbed + blocked + "
                f"numerical_residual = {booked!r}",
            )
        if values["clipped"] > values["transmitted"] * (1 + ENERGY_RTOL):
            local.add(rel, "clipped", "clipped (transmitted light outside the detector) exceeds transmitted")
    for item in local.items:
        report.add(item["file"], item["field"], item["message"])
    return None if local.items else values


def recorded(terms: dict[str, float]) -> float:
    """Light that reaches the detector window: ``transmitted - clipped``."""
    return terms["transmitted"] - terms["clipped"]


def check_energy(report: Any, root: Path, rel: str) -> None:
    """``energy.json``: the ledger of :data:`ENERGY_TERMS` in source-flux units, closed within rounding."""
    obj = _json(report, root, rel)
    if obj is not None:
        energy_terms(obj, report, rel)


def check_metrics(report: Any, root: Path, rel: str) -> None:
    """``metrics.json``: an object of named metrics; ``halo_radius_arcmin`` >= 0 or ``"not_detected"``."""
    obj = _json(report, root, rel)
    if obj is None:
        return
    if not isinstance(obj, dict):
        report.add(rel, "", "must be a JSON object of named metrics")
        return
    radius = obj.get("halo_radius_arcmin", 0.0)
    if not (radius == "not_detected" or (finite_number(radius) and radius >= 0)):
        report.add(rel, "halo_radius_arcmin", "must be a non-negative number or 'not_detected'")


def check_png(report: Any, root: Path, rel: str) -> None:
    """``preview.png``: PNG signature and a first IHDR chunk of 1 to :data:`MAX_PNG_SIDE` pixels a side."""
    with open(root / rel, "rb") as fh:
        head = fh.read(33)
    if head[:8] != PNG_SIGNATURE:
        report.add(rel, "", "not a PNG file (bad signature)")
        return
    if len(head) < 33 or head[12:16] != b"IHDR":
        report.add(rel, "IHDR", "PNG has no IHDR chunk first")
        return
    width, height = struct.unpack(">II", head[16:24])
    if not (0 < width <= MAX_PNG_SIDE and 0 < height <= MAX_PNG_SIDE):
        report.add(rel, "IHDR", f"image size {width} x {height} outside 1..{MAX_PNG_SIDE}")


#: Kinds of an experiments.json entry (the submission's and each instance's in a run's OUTPUT).
EXPERIMENT_KINDS = ("intervention", "ablation", "convergence", "inverse", "measurement")
EXPERIMENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_experiment_entries(report: Any, rel: str, obj: Any, series: bool = True) -> list[dict]:
    """Check ``{"experiments": [entry, ...]}``, the one format of every experiments.json; return the entries.

    An entry has a unique ``id``, a ``kind`` of :data:`EXPERIMENT_KINDS` and a ``description``; a
    ``convergence`` entry also ``metric`` (the metrics.json key it studies), ``parameter`` (the sampling
    parameter changed), ``levels`` and ``values`` (lists of one length, at least three, finite numbers).
    With ``series`` False (the submission's own experiments.json, which may describe studies whose series
    are in the instances' files) those four are checked only when an entry gives ``values``.
    """
    if not isinstance(obj, dict) or not isinstance(obj.get("experiments"), list):
        report.add(rel, "experiments", "must be an object with an 'experiments' list")
        return []
    seen: set[str] = set()
    out = []
    for i, exp in enumerate(obj["experiments"]):
        at = f"experiments[{i}]"
        if not isinstance(exp, dict):
            report.add(rel, at, "must be an object")
            continue
        eid = exp.get("id")
        if not isinstance(eid, str) or not EXPERIMENT_ID.match(eid):
            report.add(rel, f"{at}.id", "must be an id of letters, digits, '_', '.', '-'")
        elif eid in seen:
            report.add(rel, f"{at}.id", f"duplicate id {eid!r}")
        else:
            seen.add(eid)
        if exp.get("kind") not in EXPERIMENT_KINDS:
            report.add(rel, f"{at}.kind", f"must be one of {list(EXPERIMENT_KINDS)}")
        if not isinstance(exp.get("description"), str) or not exp["description"].strip():
            report.add(rel, f"{at}.description", "must be a non-empty string")
        if exp.get("kind") == "convergence" and (series or "values" in exp):
            for key in ("metric", "parameter"):
                if not isinstance(exp.get(key), str) or not exp[key].strip():
                    report.add(rel, f"{at}.{key}", "must be a non-empty string")
            lv, vs = exp.get("levels"), exp.get("values")
            if not isinstance(lv, list) or not isinstance(vs, list) or len(lv) != len(vs) or len(vs) < 3:
                report.add(rel, f"{at}.values", "levels and values must be lists of one length, at least three")
            elif not all(finite_number(v) for v in (*lv, *vs)):
                report.add(rel, f"{at}.values", "levels and values must be finite numbers")
        out.append(exp)
    return out


def check_run_experiments(report: Any, root: Path, rel: str) -> None:
    """Check an instance's ``experiments.json`` in a run's OUTPUT (:func:`check_experiment_entries`)."""
    obj = _json(report, root, rel)
    if obj is not None:
        check_experiment_entries(report, rel, obj)


#: File name -> checker. Names not listed are not result files and are left alone.
SCHEMAS: dict[str, Callable[[Any, Path, str], None]] = {
    "psf_linear.npz": check_psf,
    "psf_repeat.npz": check_psf,
    "psf_alt.npz": check_psf,
    "energy.json": check_energy,
    "paths.npz": check_paths,
    "metrics.json": check_metrics,
    "retinal_linear.npz": check_retinal,
    "preview.png": check_png,
}


def check_file(
    report: Any, root: Path, rel: str, check: Callable[[Any, Path, str], None] | None = None
) -> None:
    """Run the checker of ``rel`` (by its file name unless ``check`` is given).

    An unreadable file is a problem of the file, never an exception.
    """
    check = check or SCHEMAS[Path(rel).name]
    try:
        check(report, root, rel)
    except (OSError, ValueError, MemoryError) as exc:
        report.add(rel, "", f"unreadable: {exc}")


def validate_file(root: str | os.PathLike, rel: str) -> list[dict[str, str]]:
    """Problems of one result file ``root/rel`` under the schema of its name (``[]`` when valid)."""
    found = Findings()
    if Path(rel).name in SCHEMAS:
        check_file(found, Path(root), rel)
    return found.items


def validate_output(output: str | os.PathLike, instances: list[str] | None = None) -> list[dict[str, str]]:
    """List every problem of the result files in a run's OUTPUT.

    Files are ``results/<instance>/<case>/<file>`` and ``results/<instance>/experiments.json``; each problem
    is ``{file, field, message}`` with ``file`` relative to OUTPUT. Links and special files are reported,
    never followed or opened; the walk is bounded (depth and entries).
    """
    root = Path(output)
    found = Findings()
    base = root / "results"
    if not base.is_dir() or base.is_symlink():
        return found.items
    count = 0
    stack = [(base, 1)] if instances is None else [(base / i, 2) for i in instances if (base / i).is_dir()]
    while stack:
        folder, depth = stack.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            found.add(folder.relative_to(root).as_posix(), "", f"cannot list folder: {exc.strerror or exc}")
            continue
        for entry in entries:
            count += 1
            if count > MAX_OUTPUT_ENTRIES:
                found.add("results", "", f"more than {MAX_OUTPUT_ENTRIES} entries; the rest was not checked")
                return found.items
            rel = Path(entry.path).relative_to(root).as_posix()
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                found.add(rel, "", f"cannot stat: {exc.strerror or exc}")
                continue
            if stat.S_ISDIR(st.st_mode):
                if depth < MAX_DEPTH - 1:
                    stack.append((Path(entry.path), depth + 1))
            elif not stat.S_ISREG(st.st_mode):
                if entry.name in SCHEMAS or entry.name == "experiments.json":
                    found.add(rel, "", "not a regular file (link or special file): refused")
            elif depth == 3 and entry.name in SCHEMAS:
                check_file(found, root, rel)
            elif depth == 2 and entry.name == "experiments.json":
                check_file(found, root, rel, check_run_experiments)
    return found.items


def write_psf(
    path: str | os.PathLike,
    psf: np.ndarray,
    x_arcmin: np.ndarray,
    y_arcmin: np.ndarray,
    pitch_arcsec: float,
    wavelength_nm: list[float] | np.ndarray,
) -> None:
    """Write a ``psf_linear.npz`` that follows the schema (grid, field of view, units, normalisation)."""
    psf = np.asarray(psf, dtype=float)
    ny, nx = psf.shape[-2:]
    write_npz(
        path,
        psf=psf,
        x_arcmin=np.asarray(x_arcmin, dtype=float),
        y_arcmin=np.asarray(y_arcmin, dtype=float),
        angular_pixel_arcsec=np.float64(pitch_arcsec),
        fov_arcmin=np.array([nx, ny], dtype=float) * pitch_arcsec / 60.0,
        wavelength_nm=np.atleast_1d(np.asarray(wavelength_nm, dtype=float)),
        units=np.array(FLUX_UNITS),
        normalisation=np.array(NORMALISATIONS[0]),
    )
