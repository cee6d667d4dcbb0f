"""RNNsearch: Bahdanau, Cho & Bengio (2015), Section 3 and Appendix A.

A bidirectional GRU encodes the source into annotations h_j = [->h_j ; <-h_j]; the decoder attends
over them with the alignment model at every target position.

Read in the paper's order:

1. the encoder (A.2.1): ``RNNsearchEncoder`` below, on ``modules/gru_encoder.py``;
2. the alignment model (3.1, A.1.2, Eqs. 5 and 6): ``modules/attention.py``;
3. the conditional GRU (Eq. 4, A.2.2): ``modules/conditional_gru.py``;
4. the deep output, a maxout layer (A.2.2): ``modules/maxout_output.py``;
5. the decoder's steps put together, shared with RNNencdec: ``modules/conditional_decoder.py``
   (``features``, a numbered recipe; ``context`` calls the alignment model);
6. the model and its architectures ``rnnsearch_30`` and ``rnnsearch_50`` (Section 4.2): below,
   on ``recurrent_translation.py`` and ``config.py``.
"""

from dataclasses import dataclass, field

from fairseq.models import register_model, register_model_architecture

from ..modules.conditional_decoder import ConditionalGRUDecoder
from ..modules.gru_encoder import GRUEncoder
from .config import RecurrentTranslationConfig, apply_architecture
from .recurrent_translation import RecurrentTranslationModel


@dataclass
class RNNsearchConfig(RecurrentTranslationConfig):
    attention_dim: int = field(
        default=1000, metadata={"help": "hidden units n' of the alignment model (paper: 1000)"}
    )


class RNNsearchEncoder(GRUEncoder):
    """Bidirectional (Appendix A.2.1): a forward and a backward GRU, whose states ->h_j and <-h_j
    are concatenated into the annotation h_j."""

    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary, bidirectional=True)

    def summarize(self, final_states):
        return final_states[1]  # <-h_1: the backward GRU ends on the first source word


class RNNsearchDecoder(ConditionalGRUDecoder):
    """The decoder with the alignment model: c_i = sum_j alpha_ij h_j (Eqs. 5 and 6)."""

    def __init__(self, cfg, dictionary):
        super().__init__(cfg, dictionary, attention=True)


# fairseq registers the architecture "rnnsearch" with the model (register_model with a dataclass):
# the paper's sizes, as the dataclass's defaults, and no length limit.
@register_model("rnnsearch", dataclass=RNNsearchConfig)
class RNNsearchModel(RecurrentTranslationModel):
    config_class = RNNsearchConfig
    encoder_class = RNNsearchEncoder
    decoder_class = RNNsearchDecoder


@register_model_architecture("rnnsearch", "rnnsearch_30")
def rnnsearch_30(cfg):
    """RNNsearch-30: the paper's sizes, trained on pairs of up to 30 tokens (Section 4.2)."""
    apply_architecture(cfg, RNNsearchConfig, max_train_length=30)


@register_model_architecture("rnnsearch", "rnnsearch_50")
def rnnsearch_50(cfg):
    """RNNsearch-50: the paper's sizes, trained on pairs of up to 50 tokens (Section 4.2)."""
    apply_architecture(cfg, RNNsearchConfig, max_train_length=50)
