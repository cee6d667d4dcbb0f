"""cpu_fast_path.install: the fast classes swapped into a built model, which computes what the plain
modules compute."""

import pytest
import torch

from bahdanau_plugin.cpu_fast_path import FAST_CLASSES, install, onednn_linear
from bahdanau_plugin.models.rnnsearch import RNNsearchDecoder, RNNsearchEncoder, RNNsearchModel

from ..support.tiny import MODELS, build_tiny_model, randomize_
from ..models.batches import SOURCES, TARGETS, prev_output_batch, source_batch


def _plain_rnnsearch(cfg, model):
    """The model as its modules build it, without the fast path."""
    encoder = RNNsearchEncoder(cfg, model.encoder.dictionary)
    return RNNsearchModel(cfg, encoder, RNNsearchDecoder(cfg, model.decoder.dictionary))


def test_every_linear_gru_and_attention_of_a_built_model_has_its_fast_class():
    model = build_tiny_model("rnnsearch")
    assert not any(type(module) in FAST_CLASSES for module in model.modules())
    assert {type(module) for module in model.modules()} >= set(FAST_CLASSES.values())


def test_installing_keeps_every_parameter_and_its_name():
    model = build_tiny_model("rnnsearch")
    plain = _plain_rnnsearch(model.cfg, model)
    before = {name: id(tensor) for name, tensor in plain.state_dict(keep_vars=True).items()}
    assert {
        name: id(tensor) for name, tensor in install(plain).state_dict(keep_vars=True).items()
    } == before


def _log_probs_and_gradients(model):
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    log_probs = model.get_normalized_probs(
        model(src_tokens, src_lengths, prev_tokens), log_probs=True
    )
    gradients = torch.autograd.grad(log_probs.exp().mul(log_probs).sum(), list(model.parameters()))
    return [log_probs, *gradients]


@pytest.mark.parametrize("name", sorted(MODELS))
def test_in_cpu_float32_the_fast_path_gives_the_plain_modules_values_and_gradients(name):
    model = randomize_(build_tiny_model(name)).train()
    fast = _log_probs_and_gradients(model)
    with torch.backends.mkldnn.flags(
        enabled=False
    ):  # the fast path's rule then sends every call to the plain modules
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
    with torch.backends.mkldnn.flags(enabled=False):
        plain = _log_probs(model)
    for _ in range(2):  # packing the weights, then reading the packed copies
        torch.testing.assert_close(_log_probs(model), plain, rtol=1e-5, atol=1e-5)
