"""bahdanau_tools/commands.py: a Ctrl+C while a command starts (torch and fairseq loading) ends in
one line and exit status 130, as one during its work does, whatever the imports were doing."""

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from bahdanau_tools.commands import EXIT_INTERRUPTED, INTERRUPTED, INTERRUPTED_WHILE_STARTING

from ..support.tools import ctrl_c_as_in_a_terminal, fairseq_env, fairseq_tool, python_program

COMMANDS = [
    "bahdanau-prepare-data",
    "bahdanau-average-checkpoints",
    "bahdanau-unk-dictionary",
    "bahdanau-serve",
    "bahdanau-evaluate",
    "bahdanau-plot-alignment",
]
# Moments of a command's start, each named by a library then loaded (seen in /proc/PID/maps): inside
# its imports whatever the machine's speed (the console script imports neither torch nor numpy),
# with seconds of them left.
MOMENTS = {
    "as torch loads": "libtorch",
    # torch's initialization imports numpy and clears any error of that import
    "as torch imports numpy": "_multiarray_umath",
}
# What a stand-in tool runs for the user's Ctrl+C: Python handles the signal before raise_signal
# returns, so that it lands exactly there.
CTRL_C = "signal.raise_signal(signal.SIGINT)"


def started(command_line, cwd) -> subprocess.Popen:
    """command_line in a session of its own, its SIGINT doing what it does in a terminal."""
    return subprocess.Popen(
        command_line,
        cwd=cwd,
        env=fairseq_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )


def ended(process) -> tuple:
    """(exit status, stderr, stdout)"""
    stdout, stderr = process.communicate(timeout=120)
    return process.returncode, stderr, stdout


def stand_in_command(
    folder: Path, importing: str, running: str = "print('the command ran')", before: str = ""
):
    """A command made by commands.py for a tool whose import runs importing and whose function
    runs running, in a program that runs before first: (exit status, stderr, stdout)."""
    (folder / "tool.py").write_text(f"{textwrap.dedent(importing)}\n\ndef main():\n    {running}\n")
    command = f"{before}from bahdanau_tools.commands import _command; _command('tool', 'main')()"
    return ended(started([sys.executable, "-c", command], folder))


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="reads /proc/PID/maps (Linux)")
@pytest.mark.parametrize("moment", MOMENTS)
@pytest.mark.parametrize("command", COMMANDS)
def test_a_ctrl_c_while_a_command_starts_ends_in_one_line(command, moment, tmp_path):
    process = started([fairseq_tool(command), "--help"], tmp_path)
    loaded = Path(f"/proc/{process.pid}/maps")
    while process.poll() is None and MOMENTS[moment] not in loaded.read_text():
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    assert ended(process) == (EXIT_INTERRUPTED, f"{INTERRUPTED_WHILE_STARTING}\n", "")


# Imports that a Ctrl+C lands in, each as one the commands' libraries do it
INTERRUPTED_IMPORTS = {
    "a library's import swallows it": f"""
        import signal
        try:
            {CTRL_C}
        except BaseException:  # around an optional dependency
            pass
        """,
    # where C code calls Python (torch's C++, importlib's callbacks), an exception can only be
    # printed and dropped (torch's aborts the process), and the import goes on
    "in a callback from C code": f"""
        import ctypes, signal
        ctypes.CFUNCTYPE(None)(lambda: {CTRL_C})()
        """,
    # fairseq logs the config it was registering when an exception came through
    "a library logs it": f"""
        import logging, signal
        try:
            {CTRL_C}
        except BaseException:
            logging.getLogger("tool").error("ema - <class 'EMAConfig'>")
            raise
        """,
    # fairseq's line asking for tensorboardX, from Python, or a line from C++ code
    "after the imports wrote": f"""
        import os, signal, sys
        print("INFO:fairseq.tasks.text_to_speech:Please install tensorboardX", file=sys.stderr)
        os.write(2, b"a line from C++\\n")
        {CTRL_C}
        """,
}


@pytest.mark.parametrize("importing", INTERRUPTED_IMPORTS.values(), ids=INTERRUPTED_IMPORTS)
def test_a_ctrl_c_wherever_it_lands_in_the_imports_ends_the_command_in_one_line(
    importing, tmp_path
):
    assert stand_in_command(tmp_path, importing) == (
        EXIT_INTERRUPTED,
        f"{INTERRUPTED_WHILE_STARTING}\n",
        "",
    )


def test_what_the_imports_write_shows_when_nothing_interrupts_them(tmp_path):
    writing = """
        import os, sys
        print("INFO:fairseq.tasks.text_to_speech:Please install tensorboardX", file=sys.stderr)
        os.write(2, b"a line from C++\\n")
        """
    assert stand_in_command(tmp_path, writing) == (
        0,
        "INFO:fairseq.tasks.text_to_speech:Please install tensorboardX\na line from C++\n",
        "the command ran\n",
    )


def test_an_import_error_shows_its_traceback_after_what_the_imports_wrote(tmp_path):
    failing = """
        import sys
        print("a warning", file=sys.stderr)
        raise ImportError("libtorch_cpu.so: cannot open shared object file")
        """
    status, stderr, stdout = stand_in_command(tmp_path, failing)
    assert (status, stdout) == (1, "")
    assert stderr.startswith("a warning\nTraceback (most recent call last):\n"), stderr
    assert stderr.endswith("ImportError: libtorch_cpu.so: cannot open shared object file\n")


def test_a_ctrl_c_once_the_command_runs_ends_in_the_line_of_its_work(tmp_path):
    importing = "import signal"
    assert stand_in_command(tmp_path, importing, running=CTRL_C) == (
        EXIT_INTERRUPTED,
        f"{INTERRUPTED}\n",
        "",
    )


# Each command's console function (setup.cfg's entry point) run with --help in one program, one
# start of torch and fairseq for all (its first argument: the commands in JSON): {command: [exit
# status, what it printed]}, in JSON.
HELPS = """
import contextlib, io, json, sys
from importlib.metadata import entry_points
helps = {}
for command in json.loads(sys.argv[1]):
    [entry_point] = entry_points(group="console_scripts", name=command)
    sys.argv, printed = [command, "--help"], io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            entry_point.load()()
        except SystemExit as exit:
            helps[command] = [exit.code, printed.getvalue()]
print(json.dumps(helps))
"""


@pytest.fixture(scope="module")
def helps():
    return json.loads(python_program(HELPS, json.dumps(COMMANDS), env=fairseq_env()).stdout)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_s_help_starts_by_saying_what_it_does(helps, command):
    """After the usage lines, the description begins a sentence: the command's name and what it
    makes, or a verb (not the middle of a sentence cut out of a docstring)."""
    status, printed = helps[command]
    description = printed.split("\n\n", 1)[1].lstrip()
    assert status == 0
    assert description.startswith(f"{command}: ") or description[0].isupper(), description[:80]


def test_a_command_started_with_ctrl_c_ignored_keeps_ignoring_it_while_it_starts(tmp_path):
    """As a shell starts a background job (``command &``): SIGINT ignored, as POSIX says."""
    importing = f"""
        import signal
        {CTRL_C}
        """
    ignoring = "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
    assert stand_in_command(tmp_path, importing, before=ignoring) == (0, "", "the command ran\n")
