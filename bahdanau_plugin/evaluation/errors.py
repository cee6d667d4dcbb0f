"""The exception the evaluation raises for bad input."""

from ..errors import PluginError


class EvaluationError(PluginError):
    """Bad input to the evaluation (a missing file, references that do not match the test set),
    explained in one line that says what to do; scripts/evaluate.py prints it without a traceback."""
