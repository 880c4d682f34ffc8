"""Halo forensics: telling physical halo images from bloom, wrap-around, wrong-model, duplicated and
spliced ones, scored with the contest rule (:mod:`icl.contest`).
"""

from icl.forensics.evaluate import evaluate
from icl.forensics.generate import build, write_release

__all__ = ["build", "evaluate", "write_release"]
