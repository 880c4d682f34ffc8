"""Score professional submissions: auto checks against private references, expert checks from a
reviewer file, gates G1-G5 beside the score, three-run aggregation and a clustered bootstrap.

A submission is hostile input: every check runs inside a guard, so a bad artifact scores 0 for that
check with the reason written down and never stops the run. Every result file is first checked against
the one results schema (:mod:`icl.pro.results_schema`, also the contract validator's): a check fed by an
invalid file scores 0 with the file, field and problem, and every problem of a run's result files is
listed in ``result_issues``. A check whose reference carries a measurement-noise budget
(:mod:`icl.pro.noise`) is graded against the larger of its registered tolerance and that budget.

Expert checks without a review are ``pending``: they are left out of the development score, never
guessed and never counted as 0.5.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from icl.crosscheck import not_ranked_reason
from icl.errors import InputError
from icl.io import answer_identities, check_answer_file, load_json, load_npz
from icl.pro.catalog import GROUPS, Catalog, Check, load_catalog
from icl.pro.results_schema import Findings, energy_terms, recorded, validate_file, validate_output

MAX_METRICS_BYTES = 1 << 20
PSF_BYTES = 64 << 20


ROUND_OFF = 1e-9  # relative L1 below which two PSFs are one computation
# Half credit is "partly right": an interval or a mean coverage width at most WIDE times the allowed one
# (as _grade gives 0.5 up to three tolerances); wider answers say nothing and earn nothing.
WIDE = 3.0
# A second method or a rotation shows something only about a PSF that is right: the psf checks' tolerance.
PSF_TOLERANCE = 0.02
# Gate G5 audits an eye model: at least this many parameters, each with a source and a status. A package's
# eye and implant state 15 and 13; a one-parameter model (the placeholder's) is nothing to audit.
MIN_MODEL_PARAMETERS = 8


def model_eye(run_root: Path) -> dict | None:
    """The run's ``model/eye.json`` (at the OUTPUT root, where the contract puts it), or None if absent."""
    p = Path(run_root) / "model" / "eye.json"
    if not p.is_file() or p.is_symlink():
        return None
    m = load_json(p, max_bytes=MAX_METRICS_BYTES)
    return m if isinstance(m, dict) else None


def model_parameters(obj: Any, where: str = "") -> list[tuple[str, dict]]:
    """Every parameter (an object with a ``value`` key) of a nested model, with its dotted path."""
    out: list[tuple[str, dict]] = []
    if isinstance(obj, dict):
        if "value" in obj:
            return [(where, obj)]
        for k, v in obj.items():
            out += model_parameters(v, f"{where}.{k}" if where else str(k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += model_parameters(v, f"{where}[{i}]")
    return out


def instance_parameters(model: dict, iid: str) -> list[tuple[str, dict]]:
    """The parameters of ``model`` that speak for instance ``iid``: everything outside the top-level
    ``instances`` object (one run's file for all its instances, so audited against each of them) and what is
    under ``instances.<iid>`` (this instance's own provenance); other instances' entries are not read.
    """
    out = [(p, e) for p, e in model_parameters({k: v for k, v in model.items() if k != "instances"})]
    own = model.get("instances", {})
    if isinstance(own, dict) and isinstance(own.get(iid), dict):
        out += model_parameters(own[iid], f"instances.{iid}")
    return out


class _Fail(Exception):
    """A check fails with a reason (score 0)."""


def _grade(err: float, tol: float) -> float:
    return 1.0 if err <= tol else (0.5 if err <= 3 * tol else 0.0)


class InstanceScorer:
    """Scores one instance of one run."""

    def __init__(self, release: Path, run_dir: Path, iid: str, refs: dict, refused: str | None = None,
                 answers: frozenset[tuple[int, int]] = frozenset(), frozen_manifest: dict | None = None,
                 harness: bool = False):
        self.release, self.run, self.iid, self.refs = release, run_dir, iid, refs
        # The submission's manifest as the harness froze it (sets.json), for runs the harness made.
        self.frozen_manifest, self.harness = frozen_manifest, harness
        # Identities of the release's private files: a result file that is one of them (or any hard link)
        # is refused.
        self.answers = answers
        self.results = run_dir / "results" / iid
        self.flags: dict[str, Any] = {}
        # Why every task of the instance scores 0 (its harness run was not ok), or None.
        self.refused = refused
        self._schema: dict[str, list[dict]] = {}  # problems of each result file read, by path in the instance

    # artifacts ---------------------------------------------------------------
    def _file(self, case: str, name: str) -> Path:
        for part in (case, name):
            if "/" in part or "\\" in part or part.startswith("."):
                raise _Fail(f"bad name {part!r}")
        p = self.results / case / name
        if p.is_symlink():
            raise _Fail(f"{p.name}: symbolic links are refused")
        if not p.is_file():
            raise _Fail(f"missing {case}/{name}")
        self._own_file(p)
        self._valid(f"{case}/{name}")
        return p

    def _own_file(self, p: Path) -> None:
        try:
            check_answer_file(p, self.answers)
        except InputError as exc:
            raise _Fail(f"{p.name}: {exc.reason}") from None

    def _valid(self, rel: str) -> None:
        """Fail, naming the file and fields, if ``results/<instance>/rel`` breaks the results schema."""
        if rel not in self._schema:
            self._schema[rel] = validate_file(self.results, rel)
        bad = self._schema[rel]
        if bad:
            what = "; ".join(f"{i['field'] or '(file)'}: {i['message']}" for i in bad[:3])
            more = f" (+{len(bad) - 3} more)" if len(bad) > 3 else ""
            raise _Fail(f"invalid results/{self.iid}/{rel}: {what}{more}")

    def metrics(self, case: str) -> dict:
        m = load_json(self._file(case, "metrics.json"), max_bytes=MAX_METRICS_BYTES)
        if not isinstance(m, dict):
            raise _Fail("metrics.json is not an object")
        return m

    def metric(self, case: str, key: str) -> Any:
        m = self.metrics(case)
        if key not in m:
            raise _Fail(f"metrics.json of {case} has no {key!r}")
        return m[key]

    def psf(self, case: str, stem: str = "psf_linear") -> np.ndarray:
        ref = load_npz(self.release / "private" / "psf" / self.iid / f"{case}.npz", required=("psf", "x_arcmin", "y_arcmin"))
        arrs = load_npz(self._file(case, f"{stem}.npz"), required=("psf",), optional=("x_arcmin", "y_arcmin"),
                        max_bytes=PSF_BYTES, allow_extra=True)
        a = arrs["psf"]
        if a.shape != ref["psf"].shape or a.dtype.kind not in "fiu":
            raise _Fail(f"{stem} of {case}: shape {a.shape} {a.dtype}, expected {ref['psf'].shape} float")
        if not np.all(np.isfinite(a)):
            raise _Fail(f"{stem} of {case}: non-finite values")
        for k in ("x_arcmin", "y_arcmin"):
            if k in arrs and (arrs[k].shape != ref[k].shape or not np.allclose(arrs[k], ref[k], atol=1e-9)):
                raise _Fail(f"{stem} of {case}: {k} differs from the detector grid")
        return a.astype(float)

    def ref_psf(self, case: str) -> np.ndarray:
        return load_npz(self.release / "private" / "psf" / self.iid / f"{case}.npz", required=("psf", "x_arcmin", "y_arcmin"))["psf"]

    # kinds ------------------------------------------------------------------
    def k_psf(self, ch: Check, r: dict) -> tuple[float, str]:
        grades, notes = [], []
        for case in r["cases"]:
            try:
                a, b = self.psf(case), self.ref_psf(case)
                err = float(np.abs(a - b).sum() / np.abs(b).sum())
                grades.append(_grade(err, ch.tolerance))
                notes.append(f"{case}: {err:.4g}")
            except (_Fail, InputError) as exc:
                grades.append(0.0)
                notes.append(f"{case}: {exc}")
        full = sum(g == 1.0 for g in grades)
        score = 1.0 if full == len(grades) else (0.5 if min(grades) >= 0.5 or full * 2 >= len(grades) else 0.0)
        return score, "relative L1 " + "; ".join(notes)

    def k_energy(self, ch: Check, r: dict) -> tuple[float, str]:
        scores, notes = [], []
        for case, want in r["cases"].items():
            # The schema (checked by _file) closes the ledger; recorded = transmitted - clipped.
            led = load_json(self._file(case, "energy.json"), max_bytes=MAX_METRICS_BYTES)
            vals = energy_terms(led, Findings(), f"{case}/energy.json")
            if vals is None:
                raise _Fail(f"energy.json of {case} breaks the results schema")
            inc, rec = vals["incident"], recorded(vals)
            if inc <= 0:
                raise _Fail(f"{case}: no incident light")
            self.flags["energy_evidence"] = True
            if rec > inc - vals["blocked"] + 1e-6 or abs(vals["numerical_residual"]) > 1e-3:
                self.flags["energy_gain"] = True
                raise _Fail(f"{case}: unexplained energy gain or residual")
            err = max(abs(vals["blocked"] - want["blocked"]), abs(rec - want["recorded"]))
            if want["blocked"] == 0 and vals["blocked"] > ch.tolerance or want["blocked"] > 0 and err > 3 * ch.tolerance:
                self.flags["disabled_mechanism"] = True
            scores.append(_grade(err, ch.tolerance))
            notes.append(f"{case}: max error {err:.4g}")
        return min(scores), "; ".join(notes)

    def _numbers(self, v: Any, n: int | None) -> np.ndarray:
        arr = np.asarray(v if isinstance(v, list) else [v], dtype=object)
        if arr.ndim != 1 or (n is not None and arr.size != n):
            raise _Fail(f"expected {n} number(s)")
        if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in arr):
            raise _Fail("non-numeric value")
        out = arr.astype(float)
        if not np.all(np.isfinite(out)):
            raise _Fail("non-finite value")
        return out

    def k_scalar(self, ch: Check, r: dict) -> tuple[float, str]:
        want = np.atleast_1d(np.asarray(r["value"], dtype=float))
        got = self._numbers(self.metric(r["case"], ch.key), want.size)
        err = np.abs(got - want)
        if ch.relative:
            err = err / np.maximum(np.abs(want), 1e-300)
        e = float(err.max())
        return _grade(e, ch.tolerance), f"max {'relative ' if ch.relative else ''}error {e:.4g}"

    def k_angle(self, ch: Check, r: dict) -> tuple[float, str]:
        got = float(self._numbers(self.metric(r["case"], ch.key), 1)[0])
        d = abs((got - r["value"] + 90.0) % 180.0 - 90.0)
        return _grade(d, ch.tolerance), f"angle error {d:.3g} deg"

    def k_label(self, ch: Check, r: dict) -> tuple[float, str]:
        want = r["value"] if isinstance(r["value"], list) else [r["value"]]
        got = self.metric(r["case"], ch.key)
        got = got if isinstance(got, list) else [got]
        if len(got) != len(want):
            raise _Fail(f"expected {len(want)} item(s), got {len(got)}")
        right = sum(str(g) == w for g, w in zip(got, want))
        return (1.0 if right == len(want) else 0.5 if 2 * right >= len(want) else 0.0), f"{right}/{len(want)} right"

    def k_sequence(self, ch: Check, r: dict) -> tuple[float, str]:
        got = self.metric(r["case"], ch.key)
        if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
            raise _Fail("expected a list of names")
        if got == r["value"]:
            return 1.0, "order equals the reference"
        a, b = r["key_pair"]
        # Anatomy (gate G1) asks only that the implant, its optic or its hole, lies in front of the lens.
        first = [i for i, x in enumerate(got) if x in (a if isinstance(a, list) else [a])]
        if first and b in got and first[0] < got.index(b):
            return 0.5, "ICL in front of the retained crystalline lens; other layers out of order"
        self.flags["anatomy"] = True
        return 0.0, "crystalline lens missing or ICL behind it"

    def k_set(self, ch: Check, r: dict) -> tuple[float, str]:
        got = self.metric(r["case"], ch.key)
        if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
            raise _Fail("expected a list of names")
        a, b = set(got), set(r["value"])
        extra, missed = len(a - b), len(b - a)
        # Partly right is one item wrong: an over-inclusive answer (the whole vocabulary) earns nothing.
        return (1.0 if a == b else 0.5 if extra + missed <= 1 else 0.0), f"{extra} extra, {missed} missed"

    def k_choice(self, ch: Check, r: dict) -> tuple[float, str]:
        got = self.metric(r["case"], ch.key)
        return (1.0, "accepted") if got in r["accept"] else (0.0, f"{got!r} does not separate the solutions")

    def _interval(self, case: str, key: str) -> tuple[float, float]:
        lo, hi = self._numbers(self.metric(case, key), 2)
        if lo > hi:
            raise _Fail("interval with lower > upper")
        return float(lo), float(hi)

    def k_interval(self, ch: Check, r: dict) -> tuple[float, str]:
        lo, hi = self._interval(r["case"], ch.key)
        if not lo <= r["truth"] <= hi:
            return 0.0, f"[{lo:.4g}, {hi:.4g}] misses the truth"
        # An interval wider than WIDE times the allowed width says nothing: it earns nothing.
        w, allowed = hi - lo, r["max_width"]
        return (1.0 if w <= allowed else 0.5 if w <= WIDE * allowed else 0.0), f"width {w:.4g} (allowed {allowed:g})"

    def k_interval_bounds(self, ch: Check, r: dict) -> tuple[float, str]:
        lo, hi = self._interval(r["case"], ch.key)
        if not lo <= r["truth"] <= hi:
            return 0.0, "interval misses the true value"
        err = max(abs(lo - r["value"][0]), abs(hi - r["value"][1]))
        return _grade(err, ch.tolerance), f"end error {err:.4g}"

    def k_pair(self, ch: Check, r: dict) -> tuple[float, str]:
        ok, notes = 0, []
        for a, b in r.get("equal", []):
            d = float(np.abs(self.psf(a) - self.psf(b)).sum() / max(np.abs(self.psf(b)).sum(), 1e-300))
            good = d <= ch.tolerance
            if not good:
                self.flags["disabled_mechanism"] = True
            ok += good
            notes.append(f"{a}={b}: {d:.3g}")
        for a, b, ref_d in r.get("differ", []):
            d = float(np.abs(self.psf(a) - self.psf(b)).sum() / max(np.abs(self.psf(b)).sum(), 1e-300))
            ok += d >= 0.5 * ref_d
            notes.append(f"{a}!={b}: {d:.3g} (reference {ref_d:.3g})")
        for s1, s2, case in r.get("equal_files", []):
            g, note = self._second_method(case, s1, s2, ch.tolerance)
            ok += g
            notes.append(note)
        n = len(r.get("equal", [])) + len(r.get("differ", [])) + len(r.get("equal_files", []))
        return (1.0 if ok == n else 0.5 if ok >= n / 2 else 0.0), "; ".join(notes)

    def k_rotation(self, ch: Check, r: dict) -> tuple[float, str]:
        a, b = self.psf(r["base"]), self.psf(r["rotated"])
        # Row i grows with +y and column j with +x, so np.rot90(a, +1) turns the picture clockwise: a
        # counter-clockwise turn by q quarters is np.rot90(a, -q).
        d = float(np.abs(np.rot90(a, -r["quarter_turns"]) - b).sum() / max(np.abs(b).sum(), 1e-300))
        # A PSF that the rotation leaves alone (a centred round blob that ignores the cylinder and the
        # decentre) is trivially covariant; where the reference changes under the rotation, the
        # submission's own PSF must change by at least half as much.
        ra, rb = self.ref_psf(r["base"]), self.ref_psf(r["rotated"])
        moved_ref = float(np.abs(ra - rb).sum() / max(np.abs(rb).sum(), 1e-300))
        moved = float(np.abs(a - b).sum() / max(np.abs(b).sum(), 1e-300))
        if moved_ref > 3 * ch.tolerance and moved < moved_ref / 2:
            return 0.0, f"the PSF changes by {moved:.3g} under the rotation, the reference by {moved_ref:.3g}"
        bad = self._psf_off(r["base"], a)
        if bad:
            return 0.0, bad
        return _grade(d, ch.tolerance), f"rotated mismatch {d:.3g}"

    def k_solutions(self, ch: Check, r: dict) -> tuple[float, str]:
        from icl.pro.generate import _solution_scene, exposed
        from icl.pro.package import load_package
        from icl.pro.references import render_psf

        sols = self.metric(r["case"], ch.key)
        if not isinstance(sols, list) or not 1 <= len(sols) <= 8:
            raise _Fail("solutions must be a list of 1 to 8 parameter sets")
        inst = self._input_dir()
        pkg = load_package(inst / "cases" / r["case"])
        obs = load_npz(inst / "observation.npz", required=("image", "x_arcmin", "y_arcmin", "exposure"))["image"]
        fitting = []
        for i, s in enumerate(sols):
            if not isinstance(s, dict):
                raise _Fail(f"solution {i} is not an object")
            sol = {"decentre_mm": list(self._numbers(s.get("decentre_mm"), 2)),
                   "residual_sphere_d": float(self._numbers(s.get("residual_sphere_d"), 1)[0]),
                   "fixation_offset_arcmin": list(self._numbers(s.get("fixation_offset_arcmin", [0.0, 0.0]), 2))}
            if max(abs(v) for v in sol["decentre_mm"]) > 1.0 or abs(sol["residual_sphere_d"]) > 5 or \
                    max(abs(v) for v in sol["fixation_offset_arcmin"]) > 30:
                raise _Fail(f"solution {i} outside the plausible range")
            img = exposed(render_psf(_solution_scene(pkg, sol))[0], r["exposure"])
            err = float(np.abs(img - obs).sum() / np.abs(obs).sum())
            if err <= ch.tolerance:
                fitting.append(sol)
        distinct = any(max(abs(a["residual_sphere_d"] - b["residual_sphere_d"]) / r["scales"]["residual_sphere_d"],
                           *(abs(x - y) / r["scales"]["decentre_mm"] for x, y in zip(a["decentre_mm"], b["decentre_mm"])),
                           *(abs(x - y) / r["scales"]["fixation_offset_arcmin"]
                             for x, y in zip(a["fixation_offset_arcmin"], b["fixation_offset_arcmin"]))) >= 1.0
                       for i, a in enumerate(fitting) for b in fitting[i + 1:])
        score = 1.0 if distinct else (0.5 if fitting else 0.0)
        return score, f"{len(fitting)} of {len(sols)} fit; structurally different: {distinct}"

    def k_coverage(self, ch: Check, r: dict) -> tuple[float, str]:
        ivs = self.metric(r["case"], ch.key)
        if not isinstance(ivs, list) or len(ivs) != len(r["truths"]):
            raise _Fail(f"expected {len(r['truths'])} intervals")
        hits, widths = 0, []
        for iv, t in zip(ivs, r["truths"]):
            lo, hi = self._numbers(iv, 2)
            if lo > hi:
                raise _Fail("interval with lower > upper")
            hits += lo <= t <= hi
            widths.append(hi - lo)
        mw = float(np.mean(widths))
        n, allowed = len(ivs), r["max_mean_width"]
        score = 1.0 if hits >= n - 1 and mw <= allowed else (0.5 if hits >= n - 2 and mw <= WIDE * allowed else 0.0)
        return score, f"coverage {hits}/{n}, mean width {mw:.3g}"

    def k_convergence(self, ch: Check, r: dict) -> tuple[float, str]:
        exp = load_json(self._exp_file(), max_bytes=MAX_METRICS_BYTES)
        series = exp.get("experiments") if isinstance(exp, dict) else None
        if not isinstance(series, list):
            raise _Fail("experiments.json has no experiments list")
        best = 0.0
        for s in series:
            if not isinstance(s, dict) or s.get("kind") != "convergence" or s.get("metric") != ch.key:
                continue
            vals = self._numbers(s.get("values"), None)
            if vals.size < 3 or np.ptp(vals) <= 1e-12 * max(float(np.abs(vals).max()), 1e-300):
                continue  # a constant series is no study: no computation changed with the sampling
            if "conclusions" in s and isinstance(s["conclusions"], list) and len(set(map(str, s["conclusions"]))) > 1:
                self.flags["conclusion_flips"] = True
            if abs(vals[-1] - vals[-2]) > ch.tolerance / 3:
                continue
            self.flags["converged"] = True
            best = max(best, 1.0 if abs(vals[-1] - r["value"]) <= ch.tolerance else 0.5)
        return best, "converged series found" if best else "no converged series of at least three levels"

    def _second_method(self, case: str, s1: str, s2: str, tol: float) -> tuple[float, str]:
        """Grade a second computation ``s2`` of the PSF ``s1``: two methods declared in metrics ``methods``,
        outputs that differ by more than round-off (identical bytes are one computation written twice) and
        agree within ``tol`` (relative L1).
        """
        # Both files must first be valid PSFs (bounded, finite, on the grid).
        a, b = self.psf(case, s1), self.psf(case, s2)
        methods = self.metrics(case).get("methods")
        if not isinstance(methods, dict) or not all(isinstance(methods.get(k), str) and methods[k].strip()
                                                    for k in (s1, s2)):
            raise _Fail(f"metrics.json of {case}: 'methods' must name the method of {s1} and of {s2}")
        if methods[s1].strip() == methods[s2].strip():
            return 0.0, f"{s1} and {s2} declare the same method"
        d = float(np.abs(a - b).sum() / max(np.abs(b).sum(), 1e-300))
        if d <= ROUND_OFF:
            return 0.0, f"{s1} vs {s2}: {d:.3g}, within round-off: one computation, not two"
        bad = self._psf_off(case, a)
        if bad:
            return 0.0, bad
        return _grade(d, tol), f"{s1} vs {s2}: {d:.3g}"

    def _psf_off(self, case: str, a: np.ndarray) -> str | None:
        """Why ``a`` fails the PSF tolerance against the case's reference PSF, or None: two methods that agree
        on a wrong PSF (or a PSF that rotates like the reference's but is not it) have shown nothing.
        """
        ref_path = self.release / "private" / "psf" / self.iid / f"{case}.npz"
        if not ref_path.is_file():
            return None
        b = self.ref_psf(case)
        err = float(np.abs(a - b).sum() / max(np.abs(b).sum(), 1e-300))
        return None if err <= PSF_TOLERANCE else f"{case}: the PSF is {err:.3g} from the reference (> {PSF_TOLERANCE})"

    def k_repeat(self, ch: Check, r: dict) -> tuple[float, str]:
        return self._second_method(r["case"], "psf_linear", "psf_repeat", ch.tolerance)

    def k_manifest(self, ch: Check, r: dict) -> tuple[float, str]:
        if self.harness:  # the frozen submission's manifest, never a file the program wrote
            m = self.frozen_manifest
            if m is None:
                raise _Fail("sets.json holds no frozen submission manifest")
        else:  # a plain OUTPUT (development scoring): its own manifest is all there is
            p = self.run.parent / "manifest.json" if not (self.run / "manifest.json").is_file() else self.run / "manifest.json"
            m = load_json(p, max_bytes=MAX_METRICS_BYTES)
        if not isinstance(m, dict) or not isinstance(m.get("random_seeds"), dict):
            raise _Fail("manifest without random_seeds")
        return (1.0 if isinstance(m.get("versions"), dict) and m["versions"] else 0.5), "manifest read"

    def k_provenance(self, ch: Check, r: dict) -> tuple[float, str]:
        model = model_eye(self.run)
        if model is None:
            self.flags["no_model"] = True
            raise _Fail("model/eye.json missing: no provenance to audit")
        sourced = _sourced(model)
        if len(sourced) < MIN_MODEL_PARAMETERS:
            return 0.0, (f"model/eye.json has {len(sourced)} parameters with a source and a status "
                         f"(at least {MIN_MODEL_PARAMETERS}): too little to audit")
        params = instance_parameters(model, self.iid)
        bad = []
        for dotted in r["guarded"]:
            name = dotted.split(".", 1)[1]
            for path, entry in params:
                leaf = path.rsplit(".", 1)[-1]
                if (leaf == name or leaf.startswith(name + "_")) and entry.get("status") in ("measured", "documented") \
                        and entry.get("source") not in r["input_sources"]:
                    bad.append(dotted)
                    break
        if bad:
            self.flags["fabricated"] = True
            return 0.0, f"invented provenance for {bad}"
        return 1.0, "no invented provenance"

    def _input_dir(self) -> Path:
        for split in ("train", "dev", "test", "ood"):
            d = self.release / "inputs" / split / self.iid
            if d.is_dir():
                return d
        raise _Fail("instance inputs not found")

    def _exp_file(self) -> Path:
        p = self.results / "experiments.json"
        if not p.is_file() or p.is_symlink():
            raise _Fail("missing experiments.json")
        self._own_file(p)
        from icl.pro.results_schema import check_run_experiments

        bad = Findings()
        check_run_experiments(bad, self.results, "experiments.json")
        if bad.items:
            i = bad.items[0]
            raise _Fail(f"invalid results/{self.iid}/experiments.json: {i['field'] or '(file)'}: {i['message']}")
        return p

    def score(self, ch: Check) -> tuple[float, str]:
        if self.refused is not None:
            return 0.0, self.refused
        if not self.results.is_dir():
            return 0.0, "missing task"
        try:
            r = self.refs[ch.id]
            return getattr(self, f"k_{ch.kind}")(graded_check(ch, r), r)
        except (_Fail, InputError) as exc:
            return 0.0, str(exc)
        except (ValueError, TypeError, KeyError, IndexError, OSError, OverflowError, MemoryError) as exc:
            return 0.0, f"unreadable artifact: {type(exc).__name__}: {exc}"


def graded_check(ch: Check, ref: dict) -> Check:
    """``ch`` with the tolerance its reference was frozen with: the larger of the registered tolerance and
    the error budget of the measurement noise in the instance's inputs (``ref["tolerance"]``), never less
    than the registered one.
    """
    import dataclasses

    t = ref.get("tolerance") if isinstance(ref, dict) else None
    if ch.tolerance is None or not isinstance(t, (int, float)) or isinstance(t, bool) or not t > ch.tolerance:
        return ch
    return dataclasses.replace(ch, tolerance=float(t))


def load_reviews(path: str | Path | None) -> dict[tuple[str, str], float]:
    """Expert grades ``{"reviews": [{"instance", "check", "score"}]}``; scores must be 0, 0.5 or 1."""
    if path is None:
        return {}
    data = load_json(path)
    out = {}
    rows = data.get("reviews") if isinstance(data, dict) else None
    if not isinstance(rows, list):
        raise InputError("expected a list", str(path), "reviews")
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or row.get("score") not in (0, 0.5, 1):
            raise InputError("score must be 0, 0.5 or 1", str(path), f"reviews[{i}].score")
        out[(str(row.get("instance")), str(row.get("check")))] = float(row["score"])
    return out


def review_record(path: str | Path | None) -> tuple[dict[tuple[str, str], dict], dict | None]:
    """Who graded each reviewed check and how it was settled, and the file's agreement statistics.

    Reads the optional fields that ``icl review-merge`` writes (``reviewers``, ``resolution``, ``arbiter``,
    ``reason``, top-level ``agreement``); a plain reviews file gives empty records.
    """
    if path is None:
        return {}, None
    data = load_json(path)
    keep = ("reviewers", "scores", "resolution", "arbiter", "reason", "packet")
    rows = {(str(r.get("instance")), str(r.get("check"))): {k: r[k] for k in keep if k in r}
            for r in data.get("reviews", []) if isinstance(r, dict)}
    head = {k: data.get(k) for k in ("reviewers", "arbiter", "agreement") if k in data}
    return rows, ({"file": str(path), **head} if head else {"file": str(path)})


def load_sets(run_dir: str | Path) -> list[dict] | None:
    """The harness sets of an evaluated run (``sets.json``, see :mod:`icl.pro.evaluate`), or None.

    The file is trusted only as the evaluator wrote it: its signature, the harness's signature of every
    record and each set's OUTPUT against the record's artifact hashes are verified
    (:mod:`icl.sandbox.signing`); an unsigned or altered file, or an OUTPUT changed since the run, raises
    :class:`InputError` naming the file.
    """
    from icl.sandbox.signing import verify, verify_artifacts

    p = Path(run_dir) / "sets.json"
    if not p.is_file():
        return None
    if (Path(run_dir) / "results").exists():
        # A program's OUTPUT holds results/; only the evaluator writes sets.json, beside the OUTPUTs.
        raise InputError("a run folder with results/ is a program's OUTPUT: its sets.json is not trusted", str(p))
    doc = load_json(p)
    sets = doc.get("sets") if isinstance(doc, dict) else None
    if not isinstance(sets, list):
        raise InputError("expected a list", str(p), "sets")
    for i, row in enumerate(sets):
        if not isinstance(row, dict) or not isinstance(row.get("record"), dict) or \
                not isinstance(row.get("instances"), list) or not isinstance(row.get("output"), str):
            raise InputError("expected {set, instances, output, record}", str(p), f"sets[{i}]")
        rec = row["record"]
        if not isinstance(rec.get("ok"), bool) or not isinstance(rec.get("violations", []), list) or \
                not all(isinstance(v, str) for v in rec.get("violations", [])):
            raise InputError("record needs a boolean ok and a list of violation names", str(p), f"sets[{i}].record")
        out = row["output"]
        if not out or "/" in out or "\\" in out or out.startswith("."):
            raise InputError("output must be a folder name inside the run", str(p), f"sets[{i}].output")
    verify(doc, p)
    for i, row in enumerate(sets):
        verify(row["record"], p, f"sets[{i}].record")
        verify_artifacts(row["record"], Path(run_dir) / row["output"], p, f"sets[{i}].output")
    return sets


def sampling_flips(run_dir: str | Path) -> list:
    """Conclusions that flipped under the hidden sampling intervention (``sets.json`` ``sampling_check``)."""
    doc = load_json(Path(run_dir) / "sets.json")
    check = doc.get("sampling_check") if isinstance(doc, dict) else None
    flips = check.get("flips") if isinstance(check, dict) else None
    return flips if isinstance(flips, list) else []


def _record_reason(rec: dict) -> str | None:
    """Why a harness record makes its tasks score 0 (None when the run is ok)."""
    if rec.get("ok") is True and rec.get("exit_status") == 0 and not rec.get("violations"):
        return None
    why = ", ".join(rec.get("violations") or []) or f"exit status {rec.get('exit_status')}"
    detail = "; ".join((rec.get("messages") or [])[:2])
    return f"harness run not ok: {why}" + (f" ({detail})" if detail else "")


def _g3(sets: list[dict] | None, run_ok: bool | None) -> dict:
    """Gate G3: cold start and every intervention ran ok, all under one frozen code hash."""
    if sets is None:
        if run_ok is None:
            return {"pass": None, "reason": "not evaluated: no run record"}
        return {"pass": bool(run_ok), "reason": "from the run record" if run_ok else "the run was not ok"}
    bad = [f"{r['set']}: {_record_reason(r['record'])}" for r in sets if _record_reason(r["record"])]
    hashes = {r["record"].get("frozen_sha256") for r in sets}
    if None in hashes or len(hashes) != 1:
        bad.append("not every run was checked against one frozen code hash")
    elif any(r["record"].get("code_sha256_before") != r["record"].get("frozen_sha256") or
             r["record"].get("code_sha256_after") != r["record"].get("frozen_sha256") for r in sets):
        bad.append("code hash differs from the frozen hash")
    if bad:
        return {"pass": False, "reason": "; ".join(bad)}
    return {"pass": True, "reason": f"{len(sets)} sandboxed runs (cold start and interventions) ok under frozen code"}


def run_cost(sets: list[dict] | None) -> dict | None:
    """Wall and CPU seconds summed over a run's sets, largest peak resident memory (bytes)."""
    if sets is None:
        return None
    recs = [r["record"] for r in sets]
    return {"wall_s": float(sum(r.get("wall_s", 0.0) for r in recs)), "cpu_s": float(sum(r.get("cpu_s", 0.0) for r in recs)),
            "peak_rss_bytes": int(max((r.get("peak_rss_bytes", 0) for r in recs), default=0)), "sets": len(recs)}


def score_run(release: str | Path, run_dir: str | Path, split: str = "test", reviews: str | Path | None = None,
              catalog: Catalog | None = None, instances: list[str] | None = None, run_ok: bool | None = None,
              freeze: dict | None = None) -> dict:
    """Score one run of a submission on one split.

    ``run_dir`` is either a plain OUTPUT folder (``results/<instance>/...``) or an evaluated run holding
    ``sets.json`` (:mod:`icl.pro.evaluate`): then each instance is read from its set's OUTPUT, every task
    of a set whose harness record is not ``ok`` scores 0 with the record's reason, and gate G3 comes from
    the records. ``run_ok`` stands in for G3 when there is no ``sets.json``. ``freeze`` is the release's
    :func:`icl.freeze.check_release` result (checked here when not given): a frozen release whose task
    texts, references or scoring code changed is refused, and its disputed references are not ranked.

    Returns
    -------
    dict
        Per-check scores with reasons, template, group and total scores, gates, pending counts and cost.

    """
    from icl.freeze import check_release, disputed

    release, run_dir = Path(release), Path(run_dir)
    frozen_out = disputed(freeze if freeze is not None else check_release(release))
    catalog = catalog or load_catalog(release / "catalog.json")
    rev = load_reviews(reviews)
    rev_detail, rev_head = review_record(reviews)
    sets = load_sets(run_dir)
    sampled = sampling_flips(run_dir) if sets is not None else []
    submitted = load_json(run_dir / "sets.json").get("submission_manifest") if sets is not None else None
    where: dict[str, tuple[Path, str | None]] = {}
    for row in sets or []:
        for iid in row["instances"]:
            where[str(iid)] = (run_dir / row["output"], _record_reason(row["record"]))
    table = load_json(release / "private" / "splits.json")["instances"]
    rows = [r for r in table if r["split"] == split and (instances is None or r["id"] in instances)]
    answers = answer_identities(release / "private")
    checks_out, inst_scores, flags, clusters = [], {}, defaultdict(bool), {}
    result_issues: list[dict] = []
    pending, not_ranked = 0, {}
    for row in rows:
        if row["id"] in frozen_out or row["template"] in frozen_out:  # disputed at the freeze: out for all
            not_ranked[row["id"]] = frozen_out.get(row["id"]) or frozen_out[row["template"]]
            continue
        ref_doc = load_json(release / "private" / "references" / f"{row['id']}.json")
        if not_ranked_reason(ref_doc):  # its reference failed the two-solver cross-check: reported apart
            not_ranked[row["id"]] = not_ranked_reason(ref_doc)
            continue
        refs = ref_doc["checks"]
        tpl = catalog.template(row["template"])
        if sets is None:
            root, refused = run_dir, None
        else:
            root, refused = where.get(row["id"], (run_dir, "not run by the harness"))
        sc = InstanceScorer(release, root, row["id"], refs, refused, answers, submitted, sets is not None)
        if refused is None:
            result_issues += [dict(i, file=(root / i["file"]).relative_to(run_dir).as_posix())
                              for i in validate_output(root, [row["id"]])]
        vals = []
        for ch in tpl.checks:
            if ch.mode == "auto":
                s, why = sc.score(ch)
            elif refused is not None:
                s, why = 0.0, refused
            elif (row["id"], ch.id) in rev:
                s, why = rev[(row["id"], ch.id)], "expert review"
            else:
                s, why = None, "pending expert review"
                pending += 1
            checks_out.append({"instance": row["id"], "check": ch.id, "mode": ch.mode, "score": s, "reason": why})
            if ch.mode == "expert" and why == "expert review" and rev_detail.get((row["id"], ch.id)):
                checks_out[-1]["review"] = rev_detail[(row["id"], ch.id)]
            if s is not None:
                vals.append(s)
        for k, v in sc.flags.items():
            flags[(row["template"], k)] |= bool(v)
        if refused is None and sc.results.is_dir():
            model = model_eye(root)
            if model is None:
                flags[(row["template"], "no_model")] = True
            elif len(_sourced(model)) < MIN_MODEL_PARAMETERS:
                flags[(row["template"], "thin_model")] = True
            else:
                flags[(row["template"], "model_evidence")] = True
        inst_scores[row["id"]] = (row["template"], float(np.mean(vals)) if vals else 0.0,
                                  refused is None and sc.results.is_dir())
        clusters[row["id"]] = f"{row['base_eye']}|{row['design_family']}"
    # A template whose every reference failed its cross-check is frozen out for every submission alike
    # (a disputed reference is removed before evaluation), not scored 0.
    frozen = sorted({r["template"] for r in rows} - {v[0] for v in inst_scores.values()}
                    - {r["template"] for r in rows if r["id"] not in not_ranked})
    summary = aggregate(catalog, inst_scores, frozen)
    if sampled:
        flags[("*", "sampling_flips")] = True
    gates = _gates(catalog, checks_out, flags, _g3(sets, run_ok))
    return {"split": split, **summary, "gates": gates, "pending_expert_checks": pending, "reviews": rev_head,
            "professional_score_status": ("development score: " + f"{pending} expert checks pending")
            if pending else "complete", "completion_rate": float(np.mean([v[2] for v in inst_scores.values()]))
            if inst_scores else 0.0, "cost": run_cost(sets), "checks": checks_out,
            "result_issues": result_issues, "not_ranked": not_ranked,
            "instances": {k: {"template": v[0], "score": v[1], "cluster": clusters[k], "completed": v[2]}
                          for k, v in inst_scores.items()}}


def aggregate(catalog: Catalog, inst_scores: dict[str, tuple], frozen: list[str] | tuple = ()) -> dict:
    """Template = mean over instances, group = mean of templates, total = sum of weight x group.

    A template without instances scores 0, except a ``frozen`` one (every reference of it failed its
    cross-check), which is left out of its group's mean; a group with every template frozen scores 0.
    """
    per_t = defaultdict(list)
    for tid, s, *_ in inst_scores.values():
        per_t[tid].append(s)
    templates = {t.id: float(np.mean(per_t[t.id])) if per_t[t.id] else 0.0 for t in catalog.templates}
    groups = {g: float(np.mean([v for k, v in templates.items() if k[0] == g and k not in frozen] or [0.0]))
              for g in GROUPS}
    total = float(sum(catalog.weights[g] * groups[g] for g in GROUPS))
    return {"professional_score": total, "groups": groups, "templates": templates, "frozen_templates": list(frozen),
            "missing_templates": sorted(k for k in templates if not per_t[k] and k not in frozen)}


def _sourced(model: dict) -> list[str]:
    """Parameters of an eye model that carry a non-empty source and a status."""
    return [path for path, e in model_parameters(model)
            if isinstance(e.get("source"), str) and e["source"].strip() and isinstance(e.get("status"), str)]


def _gates(catalog: Catalog, checks: list[dict], flags: dict, g3: dict) -> dict:
    """Gates G1-G5 of one run. A gate is passed only on evidence of what it examines; without it the gate
    is not assessed (``pass`` None, which keeps a submission out of the qualified group), never passed.
    """
    def any_flag(*kinds: str) -> bool:
        return any(v and k in kinds for (_, k), v in flags.items())

    def gate(evidence: bool, missing: str, failed: bool, why: str) -> dict:
        if failed:
            return {"pass": False, "reason": why}
        if not evidence:
            return {"pass": None, "reason": "not assessed: " + missing}
        return {"pass": True, "reason": "no failure found"}

    a01 = [c for c in checks if c["check"] == "A01.1"]
    g1 = any(c["score"] == 0.0 for c in a01) or any_flag("anatomy")
    kinds = {ch.id: ch.kind for t in catalog.templates for ch in t.auto_checks}
    conv = [c for c in checks if kinds.get(c["check"]) == "convergence"]
    flips = any_flag("conclusion_flips", "sampling_flips")
    return {
        "G1": gate(bool(a01), "no anatomy task (A01) was scored", g1,
                   "ICL placed as a lens replacement, behind the crystalline lens, or no anatomy answer"),
        "G2": gate(any_flag("energy_evidence"), "no energy ledger was read (energy.json of an energy check)",
                   any_flag("energy_gain", "disabled_mechanism"),
                   "unexplained energy gain, or a disabled mechanism keeps its effect"),
        "G3": g3,
        "G4": gate(bool(conv), "no convergence task (F02) was scored",
                   flips or (bool(conv) and not any_flag("converged")),
                   "; ".join((["no converged, non-constant convergence series"] if not any_flag("converged") else [])
                             + (["a conclusion flips with sampling"] if flips else []))),
        "G5": gate(any_flag("model_evidence") and not any_flag("no_model", "thin_model"),
                   f"model/eye.json missing, or with fewer than {MIN_MODEL_PARAMETERS} parameters that carry a "
                   "source and a status: the model's provenance cannot be audited",
                   any_flag("fabricated"), "invented provenance for a parameter the inputs mark unknown or synthetic"),
    }


def bootstrap(runs: list[dict], catalog: Catalog, n: int = 2000, seed: int = 20261027) -> list[float]:
    """95 % interval of the total: the 2.5th and 97.5th percentiles of :func:`bootstrap_totals`."""
    lo, hi = np.percentile(bootstrap_totals(runs, catalog, n, seed), [2.5, 97.5])
    return [float(lo), float(hi)]


def bootstrap_totals(runs: list[dict], catalog: Catalog, n: int = 2000, seed: int = 20261027) -> np.ndarray:
    """Replicates of the total by a two-way cluster bootstrap over base eyes and design families.

    Instances that share a base eye, or a design family, are correlated across the whole release (every
    template draws from the same pools), so both are resampled across the release. Each replicate gives
    every base eye and, independently, every design family a random weight (Bayesian bootstrap: Dirichlet
    weights, the smooth form of drawing clusters with replacement, so no cluster and no template ever drops
    out), an instance weighs the product of its eye's and its family's weights, and each template's score
    is the weighted mean of its instances. Templates stay fixed strata: only which eyes and families they
    were measured on is resampled.
    """
    rng = np.random.default_rng(seed)
    inst = runs[0]["instances"]
    ids = sorted(inst)
    mean = np.array([float(np.mean([r["instances"][iid]["score"] for r in runs])) for iid in ids])
    eye_of = [inst[iid]["cluster"].split("|")[0] for iid in ids]
    fam_of = [inst[iid]["cluster"].split("|")[-1] for iid in ids]
    eyes, fams = sorted(set(eye_of)), sorted(set(fam_of))
    ei = np.array([eyes.index(x) for x in eye_of])
    fi = np.array([fams.index(x) for x in fam_of])
    tpl = [inst[iid]["template"] for iid in ids]
    t_ids = sorted(set(tpl))
    t_idx = np.array([t_ids.index(t) for t in tpl])
    weights = catalog.weights
    totals = []
    for _ in range(n):
        w = rng.dirichlet(np.ones(len(eyes)))[ei] * rng.dirichlet(np.ones(len(fams)))[fi]
        t_score = dict(zip(t_ids, np.bincount(t_idx, weights=w * mean, minlength=len(t_ids))
                           / np.bincount(t_idx, weights=w, minlength=len(t_ids)), strict=True))
        # A template without any instance in the run scores 0, a frozen one is left out, as in aggregate().
        frozen = runs[0].get("frozen_templates", [])
        groups = {g: float(np.mean([t_score.get(t.id, 0.0) for t in catalog.templates
                                    if t.group == g and t.id not in frozen] or [0.0])) for g in GROUPS}
        totals.append(sum(weights[g] * groups[g] for g in GROUPS))
    return np.asarray(totals)


def score_submission(release: str | Path, run_dirs: list[str | Path], name: str, split: str = "test",
                     reviews: str | Path | None = None, run_ok: list[bool | None] | None = None,
                     bootstrap_n: int = 2000, seed: int = 20261027, instances: list[str] | None = None) -> dict:
    """Score up to three independent runs: mean, worst, completion rate, cost, clustered bootstrap, gates.

    Each run directory is scored by :func:`score_run` (its ``sets.json``, when present, supplies the harness
    records); ``run_ok`` gives G3 for runs without one.
    """
    from icl.freeze import check_release

    freeze = check_release(release)  # once for every run: refuses a frozen release that changed
    catalog = load_catalog(Path(release) / "catalog.json")
    runs = []
    for i, d in enumerate(run_dirs):
        runs.append(score_run(release, d, split, reviews, catalog, instances, run_ok[i] if run_ok else None,
                              freeze))
    totals = [r["professional_score"] for r in runs]
    gates = {g: {"pass": (None if any(r["gates"][g]["pass"] is None for r in runs)
                          else all(r["gates"][g]["pass"] for r in runs)),
                 "reason": "; ".join(sorted({r["gates"][g]["reason"] for r in runs}))} for g in runs[0]["gates"]}
    costs = [r["cost"] for r in runs if r["cost"] is not None]
    from icl.keys import release_rankable

    rank_ok, rank_why = release_rankable(release)
    score = float(np.mean(totals))
    return {"name": name, "split": split, "runs": len(runs), "professional_score": score,
            "rankable": rank_ok, "rankable_reason": rank_why, "freeze": freeze, **_tracks(name, score, run_dirs),
            "professional_score_status": runs[0]["professional_score_status"], "worst": float(min(totals)),
            "reviews": runs[0]["reviews"],
            "run_scores": totals, "completion_rate": float(np.mean([r["completion_rate"] for r in runs])),
            "cost": {"wall_s": [c["wall_s"] for c in costs], "cpu_s": [c["cpu_s"] for c in costs],
                     "peak_rss_bytes": max((c["peak_rss_bytes"] for c in costs), default=None)} if costs else None,
            "bootstrap_95": bootstrap(runs, catalog, bootstrap_n, seed) if runs[0]["instances"] else None,
            "groups": {g: float(np.mean([r["groups"][g] for r in runs])) for g in GROUPS},
            "gates": gates, "gates_passed": all(v["pass"] is True for v in gates.values()),
            "run_details": runs}


def _tracks(name: str, score: float, run_dirs: list[str | Path]) -> dict:
    """The declared and effective track of a submission's runs and its score on each track's board.

    Without harness records (runs not made by ``pro-run``) the track is unknown and the submission is on no
    board: only evaluated runs are ranked.
    """
    from icl.sandbox.boards import board_entry

    records = [row["record"] for d in run_dirs for row in (load_sets(d) or [])]
    if not records:
        return {"declared_track": None, "track": None, "boards": {}}
    entry = board_entry(name, score, records)
    return {k: entry[k] for k in ("declared_track", "track", "boards")}


def leaderboard(scores: list[dict], track: str | None = None) -> list[dict]:
    """Ranked rows, then the rows that may not be ranked, listed apart without a place.

    Ranked rows (scores on a release with a secret key) are grouped by gate pass (all gates passed first),
    then by score, highest first; a score on a release whose answers can be rebuilt gets ``place`` None.
    With ``track`` (``from-scratch`` or ``reference-assisted``) the rows are that track's board: only the
    submissions listed there, each with its board score (0 on the from-scratch board for a run found to use
    reference code, with the reason).
    """
    if track is not None:
        scores = [dict(s, professional_score=s["boards"][track]["score"], board_reason=s["boards"][track]["reason"])
                  for s in scores if track in (s.get("boards") or {})]
    rows = sorted(({"name": s["name"], "rankable": s.get("rankable") is True, "track": s.get("track"),
                    "board_reason": s.get("board_reason", ""),
                    "rankable_reason": s.get("rankable_reason", "not scored against a release manifest"),
                    "gates_passed": s["gates_passed"], "professional_score": s["professional_score"],
                    "worst": s["worst"], "bootstrap_95": s["bootstrap_95"], "completion_rate": s["completion_rate"],
                    "cost": s["cost"],
                    "gates": {g: v["pass"] for g, v in s["gates"].items()}, "groups": s["groups"]} for s in scores),
                  key=lambda r: (not r["rankable"], not r["gates_passed"], -r["professional_score"], r["name"]))
    for place, r in enumerate(rows, 1):
        r["place"] = place if r["rankable"] else None
    return rows
