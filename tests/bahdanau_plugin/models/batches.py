"""Small padded batches laid out as fairseq's translation task lays them out."""

from typing import List

import torch
from fairseq.data import data_utils


def source_batch(dictionary, sentences: List[List[int]], left_pad: bool = True):
    """src_tokens as fairseq builds them: words, then </s>, padded on the left by default."""
    rows = [torch.tensor(words + [dictionary.eos()]) for words in sentences]
    tokens = data_utils.collate_tokens(rows, dictionary.pad(), left_pad=left_pad)
    lengths = torch.tensor([len(row) for row in rows])
    return tokens, lengths


def prev_output_batch(dictionary, sentences: List[List[int]]):
    """Decoder inputs for teacher forcing: </s> then the words, padded on the right."""
    rows = [torch.tensor(words + [dictionary.eos()]) for words in sentences]
    return data_utils.collate_tokens(
        rows, dictionary.pad(), dictionary.eos(), left_pad=False, move_eos_to_beginning=True
    )


SOURCES = [[4, 5, 6, 7, 8], [9, 4, 10]]
TARGETS = [[5, 6, 7, 8], [12, 4]]
