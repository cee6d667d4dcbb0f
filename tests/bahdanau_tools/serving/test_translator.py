"""The model side of the server, in this process: fairseq's hub interface, one batch per call."""

import pytest
import torch

from bahdanau_plugin.errors import CheckpointError, ConfigurationError
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


@pytest.mark.parametrize("word", ["</s>", "<pad>", "<s>"])
def test_a_control_symbol_typed_as_a_word_is_translated_as_an_unknown_word(translator, word):
    """Not as an end of sentence, or padding, in the middle of the source. The tokens as
    bahdanau-serve without --tokenizer moses (which writes < as &lt;) hands them to the model."""
    typed = "the dog {} sees a cat"
    (control,) = translator.translate([Sentence(tuple(typed.format(word).split()), 5)])
    (unknown,) = translator.translate([Sentence(tuple(typed.format("zyzzyva").split()), 5)])
    assert control.source_words == ["the", "dog", word, "sees", "a", "cat", "<end>"]
    assert control.hypotheses == unknown.hypotheses


def test_the_model_is_probed_for_attention(translator):
    assert translator.has_alignment and translator.architecture == "rnnsearch_50"


def test_the_languages_default_to_those_of_the_data_folder(data_bin):
    assert text_options(data_bin, tokenizer="moses") == {
        "source_lang": "en",
        "target_lang": "fr",
        "tokenizer": "moses",
    }


def test_a_data_bin_of_bpe_units_without_bpe_is_refused_naming_the_options(
    bpe_checkpoint, bpe_prepared
):
    """Its words would be read whole, most of them <unk>: the server translated them so."""
    data = bpe_prepared / "data-bin"
    with pytest.raises(ConfigurationError, match=f"the data-bin {data} holds BPE units .*--bpe "):
        Translator.load(bpe_checkpoint, data, cpu=True, tokenizer="moses")


def test_a_model_asked_for_the_other_direction_with_one_dictionary_is_refused(
    bpe_checkpoint, bpe_prepared
):
    """With joint BPE both languages share one dictionary, which the loading cannot tell apart:
    the en->fr server asked for fr->en read French sentences as English, without a word."""
    with pytest.raises(CheckpointError, match="translates en->fr, and this run fr->en "):
        Translator.load(
            bpe_checkpoint,
            bpe_prepared / "data-bin",
            cpu=True,
            tokenizer="moses",
            bpe="subword_nmt",
            bpe_codes=bpe_prepared / "bpe.codes",
            source_lang="fr",
            target_lang="en",
        )


def test_bpe_codes_for_a_data_bin_of_words_are_refused(serving_checkpoint, data_bin, bpe_prepared):
    """Every word split into pieces the dictionary lacks, <unk> each."""
    codes = bpe_prepared / "bpe.codes"
    with pytest.raises(ConfigurationError, match=f"--bpe-codes {codes} given, but the data-bin "):
        Translator.load(
            serving_checkpoint,
            data_bin,
            cpu=True,
            tokenizer="moses",
            bpe="subword_nmt",
            bpe_codes=codes,
        )


@pytest.mark.parametrize("lenpen, words", [(0, 1), (1, 3)])
def test_every_sentence_is_searched_with_the_length_limit_and_penalty_given(
    checkpoint_preferring_one_more_word, data_bin, lenpen, words
):
    """A model whose every step prefers one more word: ranked by the sum (--lenpen 0), the
    translation kept is the shortest; per token (1), the longest that --max-len-b allows (4
    tokens, <end> among them)."""
    translator = Translator.load(
        checkpoint_preferring_one_more_word,
        data_bin,
        cpu=True,
        search={"max_len_b": 4, "lenpen": lenpen},
    )
    (translation,) = translator.translate([Sentence(("the", "dog"), 3)])
    assert len(translation.hypotheses[0].target_words) == words + 1  # and <end>
