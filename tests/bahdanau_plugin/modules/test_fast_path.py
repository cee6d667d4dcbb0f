"""modules/fast_path.py: where a faster computation plugs in; with none offered, a model keeps its
torch layers and runs the modules' own code."""

import pytest
import torch
from torch import nn

from bahdanau_plugin.modules import fast_path


class FastLinear(nn.Linear):
    @classmethod
    def holding(cls, layer):
        faster = cls(layer.in_features, layer.out_features, layer.bias is not None, device="meta")
        faster.weight, faster.bias = layer.weight, layer.bias
        return faster


class SubclassedLinear(nn.Linear):
    """A layer of the model's own that derives from nn.Linear: not torch's layer itself."""


class Form(nn.Module):
    """A fused form that takes a call where ``taken`` says so, and computes twice plain's."""

    def __init__(self, taken=True):
        super().__init__()
        self.taken = taken

    def takes(self, plain, *inputs):
        return self.taken

    def forward(self, plain, *inputs):
        return 2 * plain(*inputs)


@pytest.fixture
def offered(monkeypatch):
    """A fast path that offers FastLinear and Form, on or off as the test sets ``state["on"]``."""
    state = {"on": True}
    registered = fast_path.FastPath(
        layers={nn.Linear: FastLinear}, forms={"form": Form}, enabled=lambda: state["on"]
    )
    monkeypatch.setattr(fast_path, "_registered", registered)
    return state


def _model():
    model = nn.Sequential(nn.Linear(3, 4, bias=False), nn.GRU(4, 5), SubclassedLinear(2, 2))
    model.append(nn.Sequential(nn.Linear(4, 2)))
    return model


def test_torch_s_layers_become_the_fast_path_s_where_it_offers_them(offered):
    model = _model()
    fast_path.use_faster_layers_(model)
    assert type(model[0]) is FastLinear and type(model[3][0]) is FastLinear


def test_torch_s_layers_stay_where_the_fast_path_is_off(offered):
    offered["on"] = False
    model = _model()
    fast_path.use_faster_layers_(model)
    assert type(model[0]) is nn.Linear and type(model[3][0]) is nn.Linear


def test_a_layer_the_fast_path_has_nothing_for_stays_torch_s_own(offered):
    model = _model()
    fast_path.use_faster_layers_(model)
    assert type(model[1]) is nn.GRU and type(model[2]) is SubclassedLinear


def test_the_fast_path_s_layer_holds_the_very_parameters_of_torch_s(offered):
    model = _model()
    parameters = {name: id(parameter) for name, parameter in model.named_parameters()}
    fast_path.use_faster_layers_(model)
    assert {name: id(parameter) for name, parameter in model.named_parameters()} == parameters


def test_a_form_is_built_only_where_the_fast_path_offers_it(offered):
    assert isinstance(fast_path.form("form"), Form)
    assert fast_path.form("another") is None
    assert fast_path.form(None) is None
    offered["on"] = False
    assert fast_path.form("form") is None


def test_run_computes_through_a_form_that_takes_the_call():
    assert fast_path.run(Form(taken=True), torch.neg, torch.ones(2)).tolist() == [-2.0, -2.0]


def test_run_computes_the_module_s_own_code_where_the_form_declines_or_there_is_none():
    assert fast_path.run(Form(taken=False), torch.neg, torch.ones(2)).tolist() == [-1.0, -1.0]
    assert fast_path.run(None, torch.neg, torch.ones(2)).tolist() == [-1.0, -1.0]
