"""The console commands (setup.cfg's entry points), each importing its tool only once it runs.

Every command spends its first seconds importing torch and fairseq. Imported by the console script
itself, a Ctrl+C then ended in Python's traceback; imported here, inside the command, it ends in one
line, as a Ctrl+C during the work does (a tool that keeps what it finished, as
bahdanau-prepare-data does, says so in a line of its own). Exit status 130, as a shell reports a
command stopped by Ctrl+C.
"""

import importlib
import signal
import sys
from typing import Callable

EXIT_INTERRUPTED = 130
INTERRUPTED_WHILE_STARTING = "interrupted while starting: nothing was done"
INTERRUPTED = "interrupted"


def _imported(module: str, function: str) -> Callable[[], None]:
    """The command's function, its module imported; a Ctrl+C meanwhile ends the command in one
    line, also where it landed in a library's import that turned the KeyboardInterrupt into an
    error of its own (a module left half imported fails as it is imported again)."""
    interrupted = []

    def ctrl_c(signal_number, frame):
        interrupted.append(signal_number)
        raise KeyboardInterrupt

    python_s_own = signal.signal(signal.SIGINT, ctrl_c)
    try:
        return getattr(importlib.import_module(module), function)
    except BaseException as error:
        if not (interrupted or isinstance(error, KeyboardInterrupt)):
            raise
        print(INTERRUPTED_WHILE_STARTING, file=sys.stderr)
        sys.exit(EXIT_INTERRUPTED)
    finally:
        signal.signal(signal.SIGINT, python_s_own)


def _command(module: str, function: str) -> Callable[[], None]:
    def run() -> None:
        entry = _imported(module, function)
        try:
            entry()
        except KeyboardInterrupt:
            print(INTERRUPTED, file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)

    return run


prepare_data = _command("bahdanau_tools.data.command_line", "cli_main")
average_checkpoints = _command("bahdanau_tools.averaging", "cli_main")
unk_dictionary = _command("bahdanau_tools.unk_dictionary", "cli_main")
serve = _command("bahdanau_tools.serving.command_line", "main")
evaluate = _command("bahdanau_tools.evaluation.command_line", "main")
plot_alignment = _command("bahdanau_tools.plot_alignment", "main")
