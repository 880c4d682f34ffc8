"""ICL-Bench: reference optics, cases and scoring for halos after an implantable collamer lens."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("icl-bench")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

__all__ = ["__version__"]
