"""One bahdanau-prepare-data at a time writes into an --out: a second run is refused in one line
that names the first, and a hold left by a run that was killed is taken over in one warning
line."""

import json
import os
import socket
import subprocess
import sys

import pytest

from bahdanau_tools.data.command_line import HOLD, main
from bahdanau_tools.errors import DataError

from .corpora import sentence_pairs, write_corpus

LANGUAGES = ("en", "fr")
# A run that holds the --out given as its argument until its standard input closes.
HOLDER = """
import sys
from pathlib import Path
from bahdanau_tools.data.command_line import out_held
with out_held(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"), {"train": sentence_pairs(12)}, LANGUAGES)


def arguments(corpus, out):
    return [
        *("corpus", "--train", str(corpus / "train"), "--out", str(out)),
        *("--source-lang", LANGUAGES[0], "--target-lang", LANGUAGES[1]),
        *("--shortlist", "20", "--workers", "1"),
    ]


def test_a_second_run_into_an_out_in_use_is_refused_naming_the_first_and_writes_nothing(
    corpus, tmp_path
):
    """Two runs in one folder mixed their outputs: the BPE codes of one beside the binaries of
    the other, or fairseq-preprocess's FileExistsError traceback."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(DataError) as refused:
            main(arguments(corpus, tmp_path))
    finally:
        holder.communicate(timeout=60)
    message = str(refused.value)
    assert message.startswith(
        f"--out {tmp_path} is in use by another bahdanau-prepare-data, process {holder.pid} on "
        f"{socket.gethostname()} since "
    )
    assert message.endswith(": wait for it to end, or give another --out")
    assert os.listdir(tmp_path) == []  # the holder's file went with it


def test_the_hold_of_a_killed_run_is_taken_over_in_one_warning_line_and_released(
    corpus, tmp_path, capsys
):
    killed = {"pid": 4242, "host": "gone", "command": "bahdanau-prepare-data", "started": "T"}
    (tmp_path / HOLD).write_text(json.dumps(killed))
    main(arguments(corpus, tmp_path))
    warnings = [line for line in capsys.readouterr().err.splitlines() if "warning" in line]
    assert warnings == [
        f"warning: --out {tmp_path} was held by process 4242 on gone since T "
        "(bahdanau-prepare-data), which ended without releasing it (killed?): this run takes it "
        "over"
    ]
    assert not (tmp_path / HOLD).exists()
