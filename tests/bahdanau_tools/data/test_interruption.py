"""Ctrl+C in bahdanau-prepare-data: one line, exit status 130, nothing half-written left behind,
and the same command run again finishes with exactly the outputs of an uninterrupted run."""

import os
import re
import signal
import subprocess
import time

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


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(
        tmp_path_factory.mktemp("corpus"),
        {"train": sentence_pairs(TRAINING_PAIRS)},
        LANGUAGES,
    )


def command(corpus):
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
        "prepared",
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
    stderr = b""
    while not PROGRESS.search(stderr):
        byte = process.stderr.read(1)
        assert byte, f"the command ended before tokenizing: {stderr.decode()[-3000:]}"
        stderr += byte
    time.sleep(MOMENT_S)
    os.killpg(process.pid, signal.SIGINT)
    _, rest = process.communicate(timeout=60)
    return folder, process.returncode, (stderr + rest).decode()


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
