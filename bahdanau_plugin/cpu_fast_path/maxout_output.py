"""The deep output's pre-activation with its sums folded into its products, without gradients."""

import torch
from torch import Tensor

from ..modules.maxout_output import MaxoutOutput
from .onednn_linear import Product, linear, rows_of, runs_in_cpu_float32


class FastMaxoutOutput(MaxoutOutput):
    """MaxoutOutput whose t~_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i is three products, each
    adding the one before into its result (``Product``), where the fast path's rule holds and no
    gradient is wanted: a beam search runs the deep output at every step, on a few rows, and pays
    for each operator there (training runs it once per batch, through the modules' layers)."""

    def forward(self, prev_state: Tensor, embedded: Tensor, context: Tensor) -> Tensor:
        layers = (self.state_weights, self.embedding_weights, self.context_weights)
        if torch.is_grad_enabled() or not runs_in_cpu_float32(
            prev_state, embedded, context, *(layer.weight for layer in layers)
        ):
            return super().forward(prev_state, embedded, context)
        rows = rows_of(prev_state)
        pre_activation = linear(rows, self.state_weights.weight, self.state_weights.bias)
        for layer, input in ((self.embedding_weights, embedded), (self.context_weights, context)):
            pre_activation = Product(layer.weight, rows.size(0), training=False)(
                rows_of(input), addend=pre_activation
            )
        pairs = pre_activation.view(*prev_state.shape[:-1], self.maxout_dim, self.POOL_SIZE)
        return pairs.max(dim=-1).values
