"""The fused forms of the decoders' recurrence: ``ConditionalGRUDecoder.recur`` (Eqs. 4 to 6 of
A.2.2) through ``recurrence.py``, for the decoders that ask for them (modules/fast_path.py:
RNNsearch's with attention, RNNencdec's with a fixed context).

A decoder calls its form through ``fast_path.run``: the form takes a call where it runs
(``runs_here``: on a CPU in float32 with oneDNN working; on a GPU in any precision, autocast off)
and where it computes what the decoder's own ``recur`` computes, checked once per model and
training mode on the model's device (``checks.py``); the decoder's ``recur`` runs anywhere else, so
a model on another device, run under autocast, or whose modules were edited, computes exactly
what the modules say. What differs by device: on a CPU the products' library and the energies'
activation are measured (``cpu/``); on a GPU the passes with gradients are replayed from CUDA
graphs (``cuda/graphs.py``) and the padding mask is never read on the host.
"""

from typing import Optional, Sequence

import torch
from torch import Tensor

from . import checks
from .recurrence import (
    SIGMOID_IDENTITY,
    TANH,
    Activation,
    Attention,
    Recurrence,
    Step,
    Weights,
    by_row,
    hidden_units,
    layout,
    run,
    stacked,
)
from .cpu.measured_choice import CHOOSER
from .cpu.onednn_linear import keep_packed_for_generation, row_class, runs_in_cpu_float32
from .cuda.graphs import CapturedRecurrence

# What a form keeps in a decoder's cache, once per batch; not tensors, so that the reorders of a
# beam search keep them as they are.
ACTIVATION = "fused: activation"
PADDED = "fused: padded"
# The decoder's layers of the vocabulary's size, which its recurrence does not read: the check
# shares them rather than copying them.
VOCABULARY_LAYERS = ("embed_tokens", "output_projection")
# Where the check's results first differ, by label: the part of the paper that no longer matches.
PARTS = (
    ("alpha", "the alignment model (Eq. 6)"),
    ("c_i", "the context (Eq. 5)"),
    ("s_i", "the conditional GRU (Eq. 4)"),
    ("gradient of attention.", "the alignment model's gradient (Eqs. 5 and 6)"),
    ("gradient of gru.", "the conditional GRU's gradient (Eq. 4)"),
    ("gradient of h_j", "the gradient of the annotations"),
    ("gradient", "the recurrence's gradient"),
)


def part_of(label: str) -> str:
    return next(part for start, part in PARTS if label.startswith(start))


def runs_here(gru: Sequence[Tensor], alignment: Sequence[Tensor]) -> bool:
    """Whether the fused recurrence runs for these tensors (the GRU's: drives, s_0, its weights;
    the alignment model's: its weights, h_j, U_a h_j): on a CPU, the fast path's rule
    (``runs_in_cpu_float32``); on a GPU, one device, autocast off, and each part's tensors of one
    precision (the alignment model's may be float32 in a half-precision model)."""
    tensors = [*gru, *alignment]
    if tensors[0].device.type == "cpu":
        return runs_in_cpu_float32(*tensors)
    return (
        CHOOSER.setting != "plain"
        and tensors[0].is_cuda
        and all(t.device == tensors[0].device for t in tensors)
        and not torch.is_autocast_enabled(tensors[0].device.type)
        and len({t.dtype for t in gru}) == 1
        and len({t.dtype for t in alignment}) <= 1
    )


class FusedRecurrence(checks.FusedForm):
    """What both forms share: when to take a call, the check, and the recurrence through
    ``recurrence.py`` with the weights' layout for its products kept between the calls of a search
    (one call per word), and on a GPU its passes with gradients replayed from CUDA graphs."""

    name = "fused recurrence"

    def __init__(self):
        super().__init__()
        self._layout = None  # (the weights' versions and storages, their Layout)
        self._packing = False  # whether the model was prepared for generation
        self._captured = CapturedRecurrence()  # the graphs, on a GPU

    def weights(self, decoder) -> Weights:
        """The decoder's parameters that the steps multiply by."""
        raise NotImplementedError

    def compute(self, decoder, input_drives, encoder_out, cache, keep_last_state):
        """``decoder.recur(input_drives, encoder_out, cache, keep_last_state)``, fused."""
        raise NotImplementedError

    def make_generation_fast_(self, **kwargs):
        """fairseq's preparation of a model for generation only: the layout's own weight
        ([scale W_a; U_z; U_r], a copy) is packed for oneDNN like the layers' (OneDNNLinear's)."""
        self._packing = True

    def alignment_tensors(self, decoder, cache) -> Sequence[Tensor]:
        """The tensors the alignment model's part reads (its weights, h_j, U_a h_j)."""
        return ()

    def takes(self, recur, input_drives, encoder_out, cache, keep_last_state) -> bool:
        decoder = recur.__self__
        weights = self.weights(decoder)
        gru = [input_drives, cache["state"], weights.gate_weight, weights.candidate_weight]
        gru += [weights.context_weight] if weights.context_weight is not None else []
        return runs_here(gru, self.alignment_tensors(decoder, cache)) and self.allowed(
            decoder,
            lambda: self._compare(decoder, input_drives, encoder_out),
            part_of,
        )

    def forward(self, recur, input_drives, encoder_out, cache, keep_last_state):
        return self.compute(recur.__self__, input_drives, encoder_out, cache, keep_last_state)

    def _compare(self, decoder, input_drives, encoder_out) -> checks.Comparison:
        """This form against the decoder's ``recur`` on the model's device, on a copy of the
        decoder with random parameters and a random probe batch: with gradients (training: the
        states, contexts, alphas and every gradient) and without (a search: the last state kept).
        In float32 (where the formulas must agree to rounding), and for a model in half precision
        in its own precision too (where they must agree within its rounding)."""
        yield from self._compare_in(decoder, input_drives, encoder_out, torch.float32)
        if input_drives.dtype != torch.float32:
            yield from self._compare_in(decoder, input_drives, encoder_out, input_drives.dtype)

    def _compare_in(self, decoder, input_drives, encoder_out, dtype) -> checks.Comparison:
        decoder = checks.random_copy(decoder, shared=VOCABULARY_LAYERS, dtype=dtype)
        like = input_drives.to(dtype=dtype)
        probe = checks.probe_encoder_out(encoder_out, like)
        shape = (checks.SENTENCES_PER_PROBE, checks.TARGET_POSITIONS, input_drives.size(-1))
        drives = checks.randn(
            *shape, generator=checks.generator(checks.DRIVES), like=like, requires_grad=True
        )
        parameters = {
            name: parameter
            for name, parameter in decoder.named_parameters()
            if parameter.requires_grad and not name.startswith(VOCABULARY_LAYERS)
        }
        inputs = {"drives": drives, "h_j": probe["annotations"], "summary": probe["summary"]}
        wrt = {**inputs, **parameters}

        def results(recur):
            with torch.enable_grad():
                outputs = recur(drives, probe, decoder.initial_cache(probe), False)
                grads = checks.gradients([t for t in outputs if t is not None], list(wrt.values()))
            with torch.no_grad():
                steps = recur(drives, probe, decoder.initial_cache(probe), True)
            return _by_position(outputs, "") + _by_position(steps, " without gradients"), grads

        def fused(drives, encoder_out, cache, keep_last_state):
            return self.compute(decoder, drives, encoder_out, cache, keep_last_state)

        (ours, our_grads), (theirs, their_grads) = results(fused), results(decoder.recur)
        tolerance = checks.tolerance(dtype, input_drives.device)
        suffix = "" if dtype == torch.float32 else f" in {str(dtype).replace('torch.', '')}"
        for (label, mine), (_, reference) in zip(ours, theirs):
            yield label + suffix, mine, reference, tolerance
        for name, mine, reference in zip(wrt, our_grads, their_grads):
            yield f"gradient of {name}{suffix}", mine, reference, tolerance

    def fused_recur(
        self,
        weights: Weights,
        drives: Tensor,
        state: Tensor,
        attention: Optional[Attention],
        keep_last_state: bool,
        contexts: Optional[Tensor] = None,
    ):
        """``recur``'s results through recurrence.py (with gradients on a GPU, replayed from
        graphs); ``contexts`` where they are fixed (without attention)."""
        positions = drives.size(1)
        gru_steps = positions if keep_last_state else positions - 1
        alphas = None
        if torch.is_grad_enabled():
            attention_inputs = (None,) * 4
            if attention is not None:
                attention_inputs = vars(attention.repeated_for(state.size(0))).values()
            recurrence = self._captured if drives.is_cuda else Recurrence.apply
            outputs = recurrence(
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


def _by_position(outputs, suffix: str):
    """(label, tensor) for recur's results at each target position, in the order they are
    computed: alpha_i, c_i, then s_i."""
    prev_states, contexts, alphas, last_state = outputs
    states = torch.cat([prev_states[:, 1:], last_state.unsqueeze(1)], dim=1)  # s_1 ...
    labelled = []
    for i in range(contexts.size(1)):
        where = f" at target position {i + 1}{suffix}"
        if alphas is not None:
            labelled.append(("alpha_ij" + where, alphas[:, i]))
        labelled += [("c_i" + where, contexts[:, i]), ("s_i" + where, states[:, i])]
    return labelled


class FusedAttentionRecurrence(FusedRecurrence):
    """RNNsearch's recurrence: the alignment model (Eqs. 5 and 6) and the conditional GRU."""

    bypassed = (
        "attention",
        "attention.state_projection",
        "attention.energy",
        "gru",
        "gru.gate_weights",
        "gru.candidate_weights",
        "gru.context_weights",
    )

    def weights(self, decoder) -> Weights:
        gru, attention = decoder.gru, decoder.attention
        return Weights(
            gru.gate_weights.weight,
            gru.candidate_weights.weight,
            attention.state_projection.weight,
            attention.energy.weight,
            gru.context_weights.weight,
        )

    def alignment_tensors(self, decoder, cache):
        attention = decoder.attention
        weights = (attention.state_projection.weight, attention.energy.weight)
        return (*weights, cache["annotations"], cache["projected_annotations"])

    def compute(self, decoder, input_drives, encoder_out, cache, keep_last_state):
        padding = encoder_out["padding_mask"]
        if ACTIVATION not in cache:  # a new batch
            projected = cache["projected_annotations"]
            training = torch.is_grad_enabled() and projected.requires_grad
            cache[ACTIVATION] = activation_for(projected, training)
            # read once, on a CPU only: no masking where none is padded (on a GPU the read would
            # wait for every kernel queued before it)
            cache[PADDED] = not projected.device.type == "cpu" or bool(padding.any())
        attention = Attention(
            cache["annotations"],
            cache["projected_annotations"],
            padding if cache[PADDED] else None,
            cache[ACTIVATION],
        )
        weights = self.weights(decoder)
        return self.fused_recur(weights, input_drives, cache["state"], attention, keep_last_state)


class FusedFixedContextRecurrence(FusedRecurrence):
    """RNNencdec's recurrence: the conditional GRU driven by the same C c at every position."""

    bypassed = ("gru", "gru.gate_weights", "gru.candidate_weights")

    def weights(self, decoder) -> Weights:
        return Weights(decoder.gru.gate_weights.weight, decoder.gru.candidate_weights.weight)

    def compute(self, decoder, input_drives, encoder_out, cache, keep_last_state):
        context_drive = cache["context_drive"]  # C c
        contexts = encoder_out["summary"].unsqueeze(1).expand(-1, input_drives.size(1), -1)
        return self.fused_recur(
            self.weights(decoder),
            input_drives + context_drive.unsqueeze(1),
            cache["state"],
            None,
            keep_last_state,
            contexts,
        )


def activation_for(projected_annotations: Tensor, training: bool) -> Activation:
    """The energies' activation: on a CPU the one measured faster here for alignment vectors of
    this size (``Activation``: forward and, when ``training``, the backward pass's work), once, on
    at most 32 sentences of 16 source positions; elsewhere torch.tanh."""
    if projected_annotations.device.type != "cpu":
        return TANH
    rows, sources, attention_dim = projected_annotations.shape

    def probes():
        draw = torch.Generator().manual_seed(0)
        queries = torch.rand(min(rows, 32), 1, 1, attention_dim, generator=draw)
        projected = torch.rand(min(rows, 32), 1, min(sources, 16), attention_dim, generator=draw)
        v = torch.rand(attention_dim, generator=draw)
        upstream = torch.rand(projected.shape[:3], generator=draw).unsqueeze(3)

        def energies_through(activation: Activation):
            scaled_queries, scaled_v = activation.scale * queries, activation.scale * v

            def compute():
                units = hidden_units(activation, scaled_queries, projected)
                results = [torch.softmax(torch.matmul(units, scaled_v), dim=2)]  # alpha, Eq. (6)
                if training:  # d e_ij / d x_ij, as the backward pass computes it
                    grad = activation.backward(upstream * scaled_v, units)
                    results.append(activation.scale * grad)
                return results

            return compute

        return energies_through(SIGMOID_IDENTITY), energies_through(TANH)

    passes = "forward and backward" if training else "forward"
    choice = ("energies", attention_dim, "x", row_class(rows * sources), "positions,", passes)
    names = ("2 sigmoid(2x) - 1", "torch.tanh")
    return SIGMOID_IDENTITY if CHOOSER.fast(choice, probes, names=names) else TANH
