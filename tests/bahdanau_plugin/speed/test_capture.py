"""speed/capture.py: the decoder's loop replayed from graphs recorded per bucket of shapes gives
the values and gradients of the modules' own loop, whatever the padding of its bucket, the order of
the calls, the graphs recorded before and the edits made or parameters frozen since, a second
backward pass through one forward pass included; higher-order gradients are refused in one line;
nothing is replayed under a hook, a mode or a transform of torch.func; a bug in an edit raises its
own error alone. On a GPU (--device cuda) the graphs are CUDA's; on a CPU a recorder that runs the
recorded function again at each replay stands in for them, so that everything but CUDA's
recording is tested here too."""

import contextlib
import logging
import re
from types import SimpleNamespace

import pytest
import torch

from bahdanau_plugin.modules.attention import BahdanauAttention
from bahdanau_plugin.modules.conditional_gru import ConditionalGRUCell
from bahdanau_plugin.speed import capture
from bahdanau_plugin.speed.capture import bucket

from ...support.models import build_tiny_model, randomize_
from ...support.speed import MODES, compiled_calls, messages, plain_modules


class Rerun:
    """A stand-in for CUDA's graphs on a CPU: a replay runs the recorded function again, on the
    same tensors, as a graph's kernels would (with gradients, which a replay does not look at).
    As CUDA's, it records one run of the function, on the side stream only."""

    def __init__(self):
        self.on_side_stream = False

    @contextlib.contextmanager
    def side_stream(self, device):
        self.on_side_stream = True
        try:
            yield
        finally:
            self.on_side_stream = False

    def record(self, function, device):
        assert self.on_side_stream, "recorded outside the side stream"
        function()

        def replay():
            with torch.enable_grad():
                function()

        return SimpleNamespace(replay=replay)


class Counted:
    """A recorder, counting the graphs it records."""

    def __init__(self, recorder):
        self.recorder, self.recorded = recorder, 0
        self.side_stream = recorder.side_stream

    def record(self, function, device):
        self.recorded += 1
        return self.recorder.record(function, device)


@pytest.fixture
def recorder(device, monkeypatch):
    """What records the graphs here (CUDA's on a GPU), with a buffer of its own for the test; on
    a CPU the loop is replayed where a GPU's would be."""
    monkeypatch.setattr(capture, "_ARENAS", {})
    monkeypatch.setattr(capture, "_CAPTURES", capture.weakref.WeakKeyDictionary())
    recorder = Counted(capture.GRAPHS if device.type == "cuda" else Rerun())
    monkeypatch.setattr(capture, "GRAPHS", recorder)
    if device.type == "cpu":
        monkeypatch.setattr(
            capture,
            "applies",
            lambda drives: torch.is_grad_enabled() and not capture.setting.eager(),
        )
    return recorder


def _batch(model, rows: int, sources: int, positions: int, seed: int = 0):
    """Random sentences, the first left-padded by 2 (sources of at least 3)."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    dictionary = model.encoder.dictionary

    def tokens(count, length):
        drawn = torch.randint(
            dictionary.nspecial, len(dictionary), (count, length), generator=generator, device="cpu"
        )
        drawn[:, -1] = dictionary.eos()
        return drawn.to(torch.get_default_device())

    source = tokens(rows, sources)
    source[0, :2] = dictionary.pad()
    lengths = source.ne(dictionary.pad()).sum(dim=1)
    return source, lengths, tokens(rows, positions)


def _results(model, batch, seed: int = 1):
    """The log-probabilities, alpha, and the gradients of a random weighting of both."""
    output = model(*batch)
    log_probs = model.get_normalized_probs(output, log_probs=True)
    outputs = [log_probs] + [a for a in output[1]["attn"] if a is not None]
    generator = torch.Generator(device="cpu").manual_seed(seed)
    loss = sum(
        (o * torch.randn(o.shape, generator=generator, device="cpu").to(o)).sum() for o in outputs
    )
    gradients = torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)
    return [o.detach() for o in outputs] + [g for g in gradients if g is not None]


def _gradients(model, batch):
    """Each parameter's .grad after backward() as fairseq-train runs it (None for a frozen one)."""
    model.zero_grad(set_to_none=True)
    model.get_normalized_probs(model(*batch), log_probs=True).sum().backward()
    gradients = [parameter.grad for parameter in model.parameters()]
    model.zero_grad(set_to_none=True)
    return gradients


def _assert_same(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert (a - b).abs().max() <= 1e-5 * max(1.0, b.abs().max().item())


SIZES = {"on bucket boundaries": (4, 8, 4), "padded in every dimension": (3, 6, 5)}


@pytest.mark.parametrize("sizes", SIZES.values(), ids=SIZES.keys())
def test_the_replayed_loop_gives_the_modules_values_and_gradients(
    model_name, sizes, recorder, monkeypatch
):
    model = randomize_(build_tiny_model(model_name))
    batch = _batch(model, *sizes)
    ours = _results(model, batch)
    with plain_modules(monkeypatch):
        plain = _results(model, batch)
    assert recorder.recorded == 2  # a forward and a backward graph
    _assert_same(ours, plain)


# A batch, then one of the same bucket (rows, sources, target positions)
ORDERS = {
    "a smaller after a larger": ((4, 8, 4), (3, 6, 3)),
    "a larger after a smaller": ((3, 5, 3), (4, 8, 4)),
}


@pytest.mark.parametrize("first, then", ORDERS.values(), ids=ORDERS.keys())
def test_a_batch_after_another_of_its_bucket_sees_nothing_of_it(first, then, recorder, monkeypatch):
    """The graphs are recorded at the bucket's sizes, not at its first batch's."""
    model = randomize_(build_tiny_model("rnnsearch"))
    _results(model, _batch(model, *first, seed=2))
    batch = _batch(model, *then)
    ours = _results(model, batch)
    with plain_modules(monkeypatch):
        plain = _results(model, batch)
    assert recorder.recorded == 2  # one bucket
    _assert_same(ours, plain)


def test_two_forward_passes_before_their_backward_passes_give_each_its_own_gradients(
    recorder, monkeypatch
):
    model = randomize_(build_tiny_model("rnnsearch"))
    first, second = _batch(model, 4, 8, 4, seed=3), _batch(model, 3, 5, 7, seed=4)
    losses = [model(*batch)[0].sum() for batch in (first, second)]
    ours = [
        torch.autograd.grad(loss, list(model.parameters()), allow_unused=True) for loss in losses
    ]
    with plain_modules(monkeypatch):
        losses = [model(*batch)[0].sum() for batch in (first, second)]
        plain = [
            torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)
            for loss in losses
        ]
    for mine, theirs in zip(ours, plain):
        _assert_same([g for g in mine if g is not None], [g for g in theirs if g is not None])


def test_a_second_backward_pass_through_one_forward_pass_gives_the_modules_gradients(
    recorder, monkeypatch
):
    """retain_graph=True (one output word's gradients, then another's): a replayed backward pass
    reuses the memory its forward pass kept, so a second one replays the forward pass first."""
    model = randomize_(build_tiny_model("rnnsearch"))
    batch = _batch(model, 3, 6, 5)

    def twice():
        log_probs = model.get_normalized_probs(model(*batch), log_probs=True)
        parameters = list(model.parameters())
        first = torch.autograd.grad(log_probs[..., 4].sum(), parameters, retain_graph=True)
        second = torch.autograd.grad(log_probs[..., 5].sum(), parameters)
        return [*first, *second]

    ours = twice()
    with plain_modules(monkeypatch):
        plain = twice()
    assert recorder.recorded == 2
    _assert_same(ours, plain)


def test_higher_order_gradients_through_the_replayed_loop_are_refused_naming_the_setting(
    recorder,
):
    """create_graph=True (a gradient penalty): a graph's backward pass is replayed, not recorded
    as operations to differentiate again, so the second-order terms of the loop would be missing
    from the gradients without a word."""
    model = randomize_(build_tiny_model("rnnsearch"))
    parameters = list(model.parameters())
    log_probs = model.get_normalized_probs(model(*_batch(model, 3, 6, 5)), log_probs=True)
    refusal = "no higher-order gradients through CUDA graphs: set BAHDANAU_FAST_PATH=plain"
    with pytest.raises(RuntimeError, match="^" + re.escape(refusal) + "$"):
        torch.autograd.grad(log_probs.sum(), parameters, create_graph=True)


def test_within_a_recording_no_gradient_reaches_a_parameter(recorder, monkeypatch):
    """Its leaves stand in for them: a parameter's gradient accumulator made on another stream
    (the caller's, or held by DDP) would break a CUDA graph's capture."""
    model = randomize_(build_tiny_model("rnnsearch"))
    reached, recording = [], [False]
    for name, parameter in model.named_parameters():
        parameter.register_hook(
            lambda grad, name=name: reached.append(name) if recording[0] else None
        )
    record = recorder.record

    def watched(function, device):
        recording[0] = True
        try:
            return record(function, device)
        finally:
            recording[0] = False

    monkeypatch.setattr(recorder, "record", watched)
    batch = _batch(model, 3, 6, 5)
    ours = _results(model, batch)
    with plain_modules(monkeypatch):
        plain = _results(model, batch)
    assert recorder.recorded == 2 and reached == []
    _assert_same(ours, plain)


def test_recording_more_buckets_compiles_the_step_no_more(recorder, monkeypatch):
    """The parameters' stand-ins are new tensors in each bucket's recordings: compiled code keeps
    serving them (torch guards what they are, not which)."""
    model = randomize_(build_tiny_model("rnnsearch"))
    _results(model, _batch(model, 3, 6, 5))
    compiled = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    with compiled_calls(monkeypatch) as calls:
        for sizes in ((4, 9, 9), (7, 14, 13)):
            _results(model, _batch(model, *sizes))
    assert recorder.recorded == 6 and "step" in calls
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == compiled


def test_a_bucket_that_needs_a_larger_buffer_makes_the_others_record_again(recorder):
    model = randomize_(build_tiny_model("rnnsearch"))
    small, large = _batch(model, 4, 4, 4), _batch(model, 16, 16, 16)
    for batch in (small, large, small):
        _results(model, batch)
    assert recorder.recorded == 6  # small, large, small again: the buffer grew for large


def test_the_buckets_kept_are_the_most_recently_used(recorder, monkeypatch):
    monkeypatch.setattr(capture, "MOST_BUCKETS", 1)
    model = randomize_(build_tiny_model("rnnsearch"))
    first, second = _batch(model, 4, 4, 4), _batch(model, 4, 4, 8)
    for batch in (first, second, second, first):
        _results(model, batch)
    assert recorder.recorded == 6


def test_an_edit_to_a_module_records_the_loop_again(recorder, monkeypatch):
    model = randomize_(build_tiny_model("rnnencdec"))
    batch = _batch(model, 4, 4, 4)
    _results(model, batch)
    forward = ConditionalGRUCell.forward
    monkeypatch.setattr(
        ConditionalGRUCell, "forward", lambda self, *inputs: 0.5 * forward(self, *inputs)
    )
    ours = _results(model, batch)
    with plain_modules(monkeypatch):
        edited = _results(model, batch)
    assert recorder.recorded == 4
    _assert_same(ours, edited)


def test_a_part_frozen_after_a_recording_records_the_loop_again(recorder, monkeypatch):
    """Which parameters a graph's backward pass gives gradients is recorded with it: the GRU frozen
    (requires_grad_(False)) after a recording gets none, and the rest theirs, as eagerly."""
    model = randomize_(build_tiny_model("rnnsearch"))
    batch = _batch(model, 4, 4, 4)
    _results(model, batch)
    model.decoder.gru.requires_grad_(False)
    ours = _gradients(model, batch)
    with plain_modules(monkeypatch):
        plain = _gradients(model, batch)
    assert recorder.recorded == 4
    assert [g is None for g in ours] == [not p.requires_grad for p in model.parameters()]
    _assert_same([g for g in ours if g is not None], [g for g in plain if g is not None])


def test_a_buffer_replaced_by_another_tensor_records_the_loop_again(recorder, monkeypatch):
    """A graph reads a tensor where it was when recorded: one put in its place is elsewhere."""
    energies = BahdanauAttention.energies
    monkeypatch.setattr(
        BahdanauAttention, "energies", lambda self, *inputs: self.scale * energies(self, *inputs)
    )
    model = randomize_(build_tiny_model("rnnsearch"))
    model.decoder.attention.register_buffer("scale", torch.tensor(1.0))
    batch = _batch(model, 4, 4, 4)
    _results(model, batch)
    model.decoder.attention.scale = torch.tensor(3.0)
    ours = _results(model, batch)
    with plain_modules(monkeypatch):
        plain = _results(model, batch)
    assert recorder.recorded == 4
    _assert_same(ours, plain)


def test_where_recording_fails_the_loop_runs_without_graphs_with_one_warning(
    recorder, monkeypatch, caplog
):
    def failing(function, device):
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    monkeypatch.setattr(recorder, "record", failing)
    model = randomize_(build_tiny_model("rnnsearch"))
    batch = _batch(model, 3, 6, 5)
    with caplog.at_level(logging.WARNING, logger="bahdanau_plugin.speed"):
        ours = _results(model, batch)
        _results(model, batch)
    with plain_modules(monkeypatch):
        plain = _results(model, batch)
    assert messages(caplog, logging.WARNING) == [
        "RNNsearchDecoder's recurrence could not be recorded as a CUDA graph (CUDA error: "
        "operation not permitted when stream is capturing): it runs without graphs"
    ]
    _assert_same(ours, plain)


def test_a_bug_in_an_edit_raises_its_own_error_alone_not_as_a_failed_recording(
    recorder, monkeypatch, caplog
):
    energies = BahdanauAttention.energies
    monkeypatch.setattr(
        BahdanauAttention, "energies", lambda self, *inputs: energies(self, *inputs) @ torch.eye(2)
    )
    model = randomize_(build_tiny_model("rnnsearch"))
    with compiled_calls(monkeypatch), caplog.at_level(logging.WARNING, logger="bahdanau_plugin"):
        with pytest.raises(RuntimeError, match="shapes cannot be multiplied") as raised:
            _results(model, _batch(model, 3, 6, 5))
    assert raised.value.__context__ is None and raised.value.__cause__ is None
    assert messages(caplog, logging.WARNING) == []


class Graph:
    """A stand-in for torch.cuda.CUDAGraph, telling what was called of it in ``events``; its
    capture's end fails where ``failing``, as CUDA's does after an error within the capture."""

    def __init__(self, events: list, failing: bool = False):
        self.events, self.failing = events, failing

    def capture_begin(self, pool, capture_error_mode):
        self.events.append(("begin", pool))

    def capture_end(self):
        self.events.append("end")
        if self.failing:
            raise RuntimeError(
                "CUDA error: operation failed due to a previous error during capture"
            )


def _cuda_graphs(monkeypatch, events: list, failing: bool = False):
    graphs, device = capture.CUDAGraphs(), torch.device("cuda", 0)
    graphs._devices[device] = [None, SimpleNamespace(id=(0, 7)), None]
    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: Graph(events, failing))
    return graphs, device


def test_a_cuda_graph_records_one_run_of_the_function_into_the_pool_held(monkeypatch):
    """The first pass (which compiles, and consumes autograd's graph in a backward pass) runs
    before, not inside ``record``: a second run of a backward pass would find its graph freed."""
    events = []
    graphs, device = _cuda_graphs(monkeypatch, events)
    graph = graphs.record(lambda: events.append("run"), device)
    assert isinstance(graph, Graph) and events == [("begin", (0, 7)), "run", "end"]


def test_the_latest_graph_of_a_pool_is_held_while_the_pool_is(monkeypatch):
    """torch refuses to record into a pool whose graphs were all freed: after a model's graphs
    went with it, the next model's recordings would fail."""
    graphs, device = _cuda_graphs(monkeypatch, [])
    for _ in range(2):
        latest = graphs.record(lambda: None, device)
        assert graphs._devices[device][2] is latest


def test_a_failed_recording_ends_its_capture_tells_its_first_error_and_leaves_its_pool(monkeypatch):
    """torch leaves the pool of a capture that failed marked as being recorded to: the next
    recording would fail on it, in this model or the next one the process trains."""
    events = []
    graphs, device = _cuda_graphs(monkeypatch, events, failing=True)

    def failing():
        events.append("run")
        raise RuntimeError("CUDA error: operation not permitted when stream is capturing")

    with pytest.raises(RuntimeError, match="not permitted when stream is capturing"):
        graphs.record(failing, device)
    assert events == [("begin", (0, 7)), "run", "end"] and device not in graphs._devices


HOOKS = {
    "forward": lambda module, calls: module.register_forward_hook(lambda *_: calls.append(1)),
    "backward": lambda module, calls: module.register_full_backward_hook(
        lambda *_: calls.append(1)
    ),
}


@pytest.mark.parametrize("register", HOOKS.values(), ids=HOOKS.keys())
def test_while_a_hook_is_on_a_module_of_the_decoder_nothing_is_replayed(
    register, recorder, monkeypatch
):
    """A replay of CUDA's graphs would not call a hook: it runs at every call, as registered."""
    model = randomize_(build_tiny_model("rnnsearch"))
    batch = _batch(model, 3, 6, 5)
    calls, plain_calls = [], []
    hook = register(model.decoder.attention, calls)
    ours = _results(model, batch)
    hook.remove()
    hook = register(model.decoder.attention, plain_calls)
    with plain_modules(monkeypatch):
        plain = _results(model, batch)
    assert recorder.recorded == 0
    assert len(calls) == len(plain_calls) > 0
    _assert_same(ours, plain)


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_while_a_mode_is_on_nothing_is_replayed(mode, recorder, monkeypatch):
    """A replay of CUDA's graphs would not reach a mode: it sees every operation, as it expects."""
    model = randomize_(build_tiny_model("rnnsearch"))
    batch = _batch(model, 3, 6, 5)
    with mode() as seen:
        ours = _results(model, batch)
    with plain_modules(monkeypatch), mode() as plain_seen:
        plain = _results(model, batch)
    assert recorder.recorded == 0
    assert seen.count == plain_seen.count > 0
    _assert_same(ours, plain)


def test_under_a_torch_func_transform_nothing_is_replayed_and_later_calls_are(
    recorder, monkeypatch
):
    """torch.func.grad of the loss in the weights: a replay would not see the transform's wrapped
    weights, and a recording tried there would fail, which would leave the loop without graphs
    for good."""
    model = randomize_(build_tiny_model("rnnsearch"))
    batch = _batch(model, 3, 6, 5)
    weights = {name: parameter.detach() for name, parameter in model.named_parameters()}

    def loss(weights):
        output = torch.func.functional_call(model, weights, batch)
        return model.get_normalized_probs(output, log_probs=True).sum()

    ours = list(torch.func.grad(loss)(weights).values())
    assert recorder.recorded == 0
    with plain_modules(monkeypatch):
        plain = list(torch.func.grad(loss)(weights).values())
    _assert_same(ours, plain)
    _results(model, batch)
    assert recorder.recorded == 2


@pytest.fixture
def tf32_setting():
    """torch's setting of TF32 in a GPU's float32 products, as it was before the test."""
    matmul = torch.backends.cuda.matmul
    before = matmul.fp32_precision
    yield matmul
    matmul.fp32_precision = before


def test_switching_tf32_records_the_loop_again_by_either_of_torch_s_settings(
    recorder, tf32_setting
):
    """TF32 is recorded into a graph's products, whichever of torch's two ways switched it."""
    model = randomize_(build_tiny_model("rnnsearch"))
    batch = _batch(model, 4, 4, 4)
    for tf32 in ("ieee", "legacy", "ieee", "tf32"):
        if tf32 == "legacy":
            tf32_setting.allow_tf32 = True
        else:
            tf32_setting.fp32_precision = tf32
        _results(model, batch)
    assert recorder.recorded == 2 * 2  # float32, then TF32 (the same by either way)


def test_without_gradients_under_autocast_or_set_to_plain_nothing_is_replayed(
    device, fast_path_setting
):
    drives = torch.zeros(2, 3, 6, device=device)
    assert not capture.applies(drives) or device.type == "cuda"
    with torch.no_grad():
        assert not capture.applies(drives)
    with torch.autocast(device.type, dtype=torch.bfloat16):
        assert not capture.applies(drives)
    fast_path_setting("plain")
    assert not capture.applies(drives)


def test_buckets_add_less_than_4_or_a_quarter_and_few_distinct_sizes():
    sizes = range(1, 257)
    assert all(0 <= bucket(size) - size < max(4, size / 4) for size in sizes)
    assert len({bucket(size) for size in sizes}) == 20


def test_target_positions_are_rounded_up_to_a_multiple_of_4():
    rounded = {1: 4, 4: 4, 5: 8, 49: 52, 51: 52, 53: 56, 130: 132}
    assert {size: bucket(size, coarse=False) for size in rounded} == rounded
