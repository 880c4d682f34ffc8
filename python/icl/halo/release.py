"""Generate the halo release: public task, private references, gallery, manifest.

Two splits share one layout: the development split (the fourteen case files, ``public/halo_cases.json``,
``private/<condition>.*``) and the held-out test split (:mod:`icl.halo.variants`,
``public/halo_cases_test.json``, ``private/test/<condition>.*``), whose parameters come from the release
key kept in ``private/release.key``.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from threadpoolctl import ThreadpoolController

from icl.crosscheck import attach, crosscheck, lobe_mask
from icl.halo.cases import FIRST_DARK, Condition, HaloCase, ResearchCard, halo_dir, load_cases
from icl.halo.evaluate import TERMS
from icl.halo.readme import PUBLIC_EXTRAS, public_readme
from icl.halo.ring import measure_ring, polar_grid, polar_profile, wick_centre
from icl.halo.variants import TEST_VARIANTS, build_test_split
from icl.io import atomic_write_bytes, dumps_json, write_json, write_manifest, write_npz
from icl.keys import KEY_FILE, ReleaseKey, write_key
from icl.optics import RenderResult, render

RELEASE_FORMAT = "icl-halo-release/1"
PREDICTION_ITEMS = {
    "wick_position": "Position of each source's main image (arcmin), recorded apart from the input source angle.",  # noqa: E501 (published text)
    "halo_centre": "Centre of the halo relative to fixation (arcmin); not replaced by the whole-image centroid.",  # noqa: E501 (published text)
    "relative_offset": "Halo centre minus wick position, kept apart from a prism shift of the whole pattern.",
    "radius_width": "Ring radius and radial FWHM; for non-circular structure direction radii, contour or axes.",  # noqa: E501 (published text)
    "completeness": "Full circle, arc, broken or several rings; an arc is not claimed as a whole circle.",
    "azimuthal_brightness": "Energy along different angles, unevenness and hot spots.",
    "ring_peaks": "Number of rings and their peaks under a stated peak-detection rule; noise peaks are not rings.",  # noqa: E501 (published text)
    "energy_contrast": "Ring-band energy, wick-to-background contrast, in linear values.",
    "visibility_uncertainty": "Optical signal versus detectability at a stated threshold versus perception; "
    "intervals or 'unknown' when the inputs do not decide.",
}


def main_lobe_radius(cond: Condition, source_index: int) -> float:
    """Radius (arcmin) of the main-lobe disk: first dark ring at the longest wavelength plus the extent."""
    src = cond.scene.sources[source_index]
    lam = max(w for w, _ in src.spectrum)
    lod = lam * 1e-9 / (cond.scene.pupil.diameter_mm * 1e-3) / (math.pi / 10800.0)
    return FIRST_DARK * lod + src.extent.radius_arcmin


def expected_wick(cond: Condition, source_index: int) -> tuple[float, float]:
    """Geometric wick: source position plus the prism shift of the decentred optic (arcmin)."""
    src = cond.scene.sources[source_index]
    px, py = cond.prism_arcmin()
    return (src.x_arcmin + px, src.y_arcmin + py)


@dataclass
class Reference:
    """Rendered reference of one condition and its measured geometry."""

    condition: Condition
    result: RenderResult
    record: dict


def _clean(a: np.ndarray) -> list:
    """Nested lists with NaN written as null (JSON has no NaN)."""
    a = np.asarray(a, dtype=float)
    bad = ~np.isfinite(a)
    if not bad.any():
        return a.tolist()
    out = a.astype(object)
    out[bad] = None
    return out.tolist()


@functools.lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    return ThreadpoolController()


def build_reference(cond: Condition) -> Reference:
    """Render one condition and measure its wick, calibration ring, ledger and polar profiles.

    NumPy's BLAS runs on one thread here: the second solver's matrix products are small, and with a
    second BLAS thread the cross-checks of a release took 7.0-7.3 s of CPU instead of 1.3-1.5 s
    (measured at a load average of 11 on the shared 2-core machine), while the renderer's own threads
    already keep both cores busy.
    """
    with _blas().limit(limits=1, user_api="blas"):
        return _build_reference(cond)


def _build_reference(cond: Condition) -> Reference:
    res = render(cond.scene)
    axis = res.x_arcmin
    half_width = len(axis) * res.angular_pixel_arcsec / 120.0
    radii, angles = polar_grid()
    sources, profiles = [], []
    for k, src in enumerate(cond.scene.sources):
        comp = res.components[k]
        exp = expected_wick(cond, k)
        lobe = main_lobe_radius(cond, k)
        wick = (
            wick_centre(comp, axis, lobe, start=exp)
            if abs(exp[0]) < half_width and abs(exp[1]) < half_width
            else None
        )
        entry = {
            "id": src.id,
            "input_position_arcmin": [src.x_arcmin, src.y_arcmin],
            "prism_arcmin": list(cond.prism_arcmin()),
            "expected_wick_arcmin": list(exp),
            "wick_arcmin": list(wick) if wick else None,
            "wick_minus_input_arcmin": [wick[0] - src.x_arcmin, wick[1] - src.y_arcmin] if wick else None,
            "main_lobe_radius_arcmin": lobe,
            "energy_ledger": res.ledgers[k],
        }
        if cond.calibration_ring:
            ring = measure_ring(comp, axis, cond.lambda_over_d_arcmin(), start=exp)
            entry["calibration_ring"] = ring
            rc = ring.get("ring_centre_arcmin")
            entry["ring_minus_wick_arcmin"] = [rc[0] - wick[0], rc[1] - wick[1]] if rc and wick else None
            entry["analytic"] = cond.analytic()
        sources.append(entry)
        anchor = wick or exp
        profiles.append(_clean(polar_profile(comp, axis, anchor)))
    record = {
        "condition": cond.id,
        "case": cond.case,
        "label": cond.label,
        "calibration_ring": cond.calibration_ring,
        "complex_field": cond.complex_field,
        "zero_flux": cond.zero_flux,
        "scene": cond.scene_json,
        "sources": sources,
        "ledger": res.ledger,
        "sampling": res.sampling,
        "polar": {
            "radii_arcmin": radii,
            "angles_deg": angles,
            "anchor": "measured wick of each source (expected wick when it has no flux)",
            "units": "flux per pixel, bilinear between pixel centres; null outside the window",
            "profiles": profiles,
        },
    }
    lobes = [(s["wick_arcmin"] or s["expected_wick_arcmin"], s["main_lobe_radius_arcmin"]) for s in sources]
    attach(
        record,
        crosscheck(
            cond.scene,
            res.components,
            {k: s for k, (_, s) in TERMS.items()},
            halo_mask=lobe_mask(axis, lobes),
        ),
    )
    return Reference(cond, res, record)


_PROFILES = "@polar profiles@"


def record_json(record: dict) -> bytes:
    """``dumps_json(record)`` byte for byte, in half the time.

    The polar profiles are nine tenths of a record's numbers; the indented form of the standard
    encoder is written in pure Python, so they are encoded row by row by its compact C encoder and
    laid out with the same line breaks and indentation (tested against :func:`icl.io.dumps_json`).
    """
    polar = record["polar"]
    text = dumps_json({**record, "polar": {**polar, "profiles": _PROFILES}})
    return text.replace(json.dumps(_PROFILES), _indented(polar["profiles"], 2), 1).encode("utf-8")


def _indented(value, level: int) -> str:
    """JSON of nested lists of numbers and nulls as ``json.dumps(indent=2)`` writes it at ``level``."""
    if not isinstance(value, list) or not value:
        return json.dumps(value, allow_nan=False)
    pad = "\n" + "  " * (level + 1)
    if any(isinstance(v, list) for v in value):
        inner = ("," + pad).join(_indented(v, level + 1) for v in value)
    else:  # numbers and nulls hold no comma: the compact row's separators become line breaks
        inner = json.dumps(value, separators=(",", ":"), allow_nan=False)[1:-1].replace(",", "," + pad)
    return "[" + pad + inner + "\n" + "  " * level + "]"


def _task_text(case: HaloCase, cond: Condition) -> str:
    items = ", ".join(i.replace("_", " ") for i in case.predict)
    return (
        f"{case.title}. This is condition {cond.id} ({cond.label}). Render the linear pixel flux of every "
        f"source of the scene on the 512 x 512 grid given in 'grid' (4 arcsec pixels, row = +y, column = "
        f"+x, pixel centres (j - 255.5) * 4 arcsec), one component per source in the listed order, and "
        f"predict: {items}."
    )


SUBMISSION = {
    "folder": "one file <condition>.npz per condition, e.g. H01_a.npz; missing files score 0",
    "arrays": {
        "components": "float64 [n_sources, 512, 512]: linear flux per pixel of each source in the scene's "
        "order, including its flux, never normalised per image",
        "scene": "float64 [512, 512]: the sum of the components (relative tolerance 1e-6)",
        "angular_pixel_arcsec": "scalar 4.0",
    },
    "rules": [
        "no negative values (below -1e-12 of the reference peak), NaN or Inf",
        "no energy gain: a source records at most its flux times the sum of its spectral weights",
        "no pickled or object arrays; at most 64 MiB per file",
        "a condition that breaks a rule scores 0 with the reason; the total is not renormalised",
    ],
}


def public_document(cases: list[HaloCase], research: list[ResearchCard], axis: np.ndarray) -> dict:
    """Build the participant-facing ``halo_cases.json``: inputs, grid, tasks and format; no answers."""
    out_cases = []
    for case in cases:
        out_cases.append(
            {
                "id": case.id,
                "title": case.title,
                "purpose": case.purpose,
                "predict": list(case.predict),
                "conditions": [
                    {"id": c.id, "label": c.label, "scene": c.scene_json, "task": _task_text(case, c)}
                    for c in case.conditions
                ],
            }
        )
    return {
        "format": "icl-halo-cases/1",
        "grid": {
            "n": len(axis),
            "angular_pixel_arcsec": 4.0,
            "x_arcmin": axis,
            "y_arcmin": axis,
            "convention": "fixation at (0, 0); +x right, +y up; arrays [row = +y, column = +x]; "
            "a pixel holds the flux falling on it, in units of the source flux",
        },
        "prediction_items": PREDICTION_ITEMS,
        "submission": SUBMISSION,
        "cases": out_cases,
        "research_cards": [
            {
                "id": r.id,
                "question": r.question,
                "inputs_required": list(r.inputs_required),
                "truth": r.truth,
                "note": r.note,
                "scored": False,
            }
            for r in research
        ],
    }


SPLITS = ("dev", "test")


def split_paths(split: str) -> tuple[str, str]:
    """Public case file and private answer folder of a split, relative to the release folder.

    The development split keeps its original places (``public/halo_cases.json``, ``private/``); the test
    split's inputs lie beside them and its answers only under ``private/test/``.
    """
    if split == "dev":
        return "public/halo_cases.json", "private"
    if split == "test":
        return "public/halo_cases_test.json", "private/test"
    raise ValueError(f"split must be one of {list(SPLITS)}, got {split!r}")


def write_reference(out: Path, private: str, ref: Reference) -> None:
    """Write one reference's ``<condition>.npz`` and ``<condition>.json`` into ``out / private``."""
    cid = ref.condition.id
    write_npz(
        out / private / f"{cid}.npz",
        components=ref.result.components,
        scene=ref.result.scene,
        angular_pixel_arcsec=np.float64(ref.result.angular_pixel_arcsec),
        x_arcmin=ref.result.x_arcmin,
        y_arcmin=ref.result.y_arcmin,
    )
    atomic_write_bytes(out / private / f"{cid}.json", record_json(ref.record))


def build_and_write(task: tuple[Path, str, Condition]) -> None:
    """Build the reference of ``(out, private, condition)`` and write it (no data travels back)."""
    out, private, cond = task
    write_reference(out, private, build_reference(cond))


def _build_shared(
    conds: list[Condition], out: Path, private: str, drawer, drawing: list, progress: bool
) -> None:
    """Build and write ``conds`` here, lending one at a time to ``drawer`` once its figures are done.

    The two processes take conditions from the two ends of the list, so the gallery's process is not idle
    while this one finishes the split; a reference is the same bytes wherever it is computed.
    """
    from rich.progress import Progress

    pending = collections.deque(conds)
    lent = None
    with Progress(disable=not progress) as bar:
        task = bar.add_task("render test conditions", total=len(conds))
        while pending or lent is not None:
            if lent is not None and (lent.done() or not pending):
                lent.result()  # raises the background process's error, if any
                lent = None
                bar.advance(task)
            if lent is None and pending and all(f.done() for f in drawing):
                lent = drawer.submit(build_and_write, (out, private, pending.pop()))
            if pending:
                build_and_write((out, private, pending.popleft()))
                bar.advance(task)


def _public_split(out: Path, name: str, cases: list[HaloCase], research: list[ResearchCard], axis) -> dict:
    """Write a split's public case file; return its manifest entry."""
    public, private = split_paths(name)
    write_json(out / public, public_document(cases, research, axis))
    return {"public": public, "private": private, "cases": [c.id for c in cases]}


@contextlib.contextmanager
def _background_process():
    """One spawned worker process (no fork of a threaded parent).

    On leaving, pending work is dropped and the worker is not waited for: it exits while the caller goes
    on (its results are in hand by then; the interpreter joins it at exit).
    """
    import concurrent.futures as cf
    import multiprocessing

    pool = cf.ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"))
    try:
        yield pool
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def generate(
    output: str | Path,
    gallery: bool = True,
    progress: bool = True,
    cases_directory: str | Path | None = None,
    scheduler: str | None = None,
    workers: int = 1,
    test_variants: int = TEST_VARIANTS,
    seed: int | None = None,
    key: ReleaseKey | None = None,
) -> dict:
    """Write the release to ``output`` and return its manifest.

    Parameters
    ----------
    output : path
        Release folder (created; existing files of the same names are replaced).
    gallery : bool
        Also draw the evaluator-only gallery (development split).
    progress : bool
        Show progress bars on stderr.
    cases_directory : path, optional
        Case files to use instead of the installed ``cases/halo``.
    scheduler, workers :
        Where the independent renders and figures run (see :func:`icl.parallel.run_tasks`); the
        release is bit-identical whichever is chosen. Without a scheduler the gallery is drawn in a
        spawned background process, so a script calling this guards its entry point with
        ``if __name__ == "__main__":`` (as for ``workers > 1``).
    test_variants : int
        Keyed variants per case in the held-out test split (0: development split only).
    seed, key :
        The release key (:mod:`icl.keys`): with neither, a fresh secret key; ``seed`` makes a public
        development release whose test answers anyone can rebuild (``answers_rebuildable: true``).
        The development split does not depend on the key.

    """
    from icl.halo.gallery import case_figure, prepare_canvas, write_gallery
    from icl.parallel import run_tasks

    if key is None:
        key = ReleaseKey.new() if seed is None else ReleaseKey.from_seed(seed)
    elif seed is not None:
        raise ValueError("give a seed or a key, not both")
    out = Path(output)
    (out / "manifest.json").unlink(missing_ok=True)  # a failed build leaves nothing that looks like a release
    write_key(out, key)  # first (mode 0600), so that a build that fails can be reproduced
    cases, research = load_cases(cases_directory)
    test = build_test_split(cases, key, test_variants)
    splits = {"dev": cases, "test": test} if test else {"dev": cases}
    with contextlib.ExitStack() as stack:
        # Locally the gallery is drawn in one background process while the test split renders and is
        # written (matplotlib is Python-bound, the references mostly C++ on their own threads); once the
        # figures are done, that process builds test references too.
        drawer = stack.enter_context(_background_process()) if gallery and scheduler is None else None
        if drawer:
            drawer.submit(prepare_canvas)  # imports matplotlib while the development split renders
        refs: dict[str, Reference] = {}
        drawing: list = []  # the gallery's figures, when the background process draws them
        for name, split_cases in splits.items():
            private = split_paths(name)[1]
            conds = [c for case in split_cases for c in case.conditions]
            if name == "test" and drawer:
                _build_shared(conds, out, private, drawer, drawing, progress)
                continue
            results = run_tasks(
                build_reference,
                conds,
                scheduler=scheduler,
                workers=workers,
                description=f"render {name} conditions",
                quiet=not progress,
            )
            if name == "dev":  # kept for the gallery; the test references are not needed again
                refs = {ref.condition.id: ref for ref in results}
                tasks = [(case, {c.id: refs[c.id] for c in case.conditions}) for case in cases]
                drawing = [drawer.submit(case_figure, t) for t in tasks] if drawer else []
            for ref in results:
                write_reference(out, private, ref)
        axis = refs[cases[0].conditions[0].id].result.x_arcmin
        manifest_splits = {
            name: _public_split(out, name, split_cases, research if name == "dev" else [], axis)
            for name, split_cases in splits.items()
        }
        if test:
            manifest_splits["test"]["variants_per_case"] = test_variants
        readme = public_readme(cases, test_variants if test else 0)
        atomic_write_bytes(out / "public" / "README.md", readme.encode("utf-8"))
        for name in PUBLIC_EXTRAS:
            atomic_write_bytes(out / "public" / name, (halo_dir() / name).read_bytes())
        if gallery:
            if drawer:
                figures = [f.result() for f in drawing]
            else:
                figures = run_tasks(
                    case_figure,
                    tasks,
                    scheduler=scheduler,
                    workers=workers,
                    description="draw gallery",
                    quiet=not progress,
                )
            write_gallery(
                out / "gallery",
                cases,
                {case.id: png for case, (png, _) in zip(cases, figures, strict=True)},
                refs,
                {case.id: geo for case, (_, geo) in zip(cases, figures, strict=True)},
            )
    return write_manifest(
        out,
        {
            "format": RELEASE_FORMAT,
            "gallery": gallery,
            "parameters": {
                "n": 512,
                "angular_pixel_arcsec": 4.0,
                "cases": [c.id for c in cases],
                "research_cards": [r.id for r in research],
            },
            "splits": manifest_splits,
            **key.manifest_fields(),
        },
        exclude=(KEY_FILE,),  # its hash would confirm a guessed key
    )
