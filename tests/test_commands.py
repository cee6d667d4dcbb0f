"""bahdanau_tools/commands.py: a Ctrl+C while a command starts (torch and fairseq loading) ends in
one line and exit status 130, as one during its work does."""

import signal
import subprocess
import time

import pytest

from bahdanau_tools.commands import EXIT_INTERRUPTED, INTERRUPTED_WHILE_STARTING

from .support.tools import ctrl_c_as_in_a_terminal, fairseq_env, fairseq_tool

COMMANDS = [
    "bahdanau-prepare-data",
    "bahdanau-average-checkpoints",
    "bahdanau-unk-dictionary",
    "bahdanau-serve",
    "bahdanau-evaluate",
    "bahdanau-plot-alignment",
]
# Within the seconds a command spends importing torch and fairseq, and after Python's own start.
WHILE_STARTING = 0.5


@pytest.mark.parametrize("command", COMMANDS)
def test_a_ctrl_c_while_a_command_starts_ends_in_one_line(command, tmp_path):
    process = subprocess.Popen(
        [fairseq_tool(command), "--help"],
        cwd=tmp_path,
        env=fairseq_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    time.sleep(WHILE_STARTING)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=120)
    assert (process.returncode, stderr.strip(), stdout) == (
        EXIT_INTERRUPTED,
        INTERRUPTED_WHILE_STARTING,
        "",
    )
