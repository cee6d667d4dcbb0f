"""What fairseq's translating tools are made to do differently for these models
(bahdanau_plugin/models/inference_setup.py): generation options with which fairseq 0.12's beam
search fails after its first batch, or gives less than asked, are refused in one line."""

import pytest
from fairseq.dataclass.configs import FairseqConfig, GenerationConfig
from omegaconf import OmegaConf

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.models import inference_setup
from bahdanau_plugin.models.inference_setup import (
    refuse_more_hypotheses_than_the_search_keeps,
    refuse_what_fairseqs_search_cannot_do,
)


def generation(**options):
    return OmegaConf.structured(GenerationConfig(**options))


def test_fairseqs_default_generation_options_are_taken():
    refuse_what_fairseqs_search_cannot_do(generation())


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(nbest=5, beam=2), "--nbest 5 is over --beam 2: the search keeps 2 hypotheses"),
        (dict(max_len_a=0, max_len_b=0), "--max-len-a 0 --max-len-b 0 leaves translations"),
        (dict(diverse_beam_groups=2, beam=4), "--diverse-beam-groups fails in fairseq 0.12's"),
        (dict(retain_iter_history=True), "--retain-iter-history is for fairseq's iterative"),
        (dict(print_step=True), "--print-step prints the steps of fairseq's iterative"),
        (
            dict(match_source_len=True, min_len=2),
            "--min-len 2 does nothing beside --match-source-len, which gives each translation",
        ),
        (
            dict(sampling=True, match_source_len=True),
            "--sampling and --match-source-len each ask fairseq for a search of its own, and it "
            "runs one: give one of them",
        ),
        (
            dict(diversity_rate=0.5, constraints="ordered"),
            r"--diversity-rate 0.5 and --constraints each ask fairseq for a search of its own, "
            r"and it runs one \(only its plain beam search writes --constraints\)",
        ),
        (dict(sampling_topk=5), "--sampling-topk 5 limits the words --sampling draws from, and"),
        (dict(sampling_topp=0.5), "--sampling-topp 0.5 limits the words --sampling draws from"),
        (dict(temperature=0.0), "--temperature 0: fairseq divides the models' scores by it"),
        (
            dict(score_reference=True, print_alignment="soft"),
            "--print-alignment soft with --score-reference: fairseq scores the references with "
            "hard alignments only",
        ),
    ],
    ids=[
        "nbest-over-beam",
        "no-length",
        "diverse-beam-groups",
        "retain-iter-history",
        "print-step",
        "min-len-beside-match-source-len",
        "two-searches",
        "constraints-beside-another-search",
        "sampling-topk-without-sampling",
        "sampling-topp-without-sampling",
        "temperature-0",
        "soft-alignment-of-references",
    ],
)
def test_an_option_fairseqs_search_cannot_do_is_refused_saying_what_to_give(options, message):
    with pytest.raises(ConfigurationError, match=message):
        refuse_what_fairseqs_search_cannot_do(generation(**options))


@pytest.mark.parametrize(
    "options",
    [
        dict(nbest=5, beam=5),
        dict(max_len_a=0, max_len_b=1),
        dict(diversity_rate=0.5),
        dict(match_source_len=True),
        dict(sampling=True, sampling_topk=5, sampling_topp=0.5, beam=2, nbest=2),
        dict(constraints="ordered"),
        dict(temperature=0.5),
        dict(score_reference=True, print_alignment="hard"),
    ],
    ids=[
        "nbest-at-beam",
        "one-word",
        "diverse-siblings",
        "match-source-len",
        "sampling-within-the-top",
        "constraints",
        "temperature-under-1",
        "hard-alignment-of-references",
    ],
)
def test_the_options_next_to_the_refused_ones_are_taken(options):
    refuse_what_fairseqs_search_cannot_do(generation(**options))


def test_as_many_hypotheses_as_a_small_target_dictionary_keeps_are_taken():
    """fairseq's search keeps one hypothesis per target symbol but padding at most, whatever the
    beam (test_recurrent_translation holds the refusal of more)."""
    refuse_more_hypotheses_than_the_search_keeps(generation(beam=150, nbest=119), 120)


def translating(**options):
    """A translating tool's configuration, fairseq's defaults but the generation options."""
    return OmegaConf.structured(FairseqConfig(generation=GenerationConfig(**options)))


LANGUAGE_MODEL = dict(lm_path="lm/checkpoint_best.pt", lm_weight=0.2)


@pytest.mark.parametrize(
    "tool, options, message",
    [
        ("fairseq-generate", dict(lm_weight=0.2), "--lm-weight 0.2 weighs the scores of the"),
        (
            "fairseq-generate",
            dict(lm_path=LANGUAGE_MODEL["lm_path"]),
            "--lm-path without --lm-weight: the language model's scores are weighed by "
            "--lm-weight, 0 unless given, which adds nothing",
        ),
        (
            "fairseq-generate",
            dict(LANGUAGE_MODEL, score_reference=True),
            "--lm-path with --score-reference: fairseq scores the references with the "
            "translation models alone",
        ),
        (
            "fairseq-interactive",
            LANGUAGE_MODEL,
            "--lm-path: fairseq-generate alone adds a language model's scores, and "
            "fairseq-interactive would translate without it",
        ),
        (None, LANGUAGE_MODEL, "and the hub would translate without it"),
    ],
    ids=["weight-alone", "no-weight", "score-reference", "interactive", "hub"],
)
def test_a_language_model_nothing_would_read_is_refused_saying_what_to_give(
    tool, options, message, monkeypatch
):
    """fairseq-generate alone reads --lm-path, not for --score-reference, and weighs it by 0
    unless --lm-weight is given: the translations and scores were those without it, without a
    word."""
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: tool)
    with pytest.raises(ConfigurationError, match=message):
        inference_setup.apply(translating(**options), has_attention=True, target_symbols=20)


def test_a_weighed_language_model_is_taken_by_fairseq_generate(monkeypatch):
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: "fairseq-generate")
    inference_setup.apply(translating(**LANGUAGE_MODEL), has_attention=True, target_symbols=20)
