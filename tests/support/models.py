"""Models over a synthetic vocabulary (w0, w1, ...), as ``build_model`` makes them: tiny ones for
the tests (``build_tiny_model``, and the same sizes as fairseq-train flags, ``tiny_flags``: each a
different number, so that a size given to the wrong layer shows), any size for the measurements
(bench/, the GPU kit: ``build``, ``PAPER_SIZES``)."""

from argparse import Namespace
from typing import List, Optional

import torch
from fairseq.data import Dictionary

from bahdanau_plugin.models.rnnencdec import RNNencdecConfig, RNNencdecModel
from bahdanau_plugin.models.rnnsearch import RNNsearchConfig, RNNsearchModel

MODELS = {
    "rnnsearch": (RNNsearchModel, RNNsearchConfig),
    "rnnencdec": (RNNencdecModel, RNNencdecConfig),
}
TINY_SIZES = dict(
    encoder_embed_dim=6,
    decoder_embed_dim=5,
    encoder_hidden_dim=4,
    decoder_hidden_dim=7,
    attention_dim=3,
    maxout_dim=4,
)
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


def build_model(name: str, task, **sizes) -> torch.nn.Module:
    """rnnsearch or rnnencdec as build_model makes it for ``task``, with these sizes (those the
    model has no option for are left out) and the others' defaults."""
    model_class, config_class = MODELS[name]
    options = {
        key: value for key, value in sizes.items() if key in config_class.__dataclass_fields__
    }
    return model_class.build_model(config_class(**options), task)


def build(name: str, words: int, **sizes) -> torch.nn.Module:
    """``build_model`` over dictionary(words) on both sides."""
    return build_model(name, task(words), **sizes)


def tiny_sizes(name: str, **overrides) -> dict:
    """The tiny sizes that model (rnnsearch or rnnencdec) has options for, overrides applied."""
    fields = set(MODELS[name][1].__dataclass_fields__)
    return {key: value for key, value in {**TINY_SIZES, **overrides}.items() if key in fields}


def tiny_flags(arch: str) -> List[str]:
    """The tiny sizes as fairseq-train flags, for an architecture (rnnsearch_50, say)."""
    sizes = tiny_sizes(arch.split("_")[0])
    return [
        part for key, value in sizes.items() for part in ("--" + key.replace("_", "-"), str(value))
    ]


def build_tiny_model(name: str, vocabulary: int = 11, **overrides) -> torch.nn.Module:
    """A tiny model whose target vocabulary is larger than its source's by 2."""
    return build_model(name, task(vocabulary, vocabulary + 2), **tiny_sizes(name, **overrides))


def randomize_(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Appendix B's start (v_a = 0, tiny W_a) makes attention uniform; tests need it to vary."""
    generator = torch.Generator(device="cpu").manual_seed(seed)  # the same values on any device
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(
                torch.randn(
                    parameter.shape, generator=generator, dtype=parameter.dtype, device="cpu"
                )
            )
    return model


def sentences(model, count: int, length: int, device=None) -> torch.Tensor:
    """``count`` random sentences of ``length`` words and the end of sentence (no padding)."""
    symbols = model.encoder.dictionary
    tokens = torch.randint(symbols.nspecial, len(symbols), (count, length + 1), device=device)
    tokens[:, -1] = symbols.eos()
    return tokens
