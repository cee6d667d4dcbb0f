"""The exception the data pipeline raises for bad input."""

from ..errors import PluginError


class DataError(PluginError):
    """Bad input to the data pipeline (a missing or misaligned file, a failed download), explained
    in one line that says what to do; the scripts print it without a traceback."""
