"""Baseline submissions for calibrating the professional track.

Each baseline is a folder with ``run INPUT OUTPUT`` that calls :func:`icl.pro.baselines.runner.main`
with one strategy. They use this package's optics (a reference-assisted track), so they calibrate the
scoring, not the difficulty of building from scratch.
"""
