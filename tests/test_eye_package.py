"""The thick-eye data package: the example loads and is reproducible; every bad file names file and field."""

import copy
import json
import math

import pytest
from icl._paths import cases_dir
from icl.errors import InputError
from icl.eye.package import FILES, example_package, load_package, load_package_dir
from icl.eye.paraxial import paraxial

EXAMPLE = cases_dir() / "examples" / "eye"


# Computed example values (retina position, ICL radii: a paraxial trace and a root solve to 1e-12 D) are
# compared to 1e-9 relative: far below the package's stated precision (uncertainties of 1e-3 mm and more)
# and far above the last-bit differences that another host's libm could give.
GOLDEN_REL = 1e-9


def _close(a, b, where=""):
    """Equal JSON trees, numbers to GOLDEN_REL."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), where
        for k in a:
            _close(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _close(x, y, f"{where}.{i}")
    elif isinstance(a, float) or isinstance(b, float):
        assert math.isclose(a, b, rel_tol=GOLDEN_REL, abs_tol=1e-12), (where, a, b)
    else:
        assert a == b, where


def test_example_files_match_their_generator():
    # The committed example is what example_package() writes (golden data with its generator).
    for name, obj in example_package().items():
        _close(json.loads((EXAMPLE / f"{name}.json").read_text()), json.loads(json.dumps(obj)), name)


def test_golden_comparison_has_its_tolerance_and_no_more():
    pkg = json.loads(json.dumps(example_package()))
    z = pkg["eye"]["retina"]["vertex_z"]["value"]
    pkg["eye"]["retina"]["vertex_z"]["value"] = z * (1 + 1e-13)  # another host's last bits: accepted
    _close(json.loads((EXAMPLE / "eye.json").read_text()), pkg["eye"])
    pkg["eye"]["retina"]["vertex_z"]["value"] = z + 1e-6  # a changed model: refused
    with pytest.raises(AssertionError):
        _close(json.loads((EXAMPLE / "eye.json").read_text()), pkg["eye"])


def test_example_builds_the_navarro_eye_with_a_correcting_icl():
    pkg = load_package_dir(EXAMPLE)
    assert [s.name for s, _ in pkg.eye.surfaces] == ["cornea_front", "cornea_back", "lens_front", "lens_back"]
    assert pkg.eye.surface("lens_back").radius == -6.0 and pkg.eye.surface("lens_front").conic == -3.1316
    # Navarro's power is untouched by the package round trip; the ICL focuses on the retina (< 1 nm).
    assert paraxial(pkg.eye, None, 550.0).power_d == pytest.approx(60.6661, abs=5e-4)
    assert paraxial(pkg.eye, pkg.implant, 550.0).back_focal_z == pytest.approx(pkg.eye.retina_z, abs=1e-6)
    assert pkg.implant.hole_mm == 0.36 and pkg.implant.vault_mm == 0.5
    assert pkg.implant.hole_medium.index(550.0) == pytest.approx(pkg.eye.surfaces[1][1].index(550.0))
    assert pkg.sources[0].spectrum == ((550.0, 1.0),) and pkg.detector.n == 128


def test_every_parameter_carries_its_provenance():
    def params(obj, where=""):
        if isinstance(obj, dict):
            if "status" in obj:
                yield where, obj
                return
            for k, v in obj.items():
                yield from params(v, f"{where}.{k}")
        elif isinstance(obj, list):
            for i, v in enumerate(obj):
                yield from params(v, f"{where}.{i}")

    found = 0
    for name in FILES:
        for where, p in params(json.loads((EXAMPLE / f"{name}.json").read_text())):
            assert set(p) == {"value", "unit", "source", "uncertainty", "status"}, where
            assert p["status"] in ("documented", "synthetic"), where
            assert p["source"], where
            found += 1
    assert found > 40


def _write(tmp_path, pkg):
    for name, obj in pkg.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(obj))
    return [tmp_path / f"{name}.json" for name in FILES]


def _set(obj, dotted, value):
    keys = dotted.split(".")
    for k in keys[:-1]:
        obj = obj[int(k)] if isinstance(obj, list) else obj[k]
    if value is _DELETE:
        del obj[keys[-1]]
    else:
        obj[int(keys[-1]) if isinstance(obj, list) else keys[-1]] = value


_DELETE = object()
UNKNOWN = {"value": None, "unit": "mm", "source": "not measured", "uncertainty": None, "status": "unknown"}

BAD = [
    # (file, dotted path to change, new value, field the error must name)
    ("eye", "surfaces.cornea_front.radius.unit", "cm", "surfaces.cornea_front.radius.unit"),
    ("eye", "surfaces.lens_back.conic.status", "guessed", "surfaces.lens_back.conic.status"),
    ("eye", "surfaces.lens_back.conic.source", _DELETE, "surfaces.lens_back.conic"),
    ("eye", "surfaces.cornea_back.vertex_z", UNKNOWN, "surfaces.cornea_back.vertex_z.value"),
    ("eye", "surfaces.lens_front.vertex_z.value", 0.3, "surfaces.lens_front.vertex_z.value"),
    ("eye", "surfaces.lens_front.medium_after", "vitreous", "surfaces.lens_front.medium_after"),
    ("eye", "surfaces.lens_front.radius.value", 0, "surfaces.lens_front.radius.value"),
    ("eye", "media.lens.reference_indices.value", [1.4, 1.4, 1.4], "media.lens.reference_indices.value"),
    ("eye", "iris.plane_z.value", 9.0, "iris.plane_z.value"),
    ("eye", "retina.vertex_z.value", 5.0, "retina.vertex_z.value"),
    ("eye", "retina.colour", "red", "retina"),
    ("implant", "centre_thickness.value", -0.1, "centre_thickness.value"),
    ("implant", "hole.diameter.value", 7.0, "hole.diameter.value"),
    ("implant", "vault.distance.value", 3.0, "vault.distance.value"),
    ("implant", "vault.measurement_axis", "anterior_chamber_depth", "vault.measurement_axis"),
    ("implant", "material.index.value", 0.5, "material.index.value"),
    ("implant", "back.radius.value", 1.0, "back.radius.value"),
    ("implant", "placement.decentre.value", [0.1], "placement.decentre.value"),
    ("illumination", "sources.0.spectrum.value", [[200.0, 1.0]], "sources.0.spectrum.value.0.0"),
    ("illumination", "sources.0.flux.value", -1.0, "sources.0.flux.value"),
    ("illumination", "sources.0.x_arcmin", {**UNKNOWN, "unit": "arcmin"}, "sources.0.x_arcmin.value"),
    ("detector", "n.value", 3, "n.value"),
    ("detector", "pitch_arcsec.unit", "arcmin", "pitch_arcsec.unit"),
]


@pytest.mark.parametrize("file,path,value,field", BAD, ids=[f"{b[0]}:{b[1]}" for b in BAD])
def test_bad_file_names_file_and_field(tmp_path, file, path, value, field):
    pkg = copy.deepcopy(example_package())
    _set(pkg[file], path, value)
    paths = _write(tmp_path, pkg)
    with pytest.raises(InputError) as info:
        load_package(*paths)
    assert info.value.file == str(tmp_path / f"{file}.json")
    assert info.value.field == field, str(info.value)


def test_unreadable_and_duplicate_inputs(tmp_path):
    pkg = example_package()
    paths = _write(tmp_path, pkg)
    paths[3].write_text("{not json")
    with pytest.raises(InputError) as info:
        load_package(*paths)
    assert info.value.file == str(paths[3])
    pkg = copy.deepcopy(pkg)
    pkg["illumination"]["sources"].append(copy.deepcopy(pkg["illumination"]["sources"][0]))
    with pytest.raises(InputError) as info:
        load_package(*_write(tmp_path, pkg))
    assert info.value.field == "sources.1.id"


def test_plane_radius_and_placed_surfaces_load(tmp_path):
    pkg = copy.deepcopy(example_package())
    pkg["eye"]["surfaces"]["cornea_back"]["radius"]["value"] = "inf"
    pkg["eye"]["surfaces"]["lens_front"]["tilt"]["value"] = [0.0, 2.0]
    out = load_package(*_write(tmp_path, pkg))
    assert math.isinf(out.eye.surface("cornea_back").radius)
    steps = out.eye.steps(550.0)
    # The tilted lens front pivots on its own vertex: the vertex stays at z = 3.6.
    assert steps[2].placement.z == pytest.approx(3.6) and steps[2].placement.tilt_y_deg == 2.0
