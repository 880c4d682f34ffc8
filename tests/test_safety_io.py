"""No command writes onto its own inputs or over anything but a regular file; generators start empty.

Every case runs the real ``icl`` entry point in-process, so the input guard of the command line is
active exactly as for a user.
"""

import hashlib
import json
import os
import stat

import pytest
from click.testing import CliRunner
from icl._paths import cases_dir
from icl.cli import main
from icl.errors import InputError, OutputError
from icl.io import atomic_write_bytes, input_guard, load_json, prepare_output_dir, protect_input, write_json

SCENE = cases_dir() / "examples" / "scene.json"
TEAM = cases_dir() / "contest" / "example_team.json"
SMALL_SCENE = {
    "detector": {"n": 32, "pitch_arcsec": 4.0},
    "sources": [{"id": "L1", "x_arcmin": 0.0, "y_arcmin": 0.0}],
}


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _icl(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture(scope="module")
def patient_set(tmp_path_factory):
    out = tmp_path_factory.mktemp("patient") / "set"
    assert _icl("patient-demo", "--output", out).exit_code == 0
    return out


# ------------------------------------------------------------------ item 1: never onto an input


def test_render_summary_never_lands_on_the_scene(tmp_path):
    spec = tmp_path / "scene.json"
    spec.write_text(json.dumps(SMALL_SCENE))
    before = _sha(spec)
    res = _icl("render", spec, "-o", tmp_path / "scene.npz")
    assert res.exit_code == 0, res.output
    assert _sha(spec) == before
    assert (tmp_path / "scene.npz.ledger.json").is_file()
    # the same command still renders: the scene was not replaced by its summary
    assert _icl("render", spec, "-o", tmp_path / "scene.npz").exit_code == 0


def test_render_refuses_a_ledger_name_that_is_its_scene(tmp_path):
    spec = tmp_path / "a.npz.ledger.json"
    spec.write_text(json.dumps(SMALL_SCENE))
    before = _sha(spec)
    res = _icl("render", spec, "-o", tmp_path / "a.npz")
    assert res.exit_code == 2
    assert "input of this command" in res.output and str(spec) in res.output
    assert _sha(spec) == before and not (tmp_path / "a.npz").exists()  # nothing written at all


def test_patient_score_refuses_to_overwrite_its_reference(patient_set):
    ref = patient_set / "private" / "reference.json"
    before = _sha(ref)
    pred = patient_set / "predictions" / "demo_prediction.json"
    res = _icl("patient-score", "--reference", ref, "--predictions", pred, "--output", ref)
    assert res.exit_code == 2 and "input of this command" in res.output
    assert _sha(ref) == before


def test_the_same_entry_through_a_linked_folder_is_the_input(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    team = real / "team.json"
    team.write_bytes(TEAM.read_bytes())
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    for spelled in (tmp_path / "alias" / "team.json", real / ".." / "real" / "team.json"):
        res = _icl("contest-score", team, "--output", spelled)
        assert res.exit_code == 2 and "input of this command" in res.output, spelled
    assert team.read_bytes() == TEAM.read_bytes()


def test_a_hard_link_elsewhere_is_replaced_not_written_through(tmp_path):
    # Every write replaces the target entry atomically: the linked input keeps its content.
    team = tmp_path / "team.json"
    team.write_bytes(TEAM.read_bytes())
    os.link(team, tmp_path / "alias.json")
    assert _icl("contest-score", team, "--output", tmp_path / "alias.json").exit_code == 0
    assert team.read_bytes() == TEAM.read_bytes()
    assert json.loads((tmp_path / "alias.json").read_text())["team"] == "example"


def test_a_command_may_rewrite_what_it_wrote_itself(tmp_path):
    out = tmp_path / "o.json"
    with input_guard():
        write_json(out, {"a": 1})
        load_json(out)  # reading back its own output does not make it an input
        write_json(out, {"a": 2})
    assert json.loads(out.read_text()) == {"a": 2}


def test_contest_rank_refuses_one_of_its_records_as_output(tmp_path):
    rec = tmp_path / "rec.json"
    assert _icl("contest-score", TEAM, "--output", rec).exit_code == 0
    before = _sha(rec)
    res = _icl("contest-rank", rec, "--output", rec)
    assert res.exit_code == 2 and _sha(rec) == before


def test_the_guard_is_off_for_library_callers(tmp_path):
    path = tmp_path / "x.json"
    write_json(path, {"a": 1})
    load_json(path)
    write_json(path, {"a": 2})  # outside a command, reading a file does not lock it
    with input_guard():
        protect_input(path)
        with pytest.raises(OutputError, match="input of this command"):
            write_json(path, {"a": 3})
    assert json.loads(path.read_text()) == {"a": 2}


# ------------------------------------------------------ item 2: only regular files are replaced


def _score_to(target):
    return _icl("contest-score", TEAM, "--output", target)


def test_a_fifo_is_never_replaced(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    res = _score_to(fifo)
    assert res.exit_code == 2 and "FIFO" in res.output and str(fifo) in res.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a device node (mknod) needs root")
def test_a_device_is_never_replaced(tmp_path):
    dev = tmp_path / "full"
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # the numbers of /dev/full
    res = _score_to(dev)
    assert res.exit_code == 2 and "character device" in res.output
    assert stat.S_ISCHR(os.lstat(dev).st_mode)


def test_a_folder_is_never_replaced(tmp_path):
    folder = tmp_path / "out.json"
    folder.mkdir()
    (folder / "keep").write_text("x")
    res = _score_to(folder)
    assert res.exit_code != 0
    assert (folder / "keep").read_text() == "x"


def test_a_symlinked_output_is_refused_and_left_alone(tmp_path):
    target = tmp_path / "real.json"
    target.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    res = _score_to(link)
    assert res.exit_code == 2 and "symbolic link" in res.output and str(link) in res.output
    assert link.is_symlink() and target.read_text() == "{}"


def test_a_file_parent_and_proc_give_one_line_errors(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    for target in (blocker / "score.json", "/proc/icl-score.json"):
        res = _score_to(target)
        assert res.exit_code == 2, res.output
        assert "Traceback" not in res.output and str(target) in res.output
    assert blocker.read_text() == "x"


def test_a_write_error_names_the_path(tmp_path):
    with pytest.raises(OutputError) as err:
        atomic_write_bytes("/proc/self/status", b"x")
    assert "/proc/self/status" in str(err.value)


# --------------------------------------------------------- item 3: generators start from empty


GENERATORS = [
    ("halo-generate", "--no-gallery"),
    ("pro-generate", "--per-template", "4", "--seed", "1"),
    ("forensics-generate", "--seed", "1"),
    ("patient-demo",),
    ("demo", "--no-gallery"),
]


@pytest.mark.parametrize("command", GENERATORS, ids=[g[0] for g in GENERATORS])
def test_generators_refuse_a_non_empty_folder(tmp_path, command):
    out = tmp_path / "out"
    out.mkdir()
    (out / "MY_NOTES.txt").write_text("mine")
    res = _icl(*command, "--output", out)
    assert res.exit_code == 2 and "not empty" in res.output and "--force" in res.output
    assert sorted(p.name for p in out.iterdir()) == ["MY_NOTES.txt"]


def test_force_empties_first_so_no_stale_file_is_listed(patient_set, tmp_path):
    out = tmp_path / "set"
    assert _icl("patient-demo", "--output", out).exit_code == 0
    (out / "score.json").write_text("{}")
    (out / "public" / "MY_NOTES.txt").write_text("mine")
    assert _icl("patient-demo", "--output", out).exit_code == 2
    res = _icl("patient-demo", "--output", out, "--force")
    assert res.exit_code == 0, res.output
    files = json.loads((out / "manifest.json").read_text())["files"]
    assert "score.json" not in files and "public/MY_NOTES.txt" not in files
    assert not (out / "score.json").exists()
    assert files == json.loads((patient_set / "manifest.json").read_text())["files"]


def test_force_never_empties_the_current_folder_or_an_input(tmp_path, monkeypatch):
    (tmp_path / "keep").write_text("x")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OutputError, match="current"):
        prepare_output_dir(tmp_path, force=True)
    with pytest.raises(OutputError, match="current"):
        prepare_output_dir(".", force=True)
    inner = tmp_path / "sub"
    inner.mkdir()
    (inner / "in.json").write_text("{}")
    with input_guard():
        load_json(inner / "in.json")
        with pytest.raises(OutputError, match="input of this command"):
            prepare_output_dir(inner, force=True)
    assert (inner / "in.json").exists() and (tmp_path / "keep").exists()


def test_prepare_output_dir_refuses_a_file_and_a_link(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(OutputError, match="not a regular file|is a"):
        prepare_output_dir(tmp_path / "f", force=True)
    (tmp_path / "d").mkdir()
    (tmp_path / "l").symlink_to(tmp_path / "d")
    with pytest.raises(OutputError, match="symbolic link"):
        prepare_output_dir(tmp_path / "l", force=True)


# ------------------------------------------------------------ item 4: duplicate JSON keys


def test_load_json_refuses_duplicate_keys(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('{"a": {"b": 1, "b": 2}}')
    with pytest.raises(InputError) as err:
        load_json(path)
    assert err.value.file == str(path) and err.value.field == "b" and "duplicate" in str(err.value)


def _with_duplicate(text: str, key: str) -> str:
    """The JSON object ``text`` with its top-level ``key`` given twice (same value both times)."""
    first = json.dumps({key: json.loads(text)[key]})[1:-1]
    return "{" + first + ", " + text.lstrip()[1:]


def test_contest_patient_and_halo_loaders_refuse_duplicate_keys(tmp_path, patient_set):
    from icl.halo.cases import load_case
    from icl.patient.schema import load_reports

    team = tmp_path / "team.json"
    team.write_text(_with_duplicate(TEAM.read_text(), "team"))
    res = _icl("contest-score", team, "--output", tmp_path / "o.json")
    assert res.exit_code == 2 and "duplicate key" in res.output and str(team) in res.output

    ref = tmp_path / "reference.json"
    ref.write_text(
        _with_duplicate((patient_set / "private" / "reference.json").read_text(), "schema_version")
    )
    with pytest.raises(InputError, match="duplicate key"):
        load_reports(ref)

    case = sorted((cases_dir() / "halo").glob("H*.json"))[0]
    dup = tmp_path / case.name
    dup.write_text(_with_duplicate(case.read_text(), "id"))
    with pytest.raises(InputError, match="duplicate key"):
        load_case(dup)
