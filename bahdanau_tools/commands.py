"""The console commands (setup.cfg's entry points), each importing its tool only once it runs.

Every command spends its first seconds importing torch and fairseq. Imported by the console script
itself, a Ctrl+C then ended in Python's traceback; imported here, inside the command, it ends in one
line, as a Ctrl+C during the work does (a tool that keeps what it finished, as
bahdanau-prepare-data does, says so in a line of its own). Exit status 130, as a shell reports a
command stopped by Ctrl+C.
"""

import importlib
import os
import signal
import sys
from typing import Callable

EXIT_INTERRUPTED = 130
INTERRUPTED_WHILE_STARTING = "interrupted while starting: nothing was done"
INTERRUPTED = "interrupted"


def _imported(module: str, function: str) -> Callable[[], None]:
    """The command's function, its module imported. A Ctrl+C meanwhile ends the process at once, in
    one line (nothing was done that needs undoing): raised as KeyboardInterrupt, it would land in
    code that cannot take it. torch's C++ calling Python aborts the process on it (pybind11's
    "terminate called after throwing an instance of 'pybind11::error_already_set'" and its stack,
    "At: FILE(LINE): FUNCTION"); torch's initialization clears it where it lands in its import of
    numpy, as importlib's callbacks print and drop it, and the command then runs as if no Ctrl+C
    came; fairseq logs the config it was registering.
    What the imports write on stderr meanwhile (fairseq's "Please install tensorboardX", warnings,
    lines from C++: file descriptor 2 itself) is held and written out once they end, before an
    error's traceback, so that a Ctrl+C shows its line alone."""
    if sys.stderr is None:  # started with stderr closed (2>&-): nothing to hold, nowhere to say it
        return getattr(importlib.import_module(module), function)
    sys.stderr.flush()
    terminal = os.dup(2)

    def ctrl_c(signal_number, frame):
        try:
            os.write(terminal, f"{INTERRUPTED_WHILE_STARTING}\n".encode())
        finally:
            os._exit(EXIT_INTERRUPTED)

    python_s_own = signal.getsignal(signal.SIGINT)
    if python_s_own is not signal.SIG_IGN:  # a job started in the background keeps ignoring it
        signal.signal(signal.SIGINT, ctrl_c)
    import tempfile  # here, a Ctrl+C ours by now: the slowest of this module's imports

    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            return getattr(importlib.import_module(module), function)
        finally:
            sys.stderr.flush()
            os.dup2(terminal, 2)
            signal.signal(signal.SIGINT, python_s_own)  # a Ctrl+C from here on: the work's
            os.close(terminal)
            held.seek(0)
            sys.stderr.buffer.write(held.read())
            sys.stderr.flush()


def _command(module: str, function: str) -> Callable[[], None]:
    def run() -> None:
        try:
            _imported(module, function)()
        except KeyboardInterrupt:  # during the work, or in the instant after the imports
            print(INTERRUPTED, file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)

    return run


prepare_data = _command("bahdanau_tools.data.command_line", "cli_main")
average_checkpoints = _command("bahdanau_tools.averaging", "cli_main")
unk_dictionary = _command("bahdanau_tools.unk_dictionary", "cli_main")
serve = _command("bahdanau_tools.serving.command_line", "main")
evaluate = _command("bahdanau_tools.evaluation.command_line", "main")
plot_alignment = _command("bahdanau_tools.plot_alignment", "main")
