"""Tiny models: the same sizes built in Python (build_tiny_model) and given to fairseq-train
(tiny_flags), each a different number so that a size given to the wrong layer shows."""

from argparse import Namespace
from typing import List

import torch
from fairseq.data import Dictionary

from bahdanau_plugin.models.rnnencdec import RNNencdecConfig, RNNencdecModel
from bahdanau_plugin.models.rnnsearch import RNNsearchConfig, RNNsearchModel

TINY_SIZES = dict(
    encoder_embed_dim=6,
    decoder_embed_dim=5,
    encoder_hidden_dim=4,
    decoder_hidden_dim=7,
    attention_dim=3,
    maxout_dim=4,
)
MODELS = {
    "rnnsearch": (RNNsearchModel, RNNsearchConfig),
    "rnnencdec": (RNNencdecModel, RNNencdecConfig),
}


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


def make_dictionary(size: int) -> Dictionary:
    dictionary = Dictionary()
    for index in range(size):
        dictionary.add_symbol(f"w{index}")
    return dictionary


def build_tiny_model(name: str, vocabulary: int = 11, **overrides) -> torch.nn.Module:
    model_class, config_class = MODELS[name]
    task = Namespace(
        source_dictionary=make_dictionary(vocabulary),
        target_dictionary=make_dictionary(vocabulary + 2),
    )
    return model_class.build_model(config_class(**tiny_sizes(name, **overrides)), task)


def randomize_(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Appendix B's start (v_a = 0, tiny W_a) makes attention uniform; tests need it to vary."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(
                torch.randn(
                    parameter.shape, generator=generator, dtype=parameter.dtype, device="cpu"
                )
            )
    return model
