"""Errors whose message says everything, printed by the command-line tools as one line."""

import sys


class PluginError(Exception):
    """A problem with the user's input, explained in one line that says what to do."""


class CheckpointError(PluginError):
    """A checkpoint that cannot be used."""


class ConfigurationError(PluginError, ValueError):
    """An option value the models cannot be built with."""


def printing_plugin_errors_as_one_line(previous_hook):
    """An excepthook that prints a PluginError as ``error: message`` and hands anything else to
    previous_hook (installed by fairseq_patches.print_plugin_errors_as_one_line)."""

    def hook(kind, value, traceback):
        if issubclass(kind, PluginError):
            print(f"error: {value}", file=sys.stderr)
        else:
            previous_hook(kind, value, traceback)

    return hook
