"""speed/cuda/graphs.py: the recurrence replayed from graphs recorded per bucket of shapes gives
Recurrence's values and gradients, whatever the padding of its bucket, the order of the calls and
the graphs recorded before. On a GPU (--device cuda) the graphs are CUDA's; on a CPU a recorder
that runs the recorded function again at each replay stands in for them, so that everything but
CUDA's recording is tested here too."""

import contextlib
import logging
from types import SimpleNamespace

import pytest
import torch

from bahdanau_plugin.speed.cuda import graphs
from bahdanau_plugin.speed.cuda.graphs import CapturedRecurrence, bucket
from bahdanau_plugin.speed.recurrence import Recurrence

from ....support.recurrence import Sizes, recurrence_inputs, tensors_of


class Rerun:
    """A stand-in for CUDA's graphs on a CPU: a replay runs the recorded function again, on the
    same tensors, as a graph's kernels would."""

    def __init__(self):
        self.recorded = 0

    def pool(self, device):
        return None

    def on(self, device):
        return contextlib.nullcontext()

    def synchronize(self, device):
        pass

    def record(self, pool, function, device):
        self.recorded += 1
        return SimpleNamespace(replay=function)


class Counted:
    """CUDA's graphs, counting the recorded ones."""

    def __init__(self, recorder):
        self.recorder, self.recorded = recorder, 0

    def __getattr__(self, name):
        return getattr(self.recorder, name)

    def record(self, pool, function, device):
        self.recorded += 1
        return self.recorder.record(pool, function, device)


@pytest.fixture
def recorder(device, monkeypatch):
    """What records the graphs here (CUDA's on a GPU), with a buffer of its own for the test."""
    monkeypatch.setattr(graphs, "_ARENAS", {})
    monkeypatch.setattr(graphs, "_POOLS", {})
    recorder = Counted(graphs.GRAPHS) if device.type == "cuda" else Rerun()
    monkeypatch.setattr(graphs, "GRAPHS", recorder)
    return recorder


def _results(function, inputs, seed=1):
    """Outputs and the gradients of a random weighting of them."""
    outputs = function(*inputs)
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    generator = torch.Generator(device="cpu").manual_seed(seed)
    weights = [
        torch.randn(o.shape, generator=generator, dtype=torch.float64, device="cpu").to(o)
        for o in outputs
    ]
    loss = sum((o * w).sum() for o, w in zip(outputs, weights))
    grads = torch.autograd.grad(loss, tensors_of(inputs))
    return [o.detach() for o in outputs], list(grads)


def _assert_same(ours, reference):
    for a, b in zip(ours[0] + ours[1], reference[0] + reference[1]):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


SIZES = {
    "on bucket boundaries": Sizes(rows=4, positions=4, sources=8),
    "padded in every dimension": Sizes(rows=3, positions=5, sources=6),
}


@pytest.mark.parametrize("attention", [True, False], ids=["rnnsearch", "rnnencdec"])
@pytest.mark.parametrize("padded", [True, False], ids=["masked", "unmasked"])
@pytest.mark.parametrize("keep_last_state", [False, True], ids=["training", "decoding on"])
@pytest.mark.parametrize("sizes", SIZES.values(), ids=SIZES.keys())
def test_replayed_graphs_give_recurrence_s_values_and_gradients(
    attention, padded, keep_last_state, sizes, recorder, device
):
    gru_steps = sizes.positions if keep_last_state else sizes.positions - 1
    inputs = recurrence_inputs(attention, padded, gru_steps, sizes, device=device)
    captured = CapturedRecurrence()
    _assert_same(_results(captured, inputs), _results(Recurrence.apply, inputs))
    _assert_same(_results(captured, inputs), _results(Recurrence.apply, inputs))  # replayed
    assert recorder.recorded == 2  # one forward graph and one backward graph, recorded once


def test_a_smaller_call_in_a_bucket_sees_nothing_of_a_larger_one_before_it(recorder, device):
    captured = CapturedRecurrence()
    larger = recurrence_inputs(sizes=Sizes(rows=4, positions=8, sources=8), device=device)
    smaller = recurrence_inputs(sizes=Sizes(rows=3, positions=6, sources=5), device=device, seed=2)
    _results(captured, larger)
    recorded = recorder.recorded
    _assert_same(_results(captured, smaller), _results(Recurrence.apply, smaller))
    assert recorder.recorded == recorded  # the same graphs


def test_two_forward_passes_before_their_backward_passes_give_each_its_own_gradients(
    recorder, device
):
    captured = CapturedRecurrence()
    first = recurrence_inputs(sizes=Sizes(rows=4, positions=4, sources=8), device=device, seed=3)
    second = recurrence_inputs(sizes=Sizes(rows=4, positions=4, sources=8), device=device, seed=4)
    first_states = captured(*first)[0]
    second_states = captured(*second)[0]  # the same graph: the first's trace is overwritten
    first_grads = torch.autograd.grad(first_states.sum(), tensors_of(first))
    second_grads = torch.autograd.grad(second_states.sum(), tensors_of(second))
    for inputs, grads in ((first, first_grads), (second, second_grads)):
        expected = torch.autograd.grad(Recurrence.apply(*inputs)[0].sum(), tensors_of(inputs))
        for ours, reference in zip(grads, expected):
            torch.testing.assert_close(ours, reference, rtol=1e-9, atol=1e-9)


def test_a_graph_that_needs_a_larger_buffer_makes_the_others_record_again(recorder, device):
    captured = CapturedRecurrence()
    small = recurrence_inputs(sizes=Sizes(rows=4, positions=4, sources=4), device=device)
    large = recurrence_inputs(sizes=Sizes(rows=8, positions=8, sources=8), device=device, seed=5)
    _results(captured, small)
    _results(captured, large)  # the buffer grows: the small bucket's graphs read the old one
    recorded = recorder.recorded
    _assert_same(_results(captured, small), _results(Recurrence.apply, small))
    assert recorder.recorded == recorded + 2  # its forward and backward graphs, again


def test_the_graphs_kept_are_the_most_recently_used(recorder, device, monkeypatch):
    monkeypatch.setattr(graphs, "MOST_GRAPHS", 2)
    captured = CapturedRecurrence()
    for positions in (4, 8, 12):
        _results(captured, recurrence_inputs(sizes=Sizes(positions=positions), device=device))
    assert [key[0][1] for key in captured._pairs] == [8, 12]


def test_where_recording_fails_the_recurrence_runs_without_graphs_with_one_warning(
    recorder, device, monkeypatch, caplog
):
    def fail(pool, function, device):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(recorder, "record", fail)
    captured = CapturedRecurrence()
    inputs = recurrence_inputs(device=device)
    with caplog.at_level(logging.WARNING, logger=graphs.__name__):
        _assert_same(_results(captured, inputs), _results(Recurrence.apply, inputs))
        _results(captured, inputs)
    assert [r.getMessage() for r in caplog.records] == [
        "the fast path's fused recurrence could not be recorded as a CUDA graph (operation not "
        "permitted when stream is capturing): it runs without graphs"
    ]


def test_buckets_add_less_than_4_or_a_quarter_and_few_distinct_sizes():
    sizes = range(1, 257)
    assert all(0 <= bucket(size) - size < max(4, size / 4) for size in sizes)
    assert len({bucket(size) for size in range(1, 65)}) == 12
