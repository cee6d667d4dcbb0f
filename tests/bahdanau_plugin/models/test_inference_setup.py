"""What fairseq's translating tools are made to do differently for these models
(bahdanau_plugin/models/inference_setup.py): generation options with which fairseq 0.12's beam
search fails after its first batch, or gives less than asked, are refused in one line;
fairseq-validate validates as it is asked, every sentence."""

import pytest
import torch
from fairseq.dataclass.configs import FairseqConfig, GenerationConfig
from omegaconf import OmegaConf

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.models import inference_setup
from bahdanau_plugin.models.inference_setup import (
    refuse_more_hypotheses_than_the_search_keeps,
    refuse_what_fairseqs_search_cannot_do,
)


from ...support.demo_data import TEST_SENTENCES
from ...support.models import build_tiny_model
from ...support.paths import PLUGIN
from ...support.tools import run


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


@pytest.mark.parametrize(
    "tool, message",
    [
        ("fairseq-interactive", "and fairseq-interactive has no reference and would translate"),
        (None, "and the hub has no reference and would translate without them"),
    ],
    ids=["interactive", "hub"],
)
def test_a_prefix_is_refused_where_no_reference_gives_one(tool, message, monkeypatch):
    """--prefix-size takes each translation's first tokens from its reference: fairseq-interactive
    and the hub translated as without it, without a word."""
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: tool)
    with pytest.raises(ConfigurationError, match=f"--prefix-size 2: .* {message}"):
        inference_setup.apply(translating(prefix_size=2), has_attention=True, target_symbols=20)


def test_a_prefix_is_taken_by_fairseq_generate(monkeypatch):
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: "fairseq-generate")
    inference_setup.apply(translating(prefix_size=2), has_attention=True, target_symbols=20)


def test_fairseq_interactive_refuses_a_soft_alignment_it_cannot_print(monkeypatch):
    """It prints source-target pairs: a soft alignment's rows of weights failed to unpack in a
    traceback, or a row of two weights (a line of one word) was printed as a pair."""
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: "fairseq-interactive")
    with pytest.raises(
        ConfigurationError, match="--print-alignment soft: fairseq-interactive prints alignments"
    ):
        inference_setup.apply(
            translating(print_alignment="soft"), has_attention=True, target_symbols=20
        )


@pytest.mark.parametrize(
    "tool, alignment", [("fairseq-generate", "soft"), ("fairseq-interactive", "hard")]
)
def test_a_soft_alignment_is_printed_by_fairseq_generate_a_hard_one_by_both(
    tool, alignment, monkeypatch
):
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: tool)
    inference_setup.apply(
        translating(print_alignment=alignment), has_attention=True, target_symbols=20
    )


@pytest.mark.parametrize("option", ["bf16", "memory_efficient_bf16"])
def test_fairseq_validate_given_bf16_validates_in_bfloat16_the_alignment_model_in_float32(
    option, monkeypatch
):
    """fairseq-validate converts the models for --fp16 alone (model.half()): its --bf16 computed
    the loss in float32 without a word."""
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: "fairseq-validate")
    model = build_tiny_model("rnnsearch")
    inference_setup.prepare_for_validation(model, None, {option: True})
    assert model.decoder.embed_tokens.weight.dtype == torch.bfloat16
    assert {parameter.dtype for parameter in model.decoder.attention.parameters()} == {
        torch.float32
    }


def test_another_program_loading_a_model_with_bf16_options_leaves_it_in_float32(monkeypatch):
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: "fairseq-generate")
    model = build_tiny_model("rnnsearch")
    inference_setup.prepare_for_validation(model, None, {"bf16": True})
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}


def test_fairseq_validate_validates_every_sentence_of_a_subset_not_a_multiple_of_8(
    data_bin, checkpoints
):
    """The demo's 13 test sentences in one batch of 13 at most: fairseq 0.12's batching under
    --required-batch-size-multiple 8 (its default) validated 8 of them."""
    log = run(
        "fairseq-validate", data_bin, "--user-dir", PLUGIN, "--path", checkpoints["rnnsearch_50"],
        "--task", "translation", "--valid-subset", "test", "--batch-size", TEST_SENTENCES, "--cpu",
    )  # fmt: skip
    validation = next(line for line in log.splitlines() if "valid on 'test' subset" in line)
    assert validation.split("| bsz ")[1].split()[0] == str(TEST_SENTENCES)
