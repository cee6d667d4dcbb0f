"""speed/recurrence.py and decoder.py: the decoders' recurrence in few operators, with the plain
loop's values and gradients, on any device (on a GPU replayed from CUDA graphs) and with the
alignment model in another precision than the GRU's."""

import pytest
import torch

from bahdanau_plugin.speed import decoder as fast_decoder
from bahdanau_plugin.speed.decoder import PADDED
from bahdanau_plugin.speed.recurrence import (
    SIGMOID_IDENTITY,
    TANH,
    Recurrence,
)

from ..models.batches import SOURCES, TARGETS, prev_output_batch, source_batch
from ...support.models import build_tiny_model, randomize_
from ...support.recurrence import recurrence_inputs, tensors_of
from ...support.speed import fused_calls

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
    with fused_calls(monkeypatch) as calls:
        fused = _outputs_and_gradients(model, sources)
    assert calls == [True]  # once, with gradients (after its check)
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


@pytest.mark.parametrize("attention", [True, False], ids=["rnnsearch", "rnnencdec"])
@pytest.mark.parametrize("padded", [True, False], ids=["padded", "unpadded"])
@pytest.mark.parametrize("gru_steps", [2, 3], ids=["training", "decoding on"])
def test_the_written_out_backward_pass_passes_gradcheck(attention, padded, gru_steps, device):
    inputs = recurrence_inputs(
        attention, padded, gru_steps, activation=SIGMOID_IDENTITY, device=device
    )
    assert torch.autograd.gradcheck(lambda *inputs: Recurrence.apply(*inputs), inputs)


@pytest.mark.parametrize("gru_steps", [2, 3], ids=["training", "decoding on"])
def test_with_the_alignment_model_in_another_precision_it_computes_the_same_function(
    gru_steps, device
):
    """W_a then has a product of its own, s_{i-1} and c_i are cast at each position: here the
    GRU in float64 and the alignment model in float32, against both in float64."""
    mixed = recurrence_inputs(gru_steps=gru_steps, alignment_dtype=torch.float32, device=device)
    same = [
        t.detach().double().requires_grad_()
        if isinstance(t, torch.Tensor) and t.is_floating_point()
        else t
        for t in mixed
    ]
    for inputs in (mixed, same):
        outputs = Recurrence.apply(*inputs)
        assert [o.dtype for o in outputs] == [torch.float64, torch.float64, inputs[5].dtype]
    ours, reference = (_recurrence_results(inputs) for inputs in (mixed, same))
    for a, b in zip(ours, reference):
        torch.testing.assert_close(a.double(), b, rtol=1e-5, atol=1e-5)


def _recurrence_results(inputs):
    outputs = Recurrence.apply(*inputs)
    loss = sum((o.double() * o.double().detach().cos()).sum() for o in outputs)
    return [*outputs, *torch.autograd.grad(loss, tensors_of(inputs))]


def _padded(model, sources):
    """Whether the fused recurrence masks the padding of these sources in a search."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, sources)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    encoder_out = model.encoder(src_tokens, src_lengths)
    incremental_state = {}
    with torch.no_grad():
        model.decoder(prev_tokens[:, :1], encoder_out, incremental_state=incremental_state)
    return model.decoder.get_incremental_state(incremental_state, "cache")[PADDED]


@pytest.mark.cpu_only
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
