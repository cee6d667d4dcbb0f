"""One model: an edit to the paper's modules runs on every device. For each part that the fast
path computes, an edited copy of the module's code gives what the plain modules give with that
edit, under ``auto`` and under ``fast``, on the CPU and (--device cuda) on a GPU, and where a fast
computation steps aside, one warning names the part; an unedited model still runs the fast path."""

import logging

import pytest
import torch
from torch import nn

from bahdanau_plugin.speed.cpu.deep_output import FusedDeepOutput
from bahdanau_plugin.modules.attention import BahdanauAttention
from bahdanau_plugin.modules.conditional_decoder import ConditionalGRUDecoder
from bahdanau_plugin.modules.conditional_gru import ConditionalGRUCell
from bahdanau_plugin.modules.maxout_output import MaxoutOutput

from ..models.batches import SOURCES, TARGETS, prev_output_batch, source_batch
from ...support.models import build_tiny_model, randomize_
from ...support.speed import fused_calls, plain_modules

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


# part: (the class edited, its function, the edit, the models that have the part, the warning: the
# words that name what steps aside, or None where nothing needs to)
EDITS = {
    "alignment energies": (
        BahdanauAttention,
        "energies",
        energies_scaled_by_zero,
        ["rnnsearch"],
        "the alignment model (Eq. 6) no longer matches the fast path's fused recurrence",
    ),
    "alignment weights": (
        BahdanauAttention,
        "forward",
        weights_at_temperature_two,
        ["rnnsearch"],
        "the alignment model (Eq. 6) no longer matches the fast path's fused recurrence",
    ),
    "context": (
        BahdanauAttention,
        "forward",
        context_halved,
        ["rnnsearch"],
        "the context (Eq. 5) no longer matches the fast path's fused recurrence",
    ),
    "decoder's context": (
        ConditionalGRUDecoder,
        "context",
        decoder_context_halved,
        ["rnnsearch", "rnnencdec"],
        "the context (Eq. 5) no longer matches the fast path's fused recurrence",
    ),
    "conditional GRU": (
        ConditionalGRUCell,
        "forward",
        reset_gate_after_the_product,
        ["rnnsearch", "rnnencdec"],
        "the conditional GRU (Eq. 4) no longer matches the fast path's fused recurrence",
    ),
    "deep output": (
        MaxoutOutput,
        "forward",
        average_pooling,
        ["rnnsearch", "rnnencdec"],
        "the deep output (t_i, maxout: A.2.2) no longer matches the fast path's fused deep output",
    ),
    "encoder GRU": (
        nn.GRU,
        "forward",
        halved_states,
        ["rnnsearch", "rnnencdec"],
        "Python loop no longer computes what nn.GRU computes",
    ),
    "initial state": (
        ConditionalGRUDecoder,
        "initial_cache",
        initial_state_through_a_sigmoid,
        ["rnnsearch", "rnnencdec"],
        None,
    ),
}
# The parts that only the CPU computes faster: elsewhere an edit to them has nothing to set aside.
CPU_ONLY = ("deep output", "encoder GRU")
CASES = [
    pytest.param(part, name, id=f"{part}-{name}")
    for part, (*_, names, _warning) in EDITS.items()
    for name in names
]
SETTINGS = pytest.mark.parametrize("setting", ["auto", "fast"])


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
    return [training, *gradients, searching]


def _edited_model(part, name, setting, fast_path_setting, monkeypatch):
    module_class, function, edit, _, _ = EDITS[part]
    monkeypatch.setattr(module_class, function, edit(getattr(module_class, function)))
    fast_path_setting(setting)
    return randomize_(build_tiny_model(name))


@SETTINGS
@pytest.mark.parametrize("part, name", CASES)
def test_an_edited_module_computes_what_the_plain_modules_compute_with_the_edit(
    part, name, setting, fast_path_setting, monkeypatch
):
    model = _edited_model(part, name, setting, fast_path_setting, monkeypatch)
    ours = _results(model)
    with plain_modules():
        plain = _results(model)
    for result, reference in zip(ours, plain):
        torch.testing.assert_close(result, reference, **TOLERANCE)


@pytest.mark.parametrize("part, name", CASES)
def test_where_an_edit_makes_the_fast_path_step_aside_one_warning_names_the_part(
    part, name, fast_path_setting, monkeypatch, caplog, device
):
    model = _edited_model(part, name, "fast", fast_path_setting, monkeypatch)
    with caplog.at_level(logging.WARNING, logger="bahdanau_plugin.speed"):
        _results(model)
        _results(model)  # the check is made once
    warnings = [record.getMessage() for record in caplog.records]
    expected = None if part in CPU_ONLY and device.type != "cpu" else EDITS[part][-1]
    if expected is None:
        assert warnings == []
    else:  # one, or for the encoder's GRU one per choice (forward and backward, and forward)
        assert warnings and len(set(warnings)) == len(warnings)
        assert all(expected in warning for warning in warnings)
        assert all(w.endswith(("runs as plain PyTorch", "nn.GRU runs")) for w in warnings)


def _fused_calls(model, monkeypatch):
    """How often the fused recurrence (with gradients) and the fused deep output ran in
    ``_results``, after a first run that checks them against the modules."""
    _results(model)
    deep_outputs = []
    forward = FusedDeepOutput.forward
    monkeypatch.setattr(
        FusedDeepOutput, "forward", lambda *inputs: deep_outputs.append(1) or forward(*inputs)
    )
    with fused_calls(monkeypatch) as calls:
        _results(model)
    return sum(calls), len(deep_outputs)


def _all_fused(device) -> tuple:
    """What ``_fused_calls`` counts where every fused form runs: the deep output's on a CPU."""
    return (1, 1 if device.type == "cpu" else 0)


def test_an_edit_outside_the_fused_forms_leaves_them_running(
    fast_path_setting, monkeypatch, device
):
    model = _edited_model("initial state", "rnnsearch", "fast", fast_path_setting, monkeypatch)
    assert _fused_calls(model, monkeypatch) == _all_fused(device)


@SETTINGS
@pytest.mark.parametrize("name", ["rnnsearch", "rnnencdec"])
def test_an_unedited_model_runs_its_fused_forms_without_a_warning(
    name, setting, fast_path_setting, monkeypatch, caplog, device
):
    fast_path_setting(setting)
    model = randomize_(build_tiny_model(name))
    with caplog.at_level(logging.WARNING, logger="bahdanau_plugin.speed"):
        assert _fused_calls(model, monkeypatch) == _all_fused(device)
    assert caplog.records == []


def test_a_forward_hook_on_a_module_the_fused_form_computes_for_runs_and_sets_it_aside(
    fast_path_setting, monkeypatch, caplog, device
):
    fast_path_setting("fast")
    model = randomize_(build_tiny_model("rnnsearch"))
    recorded = []
    hook = model.decoder.attention.register_forward_hook(
        lambda _module, _inputs, output: recorded.append(output[1])
    )
    with caplog.at_level(logging.WARNING, logger="bahdanau_plugin.speed"):
        assert _fused_calls(model, monkeypatch) == (0, _all_fused(device)[1])
    assert len(recorded) == 2 * 2 * (max(map(len, TARGETS)) + 1)  # every position, twice a run
    assert [record.getMessage() for record in caplog.records] == [
        "RNNsearchDecoder: the fast path's fused recurrence does not call attention, which has a "
        "forward hook: it runs as plain PyTorch while the hook is there"
    ]
    hook.remove()
    assert _fused_calls(model, monkeypatch) == _all_fused(device)
