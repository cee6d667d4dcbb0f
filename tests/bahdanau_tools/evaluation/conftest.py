"""One evaluation run on a test set with unknown words, shared by the evaluation tests, and the
odd models and test sets that some of them evaluate."""

import os
import subprocess
from pathlib import Path
from unittest import mock

import pytest
from fairseq.data import Dictionary

from bahdanau_plugin.speed import setting
from bahdanau_plugin.unknown_words import source_text_path
from bahdanau_tools.evaluation import command_line

from ...support.demo_data import binarize_test_split
from ...support.output_biases import checkpoint_with_output_biases_raised
from ...support.paths import REPO
from ...support.shared import made_once
from ...support.tools import command_in_this_process, fairseq_env, fairseq_tool

HEATMAP_SENTENCES = [0, 7]
MODELS = {"rnnsearch": "rnnsearch_50", "rnnencdec": "rnnencdec_30"}  # name -> architecture
BUCKET_WIDTH = 3
MIN_BUCKET_SENTENCES = 2


def run_evaluate(*arguments) -> subprocess.CompletedProcess:
    return subprocess.run(
        [fairseq_tool("bahdanau-evaluate"), *map(str, arguments)],
        cwd=REPO,
        env=fairseq_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def evaluate_in_this_process(*arguments) -> subprocess.CompletedProcess:
    """bahdanau-evaluate's main run here (command_in_this_process), for its checks, its help and
    what it writes, in the environment run_evaluate gives it: the fairseq-generate it starts runs
    as it runs there."""
    with mock.patch.dict(os.environ, fairseq_env()):
        try:
            return command_in_this_process(command_line.main, *arguments)
        finally:  # the fast path's setting, read once per process: this one's own again after
            setting.mode.cache_clear()


@pytest.fixture(scope="session")
def evaluation(prepared_test_set, checkpoints, tmp_path_factory) -> Path:
    """bahdanau-evaluate on two tiny models: its output folder, made once for both of make test's
    workers (the evaluation test files go to either), and only read."""

    def evaluate(out):
        models = [
            argument
            for name, arch in MODELS.items()
            for argument in ("--model", f"{name}={checkpoints[arch]}")
        ]
        completed = run_evaluate(
            "--data",
            prepared_test_set / "data-bin",
            "--out-dir",
            out,
            *models,
            "--beam",
            3,
            "--max-len-b",
            12,
            "--bucket-width",
            BUCKET_WIDTH,
            "--min-bucket-sentences",
            MIN_BUCKET_SENTENCES,
            "--heatmaps",
            *HEATMAP_SENTENCES,
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
        (out / "stdout.txt").write_text(completed.stdout, encoding="utf-8")
        (out / "stderr.txt").write_text(completed.stderr, encoding="utf-8")

    return made_once(tmp_path_factory, "evaluation", evaluate)


@pytest.fixture(scope="session")
def checkpoint_preferring_unk(checkpoints, tmp_path_factory) -> Path:
    """rnnsearch_50's checkpoint with <unk> made far more likely than any other word at every step
    (its output bias raised): an ordinary beam search writes <unk> throughout."""
    unk = Dictionary().unk()  # fairseq's dictionaries all number <unk> so
    return checkpoint_with_output_biases_raised(
        checkpoints, tmp_path_factory, "prefers-unk", {unk: 100}
    )


def edited_test_set(root: Path, data_bin: Path, edit) -> None:
    """The demo test set, each side's lines edited (edit(language, lines): the new lines), laid
    out in root as bahdanau-prepare-data does: data-bin/ (the source text beside the binaries),
    raw/ and tok/ (the demo text is both)."""
    for folder in ("raw", "tok"):
        (root / folder).mkdir()
        for language in ("en", "fr"):
            lines = (data_bin.parent / "raw" / f"test.{language}").read_text(encoding="utf-8")
            text = "".join(line + "\n" for line in edit(language, lines.splitlines()))
            (root / folder / f"test.{language}").write_text(text, encoding="utf-8")
    binarize_test_split(root / "tok" / "test", data_bin, root / "data-bin")


EMPTY_SOURCES = [2, 5]  # test sentences whose source is an empty line


@pytest.fixture(scope="session")
def test_set_with_empty_sources(data_bin, tmp_path_factory) -> Path:
    """The demo test set with the sources EMPTY_SOURCES emptied, laid out as bahdanau-prepare-data
    does but without the source text beside the binaries (as fairseq-preprocess alone leaves it):
    the folder of data-bin/, raw/ and tok/."""

    def empty_sources(language, lines):
        if language != "en":
            return lines
        return ["" if i in EMPTY_SOURCES else line for i, line in enumerate(lines)]

    def make(root):
        edited_test_set(root, data_bin, empty_sources)
        source_text_path(root / "data-bin", "test", "en", "fr").unlink()

    return made_once(tmp_path_factory, "empty-sources", make)


LONG_SENTENCE = 3  # a test sentence over 1,024 tokens on each side, fairseq's default limit


@pytest.fixture(scope="session")
def test_set_with_a_long_sentence(data_bin, tmp_path_factory) -> Path:
    """The demo test set with sentence LONG_SENTENCE (source and reference) repeated 150 times, as
    a test set's line of a whole paragraph (over 1,024 tokens): the folder of data-bin/, raw/ and
    tok/."""

    def lengthen(_, lines):
        return [
            " ".join([line] * 150) if i == LONG_SENTENCE else line for i, line in enumerate(lines)
        ]

    return made_once(
        tmp_path_factory, "long-sentence", lambda root: edited_test_set(root, data_bin, lengthen)
    )
