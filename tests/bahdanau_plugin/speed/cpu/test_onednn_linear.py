"""speed/cpu/onednn_linear.py: nn.Linear's values and gradients, through oneDNN on CPU."""

import os

import pytest
import torch
import torch.nn.functional as F

from bahdanau_plugin.speed.cpu import onednn_linear as onednn
from bahdanau_plugin.speed.cpu.measured_choice import Chooser
from bahdanau_plugin.speed.cpu.onednn_linear import OneDNNLinear, linear
from tests.support.tools import python_program

# The CPU fast path: on a GPU none of it runs.
pytestmark = pytest.mark.cpu_only

TOLERANCE = dict(rtol=1e-5, atol=1e-5)


def inputs(shape, features_out=7, bias=True, dtype=torch.float32, seed=0):
    generator = torch.Generator(device="cpu").manual_seed(seed)
    x = torch.randn(*shape, generator=generator, dtype=dtype, requires_grad=True)
    weight = torch.randn(
        features_out, shape[-1], generator=generator, dtype=dtype, requires_grad=True
    )
    b = (
        torch.randn(features_out, generator=generator, dtype=dtype, requires_grad=True)
        if bias
        else None
    )
    return x, weight, b


def values_and_gradients(function, x, weight, bias):
    output = function(x, weight, bias)
    upstream = torch.arange(output.numel(), dtype=output.dtype).view_as(output).sin()
    tensors = [t for t in (x, weight, bias) if t is not None]
    return [output, *torch.autograd.grad(output, tensors, upstream)]


def test_float32_on_cpu_goes_through_onednn():
    x, weight, _ = inputs((3, 5))
    assert onednn.uses_onednn(x, weight)


@pytest.mark.parametrize("shape", [(6, 5), (2, 3, 5)], ids=["rows", "batch x time"])
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no bias"])
def test_values_and_gradients_are_f_linear_s(shape, bias):
    x, weight, b = inputs(shape, bias=bias)
    expected = values_and_gradients(F.linear, x, weight, b)
    for ours, reference in zip(values_and_gradients(linear, x, weight, b), expected):
        assert ours.shape == reference.shape
        torch.testing.assert_close(ours, reference, **TOLERANCE)


def test_without_gradients_the_values_are_f_linear_s():
    x, weight, b = inputs((2, 3, 5))
    with torch.no_grad():
        torch.testing.assert_close(linear(x, weight, b), F.linear(x, weight, b), **TOLERANCE)


def test_a_transposed_input_is_read_as_its_values():
    x, _, _ = inputs((5, 4))
    _, weight, b = inputs((4, 5))
    torch.testing.assert_close(linear(x.t(), weight, b), F.linear(x.t(), weight, b), **TOLERANCE)


def test_a_weight_sliced_from_a_larger_matrix_is_left_to_f_linear():
    x, weight, b = inputs((4, 5))
    assert not onednn.uses_onednn(x, weight[:, :4])
    assert torch.equal(linear(x[:, :4], weight[:, :4], b), F.linear(x[:, :4], weight[:, :4], b))


def test_float64_is_left_to_f_linear():
    x, weight, b = inputs((4, 5), dtype=torch.float64)
    assert not onednn.uses_onednn(x, weight)
    assert torch.equal(linear(x, weight, b), F.linear(x, weight, b))


def test_under_cpu_autocast_the_dtype_is_autocast_s():
    x, weight, b = inputs((4, 5))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not onednn.uses_onednn(x, weight)
        assert linear(x, weight, b).dtype == F.linear(x, weight, b).dtype == torch.bfloat16


def test_disabling_onednn_falls_back_to_f_linear():
    x, weight, b = inputs((4, 5))
    with torch.backends.mkldnn.flags(enabled=False):
        assert not onednn.uses_onednn(x, weight)
        assert torch.equal(linear(x, weight, b), F.linear(x, weight, b))


def test_a_torch_without_the_onednn_kernel_falls_back_to_f_linear(monkeypatch):
    monkeypatch.setattr(onednn, "_ONEDNN_LINEAR", None)
    onednn._onednn_linear_works.cache_clear()
    try:
        x, weight, b = inputs((4, 5))
        assert not onednn.uses_onednn(x, weight)
        assert torch.equal(linear(x, weight, b), F.linear(x, weight, b))
    finally:
        onednn._onednn_linear_works.cache_clear()


def test_an_empty_batch_gives_an_empty_output():
    x, weight, b = inputs((0, 5))
    assert linear(x, weight, b).shape == (0, 7)


def test_the_module_keeps_nn_linear_s_parameters_and_state_dict():
    torch.manual_seed(0)
    reference = torch.nn.Linear(5, 7)
    ours = OneDNNLinear(5, 7)
    assert ours.load_state_dict(reference.state_dict()) is not None
    assert list(ours.state_dict()) == ["weight", "bias"]
    x = torch.randn(3, 5)
    torch.testing.assert_close(ours(x), reference(x), **TOLERANCE)


def test_a_broadcast_upstream_gradient_gives_f_linear_s_gradients():
    x, weight, b = inputs((3, 5))
    ours = torch.autograd.grad(linear(x, weight, b).sum(), (x, weight, b))
    reference = torch.autograd.grad(F.linear(x, weight, b).sum(), (x, weight, b))
    for a, r in zip(ours, reference):
        torch.testing.assert_close(a, r, **TOLERANCE)


def test_mismatched_sizes_raise_f_linear_s_error():
    x, weight, b = inputs((3, 5))
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        linear(x[:, :4], weight, b)


@pytest.fixture
def reorders(monkeypatch):
    """The storages of the weights that oneDNN's reorder into its blocked layout was called on
    (the measured choice packs weights of its own too, to time the packed product)."""
    reordered = []
    reorder = onednn._ONEDNN_REORDER_WEIGHT

    def counting(weight, batch_size):
        reordered.append(weight.data_ptr())
        return reorder(weight, batch_size)

    monkeypatch.setattr(onednn, "_ONEDNN_REORDER_WEIGHT", counting)
    return reordered


@pytest.fixture
def pack_every_weight(monkeypatch):
    """The tests' layers are far below the size from which weights are packed."""
    monkeypatch.setattr(onednn, "PACKED_WEIGHT_MIN_ELEMENTS", 0)


def _prepared_for_generation(features_in=5, features_out=7):
    torch.manual_seed(0)
    layer = OneDNNLinear(features_in, features_out)
    layer.make_generation_fast_(name="layer", beamable_mm_beam_size=5)  # fairseq's keywords
    return layer


def test_a_layer_prepared_for_generation_gives_f_linear_s_values(pack_every_weight):
    layer = _prepared_for_generation()
    x = torch.randn(2, 3, 5)
    with torch.no_grad():
        for _ in range(2):  # the first call packs the weight, the second reads the packed copy
            torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), **TOLERANCE)


def test_a_layer_prepared_for_generation_reorders_its_weight_once_for_many_products(
    reorders, pack_every_weight
):
    layer = _prepared_for_generation()
    with torch.no_grad():
        for rows in (1, 4, 80, 3):
            layer(torch.randn(rows, 5))
    assert reorders.count(layer.weight.data_ptr()) == 1


def test_a_layer_not_prepared_for_generation_leaves_the_reorder_to_each_product(
    reorders, pack_every_weight
):
    torch.manual_seed(0)
    with torch.no_grad():
        OneDNNLinear(5, 7)(torch.randn(3, 5))
    assert reorders == []


def test_a_weight_under_the_packing_size_is_left_to_each_product(reorders):
    layer = _prepared_for_generation()
    with torch.no_grad():
        layer(torch.randn(3, 5))
    assert reorders == []


def test_an_output_layer_s_weight_is_packed(reorders):
    torch.manual_seed(0)
    layer = OneDNNLinear(256, 9642)
    layer.make_generation_fast_()
    with torch.no_grad():
        layer(torch.randn(80, 256))
        layer(torch.randn(75, 256))
    assert reorders.count(layer.weight.data_ptr()) == 1


def test_a_torch_without_the_reorder_kernel_multiplies_with_the_plain_weight(
    monkeypatch, pack_every_weight
):
    monkeypatch.setattr(onednn, "_ONEDNN_REORDER_WEIGHT", None)
    layer = _prepared_for_generation()
    x = torch.randn(3, 5)
    with torch.no_grad():
        torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), **TOLERANCE)


def _write_in_place(weight):
    weight.mul_(-2.0)  # a new version


def _replace(weight):
    weight.data = torch.randn(7, 5)  # a new storage, with the version unchanged


@pytest.mark.parametrize(
    "change", [_write_in_place, _replace], ids=["written in place", "replaced"]
)
def test_a_weight_changed_after_preparation_is_packed_again(change, pack_every_weight):
    layer = _prepared_for_generation()
    x = torch.randn(3, 5)
    with torch.no_grad():
        layer(x)
        change(layer.weight)
        torch.testing.assert_close(layer(x), F.linear(x, layer.weight, layer.bias), **TOLERANCE)


def test_with_gradients_a_prepared_layer_gives_f_linear_s_values_and_gradients(pack_every_weight):
    layer = _prepared_for_generation()
    x = torch.randn(3, 5, requires_grad=True)
    expected = values_and_gradients(F.linear, x, layer.weight, layer.bias)
    with torch.no_grad():
        layer(x)  # packs its weight
    for ours, reference in zip(values_and_gradients(linear, x, layer.weight, layer.bias), expected):
        torch.testing.assert_close(ours, reference, **TOLERANCE)


# Many row counts through the plugin's linear, as sentence lengths and finished beams give; prints
# how much the peak resident memory grew, in MiB. The peak is this program's own (VmHWM):
# getrusage's ru_maxrss also counts the parent's before exec, as subprocess starts children with
# vfork, so that under a large test process it hid most of the growth.
MANY_ROW_COUNTS = """
import re
import bahdanau_plugin
import torch
from bahdanau_plugin.speed.cpu.onednn_linear import linear

def peak_mib():
    with open("/proc/self/status") as status:
        return int(re.search(r"VmHWM:\\s+(\\d+) kB", status.read()).group(1)) / 1024

weight = torch.randn(768, 256)
linear(torch.randn(1, 256), weight)
before = peak_mib()
for rows in range(2, 600, 2):
    linear(torch.randn(rows, 256), weight)
print(peak_mib() - before)
"""


def memory_growth_over_many_row_counts(cache_entries=None):
    env = {key: value for key, value in os.environ.items() if key not in onednn.ONEDNN_CACHE_SIZES}
    if cache_entries is not None:
        env.update({variable: str(cache_entries) for variable in onednn.ONEDNN_CACHE_SIZES})
    completed = python_program(MANY_ROW_COUNTS, env={**env, "OMP_NUM_THREADS": "1"}, timeout=120)
    return float(completed.stdout.split()[-1])


def test_the_plugin_bounds_onednn_s_kernel_caches():
    assert memory_growth_over_many_row_counts() < 40


def test_onednn_s_default_caches_grow_with_every_row_count():
    """What the bound above prevents (oneDNN's and ideep's defaults are 1024 entries each).
    Measured on the project's machine: about 300 MiB, where the bound keeps it under 40
    (2026-11-24; read from ru_maxrss, which also counts the test process's peak, a whole test run
    showed as little as 52)."""
    assert memory_growth_over_many_row_counts(cache_entries=1024) > 60


def test_a_cache_size_the_user_chose_is_kept(monkeypatch):
    monkeypatch.setenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY", "256")
    onednn.limit_onednn_caches()
    assert os.environ["ONEDNN_PRIMITIVE_CACHE_CAPACITY"] == "256"


def test_where_aten_is_measured_faster_a_product_is_f_linear_s(monkeypatch):
    monkeypatch.setattr(onednn, "onednn_is_faster", lambda *shapes: False)
    x, weight, b = inputs((2, 3, 5))
    assert torch.equal(linear(x, weight, b), F.linear(x, weight, b))


def test_the_plain_setting_turns_the_fast_path_off(monkeypatch):
    monkeypatch.setattr(onednn.CHOOSER, "_setting", "plain")
    x, weight, _ = inputs((3, 5))
    assert not onednn.runs_in_cpu_float32(x, weight)


@pytest.fixture
def measuring(monkeypatch):
    """A chooser that measures (the tests' own takes every fast computation unmeasured)."""
    chooser = Chooser(setting="auto")
    monkeypatch.setattr(onednn, "CHOOSER", chooser)
    return chooser


@pytest.mark.parametrize("training", [True, False], ids=["with gradients", "forward"])
def test_choosing_a_library_times_both_and_leaves_torch_s_random_numbers_alone(measuring, training):
    torch.manual_seed(0)
    onednn.onednn_is_faster(7, 5, 3, training)
    drawn = torch.rand(3)
    torch.manual_seed(0)
    assert torch.equal(drawn, torch.rand(3))
    assert len(measuring.choices) == 1


def test_row_counts_are_chosen_for_by_their_power_of_two(measuring):
    for rows in (65, 80, 128, 300, 5000):
        onednn.onednn_is_faster(7, 5, rows, training=False)
    assert len(measuring.choices) == 2  # 65 to 128 rows, and 256 or more


def test_for_a_weight_kept_for_generation_onednn_is_timed_with_the_packed_weight(
    measuring, reorders
):
    layer = _prepared_for_generation(256, 4096)  # 2^20 elements: kept packed
    with torch.no_grad():
        layer(torch.randn(3, 256))
    ((choice, _threads),) = measuring.choices
    assert choice[-1] == "(weight packed for generation)"
    assert len(reorders) >= 1  # the probe's copy, and the layer's own if oneDNN was faster
