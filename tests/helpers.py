"""Helpers shared by the tests: tiny models, dictionaries, fairseq's command-line tools."""

import os
import shutil
import sys
from argparse import Namespace
from pathlib import Path

import pytest
import torch
from fairseq.data import Dictionary

import bahdanau_plugin  # noqa: F401  (registers the models, as --user-dir does)
from bahdanau_plugin.models.rnnencdec import RNNencdecConfig, RNNencdecModel
from bahdanau_plugin.models.rnnsearch import RNNsearchConfig, RNNsearchModel

REPO = Path(__file__).resolve().parents[1]
MULTI30K = REPO.parent / "shared" / "data" / "multi30k"

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


def make_dictionary(size: int) -> Dictionary:
    dictionary = Dictionary()
    for index in range(size):
        dictionary.add_symbol(f"w{index}")
    return dictionary


def build_tiny_model(name: str, vocabulary: int = 11, **overrides) -> torch.nn.Module:
    model_class, config_class = MODELS[name]
    fields = set(config_class.__dataclass_fields__)
    sizes = {key: value for key, value in {**TINY_SIZES, **overrides}.items() if key in fields}
    task = Namespace(
        source_dictionary=make_dictionary(vocabulary),
        target_dictionary=make_dictionary(vocabulary + 2),
    )
    return model_class.build_model(config_class(**sizes), task)


def randomize_(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """Appendix B's start (v_a = 0, tiny W_a) makes attention uniform; tests need it to vary."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype))
    return model


def fairseq_env() -> dict:
    """Environment for fairseq's command-line tools of the Python running the tests."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


def fairseq_tool(name: str) -> str:
    found = shutil.which(name, path=fairseq_env()["PATH"])
    if found is None:
        pytest.fail(f"{name} is not installed next to {sys.executable}")
    return found
