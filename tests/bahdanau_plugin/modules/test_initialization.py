"""Every weight starts as Appendix B.1 says, in RNNsearch and in RNNencdec."""

import pytest
import torch

from bench.models import MODELS

from ...support.models import build_tiny_model

SIZES = dict(
    encoder_embed_dim=40,
    decoder_embed_dim=40,
    encoder_hidden_dim=50,
    decoder_hidden_dim=60,
    attention_dim=70,
    maxout_dim=30,
)
# N(0, 0.01²) weights that only one of the models has.
OWN_ORDINARY_WEIGHTS = {
    "rnnsearch": [],
    "rnnencdec": ["encoder.summary_projection.weight"],  # V of c = tanh(V h_T)
}


@pytest.fixture(scope="module")
def models(device):
    """Built once, on --device: a fixture of this scope is made before the tests' own default
    device is set (conftest.py's on_device)."""
    torch.manual_seed(0)
    with device:
        return {name: build_tiny_model(name, vocabulary=200, **SIZES) for name in MODELS}


@pytest.fixture
def model(models, model_name):
    return models[model_name]


@pytest.fixture
def rnnsearch(models):
    return models["rnnsearch"]


def _assert_orthogonal(matrix):
    identity = torch.eye(matrix.size(0), device=matrix.device)
    torch.testing.assert_close(matrix @ matrix.t(), identity, atol=1e-5, rtol=0)


def _encoder_gru_weights(model, kind):
    """The encoder GRUs' weight_hh (recurrent) or weight_ih (input) matrices, one per direction:
    two in RNNsearch's bidirectional encoder, one in RNNencdec's."""
    return [
        p
        for rnn in model.encoder.rnns()
        for name, p in rnn.named_parameters()
        if name.startswith(kind)
    ]


def test_encoder_recurrent_matrices_are_orthogonal(model):
    for weight in _encoder_gru_weights(model, "weight_hh"):
        for block in weight.detach().split(SIZES["encoder_hidden_dim"]):  # U_r, U_z, U
            _assert_orthogonal(block)


def test_decoder_recurrent_matrices_are_orthogonal(model):
    gru = model.decoder.gru
    n = SIZES["decoder_hidden_dim"]
    for block in [
        *gru.gate_weights.weight.detach().split(n),
        gru.candidate_weights.weight.detach(),
    ]:
        _assert_orthogonal(block)


def test_alignment_matrices_have_standard_deviation_0_001(rnnsearch):
    attention = rnnsearch.decoder.attention
    for weight in (attention.state_projection.weight, attention.annotation_projection.weight):
        assert weight.std().item() == pytest.approx(0.001, rel=0.05)
        assert weight.mean().item() == pytest.approx(0.0, abs=1e-4)


def test_v_a_starts_at_zero(rnnsearch):
    assert torch.all(rnnsearch.decoder.attention.energy.weight == 0)


def test_every_bias_starts_at_zero(model):
    biases = [p for name, p in model.named_parameters() if "bias" in name]
    assert len(biases) >= 6
    assert all(torch.all(bias == 0) for bias in biases)


def test_other_weight_matrices_have_standard_deviation_0_01(model, model_name):
    encoder, decoder = model.encoder, model.decoder
    others = [
        encoder.embed_tokens.weight[encoder.padding_idx + 1 :],
        *_encoder_gru_weights(model, "weight_ih"),
        decoder.embed_tokens.weight[decoder.dictionary.pad() + 1 :],
        decoder.initial_state.weight,
        decoder.gru.input_weights.weight,
        decoder.gru.context_weights.weight,
        decoder.deep_output.state_weights.weight,
        decoder.deep_output.embedding_weights.weight,
        decoder.deep_output.context_weights.weight,
        decoder.output_projection.weight,
        *map(model.get_parameter, OWN_ORDINARY_WEIGHTS[model_name]),
    ]
    for weight in others:
        assert weight.std().item() == pytest.approx(0.01, rel=0.1)


def test_padding_embeddings_are_zero(model):
    assert torch.all(model.encoder.embed_tokens.weight[model.encoder.padding_idx] == 0)
    assert torch.all(model.decoder.embed_tokens.weight[model.decoder.dictionary.pad()] == 0)
