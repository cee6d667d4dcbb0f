"""bahdanau-evaluate: the table it prints, the heatmaps it draws, its progress, its help, the
translation of empty sources, and one-line errors for bad input."""

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from bahdanau_plugin import provenance
from bahdanau_tools.evaluation import command_line

from ...support.png import assert_png
from ...support.demo_data import TEST_SENTENCES
from .conftest import (
    EMPTY_SOURCES,
    HEATMAP_SENTENCES,
    LONG_SENTENCE,
    MODELS,
    evaluate_in_this_process,
    run_evaluate,
)

pytestmark = pytest.mark.long  # run first: tests/conftest.py


def test_prints_all_and_no_unk_bleu_of_every_model_with_the_signature(evaluation):
    printed = (evaluation / "stdout.txt").read_text(encoding="utf-8")
    assert "nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp" in printed
    assert "All 13 sentences, No UNK 10" in printed
    assert [line.split()[0] for line in printed.splitlines()[-2:]] == ["rnnsearch", "rnnencdec"]


def test_labels_detokenized_sacrebleu_and_tokenized_bleu_each_with_its_signature(evaluation):
    printed = (evaluation / "stdout.txt").read_text(encoding="utf-8").splitlines()
    assert printed[1].startswith("detokenized sacreBLEU, nrefs:1|case:mixed|eff:no|tok:13a")
    assert (
        printed[2].startswith("tokenized BLEU (Moses tokens as they are")
        and "tok:none" in printed[2]
    )
    assert printed[3].split() == ["detokenized", "sacreBLEU", "tokenized", "BLEU"]


def test_records_the_data_bin_and_the_digest_of_each_checkpoint_it_translated(
    evaluation, prepared_test_set, checkpoints
):
    """checkpoint_best.pt names another checkpoint as the training goes on: its digest says
    which one the scores are of."""
    report = json.loads((evaluation / "bleu.json").read_text(encoding="utf-8"))
    assert report["data"] == str(prepared_test_set / "data-bin")
    for name, arch in MODELS.items():
        digest = hashlib.sha256(checkpoints[arch].read_bytes()).hexdigest()
        assert report["models"][name]["checkpoint_sha256"] == [digest]


def test_records_the_code_that_trained_each_checkpoint_beside_its_digest(evaluation, checkpoints):
    """Of two checkpoints that score differently, which version of the code trained each."""
    report = json.loads((evaluation / "bleu.json").read_text(encoding="utf-8"))
    for name, arch in MODELS.items():
        runs = torch.load(checkpoints[arch], weights_only=True)["extra_state"][provenance.KEY]
        assert [run["git_commit"] for run in runs] == [provenance.of_the_code()["git_commit"]]
        assert report["models"][name]["checkpoint_provenance"] == [runs]


def test_a_checkpoint_saved_before_its_provenance_was_recorded_reads_as_unknown(
    checkpoints, tmp_path
):
    """Each member of an ensemble, in order."""
    old, new = tmp_path / "old.pt", checkpoints["rnnsearch_50"]
    state = torch.load(new, weights_only=True)
    del state["extra_state"][provenance.KEY]
    torch.save(state, old)
    record = command_line.checkpoint_record(Path(f"{old}:{new}"))
    assert record["checkpoint_provenance"] == [provenance.UNKNOWN, provenance.recorded(new)]
    assert record["checkpoint_sha256"][0] == hashlib.sha256(old.read_bytes()).hexdigest()


def test_draws_a_heatmap_per_chosen_sentence_for_the_model_with_attention_only(evaluation):
    heatmaps = evaluation / "heatmaps"
    assert sorted(path.name for path in (heatmaps / "rnnsearch").iterdir()) == sorted(
        f"sentence_{sentence}.png" for sentence in HEATMAP_SENTENCES
    )
    for path in (heatmaps / "rnnsearch").iterdir():
        assert_png(path)
    assert not (heatmaps / "rnnencdec").exists()


def test_says_how_many_sentences_each_model_has_translated(evaluation):
    printed = (evaluation / "stderr.txt").read_text(encoding="utf-8")
    for name in MODELS:
        assert f"{name}: {TEST_SENTENCES} of {TEST_SENTENCES} sentences translated, " in printed


def test_prints_no_debug_line_and_no_warning_of_hydra_or_torch(evaluation):
    printed = (evaluation / "stderr.txt").read_text(encoding="utf-8")
    assert "DEBUG" not in printed and "Warning" not in printed


def test_on_bpe_data_shows_neither_fairseqs_bleu_of_the_pieces_nor_its_warning(
    bpe_prepared, bpe_checkpoint, tmp_path
):
    completed = run_evaluate(
        *("--data", bpe_prepared / "data-bin", "--out-dir", tmp_path),
        *("--model", f"rnnsearch={bpe_checkpoint}", "--beam", 2, "--max-len-b", 12),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "BLEU4" not in completed.stderr and "WARNING" not in completed.stderr


def test_help_starts_with_what_the_command_does():
    completed = evaluate_in_this_process("--help")
    assert completed.returncode == 0
    description = completed.stdout.split("\n\n")[1]  # after the usage
    assert description.startswith("Translates a binarized test set with each checkpoint")


def test_help_says_no_unk_is_scored_on_a_second_decoding_without_unk():
    help_text = " ".join(evaluate_in_this_process("--help").stdout.split())
    assert "No UNK is scored on a second decoding of the split in which the models may not " in (
        help_text
    )
    assert "generate <unk> (--unkpen inf): every sentence is translated twice" in help_text


@pytest.fixture(scope="module")
def evaluation_of_empty_sources(test_set_with_empty_sources, checkpoints, tmp_path_factory):
    """bahdanau-evaluate, without --replace-unk, on a test set with empty sources and no source
    text beside its binaries: the finished command and its output folder."""
    out = tmp_path_factory.mktemp("empty-sources")
    completed = evaluate_in_this_process(
        *("--data", test_set_with_empty_sources / "data-bin", "--out-dir", out),
        *("--model", f"rnnsearch={checkpoints['rnnsearch_50']}", "--beam", 2, "--max-len-b", 6),
    )
    return completed, out


def test_without_replace_unk_a_data_bin_without_its_source_text_is_evaluated(
    evaluation_of_empty_sources,
):
    completed, _ = evaluation_of_empty_sources
    assert completed.returncode == 0, completed.stderr[-3000:]


def test_an_empty_source_is_translated_as_empty_as_with_replace_unk(evaluation_of_empty_sources):
    _, out = evaluation_of_empty_sources
    translations = (out / "rnnsearch" / "test.hyp").read_text(encoding="utf-8").splitlines()
    empty = [translations[sentence] for sentence in EMPTY_SOURCES]
    others = [line for sentence, line in enumerate(translations) if sentence not in EMPTY_SOURCES]
    assert empty == ["", ""] and all(others)


def test_a_sentence_over_fairseqs_default_limit_of_1024_tokens_is_translated_and_drawn(
    test_set_with_a_long_sentence, checkpoints, tmp_path
):
    """fairseq's translation task stopped at it in a traceback, after the inputs were checked."""
    completed = evaluate_in_this_process(
        *("--data", test_set_with_a_long_sentence / "data-bin", "--out-dir", tmp_path),
        *("--model", f"rnnsearch={checkpoints['rnnsearch_50']}", "--beam", 2, "--max-len-b", 6),
        *("--heatmaps", LONG_SENTENCE),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    translations = (tmp_path / "rnnsearch" / "test.hyp").read_text(encoding="utf-8")
    assert len(translations.splitlines()) == TEST_SENTENCES
    assert_png(tmp_path / "heatmaps" / "rnnsearch" / f"sentence_{LONG_SENTENCE}.png")


def test_a_bpe_data_bin_away_from_its_codes_is_refused_before_anything_is_translated(
    bpe_prepared, bpe_checkpoint, tmp_path
):
    """Run as the user runs the command: how its errors reach the user (one line, no traceback,
    an exit status that says it failed); the other checks of its input run its main here."""
    moved = tmp_path / "moved" / "data-bin"
    shutil.copytree(bpe_prepared / "data-bin", moved)
    completed = run_evaluate(
        *("--data", moved, "--out-dir", tmp_path / "out", "--model", f"m={bpe_checkpoint}")
    )
    assert completed.returncode != 0
    assert completed.stderr.strip().splitlines()[-1] == (
        f"error: the data-bin {moved} holds BPE units (entries of {moved / 'dict.fr.txt'} end in "
        f"@@), and no BPE codes were found at {tmp_path / 'moved' / 'bpe.codes'}: give the codes "
        "it was segmented with, --bpe-codes (bahdanau-prepare-data writes OUT/bpe.codes)"
    )
    assert not (tmp_path / "out" / "m").exists()


# references in another order, by the folder of the prepared data they come from and the option
# that takes them: what the error says of line 1
REVERSED_REFERENCES = {
    "tokenized": ("tok", "--tokenized-references", "is not the reference of sentence 0 of the"),
    "untokenized": ("raw", "--references", "is not the sentence of line 1 of --tokenized-ref"),
}


@pytest.mark.parametrize(
    "folder, option, what", REVERSED_REFERENCES.values(), ids=REVERSED_REFERENCES.keys()
)
def test_references_in_another_order_are_refused_before_anything_is_translated(
    folder, option, what, prepared_test_set, checkpoints, tmp_path
):
    """BLEU, tokenized or detokenized, would score each translation against another sentence's
    reference."""
    references = (prepared_test_set / folder / "test.fr").read_text(encoding="utf-8").splitlines()
    reversed_order = tmp_path / "reversed.fr"
    reversed_order.write_text("".join(line + "\n" for line in references[::-1]), encoding="utf-8")
    completed = evaluate_in_this_process(
        *("--data", prepared_test_set / "data-bin", "--out-dir", tmp_path / "out"),
        *("--model", f"m={checkpoints['rnnsearch_50']}", option, reversed_order),
    )
    assert completed.returncode != 0
    last_line = completed.stderr.strip().splitlines()[-1]
    assert last_line.startswith(f"error: line 1 of {option} {reversed_order} {what}")
    assert not (tmp_path / "out" / "m").exists()


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--references", "{short}"], "has 1 lines but the test set has 13 sentences"),
        (["--heatmaps", "13"], "the test set has sentences 0 to 12"),
        (["--subset", "valid"], "valid.en-fr.en.bin or"),
        (["--references", "{latin1}"], "latin1.fr is not UTF-8 text: line 13, byte 2 is 0xe9"),
        (["--model", "m/={checkpoint}"], "model name 'm/' is not a folder name"),
        (["--model", "M={checkpoint}"], "model names 'm' and 'M' differ only in case"),
    ],
)
def test_bad_input_is_one_line_that_says_what_to_do(
    prepared_test_set, checkpoints, tmp_path, arguments, message
):
    short, latin1 = tmp_path / "short.fr", tmp_path / "latin1.fr"
    short.write_text("une ligne\n", encoding="utf-8")
    latin1.write_bytes("une ligne\n".encode("latin-1") * 12 + "déjà\n".encode("latin-1"))
    completed = evaluate_in_this_process(
        "--data",
        prepared_test_set / "data-bin",
        "--out-dir",
        tmp_path / "out",
        "--model",
        f"m={checkpoints['rnnsearch_50']}",
        *[
            argument.format(short=short, latin1=latin1, checkpoint=checkpoints["rnnsearch_50"])
            for argument in arguments
        ],
    )
    assert completed.returncode != 0
    assert completed.stderr.strip().splitlines()[-1].startswith("error: ")
    assert message in completed.stderr
    assert "Traceback" not in completed.stderr


def test_translations_cut_at_max_len_b_are_counted_in_a_warning(
    prepared_test_set, checkpoints, tmp_path
):
    """fairseq-generate ends a translation at --max-len-b tokens, finished or not: those cut short
    were scored without a word, lower, the longest sentences' most (Figure 2's last buckets)."""
    completed = evaluate_in_this_process(
        *("--data", prepared_test_set / "data-bin", "--out-dir", tmp_path),
        *("--model", f"rnnsearch={checkpoints['rnnsearch_50']}", "--beam", 2, "--max-len-b", 1),
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert re.search(
        rf"^warning: rnnsearch: [1-9]\d* of {TEST_SENTENCES} translations scored reached "
        r"--max-len-b 1 tokens, where fairseq-generate ends a translation, finished or not "
        r"\(first: sentence \d+\): .*; raise --max-len-b$",
        completed.stderr,
        flags=re.M,
    )
