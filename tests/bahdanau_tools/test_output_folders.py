"""bahdanau-prepare-data's --out, bahdanau-evaluate's and bahdanau-plot-alignment's --out-dir: a
path that is a file, a read-only folder or a full disk is one line naming the folder and the cause,
before anything is computed; a disk that fills while they write is one line too
(bahdanau_plugin/output_folder.py). These and the commands writing one file (--output) leave no
folder made for an input they refuse."""

import subprocess

import pytest

from bahdanau_plugin.errors import PluginError, one_line
from bahdanau_tools.averaging import averaging_parser
from bahdanau_tools.averaging import main as average_checkpoints
from bahdanau_tools.data.command_line import main as prepare_data
from bahdanau_tools.data.command_line import pipeline_parser
from bahdanau_tools.evaluation.command_line import evaluate, evaluation_parser
from bahdanau_tools.plot_alignment import argument_parser
from bahdanau_tools.plot_alignment import main as plot_alignment
from bahdanau_tools.unk_dictionary import dictionary_parser
from bahdanau_tools.unk_dictionary import main as unk_dictionary

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


@pytest.fixture
def refused(corpus, prepared_test_set, tmp_path):
    """command -> its main run in this process with OUT for its output, on an input that it
    refuses only after checking that output's folder: a corpus not there, a checkpoint that is no
    checkpoint."""
    no_checkpoint = tmp_path / "no-checkpoint.pt"
    no_checkpoint.write_text("not a checkpoint\n", encoding="utf-8")
    data, text = prepared_test_set / "data-bin", corpus / "train"
    languages = ("--source-lang", "en", "--target-lang", "fr")
    mains = {
        "bahdanau-prepare-data": lambda out: prepare_data(
            words("corpus", "--train", corpus / "nowhere", *languages, "--bpe", 20, "--out", out)
        ),
        "bahdanau-evaluate": lambda out: evaluate(
            evaluation_parser().parse_args(
                words("--data", data, "--out-dir", out, "--model", f"rnnsearch={no_checkpoint}")
            )
        ),
        "bahdanau-plot-alignment": lambda out: plot_alignment(
            words("--checkpoint", no_checkpoint, "--data", data, "--out-dir", out, "a dog")
        ),
        "bahdanau-average-checkpoints": lambda out: average_checkpoints(
            words("--inputs", no_checkpoint, "--output", out / "average.pt")
        ),
        "bahdanau-unk-dictionary": lambda out: unk_dictionary(
            words("--checkpoint", no_checkpoint, "--data", data, "--source", f"{text}.en")
            + words("--target", f"{text}.fr", "--output", out / "unk-dictionary.txt")
        ),
    }
    return mains


def words(*typed) -> list:
    return [str(word) for word in typed]


@pytest.mark.parametrize(
    "command", [*COMMANDS, "bahdanau-average-checkpoints", "bahdanau-unk-dictionary"]
)
def test_the_output_folders_made_for_a_refused_input_are_removed(refused, command, tmp_path):
    made = tmp_path / "made" / "results"
    with pytest.raises((Exception, SystemExit)) as raised:
        refused[command](made)
    assert raised.type is SystemExit or one_line(raised.value) is not None  # the command's line
    assert not (tmp_path / "made").exists()


def test_an_output_folder_there_before_a_refused_input_stays(refused, tmp_path):
    there = tmp_path / "there"
    there.mkdir()
    with pytest.raises(PluginError):
        refused["bahdanau-average-checkpoints"](there)
    assert there.is_dir()


# command -> its parser, and its words up to its output option
OUTPUT_OPTIONS = {
    "bahdanau-prepare-data": (pipeline_parser, ["corpus", "--out"]),
    "bahdanau-evaluate": (evaluation_parser, ["--out-dir"]),
    "bahdanau-plot-alignment": (argument_parser, ["--out-dir"]),
    "bahdanau-average-checkpoints": (averaging_parser, ["--output"]),
    "bahdanau-unk-dictionary": (dictionary_parser, ["--output"]),
}


@pytest.mark.parametrize("command", OUTPUT_OPTIONS)
def test_an_output_path_with_a_tilde_after_equals_is_one_line_saying_what_to_write(
    command, tmp_path, monkeypatch, capsys
):
    """bash leaves the '~' of --out=~/results as it is: the outputs went to a folder named '~' in
    the current folder, made without a word."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    parser, typed = OUTPUT_OPTIONS[command]
    *before, option = typed
    with pytest.raises(SystemExit):
        parser().parse_args([*before, f"{option}=~/results"])
    last_line = capsys.readouterr().err.splitlines()[-1]
    assert last_line.endswith(
        f"error: argument {option}: ~/results starts with a folder named '~' in the current "
        "folder, not a home folder: the shell expands '~' only at the start of a word, not "
        f"after '=' nor in quotes; write {tmp_path / 'home' / 'results'}"
    )
