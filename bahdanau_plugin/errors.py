"""Errors whose message says everything, printed by the command-line tools as one line."""

import re
import sys
from typing import Optional


class PluginError(Exception):
    """A problem with the user's input, explained in one line that says what to do."""


class CheckpointError(PluginError):
    """A checkpoint that cannot be used."""


class ConfigurationError(PluginError, ValueError):
    """An option value the models cannot be built with."""


def printing_plugin_errors_as_one_line(previous_hook):
    """An excepthook that prints a PluginError as ``error: message`` and hands anything else to
    previous_hook (installed by fairseq_patches.print_plugin_errors_as_one_line). fairseq-train
    on several GPUs runs each worker in a process of its own; a PluginError there reaches the
    command as the worker's traceback in torch's ProcessRaisedException, and is printed alike."""

    def hook(kind, value, traceback):
        message = plugin_error_message(value)
        if message is None:
            previous_hook(kind, value, traceback)
        else:
            print(f"error: {message}", file=sys.stderr)

    return hook


# The last line of a worker's traceback when it ended with one of the plugin's errors.
_WORKER_PLUGIN_ERROR = re.compile(rf"^{__name__}\.\w+Error: (.+)\Z")


def plugin_error_message(error: BaseException) -> Optional[str]:
    """The message of a PluginError, raised here or in a worker process; None for other errors."""
    if isinstance(error, PluginError):
        return str(error)
    if type(error).__name__ == "ProcessRaisedException":  # torch.multiprocessing's
        last_line = str(error).strip().splitlines()[-1]
        found = _WORKER_PLUGIN_ERROR.match(last_line)
        return found.group(1) if found else None
    return None
