"""A release is read-only to every command but its generator; no output lies inside a folder given as input.

The walk below enumerates the commands of ``icl`` and every output option of each, so a new command or a
new output option is covered without being listed here. Each case gives the command otherwise-valid
arguments (placeholders of the right kind: the guard runs before any input is read) and an output
inside a release folder or inside an input folder, and checks the refusal and that nothing was written.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from icl.cli import INPUT_PARAMS, OUTPUT_PARAMS, RELEASE_WRITERS, main
from icl.io import input_guard, is_release, release_around, write_json

RELEASE_MANIFEST = {"package": "icl-bench", "key_id": "0123456789abcdef", "seed": None, "files": {}}


def _commands() -> list[tuple[str, click.Command]]:
    """Every command, a group's commands included (named "group command"), in the command line's order."""
    ctx = click.Context(main)
    out = []
    for n in main.list_commands(ctx):
        cmd = main.get_command(ctx, n)
        subs = getattr(cmd, "commands", {})
        out += [(f"{n} {s}", subs[s]) for s in sorted(subs)] if subs else [(n, cmd)]
    return out


def _path_params(cmd: click.Command) -> list[click.Parameter]:
    return [p for p in cmd.params if isinstance(p.type, click.Path)]


OUTPUT_CASES = [
    (name, p.name) for name, cmd in _commands() for p in _path_params(cmd) if p.name in OUTPUT_PARAMS
]
INPUT_FOLDER_CASES = [
    (name, out.name, inp.name)
    for name, cmd in _commands()
    for out in _path_params(cmd)
    if out.name in OUTPUT_PARAMS
    for inp in _path_params(cmd)
    if inp.name in INPUT_PARAMS and inp.type.dir_okay
]


def _release(root: Path) -> Path:
    """A release folder as a generator leaves it (manifest, public, private answers, key)."""
    rel = root / "release"
    (rel / "public").mkdir(parents=True)
    (rel / "private").mkdir()
    (rel / "public" / "README.md").write_text("public\n")
    (rel / "private" / "H01_a.npz").write_bytes(b"answers")
    (rel / "private" / "release.key").write_text("00" * 32 + "\n")
    (rel / "manifest.json").write_text(json.dumps(RELEASE_MANIFEST))
    return rel


def _tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
        for p in sorted(root.rglob("*"))
    }


def _placeholder(p: click.Parameter, root: Path) -> str:
    """A value of the right kind for a required parameter (never read: the guard refuses first)."""
    t = p.type
    if isinstance(t, click.Path):
        target = root / f"in-{p.name}"
        if not t.file_okay:
            target.mkdir(exist_ok=True)
        elif not target.exists():
            target.write_text("{}")
        return str(target)
    if isinstance(t, click.Choice):
        return str(t.choices[0])
    if isinstance(t, (click.types.IntParamType, click.types.FloatParamType)):
        low = getattr(t, "min", None)
        return str(low + (1 if getattr(t, "min_open", False) else 0) if low is not None else 1)
    return "x"


def _args(cmd: click.Command, values: dict[str, str], root: Path) -> list[str]:
    """Arguments giving ``values`` and a placeholder for every other required parameter."""
    args: list[str] = []
    for p in cmd.params:
        value = values.get(p.name)
        if value is None and not p.required:
            continue
        value = value or _placeholder(p, root)
        if isinstance(p, click.Argument):
            args.append(value)
        else:
            args += [p.opts[0], value]
    return args


def _target(p: click.Parameter, folder: Path) -> Path:
    return folder / ("new-folder" if not p.type.file_okay else "out.json")


def _param(cmd: click.Command, name: str) -> click.Parameter:
    return next(p for p in cmd.params if p.name == name)


def test_every_path_parameter_is_an_input_or_an_output():
    for name, cmd in _commands():
        for p in _path_params(cmd):
            assert (p.name in OUTPUT_PARAMS) != (p.name in INPUT_PARAMS), (name, p.name)
    assert OUTPUT_CASES, "no output option found: the walk would test nothing"


def test_a_command_with_an_unclassified_path_parameter_refuses_to_register():
    from icl.cli import _guarded

    @click.command("sneaky")
    @click.option("--dest", type=click.Path())
    def sneaky(dest):  # pragma: no cover - never runs
        pass

    with pytest.raises(TypeError, match="dest"):
        _guarded(sneaky)


@pytest.mark.parametrize("command,option", OUTPUT_CASES, ids=[f"{c}:{o}" for c, o in OUTPUT_CASES])
@pytest.mark.parametrize("where", ["root", "private", "link"])
def test_no_output_of_any_command_lies_inside_a_release(command, option, where, tmp_path):
    cmd = dict(_commands())[command]
    rel = _release(tmp_path)
    folder = {"root": rel, "private": rel / "private", "link": tmp_path / "alias" / "private"}[where]
    (tmp_path / "alias").symlink_to(rel, target_is_directory=True)
    target = _target(_param(cmd, option), folder)
    before = _tree(rel)
    res = CliRunner().invoke(main, [*command.split(), *_args(cmd, {option: str(target)}, tmp_path)])
    assert res.exit_code == 2, (res.output, res.exception)
    assert "inside the release" in res.output and "release" in res.output
    assert _tree(rel) == before


@pytest.mark.parametrize("command", sorted(RELEASE_WRITERS))
def test_a_generator_may_not_write_inside_another_release(command, tmp_path):
    cmd = dict(_commands())[command]
    rel = _release(tmp_path)
    before = _tree(rel)
    args = _args(cmd, {"output": str(rel / "public" / "new")}, tmp_path)
    res = CliRunner().invoke(main, [*command.split(), *args])
    assert res.exit_code == 2 and "inside the release" in res.output, res.output
    assert _tree(rel) == before


FOLDER_OUTPUTS = [
    (name, p.name)
    for name, cmd in _commands()
    if name not in RELEASE_WRITERS
    for p in _path_params(cmd)
    if p.name in OUTPUT_PARAMS and p.type.dir_okay
]


@pytest.mark.parametrize("command,option", FOLDER_OUTPUTS, ids=[f"{c}:{o}" for c, o in FOLDER_OUTPUTS])
def test_only_generators_may_be_given_a_release_folder_itself(command, option, tmp_path):
    cmd = dict(_commands())[command]
    rel = _release(tmp_path)
    before = _tree(rel)
    res = CliRunner().invoke(main, [*command.split(), *_args(cmd, {option: str(rel)}, tmp_path)])
    assert res.exit_code == 2 and "inside the release" in res.output, res.output
    assert _tree(rel) == before


@pytest.mark.parametrize(
    "command,option,source", INPUT_FOLDER_CASES, ids=[f"{c}:{o}<{i}" for c, o, i in INPUT_FOLDER_CASES]
)
def test_no_output_lies_inside_a_folder_given_as_input(command, option, source, tmp_path):
    cmd = dict(_commands())[command]
    folder = tmp_path / "input-folder"
    (folder / "inside").mkdir(parents=True)
    (folder / "inside" / "data.json").write_text("{}")
    before = _tree(folder)
    target = _target(_param(cmd, option), folder / "inside")
    values = {option: str(target), source: str(folder)}
    res = CliRunner().invoke(main, [*command.split(), *_args(cmd, values, tmp_path)])
    assert res.exit_code == 2, (res.output, res.exception)
    assert "a folder this command reads" in res.output and str(folder) in res.output
    assert _tree(folder) == before


def test_halo_baseline_cannot_replace_the_private_references(tmp_path):
    """The reported case: ``--output R/private`` used to replace the 28 private references."""
    rel = _release(tmp_path)
    before = _tree(rel)
    res = CliRunner().invoke(
        main, ["halo-baseline", "--release", str(rel), "--output", str(rel / "private"), "--mode", "no-halo"]
    )
    assert res.exit_code == 2 and "inside the release" in res.output, res.output
    assert _tree(rel) == before


def test_writes_deep_inside_a_command_are_checked_too(tmp_path):
    """A file a command derives from its options is checked when it is written, not only the options."""
    rel = _release(tmp_path)
    with input_guard(), pytest.raises(Exception, match="inside the release"):
        write_json(rel / "public" / "sub" / "derived.json", {"a": 1})
    assert not (rel / "public" / "sub").exists()  # refused before its folder was made
    write_json(rel / "public" / "library.json", {"a": 1})  # library callers keep full control


def test_what_makes_a_release(tmp_path):
    rel = _release(tmp_path)
    assert is_release(rel) and release_around(rel / "private" / "x" / "y") == rel.resolve()
    for doc in ({"package": "icl-bench", "command": "eye-trace"}, {"key_id": "x"}, [1], "text"):
        (rel / "manifest.json").write_text(json.dumps(doc))
        assert not is_release(rel), doc
    (rel / "manifest.json").write_text(json.dumps({"package": "icl-bench", "kind": "patient-demo"}))
    assert is_release(rel)


def test_folders_given_as_name_equals_folder_are_inputs_too(tmp_path):
    """``review-packets --run NAME=FOLDER`` names folders in a string option: they are inputs all the same."""
    run = tmp_path / "run"
    (run / "results").mkdir(parents=True)
    (tmp_path / "rel").mkdir()
    before = _tree(run)
    res = CliRunner().invoke(
        main, ["review-packets", str(tmp_path / "rel"), "--run", f"a={run}", "--output", str(run / "packets")]
    )
    assert res.exit_code == 2 and "a folder this command reads" in res.output, res.output
    assert _tree(run) == before
