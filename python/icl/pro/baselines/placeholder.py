"""The lazy participant: no physics, only placeholders shaped to what the scorer reads.

It reads each ``task.json`` as a participant does and writes, for every check, the answer that costs
nothing: a lopsided blob as every PSF and a copy scaled by 1 - 1e-6 as the "second method", a closed
energy ledger, 0 for every number, the whole vocabulary for every set, the widest interval for every
interval, a constant "convergence" series, a one-parameter eye model and a manifest. Every check it earns
is free credit; the calibration lists it among the baselines (it must stay near the constant floor and
pass no gate), and ``tests/test_pro_placeholder.py`` holds each formerly free check at 0.
"""

from __future__ import annotations

from pathlib import Path


from icl.io import load_json, write_json
from icl.pro.baselines.runner import _gauss, _grid, energy_ledger
from icl.pro.package import load_package
from icl.pro.results_schema import write_psf

WIDE = 1e300  # the widest interval a JSON number allows, about


def _answer(check: dict, task: dict) -> object:
    """What a participant without a model writes for one metrics check."""
    text = check["text"].lower()
    if "interval" in text:
        n = len(task.get("queries", [])) if "queries" in task else 0
        return [[0.0, 1.0]] * n if n else [-WIDE, WIDE]
    if "vocabulary" in task:
        return list(task["vocabulary"])
    return 0.0


def run(input_dir: Path, output_dir: Path) -> int:
    """Write placeholders for every instance under ``input_dir``; return the number of instances."""
    count = 0
    for idir in sorted(p for p in input_dir.iterdir() if (p / "task.json").is_file()):
        task = load_json(idir / "task.json")
        out = output_dir / "results" / idir.name
        metric_checks = [c for c in task["checks"] if c["mode"] == "auto"
                         and c.get("artifact", "").endswith("metrics.json")]
        for case in task["cases"]:
            pkg = load_package(idir / "cases" / case)
            axis = _grid(pkg)
            img = _gauss(axis, 0.3, 0.1, 0.2) + 0.5 * _gauss(axis, -0.2, 0.0, 0.1)  # lopsided: rotations change it
            waves = sorted({w for s in pkg["illumination"]["sources"] for w, _ in s["spectrum"]["value"]})
            pitch = pkg["detector"]["pitch_arcsec"]["value"]
            write_psf(out / case / "psf_linear.npz", img, axis, axis, pitch, waves)
            for stem in ("psf_repeat", "psf_alt"):
                write_psf(out / case / f"{stem}.npz", img * (1 - 1e-6), axis, axis, pitch, waves)
            write_json(out / case / "energy.json", energy_ledger(1.0, 0.0, float(img.sum())))
            metrics = {c["key"]: _answer(c, task) for c in metric_checks}
            metrics["methods"] = {"psf_linear": "method one", "psf_repeat": "method two", "psf_alt": "method three"}
            write_json(out / case / "metrics.json", metrics)
        convergence = [c["key"] for c in task["checks"] if c.get("artifact", "").endswith("experiments.json")]
        if convergence:
            write_json(out / "experiments.json", {"experiments": [
                {"id": f"study-{i}", "kind": "convergence", "description": "a series", "metric": key,
                 "parameter": "fft_factor", "levels": [2, 3, 4], "values": [0.5, 0.5, 0.5]}
                for i, key in enumerate(convergence)]})
        count += 1
    write_json(output_dir / "model" / "eye.json", {"eye": {"axial_length": {
        "value": 24.0, "unit": "mm", "source": "a typical eye", "uncertainty": None, "status": "synthetic"}}})
    write_json(output_dir / "manifest.json", {"random_seeds": {}, "versions": {"submission": "placeholder"}})
    return count

