"""Every weight starts as Appendix B.1 says."""

import pytest
import torch

from ..helpers import build_tiny_model

SIZES = dict(encoder_embed_dim=40, decoder_embed_dim=40, encoder_hidden_dim=50,
             decoder_hidden_dim=60, attention_dim=70, maxout_dim=30)


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_tiny_model("rnnsearch", vocabulary=200, **SIZES)


def _assert_orthogonal(matrix):
    torch.testing.assert_close(matrix @ matrix.t(), torch.eye(matrix.size(0)), atol=1e-5, rtol=0)


def test_encoder_recurrent_matrices_are_orthogonal(model):
    n = SIZES["encoder_hidden_dim"]
    for name in ("weight_hh_l0", "weight_hh_l0_reverse"):
        for block in getattr(model.encoder.rnn, name).detach().split(n):  # U_r, U_z, U per direction
            _assert_orthogonal(block)


def test_decoder_recurrent_matrices_are_orthogonal(model):
    gru = model.decoder.gru
    n = SIZES["decoder_hidden_dim"]
    for block in [*gru.gate_weights.weight.detach().split(n), gru.candidate_weights.weight.detach()]:
        _assert_orthogonal(block)


def test_alignment_matrices_have_standard_deviation_0_001(model):
    attention = model.decoder.attention
    for weight in (attention.state_projection.weight, attention.annotation_projection.weight):
        assert weight.std().item() == pytest.approx(0.001, rel=0.05)
        assert weight.mean().item() == pytest.approx(0.0, abs=1e-4)


def test_v_a_and_every_bias_start_at_zero(model):
    assert torch.all(model.decoder.attention.energy.weight == 0)
    biases = [p for name, p in model.named_parameters() if "bias" in name]
    assert len(biases) >= 6
    assert all(torch.all(bias == 0) for bias in biases)


def test_other_weight_matrices_have_standard_deviation_0_01(model):
    decoder = model.decoder
    others = [
        model.encoder.embed_tokens.weight[model.encoder.padding_idx + 1:],
        model.encoder.rnn.weight_ih_l0,
        model.encoder.rnn.weight_ih_l0_reverse,
        decoder.embed_tokens.weight[decoder.dictionary.pad() + 1:],
        decoder.initial_state.weight,
        decoder.gru.input_weights.weight,
        decoder.gru.context_weights.weight,
        decoder.deep_output.state_weights.weight,
        decoder.deep_output.embedding_weights.weight,
        decoder.deep_output.context_weights.weight,
        decoder.output_projection.weight,
    ]
    for weight in others:
        assert weight.std().item() == pytest.approx(0.01, rel=0.1)


def test_padding_embeddings_are_zero(model):
    assert torch.all(model.encoder.embed_tokens.weight[model.encoder.padding_idx] == 0)
    assert torch.all(model.decoder.embed_tokens.weight[model.decoder.dictionary.pad()] == 0)
