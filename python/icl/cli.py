"""The ``icl`` command line. Each track registers its commands from its own ``cli`` module."""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable
from typing import Any

import click

from icl import __version__
from icl.errors import InputError

# Every command and the module whose ``COMMANDS`` list holds it. A module is imported only when one of its
# commands runs (or ``--help`` lists it), so a command does not pay for every track's imports;
# tests/test_safety_cli.py checks this table against the modules.
COMMANDS = {
    "render": "icl.optics.cli",
    **dict.fromkeys(
        (
            "halo-generate",
            "halo-baseline",
            "halo-baselines",
            "halo-evaluate",
            "halo-validate-prediction",
            "halo-run",
        ),
        "icl.halo.cli",
    ),
    "eye-trace": "icl.eye.cli",
    **dict.fromkeys(
        ("pro-generate", "pro-score", "pro-baselines", "pro-baselines-eval", "pro-validate", "pro-run"),
        "icl.pro.cli",
    ),
    **dict.fromkeys(("patient-annotate", "patient-demo", "patient-score"), "icl.patient.cli"),
    **dict.fromkeys(("contest-score", "contest-rank"), "icl.contest.cli"),
    **dict.fromkeys(("forensics-generate", "forensics-baseline", "forensics-evaluate"), "icl.forensics.cli"),
    "demo": "icl.demo",
    **dict.fromkeys(("mtf", "scene", "thick-fields", "mtf-figure"), "icl.imaging.cli"),
    **dict.fromkeys(("review-packets", "review-page", "review-merge"), "icl.review.cli"),
    "calibrate": "icl.calibrate.cli",
    **dict.fromkeys(("release-freeze", "board"), "icl.board.cli"),
}


# Every path parameter of every command is named in exactly one of these two sets (a command with a path
# parameter in neither refuses to run, so a new command cannot slip past the guard below).
OUTPUT_PARAMS = frozenset(
    {"output", "output_dir", "logs_dir", "work", "png", "figure", "score_file", "details"}
)
INPUT_PARAMS = frozenset(
    {
        "spec", "release", "submission", "input_dir", "input_json", "thresholds", "records", "reference",
        "predictions", "runs", "reviews", "baselines", "packets", "first", "second", "arbitration",
        "eye", "implant", "illumination", "detector", "package_dir", "file", "submissions", "works",
        "source_reviews",
    }
)
# The generators: their --output is the release they write, which --force may regenerate in place.
RELEASE_WRITERS = frozenset({"halo-generate", "pro-generate", "forensics-generate", "patient-demo", "demo"})


def _values(value: Any) -> tuple:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def _guarded(cmd: click.Command) -> Callable[..., Any]:
    """Wrap ``cmd``'s callback: protect its path inputs, then check every output before it runs.

    Each output must pass :func:`icl.io.check_output_place` (not an input, not inside a folder given as
    an input, not inside a release) before the command does any work.
    """
    paths = [p for p in cmd.params if isinstance(p.type, click.Path)]
    unknown = [p.name for p in paths if (p.name in OUTPUT_PARAMS) == (p.name in INPUT_PARAMS)]
    if unknown:
        raise TypeError(f"{cmd.name}: name the path parameters {unknown} in OUTPUT_PARAMS or INPUT_PARAMS")
    inputs = [p.name for p in paths if p.name in INPUT_PARAMS]
    outputs = [p.name for p in paths if p.name in OUTPUT_PARAMS]
    callback = cmd.callback

    @functools.wraps(callback)
    def run(**kwargs: Any) -> Any:
        from icl.io import check_output_place, protect_input

        for name in inputs:
            for value in _values(kwargs.get(name)):
                if value is not None:
                    protect_input(value)
        for name in outputs:
            for value in _values(kwargs.get(name)):
                if value is not None:
                    check_output_place(value, release=cmd.name in RELEASE_WRITERS and name == "output")
        return callback(**kwargs)

    return run


# Sections of ``icl --help``, in order: (title, test on the command name).
SECTIONS = (
    ("Start here", lambda n: n == "demo"),
    ("Optics engine and imaging", lambda n: n in ("render", "mtf", "mtf-figure", "scene", "thick-fields")),
    ("Thick eye", lambda n: n.startswith("eye-")),
    ("Halo track", lambda n: n.startswith("halo-")),
    ("Professional track", lambda n: n.startswith(("pro-", "review-"))),
    ("Patient-perception layer", lambda n: n.startswith("patient-")),
    ("Contest safety score and halo forensics", lambda n: n.startswith(("contest-", "forensics-"))),
    ("Across tracks", lambda n: n == "calibrate"),
    ("Operator: frozen releases and boards", lambda n: n in ("release-freeze", "board")),
)


def one_line(cmd: click.Command) -> str:
    """The whole first paragraph of a command's help, on one line (click would cut it at 45 characters)."""
    text = (cmd.help or "").split("\n\n")[0]
    return " ".join(text.split())


class _Group(click.Group):
    """Run each command inside :func:`icl.io.input_guard`; report bad input in one line, exit status 2.

    Commands are loaded from their modules on first use (:data:`COMMANDS`).

    ``icl --help`` lists the commands by track with their whole one-line descriptions.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            for cmd in importlib.import_module(COMMANDS[cmd_name]).COMMANDS:
                if cmd.name not in self.commands:
                    for sub in (cmd, *getattr(cmd, "commands", {}).values()):  # a group's commands too
                        sub.callback = _guarded(sub)
                    self.add_command(cmd)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        names = [n for n in self.list_commands(ctx) if not self.get_command(ctx, n).hidden]
        placed: set[str] = set()
        for title, belongs in (*SECTIONS, ("Other commands", lambda n: True)):
            rows = [(n, one_line(self.get_command(ctx, n))) for n in names if n not in placed and belongs(n)]
            placed.update(n for n, _ in rows)
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows, col_max=24)

    def invoke(self, ctx: click.Context):
        from icl.io import input_guard

        try:
            with input_guard():
                return super().invoke(ctx)
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="icl")
def main() -> None:
    """ICL-Bench: reference optics, cases and scoring for ICL halo prediction."""

