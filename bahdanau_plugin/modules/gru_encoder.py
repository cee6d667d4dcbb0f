"""GRU encoders over fairseq's padded source batches (Appendix A.2.1 and Cho et al., 2014)."""

from typing import Dict, Tuple

import torch
from fairseq.models import FairseqEncoder
from fairseq.modules import FairseqDropout
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .initialization import build_embedding, normal_, orthogonal_blocks_, zero_


def _rotate_rows(x: Tensor, shift: Tensor) -> Tensor:
    """Rotate each row of a B x T (x C) tensor left by shift[b] positions."""
    steps = x.size(1)
    index = (torch.arange(steps, device=x.device).unsqueeze(0) + shift.unsqueeze(1)) % steps
    if x.dim() == 3:
        index = index.unsqueeze(2).expand_as(x)
    return x.gather(1, index)


class GRUEncoder(FairseqEncoder):
    """Embeds the source and runs a GRU over each sentence's real tokens only.

    fairseq left-pads sources by default; the GRU must not see padding (the backward direction would
    start on it), so rows are rotated to the front, packed, and the outputs rotated back: every
    returned tensor is aligned with ``src_tokens`` whichever side the padding is on.
    Subclasses turn the GRU's final states into the ``summary`` that starts the decoder.
    """

    def __init__(self, cfg, dictionary, bidirectional: bool):
        super().__init__(dictionary)
        self.padding_idx = dictionary.pad()
        self.dropout_module = FairseqDropout(cfg.dropout, module_name=self.__class__.__name__)
        self.embed_tokens = build_embedding(len(dictionary), cfg.encoder_embed_dim, self.padding_idx)
        self.rnn = nn.GRU(
            cfg.encoder_embed_dim,
            cfg.encoder_hidden_dim,
            batch_first=True,
            bidirectional=bidirectional,
        )
        for name, parameter in self.rnn.named_parameters():
            if name.startswith("weight_hh"):
                orthogonal_blocks_(parameter, cfg.encoder_hidden_dim)
            elif name.startswith("weight_ih"):
                normal_(parameter)
            else:
                zero_(parameter)

    def summarize(self, final_states: Tensor) -> Tensor:
        """The vector that s_0 is computed from, given the GRU's final states (directions x B x n)."""
        raise NotImplementedError

    def forward(self, src_tokens: Tensor, src_lengths: Tensor = None) -> Dict[str, Tensor]:
        padding_mask = src_tokens.eq(self.padding_idx)
        embedded = self.dropout_module(self.embed_tokens(src_tokens))
        annotations, final_states = self._run_rnn(embedded, padding_mask)
        return {
            "annotations": self.dropout_module(annotations),
            "padding_mask": padding_mask,
            "summary": self.summarize(final_states),
        }

    def _run_rnn(self, embedded: Tensor, padding_mask: Tensor) -> Tuple[Tensor, Tensor]:
        lengths = (~padding_mask).sum(dim=1)
        leading_padding = padding_mask.long().cumprod(dim=1).sum(dim=1)
        packed = pack_padded_sequence(
            _rotate_rows(embedded, leading_padding),
            lengths.cpu(),
            batch_first=True,
            enforce_sorted=False,
        )
        outputs, final_states = self.rnn(packed)
        outputs, _ = pad_packed_sequence(outputs, batch_first=True, total_length=embedded.size(1))
        return _rotate_rows(outputs, -leading_padding), final_states

    def reorder_encoder_out(self, encoder_out: Dict[str, Tensor], new_order: Tensor):
        return {key: value.index_select(0, new_order) for key, value in encoder_out.items()}
