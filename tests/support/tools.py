"""fairseq's command-line tools and fresh Python programs, run as a user runs them, with the tests'
Python."""

import contextlib
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

import pytest


def fairseq_env() -> dict:
    """Environment for fairseq's command-line tools of the Python running the tests: the models
    run eagerly (``BAHDANAU_FAST_PATH=plain``) unless a test asks for the default, since compiling
    the step would add seconds to each of the suite's hundred runs of a tool (docs/performance.md);
    the tests that run a tool with the step compiled say so (``COMPILED``)."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("BAHDANAU_FAST_PATH", "plain")
    return env


# What a test adds to fairseq_env() to run a tool as a user does, its models' step compiled.
DEFAULT = {"BAHDANAU_FAST_PATH": "auto"}
# The same, a search compiled from its first step too (on a CPU, a short one stays eager).
COMPILED = {**DEFAULT, "BAHDANAU_CPU_SEARCH_COMPILE_AFTER": "0"}


def ctrl_c_as_in_a_terminal() -> None:
    """For ``preexec_fn``: the child's SIGINT does what it does in a terminal's foreground,
    whatever the tests inherited. A shell that starts a command in the background makes it ignore
    SIGINT (POSIX), its children too, and Python then never raises KeyboardInterrupt."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def python_program(
    code: str, *arguments, env=None, stdin=None, cwd=None, timeout=300
) -> subprocess.CompletedProcess:
    """A fresh Python program that runs code (arguments as its sys.argv[1:]), as a user's program
    would: it must end well. Its stdout and stderr, as text."""
    completed = subprocess.run(
        [sys.executable, "-c", code, *map(str, arguments)],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=timeout,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed


def fairseq_tool(name: str) -> str:
    found = shutil.which(name, path=fairseq_env()["PATH"])
    if found is None:
        pytest.fail(f"{name} is not installed next to {sys.executable}")
    return found


def run(tool, *args, stdin=None, cwd=None, timeout=300, check=True):
    """Run one of fairseq's tools; its stdout and stderr together."""
    command = [fairseq_tool(tool), *map(str, args)]
    result = subprocess.run(
        command,
        input=stdin,
        capture_output=True,
        text=True,
        env=fairseq_env(),
        cwd=cwd,
        timeout=timeout,
    )
    if check and result.returncode != 0:
        pytest.fail(f"{tool} failed ({result.returncode}):\n{result.stderr[-3000:]}")
    return result.stdout + result.stderr


def tool_on_bytes(name, *args, stdin=None, env=None, timeout=300):
    """Run a fairseq tool on bytes; (return code, stdout, stderr) as text."""
    result = subprocess.run(
        [fairseq_tool(name), *map(str, args)],
        input=stdin,
        capture_output=True,
        env=env or fairseq_env(),
        timeout=timeout,
    )
    return (
        result.returncode,
        result.stdout.decode("utf-8", "replace"),
        result.stderr.decode("utf-8", "replace"),
    )


def command_in_this_process(main: Callable[[Sequence[str]], None], *arguments):
    """A tool's main run here on arguments, for what it checks and says, which does not depend on
    the process: its exit status, stdout and stderr as its command's process would end them, an
    error it ends with printed by the excepthook main set (its one line, or a traceback). A
    second each, against four for the command started as a process (importing torch and fairseq):
    each tool keeps a test of its own, as a process, of how an error reaches the user. What main
    changes of the process (the hooks, the root logger) is put back."""
    stdout, stderr = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    hooks, handlers, level = (sys.excepthook, sys.unraisablehook), root.handlers[:], root.level
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            returncode = _ended(main, list(map(str, arguments)))
    finally:
        sys.excepthook, sys.unraisablehook = hooks
        root.handlers[:], root.level = handlers, level
    return subprocess.CompletedProcess(arguments, returncode, stdout.getvalue(), stderr.getvalue())


def _ended(main, argv) -> int:
    """main(argv)'s exit status, an error it raised printed as Python prints it as it ends."""
    try:
        main(argv)
    except SystemExit as exit:
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1
    except Exception as error:
        sys.excepthook(type(error), error, error.__traceback__)
        return 1
    return 0
