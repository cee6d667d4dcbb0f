"""Figure 2: BLEU by source length, one CSV row per model and bucket, one plotted line per model."""

import pytest
from sacrebleu.metrics import BLEU

from bahdanau_tools.evaluation.length_buckets import (
    Bucket,
    draw_bleu_by_length,
    length_buckets,
    read_csv,
)

from ...support.demo_data import TEST_SENTENCES
from ...support.png import assert_png
from .conftest import MIN_BUCKET_SENTENCES, MODELS


def test_buckets_have_the_given_width_and_the_longest_sentences_share_an_open_last_one():
    lengths = [3, 8, 12, 15, 19, 24, 37, 52]
    assert length_buckets(lengths, width=10, min_sentences=2) == [
        Bucket(0, 10),
        Bucket(11, 20),
        Bucket(21, None),
    ]


def test_a_bucket_with_too_few_sentences_takes_in_the_next_width():
    assert length_buckets([2, 4, 7, 12, 25, 27], width=5, min_sentences=2) == [
        Bucket(0, 5),
        Bucket(6, 15),
        Bucket(16, None),
    ]


def test_a_closed_last_bucket_reaches_the_longest_sentence():
    assert length_buckets([3, 8, 12, 15], width=10, min_sentences=2) == [
        Bucket(0, 10),
        Bucket(11, 20),
    ]


def test_sources_all_empty_share_one_bucket():
    assert length_buckets([0, 0, 0], width=10, min_sentences=2) == [Bucket(0, 10)]


def test_csv_has_one_row_per_model_and_bucket(evaluation):
    rows = read_csv(evaluation / "bleu_by_length.csv")
    buckets = {row.bucket for row in rows}
    assert len(buckets) > 1
    assert sorted((row.model, row.bucket) for row in rows) == sorted(
        (model, bucket) for model in MODELS for bucket in buckets
    )
    assert all(row.sentences >= MIN_BUCKET_SENTENCES for row in rows)
    assert sum(row.sentences for row in rows if row.model == "rnnsearch") == TEST_SENTENCES


def test_bucket_bleu_is_what_sacrebleu_computes_on_the_bucket_sentences(
    evaluation, prepared_test_set
):
    references = (prepared_test_set / "raw" / "test.fr").read_text(encoding="utf-8").splitlines()
    sources = (prepared_test_set / "raw" / "test.en").read_text(encoding="utf-8").splitlines()
    for row in read_csv(evaluation / "bleu_by_length.csv"):
        hypotheses = (evaluation / row.model / "test.hyp").read_text(encoding="utf-8").splitlines()
        bucket = Bucket(row.min_words, row.max_words)
        members = [i for i, source in enumerate(sources) if bucket.holds(len(source.split()))]
        assert row.sentences == len(members)
        expected = BLEU().corpus_score(
            [hypotheses[i] for i in members], [[references[i] for i in members]]
        )
        assert row.detokenized_sacrebleu == pytest.approx(expected.score)


def sacrebleu_signature() -> str:
    """sacrebleu's signature of its BLEU with its defaults: detokenized, 13a."""
    metric = BLEU()
    metric.corpus_score(["a"], [["a"]])  # the signature comes once something is scored
    return str(metric.get_signature())


def test_csv_says_its_scores_are_detokenized_sacrebleu_with_their_signature(evaluation):
    header, first_row = (evaluation / "bleu_by_length.csv").read_text().splitlines()[:2]
    assert header.endswith(",detokenized_sacrebleu,signature")
    assert first_row.endswith(f",{sacrebleu_signature()}")


def test_plot_says_its_scores_are_detokenized_sacrebleu_with_their_signature(evaluation):
    axes = draw_bleu_by_length(read_csv(evaluation / "bleu_by_length.csv"), "title").axes[0]
    assert axes.get_ylabel() == "detokenized sacreBLEU"
    assert axes.get_title() == f"title\n{sacrebleu_signature()}"


def test_plot_is_a_png_with_one_line_per_model(evaluation):
    assert_png(evaluation / "bleu_by_length.png")
    figure = draw_bleu_by_length(read_csv(evaluation / "bleu_by_length.csv"))
    assert sorted(line.get_label() for line in figure.axes[0].get_lines()) == sorted(MODELS)
