"""The tests' tiny models over a synthetic vocabulary (``build_tiny_model``, and the same sizes as
fairseq-train flags, ``tiny_flags``: each a different number, so that a size given to the wrong
layer shows), built as bench/models.py builds models of any size."""

from typing import List

import torch

from bench.models import PAPER_SIZES, build_model, options_of, task

TINY_SIZES = dict(
    encoder_embed_dim=6,
    decoder_embed_dim=5,
    encoder_hidden_dim=4,
    decoder_hidden_dim=7,
    attention_dim=3,
    maxout_dim=4,
)


def tiny_sizes(name: str, **overrides) -> dict:
    """The tiny sizes that model (rnnsearch or rnnencdec) has options for, overrides applied."""
    return options_of(name, {**TINY_SIZES, **overrides})


def paper_sizes(name: str) -> dict:
    """The paper's sizes (Appendix A.2.2) that model has options for."""
    return options_of(name, PAPER_SIZES)


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
