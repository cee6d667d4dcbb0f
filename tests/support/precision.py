"""How far a precision moves rnnsearch's gradients from float64's, at the paper's initialization
(Appendix B.1), on torch's default device (docs/precision.md measured it on CPUs):
tests/bahdanau_plugin/models/test_half_precision.py holds docs/precision.md's rules with it.

One teacher-forced batch, loss = cross-entropy summed over the target tokens; for each parameter
the relative error ||g - g64|| / ||g64|| of its gradient. W_a's and U_a's gradients are
proportional to v_a, which starts at 0: measure them on a model built with ``v_a_std`` > 0.
"""

import copy
from typing import Dict, Optional

import torch
import torch.nn.functional as F

from bahdanau_plugin.models.rnnsearch import RNNsearchModel
from bench import models

from .speed import fast_path

# the sizes that build() sets to one value (the maxout layer gets half of it)
SIZES = (
    "encoder_embed_dim",
    "decoder_embed_dim",
    "encoder_hidden_dim",
    "decoder_hidden_dim",
    "attention_dim",
)

PARAMETERS = {
    "v_a": "decoder.attention.energy.weight",
    "W_a": "decoder.attention.state_projection.weight",
    "U_a": "decoder.attention.annotation_projection.weight",
    "W_s": "decoder.initial_state.weight",
    "[W_z; W_r; W]": "decoder.gru.input_weights.weight",
    "E (target)": "decoder.embed_tokens.weight",
}
# float16 training scales the loss so that small gradients do not underflow: fairseq's --fp16
# starts at 2^7 (--fp16-init-scale) and doubles it every 2,000 updates without overflow.
LOSS_SCALE = 2.0**7
# label: (the parameters' dtype, autocast's dtype or None, whether the step is compiled)
MODES = {
    "bfloat16 autocast": (torch.float32, torch.bfloat16, True),
    "float16 autocast": (torch.float32, torch.float16, True),
    "bfloat16 pure": (torch.bfloat16, None, True),
    "float16 pure": (torch.float16, None, True),
    "float32": (torch.float32, None, True),
    "float32, eager": (torch.float32, None, False),
}
REFERENCE = (torch.float64, None, False)


def build(sizes: int, vocabulary: int, v_a_std: float = 0.0, seed: int = 0) -> RNNsearchModel:
    """rnnsearch at the paper's initialization, every size ``sizes``; v_a ~ N(0, v_a_std^2) if
    v_a_std."""
    torch.manual_seed(seed)
    model = models.build(
        "rnnsearch", vocabulary, **dict.fromkeys(SIZES, sizes), maxout_dim=sizes // 2
    )
    if v_a_std:
        torch.nn.init.normal_(model.decoder.attention.energy.weight, std=v_a_std)
    return model


def batch(model, sentences: int, length: int, seed: int = 0):
    """Random unpadded sentences: src_tokens, src_lengths, prev_output_tokens, target."""
    generator = torch.Generator(device=torch.get_default_device()).manual_seed(seed)  # --device's
    dictionary = model.encoder.dictionary
    tokens = torch.randint(
        dictionary.nspecial, len(dictionary), (sentences, length), generator=generator
    )
    target = torch.randint(
        dictionary.nspecial, len(dictionary), (sentences, length), generator=generator
    )
    prev = torch.cat([torch.full((sentences, 1), dictionary.eos()), target[:, :-1]], dim=1)
    return tokens, torch.full((sentences,), length), prev, target


def gradients(
    model, inputs, dtype, autocast_dtype: Optional[torch.dtype] = None, compiled: bool = True
):
    """The gradients of PARAMETERS, by name, in float64, with the model converted to ``dtype`` and
    run under autocast to ``autocast_dtype`` if given, its step compiled or eager."""
    tokens, lengths, prev, target = inputs
    model = copy.deepcopy(model).to(dtype)
    mode = "auto" if compiled else "plain"
    with torch.autocast(
        tokens.device.type,
        dtype=autocast_dtype or torch.bfloat16,
        enabled=autocast_dtype is not None,
    ), fast_path(mode):
        logits, _ = model(tokens, lengths, prev)
    loss = F.cross_entropy(
        logits.float().view(-1, logits.size(-1)), target.view(-1), reduction="sum"
    )
    scale = LOSS_SCALE if torch.float16 in (dtype, autocast_dtype) else 1.0
    named = dict(model.named_parameters())
    grads = torch.autograd.grad(loss * scale, [named[n] for n in PARAMETERS.values()])
    return {name: grad.double() / scale for name, grad in zip(PARAMETERS, grads)}


def relative_errors(model, inputs, mode) -> Dict[str, float]:
    """Each parameter's relative gradient error in ``mode`` (a value of MODES) against float64's."""
    reference = gradients(model, inputs, *REFERENCE)
    measured = gradients(model, inputs, *mode)
    return {
        name: ((measured[name] - reference[name]).norm() / reference[name].norm()).item()
        for name in PARAMETERS
    }
