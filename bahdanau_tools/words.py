"""Tokens for people: BPE pieces ("ter@@ rier") merged back into words and Moses' tokens
detokenized ("&apos;" -> "'", "t @-@ shirt" -> "t-shirt"), on a soft alignment's axes too."""

import functools
from typing import List, Sequence, Tuple

import torch
from sacremoses import MosesDetokenizer

from .alignment import END_OF_SENTENCE

SUBWORD_CONTINUES = "@@"  # subword-nmt's mark on every piece of a word but its last
MOSES_SPLIT_DASH = "@-@"  # "t-shirt" is tokenized "t @-@ shirt"


def token_pieces(tokens: Sequence[str]) -> List[List[int]]:
    """The positions of each Moses token's BPE pieces: a piece ending in @@ continues into the
    next one, but for the end of sentence, a token of its own."""
    groups, pieces = [], []
    for position, token in enumerate(tokens):
        if token == END_OF_SENTENCE and pieces:  # after an unfinished word (a length limit)
            groups.append(pieces)
            pieces = []
        pieces.append(position)
        if not token.endswith(SUBWORD_CONTINUES):
            groups.append(pieces)
            pieces = []
    if pieces:  # a last piece that still ends in @@ (an unfinished word) stands on its own
        groups.append(pieces)
    return groups


def _without_mark(piece: str) -> str:
    return piece[: -len(SUBWORD_CONTINUES)] if piece.endswith(SUBWORD_CONTINUES) else piece


def _spelt(tokens: Sequence[str], pieces: Sequence[int]) -> str:
    """The Moses token that BPE pieces spell."""
    return "".join(_without_mark(tokens[position]) for position in pieces)


def _joined_by_dash(previous: str, token: str) -> bool:
    """Whether Moses' detokenizer joins two tokens into one word: either is the @-@ of its
    aggressive dash splitting, and neither the end of sentence."""
    pair = (previous, token)
    return MOSES_SPLIT_DASH in pair and END_OF_SENTENCE not in pair


def word_pieces(tokens: Sequence[str]) -> List[List[int]]:
    """The positions of each word's pieces: a Moses token's BPE pieces (token_pieces), and the
    tokens either side of an @-@ with it, one word as in the detokenized text ("t @-@ shirt" is
    "t-shirt")."""
    words, previous = [], None
    for pieces in token_pieces(tokens):
        token = _spelt(tokens, pieces)
        if words and _joined_by_dash(previous, token):
            words[-1].extend(pieces)
        else:
            words.append(pieces)
        previous = token
    return words


@functools.lru_cache(maxsize=None)
def _moses_detokenizer() -> MosesDetokenizer:
    return MosesDetokenizer()


def readable_word(tokens: Sequence[str], pieces: Sequence[int]) -> str:
    """The word the pieces spell, detokenized as fairseq-generate's translations are (sacremoses):
    &apos; -> ', &amp; -> &, and "t @-@ shirt" -> "t-shirt"."""
    word = [tokens[position] for position in pieces]
    return _moses_detokenizer().detokenize([_spelt(word, token) for token in token_pieces(word)])


def readable_words(tokens: Sequence[str]) -> List[str]:
    """The words that BPE or word tokens spell, for people (readable_word)."""
    return [readable_word(tokens, pieces) for pieces in word_pieces(tokens)]


def merge_subwords(
    source: Sequence[str], target: Sequence[str], alpha: torch.Tensor
) -> Tuple[List[str], List[str], torch.Tensor]:
    """Words instead of BPE pieces and @-@ splits on both axes of alpha (target x source).

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
