"""The soft alignment alpha_ij of a translation, from the hypotheses of fairseq's generate()."""

from typing import List, Optional

import torch

from bahdanau_plugin.errors import PluginError

END_OF_SENTENCE = "<end>"


class NoAttentionError(PluginError):
    """The model returned no attention weights: RNNencdec, or a fairseq model such as `lstm`,
    which only computes them for generation when asked to print alignments."""


def symbols(dictionary, ids: torch.Tensor) -> List[str]:
    """The tokens of binarized ids that end with the end of sentence, which is written
    END_OF_SENTENCE."""
    return [dictionary[i] for i in ids[:-1].tolist()] + [END_OF_SENTENCE]


def soft_alignment(
    hypothesis, source_length: int, left_pad_source: bool = True
) -> Optional[torch.Tensor]:
    """alpha (target x source, end of sentence included on both axes) of one hypothesis of fairseq's
    generate(), or None when the model returned no attention.

    fairseq gives it as source x target, the source padded to the longest sentence of the batch
    (on the left by default, as --left-pad-source): the padding's columns are dropped."""
    alpha = hypothesis["attention"]  # fairseq leaves an empty tensor without attention
    if alpha is None or alpha.numel() == 0:
        return None
    padding = alpha.size(0) - source_length
    real = alpha[padding:] if left_pad_source else alpha[:source_length]
    return real.t().float().cpu()


def translate_with_alignment(
    translator, source_ids: torch.Tensor, *, beam: int, max_len_b: int, lenpen: float
):
    """Returns (target tokens, alpha: target x source), end of sentence included.

    source_ids are binarized, end of sentence included, as translator.encode returns them; the
    search is fairseq-generate's with --beam, --max-len-b and --lenpen (search_options.py). No
    source tokens: the dictionary's would say <unk> for every word it lacks, and the caller has the
    words it binarized."""
    hypotheses = translator.generate([source_ids], beam=beam, max_len_b=max_len_b, lenpen=lenpen)
    hypothesis = hypotheses[0][0]
    alpha = soft_alignment(hypothesis, len(source_ids))
    if alpha is None:
        raise NoAttentionError(
            "the model returned no attention to draw (RNNencdec has none: it translates from one "
            "fixed context)"
        )
    return symbols(translator.tgt_dict, hypothesis["tokens"]), alpha
