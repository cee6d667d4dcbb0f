"""bahdanau_tools/commands.py: a Ctrl+C while a command starts (torch and fairseq loading) ends in
one line and exit status 130, as one during its work does."""

import signal
import subprocess
import time

import pytest

from bahdanau_tools.commands import EXIT_INTERRUPTED, INTERRUPTED_WHILE_STARTING

from ..support.tools import ctrl_c_as_in_a_terminal, fairseq_env, fairseq_tool

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


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_s_help_starts_by_saying_what_it_does(command):
    """After the usage lines, the description begins a sentence: the command's name and what it
    makes, or a verb (not the middle of a sentence cut out of a docstring)."""
    completed = subprocess.run(
        [fairseq_tool(command), "--help"], env=fairseq_env(), capture_output=True, text=True
    )
    description = completed.stdout.split("\n\n", 1)[1].lstrip()
    assert completed.returncode == 0
    assert description.startswith(f"{command}: ") or description[0].isupper(), description[:80]
