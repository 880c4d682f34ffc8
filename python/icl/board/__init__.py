"""Leaderboards an operator runs and publishes.

:mod:`icl.board.queue` evaluates submissions on a frozen release (every (submission, run, input set) one
task, serially or on dask.distributed), :mod:`icl.board.rows` turns the scored runs into board rows, and
:mod:`icl.board.site` writes the static site. Commands in :mod:`icl.board.cli`.
"""
