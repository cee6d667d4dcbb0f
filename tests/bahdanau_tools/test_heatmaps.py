"""Figure 3 heatmaps are for people: words rather than BPE pieces, a grayscale, a colour bar."""

from bahdanau_tools.heatmaps import draw_alignment, save_heatmap
from bahdanau_tools.words import merge_subwords

from ..support.png import assert_png
from ..support.words import SOURCE, TARGET, TARGET_WORDS, attention


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
