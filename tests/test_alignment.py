"""Figure 3 heatmaps are for people: words rather than BPE pieces, Moses escapes undone, a colour bar."""

import torch

from bahdanau_tools.alignment import (
    END_OF_SENTENCE,
    draw_alignment,
    merge_subwords,
    save_heatmap,
    soft_alignment,
)

from .png import assert_png

SOURCE = ["the", "ter@@", "ri@@", "er", "&apos;s", "chew", "@-@", "bone", END_OF_SENTENCE]
TARGET = ["l&apos;", "o@@", "s", "du", "ter@@", "rier", END_OF_SENTENCE]
SOURCE_WORDS = ["the", "terrier", "'s", "chew", "-", "bone", END_OF_SENTENCE]
TARGET_WORDS = ["l'", "os", "du", "terrier", END_OF_SENTENCE]


def attention(rows: int, columns: int) -> torch.Tensor:
    return torch.softmax(
        torch.randn(rows, columns, generator=torch.Generator().manual_seed(0)), dim=1
    )


def test_bpe_pieces_become_words_on_both_axes():
    source, target, _ = merge_subwords(SOURCE, TARGET, attention(len(TARGET), len(SOURCE)))
    assert (source[1], target[1], target[3]) == ("terrier", "os", "terrier")
    assert (len(source), len(target)) == (len(SOURCE_WORDS), len(TARGET_WORDS))


def test_moses_escapes_are_undone_in_the_labels():
    source, target, _ = merge_subwords(SOURCE, TARGET, attention(len(TARGET), len(SOURCE)))
    assert (source, target) == (SOURCE_WORDS, TARGET_WORDS)
    assert (source[2], source[4], target[0]) == ("'s", "-", "l'")


def test_source_pieces_add_up_and_target_pieces_average_so_rows_still_sum_to_one():
    alpha = attention(len(TARGET), len(SOURCE))
    _, _, merged = merge_subwords(SOURCE, TARGET, alpha)
    assert merged.shape == (len(TARGET_WORDS), len(SOURCE_WORDS))
    assert torch.allclose(merged.sum(dim=1), torch.ones(len(TARGET_WORDS)))
    # "os" (target pieces 1-2) attending to "terrier" (source pieces 1-3)
    assert torch.isclose(merged[1, 1], alpha[1:3, 1:4].sum(dim=1).mean())


def test_heatmap_has_one_grayscale_cell_per_target_and_source_word_and_a_colour_bar():
    source, target, alpha = merge_subwords(SOURCE, TARGET, attention(len(TARGET), len(SOURCE)))
    figure = draw_alignment(source, target, alpha)
    heatmap, colour_bar = figure.axes
    image = heatmap.images[0]
    assert image.get_array().shape == (len(target), len(source))
    assert image.get_cmap().name == "gray" and image.get_clim() == (0.0, 1.0)
    assert [label.get_text() for label in heatmap.get_xticklabels()] == source
    assert colour_bar.get_ylabel() == "alpha"


def test_heatmap_is_written_as_png(tmp_path):
    path = tmp_path / "alignment.png"
    assert save_heatmap(SOURCE, TARGET, attention(len(TARGET), len(SOURCE)), path) == TARGET_WORDS
    assert_png(path)


def test_soft_alignment_drops_the_left_padding_of_a_batch_and_puts_target_words_on_rows():
    alpha = attention(4, 3)  # target x source
    padded = torch.cat(
        [torch.zeros(2, 4), alpha.t()]
    )  # fairseq's source x target, two padding columns first
    assert torch.equal(soft_alignment({"attention": padded}, source_length=3), alpha)


def test_soft_alignment_is_none_for_a_model_without_attention():
    assert soft_alignment({"attention": torch.empty(0)}, source_length=3) is None
