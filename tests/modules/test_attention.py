"""The alignment model: U_a h_j computed once per sentence, not once per decoding step; the
energies e_ij and their gradients as Eq. (6) defines them."""

import torch
from fairseq.sequence_generator import SequenceGenerator

from bahdanau_plugin.modules.attention import AlignmentEnergies

from ..helpers import build_tiny_model, randomize_
from ..models.batches import SOURCES, source_batch


def test_beam_search_projects_the_annotations_once_per_sentence():
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    calls = []
    model.decoder.attention.annotation_projection.register_forward_hook(
        lambda _module, inputs, _output: calls.append(inputs[0].size(0))
    )
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    generator = SequenceGenerator([model], model.decoder.dictionary, beam_size=3, max_len_b=6)
    hypotheses = generator.forward({"net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths}})
    assert max(len(h[0]["tokens"]) for h in hypotheses) > 2  # several decoding steps ran
    assert calls == [len(SOURCES) * 3]  # one call, for every beam of every sentence


def energy_inputs(seed=0):
    """W_a s_{i-1} (B x n'), U_a h_j (B x S x n') and v_a, in float64 for gradcheck."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(3, 4), (3, 5, 4), (4,)]
    return [torch.randn(*shape, generator=generator, dtype=torch.float64, requires_grad=True) for shape in shapes]


def plain_energies(projected_state, projected_annotations, v):
    return torch.tanh(projected_state.unsqueeze(1) + projected_annotations) @ v  # Eq. (6)


def test_energies_are_v_a_tanh_of_the_projections():
    inputs = energy_inputs()
    torch.testing.assert_close(AlignmentEnergies.apply(*inputs), plain_energies(*inputs))


def test_energy_gradients_are_those_of_the_plain_formula():
    inputs = energy_inputs()
    upstream = torch.randn(3, 5, dtype=torch.float64)
    ours = torch.autograd.grad(AlignmentEnergies.apply(*inputs), inputs, upstream)
    expected = torch.autograd.grad(plain_energies(*inputs), inputs, upstream)
    for gradient, reference in zip(ours, expected):
        torch.testing.assert_close(gradient, reference)


def test_energy_gradients_pass_gradcheck():
    assert torch.autograd.gradcheck(AlignmentEnergies.apply, energy_inputs())


def test_energies_keep_only_their_inputs_for_backward():
    projected_state, projected_annotations, v = energy_inputs()
    kept = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: kept.append(t.shape) or t, lambda t: t):
        AlignmentEnergies.apply(projected_state, projected_annotations, v)
    assert sorted(kept) == sorted([projected_state.shape, projected_annotations.shape, v.shape])


def test_energies_of_float32_projections_train_under_cpu_autocast():
    """autocast runs the product with v_a in bfloat16, so the gradient arrives in bfloat16."""
    inputs = [t.detach().float().requires_grad_() for t in energy_inputs()]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        energies = AlignmentEnergies.apply(*inputs)
    assert energies.dtype == torch.bfloat16
    gradients = torch.autograd.grad(energies.sum(), inputs)
    assert [g.dtype for g in gradients] == [torch.float32] * 3
