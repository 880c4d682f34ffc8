"""Halo track: cases, release, measurer, scoring, baselines and gallery."""
