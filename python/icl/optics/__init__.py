"""Thin-phase eye optics: scene model, far-field sampling and rendering."""

from icl.optics.model import ICL, Detector, Extent, Pupil, Scene, Source
from icl.optics.render import RenderResult, render
from icl.optics.sampling import Sampling

__all__ = ["ICL", "Detector", "Extent", "Pupil", "RenderResult", "Sampling", "Scene", "Source", "render"]
