"""The deep output layer of Appendix A.2.2: one maxout hidden layer before the softmax."""

from torch import Tensor, nn

from .initialization import normal_, zero_


class MaxoutOutput(nn.Module):
    """t_i = max-pool_2(U_o s_{i-1} + V_o E y_{i-1} + C_o c_i): 2l pre-activations -> l units."""

    POOL_SIZE = 2

    def __init__(self, state_dim: int, embed_dim: int, context_dim: int, maxout_dim: int):
        super().__init__()
        self.maxout_dim = maxout_dim
        pre_dim = self.POOL_SIZE * maxout_dim
        self.state_weights = nn.Linear(state_dim, pre_dim)  # U_o and the bias
        self.embedding_weights = nn.Linear(embed_dim, pre_dim, bias=False)  # V_o
        self.context_weights = nn.Linear(context_dim, pre_dim, bias=False)  # C_o
        for layer in (self.state_weights, self.embedding_weights, self.context_weights):
            normal_(layer.weight)
        zero_(self.state_weights.bias)

    def forward(self, prev_state: Tensor, embedded: Tensor, context: Tensor) -> Tensor:
        """t_i (B x T x l), given s_{i-1} (B x T x n), E y_{i-1} (B x T x m) and c_i
        (B x T x context)."""
        pre_activation = (  # t~_i: B x T x 2l
            self.state_weights(prev_state)
            + self.embedding_weights(embedded)
            + self.context_weights(context)
        )
        pairs = pre_activation.view(*pre_activation.shape[:-1], self.maxout_dim, self.POOL_SIZE)
        return pairs.max(dim=-1).values  # t_ij = max(t~_i,2j-1, t~_i,2j): B x T x l
