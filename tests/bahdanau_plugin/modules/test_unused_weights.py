"""modules/unused_weights.py: weights a training batch of one target position leaves unused get
their true gradient, 0, without changing the output."""

import torch
from torch import nn

from bahdanau_plugin.modules import unused_weights


def _unused_and_output():
    unused = nn.Linear(3, 3)
    output = torch.randn(2, 1, 5, requires_grad=True)
    return unused, output


def test_a_batch_of_one_target_position_gives_the_unused_weights_a_zero_gradient():
    unused, output = _unused_and_output()
    result = unused_weights.in_the_output(output, unused.parameters(), 1)
    result.sum().backward()
    assert all(torch.count_nonzero(weight.grad) == 0 for weight in unused.parameters())


def test_the_output_keeps_its_values():
    unused, output = _unused_and_output()
    result = unused_weights.in_the_output(output, unused.parameters(), 1)
    assert torch.equal(result, output)


def test_longer_targets_and_no_gradients_leave_the_output_as_it_is():
    unused, output = _unused_and_output()
    assert unused_weights.in_the_output(output, unused.parameters(), 2) is output
    with torch.no_grad():
        assert unused_weights.in_the_output(output, unused.parameters(), 1) is output
