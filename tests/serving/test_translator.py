"""The model side of the server, in this process: fairseq's hub interface, one batch per call."""

import pytest
import torch

from bahdanau_plugin.errors import PluginError
from bahdanau_tools.serving.translator import Sentence, SentenceTooLong, Translator, text_options

SHORT, LONG = "the dog sees a cat", "the blue free happy book watches a small man"


@pytest.fixture(scope="module")
def translator(serving_checkpoint, data_bin):
    return Translator.load(serving_checkpoint, data_bin, cpu=True, tokenizer="moses")


def test_a_sentence_translates_and_aligns_the_same_alone_and_beside_a_longer_one(translator):
    """fairseq pads the shorter source of a batch: its alignment must not show the padding."""
    (alone,) = translator.translate([Sentence(SHORT, beam=5)])
    beside, _ = translator.translate([Sentence(SHORT, beam=5), Sentence(LONG, beam=5)])
    assert beside.source_words == alone.source_words
    assert beside.hypotheses[0].translation == alone.hypotheses[0].translation
    assert torch.allclose(
        torch.tensor(beside.hypotheses[0].alignment),
        torch.tensor(alone.hypotheses[0].alignment),
        atol=1e-5,
    )


def test_a_sentence_over_the_limit_is_refused_and_the_rest_of_its_batch_translated(translator):
    limited = Translator(translator.hub, max_source_tokens=5)
    short, long = limited.translate([Sentence(SHORT, beam=2), Sentence(LONG, beam=2)])
    assert short.hypotheses[0].translation
    assert isinstance(long, SentenceTooLong) and isinstance(long, PluginError)
    assert "9 tokens" in str(long) and "limit of 5" in str(long)


def test_the_model_is_probed_for_attention(translator):
    assert translator.has_alignment and translator.architecture == "rnnsearch_50"


def test_the_languages_default_to_those_of_the_data_folder(data_bin):
    assert text_options(data_bin, tokenizer="moses") == {
        "source_lang": "en",
        "target_lang": "fr",
        "tokenizer": "moses",
    }
