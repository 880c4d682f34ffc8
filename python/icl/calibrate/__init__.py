"""Calibration of every track (``icl calibrate TRACK``).

Runs a track's baselines and controls and reports check pass rates, ceiling and floor, discrimination and
rank stability. This is the top layer: it may import every track. :mod:`icl.calibrate.core` holds the
track-independent statistics, one module per track (``pro``, ``halo``, ``patient``, ``forensics``) runs
that track's baselines and turns their scores into a :class:`icl.calibrate.core.Table`, and
:mod:`icl.calibrate.report` writes the Markdown, JSON and figures.
"""
