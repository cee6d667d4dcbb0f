"""Random inputs of the written-out recurrence (bahdanau_plugin/speed/recurrence.py), in
``Recurrence``'s order, drawn on the CPU (the same values on any device) and placed on a device."""

from dataclasses import dataclass
from typing import List, Optional

import torch

from bahdanau_plugin.speed.recurrence import TANH, Activation


@dataclass
class Sizes:
    rows: int = 2
    positions: int = 3
    sources: int = 4
    hidden: int = 3
    attention_dim: int = 2


def recurrence_inputs(
    attention: bool = True,
    padded: bool = True,
    gru_steps: Optional[int] = None,
    sizes: Sizes = Sizes(),
    dtype: torch.dtype = torch.float64,
    alignment_dtype: Optional[torch.dtype] = None,
    device="cpu",
    activation: Activation = TANH,
    seed: int = 0,
) -> List:
    """Recurrence's inputs: the drives, s_0, [U_z; U_r], U, W_a, v_a, [C_z; C_r; C], h_j, U_a h_j,
    the padding mask (the first sentence's first source position where ``padded``), the activation
    and the GRU steps (default: one fewer than the positions, as in training). The GRU's tensors
    in ``dtype``, the alignment model's in ``alignment_dtype`` (default: the same); every floating
    tensor requires gradients."""
    generator = torch.Generator(device="cpu").manual_seed(seed)
    alignment_dtype = alignment_dtype or dtype

    def tensor(*shape, of=dtype):
        drawn = torch.randn(*shape, generator=generator, dtype=torch.float64, device="cpu")
        return drawn.to(device=device, dtype=of).requires_grad_()

    s = sizes
    inputs = [tensor(s.rows, s.positions, 3 * s.hidden), tensor(s.rows, s.hidden)]
    inputs += [tensor(2 * s.hidden, s.hidden), tensor(s.hidden, s.hidden)]
    if attention:
        padding = torch.zeros(s.rows, s.sources, dtype=torch.bool, device=device)
        padding[0, :1] = padded
        inputs += [
            tensor(s.attention_dim, s.hidden, of=alignment_dtype),
            tensor(1, s.attention_dim, of=alignment_dtype),
            tensor(3 * s.hidden, 2 * s.hidden),
            tensor(s.rows, s.sources, 2 * s.hidden, of=alignment_dtype),
            tensor(s.rows, s.sources, s.attention_dim, of=alignment_dtype),
            padding if padded else None,
            activation,
        ]
    else:
        inputs += [None] * 7
    return inputs + [s.positions - 1 if gru_steps is None else gru_steps]


def tensors_of(inputs) -> List[torch.Tensor]:
    """The inputs that take gradients."""
    return [t for t in inputs if isinstance(t, torch.Tensor) and t.requires_grad]
