"""Score a halo submission against a release (definitions in docs/scoring.md).

Every term is ``exp(-error / scale)``; a condition scores ``100 * sum(weight * term)``; a case scores
70 % of its two conditions' mean plus 30 % of its paired-difference score; the 14 cases weigh equally.
Submission files are hostile: each is loaded without pickle and with a size limit, validated, and a
condition that breaks a rule scores 0 with the reason. The process never raises on submission content.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from icl import linalg
from icl.crosscheck import not_ranked_reason
from icl.errors import InputError
from icl.halo.cases import halo_scene
from icl.halo.ring import measure_ring, polar_grid, polar_profile
from icl.io import answer_identities, check_answer_file, load_json, load_npz, write_json
from icl.optics import Scene

MAX_SUBMISSION_BYTES = 64 * 1024 * 1024
NEGATIVE_TOL = 1e-12  # of the reference peak: rounding below zero that is still accepted
GAIN_TOL = 1e-6  # relative: recorded energy may exceed the source's flux by rounding only
SCENE_SUM_TOL = 1e-6  # relative L1 between scene and the sum of the components
PITCH_TOL = 1e-9
HALO_FLOOR = 1e-3  # halo-energy denominator floor, as a fraction of the reference energy
PAIR_FLOOR = 0.002  # floor of the reference paired-difference L1 (flux units)
PAIR_SCALE = 0.30
CONDITION_SHARE, PAIR_SHARE = 0.70, 0.30

# name: (weight, scale); the halo weight is 0.45 and the ring term is dropped for complex fields.
TERMS = {
    "full_l1": (0.25, 0.10),
    "halo_l1": (0.35, 0.30),
    "polar": (0.15, 0.30),
    "centroid_arcmin": (0.10, 0.10),
    "energy": (0.05, 0.03),
    "ring": (0.10, 0.10),
}
COMPLEX_HALO_WEIGHT = 0.45
LEAK_SCALE = 0.03  # zero-flux conditions: leaked energy in units of the case's unit flux

# Why a score file holds null: every null field is named here or carries its own ``reason``.
NULL_REASONS = {
    "clinical_score": "not computed: the synthetic thin-phase set is not calibrated against clinical "
    "thresholds, so no score claims a patient halo-prediction accuracy",
    "professional_score": "not computed here: the professional track has its own scorer (icl pro-score)",
}
SUBSCORE_NULL = {
    "position_bearing_cases": "no case of the {split} split has a source off fixation or a decentred optic",
    "fixation_cases": "no case of the {split} split keeps every source at fixation on a centred optic "
    "(every test case is placed off both axes)",
}


@dataclass
class ReferenceCondition:
    """What the evaluator knows of one condition: public scene, private arrays and record."""

    id: str
    case: str
    scene: Scene
    components: np.ndarray
    axis: np.ndarray
    record: dict

    @property
    def zero_flux(self) -> bool:
        """True when every source of the condition has zero flux."""
        return bool(self.record["zero_flux"])

    def anchors(self) -> list[tuple[float, float]]:
        """Return the fixed anchor of each source: its reference wick (expected wick when it has no flux)."""
        return [tuple(s["wick_arcmin"] or s["expected_wick_arcmin"]) for s in self.record["sources"]]


def load_release(release: str | Path, split: str = "dev") -> list[tuple[str, list[ReferenceCondition]]]:
    """Load the cases of one split of a release: ``[(case_id, [cond_a, cond_b])]``.

    Raises
    ------
    InputError
        For a missing or malformed release file (naming the file and field).

    """
    from icl.halo.release import split_paths

    root = Path(release)
    public, private = split_paths(split)
    pub_file = root / public
    pub = load_json(pub_file)
    if not isinstance(pub, dict) or not isinstance(pub.get("cases"), list):
        raise InputError("expected an object with a 'cases' list", str(pub_file), "cases")
    out = []
    for i, case in enumerate(pub["cases"]):
        conds = []
        for j, c in enumerate(case.get("conditions", [])):
            cid = c.get("id")
            if not isinstance(cid, str) or not cid.replace("_", "").isalnum():
                raise InputError("bad condition id", str(pub_file), f"cases[{i}].conditions[{j}].id")
            scene = halo_scene(c.get("scene"), file=str(pub_file))
            npz = root / private / f"{cid}.npz"
            arrays = load_npz(
                npz, required=("components", "scene", "angular_pixel_arcsec", "x_arcmin", "y_arcmin")
            )
            record = load_json(root / private / f"{cid}.json")
            comps = np.asarray(arrays["components"], dtype=float)
            if comps.shape != (len(scene.sources), scene.detector.n, scene.detector.n):
                raise InputError(f"shape {comps.shape} does not match the scene", str(npz), "components")
            conds.append(
                ReferenceCondition(
                    cid, case["id"], scene, comps, np.asarray(arrays["x_arcmin"], float), record
                )
            )
        if len(conds) != 2:
            raise InputError("a case needs exactly two conditions", str(pub_file), f"cases[{i}].conditions")
        out.append((case["id"], conds))
    return out


class Invalid(Exception):
    """A submitted condition breaks a validity rule; the message is the reason written to the score."""


def load_submission(
    path: Path, ref: ReferenceCondition, answers: frozenset[tuple[int, int]] = frozenset()
) -> np.ndarray:
    """Load and validate one submitted condition; return its components as float64.

    ``answers`` are the identities of the release's private files (:func:`icl.io.answer_identities`):
    a submitted file that is one of them, or any hard link, is refused.

    Raises
    ------
    Invalid
        With the reason, for any broken rule.

    """
    if not path.exists():
        raise Invalid(f"missing condition file: expected {path.name} in {path.parent}")
    try:
        check_answer_file(path, answers)
        arrays = load_npz(
            path,
            required=("components", "scene", "angular_pixel_arcsec"),
            optional=("x_arcmin", "y_arcmin"),
            max_bytes=MAX_SUBMISSION_BYTES,
        )
    except InputError as exc:
        raise Invalid(f"{exc.field + ': ' if exc.field else ''}{exc.reason}") from None
    n = ref.scene.detector.n
    shape = (len(ref.scene.sources), n, n)
    out = {}
    for key in ("components", "scene", "angular_pixel_arcsec"):
        a = arrays[key]
        if a.dtype.kind not in "fiu":
            raise Invalid(f"{key}: dtype {a.dtype} is not a real number type")
        out[key] = a.astype(np.float64)
    comps, scene, pitch = out["components"], out["scene"], out["angular_pixel_arcsec"]
    if comps.shape != shape:
        raise Invalid(f"components: shape {comps.shape}, expected {shape}")
    if scene.shape != (n, n):
        raise Invalid(f"scene: shape {scene.shape}, expected {(n, n)}")
    if pitch.size != 1 or not abs(float(pitch.reshape(-1)[0]) - ref.scene.detector.pitch_arcsec) <= PITCH_TOL:
        raise Invalid(f"angular_pixel_arcsec: expected {ref.scene.detector.pitch_arcsec}")
    for key in ("x_arcmin", "y_arcmin"):
        if key in arrays:
            a = arrays[key]
            if (
                a.shape != ref.axis.shape
                or a.dtype.kind != "f"
                or not np.allclose(a, ref.axis, rtol=0, atol=1e-9)
            ):
                raise Invalid(f"{key}: does not match the release grid")
    if not (np.all(np.isfinite(comps)) and np.all(np.isfinite(scene))):
        raise Invalid("NaN or Inf values")
    peak = float(ref.components.sum(axis=0).max())
    floor = -NEGATIVE_TOL * peak if peak > 0 else 0.0
    if comps.min() < floor or scene.min() < floor:
        raise Invalid(f"negative values (minimum {min(comps.min(), scene.min()):.3e})")
    total = comps.sum(axis=0)
    if np.abs(scene - total).sum() > SCENE_SUM_TOL * np.abs(total).sum():
        raise Invalid("scene is not the sum of the components")
    for k, src in enumerate(ref.scene.sources):
        incident = src.flux * sum(w for _, w in src.spectrum)
        got = float(comps[k].sum())
        if incident > 0 and got > incident * (1 + GAIN_TOL):
            raise Invalid(f"energy gain: source {src.id} records {got:.6g} of an incident {incident:.6g}")
    return comps


def _centroid(img: np.ndarray, axis: np.ndarray) -> tuple[float, float] | None:
    total = img.sum()
    if not total > 0:
        return None
    return linalg.dot(img.sum(axis=0), axis) / total, linalg.dot(img.sum(axis=1), axis) / total


def halo_mask(ref: ReferenceCondition) -> np.ndarray:
    """Pixels outside every source's main lobe (disk of first-dark-ring radius plus extent about its wick)."""
    xs, ys = np.meshgrid(ref.axis, ref.axis)
    mask = np.ones(xs.shape, dtype=bool)
    for (cx, cy), s in zip(ref.anchors(), ref.record["sources"], strict=True):
        mask &= (xs - cx) ** 2 + (ys - cy) ** 2 > s["main_lobe_radius_arcmin"] ** 2
    return mask


def condition_errors(
    ref: ReferenceCondition, sub: np.ndarray, reasons: dict[str, str] | None = None
) -> dict[str, float]:
    """Error of each applicable term (see docs/scoring.md); ``inf`` where undefined for the submission.

    ``reasons``, when given, receives for each undefined term why it is undefined.
    """
    reasons = {} if reasons is None else reasons
    if ref.zero_flux:
        return {"leaked_energy": float(np.abs(sub).sum())}
    r, s = ref.components, sub
    e_ref = float(r.sum())
    err = {"full_l1": float(np.abs(s - r).sum() / e_ref)}
    mask = halo_mask(ref)
    e_halo = max(float(r[:, mask].sum()), HALO_FLOOR * e_ref)
    err["halo_l1"] = float(np.abs(s[:, mask] - r[:, mask]).sum() / e_halo)
    radii, _ = polar_grid()
    num = den = 0.0
    for k, anchor in enumerate(ref.anchors()):
        pr = np.array(ref.record["polar"]["profiles"][k], dtype=float)
        ps = polar_profile(s[k], ref.axis, anchor)
        ok = np.isfinite(pr)
        w = np.broadcast_to(radii[:, None], pr.shape)
        num += float((w * np.abs(ps - pr))[ok].sum())
        den += float((w * pr)[ok].sum())
    err["polar"] = num / den if den > 0 else math.inf
    if den <= 0:
        reasons["polar"] = "the reference holds no light on the polar grid"
    cerr, cw = 0.0, 0.0
    for k in range(r.shape[0]):
        ek = float(r[k].sum())
        if ek <= 0:
            continue
        cr, cs = _centroid(r[k], ref.axis), _centroid(s[k], ref.axis)
        cerr += ek * (math.hypot(cs[0] - cr[0], cs[1] - cr[1]) if cs else math.inf)
        if cs is None:
            reasons["centroid_arcmin"] = f"source {k + 1}'s submitted component holds no light (no centroid)"
        cw += ek
    err["centroid_arcmin"] = cerr / cw
    err["energy"] = abs(float(s.sum()) - e_ref) / e_ref
    if ref.record["calibration_ring"]:
        src = ref.record["sources"][0]
        want = src["calibration_ring"]
        lod = src["analytic"]["lambda_over_d_arcmin"]
        got = measure_ring(s[0], ref.axis, lod, start=tuple(src["expected_wick_arcmin"]))
        if got["status"] != "detected" or want["status"] != "detected":
            err["ring"] = math.inf
            reasons["ring"] = (
                f"no ring detected in the submitted component: {got.get('reason', got['status'])}"
                if got["status"] != "detected"
                else "the reference's ring was not detected"
            )
        else:
            dc = math.hypot(
                got["centre_arcmin"][0] - want["centre_arcmin"][0],
                got["centre_arcmin"][1] - want["centre_arcmin"][1],
            )
            err["ring"] = (dc + abs(got["radius_arcmin"] - want["radius_arcmin"])) / want["radius_arcmin"]
    return err


def condition_weights(ref: ReferenceCondition) -> dict[str, tuple[float, float]]:
    """(weight, scale) of each applicable term, weights summing to 1."""
    if ref.zero_flux:
        return {"leaked_energy": (1.0, LEAK_SCALE)}
    terms = dict(TERMS)
    if ref.record["complex_field"]:
        terms["halo_l1"] = (COMPLEX_HALO_WEIGHT, terms["halo_l1"][1])
    if not ref.record["calibration_ring"]:
        terms.pop("ring")
    total = sum(w for w, _ in terms.values())
    return {k: (w / total, s) for k, (w, s) in terms.items()}


def score_condition(ref: ReferenceCondition, sub: np.ndarray) -> dict:
    """Per-term errors, values and weights, and the condition score (0-100)."""
    reasons: dict[str, str] = {}
    errors = condition_errors(ref, sub, reasons)
    weights = condition_weights(ref)
    terms, score = {}, 0.0
    for name, (w, scale) in weights.items():
        e = errors[name]
        v = math.exp(-e / scale) if math.isfinite(e) else 0.0
        terms[name] = {"weight": w, "scale": scale, "error": e if math.isfinite(e) else None, "value": v}
        if not math.isfinite(e):
            terms[name]["reason"] = reasons.get(name, "undefined for this submission") + ": the term is 0"
        score += 100.0 * w * v
    return {"valid": True, "score": score, "terms": terms}


def paired_score(refs: list[ReferenceCondition], subs: list[np.ndarray]) -> dict:
    """100 exp(-rel / 0.30), rel = L1 of (b - a) submitted minus reference over max(L1 reference, 0.002)."""
    d_ref = refs[1].components - refs[0].components
    d_sub = subs[1] - subs[0]
    norm = max(float(np.abs(d_ref).sum()), PAIR_FLOOR)
    rel = float(np.abs(d_sub - d_ref).sum()) / norm
    return {"score": 100.0 * math.exp(-rel / PAIR_SCALE), "relative_error": rel, "reference_l1": norm}


def _off_fixation(scene: Scene) -> bool:
    """Tell whether a source lies away from fixation or the optic is decentred (position is tested)."""
    icl = scene.pupil.icl
    return any(s.x_arcmin or s.y_arcmin for s in scene.sources) or (icl is not None and any(icl.decentre_mm))


def evaluate(
    release: str | Path,
    submission: str | Path,
    loaded: list[tuple[str, list[ReferenceCondition]]] | None = None,
    split: str = "dev",
) -> dict:
    """Score every condition of one split of ``release`` from the folder ``submission``.

    Returns the score document.

    ``loaded`` may pass the result of :func:`load_release` for that split to score several submissions
    against one release without reading it again. Both splits are scored by the same rules.
    """
    from icl.freeze import check_release, disputed

    # A frozen release whose task texts, references or scoring code changed is refused (FrozenChanged).
    freeze = check_release(release)
    frozen_out = disputed(freeze)
    cases = loaded if loaded is not None else load_release(release, split)
    answers = answer_identities(Path(release) / "private")
    sub_root = Path(submission)
    out_cases, total, not_ranked = {}, 0.0, {}
    for case_id, refs in cases:
        reasons = {r.id: not_ranked_reason(r.record) for r in refs if not_ranked_reason(r.record)}
        # The operator may freeze out a case (H07) or one test variant (H07_t2) as disputed.
        why = frozen_out.get(case_id) or frozen_out.get(case_id.split("_")[0])
        if why:
            reasons = {r.id: why for r in refs}
        if reasons:  # a reference failed its two-solver cross-check: out of every ranking, reported apart
            not_ranked[case_id] = reasons
            continue
        conds, subs = {}, []
        for ref in refs:
            try:
                comps = load_submission(sub_root / f"{ref.id}.npz", ref, answers)
                conds[ref.id] = score_condition(ref, comps)
                subs.append(comps)
            except Invalid as exc:
                conds[ref.id] = {"valid": False, "score": 0.0, "reason": str(exc)}
                subs.append(None)
            except Exception as exc:  # noqa: BLE001 - hostile content must never stop the evaluation
                conds[ref.id] = {
                    "valid": False,
                    "score": 0.0,
                    "reason": f"unreadable: {type(exc).__name__}: {exc}",
                }
                subs.append(None)
        if all(s is not None for s in subs):
            pair = paired_score(refs, subs)
        else:
            pair = {"score": 0.0, "reason": "a condition is missing or invalid"}
        cond_mean = float(np.mean([c["score"] for c in conds.values()]))
        case_score = CONDITION_SHARE * cond_mean + PAIR_SHARE * pair["score"]
        out_cases[case_id] = {
            "score": case_score,
            "condition_mean": cond_mean,
            "paired": pair,
            "position_bearing": any(_off_fixation(r.scene) for r in refs),
            "conditions": conds,
        }
        total += case_score
    subscores = {}
    for name, flag in (("position_bearing_cases", True), ("fixation_cases", False)):
        vals = [c["score"] for c in out_cases.values() if c["position_bearing"] is flag]
        subscores[name] = float(np.mean(vals)) if vals else None
    headline = total / len(out_cases) if out_cases else None
    null_reasons = dict(NULL_REASONS)
    if headline is None:
        null_reasons["halo_development_score"] = (
            "no case of this split could be ranked: every case's reference failed its cross-check "
            "(see not_ranked)"
        )
    for name, value in subscores.items():
        if value is None:
            null_reasons[f"diagnostic_subscores.{name}"] = SUBSCORE_NULL[name].format(split=split)
    return {
        "format": "icl-halo-score/1",
        "split": split,
        "halo_development_score": headline,
        "not_ranked": not_ranked,
        "freeze": freeze,
        "clinical_score": None,
        "professional_score": None,
        "null_reasons": null_reasons,
        "diagnostic_subscores": subscores,
        "note": "Development score of the synthetic thin-phase set; not a clinical accuracy.",
        "weights": {
            "terms": {k: {"weight": w, "scale": s} for k, (w, s) in TERMS.items()},
            "complex_field_halo_weight": COMPLEX_HALO_WEIGHT,
            "leak_scale": LEAK_SCALE,
            "condition_share": CONDITION_SHARE,
            "paired_share": PAIR_SHARE,
            "paired_scale": PAIR_SCALE,
            "paired_floor": PAIR_FLOOR,
        },
        "cases": out_cases,
    }


def score_table(doc: dict):
    """Build a rich table of case, condition and paired scores."""
    from rich.table import Table

    sub = doc["diagnostic_subscores"]
    caption = ", ".join(f"{k.replace('_', ' ')} {v:.2f}" for k, v in sub.items() if v is not None)
    t = Table(title=f"halo_development_score = {doc['halo_development_score']:.2f}", caption=caption)
    for col in ("case", "a", "b", "paired", "case score", "notes"):
        t.add_column(col, justify="left" if col in ("case", "notes") else "right")
    for cid, c in doc["cases"].items():
        a, b = c["conditions"].values()
        notes = "; ".join(x["reason"] for x in (a, b) if not x["valid"])
        t.add_row(
            cid,
            f"{a['score']:.2f}",
            f"{b['score']:.2f}",
            f"{c['paired']['score']:.2f}",
            f"{c['score']:.2f}",
            notes[:60],
        )
    return t


def write_score(doc: dict, path: str | Path) -> None:
    """Atomically write the score document (deterministic JSON)."""
    write_json(path, doc)
