"""BLEU on All and No UNK sentences is sacrebleu's, on the detokenized translations and the
references."""

import json
import logging
import subprocess
import sys

import pytest

from bahdanau_tools.evaluation.bleu import TOKENIZED, corpus_bleu

from ...support.demo_data import UNKNOWN_WORDS
from .conftest import MODELS


def sacrebleu_command_line(references, hypotheses, tmp_path, tokenize="13a", smooth="exp") -> dict:
    """What the sacrebleu command prints (JSON, 6 decimals) for these lines."""
    files = {}
    for name, lines in (("references", references), ("hypotheses", hypotheses)):
        files[name] = tmp_path / name
        files[name].write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "sacrebleu",
            str(files["references"]),
            "-i",
            str(files["hypotheses"]),
            "-m",
            "bleu",
            "-w",
            "6",
            "--tokenize",
            tokenize,
            "--smooth-method",
            smooth,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(completed.stdout)


def report(evaluation) -> dict:
    return json.loads((evaluation / "bleu.json").read_text(encoding="utf-8"))


def lines(path):
    return path.read_text(encoding="utf-8").splitlines()


def assert_same_score(ours: dict, theirs: dict) -> None:
    assert ours["bleu"] == pytest.approx(theirs["score"], abs=1e-6)
    assert ours["detail"].endswith(theirs["verbose_score"])
    assert ours["signature"] == theirs["signature"]


@pytest.mark.parametrize("model", sorted(MODELS))
def test_bleu_on_all_sentences_is_what_sacrebleu_computes_on_the_same_files(
    evaluation, prepared_test_set, model, tmp_path
):
    references = lines(prepared_test_set / "raw" / "test.fr")
    hypotheses = lines(evaluation / model / "test.hyp")
    ours = report(evaluation)["models"][model]["all"]
    assert ours["sentences"] == len(references)
    assert_same_score(ours, sacrebleu_command_line(references, hypotheses, tmp_path))


@pytest.mark.parametrize("model", sorted(MODELS))
def test_bleu_on_no_unk_is_what_sacrebleu_computes_on_those_sentences_translated_without_unk(
    evaluation, prepared_test_set, model, tmp_path
):
    ours = report(evaluation)["models"][model]["no_unk"]
    kept = ours["sentence_ids"]
    references = lines(prepared_test_set / "raw" / "test.fr")
    hypotheses = lines(evaluation / model / "test.no-unk.hyp")
    theirs = sacrebleu_command_line(
        [references[i] for i in kept], [hypotheses[i] for i in kept], tmp_path
    )
    assert_same_score(ours, theirs)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_tokenized_bleu_is_sacrebleu_without_its_tokenizer_or_smoothing_on_the_moses_tokens(
    evaluation, prepared_test_set, model, tmp_path
):
    references = lines(prepared_test_set / "tok" / "test.fr")
    hypotheses = lines(evaluation / model / "test.tok.hyp")
    ours = report(evaluation)["models"][model]["tokenized"]["all"]
    assert "tok:none|smooth:none" in ours["signature"]
    theirs = sacrebleu_command_line(references, hypotheses, tmp_path, "none", smooth="none")
    assert_same_score(ours, theirs)


def test_no_unk_holds_exactly_the_sentences_without_unknown_source_or_reference_words(
    evaluation, prepared_test_set
):
    sentences = len(lines(prepared_test_set / "raw" / "test.en"))
    for scores in report(evaluation)["models"].values():
        assert scores["no_unk"]["sentence_ids"] == [
            i for i in range(sentences) if i not in UNKNOWN_WORDS
        ]


def test_tokenized_bleu_is_zero_where_an_order_of_n_grams_has_no_match_as_multi_bleu_perl():
    """multi-bleu.perl, the paper's scorer, takes the log of each precision as -9999999999 where it
    is 0; sacrebleu's exponential smoothing gave these trigrams and 4-grams precisions of their
    own, and BLEU 10.72."""
    score = corpus_bleu(["a man is reading a book ."], ["a man reads the book ."], TOKENIZED)
    assert "/0.0/0.0 " in score.detail and score.bleu == 0.0


def test_bleu_of_no_sentence_is_none():
    assert corpus_bleu([], []).bleu is None


# 100 lines ending in a period split off, as Moses tokenizes them: what sacrebleu takes for text
# someone forgot to detokenize
TOKENIZED_LINES = ["un homme lit ."] * 100


def test_tokenized_bleu_does_not_warn_that_its_text_is_tokenized(caplog):
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        corpus_bleu(TOKENIZED_LINES, TOKENIZED_LINES, tokenize=TOKENIZED)
    assert caplog.records == []


def test_detokenized_bleu_still_warns_of_text_that_looks_tokenized(caplog):
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        corpus_bleu(TOKENIZED_LINES, TOKENIZED_LINES)
    assert "forgot to detokenize" in caplog.text
