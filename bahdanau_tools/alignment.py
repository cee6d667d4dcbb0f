"""Figure 3 of the paper: the soft alignment alpha_ij of one translation, as a grayscale heatmap.

Heatmaps are for people, so the labels are words: BPE pieces ("ter@@ rier") are merged back into
words and Moses escapes ("&apos;") are undone.
"""

import functools
import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import torch
from sacremoses import MosesDetokenizer

from bahdanau_plugin.errors import PluginError

from .figures import pyplot, save_png

END_OF_SENTENCE = "<end>"
SUBWORD_CONTINUES = "@@"  # subword-nmt's mark on every piece of a word but its last
MOSES_SPLIT_DASH = "@-@"  # "t-shirt" is tokenized "t @-@ shirt"


class NoAttentionError(PluginError):
    """The model returned no attention weights: RNNencdec, or a fairseq model such as `lstm`,
    which only computes them for generation when asked to print alignments."""


def ensemble_members(checkpoint: Path) -> List[Path]:
    """The checkpoints of an ensemble written as fairseq's --path takes it, A.pt:B.pt (or of one model)."""
    return [Path(member) for member in str(checkpoint).split(os.pathsep)]


def load_translator(checkpoint: Path, data: Path, **generation_options):
    """fairseq's hub interface for a trained model, or an ensemble written A.pt:B.pt (with
    tokenizer/bpe options if any)."""
    from fairseq.models import FairseqEncoderDecoderModel

    members = [str(member.resolve()) for member in ensemble_members(checkpoint)]
    return FairseqEncoderDecoderModel.from_pretrained(
        str(Path(members[0]).parent),
        checkpoint_file=os.pathsep.join(
            members
        ),  # absolute: from_pretrained joins them to the folder
        data_name_or_path=str(data),
        **generation_options,
    )


def symbols(dictionary, ids: torch.Tensor) -> List[str]:
    """The tokens of binarized ids that end with the end of sentence, which is written END_OF_SENTENCE."""
    return [dictionary[i] for i in ids[:-1].tolist()] + [END_OF_SENTENCE]


def soft_alignment(
    hypothesis, source_length: int, left_pad_source: bool = True
) -> Optional[torch.Tensor]:
    """alpha (target x source, end of sentence included on both axes) of one hypothesis of fairseq's
    generate(), or None when the model returned no attention.

    fairseq gives it as source x target, the source padded to the longest sentence of the batch
    (on the left by default, as --left-pad-source): the padding's columns are dropped."""
    alpha = hypothesis["attention"]  # fairseq leaves an empty tensor without attention
    if alpha is None or alpha.numel() == 0:
        return None
    padding = alpha.size(0) - source_length
    real = alpha[padding:] if left_pad_source else alpha[:source_length]
    return real.t().float().cpu()


def translate_with_alignment(
    translator, source_ids: torch.Tensor, beam: int = 5, max_len_b: int = 200
):
    """Returns (source tokens, target tokens, alpha: target x source), end-of-sentence included.

    source_ids are binarized, end of sentence included, as translator.encode returns them; the
    translation has at most max_len_b tokens, as with fairseq-generate's --max-len-b."""
    hypothesis = translator.generate([source_ids], beam=beam, max_len_b=max_len_b)[0][0]
    alpha = soft_alignment(hypothesis, len(source_ids))
    if alpha is None:
        raise NoAttentionError(
            "the model returned no attention to draw (RNNencdec has none: it translates from one fixed context)"
        )
    return (
        symbols(translator.src_dict, source_ids),
        symbols(translator.tgt_dict, hypothesis["tokens"]),
        alpha,
    )


def word_pieces(tokens: Sequence[str]) -> List[List[int]]:
    """The positions of each word's pieces: a piece ending in @@ continues into the next one."""
    words, pieces = [], []
    for position, token in enumerate(tokens):
        pieces.append(position)
        if not token.endswith(SUBWORD_CONTINUES):
            words.append(pieces)
            pieces = []
    if pieces:  # a last piece that still ends in @@ (an unfinished word) stands on its own
        words.append(pieces)
    return words


def _without_mark(piece: str) -> str:
    return piece[: -len(SUBWORD_CONTINUES)] if piece.endswith(SUBWORD_CONTINUES) else piece


@functools.lru_cache(maxsize=None)
def _moses_detokenizer() -> MosesDetokenizer:
    return MosesDetokenizer()


def readable_word(tokens: Sequence[str], pieces: Sequence[int]) -> str:
    """The word the pieces spell, with Moses' escapes undone: &apos; -> ', &amp; -> &, and the
    @-@ of its aggressive dash splitting -> -."""
    word = "".join(_without_mark(tokens[position]) for position in pieces)
    return _moses_detokenizer().unescape_xml(word).replace(MOSES_SPLIT_DASH, "-")


def readable_words(tokens: Sequence[str]) -> List[str]:
    """The words that BPE or word tokens spell, for people (readable_word)."""
    return [readable_word(tokens, pieces) for pieces in word_pieces(tokens)]


def merge_subwords(
    source: Sequence[str], target: Sequence[str], alpha: torch.Tensor
) -> Tuple[List[str], List[str], torch.Tensor]:
    """Words instead of BPE pieces on both axes of alpha (target x source).

    A source word receives the attention of all its pieces (columns summed), and a target word
    gets the mean distribution of its pieces (rows averaged): every row still sums to 1, as the
    softmax of Eq. (6) does, so the grayscale keeps its meaning."""
    by_source_word = torch.stack(
        [alpha[:, pieces].sum(dim=1) for pieces in word_pieces(source)], dim=1
    )
    by_word = torch.stack(
        [by_source_word[pieces].mean(dim=0) for pieces in word_pieces(target)], dim=0
    )
    return readable_words(source), readable_words(target), by_word


def draw_alignment(source: Sequence[str], target: Sequence[str], alpha: torch.Tensor):
    """Source words along the top, target words down the side; 0 is black and 1 is white."""
    plt = pyplot()
    width = 1.5 + 0.45 * len(source)
    height = 1.5 + 0.4 * len(target)
    figure, axes = plt.subplots(figsize=(width, height))
    image = axes.imshow(alpha.numpy(), cmap="gray", vmin=0.0, vmax=1.0, aspect="equal")
    axes.set_xticks(range(len(source)), labels=source, rotation=90)
    axes.set_yticks(range(len(target)), labels=target)
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


def alignment_heatmaps(
    checkpoint: Path, data: Path, sentences: List[str], out_dir: Path, **options
):
    translator = load_translator(checkpoint, data, **options)
    translator.eval()
    paths = []
    for number, sentence in enumerate(sentences, start=1):
        path = out_dir / f"alignment_{number}.png"
        target_words = save_heatmap(
            *translate_with_alignment(translator, translator.encode(sentence)), path
        )
        paths.append((path, " ".join(target_words[:-1])))
    return paths
