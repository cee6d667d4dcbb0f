"""RNNencdec: the RNN Encoder-Decoder of Cho et al. (2014), the baseline of Bahdanau et al. (2015).

A GRU reads the source into one fixed vector c = tanh(V h_T), which starts the decoder and
conditions every GRU step and the deep output; the decoder is otherwise RNNsearch's.
"""

from dataclasses import dataclass

import torch
from fairseq.models import register_model, register_model_architecture
from torch import nn

from ..errors import ConfigurationError
from ..modules import fast_path
from ..modules.conditional_decoder import ConditionalGRUDecoder
from ..modules.gru_encoder import GRUEncoder
from ..modules.initialization import normal_, zero_
from .config import RecurrentTranslationConfig, apply_architecture
from .recurrent_translation import RecurrentTranslationModel


@dataclass
class RNNencdecConfig(RecurrentTranslationConfig):
    pass


class RNNencdecEncoder(GRUEncoder):
    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary, bidirectional=False)
        self.summary_projection = nn.Linear(cfg.encoder_hidden_dim, cfg.decoder_hidden_dim)  # V
        normal_(self.summary_projection.weight)
        zero_(self.summary_projection.bias)

    def summarize(self, final_states):
        return torch.tanh(self.summary_projection(final_states[0]))  # c = tanh(V h_T)


class RNNencdecDecoder(ConditionalGRUDecoder):
    fused_recurrence_form = fast_path.RECURRENCE_WITH_FIXED_CONTEXT

    def __init__(self, cfg, dictionary):
        hidden = cfg.decoder_hidden_dim
        super().__init__(cfg, dictionary, context_dim=hidden, summary_dim=hidden)

    def precompute(self, encoder_out):
        return {"context_drive": self.gru.project_context(encoder_out["summary"])}  # C c

    def context(self, state, encoder_out, cache):
        return encoder_out["summary"], None  # the same c at every position, and no alignment

    def context_drive(self, context, cache):
        return cache["context_drive"]


# fairseq registers the architecture "rnnencdec" with the model (register_model with a dataclass):
# the paper's sizes, as the dataclass's defaults, and no length limit.
@register_model("rnnencdec", dataclass=RNNencdecConfig)
class RNNencdecModel(RecurrentTranslationModel):
    config_class = RNNencdecConfig
    encoder_class = RNNencdecEncoder
    decoder_class = RNNencdecDecoder
    # One fixed context, nothing to align a target word to: unknown-word replacement refuses it.
    has_attention = False

    def prepare_for_inference_(self, cfg):
        # Without this, fairseq's beam search fails on the missing attention with an IndexError.
        if getattr(cfg.generation, "print_alignment", None):
            raise ConfigurationError(
                "--print-alignment needs attention, which rnnencdec does not have: drop the flag, "
                "or translate with rnnsearch checkpoints only"
            )
        super().prepare_for_inference_(cfg)


@register_model_architecture("rnnencdec", "rnnencdec_30")
def rnnencdec_30(cfg):
    """RNNencdec-30: the paper's sizes, trained on pairs of up to 30 tokens (Section 4.2)."""
    apply_architecture(cfg, RNNencdecConfig, max_train_length=30)


@register_model_architecture("rnnencdec", "rnnencdec_50")
def rnnencdec_50(cfg):
    """RNNencdec-50: the paper's sizes, trained on pairs of up to 50 tokens (Section 4.2)."""
    apply_architecture(cfg, RNNencdecConfig, max_train_length=50)
