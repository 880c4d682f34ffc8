"""The ``icl`` command line. Each track registers its commands from its own ``cli`` module."""

from __future__ import annotations

import importlib
import sys

import click

from icl import __version__
from icl.errors import InputError

# Modules whose ``COMMANDS`` list is added to the top-level group (heavy imports stay inside the
# command bodies, so this costs little).
COMMAND_MODULES = (
    "icl.optics.cli",
    "icl.halo.cli",
    "icl.eye.cli",
    "icl.pro.cli",
    "icl.patient.cli",
    "icl.contest.cli",
    "icl.forensics.cli",
    "icl.demo",
    "icl.imaging.cli",
)


class _Group(click.Group):
    """Turn :class:`InputError` into a one-line message and exit status 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except InputError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)


@click.group(cls=_Group)
@click.version_option(__version__, prog_name="icl")
def main() -> None:
    """ICL-Bench: reference optics, cases and scoring for ICL halo prediction."""


for _name in COMMAND_MODULES:
    for _cmd in importlib.import_module(_name).COMMANDS:
        main.add_command(_cmd)
