"""``icl calibrate TRACK``: run every baseline of a track and write its calibration report."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import click
from click.core import ParameterSource

TRACKS = ("pro", "halo", "patient", "forensics")
DEFAULT_RELEASES = {
    "halo": "default development split (`icl halo-generate`; its bytes do not depend on the key)",
    "patient": "FICTIONAL demo set (`icl patient-demo`, seed 2026)",
    "forensics": "default development release (`icl forensics-generate --seed 20261003`, labels rebuildable)",
    "pro": "development release `icl pro-generate --seed 7` (8 instances per template; answers rebuildable)",
}
# The manifest field and value that name each track's release.
RELEASE_MARKS = {
    "halo": ("format", "icl-halo-release/1"),
    "pro": ("kind", "icl-pro-release"),
    "patient": ("kind", "patient-demo"),
    "forensics": ("track", "halo-forensics"),
}


def _commit() -> str:
    """Return the working tree's commit (``+dirty`` with uncommitted changes), or ``unknown``."""
    here = Path(__file__).parent
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=here, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=here,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


@click.command("calibrate")
@click.argument("track", type=click.Choice(TRACKS))
@click.option(
    "--release",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The track's release (patient: the demo set). Default: build the default development "
    "release into WORK/release.",
)
@click.option(
    "--output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Report folder: TRACK.md, TRACK.json and figures.",
)
@click.option(
    "--work",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Scratch folder: WORK/TRACK for baseline submissions and runs (new or empty; see --force), "
    "WORK/release for the default release (kept and reused).",
)
@click.option("--split", default=None, help="Split to score (halo: dev; pro: test).")
@click.option(
    "--replicates",
    default=1000,
    show_default=True,
    type=click.IntRange(10, 100000),
    help="Bootstrap replicates of the rank-stability analysis.",
)
@click.option(
    "--runs", default=3, show_default=True, type=click.IntRange(1, 3), help="Pro: runs per baseline."
)
@click.option(
    "--per-template",
    default=4,
    show_default=True,
    type=click.IntRange(min=1),
    help="Pro: test instances per template.",
)
@click.option(
    "--raster",
    default=256,
    show_default=True,
    type=click.IntRange(64, 512),
    help="Patient: raster size per axis of the scoring frame.",
)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 256),
    help="Forensics: local processes for the nuisance fits (the scores do not depend on it).",
)
@click.option(
    "--force",
    is_flag=True,
    help="Empty a non-empty WORK/TRACK (and an unfinished WORK/release) first; everything in it is deleted.",
)
def calibrate(
    track: str,
    release: Path | None,
    output: Path,
    work: Path,
    split: str | None,
    replicates: int,
    runs: int,
    per_template: int,
    raster: int,
    workers: int,
    force: bool,
) -> None:
    """Run every baseline of TRACK (pro, halo, patient, forensics) and write the calibration report."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from icl.calibrate import core, report
    from icl.io import is_release, prepare_output_dir

    prepare_output_dir(work / track, force)  # checked before the release is built
    if release is None and not is_release(work / "release"):
        prepare_output_dir(work / "release", force, release=True)
    context = {"commit": _commit(), "command": _command_line(click.get_current_context())}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
    ) as bar:
        if release is None:
            release = _default_release(track, work / "release", bar)
            context["release"] = DEFAULT_RELEASES[track]
        else:
            context["release"] = _describe(release)
        table, extra = _run(track, release, work, split, runs, per_template, raster, bar, workers)
        context |= extra
        task = bar.add_task(f"{track}: bootstrap", total=replicates)
        cal = core.calibration(table, replicates, progress=lambda k: bar.advance(task))
    files = report.write(cal, output, context)
    click.echo(f"calibration report: {files['markdown']} ({', '.join(cal['order'])})")


def _command_line(ctx: click.Context) -> str:
    """Return the command as run: TRACK and every option set by the user (defaults left out), quoted."""
    words = ["icl", "calibrate", ctx.params["track"]]
    for param in ctx.command.params:
        if param.name == "track" or ctx.get_parameter_source(param.name) is ParameterSource.DEFAULT:
            continue
        words += [param.opts[0], str(ctx.params[param.name])]
    return shlex.join(words)


def _describe(release: Path) -> str:
    """Describe a release by its manifest: kind, seed or key id, templates (pro) and version."""
    from icl.errors import InputError
    from icl.io import load_json

    try:
        m = load_json(release / "manifest.json")
    except (InputError, OSError):
        return release.name
    parts = [str(m.get("kind", release.name))]
    if m.get("seed") is not None:
        parts.append(f"seed {m['seed']} (answers rebuildable)")
    elif m.get("key_id"):
        parts.append(f"key {m['key_id']}")
    if m.get("per_template"):
        parts.append(f"{m['per_template']} instances per template")
    tests = (
        sorted({p.name[:3] for p in (release / "inputs" / "test").iterdir()})
        if (release / "inputs" / "test").is_dir()
        else []
    )
    if tests:
        parts.append("all 36 templates" if len(tests) == 36 else f"{len(tests)} templates: {' '.join(tests)}")
    parts.append(f"package {m.get('version', '?')}")
    return ", ".join(parts)


def _default_release(track: str, folder: Path, bar) -> Path:
    """Reuse the release in ``folder``, or build the track's default one into it (new or emptied by now)."""
    from icl.errors import InputError
    from icl.io import is_release, load_json

    if is_release(folder):
        key, value = RELEASE_MARKS[track]
        if load_json(folder / "manifest.json").get(key) != value:
            raise InputError(
                f"holds a release of another track, not the {track} track's; give another --work", str(folder)
            )
        return folder
    task = bar.add_task(f"{track}: building the default release", total=None)
    if track == "halo":
        from icl.halo.release import generate

        generate(folder, gallery=False, progress=False, test_variants=0, seed=0)
    elif track == "patient":
        from icl.patient.demo import build_demo

        build_demo(folder)
    elif track == "forensics":
        from icl.forensics.generate import DEFAULT_SEED, write_release

        write_release(folder, DEFAULT_SEED)
    else:
        from icl.pro.generate import generate

        generate(folder, per_template=8, seed=7, progress=False)
    bar.update(task, total=1, completed=1)
    return folder


def _run(
    track: str, release: Path, work: Path, split: str | None, runs: int, per_template: int, raster: int, bar,
    workers: int = 1,
):
    if track == "halo":
        from icl.calibrate import halo

        task = bar.add_task(
            "halo: baselines and perturbations", total=len(halo.BASELINES) + len(halo.PERTURBATIONS)
        )
        table, _ = halo.run(release, work / "halo", split or "dev", advance=lambda _n: bar.advance(task))
        return table, {"split": split or "dev"}
    if track == "patient":
        from icl.calibrate import patient

        task = bar.add_task("patient: predictions and controls", total=2 + len(patient.CONTROLS))
        table, _ = patient.run(release, work / "patient", advance=lambda _n: bar.advance(task), raster=raster)
        return table, {"data": "FICTIONAL demo set (no real patient)", "raster": raster}
    if track == "forensics":
        from icl.calibrate import forensics

        task = bar.add_task("forensics: detectors", total=len(forensics.DETECTORS))
        table, _ = forensics.run(release, work / "forensics", advance=lambda _n: bar.advance(task),
                                 workers=workers)
        return table, {}
    from icl.calibrate import pro

    table, extra = pro.run(
        release, work / "pro", runs=runs, per_template=per_template, split=split or "test", bar=bar
    )
    return table, extra


COMMANDS = [calibrate]
