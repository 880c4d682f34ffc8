"""Measurement noise in held-out inputs, and the error budget it implies for each check.

New seeds alone do not stop a solver that memorised the public formulas; held-out instances also state
their measurements as measurements. In the ``test`` and ``ood`` splits every base-eye biometric value
(:data:`NOISY_EYE`) and the implant's vault are stated as ``true + error``, the error drawn uniformly
within the parameter's declared uncertainty from a keyed stream of that instance and parameter
(``HMAC-SHA256(key, "pro/noise/<instance>/<parameter>")``), and marked ``status: "measured"``. The same
value is stated in every case of the instance (one eye, measured once). Values a task sets (a pupil, a
decentre, a wavelength) and derived values (``thin_eye_excess``, ``thin_power``, ICL radii) are stated
exactly. References of inference templates keep the true values.

A solver that applies the reference computation to the stated values is then off by the propagated
error. Each auto check with a numeric tolerance therefore gets an error budget: every noisy parameter is
moved by plus and by minus its full declared uncertainty (finite differences at the ends of the error's
range), the instance is rebuilt from the same stream each time, and the change of the check's reference is
measured in the check's own metric (absolute or relative error, angle, relative L1 of PSFs, ledger terms,
the fit of re-rendered solutions). The budget is the larger change of each parameter, summed over the
parameters: the worst case of bounded errors for a reference that is close to linear over that range, so
that a solver applying the reference computation to the stated values keeps full marks. The check is
graded against the larger of its registered tolerance and this
budget; both are written beside the check in the private reference (``tolerance``,
``registered_tolerance``, ``noise_budget``).

Forward templates (:data:`FORWARD_TEMPLATES`: a trace, render or formula applied to what the package
states) are built from the stated values themselves (:func:`forward`): their references are what the
task asks for, computed from the inputs, graded with the registered tolerances and no budget (a budget
through the whole biometry exceeded the effects they grade and passed any answer). The budgets below
serve the inference templates (A05, group E). A check whose answer follows from exactly stated values
and a few noisy ones names those in its reference (``noisy_inputs``, possibly empty): only they enter
its budget. Depths read on the scan that measured a noisy value (:data:`CO_MEASURED`) carry that value's
error.

A choice (``accept``) that an instance rebuilt with one parameter at the end of its range makes
differently is accepted too (``accepted_under_noise``): E04's best measurement can be a near tie that the
pupil's error decides.

The rebuilt instances replay the thin-phase renders of the true build, except when the pupil diameter,
the only noisy value the thin-phase scene reads, moves: those two builds render for real. The thick-eye
templates (:data:`EXACT_TEMPLATES`) state their inputs exactly: their PSFs trace the whole biometry, whose
error moves the focus by up to several tenths of a dioptre (relative L1 0.7-1.4 from the reference at the
stated radius, 0.06 after refocusing on the stated values), far more than the hole effects they grade.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

NOISY_SPLITS = ("test", "ood")
#: Templates whose held-out inputs are stated exactly (thick-eye references; see the module docstring).
EXACT_TEMPLATES = ("C05", "D02")
#: Templates that ask for a computation from the stated inputs (traces of the stated biometry): their
#: references are computed from the stated values and graded with the registered tolerances, no budget.
#: Every template but the thick ones, A05 (what a refraction cannot determine) and group E (inference of
#: hidden values from images and measurements), whose truths the measurements only estimate.
FORWARD_TEMPLATES = ("A01", "A02", "A03", "A04", "A06", "B01", "B02", "B03", "B04", "B05", "B06", "C01",
                     "C02", "C03", "C04", "C06", "D01", "D03", "D04", "D05", "D06", "F01", "F02", "F03",
                     "F04", "F05", "F06")
NOISY_EYE = (
    "cornea_anterior_radius",
    "cornea_anterior_conic",
    "cornea_thickness",
    "cornea_posterior_radius",
    "anterior_chamber_depth",
    "lens_anterior_radius",
    "lens_thickness",
    "lens_posterior_radius",
    "axial_length",
    "pupil_diameter",
)
NOISY_IMPLANT = ("vault",)
#: Noisy values that a task moves by a stated amount (D06 moves the lens forward by a given shift): the
#: moved value carries the same measurement error, so that the shift cannot reveal the true value.
SHIFTED = ("vault",)
#: Depths read on the scan that measured a noisy value, from the same reference surface (the corneal
#: epithelium): they carry that value's error, so their differences (A02's vault) are stated exactly.
CO_MEASURED = {
    "posterior_vertex_depth": "anterior_chamber_depth",
    "anterior_vertex_depth": "anterior_chamber_depth",
}
#: The noisy values the thin-phase scene reads: moving them needs real renders.
SCENE_PARAMS = ("pupil_diameter",)
BUDGET_KINDS = ("scalar", "convergence", "angle", "psf", "energy", "solutions")
FORWARD_NOTE = "; this task computes from the stated values: its references use them, with no error budget"
ERROR_MODEL = (
    "stated value = true value + error; the error is uniform within +-uncertainty, drawn once per "
    "instance and parameter (the same in every case); derived values (thin_eye_excess, thin_power, "
    "the ICL radii) and the task's own settings are stated exactly"
)

_patch_lock = threading.Lock()


def streams(key: Any, iid: str) -> dict[str, int]:
    """Entropy of the noise stream of every noisy parameter of instance ``iid`` (for a picklable task)."""
    return {p: key.seed_sequence("pro", "noise", iid, p).entropy for p in (*NOISY_EYE, *NOISY_IMPLANT)}


def _uncertainty(param: dict) -> float | None:
    u = param.get("uncertainty")
    ok = isinstance(u, (int, float)) and not isinstance(u, bool) and u > 0
    return (
        float(u)
        if ok and isinstance(param.get("value"), (int, float)) and param["status"] != "unknown"
        else None
    )


def noisy_parameters(cases: dict[str, dict], e: dict, f: dict) -> dict[str, tuple[str, float]]:
    """Parameters to state with noise: name -> (package file, uncertainty).

    A parameter qualifies when some case states it at the base eye's (or design family's) true value
    with a numeric uncertainty; a case that sets it to another value (a task's own pupil) keeps that value,
    except for :data:`SHIFTED` parameters, whose every stated value carries the error.
    """
    out = {}
    for fname, names, truth in (("eye", NOISY_EYE, e), ("implant", NOISY_IMPLANT, f)):
        for name in names:
            for pkg in cases.values():
                p = pkg[fname].get(name)
                if p is not None and _uncertainty(p) is not None and p["value"] == truth[name]:
                    out[name] = (fname, _uncertainty(p))
                    break
    return out


def apply_noise(
    cases: dict[str, dict], e: dict, f: dict, params: dict[str, tuple[str, float]], entropy: dict[str, int]
) -> dict[str, dict]:
    """State every parameter of ``params`` with its keyed error in every case that states the true value.

    Returns ``{name: {true, stated, uncertainty}}`` for the private reference.
    """
    record = {}
    for name, (fname, u) in params.items():
        truth = e[name] if fname == "eye" else f[name]
        stated = _stated_draw(truth, u, entropy[name])
        for pkg in cases.values():
            p = pkg[fname].get(name)
            if p is not None and _uncertainty(p) is not None and (p["value"] == truth or name in SHIFTED):
                moved = stated if p["value"] == truth else float(p["value"] + stated - truth)
                p.update(value=moved, status="measured")
            for depth, source in CO_MEASURED.items():
                q = pkg["implant"].get(depth)
                if source == name and q is not None and isinstance(q.get("value"), (int, float)):
                    record[f"implant.{depth}"] = {
                        "true": float(q["value"]),
                        "uncertainty": u,
                        "error_of": f"{fname}.{name}",
                    }
                    q.update(value=float(q["value"] + stated - truth), status="measured")
                    record[f"implant.{depth}"]["stated"] = q["value"]
        record[f"{fname}.{name}"] = {"true": float(truth), "stated": stated, "uncertainty": u}
    return record


@contextmanager
def _renders(calls: list, replay: bool, strict: bool = True) -> Iterator[None]:
    """Record (``replay=False``) or replay, in call order, the reference renders of a build.

    A replayed thin-phase render must be asked for the same scene as the recorded one; otherwise (a build
    that renders differently) it is rendered for real, unless ``strict`` is False (every render replayed).
    """
    from icl.pro import references, thick

    real = {"ref": references.render_psf, "thick": thick.render_thick}
    it = iter(calls)

    def wrap(name: str) -> Callable:
        def fn(*args: Any, **kwargs: Any) -> Any:
            key = _dumps([args, kwargs]) if name == "ref" else None  # thick: traces the stated biometry
            if replay:
                want, out = next(it, (False, None))
                if want is not False and (want == key or not strict):
                    return copy.deepcopy(out)
                return real[name](*args, **kwargs)
            out = real[name](*args, **kwargs)
            calls.append((key, copy.deepcopy(out)))
            return out

        return fn

    with _patch_lock:
        references.render_psf, thick.render_thick = wrap("ref"), wrap("thick")
        try:
            yield
        finally:
            references.render_psf, thick.render_thick = real["ref"], real["thick"]


def _moved(e: dict, f: dict, fname: str, name: str, u: float) -> tuple[dict, dict]:
    """Move one parameter of the base eye or design family by ``u``.

    The equivalent power, which no package states, follows the moved geometry (a solver computes it from
    the stated biometry).
    """
    from icl.pro import references as ref
    from icl.pro.generate import eye_surfaces

    e2, f2 = dict(e), dict(f)
    (e2 if fname == "eye" else f2)[name] += u
    if fname == "eye":
        e2["power"] = ref.equivalent_power_d(eye_surfaces(e2))
    return e2, f2


def _l1(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).sum() / max(float(np.abs(b).sum()), 1e-300))


def _change(kind: str, relative: bool, r: dict, r2: dict, b: Any, b2: Any) -> float:
    """How far the reference of one check moved, in the check's own metric."""
    if kind in ("scalar", "convergence"):
        v, v2 = (np.atleast_1d(np.asarray(x["value"], dtype=float)) for x in (r, r2))
        d = np.abs(v2 - v)
        return float((d / np.maximum(np.abs(v), 1e-300) if relative else d).max())
    if kind == "angle":
        return float(abs((r2["value"] - r["value"] + 90.0) % 180.0 - 90.0))
    if kind == "psf":
        return max(_l1(b2.psf[c], b.psf[c]) for c in r["cases"])
    if kind == "energy":
        return max(
            abs(r2["cases"][c][t] - w[t]) for c, w in r["cases"].items() for t in ("blocked", "recorded")
        )
    if kind == "solutions":
        from icl.pro import references as ref
        from icl.pro.generate import _solution_scene, exposed

        obs = b.public_npz["observation"]["image"]
        img = exposed(ref.render_psf(_solution_scene(b2.cases[r["case"]], r["truth"]))[0], r["exposure"])
        return _l1(img, obs)
    raise ValueError(kind)


def _stated_draw(truth: float, u: float, entropy: int) -> float:
    return float(truth + u * np.random.default_rng(entropy).uniform(-1.0, 1.0))


def forward(rec: dict, e: dict, f: dict, build: Callable[[dict, dict], Any]) -> Any:
    """Build a held-out instance of a forward template: noisy measured inputs, references from them.

    The measured values are drawn as in :func:`measured` (same streams, same errors); the instance is then
    built from the stated biometry itself, with the eye's refraction and power and the ICL's thin power
    traced again (the same lens: radii, thickness and index kept), so every reference is the computation
    the task asks for, applied to what the task states, and is graded with its registered tolerance.
    """
    from icl.pro import references as ref
    from icl.pro.generate import eye_surfaces, icl_surfaces

    # Which values are noisy is read off a build from the truth: a value no case states (a task's own pupil)
    # must keep its true value, or the reference would hang on a number the inputs hide.
    params = noisy_parameters(build(e, f).cases, e, f)
    e_s, f_s, record = dict(e), dict(f), {}
    for name, (fname, u) in params.items():
        truth = (e if fname == "eye" else f)[name]
        stated = _stated_draw(truth, u, rec["noise"][name])
        (e_s if fname == "eye" else f_s)[name] = stated
        record[f"{fname}.{name}"] = {"true": float(truth), "stated": stated, "uncertainty": u,
                                     "reference_uses": "stated"}
    e_s["refraction"] = ref.ocular_refraction_d(eye_surfaces(e_s), e_s["axial_length"])
    e_s["power"] = ref.equivalent_power_d(eye_surfaces(e_s))
    f_s["refraction_with"] = ref.ocular_refraction_d(icl_surfaces(e_s, f_s), e_s["axial_length"])
    f_s["thin_power"] = e_s["refraction"] - f_s["refraction_with"]
    b = build(e_s, f_s)
    for dotted in record:
        fname, name = dotted.split(".")
        for pkg in b.cases.values():
            p = pkg[fname].get(name)
            if p is not None and _uncertainty(p) is not None:
                p["status"] = "measured"
    b.noise = record
    b.task["measurement_noise"] = {"parameters": sorted(record), "model": ERROR_MODEL + FORWARD_NOTE}
    return b


def measured(rec: dict, e: dict, f: dict, build: Callable[[dict, dict], Any]) -> Any:
    """Build a held-out instance with noisy measured inputs and noise budgets beside its checks.

    Forward templates (:data:`FORWARD_TEMPLATES`) go to :func:`forward` instead.

    ``build(e, f)`` builds the instance from a base eye and design family (the same stream every call);
    ``rec["noise"]`` holds the noise streams (:func:`streams`) and ``rec["checks"]`` the auto checks as
    ``[id, kind, tolerance, relative]``.
    """
    if rec.get("template") in FORWARD_TEMPLATES:
        return forward(rec, e, f, build)
    calls: list = []
    with _renders(calls, replay=False):
        b = build(e, f)
    params = noisy_parameters(b.cases, e, f)
    checks = [c for c in rec["checks"] if c[1] in BUDGET_KINDS and c[2] is not None and c[0] in b.refs]
    by_param: dict[str, dict[str, float]] = {c[0]: {} for c in checks}
    changed: dict[str, list[str]] = {}
    for name, (fname, u) in params.items():
        for step in (u, -u):
            e2, f2 = _moved(e, f, fname, name, step)
            if name in SCENE_PARAMS:  # both sides render: a render's change is not linear in the pupil
                b2 = build(e2, f2)
            else:
                with _renders(calls, replay=True):
                    b2 = build(e2, f2)
            for cid, kind, _, relative in checks:
                if kind == "solutions" and (name not in SCENE_PARAMS or step < 0):
                    continue  # the re-rendered solutions read only the scene
                if f"{fname}.{name}" not in b.refs[cid].get("noisy_inputs", [f"{fname}.{name}"]):
                    continue  # the check is determined by exactly stated values and its noisy inputs
                d = _change(kind, relative, b.refs[cid], b2.refs[cid], b, b2)
                if d > by_param[cid].get(f"{fname}.{name}", 0.0):
                    by_param[cid][f"{fname}.{name}"] = d
            for cid, r in b.refs.items():
                # A choice that the moved instance makes differently is also right: the stated values
                # cannot tell the two apart.
                more = [a for a in b2.refs[cid].get("accept", []) if a not in r.get("accept", [a])]
                if more:
                    r["accept"] += more
                    r.setdefault("accepted_under_noise", []).append(f"{fname}.{name}")
            for cid, r in b.refs.items():  # references without a tolerance (labels, truths) that moved
                moved = changed.setdefault(cid, [])
                if (
                    cid not in by_param
                    and _dumps(r) != _dumps(b2.refs[cid])
                    and f"{fname}.{name}" not in moved
                ):
                    moved.append(f"{fname}.{name}")
    for cid, _, tol, _ in checks:
        budget = float(sum(by_param[cid].values()))
        if budget > 0:
            b.refs[cid].update(
                registered_tolerance=tol,
                tolerance=max(tol, budget),
                noise_budget={
                    "value": budget,
                    "by_parameter": by_param[cid],
                    "method": "largest change with one parameter moved by plus or "
                    "minus its uncertainty, summed over parameters",
                },
            )
    for cid, names in changed.items():
        if names:
            b.refs[cid]["noise_moves_reference"] = names
    b.noise = apply_noise(b.cases, e, f, params, rec["noise"])
    b.task["measurement_noise"] = {"parameters": sorted(b.noise), "model": ERROR_MODEL}
    return b


def _dumps(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, default=lambda x: np.asarray(x).tolist())
