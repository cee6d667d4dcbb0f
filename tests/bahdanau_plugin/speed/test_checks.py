"""speed/checks.py: a fused form is compared with the modules' own code on the model's device and
in its precision; an unedited model's fused recurrence passes, in float32 and in half precision."""

import pytest
import torch

from bahdanau_plugin.speed import checks
from bahdanau_plugin.speed.cpu.measured_choice import first_difference

from ..models.batches import SOURCES, source_batch
from ...support.models import build_tiny_model, randomize_


def _comparison(model):
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    encoder_out = model.encoder(src_tokens, src_lengths)
    decoder = model.decoder
    drives = decoder.gru.project_inputs(decoder.embed_tokens(src_tokens))
    labels, fused, plain, tolerances = zip(
        *decoder.fused_recurrence._compare(decoder, drives, encoder_out)
    )
    return labels, fused, plain, tolerances


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_an_unedited_fused_recurrence_computes_what_the_modules_compute(model_name, dtype):
    model = randomize_(build_tiny_model(model_name)).to(dtype)
    labels, fused, plain, tolerances = _comparison(model)
    assert first_difference(fused, plain, labels, tolerances) is None


def test_in_half_precision_the_formulas_are_compared_in_float32_then_in_the_model_s_precision():
    model = randomize_(build_tiny_model("rnnsearch")).to(torch.bfloat16)
    labels, fused, _, tolerances = _comparison(model)
    in_bfloat16 = [label.endswith(" in bfloat16") for label in labels]
    assert in_bfloat16[: in_bfloat16.index(True)] and not any(
        in_bfloat16[: in_bfloat16.index(True)]
    )
    assert set(tolerances[: in_bfloat16.index(True)]) == {checks.tolerance(torch.float32)}
    assert set(tolerances[in_bfloat16.index(True) :]) == {checks.tolerance(torch.bfloat16)}
    assert {t.dtype for t, b in zip(fused, in_bfloat16) if b and t is not None} >= {torch.bfloat16}


def test_the_tolerance_of_half_precision_is_a_few_of_its_roundings():
    assert checks.tolerance(torch.float32) == checks.tolerance(torch.float64) < 1e-3
    assert 0.01 < checks.tolerance(torch.bfloat16) < 0.2
    assert checks.tolerance(torch.float16) < checks.tolerance(torch.bfloat16)


def test_on_a_gpu_whose_float32_products_run_in_tf32_the_tolerance_is_tf32_s(monkeypatch):
    monkeypatch.setattr(checks, "tf32_in_products", lambda: True)
    cuda = torch.device("cuda")
    assert checks.tolerance(torch.float32, cuda) == checks.ROUNDINGS * 2.0**-10
    assert checks.tolerance(torch.float32) == checks.tolerance(torch.float64)
    monkeypatch.setattr(checks, "tf32_in_products", lambda: False)
    assert checks.tolerance(torch.float32, cuda) == checks.tolerance(torch.float32)
