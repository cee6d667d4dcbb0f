"""cpu_fast_path/attention.py: the alignment energies of Eq. (6) through the sigmoid identity, with
their activations recomputed in backward; the same values and gradients as the formula."""

import torch

from bahdanau_plugin.cpu_fast_path import attention as fast_attention
from bahdanau_plugin.cpu_fast_path.attention import AlignmentEnergies, FastBahdanauAttention


def energy_inputs(seed=0):
    """W_a s_{i-1} (B x k x n', 2 beams per sentence), U_a h_j (B x S x n') and v_a, in float64
    for gradcheck."""
    generator = torch.Generator().manual_seed(seed)
    shapes = [(3, 2, 4), (3, 5, 4), (4,)]
    return [
        torch.randn(*shape, generator=generator, dtype=torch.float64, requires_grad=True)
        for shape in shapes
    ]


def plain_energies(projected_state, projected_annotations, v):
    x = projected_state.unsqueeze(2) + projected_annotations.unsqueeze(1)
    return torch.tanh(x) @ v  # Eq. (6)


def test_energies_are_v_a_tanh_of_the_projections():
    inputs = energy_inputs()
    torch.testing.assert_close(AlignmentEnergies.apply(*inputs), plain_energies(*inputs))


def test_energy_gradients_are_those_of_the_plain_formula():
    inputs = energy_inputs()
    upstream = torch.randn(3, 2, 5, dtype=torch.float64)
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


def _fast_energies_taken(monkeypatch, dtype, autocast=False, faster=True):
    """Whether a FastBahdanauAttention with parameters of this dtype computes AlignmentEnergies."""
    taken = []
    original = AlignmentEnergies.apply
    monkeypatch.setattr(
        AlignmentEnergies, "apply", lambda *inputs: taken.append(True) or original(*inputs)
    )
    monkeypatch.setattr(fast_attention, "sigmoid_identity_is_faster", lambda *args: faster)
    attention = FastBahdanauAttention(4, 6, 5).to(dtype)
    state, annotations = torch.randn(2, 4, dtype=dtype), torch.randn(2, 3, 6, dtype=dtype)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        annotations = attention.own_precision(annotations)  # as the decoder gives them
        projected = attention.project_annotations(annotations)
        attention(state, annotations, projected, torch.zeros(2, 3, dtype=torch.bool))
    return bool(taken)


def test_fast_energies_run_in_cpu_float32(monkeypatch):
    assert _fast_energies_taken(monkeypatch, torch.float32)


def test_under_cpu_autocast_the_alignment_model_still_takes_the_float32_fast_energies(monkeypatch):
    assert _fast_energies_taken(monkeypatch, torch.float32, autocast=True)


def test_in_a_half_precision_model_the_float32_alignment_model_takes_the_fast_energies(monkeypatch):
    assert _fast_energies_taken(monkeypatch, torch.bfloat16)
    assert _fast_energies_taken(monkeypatch, torch.float16)


def test_float64_takes_the_plain_formula(monkeypatch):
    assert not _fast_energies_taken(monkeypatch, torch.float64)


def test_where_torch_tanh_is_measured_faster_the_energies_are_the_plain_formula(monkeypatch):
    assert not _fast_energies_taken(monkeypatch, torch.float32, faster=False)
