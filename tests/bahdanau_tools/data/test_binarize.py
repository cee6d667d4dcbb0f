"""Binarizing with fairseq-preprocess: its messages while it runs, its traceback when it fails."""

import io
import sys

from bahdanau_tools.data.binarize import run_apart_from_ctrl_c


class NotingStderr(io.StringIO):
    """A stderr that creates a file as soon as a line is written to it."""

    def __init__(self, written):
        super().__init__()
        self.written = written

    def write(self, text):
        self.written.touch()
        return super().write(text)


def test_the_messages_of_fairseq_preprocess_are_passed_on_while_it_runs(tmp_path, monkeypatch):
    """Held to its end, they said nothing for the hour fairseq-preprocess takes on the paper's
    corpus. This process ends with status 0 only once its message has reached stderr."""
    written = tmp_path / "written"
    monkeypatch.setattr(sys, "stderr", NotingStderr(written))
    waits = (
        "import pathlib, sys, time\n"
        "print('INFO | building the dictionaries', file=sys.stderr, flush=True)\n"
        "deadline = time.monotonic() + 5\n"
        f"while not pathlib.Path({str(written)!r}).exists() and time.monotonic() < deadline:\n"
        "    time.sleep(0.01)\n"
        f"sys.exit(0 if pathlib.Path({str(written)!r}).exists() else 1)\n"
    )
    status, traceback = run_apart_from_ctrl_c([sys.executable, "-c", waits])
    assert status == 0
    assert sys.stderr.getvalue() == "INFO | building the dictionaries\n"
    assert traceback == ""


def test_a_traceback_of_fairseq_preprocess_is_held_back_for_the_command_to_say_in_one_line(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(sys, "stderr", NotingStderr(tmp_path / "written"))
    fails = "import sys\nprint('INFO | binarizing', file=sys.stderr)\nopen('/nowhere/x', 'w')\n"
    status, traceback = run_apart_from_ctrl_c([sys.executable, "-c", fails])
    assert status == 1
    assert sys.stderr.getvalue() == "INFO | binarizing\n"
    assert traceback.startswith("Traceback (most recent call last):\n")
    assert traceback.splitlines()[-1].startswith("FileNotFoundError: [Errno 2] ")
