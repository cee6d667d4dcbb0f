"""End to end through fairseq's own command-line tools, with the plugin passed as --user-dir."""

import re
import subprocess

import pytest
import torch

from ..support.demo_data import TEST_SENTENCES
from ..support.paths import PLUGIN
from ..support.tools import COMPILED, DEFAULT, fairseq_env, fairseq_tool, run
from ..support.training import ARCHITECTURES, train

pytestmark = pytest.mark.long  # run first: tests/conftest.py


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_fairseq_train_writes_a_checkpoint_for_each_architecture(checkpoints, arch):
    assert checkpoints[arch].stat().st_size > 0


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_fairseq_generate_translates_every_test_sentence(data_bin, checkpoints, arch):
    output = run(
        "fairseq-generate",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        checkpoints[arch],
        "--beam",
        "5",
        "--batch-size",
        "4",
        "--max-len-b",
        "20",
        "--cpu",
    )
    hypotheses = re.findall(r"^H-(\d+)\t", output, flags=re.M)
    assert sorted(map(int, hypotheses)) == list(range(TEST_SENTENCES))


def test_fairseq_generate_prints_alignments_from_the_soft_attention(data_bin, checkpoints):
    output = run(
        "fairseq-generate",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        checkpoints["rnnsearch_50"],
        "--beam",
        "5",
        "--print-alignment",
        "--max-len-b",
        "20",
        "--cpu",
    )
    alignments = re.findall(r"^A-\d+\t(.*)$", output, flags=re.M)
    assert len(alignments) == TEST_SENTENCES
    assert all(re.fullmatch(r"(\d+-\d+ ?)+", line.strip()) for line in alignments)


def test_fairseq_interactive_answers_every_line_in_order(data_bin, checkpoints):
    lines = ["the dog sees a cat", "a small red car", "this old european bank leaves the big city"]
    output = run(
        "fairseq-interactive",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        checkpoints["rnnsearch_50"],
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
        "--beam",
        "5",
        "--max-len-b",
        "20",
        "--cpu",
        stdin="\n".join(lines) + "\n",
    )
    sources = re.findall(r"^S-\d+\t(.*)$", output, flags=re.M)
    assert sources == lines
    assert len(re.findall(r"^H-\d+\t", output, flags=re.M)) == len(lines)


def generate_with(environment, data_bin, checkpoint):
    """fairseq-generate's stdout and stderr, with these variables set."""
    completed = subprocess.run(
        [
            fairseq_tool("fairseq-generate"),
            data_bin,
            "--user-dir",
            PLUGIN,
            "--path",
            checkpoint,
            "--beam",
            "2",
            "--max-len-b",
            "5",
            "--cpu",
        ],  # fmt: skip
        capture_output=True,
        text=True,
        env={**fairseq_env(), **environment},
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed.stdout + completed.stderr


def test_fairseq_generate_says_what_it_compiled_in_a_line_each_and_nothing_else_of_compiling(
    data_bin, checkpoints
):
    """A search's step compiled (from its first step: BAHDANAU_CPU_SEARCH_COMPILE_AFTER=0) says
    so in a line per compilation at fairseq's log level (a batch of one sentence has one of its
    own), none of torch's own (inductor's, filelock's)."""
    output = generate_with(COMPILED, data_bin, checkpoints["rnnsearch_50"])
    compiled = [line for line in output.splitlines() if "compil" in line.lower()]
    assert 1 <= len(compiled) <= 2, compiled
    for line in compiled:
        assert re.search(
            r"INFO(?: \| |:)bahdanau_plugin\.speed\.compiling(?: \| |:)"
            r"compiled RNNsearchDecoder\.next_words \(without gradients, weights as constants, "
            r"first for \d+ rows?\) in \d+\.\d s$",
            line,
        ), line
    assert "DEBUG" not in output and "filelock" not in output


def test_a_short_fairseq_generate_on_a_cpu_decodes_eagerly_and_says_nothing_of_compiling(
    data_bin, checkpoints
):
    """By default a search on a CPU runs eagerly until it has run a while: a short decoding would
    not win back what compiling it costs."""
    output = generate_with(DEFAULT, data_bin, checkpoints["rnnsearch_50"])
    assert "compil" not in output.lower()
    assert len(re.findall(r"^H-\d+\t", output, flags=re.M)) == TEST_SENTENCES


TRAIN_LIMIT = 8


@pytest.fixture(scope="module")
def trained_with_a_low_limit(data_bin, tmp_path_factory):
    """(training log, checkpoint) of a model whose limit skips some of the demo training pairs."""
    save_dir = tmp_path_factory.mktemp("limit")
    output = train(
        data_bin,
        save_dir,
        "rnnsearch_50",
        "--max-update",
        "1",
        "--max-train-length",
        str(TRAIN_LIMIT),
        "--skip-invalid-size-inputs-valid-test",
    )
    return output, save_dir / "checkpoint_last.pt"


def _over_the_limit(data_bin):
    """Indices of the training pairs with more than TRAIN_LIMIT tokens on either side."""
    sides = [
        (data_bin.parent / "raw" / f"train.{lang}").read_text().splitlines()
        for lang in ("en", "fr")
    ]
    return {
        index
        for index, pair in enumerate(zip(*sides))
        if max(len(side.split()) for side in pair) > TRAIN_LIMIT
    }


def _skipped_in_training(output):
    """(count, the first few indices) from fairseq's log line about the training pairs it skips."""
    limit = TRAIN_LIMIT + 1  # fairseq's sizes count the end-of-sentence token
    skipped = re.search(
        r"([\d,]+) samples have invalid sizes and will be skipped, "
        rf"max_positions=\({limit}, {limit}\), first few sample ids=\[([\d, ]+)\]",
        output,
    )
    assert skipped, "fairseq-train did not log skipped training pairs"
    return int(skipped.group(1).replace(",", "")), {
        int(index) for index in skipped.group(2).split(",")
    }


def test_training_skips_pairs_longer_than_the_architecture_limit_and_counts_them(
    data_bin, trained_with_a_low_limit
):
    output, _ = trained_with_a_low_limit
    count, _ = _skipped_in_training(output)
    assert count == len(_over_the_limit(data_bin)) > 0


def test_pairs_skipped_in_training_are_translated_at_generation(data_bin, trained_with_a_low_limit):
    output, checkpoint = trained_with_a_low_limit
    _, skipped = _skipped_in_training(output)
    generated = run(
        "fairseq-generate",
        data_bin,
        "--user-dir",
        PLUGIN,
        "--path",
        checkpoint,
        "--gen-subset",
        "train",
        "--batch-size",
        "500",
        "--beam",
        "2",
        "--max-len-b",
        "5",
        "--cpu",
    )
    translated = {int(index) for index in re.findall(r"^H-(\d+)\t", generated, flags=re.M)}
    assert skipped <= translated


def test_fairseq_hydra_train_builds_a_named_architecture_from_yaml(data_bin, tmp_path):
    (tmp_path / "tiny.yaml").write_text(
        "task:\n  _name: translation\n  data: " + str(data_bin) + "\n"
        "model:\n  _name: rnnsearch_30\n  encoder_embed_dim: 8\n  decoder_embed_dim: 8\n"
        "  encoder_hidden_dim: 8\n  decoder_hidden_dim: 8\n  attention_dim: 8\n  maxout_dim: 4\n"
        "criterion: cross_entropy\n"
        "optimizer:\n  _name: adam\n"
        "lr_scheduler: fixed\n"
        "optimization:\n  max_update: 2\n  lr: [0.001]\n"
        "dataset:\n  batch_size: 80\n"
        "checkpoint:\n  save_dir: "
        + str(tmp_path / "checkpoints")
        + "\n  no_epoch_checkpoints: true\n"
        "common:\n  cpu: true\n  user_dir: " + PLUGIN + "\n  log_format: simple\n"
    )
    output = run(
        "fairseq-hydra-train", "--config-dir", tmp_path, "--config-name", "tiny", cwd=tmp_path
    )
    assert "RNNsearchModel" in output
    state = torch.load(tmp_path / "checkpoints" / "checkpoint_last.pt")
    assert state["cfg"]["model"]["max_train_length"] == 30
    assert state["cfg"]["model"]["encoder_hidden_dim"] == 8


def test_fairseq_train_logs_no_shared_parameter_for_the_layers_without_a_bias(
    trained_with_a_low_limit,
):
    """fairseq's trainer took the absent biases for one parameter shared between six layers."""
    output, _ = trained_with_a_low_limit
    assert "detected shared parameter" not in output


def test_fairseq_train_prints_no_warning_about_how_fairseq_calls_hydra_and_torch(
    trained_with_a_low_limit,
):
    output, _ = trained_with_a_low_limit
    assert "Warning" not in output, re.findall(r".*Warning.*", output)
