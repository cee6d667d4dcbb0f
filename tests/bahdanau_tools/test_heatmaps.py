"""Figure 3 heatmaps are for people: words rather than BPE pieces, a grayscale, a colour bar."""

import pytest

from bahdanau_tools import heatmaps
from bahdanau_tools.figures import LONGEST_SIDE
from bahdanau_tools.heatmaps import (
    NothingToDraw,
    alignment_heatmaps,
    draw_alignment,
    save_heatmap,
    source_pieces,
)
from bahdanau_tools.hub import load_translator
from bahdanau_tools.search_options import FAIRSEQS
from bahdanau_tools.words import merge_subwords

from ..support.png import assert_png, png_size
from ..support.words import SOURCE, TARGET, TARGET_WORDS, attention

SEARCH = {"beam": 5, **FAIRSEQS}


def test_heatmap_has_one_grayscale_cell_per_target_and_source_word_and_a_colour_bar():
    source, target, alpha = merge_subwords(SOURCE, TARGET, attention(len(TARGET), len(SOURCE)))
    figure = draw_alignment(source, target, alpha)
    heatmap, colour_bar = figure.axes
    (cells,) = heatmap.collections
    assert cells.get_array().shape == (len(target), len(source))
    assert cells.get_cmap().name == "gray" and cells.get_clim() == (0.0, 1.0)
    assert [label.get_text() for label in heatmap.get_xticklabels()] == source
    assert colour_bar.get_ylabel() == "alpha"


def test_words_with_dollar_signs_are_labels_as_written_not_mathematics(tmp_path):
    source, target = ["$x$", "costs", "$^$", "<end>"], ["a_b", "$5$", "<end>"]
    figure = draw_alignment(source, target, attention(len(target), len(source)))
    heatmap = figure.axes[0]
    labels = heatmap.get_xticklabels() + heatmap.get_yticklabels()
    assert [label.get_text() for label in labels] == source + target
    assert not any(label.get_parse_math() for label in labels)


def test_heatmap_is_written_as_png(tmp_path):
    path = tmp_path / "alignment.png"
    assert save_heatmap(SOURCE, TARGET, attention(len(TARGET), len(SOURCE)), path) == TARGET_WORDS
    assert_png(path)


def test_the_heatmap_of_a_sentence_of_hundreds_of_words_is_written_whole_within_the_pixel_limit(
    tmp_path,
):
    source, target = [f"w{i}" for i in range(400)], ["a", "b", "<end>"]
    path = tmp_path / "alignment.png"
    save_heatmap(source, target, attention(len(target), len(source)), path)
    width, height = png_size(path)
    assert LONGEST_SIDE * 0.9 < width <= LONGEST_SIDE and height < width  # 20,975 at 120 dpi


def test_a_sentence_without_a_word_is_refused_before_any_is_translated(checkpoints, data_bin):
    translator = load_translator(checkpoints["rnnsearch_50"], data_bin, tokenizer="moses")
    with pytest.raises(NothingToDraw, match="sentence 2 has no word to translate"):
        source_pieces(translator, ["the dog sees a cat", " \u0001 "])


def test_a_sentence_of_format_characters_alone_is_refused_as_one_without_a_word(
    checkpoints, data_bin
):
    """The tokenizer keeps U+200B, and the model would translate it from <unk> alone."""
    translator = load_translator(checkpoints["rnnsearch_50"], data_bin, tokenizer="moses")
    with pytest.raises(NothingToDraw, match="sentence 1 has no word to translate"):
        source_pieces(translator, ["\u200b \u200e", "the dog sees a cat"])


def test_a_sentence_longer_than_the_model_takes_is_refused_naming_it(checkpoints, data_bin):
    translator = load_translator(checkpoints["rnnsearch_50"], data_bin, tokenizer="moses")
    with pytest.raises(NothingToDraw, match="sentence 1 has 1,100 tokens .* over the 1,023"):
        source_pieces(translator, [" ".join(["dog"] * 1100), "the dog sees a cat"])


def test_the_source_axis_holds_the_pieces_as_read_so_a_piece_the_dictionary_lacks_stays_one_word(
    bpe_checkpoint, bpe_prepared, tmp_path, monkeypatch
):
    drawn = []
    monkeypatch.setattr(heatmaps, "save_heatmap", lambda source, *rest: drawn.append(source) or [])
    options = dict(tokenizer="moses", bpe="subword_nmt", bpe_codes=str(bpe_prepared / "bpe.codes"))
    alignment_heatmaps(
        bpe_checkpoint, bpe_prepared / "data-bin", ["the Ωmega"], tmp_path, SEARCH, **options
    )
    translator = load_translator(bpe_checkpoint, bpe_prepared / "data-bin", **options)
    pieces = translator.apply_bpe(translator.tokenize("the Ωmega")).split()
    unknown = translator.src_dict.unk()
    assert any(translator.src_dict.index(piece) == unknown for piece in pieces)  # the case
    assert drawn == [pieces + ["<end>"]] and translator.src_dict.unk_word not in drawn[0]


def test_a_word_moses_splits_at_its_dash_is_one_label_as_the_detokenized_text_has_it(
    checkpoints, data_bin, tmp_path, monkeypatch
):
    drawn = []
    monkeypatch.setattr(
        heatmaps,
        "draw_alignment",
        lambda source, *rest: drawn.append(source) or draw_alignment(source, *rest),
    )
    alignment_heatmaps(
        checkpoints["rnnsearch_50"], data_bin, ["a t-shirt"], tmp_path, SEARCH, tokenizer="moses"
    )
    assert drawn == [["a", "t-shirt", "<end>"]]
