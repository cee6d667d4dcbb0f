"""RNNencdec: the RNN Encoder-Decoder of Cho et al. (2014), the baseline of Bahdanau et al. (2015).

A GRU reads the source into one fixed vector c = tanh(V h_T), which starts the decoder and
conditions every GRU step and the deep output; the decoder is otherwise RNNsearch's.
"""

from dataclasses import dataclass

import torch
from fairseq.models import register_model, register_model_architecture
from torch import nn

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
    """The decoder without attention: the encoder's c at every position."""

    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary, attention=False)


# fairseq registers the architecture "rnnencdec" with the model (register_model with a dataclass):
# the paper's sizes, as the dataclass's defaults, and no length limit.
@register_model("rnnencdec", dataclass=RNNencdecConfig)
class RNNencdecModel(RecurrentTranslationModel):
    config_class = RNNencdecConfig
    encoder_class = RNNencdecEncoder
    decoder_class = RNNencdecDecoder


@register_model_architecture("rnnencdec", "rnnencdec_30")
def rnnencdec_30(cfg):
    """RNNencdec-30: the paper's sizes, trained on pairs of up to 30 tokens (Section 4.2)."""
    apply_architecture(cfg, RNNencdecConfig, max_train_length=30)


@register_model_architecture("rnnencdec", "rnnencdec_50")
def rnnencdec_50(cfg):
    """RNNencdec-50: the paper's sizes, trained on pairs of up to 50 tokens (Section 4.2)."""
    apply_architecture(cfg, RNNencdecConfig, max_train_length=50)
