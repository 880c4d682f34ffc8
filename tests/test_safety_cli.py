"""The command line for people: grouped help, help on every option, true defaults and units, 80 columns."""

import json
import re

import click
import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.cli import COMMANDS, SECTIONS, main, one_line

EYE = cases_dir() / "examples" / "eye"
ENV80 = {"COLUMNS": "80"}


def _commands():
    ctx = click.Context(main)
    return [(n, main.get_command(ctx, n)) for n in main.list_commands(ctx)]


def test_the_command_table_matches_the_modules():
    """Every module named in ``icl.cli.COMMANDS`` holds exactly the commands the table gives it."""
    import importlib

    for module in set(COMMANDS.values()):
        held = {c.name for c in importlib.import_module(module).COMMANDS}
        assert held == {n for n, m in COMMANDS.items() if m == module}, module


def test_running_one_command_imports_only_its_module():
    import subprocess
    import sys

    code = (
        "import sys; from icl.cli import main; "
        "main(['halo-validate-prediction', '--help'], standalone_mode=False); "
        "print(sorted(m for m in ('icl.pro.cli', 'icl.patient.cli', 'icl.optics.render') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("name,cmd", _commands(), ids=[n for n, _ in _commands()])
def test_every_option_has_help_and_every_argument_is_explained(name, cmd):
    for p in cmd.params:
        if isinstance(p, click.Option):
            assert p.help and p.help.strip(), f"{name} {p.opts[0]} has no help"
        else:  # arguments take no help text: the command's description must name them
            assert p.name.upper() in (cmd.help or ""), f"{name}: {p.name.upper()} is not explained"
    assert CliRunner().invoke(main, [name, "--help"], env=ENV80).exit_code == 0


def test_top_level_help_is_grouped_with_whole_descriptions():
    res = CliRunner().invoke(main, ["--help"], env=ENV80)
    assert res.exit_code == 0
    text = res.output
    flat = "".join(text.split())  # wrapping may break a line at a hyphen
    for title, _ in SECTIONS:
        assert f"{title}:" in text
    for name, cmd in _commands():
        assert "".join(one_line(cmd).split()) in flat, name  # whole, never cut with "..."
    assert "..." not in text.split("\n", 1)[1]  # (the usage line ends in "[ARGS]...")
    assert text.index("Halo track:") < text.index("halo-generate") < text.index("Professional track:")
    assert max(len(line) for line in text.splitlines()) <= 80


def test_render_help_states_the_default_the_output_records(tmp_path):
    from icl.optics import Sampling

    help_text = CliRunner().invoke(main, ["render", "--help"], env=ENV80).output
    default = float(re.search(r"\[default: ([0-9.]+)", " ".join(help_text.split())).group(1))
    assert default == Sampling().fft_factor
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"detector": {"n": 32}, "sources": [{"id": "L1", "flux": 2.0}]}))
    res = CliRunner().invoke(main, ["render", str(spec), "-o", str(tmp_path / "s.npz")], env=ENV80)
    assert res.exit_code == 0, res.output
    ledger = json.loads((tmp_path / "s.npz.ledger.json").read_text())
    assert ledger["sampling"]["fft_factor"] == default
    # the table prints absolute flux (flux 2 -> source_flux 2), and says so
    assert "absolute flux" in res.output and "fraction of source flux" not in res.output
    assert ledger["sources"]["L1"]["source_flux"] == pytest.approx(2.0)
    assert ledger["units"].startswith("absolute flux")
    assert re.search(r"source_flux\s+\S?\s*2\s", res.output)


def _no_cut_cells(text: str) -> None:
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80


def test_eye_trace_table_is_whole_at_80_columns(tmp_path):
    res = CliRunner().invoke(
        main,
        [
            "eye-trace",
            "--eye",
            str(EYE / "eye.json"),
            "--implant",
            str(EYE / "implant.json"),
            "--illumination",
            str(EYE / "illumination.json"),
            "--detector",
            str(EYE / "detector.json"),
            "--output",
            str(tmp_path / "et"),
        ],
        env=ENV80,
    )
    assert res.exit_code == 0, res.output
    table = res.output[res.output.index("Energy per path") : res.output.index("recorded on the detector")]
    _no_cut_cells(table)
    assert "ghost_icl_lens" in table


def test_demo_table_is_whole_at_80_columns():
    from icl.demo import baseline_table
    from icl.halo.baselines import MODES
    from rich.console import Console

    t = baseline_table()
    for mode in MODES:
        t.add_row("test", mode, "100.00", "100.00", "-", "40")
    console = Console(width=80, record=True)
    console.print(t)
    text = console.export_text()
    _no_cut_cells(text)
    for header in ("baseline", "score", "position", "fixation", "invalid", "wrong-position"):
        assert header in text


def test_contest_rank_table_is_whole_at_80_columns(tmp_path):
    doc = json.loads((cases_dir() / "contest" / "example_team.json").read_text())
    thr = tmp_path / "thr.json"
    thr.write_text(
        json.dumps({"published": True, "thresholds": [{"item": "S", "metric": "value", "min": 0.1}]})
    )
    records = []
    for team, c in (("Alpha-Team-Long-Name", 0.75), ("B", 0.71), ("Gamma", 0.75)):
        src = tmp_path / f"{team}.json"
        src.write_text(json.dumps(dict(doc, team=team, clinical_score=c)))
        rec = tmp_path / f"{team}.rec.json"
        assert (
            CliRunner()
            .invoke(main, ["contest-score", str(src), "--thresholds", str(thr), "--output", str(rec)])
            .exit_code
            == 0
        )
        records.append(str(rec))
    res = CliRunner().invoke(
        main, ["contest-rank", *records, "--output", str(tmp_path / "rank.json")], env=ENV80
    )
    assert res.exit_code == 0, res.output
    _no_cut_cells(res.output)
    assert "Alpha-Team-Long-Name" in res.output and "tie broken by efficiency" in res.output


def test_a_missing_condition_file_names_the_file_expected(tmp_path):
    from icl.halo.evaluate import Invalid, load_submission

    class Ref:  # load_submission reads nothing from the reference before the file check
        pass

    with pytest.raises(Invalid, match=r"missing condition file: expected H01_a\.npz in "):
        load_submission(tmp_path / "H01_a.npz", Ref())


def test_docs_and_code_point_only_inside_the_repository():
    from pathlib import Path

    import icl

    root = Path(icl.__file__).resolve().parents[2]
    offenders = []
    paths = [
        root / "README.md",
        *sorted((root / "docs").rglob("*.md")),
        *sorted((root / "python").rglob("*.py")),
        *sorted((root / "cases").rglob("*.json")),
    ]
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        for needle in ("DESIGN.md", "seeds/"):
            if needle in text:
                offenders.append(f"{path.relative_to(root)}: {needle}")
    assert offenders == []
