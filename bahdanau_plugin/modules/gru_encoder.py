"""GRU encoders over fairseq's padded source batches (Appendix A.2.1 and Cho et al., 2014)."""

from typing import Dict, List, Tuple

import torch
from fairseq.models import FairseqEncoder
from fairseq.modules import FairseqDropout
from torch import Tensor, nn

from .beam_rows import reorder_rows, rows_of
from .initialization import build_embedding, normal_, orthogonal_blocks_, zero_


def reading_orders(padding_mask: Tensor, lengths: Tensor) -> Tuple[Tensor, Tensor]:
    """For each sentence, the source positions that the forward and the backward GRU read at each
    step: its real tokens first to last (forward) or last to first (backward), then its padding.

    Either side may be padded. Reading padding last means that it can only change outputs after
    the last real token, which are discarded, so the GRU runs over the whole batch unpacked (one
    nn.GRU call, cuDNN's on a GPU) rather than packed. Each order is a permutation of the positions.
    """
    steps = padding_mask.size(1)
    first = padding_mask.long().cumprod(dim=1).sum(dim=1, keepdim=True)  # left padding, if any
    step = torch.arange(steps, device=padding_mask.device).unsqueeze(0)
    return (first + step) % steps, (first + lengths.unsqueeze(1) - 1 - step) % steps


def cudnn_refuses_backward(rnn: nn.GRU, inputs: Tensor) -> bool:
    """Whether cuDNN would run ``rnn`` over ``inputs`` and then refuse the backward pass: on a GPU,
    with the GRU not training (cuDNN keeps what its backward pass needs in training mode only) and
    gradients wanted (grad mode on, and the inputs or a weight requiring them)."""
    if not inputs.is_cuda or rnn.training or not torch.is_grad_enabled():
        return False
    return inputs.requires_grad or any(weight.requires_grad for weight in rnn.parameters())


def run_rnn(rnn: nn.GRU, inputs: Tensor) -> Tuple[Tensor, Tensor]:
    """``rnn(inputs)``, differentiable in eval mode on a GPU too.

    cuDNN's RNN raises "cudnn RNN backward can only be called in training mode" when gradients of a
    model in eval mode are taken, which is what saliency and alignment analyses do. Where it would
    (``cudnn_refuses_backward``), the GRU runs with cuDNN off: torch's own CUDA GRU, whose backward
    pass works in either mode. The function is the same, since these GRUs have one layer and so no
    dropout between layers. Training (cuDNN's) and inference without gradients are unchanged."""
    if cudnn_refuses_backward(rnn, inputs):
        with torch.backends.cudnn.flags(enabled=False):
            return rnn(inputs)
    return rnn(inputs)


class GRUEncoder(FairseqEncoder):
    """Embeds the source and runs a GRU in each direction over each sentence's real tokens.

    ``forward_rnn`` reads the sentence from its first word (->h_j), ``backward_rnn`` from its last
    (<-h_j, RNNsearch only). Every returned tensor is aligned with ``src_tokens``, whichever side
    the padding is on. Subclasses turn the final states into the ``summary`` that starts the
    decoder.
    """

    def __init__(self, cfg, dictionary, bidirectional: bool):
        super().__init__(dictionary)
        self.padding_idx = dictionary.pad()
        self.dropout_module = FairseqDropout(cfg.dropout, module_name=self.__class__.__name__)
        self.embed_tokens = build_embedding(
            len(dictionary), cfg.encoder_embed_dim, self.padding_idx
        )
        self.forward_rnn = self._build_rnn(cfg)
        self.backward_rnn = self._build_rnn(cfg) if bidirectional else None

    @staticmethod
    def _build_rnn(cfg) -> nn.GRU:
        rnn = nn.GRU(cfg.encoder_embed_dim, cfg.encoder_hidden_dim, batch_first=True)
        orthogonal_blocks_(rnn.weight_hh_l0, cfg.encoder_hidden_dim)
        normal_(rnn.weight_ih_l0)
        zero_(rnn.bias_ih_l0)
        zero_(rnn.bias_hh_l0)
        return rnn

    def rnns(self) -> List[nn.GRU]:
        return [rnn for rnn in (self.forward_rnn, self.backward_rnn) if rnn is not None]

    def summarize(self, final_states: Tensor) -> Tensor:
        """The vector that s_0 is computed from, given the GRUs' final states (directions x B x n):
        ->h_T, and <-h_1 when bidirectional."""
        raise NotImplementedError

    def forward(self, src_tokens: Tensor, src_lengths: Tensor = None) -> Dict[str, Tensor]:
        """For source tokens x_j (B x S): the annotations h_j (B x S x 2n bidirectional, else
        B x S x n), the padding mask (B x S), the summary (B x n) and each row's sentence (B, with
        the rows' layout: beam_rows.rows_of)."""
        padding_mask = src_tokens.eq(self.padding_idx)  # B x S
        embedded = self.dropout_module(self.embed_tokens(src_tokens))  # E x_j: B x S x m
        if self._has_padding(padding_mask):
            annotations, final_states = self._read_padded(embedded, padding_mask)
        else:
            annotations, final_states = self._read_unpadded(embedded)
        return {
            "annotations": self.dropout_module(annotations),  # h_j
            "padding_mask": padding_mask,
            "summary": self.summarize(final_states),
            **rows_of(src_tokens.size(0), src_tokens.device),
        }

    @staticmethod
    def _has_padding(padding_mask: Tensor) -> bool:
        """Whether to take the reordering path. Looking for padding reads the mask on the host: on
        the CPU that costs nothing, on a GPU it waits for every kernel queued before it, so there
        every batch takes the reordering path, which reads an unpadded batch in order."""
        return padding_mask.device.type != "cpu" or bool(padding_mask.any())

    def _read_unpadded(self, embedded: Tensor) -> Tuple[Tensor, Tensor]:
        """The common case (fairseq batches sentences of one source length): no reordering."""
        forward_states, forward_final = run_rnn(self.forward_rnn, embedded)
        if self.backward_rnn is None:
            return forward_states, forward_final
        backward_states, backward_final = run_rnn(self.backward_rnn, embedded.flip(1))
        annotations = torch.cat([forward_states, backward_states.flip(1)], dim=2)
        return annotations, torch.cat([forward_final, backward_final])

    def _read_padded(self, embedded: Tensor, padding_mask: Tensor) -> Tuple[Tensor, Tensor]:
        lengths = (~padding_mask).sum(dim=1)
        outputs, final_states = [], []
        for rnn, order in zip(self.rnns(), reading_orders(padding_mask, lengths)):
            annotations, final_state = self._read(rnn, embedded, order, lengths)
            outputs.append(annotations)
            final_states.append(final_state)
        annotations = torch.cat(outputs, dim=2).masked_fill(padding_mask.unsqueeze(2), 0.0)
        return annotations, torch.stack(final_states)

    @staticmethod
    def _read(
        rnn: nn.GRU, embedded: Tensor, order: Tensor, lengths: Tensor
    ) -> Tuple[Tensor, Tensor]:
        """Run ``rnn`` over the positions in ``order``; its outputs at the source positions, and
        its state after the last real token."""
        order = order.unsqueeze(2).expand_as(embedded)
        outputs, _ = run_rnn(rnn, embedded.gather(1, order))
        last = (lengths - 1).view(-1, 1, 1).expand(-1, 1, outputs.size(2))
        final_state = outputs.gather(1, last).squeeze(1)
        order = order[:, :, :1].expand_as(outputs)
        return outputs.new_empty(outputs.shape).scatter_(1, order, outputs), final_state

    def upgrade_state_dict_named(self, state_dict, name):
        """Checkpoints of earlier versions hold one bidirectional nn.GRU, ``rnn``: its ``*_l0``
        weights are ``forward_rnn``'s and its ``*_l0_reverse`` weights ``backward_rnn``'s."""
        old_prefix = f"{name}.rnn." if name else "rnn."
        for key in [key for key in state_dict if key.startswith(old_prefix)]:
            weight = key[len(old_prefix) :]
            direction = "backward_rnn" if weight.endswith("_reverse") else "forward_rnn"
            new_key = old_prefix[: -len("rnn.")] + f"{direction}.{weight.removesuffix('_reverse')}"
            state_dict[new_key] = state_dict.pop(key)
        return state_dict

    def reorder_encoder_out(self, encoder_out: Dict[str, Tensor], new_order: Tensor):
        # the same for all beams of a sentence; h_j and the mask kept one row per sentence
        return reorder_rows(encoder_out, new_order, per_sentence=("annotations", "padding_mask"))
