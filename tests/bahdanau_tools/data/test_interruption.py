"""Ctrl+C in bahdanau-prepare-data: one line, exit status 130, nothing half-written left behind,
and the same command run again finishes with exactly the outputs of an uninterrupted run. SIGTERM
stops it as Ctrl+C does (exit status 143), fairseq-preprocess with it."""

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

from ...support.tools import ctrl_c_as_in_a_terminal, fairseq_env, fairseq_tool
from .corpora import sentence_pairs, write_corpus
from .scripts import message_lines

LANGUAGES = ("en", "fr")
# Ctrl+C comes a moment after the progress bar of the training pairs' tokenization first appears
# (not during its drawing, which no hand can aim at), while the pairs are tokenized: enough of
# them that this takes about a second.
PROGRESS = re.compile(rb"tokenizing train:.*\]")
MOMENT_S = 0.2
TRAINING_PAIRS = 5000
INTERRUPTED = "interrupted: run the same command again to resume; the stages that finished are kept"
STARTING_S = 120  # for the command to come to a stage on a busy machine


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(
        tmp_path_factory.mktemp("corpus"),
        {"train": sentence_pairs(TRAINING_PAIRS)},
        LANGUAGES,
    )


def command(corpus, out="prepared"):
    """As a user types it, with --out relative to the folder it runs in, so that runs in two
    folders write the same bytes (fairseq-preprocess's log names its output folder)."""
    return [
        fairseq_tool("bahdanau-prepare-data"),
        "corpus",
        "--train",
        str(corpus / "train"),
        "--source-lang",
        LANGUAGES[0],
        "--target-lang",
        LANGUAGES[1],
        "--out",
        str(out),
        "--bpe",
        "50",
        "--workers",
        "2",
    ]


def run(corpus, folder):
    folder.mkdir(exist_ok=True)
    completed = subprocess.run(
        command(corpus), cwd=folder, env=fairseq_env(), capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return folder / "prepared"


def tokenizing(process) -> bytes:
    """What the command wrote on stderr until it showed its tokenizing progress, a moment ago."""
    stderr = b""
    while not PROGRESS.search(stderr):
        byte = process.stderr.read(1)
        assert byte, f"the command ended before tokenizing: {stderr.decode()[-3000:]}"
        stderr += byte
    time.sleep(MOMENT_S)
    return stderr


@pytest.fixture(scope="module")
def interrupted(corpus, tmp_path_factory):
    """Ctrl+C while the training pairs are tokenized: (the folder it ran in, exit status, stderr).
    The command runs in a session of its own, whose whole group gets SIGINT, as a terminal's
    foreground group does on Ctrl+C: its worker processes too."""
    folder = tmp_path_factory.mktemp("interrupted")
    process = subprocess.Popen(
        command(corpus),
        cwd=folder,
        env=fairseq_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        bufsize=0,  # read byte by byte, nothing kept back from communicate()
        start_new_session=True,
        preexec_fn=ctrl_c_as_in_a_terminal,
    )
    stderr = tokenizing(process)
    os.killpg(process.pid, signal.SIGINT)
    _, rest = process.communicate(timeout=60)
    return folder, process.returncode, (stderr + rest).decode()


@contextlib.contextmanager
def ended_at_last(process):
    """process, and what is left of its session, killed as the block ends, however the test
    went."""
    try:
        yield process
    finally:
        with contextlib.suppress(ProcessLookupError):  # ended already
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def preprocess_writing(out) -> bool:
    """Whether a process of fairseq-preprocess (or one of its workers) writes into out."""
    wanted = str(out / "data-bin.part").encode()
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            arguments = cmdline.read_bytes()
        except OSError:  # the process ended meanwhile
            continue
        if b"fairseq_cli.preprocess" in arguments and wanted in arguments:
            return True
    return False


@pytest.fixture(scope="module")
def terminated_while_binarizing(corpus, tmp_path_factory):
    """SIGTERM to the command alone (kill PID) once fairseq-preprocess runs: (its --out, exit
    status, stderr)."""
    out = tmp_path_factory.mktemp("terminated") / "prepared"
    process = subprocess.Popen(
        command(corpus, out),
        env=fairseq_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    with ended_at_last(process):
        deadline = time.monotonic() + STARTING_S
        while not preprocess_writing(out):
            assert process.poll() is None, f"the command ended: {process.communicate()[1][-3000:]}"
            assert time.monotonic() < deadline, f"no fairseq-preprocess after {STARTING_S} s"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    return out, process.returncode, stderr


def test_sigterm_while_binarizing_ends_the_command_with_one_line_and_exit_status_143(
    terminated_while_binarizing,
):
    _, status, stderr = terminated_while_binarizing
    assert (status, message_lines(stderr)) == (143, [INTERRUPTED])


def test_sigterm_while_binarizing_ends_fairseq_preprocess_too(terminated_while_binarizing):
    """It runs in a session of its own, which no signal to the command reaches: it went on
    writing data-bin.part, an orphan."""
    out, _, _ = terminated_while_binarizing
    deadline = time.monotonic() + 10  # for its workers, which end on their own SIGTERM
    while preprocess_writing(out):
        assert time.monotonic() < deadline, "fairseq-preprocess still runs"
        time.sleep(0.1)
    assert not (out / "data-bin.part").exists()


def test_sigterm_while_tokenizing_ends_the_worker_processes_without_a_word(corpus, tmp_path):
    """They inherit the command's handling of SIGTERM: taken for an interruption, the SIGTERM by
    which their pool ends them left the command waiting for them."""
    process = subprocess.Popen(
        command(corpus, tmp_path / "prepared"),
        env=fairseq_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        bufsize=0,
        start_new_session=True,
    )
    with ended_at_last(process):
        stderr = tokenizing(process)
        process.send_signal(signal.SIGTERM)
        _, rest = process.communicate(timeout=60)
    assert (process.returncode, message_lines((stderr + rest).decode())) == (143, [INTERRUPTED])


def test_ctrl_c_ends_the_command_with_one_line_and_exit_status_130(interrupted):
    _, status, stderr = interrupted
    assert (status, message_lines(stderr)) == (130, [INTERRUPTED])


def test_ctrl_c_leaves_no_half_written_file(interrupted):
    folder, _, _ = interrupted
    out = folder / "prepared"
    assert not (out / "summary.json").exists()  # it was stopped midway
    assert [path for path in out.rglob("*") if path.name.endswith(".part")] == []


def test_the_same_command_again_finishes_with_the_outputs_of_an_uninterrupted_run(
    interrupted, corpus, tmp_path
):
    folder, _, _ = interrupted
    resumed = run(corpus, folder)
    uninterrupted = run(corpus, tmp_path)
    assert contents(resumed) == contents(uninterrupted)


def contents(out):
    """Every output file's bytes, less the stage records (they hold modification times)."""
    return {
        str(path.relative_to(out)): path.read_bytes()
        for path in sorted(out.rglob("*"))
        if path.is_file() and path.parent.name != "stages"
    }
