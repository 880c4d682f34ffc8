"""The Python API refuses what the command line refuses, in one place (the dataclasses), field named."""

import dataclasses

import numpy as np
import pytest
from icl.errors import InputError
from icl.optics import ICL, Detector, Extent, Pupil, Scene, Source
from icl.optics.model import MAX_RENDER_BYTES, render_memory_estimate

BAD = [
    (lambda: Pupil(diameter_mm=-3.2), "diameter_mm", "> 0"),
    (lambda: Pupil(diameter_mm=float("nan")), "diameter_mm", "finite"),
    (lambda: Source(flux=-1), "flux", ">= 0"),
    (lambda: ICL(hole_mm=7), "hole_mm", "smaller than the optic zone"),
    (lambda: ICL(hole="glass"), "hole", "one of"),
    (lambda: ICL(decentre_mm=(0.1,)), "decentre_mm", "u_mm"),
    (lambda: Source(x_arcmin=1e6), "x_arcmin", "<= 600"),
    (lambda: Source(spectrum=((100.0, 1.0),)), "spectrum[0][0]", ">= 200"),
    (lambda: Source(id="a/b"), "id", "without"),
    (lambda: Source(flux="1"), "flux", "expected a number"),
    (lambda: Detector(n=4), "n", "[8, 8192]"),
    (lambda: Detector(pitch_arcsec=0), "pitch_arcsec", "> 0"),
    (lambda: Extent("disk", 0.0), "diameter_arcmin", "> 0"),
    (lambda: Extent("point", 2.0), "diameter_arcmin", "no diameter"),
    (lambda: Scene(()), "sources", "non-empty"),
    (lambda: Scene((Source("a"), Source("a"))), "sources", "unique"),
    (lambda: Scene((Source(x_arcmin=400.0),)), "sources", "GiB"),
]


@pytest.mark.parametrize("make,field,needle", BAD, ids=[f"{f}:{n}" for _, f, n in BAD])
def test_constructors_refuse_with_the_field_named(make, field, needle):
    with pytest.raises(InputError) as err:
        make()
    assert err.value.field == field and needle in str(err.value)


def test_replace_is_validated_too():
    with pytest.raises(InputError, match="flux"):
        dataclasses.replace(Source(), flux=-0.5)
    with pytest.raises(InputError, match="hole_mm"):
        dataclasses.replace(Pupil(), icl=dataclasses.replace(ICL(), optic_zone_mm=0.2, hole_mm=0.36))


@pytest.mark.parametrize(
    "spec,field",
    [
        ({"pupil": {"icl": {"hole_mm": 7}}}, "pupil.icl.hole_mm"),
        ({"pupil": {"diameter_mm": -3.2}}, "pupil.diameter_mm"),
        ({"sources": [{"id": "L1", "flux": -1}]}, "sources[0].flux"),
        ({"sources": [{"id": "L1", "x_arcmin": 400}]}, "sources"),
    ],
)
def test_json_and_api_share_the_rule(spec, field):
    spec = {"sources": [{"id": "L1"}], **spec}
    with pytest.raises(InputError) as err:
        Scene.from_dict(spec, file="s.json")
    assert err.value.file == "s.json" and err.value.field == field


def test_the_memory_cap_is_checked_before_any_allocation():
    near = Scene((Source(x_arcmin=100.0),))
    assert render_memory_estimate(near) < MAX_RENDER_BYTES == 8 * 2**30
    # the estimate is an upper bound: a render at 100' peaks near 0.2 GB, the estimate says 0.74 GiB
    assert 0.5 * 2**30 < render_memory_estimate(near) < 1.0 * 2**30


def test_values_are_normalised_for_hashing():
    src = Source(x_arcmin=np.float32(1.5), spectrum=[[550, 1]])
    assert src.spectrum == ((550.0, 1.0),) and isinstance(src.x_arcmin, float)
    assert hash(ICL(decentre_mm=[0.1, 0.0])) == hash(ICL(decentre_mm=(0.1, 0.0)))
    assert Detector(n=np.int64(64)).n == 64


def test_render_refuses_an_fft_factor_beyond_the_memory_cap(tmp_path):
    import json

    from click.testing import CliRunner
    from icl.cli import main

    spec = tmp_path / "s.json"
    spec.write_text(json.dumps({"sources": [{"id": "L1", "x_arcmin": 100.0}]}))
    res = CliRunner().invoke(main, ["render", str(spec), "-o", str(tmp_path / "o.npz"), "--fft-factor", "12"])
    assert res.exit_code == 2 and "GiB" in res.output and str(spec) in res.output
    assert not (tmp_path / "o.npz").exists()
