"""The labels of bahdanau-evaluate's heatmaps (Figure 3) are the words the evaluation reads: the
source text beside the binaries, where a word the dictionary lacks is written out, and the
translation, with the words --replace-unk put in place of <unk>."""

import pytest

from bahdanau_plugin.unknown_words import source_text_path
from bahdanau_tools import heatmaps
from bahdanau_tools.evaluation.command_line import evaluate, evaluation_parser

from ...support.demo_data import UNKNOWN_WORDS

pytestmark = pytest.mark.long  # run first: tests/conftest.py

# the test sentences whose source has a word the dictionary lacks
UNKNOWN_SOURCE_WORDS = {sentence: words[0] for sentence, words in UNKNOWN_WORDS.items() if words[0]}


@pytest.fixture(scope="module")
def labels(prepared_test_set, checkpoint_preferring_unk, tmp_path_factory):
    """sentence -> (source labels, target labels) of the heatmaps bahdanau-evaluate --replace-unk
    draws, for a model that writes <unk> wherever it may, of the sentences with an unknown source
    word."""
    drawn = []
    draw_alignment = heatmaps.draw_alignment

    def record(source, target, alpha):
        drawn.append((source, target))
        return draw_alignment(source, target, alpha)

    arguments = evaluation_parser().parse_args(
        [
            *("--data", str(prepared_test_set / "data-bin")),
            *("--out-dir", str(tmp_path_factory.mktemp("heatmap-labels"))),
            *("--model", f"m={checkpoint_preferring_unk}", "--beam", "2", "--max-len-b", "6"),
            *("--replace-unk", "--heatmaps", *map(str, UNKNOWN_SOURCE_WORDS)),
        ]
    )
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(heatmaps, "draw_alignment", record)
        evaluate(arguments)
    return dict(zip(UNKNOWN_SOURCE_WORDS, drawn))


def source_text(prepared_test_set):
    text = source_text_path(prepared_test_set / "data-bin", "test", "en", "fr")
    return text.read_text(encoding="utf-8").splitlines()


def test_the_source_axis_holds_the_words_of_the_source_text_not_unk(labels, prepared_test_set):
    lines = source_text(prepared_test_set)
    for sentence, word in UNKNOWN_SOURCE_WORDS.items():
        source, _ = labels[sentence]
        assert source == lines[sentence].split() + ["<end>"] and word in source


def test_with_replace_unk_the_target_axis_holds_the_replacing_words_not_unk(
    labels, prepared_test_set
):
    lines = source_text(prepared_test_set)
    for sentence, (_, target) in labels.items():
        assert target[-1] == "<end>" and target[:-1] and "<unk>" not in target
        # each <unk> the model wrote, copied from the source (no dictionary given)
        assert set(target[:-1]) <= set(lines[sentence].split())
