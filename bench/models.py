"""Models over a synthetic vocabulary (w0, w1, ...), as ``build_model`` makes them, at any size:
the measurements' (bench/, the GPU kit: ``build``, ``PAPER_SIZES``), and the tests' tiny ones
(tests/support/models.py builds them with these functions)."""

from argparse import Namespace
from typing import Optional

import torch
from fairseq.data import Dictionary

from bahdanau_plugin.models.rnnencdec import RNNencdecConfig, RNNencdecModel
from bahdanau_plugin.models.rnnsearch import RNNsearchConfig, RNNsearchModel

MODELS = {
    "rnnsearch": (RNNsearchModel, RNNsearchConfig),
    "rnnencdec": (RNNencdecModel, RNNencdecConfig),
}
# Bahdanau et al. (2015), Appendix A.2.2 (RNNencdec has no alignment model: attention_dim is not
# one of its options)
PAPER_SIZES = dict(encoder_embed_dim=620, decoder_embed_dim=620, encoder_hidden_dim=1000,
                   decoder_hidden_dim=1000, attention_dim=1000, maxout_dim=500)  # fmt: skip


def dictionary(words: int) -> Dictionary:
    """fairseq's special symbols, then ``words`` words w0, w1, ..."""
    symbols = Dictionary()
    for index in range(words):
        symbols.add_symbol(f"w{index}")
    return symbols


def task(words: int, target_words: Optional[int] = None) -> Namespace:
    """What build_model reads of a task: a dictionary of ``words`` words on the source side, and
    of ``target_words`` (default: as many) on the target side."""
    return Namespace(
        source_dictionary=dictionary(words),
        target_dictionary=dictionary(words if target_words is None else target_words),
    )


def options_of(name: str, sizes: dict) -> dict:
    """Those of ``sizes`` that the model (rnnsearch or rnnencdec) has options for: RNNencdec has
    no attention_dim."""
    fields = MODELS[name][1].__dataclass_fields__
    return {key: value for key, value in sizes.items() if key in fields}


def build_model(name: str, task, **sizes) -> torch.nn.Module:
    """rnnsearch or rnnencdec as build_model makes it for ``task``, with these sizes (those the
    model has no option for are left out) and the others' defaults."""
    model_class, config_class = MODELS[name]
    return model_class.build_model(config_class(**options_of(name, sizes)), task)


def build(name: str, words: int, **sizes) -> torch.nn.Module:
    """``build_model`` over dictionary(words) on both sides."""
    return build_model(name, task(words), **sizes)


def sentences(model, count: int, length: int, device=None) -> torch.Tensor:
    """``count`` random sentences of ``length`` words and the end of sentence (no padding)."""
    symbols = model.encoder.dictionary
    tokens = torch.randint(symbols.nspecial, len(symbols), (count, length + 1), device=device)
    tokens[:, -1] = symbols.eos()
    return tokens
