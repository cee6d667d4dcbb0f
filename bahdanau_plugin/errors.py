"""Errors whose message says everything, printed by the command-line tools as one line."""

import sys


class PluginError(Exception):
    """A problem with the user's input, explained in one line that says what to do."""


class CheckpointError(PluginError):
    """A checkpoint that cannot be used."""


class ConfigurationError(PluginError, ValueError):
    """An option value the models cannot be built with."""


def _print_plugin_errors_as_one_line(previous_hook):
    def hook(kind, value, traceback):
        if issubclass(kind, PluginError):
            print(f"error: {value}", file=sys.stderr)
        else:
            previous_hook(kind, value, traceback)

    hook.prints_plugin_errors = True
    return hook


def print_plugin_errors_as_one_line() -> None:
    """fairseq's tools let exceptions escape to the interpreter, which prints a traceback; for the
    plugin's own errors the one line is all a user needs (libraries still get the exception)."""
    if not getattr(sys.excepthook, "prints_plugin_errors", False):
        sys.excepthook = _print_plugin_errors_as_one_line(sys.excepthook)
