"""Thick eye: C++ ray tracing through a schematic eye with a thick ICL, feeding the far-field engine."""

from icl.eye.model import PATHS, Eye, Implant, escudero_sanz_1999, navarro_1985, path_steps, synthetic_icl
from icl.eye.paraxial import Paraxial, correcting_icl, paraxial, retina_for_excess
from icl.eye.pupil import ThickPupil
from icl.eye.trace import Placement, Rays, Step, Surface, TraceOptions, trace

__all__ = ["PATHS", "Eye", "Implant", "Paraxial", "Placement", "Rays", "Step", "Surface", "ThickPupil",
           "TraceOptions", "correcting_icl", "escudero_sanz_1999", "navarro_1985", "paraxial", "path_steps", "retina_for_excess",
           "synthetic_icl", "trace"]
