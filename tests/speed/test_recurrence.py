"""cpu_fast_path/decoder_recurrence.py and decoder.py: the decoders' recurrence in few operators,
with the plain loop's values and gradients."""

import pytest
import torch

from bahdanau_plugin.speed import decoder as fast_decoder
from bahdanau_plugin.speed.decoder import PADDED
from bahdanau_plugin.speed.recurrence import (
    SIGMOID_IDENTITY,
    TANH,
    Recurrence,
)

from ..support.models import build_tiny_model, randomize_
from ..models.batches import SOURCES, TARGETS, prev_output_batch, source_batch

TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def _outputs_and_gradients(model, sources):
    """The decoder's scores and attention, and every parameter's gradient, from a loss that
    reads both (so that alpha's own gradient reaches the recurrence too)."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, sources)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    encoder_out = model.encoder(src_tokens, src_lengths)
    features, extra = model.decoder(prev_tokens, encoder_out)
    upstream = torch.arange(features.numel(), dtype=features.dtype).view_as(features).cos()
    loss = (features * upstream).sum()
    outputs = [features]
    alpha = extra["attn"][0]
    if alpha is not None:
        loss = loss + (alpha * alpha.detach().flip(0)).sum()
        outputs.append(alpha)
    return outputs + list(torch.autograd.grad(loss, list(model.parameters())))


@pytest.mark.parametrize("sources", [SOURCES, [[4, 5, 6], [9, 4, 10]]], ids=["padded", "unpadded"])
def test_the_fused_recurrence_gives_the_plain_loop_s_values_and_gradients(
    model_name, sources, monkeypatch
):
    model = randomize_(build_tiny_model(model_name)).train()
    assert model.decoder.fused_recurrence is not None
    fused = _outputs_and_gradients(model, sources)
    monkeypatch.setattr(model.decoder, "fused_recurrence", None)  # the decoder's own recur
    plain = _outputs_and_gradients(model, sources)
    for ours, reference in zip(fused, plain):
        torch.testing.assert_close(ours, reference, **TOLERANCE)


@pytest.mark.parametrize("activation", [SIGMOID_IDENTITY, TANH], ids=["sigmoid", "tanh"])
def test_either_activation_gives_the_same_values_and_gradients(activation, monkeypatch):
    model = randomize_(build_tiny_model("rnnsearch")).train()
    monkeypatch.setattr(fast_decoder, "activation_for", lambda *args: SIGMOID_IDENTITY)
    expected = _outputs_and_gradients(model, SOURCES)
    monkeypatch.setattr(fast_decoder, "activation_for", lambda *args: activation)
    for ours, reference in zip(_outputs_and_gradients(model, SOURCES), expected):
        torch.testing.assert_close(ours, reference, **TOLERANCE)


def _recurrence_inputs(attention: bool, padded: bool, gru_steps: int):
    """Float64 inputs of Recurrence for 2 sentences, 3 positions, 4 source positions, n = 3,
    n' = 2 (products through ATen in float64)."""
    generator = torch.Generator().manual_seed(0)

    def tensor(*shape):
        return torch.randn(*shape, generator=generator, dtype=torch.float64, requires_grad=True)

    rows, positions, sources, hidden, attention_dim = 2, 3, 4, 3, 2
    inputs = [tensor(rows, positions, 3 * hidden), tensor(rows, hidden)]
    inputs += [tensor(2 * hidden, hidden), tensor(hidden, hidden)]
    if attention:
        padding = torch.zeros(rows, sources, dtype=torch.bool)
        padding[0, :1] = padded
        inputs += [
            tensor(attention_dim, hidden),
            tensor(1, attention_dim),
            tensor(3 * hidden, 2 * hidden),
        ]
        inputs += [tensor(rows, sources, 2 * hidden), tensor(rows, sources, attention_dim)]
        inputs += [padding if padded else None, SIGMOID_IDENTITY]
    else:
        inputs += [None] * 7
    return inputs + [gru_steps]


@pytest.mark.parametrize("attention", [True, False], ids=["rnnsearch", "rnnencdec"])
@pytest.mark.parametrize("padded", [True, False], ids=["padded", "unpadded"])
@pytest.mark.parametrize("gru_steps", [2, 3], ids=["training", "decoding on"])
def test_the_written_out_backward_pass_passes_gradcheck(attention, padded, gru_steps):
    inputs = _recurrence_inputs(attention, padded, gru_steps)
    assert torch.autograd.gradcheck(lambda *inputs: Recurrence.apply(*inputs), inputs)


def _padded(model, sources):
    """Whether the fused recurrence masks the padding of these sources in a search."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, sources)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    encoder_out = model.encoder(src_tokens, src_lengths)
    incremental_state = {}
    with torch.no_grad():
        model.decoder(prev_tokens[:, :1], encoder_out, incremental_state=incremental_state)
    return model.decoder.get_incremental_state(incremental_state, "cache")[PADDED]


def test_a_batch_without_padding_is_not_masked():
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    assert not _padded(model, [[4, 5, 6], [9, 4, 10]])
    assert _padded(model, SOURCES)


def test_beam_search_lays_the_weights_out_once_and_again_after_a_change():
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    decoder = model.decoder
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    encoder_out = model.encoder(src_tokens, src_lengths)

    def decode_two_steps():
        incremental_state = {}
        with torch.no_grad():
            for i in range(2):
                decoder(prev_tokens[:, : i + 1], encoder_out, incremental_state=incremental_state)
        return decoder.fused_recurrence._layout[1]

    layout = decode_two_steps()
    assert decode_two_steps() is layout
    with torch.no_grad():
        decoder.attention.state_projection.weight.mul_(2)
    assert decode_two_steps() is not layout
