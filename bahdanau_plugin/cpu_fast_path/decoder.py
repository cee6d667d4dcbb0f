"""The models' decoders, with their recurrence through ``decoder_recurrence`` where the fast path's
rule holds (``runs_in_cpu_float32``), and through the plain loop anywhere else."""

from typing import Optional

import torch
from torch import Tensor

from ..models.rnnencdec import RNNencdecDecoder
from ..models.rnnsearch import RNNsearchDecoder
from .attention import sigmoid_identity_is_faster
from .decoder_recurrence import (
    SIGMOID_IDENTITY,
    TANH,
    Attention,
    Recurrence,
    Step,
    Weights,
    by_row,
    layout,
    run,
    stacked,
)
from . import freed_memory
from .onednn_linear import keep_packed_for_generation, runs_in_cpu_float32


class FusedRecurrence:
    """What both fast decoders share: the recurrence through ``decoder_recurrence``, and the
    weights' layout for its products kept between the calls of a search (one call per word)."""

    _layout = None  # (the weights' versions and storages, their Layout)
    _packing = False  # whether the model was prepared for generation

    def make_generation_fast_(self, **kwargs):
        """fairseq's preparation of a model for generation only: the layout's own weight
        ([scale W_a; U_z; U_r], a copy) is packed for oneDNN like the layers' (OneDNNLinear's)."""
        self._packing = True

    def weights(self) -> Weights:
        raise NotImplementedError

    def fused_recur(
        self,
        weights: Weights,
        drives: Tensor,
        state: Tensor,
        attention: Optional[Attention],
        keep_last_state: bool,
        contexts: Optional[Tensor] = None,
    ):
        """``recur``'s results through decoder_recurrence; ``contexts`` where they are fixed
        (without attention)."""
        positions = drives.size(1)
        gru_steps = positions if keep_last_state else positions - 1
        alphas = None
        if torch.is_grad_enabled():
            freed_memory.for_training()
            attention_inputs = (None,) * 4
            if attention is not None:
                attention_inputs = vars(attention.repeated_for(state.size(0))).values()
            outputs = Recurrence.apply(
                drives, state, *vars(weights).values(), *attention_inputs, gru_steps
            )
            states = outputs[0] if attention is not None else outputs
            if attention is not None:
                contexts, alphas = outputs[1:]
            return states[:, :positions], contexts, alphas, states[:, -1]
        activation = attention.activation if attention is not None else None
        step = Step(self._generation_layout(weights, activation), state.size(0), training=False)
        states, position_contexts, position_alphas = run(step, drives, state, attention, gru_steps)
        if attention is not None:
            contexts, alphas = by_row(position_contexts), by_row(position_alphas)
        return stacked(states[:positions]), contexts, alphas, states[-1]

    def _generation_layout(self, weights: Weights, activation):
        """The layout without gradients, made again only when a weight changes."""
        key = tuple((tensor._version, tensor.data_ptr()) for tensor in weights.tensors())
        key += (activation,)
        if self._layout is None or self._layout[0] != key:
            self._layout = (key, layout(weights, activation))
            if self._packing:
                keep_packed_for_generation(self._layout[1].state_weight)
        return self._layout[1]


class FastRNNsearchDecoder(FusedRecurrence, RNNsearchDecoder):
    """RNNsearchDecoder, its recurrence fused where the fast path's rule holds."""

    per_sentence = RNNsearchDecoder.per_sentence + ("scaled_projected_annotations", "padding")

    def weights(self) -> Weights:
        return Weights(
            self.gru.gate_weights.weight,
            self.gru.candidate_weights.weight,
            self.attention.state_projection.weight,
            self.attention.energy.weight.view(-1),
            self.gru.context_weights.weight,
        )

    def precompute(self, encoder_out):
        cache = super().precompute(encoder_out)
        projected = cache["projected_annotations"]
        if runs_in_cpu_float32(projected, *self.weights().tensors()):
            training = torch.is_grad_enabled() and projected.requires_grad
            faster = sigmoid_identity_is_faster(projected, training)
            activation = SIGMOID_IDENTITY if faster else TANH
            padding = encoder_out["padding_mask"]
            cache["activation"] = activation
            cache["scaled_projected_annotations"] = activation.scale * projected
            cache["padding"] = padding if padding.any() else None  # read once
        return cache

    def recur(self, input_drives, encoder_out, cache, keep_last_state):
        weights = self.weights()
        if "activation" not in cache or not runs_in_cpu_float32(
            input_drives, cache["state"], *weights.tensors()
        ):
            return super().recur(input_drives, encoder_out, cache, keep_last_state)
        attention = Attention(
            cache["annotations"],
            cache["scaled_projected_annotations"],
            cache["padding"],
            cache["activation"],
        )
        return self.fused_recur(weights, input_drives, cache["state"], attention, keep_last_state)


class FastRNNencdecDecoder(FusedRecurrence, RNNencdecDecoder):
    """RNNencdecDecoder, its recurrence fused where the fast path's rule holds."""

    def weights(self) -> Weights:
        return Weights(self.gru.gate_weights.weight, self.gru.candidate_weights.weight)

    def recur(self, input_drives, encoder_out, cache, keep_last_state):
        context_drive = cache["context_drive"]  # C c, the same at every position
        weights = self.weights()
        if not runs_in_cpu_float32(input_drives, cache["state"], context_drive, *weights.tensors()):
            return super().recur(input_drives, encoder_out, cache, keep_last_state)
        summary = encoder_out["summary"]
        contexts = summary.unsqueeze(1).expand(-1, input_drives.size(1), -1)
        return self.fused_recur(
            weights,
            input_drives + context_drive.unsqueeze(1),
            cache["state"],
            None,
            keep_last_state,
            contexts,
        )
