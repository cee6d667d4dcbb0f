"""Figure 3 of the paper: the soft alignment alpha_ij of one translation, as a grayscale heatmap.

Heatmaps are for people, so the labels are words (words.py): BPE pieces merged back into words,
Moses' tokens detokenized. bahdanau-plot-alignment and bahdanau-evaluate draw them alike
(draw_translation).
"""

import re
from pathlib import Path
from typing import List, Sequence

import torch

from bahdanau_plugin.errors import PluginError
from bahdanau_plugin.tasks.translation_with_source_words import registered_name
from bahdanau_plugin.unicode_form import holds_a_word

from .alignment import END_OF_SENTENCE, NoAttentionError, translate_with_alignment
from .figures import pyplot, save_png
from .hub import load_translator
from .words import merge_subwords


class NothingToDraw(PluginError):
    """A sentence the model cannot translate as given: without a word, or too long."""


def draw_alignment(source: Sequence[str], target: Sequence[str], alpha: torch.Tensor):
    """Source words along the top, target words down the side; 0 is black and 1 is white."""
    plt = pyplot()
    width = 1.5 + 0.45 * len(source)
    height = 1.5 + 0.4 * len(target)
    figure, axes = plt.subplots(figsize=(width, height))
    # a mesh of cells, not imshow, which resamples alpha to the PNG's pixels in floats: a long
    # sentence's heatmap in a fifth of imshow's time and a sixth of its memory (docs/decoding.md)
    columns, rows = ([i - 0.5 for i in range(n + 1)] for n in (len(source), len(target)))
    image = axes.pcolormesh(columns, rows, alpha.numpy(), cmap="gray", vmin=0.0, vmax=1.0)
    axes.set_aspect("equal")
    axes.invert_yaxis()  # the first target word on top, as read
    # words as written: a word with two $ would otherwise be read as mathematics, and drawn as
    # such, or end the drawing in matplotlib's parse error
    axes.set_xticks(range(len(source)), labels=source, rotation=90, parse_math=False)
    axes.set_yticks(range(len(target)), labels=target, parse_math=False)
    axes.xaxis.tick_top()
    figure.colorbar(image, ax=axes, fraction=0.04, pad=0.02, label="alpha")
    figure.tight_layout()
    return figure


def save_heatmap(
    source: Sequence[str], target: Sequence[str], alpha: torch.Tensor, path: Path
) -> List[str]:
    """Draw the alignment of BPE or word tokens, labelled with words, as a PNG; return the
    target words, end of sentence included."""
    source_words, target_words, word_alpha = merge_subwords(source, target, alpha)
    save_png(draw_alignment(source_words, target_words, word_alpha), path)
    return target_words


def source_pieces(translator, sentences: List[str]) -> List[List[str]]:
    """Each sentence's tokens, tokenized and BPE'd as the model reads them, all checked before
    any is translated: one without a word, or longer than the model takes, is an error naming it."""
    pieces = [translator.apply_bpe(translator.tokenize(text)).split() for text in sentences]
    longest = translator.max_positions[0] - 1  # the end of sentence is a position too
    for number, tokens in enumerate(pieces, start=1):
        if not holds_a_word(tokens):  # nothing, or format characters alone (U+200B)
            raise NothingToDraw(
                f"sentence {number} has no word to translate ({sentences[number - 1]!r}): "
                "give each sentence words"
            )
        if len(tokens) > longest:
            raise NothingToDraw(
                f"sentence {number} has {len(tokens):,} tokens after tokenization and BPE, "
                f"over the {longest:,} the model takes: split it into shorter sentences"
            )
    return pieces


def source_ids(translator, tokens: Sequence[str]) -> torch.Tensor:
    """tokens (tokenized, BPE applied) binarized for the model. A translator that replaces unknown
    words first gives those its dictionary lacks ids of their own, which the model reads as <unk>,
    so that its translation can copy them as fairseq-generate's --replace-unk does."""
    line = " ".join(tokens)
    if translator.task.replaces_unknown_words:
        translator.task.keep_source_words([line])
    return translator.binarize(line)


def draw_translation(translator, tokens: List[str], path: Path, **search) -> List[str]:
    """Translate tokens (tokenized, BPE applied) and draw the alignment as a PNG; return the
    translation's tokens, end of sentence included. The source is labelled with the tokens as
    given, not the dictionary's symbols: <unk> would lose a piece's @@ and split its word; the
    target with the translation's tokens, the words that replaced <unk> included. search: beam,
    max_len_b, lenpen."""
    target, alpha = translate_with_alignment(translator, source_ids(translator, tokens), **search)
    save_heatmap(tokens + [END_OF_SENTENCE], target, alpha, path)
    return target


def translation_text(translator, target: Sequence[str]) -> str:
    """The translation's tokens (end of sentence included) as text, as the hub's translate() and
    fairseq-interactive's D- line give it: BPE removed, then detokenized."""
    return translator.detokenize(translator.remove_bpe(" ".join(target[:-1])))


# figure_path's names, and the number of their sentence
FIGURE_NAME = re.compile(r"alignment_([1-9][0-9]*)\.png")


def figure_path(out_dir: Path, number: int) -> Path:
    """Where bahdanau-plot-alignment draws the heatmap of its sentence number (from 1)."""
    return out_dir / f"alignment_{number}.png"


def remove_earlier_figures(out_dir: Path, drawn: int) -> None:
    """The heatmaps an earlier run drew into out_dir for sentences past the drawn ones of this
    run: they would pass for this run's, numbered after its own. Called once this run's are drawn,
    so that a run that fails leaves them; files under other names than figure_path's stay."""
    for path in out_dir.iterdir():
        name = FIGURE_NAME.fullmatch(path.name)
        if name is not None and int(name[1]) > drawn and path.is_file():
            path.unlink()


def check_attends(translator, checkpoint: Path) -> None:
    """bahdanau-plot-alignment draws the model's attention: a model of the plugin without any
    (RNNencdec) is refused as soon as it is loaded, saying what to give instead, not once the first
    sentence is translated. A model of fairseq's own returns none to the hub either: translating
    says so (NoAttentionError, which bahdanau-evaluate prints as it skips a model's heatmaps)."""
    for model in translator.models:
        if getattr(model, "has_attention", True) is False:
            raise NoAttentionError(
                f"--checkpoint {checkpoint} holds an {registered_name(model)} model, which has no "
                "attention to draw (it translates from one fixed context): give an RNNsearch "
                "checkpoint"
            )


def alignment_heatmaps(
    checkpoint: Path, data: Path, sentences: List[str], out_dir: Path, search: dict, **options
):
    """bahdanau-plot-alignment's heatmaps, each sentence translated with search (beam, max_len_b,
    lenpen) by the checkpoint loaded with options (from_pretrained's): (path, translation) each."""
    translator = load_translator(checkpoint, data, **options)
    check_attends(translator, checkpoint)
    translator.eval()
    paths = []
    for number, tokens in enumerate(source_pieces(translator, sentences), start=1):
        path = figure_path(out_dir, number)
        target = draw_translation(translator, tokens, path, **search)
        paths.append((path, translation_text(translator, target)))
    return paths
