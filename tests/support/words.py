"""BPE pieces, Moses escapes and a Moses dash split of a translation, and a soft alignment between
them."""

import torch

from bahdanau_tools.alignment import END_OF_SENTENCE

SOURCE = ["the", "ter@@", "ri@@", "er", "&apos;s", "chew", "@-@", "bone", END_OF_SENTENCE]
TARGET = ["l&apos;", "o@@", "s", "du", "ter@@", "rier", END_OF_SENTENCE]
SOURCE_WORDS = ["the", "terrier", "'s", "chew-bone", END_OF_SENTENCE]
TARGET_WORDS = ["l'", "os", "du", "terrier", END_OF_SENTENCE]


def attention(rows: int, columns: int) -> torch.Tensor:
    return torch.softmax(
        torch.randn(rows, columns, generator=torch.Generator().manual_seed(0)), dim=1
    )
