"""modules/full_precision.py: a module that keeps and computes in full precision whatever precision
the rest of the model is converted to."""

import torch
from torch import nn

from bahdanau_plugin.modules.full_precision import FullPrecisionModule, in_own_precision


class Scaling(FullPrecisionModule):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.tensor([1e-8, 3.0]))

    @in_own_precision
    def forward(self, values, mask):
        return (values * self.weight).masked_fill(mask, 0.0)


def test_converting_to_half_precision_leaves_the_parameters_bit_for_bit():
    module = Scaling()
    module.half()
    module.to(torch.bfloat16)
    assert module.weight.dtype == torch.float32
    assert module.weight[0].item() == torch.tensor(1e-8).item()


def test_other_conversions_apply_as_usual():
    assert Scaling().double().weight.dtype == torch.float64


def test_a_method_in_own_precision_computes_on_its_inputs_in_the_module_s_precision():
    values = torch.ones(2, dtype=torch.bfloat16)
    output = Scaling()(values, torch.tensor([False, True]))
    assert output.dtype == torch.float32
    assert output.tolist() == [torch.tensor(1e-8).item(), 0.0]


class Product(FullPrecisionModule):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2, 2))

    @in_own_precision
    def forward(self, values):
        return values @ self.weight  # bfloat16 under autocast, were autocast on here


def test_a_method_in_own_precision_runs_with_autocast_off(device):
    with torch.autocast(device.type, dtype=torch.bfloat16):
        inside = Product()(torch.ones(2, 2))
        after = inside @ torch.ones(2, 2)
    assert inside.dtype == torch.float32
    assert after.dtype == torch.bfloat16  # autocast on again after the call


def test_own_precision_gives_a_tensor_in_the_module_s_precision():
    assert Product().own_precision(torch.ones(1, dtype=torch.float16)).dtype == torch.float32
