"""The exceptions the tools raise for bad input: PluginErrors, printed as one line like the plugin's
own."""

from bahdanau_plugin.errors import PluginError


class DataError(PluginError):
    """Bad input to the data pipeline (a missing or misaligned file, a failed download), explained
    in one line that says what to do; the scripts print it without a traceback."""


class EvaluationError(PluginError):
    """Bad input to the evaluation (a missing file, references that do not match the test set),
    explained in one line that says what to do; bahdanau-evaluate prints it without a
    traceback."""


class AveragingError(PluginError):
    """Checkpoints that cannot be averaged (missing, or of different models), explained in one line
    that says what to do; bahdanau-average-checkpoints prints it without a traceback."""


class UserDirError(PluginError):
    """A --user-dir (a model of one's own) that is not there, or whose import fails, named in one
    line; fairseq's own tools end in a traceback."""
