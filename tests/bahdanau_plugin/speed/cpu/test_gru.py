"""speed/cpu/gru.py: nn.GRU's loop with oneDNN products, against nn.GRU itself."""

import pytest
import torch

from bahdanau_plugin.speed.cpu import gru, onednn_linear
from bahdanau_plugin.speed.cpu.gru import GRURecurrence, OneDNNGRU, run_gru
from bahdanau_plugin.speed.cpu.measured_choice import Chooser

# The CPU fast path: on a GPU none of it runs.
pytestmark = pytest.mark.cpu_only


def test_run_gru_gives_nn_gru_s_states_and_gradients():
    torch.manual_seed(0)
    rnn = torch.nn.GRU(5, 4, batch_first=True)
    inputs = torch.randn(3, 6, 5, requires_grad=True)
    ours, theirs = run_gru(rnn, inputs), rnn(inputs)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)
    upstream = torch.randn(3, 6, 4)
    parameters = [inputs, *rnn.parameters()]
    ours_grad = torch.autograd.grad((ours[0] * upstream).sum() + ours[1].sum(), parameters)
    theirs_grad = torch.autograd.grad((theirs[0] * upstream).sum() + theirs[1].sum(), parameters)
    for a, b in zip(ours_grad, theirs_grad):
        torch.testing.assert_close(a, b)


def test_the_recurrence_s_written_out_backward_is_its_forward_s_gradient():
    torch.manual_seed(0)
    input_drives = torch.randn(4, 3, 6, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(GRURecurrence.apply, (input_drives, weight, bias))


def test_without_gradients_run_gru_gives_nn_gru_s_states():
    torch.manual_seed(0)
    rnn = torch.nn.GRU(5, 4, batch_first=True)
    inputs = torch.randn(3, 6, 5)
    with torch.no_grad():
        for a, b in zip(run_gru(rnn, inputs), rnn(inputs)):
            torch.testing.assert_close(a, b)


@pytest.fixture
def fast_calls(monkeypatch):
    """The calls that took the loop, where it is measured faster."""
    taken = []
    monkeypatch.setattr(gru, "loop_is_faster", lambda rnn, inputs: True)
    monkeypatch.setattr(gru, "run_gru", lambda *inputs: taken.append("fast") or run_gru(*inputs))
    return taken


def test_a_one_layer_batch_first_float32_gru_from_zero_takes_the_loop(fast_calls):
    OneDNNGRU(5, 4, batch_first=True)(torch.randn(3, 6, 5))
    assert fast_calls == ["fast"]


def test_other_grus_and_inputs_are_nn_gru_s_own_forward(fast_calls):
    OneDNNGRU(5, 4, batch_first=True)(torch.randn(3, 6, 5), torch.zeros(1, 3, 4))
    OneDNNGRU(5, 4, batch_first=True, bidirectional=True)(torch.randn(3, 6, 5))
    OneDNNGRU(5, 4)(torch.randn(6, 3, 5))
    OneDNNGRU(5, 4, batch_first=True).double()(torch.randn(3, 6, 5, dtype=torch.float64))
    assert fast_calls == []


def test_where_nn_gru_s_loop_is_measured_faster_the_gru_is_nn_gru_s_own(fast_calls, monkeypatch):
    monkeypatch.setattr(gru, "loop_is_faster", lambda rnn, inputs: False)
    rnn = OneDNNGRU(5, 4, batch_first=True)
    inputs = torch.randn(3, 6, 5)
    expected = torch.nn.GRU.forward(rnn, inputs)
    states, last = rnn(inputs)
    assert fast_calls == []
    torch.testing.assert_close(states, expected[0], rtol=0, atol=0)


def test_a_gru_prepared_for_generation_gives_nn_gru_s_states(fast_calls, monkeypatch):
    monkeypatch.setattr(
        onednn_linear, "PACKED_WEIGHT_MIN_ELEMENTS", 0
    )  # pack even this small GRU's weights
    torch.manual_seed(0)
    fast = OneDNNGRU(5, 4, batch_first=True)
    inputs = torch.randn(3, 6, 5)
    expected = torch.nn.GRU.forward(fast, inputs)
    fast.make_generation_fast_(name="encoder.rnn")
    with torch.no_grad():
        for _ in range(2):  # packing its weights, then reading the packed copies
            for ours, theirs in zip(fast(inputs), expected):
                torch.testing.assert_close(ours, theirs)
    assert fast_calls == ["fast", "fast"]


def test_timing_the_loops_gives_the_model_s_gru_no_gradient(monkeypatch):
    monkeypatch.setattr(gru, "CHOOSER", Chooser(setting="auto"))
    rnn = OneDNNGRU(5, 4, batch_first=True)
    gru.loop_is_faster(rnn, torch.randn(3, 6, 5, requires_grad=True))
    assert all(parameter.grad is None for parameter in rnn.parameters())
