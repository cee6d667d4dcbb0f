import torch

from bahdanau_plugin.modules.maxout_output import MaxoutOutput


def test_maxout_keeps_the_larger_of_each_adjacent_pair():
    layer = MaxoutOutput(state_dim=1, embed_dim=1, context_dim=1, maxout_dim=3)
    with torch.no_grad():
        layer.state_weights.weight.copy_(torch.tensor([[1.0], [5.0], [-2.0], [-3.0], [4.0], [0.5]]))
        layer.embedding_weights.weight.zero_()
        layer.context_weights.weight.zero_()
    t = layer(torch.ones(1, 1), torch.zeros(1, 1), torch.zeros(1, 1))
    torch.testing.assert_close(t, torch.tensor([[5.0, -2.0, 4.0]]))
