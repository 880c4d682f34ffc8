from pathlib import Path

from click.testing import CliRunner

from icl.pro.cli import pro_baselines
from icl.pro.baselines.runner import run
from icl.pro.generate import generate
from icl.pro.score import score_submission


def test_baselines_spread(tmp_path):
    rel = tmp_path / "rel"
    generate(rel, per_template=4, seed=2, progress=False, only=["A01", "C01", "C05", "F03"])
    sub = tmp_path / "sub"
    sub.mkdir()
    ids = []
    for t in ("A01", "C01", "C05", "F03"):
        d = sorted((rel / "inputs" / "test").glob(f"{t}-*"))[0]
        (sub / d.name).symlink_to(d)
        ids.append(d.name)
    totals = {}
    for s in ("constant", "ignores_hole"):
        run(s, sub, tmp_path / s)
        totals[s] = score_submission(rel, [tmp_path / s], s, instances=ids, bootstrap_n=20)["professional_score"]
    # Only 4 of 36 templates are generated here, so the maximum reachable total is about 11.
    assert totals["constant"] < 1.0 < totals["ignores_hole"]


def test_baseline_folders(tmp_path):
    res = CliRunner().invoke(pro_baselines, ["--output", str(tmp_path)])
    assert res.exit_code == 0, res.output
    for s in ("constant", "gaussian", "hand_halo", "geometric", "ignores_hole"):
        run_script = Path(tmp_path / s / "run")
        assert run_script.stat().st_mode & 0o111 and "icl.pro.baselines.runner " + s in run_script.read_text()
