"""Click options shared by several commands (kept free of heavy imports)."""

from __future__ import annotations

from collections.abc import Callable

import click

force_option: Callable[[Callable], Callable] = click.option(
    "--force",
    is_flag=True,
    help="Empty a non-empty OUTPUT folder first (everything in it is deleted); without it the "
    "command writes only into a new or empty folder.",
)
