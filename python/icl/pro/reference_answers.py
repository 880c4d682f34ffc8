"""A run OUTPUT built from a release's private references: the validity probe of the scoring.

Every auto check must be passable by the right answer. :func:`write_reference_run` writes, for every
instance of a release, the artifacts each auto check reads, filled from ``private/references`` and
``private/psf``; where a check needs a second computation (a second solver, a repeat by another declared
method, a convergence series, a second fitting solution) it is computed here from the instance's inputs.
Scoring that OUTPUT must give every auto check its full mark and pass every gate; a check that does not is
wrong, or its reference is (``tests/test_pro_validity.py``).

This reads private data: it is a test and calibration tool, never a submission.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from icl.crosscheck import with_true_values
from icl.io import load_json, load_npz, write_json
from icl.pro import references as ref
from icl.pro.catalog import load_catalog
from icl.pro.package import PACKAGE_FILES, load_package, scene_from_package
from icl.pro.results_schema import write_psf

# Second method of the cross-solver and repeat checks: a finer pupil sampling and a 1.4 times longer FFT
# period than the reference render's.
ALT_PUPIL_SAMPLES, ALT_PERIOD = 384, 1.4
# FFT period floors (arcmin): each level changes the pupil pitch and the window for every pupil, whereas a
# floor on the pupil samples changes nothing where the period's floor already samples more finely (OOD).
CONVERGENCE_LEVELS = (140.0, 180.0, 220.0)  # min_period_arcmin


def _render(pkg: dict, **sampling: Any) -> np.ndarray:
    return ref.render_psf(scene_from_package(pkg), **sampling)[0]


def _alt(pkg: dict) -> tuple[np.ndarray, str]:
    scene = scene_from_package(pkg)
    period = ALT_PERIOD * ref.reference_sampling(scene).min_period_arcmin
    method = f"icl.optics.render, {ALT_PUPIL_SAMPLES} pupil samples, FFT period {period:.0f} arcmin"
    return ref.render_psf(scene, min_pupil_samples=ALT_PUPIL_SAMPLES, min_period_arcmin=period)[0], method


def _input_dir(release: Path, iid: str) -> Path:
    for split in ("train", "dev", "test", "ood"):
        d = release / "inputs" / split / iid
        if d.is_dir():
            return d
    raise FileNotFoundError(f"{release}/inputs/*/{iid}")


def _model_eye(release: Path) -> dict:
    """A nested ``model/eye.json`` whose provenance repeats the inputs' (unknown stays unknown)."""
    rows = load_json(release / "private" / "splits.json")["instances"]
    iid = rows[0]["id"]
    idir = _input_dir(release, iid)
    case = sorted(p for p in (idir / "cases").iterdir())[0]
    pkg = load_package(case)
    return {
        name: {k: v for k, v in pkg[name].items() if isinstance(v, dict) and "status" in v}
        for name in PACKAGE_FILES
        if name in ("eye", "implant")
    }


class _Writer:
    def __init__(self, release: Path, out: Path, iid: str, noise: dict):
        self.release, self.iid, self.noise = release, iid, noise
        self.res = out / "results" / iid
        self.inputs = _input_dir(release, iid)
        self.metrics: dict[str, dict] = {}

    def pkg(self, case: str) -> dict:
        """The case's package with held-out measurement noise undone: the references use the true values."""
        return with_true_values(load_package(self.inputs / "cases" / case), self.noise)

    def psf(self, case: str, stem: str = "psf_linear", img: np.ndarray | None = None) -> None:
        stored = load_npz(
            self.release / "private" / "psf" / self.iid / f"{case}.npz",
            required=("psf", "x_arcmin", "y_arcmin"),
        )
        pkg = self.pkg(case)
        lams = [w for s in pkg["illumination"]["sources"] for w, _ in s["spectrum"]["value"]]
        write_psf(
            self.res / case / f"{stem}.npz",
            stored["psf"] if img is None else img,
            stored["x_arcmin"],
            stored["y_arcmin"],
            pkg["detector"]["pitch_arcsec"]["value"],
            sorted(set(lams)),
        )

    def metric(self, case: str, key: str, value: Any) -> None:
        self.metrics.setdefault(case, {})[key] = value

    def flush(self) -> None:
        for case, m in self.metrics.items():
            write_json(self.res / case / "metrics.json", m)


def _answer(w: _Writer, ch, r: dict) -> None:
    kind = ch.kind
    if kind == "psf":
        for case in r["cases"]:
            w.psf(case)
    elif kind == "energy":
        for case, want in r["cases"].items():
            transmitted = want["incident"] - want["blocked"]
            write_json(
                w.res / case / "energy.json",
                {
                    "units": "source_flux",
                    "incident": want["incident"],
                    "reflected": 0.0,
                    "absorbed": 0.0,
                    "blocked": want["blocked"],
                    "transmitted": transmitted,
                    "clipped": transmitted - want["recorded"],
                    "numerical_residual": 0.0,
                },
            )
    elif kind in ("scalar", "angle", "label", "set", "sequence", "interval_bounds"):
        w.metric(r["case"], ch.key, r["value"])
    elif kind == "choice":
        w.metric(r["case"], ch.key, r["accept"][0])
    elif kind == "interval":
        w.metric(r["case"], ch.key, [r["truth"] - r["max_width"] / 4, r["truth"] + r["max_width"] / 4])
    elif kind == "coverage":
        w.metric(r["case"], ch.key, [[t - 0.01, t + 0.01] for t in r["truths"]])
    elif kind == "solutions":
        w.metric(r["case"], ch.key, [r["truth"]] + ([r["partner"]] if "partner" in r else []))
    elif kind == "rotation":
        for case in (r["base"], r["rotated"]):
            w.psf(case)
    elif kind == "pair":
        for a, b, *_ in r.get("equal", []) + r.get("differ", []):
            w.psf(a)
            w.psf(b)
        for _, stem, case in r.get("equal_files", []):
            img, method = _alt(w.pkg(case))
            w.psf(case)
            w.psf(case, stem, img)
            w.metric(case, "methods", {"psf_linear": "icl.optics.render, reference sampling", stem: method})
    elif kind == "repeat":
        img, method = _alt(w.pkg(r["case"]))
        w.psf(r["case"])
        w.psf(r["case"], "psf_repeat", img)
        w.metric(
            r["case"],
            "methods",
            {"psf_linear": "icl.optics.render, reference sampling", "psf_repeat": method},
        )
    elif kind == "convergence":
        pkg = w.pkg(r["case"])
        axis = load_npz(
            w.release / "private" / "psf" / w.iid / f"{r['case']}.npz",
            required=("psf", "x_arcmin", "y_arcmin"),
        )["x_arcmin"]
        vals = [ref.encircled(_render(pkg, min_period_arcmin=p), axis, 1.0) for p in CONVERGENCE_LEVELS]
        write_json(
            w.res / "experiments.json",
            {
                "experiments": [
                    {
                        "id": "ee-vs-fft-period",
                        "kind": "convergence",
                        "description": "encircled energy within 1 arcmin against the FFT period",
                        "metric": ch.key,
                        "parameter": "min_period_arcmin",
                        "levels": list(CONVERGENCE_LEVELS),
                        "values": vals,
                    }
                ]
            },
        )
    elif kind in ("manifest", "provenance"):
        pass  # written once for the run
    else:
        raise ValueError(f"{w.iid} {ch.id}: no reference answer for kind {kind!r}")


def write_reference_run(release: str | Path, out: str | Path, instances: list[str] | None = None) -> int:
    """Write an OUTPUT folder answering every auto check of ``release`` with its reference; returns instances."""
    release, out = Path(release), Path(out)
    catalog = load_catalog(release / "catalog.json")
    rows = load_json(release / "private" / "splits.json")["instances"]
    n = 0
    for row in rows:
        if instances is not None and row["id"] not in instances:
            continue
        doc = load_json(release / "private" / "references" / f"{row['id']}.json")
        refs = doc["checks"]
        w = _Writer(release, out, row["id"], doc.get("measurement_noise", {}))
        w.res.mkdir(parents=True, exist_ok=True)
        for ch in catalog.template(row["template"]).auto_checks:
            _answer(w, ch, refs[ch.id])
        w.flush()
        n += 1
    write_json(out / "manifest.json", {"random_seeds": {}, "versions": {"submission": "reference-answers"}})
    write_json(out / "model" / "eye.json", _model_eye(release))
    return n
