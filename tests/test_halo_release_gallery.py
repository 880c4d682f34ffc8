"""A release's gallery, drawn in the background process while the references are written, is the same bytes
as each figure drawn here on a fresh canvas; the test split, built by both processes, is the same bytes as
built by one; its reference records are the bytes dumps_json writes."""

import shutil
from concurrent.futures import ThreadPoolExecutor

from icl.halo.cases import halo_dir, load_cases
from icl.halo.gallery import Canvas, draw_case
from icl.halo.release import _build_shared, build_reference, generate, record_json, write_reference
from icl.io import dumps_json, load_json


def test_background_gallery_and_records(tmp_path):
    cases_dir = tmp_path / "cases"
    cases_dir.mkdir()
    for cid in ("H10", "H14"):  # a ring of added light; a source at the detector edge (NaN in its profiles)
        shutil.copy(halo_dir() / f"{cid}.json", cases_dir)
    out, plain = tmp_path / "release", tmp_path / "plain"
    opts = {"progress": False, "seed": 1, "test_variants": 2, "cases_directory": cases_dir}
    manifest = generate(out, **opts)
    # The test split is built by both processes once the figures are drawn: the same bytes as built here.
    serial = generate(plain, gallery=False, **opts)
    assert {k: v for k, v in manifest["files"].items() if not k.startswith("gallery/")} == serial["files"]
    cases, _ = load_cases(cases_dir)
    for case in cases:
        refs = {c.id: build_reference(c) for c in case.conditions}
        canvas = Canvas()
        draw_case(case, refs, canvas=canvas)
        assert (out / "gallery" / f"{case.id}.png").read_bytes() == canvas.png(), case.id
    records = sorted((out / "private").rglob("*.json"))
    assert len(records) == 12
    for path in records:
        rec = load_json(path)
        assert record_json(rec) == dumps_json(rec).encode("utf-8") == path.read_bytes(), path.name
    assert any(None in row for rec in map(load_json, records) for p in rec["polar"]["profiles"] for row in p)


def test_record_json_edge_shapes():
    profiles = [[], [[]], [[1.0, None, 2.5e-300, -0.0]], [[0.1, 0.2], [None, None]]]
    rec = {"polar": {"profiles": profiles, "radii_arcmin": [0.5, 1.0]}, "n": 3}
    assert record_json(rec) == dumps_json(rec).encode("utf-8")


class CountingPool(ThreadPoolExecutor):
    lent = 0

    def submit(self, fn, *args):
        self.lent += 1
        return super().submit(fn, *args)


def test_shared_build_writes_every_condition_as_one_process_does(tmp_path):
    # A drawer with its figures done takes conditions from the end of the list while this process takes them
    # from the front; every condition is written once, with the bytes of a serial build.
    conds = [c for case in load_cases()[0][:3] for c in case.conditions]
    with CountingPool(1) as pool:
        _build_shared(conds, tmp_path / "shared", "private", pool, [], progress=False)
    assert 1 <= pool.lent < len(conds)
    for cond in conds:
        write_reference(tmp_path / "serial", "private", build_reference(cond))
    for cond in conds:
        for ext in ("npz", "json"):
            name = f"private/{cond.id}.{ext}"
            assert (tmp_path / "shared" / name).read_bytes() == (tmp_path / "serial" / name).read_bytes(), (
                name
            )
    assert len(list((tmp_path / "shared" / "private").iterdir())) == 2 * len(conds)
