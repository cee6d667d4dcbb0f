"""The decoder's GRU (Appendix A.2.2): s_i from s_{i-1}, E y_{i-1} and c_i, by the paper's gates."""

import torch

from bahdanau_plugin.modules.conditional_gru import ConditionalGRUCell

from ...support.models import randomize_

INPUT, CONTEXT, HIDDEN = 5, 6, 4


def _cell_and_inputs(dtype=torch.float64):
    cell = randomize_(ConditionalGRUCell(INPUT, CONTEXT, HIDDEN)).to(dtype)
    generator = torch.Generator(device=torch.get_default_device()).manual_seed(1)  # --device's
    Ey, c, s = (
        torch.randn(3, size, generator=generator, dtype=dtype, device=generator.device)
        for size in (INPUT, CONTEXT, HIDDEN)
    )
    return cell, Ey, c, s


def _paper_step(cell, Ey, c, s):
    """Eq. (4) with A.2.2's gates, one sentence at a time; biases sit with the input weights."""
    n = HIDDEN
    W_z, W_r, W = cell.input_weights.weight.split(n)
    b_z, b_r, b = cell.input_weights.bias.split(n)
    C_z, C_r, C = cell.context_weights.weight.split(n)
    U_z, U_r = cell.gate_weights.weight.split(n)
    U = cell.candidate_weights.weight
    z = torch.sigmoid(W_z @ Ey + b_z + U_z @ s + C_z @ c)
    r = torch.sigmoid(W_r @ Ey + b_r + U_r @ s + C_r @ c)
    s_tilde = torch.tanh(W @ Ey + b + U @ (r * s) + C @ c)
    return (1 - z) * s + z * s_tilde


def _step(cell, Ey, c, s):
    return cell(cell.project_inputs(Ey) + cell.project_context(c), s)


def test_a_step_is_the_papers_update_with_the_reset_gate_before_u():
    cell, Ey, c, s = _cell_and_inputs()
    expected = torch.stack([_paper_step(cell, *row) for row in zip(Ey, c, s)])
    torch.testing.assert_close(_step(cell, Ey, c, s), expected)


def test_input_drives_of_several_positions_are_computed_at_once():
    cell, Ey, _, _ = _cell_and_inputs()
    positions = torch.stack([Ey, Ey.flip(0)], dim=1)  # B x T x m
    drives = cell.project_inputs(positions)
    torch.testing.assert_close(drives[:, 1], cell.project_inputs(Ey.flip(0)))


def test_a_zero_update_gate_keeps_the_previous_state():
    cell, Ey, c, s = _cell_and_inputs()
    drive = cell.project_inputs(Ey) + cell.project_context(c)
    drive[:, :HIDDEN] = -1e4  # z_i = sigmoid(-1e4) = 0
    torch.testing.assert_close(cell(drive, s), s)
