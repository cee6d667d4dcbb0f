"""One model: an edit to any of the paper's modules runs, compiled. For each module, the default
setting with the module edited computes what the plain modules compute with the edit, values and
gradients in training and the log-probabilities of a search, on the CPU and (--device cuda) on a
GPU; and the decoder's step is still compiled, with no warning: nothing steps aside. An edit made
after the model first ran takes effect the same way."""

import logging

import pytest
import torch
from torch import nn

from bahdanau_plugin.modules.attention import BahdanauAttention
from bahdanau_plugin.modules.conditional_decoder import ConditionalGRUDecoder
from bahdanau_plugin.modules.conditional_gru import ConditionalGRUCell
from bahdanau_plugin.modules.maxout_output import MaxoutOutput

from ..models.batches import SOURCES, TARGETS, prev_output_batch, source_batch
from ...support.models import build_tiny_model, randomize_
from ...support.speed import compiled_calls, messages, plain_modules

TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def energies_scaled_by_zero(energies):
    """Uniform attention: e_ij = 0 * v_a^T tanh(W_a s_{i-1} + U_a h_j)."""

    def edited(self, projected_state, projected_annotations):
        return 0 * energies(self, projected_state, projected_annotations)

    return edited


def weights_at_temperature_two(forward):
    """alpha_ij = softmax(e_ij / 2): BahdanauAttention.forward with its Eq. (6) edited."""

    def edited(self, state, annotations, projected_annotations, padding_mask):
        projected_state = self.state_projection(state.to(annotations.dtype))
        energies = self.energies(projected_state, projected_annotations)
        energies = energies.masked_fill(padding_mask.unsqueeze(1), float("-inf"))
        alpha = torch.softmax(energies / 2, dim=2)
        context = torch.bmm(alpha, annotations)
        return context, alpha

    return edited


def context_halved(forward):
    """c_i = 0.5 sum_j alpha_ij h_j (Eq. 5 edited)."""

    def edited(self, *inputs):
        context, alpha = forward(self, *inputs)
        return 0.5 * context, alpha

    return edited


def decoder_context_halved(context):
    """c_i halved where the decoder obtains it, with its term C c_i (either model's c_i)."""

    def edited(self, state, encoder_out, cache):
        context_i, context_drive, alpha = context(self, state, encoder_out, cache)
        return 0.5 * context_i, 0.5 * context_drive, alpha

    return edited


def reset_gate_after_the_product(forward):
    """The candidate state with torch.nn.GRU's reset gate, r_i * (U s_{i-1}), not the paper's
    U (r_i * s_{i-1}) (Eq. 4 edited)."""

    def edited(self, drive, state):
        gate_drive, candidate_drive = drive.split([2 * self.hidden_dim, self.hidden_dim], dim=-1)
        update, reset = torch.sigmoid(gate_drive + self.gate_weights(state)).chunk(2, dim=-1)
        candidate = torch.tanh(candidate_drive + reset * self.candidate_weights(state))
        return torch.lerp(state, candidate, update)

    return edited


def average_pooling(forward):
    """t_i pooled by the mean of each pair instead of its max (the deep output edited)."""

    def edited(self, prev_state, embedded, context):
        pre_activation = (
            self.state_weights(prev_state)
            + self.embedding_weights(embedded)
            + self.context_weights(context)
        )
        return pre_activation.view(*pre_activation.shape[:-1], self.maxout_dim, 2).mean(dim=-1)

    return edited


def halved_states(forward):
    """The encoder's GRU with its states halved (nn.GRU.forward edited, A.2.1)."""

    def edited(self, input, hx=None):
        output, last = forward(self, input, hx)
        return 0.5 * output, 0.5 * last

    return edited


def initial_state_through_a_sigmoid(initial_cache):
    """s_0 = sigmoid(W_s h) instead of tanh(W_s h) (A.2.2 edited)."""

    def edited(self, encoder_out):
        cache = initial_cache(self, encoder_out)
        cache["state"] = torch.sigmoid(self.initial_state(encoder_out["summary"]))
        return cache

    return edited


# part: (the class edited, its function, the edit, the models that have the part)
EDITS = {
    "alignment energies": (BahdanauAttention, "energies", energies_scaled_by_zero, ["rnnsearch"]),
    "alignment weights": (BahdanauAttention, "forward", weights_at_temperature_two, ["rnnsearch"]),
    "context": (BahdanauAttention, "forward", context_halved, ["rnnsearch"]),
    "decoder's context": (
        ConditionalGRUDecoder,
        "context",
        decoder_context_halved,
        ["rnnsearch", "rnnencdec"],
    ),
    "conditional GRU": (
        ConditionalGRUCell,
        "forward",
        reset_gate_after_the_product,
        ["rnnsearch", "rnnencdec"],
    ),
    "deep output": (MaxoutOutput, "forward", average_pooling, ["rnnsearch", "rnnencdec"]),
    "encoder GRU": (nn.GRU, "forward", halved_states, ["rnnsearch", "rnnencdec"]),
    "initial state": (
        ConditionalGRUDecoder,
        "initial_cache",
        initial_state_through_a_sigmoid,
        ["rnnsearch", "rnnencdec"],
    ),
}
CASES = [
    pytest.param(part, name, id=f"{part}-{name}")
    for part, (*_, names) in EDITS.items()
    for name in names
]


def _results(model):
    """The log-probabilities with every parameter's gradient (training), and without gradients
    (in evaluation mode, as a search runs)."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)

    def log_probs():
        output = model(src_tokens, src_lengths, prev_tokens)
        return model.get_normalized_probs(output, log_probs=True)

    model.train()
    training = log_probs()
    gradients = torch.autograd.grad(training.exp().mul(training).sum(), list(model.parameters()))
    model.eval()
    with torch.no_grad():
        searching = log_probs()
    return [training.detach(), *gradients, searching]


def _edit(part, monkeypatch):
    module_class, function, edit, _ = EDITS[part]
    monkeypatch.setattr(module_class, function, edit(getattr(module_class, function)))


@pytest.mark.parametrize("when", ["before building the model", "after its first run"])
@pytest.mark.parametrize("part, name", CASES)
def test_an_edited_module_runs_compiled_and_computes_what_the_edit_says(
    part, name, when, monkeypatch, caplog
):
    if when == "before building the model":
        _edit(part, monkeypatch)
    model = randomize_(build_tiny_model(name))
    if when == "after its first run":
        _results(model)
        _edit(part, monkeypatch)
    with compiled_calls(monkeypatch) as calls, caplog.at_level(
        logging.WARNING, logger="bahdanau_plugin"
    ):
        ours = _results(model)
    with plain_modules(monkeypatch):
        plain = _results(model)
    steps = max(map(len, TARGETS)) + 1
    assert calls == ["step"] * 2 * steps  # training, then the search's one call per position
    assert messages(caplog, logging.WARNING) == []
    for result, reference in zip(ours, plain):
        torch.testing.assert_close(result, reference, **TOLERANCE)
