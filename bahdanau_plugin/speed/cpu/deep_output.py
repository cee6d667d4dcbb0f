"""The fused form of the deep output without gradients: ``MaxoutOutput`` (A.2.2) with the sums of
its pre-activation folded into its products."""

import torch
from torch import Tensor

from .. import checks
from .onednn_linear import Product, linear, rows_of, runs_in_cpu_float32

# Rows of the check's probe (target positions of the probe's sentences).
PROBE_ROWS = checks.SENTENCES_PER_PROBE * checks.TARGET_POSITIONS


class FusedDeepOutput(checks.FusedForm):
    """t~_i = U_o s_{i-1} + V_o E y_{i-1} + C_o c_i as three products, each adding the one before
    into its result (``Product``: ATen's addmm or oneDNN's product with an addition), then
    MaxoutOutput's pooling: a beam search runs the deep output at every step, on a few rows, and
    pays for each operator there. It takes a call where the fast path's rule holds, no gradient is
    wanted (training runs the deep output once per batch, through the modules' own code) and it
    computes what the model's ``MaxoutOutput`` computes (checked once per model, ``checks.py``)."""

    name = "fused deep output"
    bypassed = ("", "state_weights", "embedding_weights", "context_weights")

    def takes(self, deep_output, prev_state: Tensor, embedded: Tensor, context: Tensor) -> bool:
        inputs = (prev_state, embedded, context)
        return (
            not torch.is_grad_enabled()
            and runs_in_cpu_float32(*inputs)
            and self.allowed(
                deep_output,
                lambda: self._compare(deep_output, [t.size(-1) for t in inputs]),
                lambda label: "the deep output (t_i, maxout: A.2.2)",
            )
            and runs_in_cpu_float32(*_weights(deep_output))
        )

    def forward(self, deep_output, prev_state: Tensor, embedded: Tensor, context: Tensor):
        rows = rows_of(prev_state)
        layer = deep_output.state_weights
        pre_activation = linear(rows, layer.weight, layer.bias)
        for layer, input in (
            (deep_output.embedding_weights, embedded),
            (deep_output.context_weights, context),
        ):
            pre_activation = Product(layer.weight, rows.size(0), training=False)(
                rows_of(input), addend=pre_activation
            )
        maxout_dim, pool = deep_output.maxout_dim, deep_output.POOL_SIZE
        pairs = pre_activation.view(*prev_state.shape[:-1], maxout_dim, pool)
        return pairs.max(dim=-1).values

    def _compare(self, deep_output, sizes) -> checks.Comparison:
        deep_output = checks.random_copy(deep_output)
        draw = checks.generator(checks.INPUTS)
        inputs = [checks.randn(PROBE_ROWS, size, generator=draw) for size in sizes]
        with torch.no_grad():
            yield (
                "t_i",
                self(deep_output, *inputs),
                deep_output(*inputs),
                checks.tolerance(torch.float32),
            )


def _weights(deep_output):
    layers = (deep_output.state_weights, deep_output.embedding_weights, deep_output.context_weights)
    return [layer.weight for layer in layers]
