"""The alignment model: U_a h_j computed once per sentence, not once per decoding step; the
energies e_ij and their gradients as Eq. (6) defines them."""

import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

from ...support.models import build_tiny_model, randomize_
from ..models.batches import SOURCES, source_batch


def test_beam_search_projects_the_annotations_once_per_sentence():
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    calls = []
    model.decoder.attention.annotation_projection.register_forward_hook(
        lambda _module, inputs, _output: calls.append(inputs[0].size(0))
    )
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    generator = SequenceGenerator([model], model.decoder.dictionary, beam_size=3, max_len_b=6)
    hypotheses = generator.forward(
        {"net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths}}
    )
    assert max(len(h[0]["tokens"]) for h in hypotheses) > 2  # several decoding steps ran
    assert calls == [len(SOURCES)]  # one call, one row per sentence for all of its beams


CONVERSIONS = {
    "half()": lambda model: model.half(),
    "bfloat16()": lambda model: model.bfloat16(),
    "to(float16)": lambda model: model.to(torch.float16),
    "to(bfloat16)": lambda model: model.to(dtype=torch.bfloat16),
}


@pytest.mark.parametrize("conversion", sorted(CONVERSIONS))
def test_converting_the_model_to_half_precision_leaves_the_alignment_model_bit_identical(
    conversion,
):
    model = randomize_(build_tiny_model("rnnsearch"))
    with torch.no_grad():  # below float16's smallest number, as v_a's entries are at the start
        model.decoder.attention.energy.weight[0, 0] = 1e-8
    before = {name: p.clone() for name, p in model.decoder.attention.named_parameters()}
    CONVERSIONS[conversion](model)
    after = dict(model.decoder.attention.named_parameters())
    assert all(torch.equal(after[name], before[name]) for name in before), conversion
    assert model.decoder.gru.input_weights.weight.dtype in (torch.float16, torch.bfloat16)
