"""The console commands (setup.cfg's entry points), each importing its tool only once it runs.

Every command spends its first seconds importing torch and fairseq. Imported by the console script
itself, a Ctrl+C then ended in Python's traceback; imported here, inside the command, it ends in one
line, as a Ctrl+C during the work does (a tool that keeps what it finished, as
bahdanau-prepare-data does, says so in a line of its own). Exit status 130, as a shell reports a
command stopped by Ctrl+C.
"""

import importlib
import sys
from typing import Callable

EXIT_INTERRUPTED = 130
INTERRUPTED_WHILE_STARTING = "interrupted while starting: nothing was done"
INTERRUPTED = "interrupted"


def _command(module: str, function: str) -> Callable[[], None]:
    def run() -> None:
        try:
            entry = getattr(importlib.import_module(module), function)
        except KeyboardInterrupt:
            print(INTERRUPTED_WHILE_STARTING, file=sys.stderr)
            sys.exit(EXIT_INTERRUPTED)
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
