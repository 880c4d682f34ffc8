"""Fuzz targets: each takes raw bytes, feeds them to one loader as a file, and lets only expected errors pass.

An expected error is the loader's documented refusal (:class:`icl.errors.InputError`, or the halo
evaluator's :class:`icl.halo.evaluate.Invalid`). Anything else escaping a target is a finding. The targets
are used by ``run.py`` (atheris) and replayed on every saved input by ``test_fuzz_regressions.py``.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
from icl.errors import InputError
from icl.halo.evaluate import Invalid, ReferenceCondition, load_submission
from icl.io import load_json, load_npz
from icl.optics import Scene
from icl.patient.schema import Predictions, load_predictions, load_reports
from icl.patient.scoring import _as_prediction, score

_DIR = Path(tempfile.mkdtemp(prefix="icl-fuzz-"))
N = 8  # a small detector keeps each halo input cheap; the validation rules do not depend on its size


def _file(data: bytes, name: str) -> Path:
    path = _DIR / name
    tmp = _DIR / f".{name}.tmp"
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def fuzz_load_npz(data: bytes) -> None:
    """Any member names, any headers: the loader reads or refuses."""
    try:
        load_npz(_file(data, "f.npz"), required=(), optional=(), allow_extra=True, max_bytes=16 << 20)
    except InputError:
        pass


def fuzz_load_json(data: bytes) -> None:
    """Any bytes: the loader parses or refuses."""
    try:
        load_json(_file(data, "f.json"), max_bytes=1 << 20)
    except InputError:
        pass


def _halo_reference() -> ReferenceCondition:
    scene = Scene.from_dict({"detector": {"n": N, "pitch_arcsec": 4.0},
                             "sources": [{"id": "L1"}, {"id": "L2", "x_arcmin": 0.1, "flux": 0.5}]},
                            file="fuzz")
    comps = np.full((2, N, N), 1.0 / (4 * N * N))
    axis = (np.arange(N) - (N - 1) / 2) * 4.0 / 60
    return ReferenceCondition("F01_a", "F01", scene, comps, axis, {})


_HALO_REF = _halo_reference()


def fuzz_halo_submission(data: bytes) -> None:
    """A submitted condition file: valid components or an ``Invalid`` with its reason."""
    try:
        comps = load_submission(_file(data, "F01_a.npz"), _HALO_REF)
    except Invalid:
        return
    assert comps.shape == (2, N, N) and comps.dtype == np.float64 and np.all(np.isfinite(comps))


def fuzz_patient_reports(data: bytes) -> None:
    """A report file: validated records or an InputError; valid records are then scored against themselves."""
    path = _file(data, "reports.json")
    try:
        reports = load_reports(path)
    except InputError:
        return
    if len(reports.records) <= 6:
        preds = Predictions(file="self", valid={t: _as_prediction(r[0]) for t, r in reports.targets.items()})
        score(reports, preds, 64)


def fuzz_patient_predictions(data: bytes) -> None:
    """A prediction file: never raises (bad entries and unreadable files are recorded as reasons)."""
    load_predictions(_file(data, "predictions.json"), {"P1|V1|OD|P01": ["L1", "L2"]})


def fuzz_scene(data: bytes) -> None:
    """A scene JSON (``icl render SPEC``): a Scene or an InputError naming the field."""
    path = _file(data, "scene.json")
    try:
        Scene.from_dict(load_json(path, max_bytes=1 << 20), file=str(path))
    except InputError as exc:
        assert exc.file == str(path)


TARGETS: dict[str, Callable[[bytes], None]] = {
    "load_npz": fuzz_load_npz,
    "load_json": fuzz_load_json,
    "halo_submission": fuzz_halo_submission,
    "patient_reports": fuzz_patient_reports,
    "patient_predictions": fuzz_patient_predictions,
    "scene": fuzz_scene,
}


def _npz(**arrays: np.ndarray) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for k, v in arrays.items():
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(v), allow_pickle=False)
            zf.writestr(f"{k}.npy", member.getvalue())
    return buf.getvalue()


def seeds(target: str) -> list[bytes]:
    """Valid starting inputs for ``target``, so that mutations reach past the first checks."""
    from icl._paths import cases_dir

    if target in ("load_npz", "halo_submission"):
        c = _HALO_REF.components
        return [_npz(components=c, scene=c.sum(axis=0), angular_pixel_arcsec=np.float64(4.0)),
                _npz(components=c, scene=c.sum(axis=0), angular_pixel_arcsec=np.float64(4.0),
                     x_arcmin=_HALO_REF.axis, y_arcmin=_HALO_REF.axis)]
    if target == "scene":
        return [(cases_dir() / "examples" / "scene.json").read_bytes()]
    if target in ("patient_reports", "load_json"):
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from test_patient_helpers import circle, doc, record

        rec = doc(record([circle()]), record([circle(r=1.5)], repeat="R2"))
        return [json.dumps(rec).encode(), (cases_dir() / "examples" / "scene.json").read_bytes()]
    if target == "patient_predictions":
        return [json.dumps({"predictions": [{"target_id": "P1|V1|OD|P01", "presence_probability": 0.9,
                                             "features": []}]}).encode()]
    raise KeyError(target)
