"""The repository's paths, the same as the measurements' (bench/paths.py)."""

from bench.paths import MULTI30K, PLUGIN, REPO

__all__ = ["MULTI30K", "PLUGIN", "REPO"]
