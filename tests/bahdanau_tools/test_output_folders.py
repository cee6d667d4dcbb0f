"""bahdanau-prepare-data's --out, bahdanau-evaluate's and bahdanau-plot-alignment's --out-dir: a
path that is a file, a read-only folder or a full disk is one line naming the folder and the cause,
before anything is computed; a disk that fills while they write is one line too
(bahdanau_plugin/output_folder.py)."""

import subprocess

import pytest

from ..support.assertions import assert_one_line_error
from ..support.demo_data import TEST_SENTENCES
from ..support.mounts import with_tmpfs
from ..support.tools import fairseq_env, fairseq_tool
from .data.corpora import sentence_pairs, write_corpus

COMMANDS = ["bahdanau-prepare-data", "bahdanau-evaluate", "bahdanau-plot-alignment"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(
        tmp_path_factory.mktemp("corpus"), {"train": sentence_pairs(300)}, ("en", "fr")
    )


@pytest.fixture
def typed(corpus, prepared_test_set, checkpoints):
    """command -> its words as typed, with OUT for its output folder."""
    return {
        "bahdanau-prepare-data": [
            *("corpus", "--train", corpus / "train", "--source-lang", "en"),
            *("--target-lang", "fr", "--bpe", 20, "--workers", 1, "--out", "OUT"),
        ],
        "bahdanau-evaluate": [
            *("--data", prepared_test_set / "data-bin", "--out-dir", "OUT"),
            *("--model", f"rnnsearch={checkpoints['rnnsearch_50']}", "--beam", 2),
            *("--max-len-b", 10, "--heatmaps", 0),
        ],
        "bahdanau-plot-alignment": [
            *(
                "--checkpoint",
                checkpoints["rnnsearch_50"],
                "--data",
                prepared_test_set / "data-bin",
            ),
            *("--out-dir", "OUT", "the dog sees a cat"),
        ],
    }


def option(command: str) -> str:
    return "--out" if command == "bahdanau-prepare-data" else "--out-dir"


def command_line(typed, command: str, out) -> list:
    return [fairseq_tool(command)] + [
        str(out if word == "OUT" else word) for word in typed[command]
    ]


@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_folder_that_is_a_file_is_one_line_before_any_work(typed, command, tmp_path):
    out = tmp_path / "results"
    out.write_text("a file the user keeps\n", encoding="utf-8")
    words = command_line(typed, command, out)
    completed = subprocess.run(words, capture_output=True, text=True, env=fairseq_env())
    assert_one_line_error(
        completed.returncode,
        completed.stderr,
        f"error: {option(command)} {out} is a file, not a folder: give a folder (it is created "
        "if missing)",
    )
    assert out.read_text(encoding="utf-8") == "a file the user keeps\n"


@pytest.mark.parametrize("command", COMMANDS)
def test_a_read_only_output_folder_is_one_line_before_any_work(typed, command, tmp_path):
    out = tmp_path / "read-only"
    completed = with_tmpfs(out, "ro", command_line(typed, command, out))
    assert_one_line_error(
        completed.returncode,
        completed.stderr,
        f"error: {option(command)} {out} cannot take the outputs: read-only file system; give a "
        "folder you can write to",
    )
    assert "translated" not in completed.stderr  # nothing computed


@pytest.mark.parametrize("command", COMMANDS)
def test_an_output_folder_on_a_full_disk_is_one_line_before_any_work(typed, command, tmp_path):
    out = tmp_path / "full" / "results"
    completed = with_tmpfs(out.parent, "size=1m", command_line(typed, command, out), fill=True)
    assert_one_line_error(
        completed.returncode,
        completed.stderr,
        f"error: {option(command)} {out} cannot take the outputs: no space left on device; free "
        "some space on its disk, or give a folder on another disk",
    )
    assert "translated" not in completed.stderr


@pytest.mark.parametrize("command", ["bahdanau-prepare-data", "bahdanau-evaluate"])
def test_a_disk_that_fills_while_the_command_writes_is_one_line(typed, command, tmp_path):
    """Room for the check's file (64 KiB) and a little more, not for all the outputs (a heatmap
    of every test sentence, from bahdanau-evaluate)."""
    out = tmp_path / "small" / "results"
    words = command_line(typed, command, out)
    if command == "bahdanau-evaluate":
        words += [str(sentence) for sentence in range(1, TEST_SENTENCES)]  # more --heatmaps
    completed = with_tmpfs(out.parent, "size=96k", words)
    assert_one_line_error(completed.returncode, completed.stderr, "error: writing ")
    assert "failed: no space left on device; free some space on its disk" in completed.stderr
