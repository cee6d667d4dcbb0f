"""Errors whose message says everything, and the hook that prints them as one line.

Every command of the project (fairseq's, with the plugin, and the tools') ends on bad input with one
``error: ...`` line that says what is wrong and what to do, not a traceback: the plugin's own
errors (PluginError), and the errors of other libraries that a module of the plugin knows how to
explain (``EXPLANATIONS``: an unreadable checkpoint, fairseq-generate's --replace-unk check).
"""

import re
import sys
import traceback
import types
from typing import Callable, List, Optional


class PluginError(Exception):
    """A problem with the user's input, explained in one line that says what to do."""


class CheckpointError(PluginError):
    """A checkpoint that cannot be used."""


class ConfigurationError(PluginError, ValueError):
    """An option value the models cannot be built with."""


class MissingPathError(PluginError, FileNotFoundError):
    """A file or folder the user named that is not there, or not of the kind asked for."""


# The last line of a worker process's traceback when it ended with one of the plugin's errors.
_WORKER_PLUGIN_ERROR = re.compile(rf"^{__name__}\.\w+Error: (.+)\Z")


def plugin_error_of_a_worker(error: BaseException) -> Optional[str]:
    """fairseq-train on several GPUs runs each worker in a process of its own: a PluginError there
    reaches the command as the worker's traceback in torch.multiprocessing's ProcessRaisedException;
    its message."""
    if type(error).__name__ != "ProcessRaisedException":
        return None
    found = _WORKER_PLUGIN_ERROR.match(str(error).strip().splitlines()[-1])
    return found.group(1) if found else None


def locals_where(error: BaseException, code: types.CodeType) -> Optional[dict]:
    """The local variables of the first frame of error's traceback that ran code (a function's
    __code__: what a library's failed call was given), None where none did."""
    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_code is code:
            return frame.f_locals
    return None


# Each takes an exception raised by another library and returns its one-line explanation, or None;
# the modules that know those errors add theirs when imported (checkpoint_safety.py, the task).
EXPLANATIONS: List[Callable[[BaseException], Optional[str]]] = [plugin_error_of_a_worker]

# Set on the hook, so that importing the plugin again does not wrap it twice.
ONE_LINE_HOOK = "__bahdanau_one_line_errors__"


def one_line(error: BaseException) -> Optional[str]:
    """The line that explains error, or None for an error the plugin does not know."""
    if isinstance(error, PluginError):
        return str(error)
    for explain in EXPLANATIONS:
        explanation = explain(error)
        if explanation is not None:
            return explanation
    return None


def printing_errors_as_one_line(previous_hook):
    """An excepthook that prints the errors one_line explains as ``error: ...`` and hands anything
    else to previous_hook. Libraries still get the exceptions: only their printing changes."""

    def hook(kind, value, traceback):
        explanation = one_line(value)
        if explanation is None:
            previous_hook(kind, value, traceback)
        else:
            print_as_the_last_line(explanation)

    setattr(hook, ONE_LINE_HOOK, True)
    return hook


def print_as_the_last_line(explanation: str) -> None:
    print(f"error: {explanation}", file=sys.stderr)
    # The command ends now. What the failed call left half-built would print a traceback of its
    # own from its __del__ as Python ends, after the line (fairseq's MMapIndexedDataset of an
    # empty split: no attribute '_bin_buffer_mmap').
    sys.unraisablehook = lambda unraisable: None


def print_hydra_jobs_errors_as_one_line() -> None:
    """From now on, a hydra job (fairseq-hydra-train's training) that ends with an error one_line
    explains prints that one line and ends the command. Hydra keeps a job's error in its JobReturn
    and raises it again where its result is read (``return_value``), after a line of the job's
    overrides, into its own handler, which prints a traceback and exits: sys.excepthook never
    sees it. Any other error is hydra's to print, as before."""
    from hydra.core.utils import JobReturn, JobStatus

    result = JobReturn.return_value
    if getattr(result.fget, ONE_LINE_HOOK, False):
        return

    def return_value(job: JobReturn):
        failed = job.status == JobStatus.FAILED
        explanation = one_line(job._return_value) if failed else None
        if explanation is None:
            return result.fget(job)
        print_as_the_last_line(explanation)
        sys.exit(1)

    setattr(return_value, ONE_LINE_HOOK, True)
    JobReturn.return_value = property(return_value, result.fset)


def print_errors_as_one_line() -> None:
    """From now on, a command that ends with an error one_line explains prints that one line
    instead of a traceback (sys.excepthook); the command-line tools call it before they start."""
    if not getattr(sys.excepthook, ONE_LINE_HOOK, False):
        sys.excepthook = printing_errors_as_one_line(sys.excepthook)
