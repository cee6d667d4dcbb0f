"""Models over a synthetic vocabulary (w0, w1, ...), for the measurements and checks that need no
corpus: bahdanau_tools/precision.py, bench/precision_memory.py and the GPU kit (bench/gpu)."""

from argparse import Namespace

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


def build(name: str, words: int, **sizes) -> torch.nn.Module:
    """rnnsearch or rnnencdec as build_model makes it, over dictionary(words) on both sides, with
    these sizes (those the model has no option for are left out) and the others' defaults."""
    model_class, config_class = MODELS[name]
    options = {
        key: value for key, value in sizes.items() if key in config_class.__dataclass_fields__
    }
    task = Namespace(source_dictionary=dictionary(words), target_dictionary=dictionary(words))
    return model_class.build_model(config_class(**options), task)


def sentences(model, count: int, length: int, device=None) -> torch.Tensor:
    """``count`` random sentences of ``length`` words and the end of sentence (no padding)."""
    symbols = model.encoder.dictionary
    tokens = torch.randint(symbols.nspecial, len(symbols), (count, length + 1), device=device)
    tokens[:, -1] = symbols.eos()
    return tokens
