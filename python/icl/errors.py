"""Errors raised for bad input: every one names the file and the field at fault."""

from __future__ import annotations


class InputError(ValueError):
    """Invalid input file or value.

    Parameters
    ----------
    message : str
        What is wrong.
    file : str, optional
        Path of the file at fault.
    field : str, optional
        Dotted path of the field at fault (e.g. ``pupil.icl.hole``).

    """

    def __init__(self, message: str, file: str | None = None, field: str | None = None):
        self.file = file
        self.field = field
        self.reason = message
        where = ": ".join(x for x in (file, field) if x)
        super().__init__(f"{where}: {message}" if where else message)


class OutputError(InputError):
    """An output path that cannot or must not be written (an input, a device, a symlink, a file parent).

    The CLI reports it like :class:`InputError`: one line naming the path, exit status 2.
    """
