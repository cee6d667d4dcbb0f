"""modules/fast_path.py: where a faster computation plugs in; with none offered, the modules build
torch layers and run their own code."""

import pytest
import torch
from torch import nn

from bahdanau_plugin.modules import fast_path


class FastLinear(nn.Linear):
    pass


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


def test_a_layer_is_the_fast_path_s_subclass_where_one_is_offered(offered):
    assert type(fast_path.layer(nn.Linear, 3, 4, bias=False)) is FastLinear


def test_a_layer_is_torch_s_own_where_the_fast_path_is_off(offered):
    offered["on"] = False
    assert type(fast_path.layer(nn.Linear, 3, 4)) is nn.Linear


def test_a_layer_the_fast_path_has_nothing_for_is_torch_s_own(offered):
    assert type(fast_path.layer(nn.GRU, 3, 4)) is nn.GRU


def test_the_fast_path_s_layer_starts_from_torch_s_parameters(offered):
    torch.manual_seed(0)
    fast = fast_path.layer(nn.Linear, 3, 4)
    torch.manual_seed(0)
    plain = nn.Linear(3, 4)
    assert fast.state_dict().keys() == plain.state_dict().keys()
    assert all(torch.equal(fast.state_dict()[k], plain.state_dict()[k]) for k in plain.state_dict())


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
