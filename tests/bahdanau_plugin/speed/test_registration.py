"""The fast path plugs into the modules by registration (modules/fast_path.py): every module is
built as the paper's class under every setting, the leaf layers are the fast path's only where it
is on, nothing of it is built under plain, and the parameters, their names and the checkpoints are
the same; the model computes what its plain modules compute."""

from pathlib import Path

import pytest
import torch
from torch import nn

from bahdanau_plugin import speed
from bahdanau_plugin.speed.cpu import onednn_linear
from bahdanau_plugin.speed.cpu.gru import OneDNNGRU
from bahdanau_plugin.speed.cpu.onednn_linear import OneDNNLinear
from bahdanau_plugin.models.rnnencdec import RNNencdecDecoder, RNNencdecEncoder, RNNencdecModel
from bahdanau_plugin.models.rnnsearch import RNNsearchDecoder, RNNsearchEncoder, RNNsearchModel
from bahdanau_plugin.modules.attention import BahdanauAttention
from bahdanau_plugin.modules.conditional_gru import ConditionalGRUCell
from bahdanau_plugin.modules.maxout_output import MaxoutOutput
from bench.models import MODELS

from ..models.batches import SOURCES, TARGETS, prev_output_batch, source_batch
from ...support.paths import PLUGIN
from ...support.models import build_tiny_model, randomize_
from ...support.speed import plain_modules

SETTINGS = pytest.mark.parametrize("setting", ["auto", "fast", "plain"])
PAPER_CLASSES = {
    "rnnsearch": (RNNsearchModel, RNNsearchEncoder, RNNsearchDecoder),
    "rnnencdec": (RNNencdecModel, RNNencdecEncoder, RNNencdecDecoder),
}


def _of_the_fast_path(module: nn.Module) -> bool:
    return type(module).__module__.startswith(speed.__name__)


@SETTINGS
@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_module_is_built_as_the_paper_s_class_under_every_setting(
    name, setting, fast_path_setting
):
    fast_path_setting(setting)
    model = build_tiny_model(name)
    assert (type(model), type(model.encoder), type(model.decoder)) == PAPER_CLASSES[name]
    decoder = model.decoder
    assert type(decoder.gru) is ConditionalGRUCell
    assert type(decoder.deep_output) is MaxoutOutput
    if name == "rnnsearch":
        assert type(decoder.attention) is BahdanauAttention


@pytest.mark.parametrize("setting", ["auto", "fast"])
def test_where_the_fast_path_is_on_the_leaf_layers_and_fused_forms_are_its_own(
    setting, fast_path_setting
):
    fast_path_setting(setting)
    model = build_tiny_model("rnnsearch")
    layers = {type(m) for m in model.modules() if isinstance(m, (nn.Linear, nn.GRU))}
    assert layers == {OneDNNLinear, OneDNNGRU}
    assert model.decoder.fused_recurrence is not None
    assert model.decoder.fused_deep_output is not None


@pytest.mark.parametrize("name", sorted(MODELS))
def test_set_to_plain_nothing_of_the_fast_path_is_built(name, fast_path_setting):
    fast_path_setting("plain")
    model = build_tiny_model(name)
    assert not any(_of_the_fast_path(module) for module in model.modules())
    assert model.decoder.fused_recurrence is None and model.decoder.fused_deep_output is None


def test_no_code_of_the_plugin_changes_a_module_s_class():
    for path in Path(PLUGIN).rglob("*.py"):
        assert "__class__ =" not in path.read_text(encoding="utf-8"), path


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_parameters_their_names_and_values_are_the_same_under_every_setting(
    name, fast_path_setting
):
    state_dicts = []
    for setting in ("plain", "fast"):
        fast_path_setting(setting)
        torch.manual_seed(0)
        state_dicts.append(build_tiny_model(name).state_dict())
    plain, fast = state_dicts
    assert list(plain) == list(fast)
    assert all(torch.equal(plain[key], fast[key]) for key in plain)


def _log_probs_and_gradients(model):
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    log_probs = model.get_normalized_probs(
        model(src_tokens, src_lengths, prev_tokens), log_probs=True
    )
    gradients = torch.autograd.grad(log_probs.exp().mul(log_probs).sum(), list(model.parameters()))
    return [log_probs, *gradients]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_the_fast_path_gives_the_plain_modules_values_and_gradients(name):
    model = randomize_(build_tiny_model(name)).train()
    fast = _log_probs_and_gradients(model)
    with plain_modules():
        plain = _log_probs_and_gradients(model)
    for ours, reference in zip(fast, plain):
        torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-5)


def _log_probs(model):
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    with torch.no_grad():
        return model.get_normalized_probs(
            model(src_tokens, src_lengths, prev_tokens), log_probs=True
        )


@pytest.mark.parametrize("name", sorted(MODELS))
def test_a_model_prepared_for_generation_gives_the_plain_modules_log_probabilities(
    name, monkeypatch
):
    monkeypatch.setattr(
        onednn_linear, "PACKED_WEIGHT_MIN_ELEMENTS", 0
    )  # pack even a tiny model's weights
    model = randomize_(build_tiny_model(name))
    model.make_generation_fast_()  # what fairseq's prepare_for_inference_ calls
    with plain_modules():
        plain = _log_probs(model)
    for _ in range(2):  # packing the weights, then reading the packed copies
        torch.testing.assert_close(_log_probs(model), plain, rtol=1e-5, atol=1e-5)
