"""The model side of the server, in this process: fairseq's hub interface, one batch per call."""

import pytest
import torch

from bahdanau_tools.serving.translator import Sentence, Translator, text_options

SHORT, LONG = "the dog sees a cat", "the blue free happy book watches a small man"


@pytest.fixture(scope="module")
def translator(serving_checkpoint, data_bin):
    return Translator.load(serving_checkpoint, data_bin, cpu=True, tokenizer="moses")


def sentence(translator, text, beam=5):
    return Sentence(tuple(translator.apply_bpe(translator.tokenize(text))), beam)


def test_a_sentence_translates_and_aligns_the_same_alone_and_beside_a_longer_one(translator):
    """fairseq pads the shorter source of a batch: its alignment must not show the padding."""
    (alone,) = translator.translate([sentence(translator, SHORT)])
    beside, _ = translator.translate([sentence(translator, SHORT), sentence(translator, LONG)])
    assert beside.source_words == alone.source_words
    assert beside.hypotheses[0].translation == alone.hypotheses[0].translation
    assert torch.allclose(
        torch.tensor(beside.hypotheses[0].alignment),
        torch.tensor(alone.hypotheses[0].alignment),
        atol=1e-5,
    )


def test_the_model_is_probed_for_attention(translator):
    assert translator.has_alignment and translator.architecture == "rnnsearch_50"


def test_the_languages_default_to_those_of_the_data_folder(data_bin):
    assert text_options(data_bin, tokenizer="moses") == {
        "source_lang": "en",
        "target_lang": "fr",
        "tokenizer": "moses",
    }
