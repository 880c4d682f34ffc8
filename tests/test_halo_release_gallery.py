"""A release's gallery, drawn in the background process while the references are written, is the same bytes as
each figure drawn here on a fresh canvas; its reference records are the bytes dumps_json writes."""

import shutil

from icl.halo.cases import halo_dir, load_cases
from icl.halo.gallery import Canvas, draw_case
from icl.halo.release import build_reference, generate, record_json
from icl.io import dumps_json, load_json


def test_background_gallery_and_records(tmp_path):
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    for cid in ("H10", "H14"):  # a ring of added light; a source at the detector edge (NaN in its profiles)
        shutil.copy(halo_dir() / f"{cid}.json", cases_dir)
    out = tmp_path / "release"
    generate(out, progress=False, seed=1, test_variants=1, cases_directory=cases_dir)
    cases, _ = load_cases(cases_dir)
    for case in cases:
        refs = {c.id: build_reference(c) for c in case.conditions}
        canvas = Canvas()
        draw_case(case, refs, canvas=canvas)
        assert (out / "gallery" / f"{case.id}.png").read_bytes() == canvas.png(), case.id
    records = sorted((out / "private").rglob("*.json"))
    assert len(records) == 8
    for path in records:
        rec = load_json(path)
        assert record_json(rec) == dumps_json(rec).encode("utf-8") == path.read_bytes(), path.name
    assert any(None in row for rec in map(load_json, records) for p in rec["polar"]["profiles"] for row in p)


def test_record_json_edge_shapes():
    profiles = [[], [[]], [[1.0, None, 2.5e-300, -0.0]], [[0.1, 0.2], [None, None]]]
    rec = {"polar": {"profiles": profiles, "radii_arcmin": [0.5, 1.0]}, "n": 3}
    assert record_json(rec) == dumps_json(rec).encode("utf-8")
