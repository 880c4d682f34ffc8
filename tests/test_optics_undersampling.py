"""A detector too coarse for the pupil's far field is refused with the field named, never a filter traceback."""

import json

import pytest
from click.testing import CliRunner
from icl.cli import main
from icl.optics import Pupil, Scene, Source, render
from icl.optics.model import Detector


@pytest.mark.parametrize("n, pitch", [(16, 30.0), (32, 14.0), (32, 17.0)])
def test_coarse_detector_names_the_pitch(n, pitch):
    with pytest.raises(ValueError, match=r"detector.pitch_arcsec: .* under-samples"):
        render(Scene((Source(),), Pupil(), detector=Detector(n=n, pitch_arcsec=pitch)))


def test_cli_says_it_in_one_line(tmp_path):
    spec = tmp_path / "coarse.json"
    spec.write_text(json.dumps({"pupil": {"diameter_mm": 3.2}, "detector": {"n": 32, "pitch_arcsec": 14.0},
                                "sources": [{"id": "L1"}]}))
    res = CliRunner().invoke(main, ["render", str(spec), "-o", str(tmp_path / "out.npz")])
    assert res.exit_code != 0 and "under-samples" in res.output and "Traceback" not in res.output


def test_memory_cap_holds_for_a_sampling_given_in_python():
    from icl.errors import InputError
    from icl.optics import Sampling

    with pytest.raises(InputError, match=r"sampling.fft_factor: .* GiB cap"):
        render(Scene((Source(),), Pupil()), Sampling(fft_factor=400.0))
