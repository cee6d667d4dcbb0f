"""A plain, step-by-step transcription of the encoder and decoder equations of Bahdanau et al.
(2015), Appendix A.2.1 and A.2.2, for one unpadded sentence, with one loop per sum. It shares no
code with the plugin: it reads the parameters by name and recomputes everything from the
equations."""

from typing import Dict, List, Optional

import torch


def _linear(layer, x):
    return layer.weight @ x + (layer.bias if layer.bias is not None else 0)


def decode_step_by_step(
    decoder, prev_tokens: List[int], summary: torch.Tensor, annotations: Optional[torch.Tensor]
) -> Dict[str, List[torch.Tensor]]:
    """annotations h_j (S x 2n) for RNNsearch; None for RNNencdec, whose c is the summary."""
    n = decoder.gru.hidden_dim
    W_z, W_r, W = decoder.gru.input_weights.weight.split(n)
    b_z, b_r, b = decoder.gru.input_weights.bias.split(n)
    C_z, C_r, C = decoder.gru.context_weights.weight.split(n)
    U_z, U_r = decoder.gru.gate_weights.weight.split(n)
    U = decoder.gru.candidate_weights.weight
    out = decoder.deep_output
    E = decoder.embed_tokens.weight

    s = torch.tanh(_linear(decoder.initial_state, summary))  # s_0 = tanh(W_s <-h_1)
    trace = {"energies": [], "alpha": [], "context": [], "state": [], "log_probs": []}
    for y_prev in prev_tokens:
        Ey = E[y_prev]
        if annotations is None:
            e, alpha, c = None, None, summary
        else:
            attention = decoder.attention
            v_a = attention.energy.weight[0]
            e = torch.stack(
                [
                    v_a
                    @ torch.tanh(
                        attention.state_projection.weight @ s
                        + _linear(attention.annotation_projection, h_j)
                    )
                    for h_j in annotations
                ]
            )
            alpha = torch.stack([torch.exp(e_j) / torch.exp(e).sum() for e_j in e])
            c = sum(alpha_j * h_j for alpha_j, h_j in zip(alpha, annotations))
        t_tilde = (
            _linear(out.state_weights, s)
            + out.embedding_weights.weight @ Ey
            + out.context_weights.weight @ c
        )
        t = torch.stack(
            [torch.max(t_tilde[2 * k], t_tilde[2 * k + 1]) for k in range(len(t_tilde) // 2)]
        )
        logits = _linear(decoder.output_projection, t)
        log_probs = logits - torch.log(torch.exp(logits).sum())
        z = torch.sigmoid(W_z @ Ey + b_z + U_z @ s + C_z @ c)
        r = torch.sigmoid(W_r @ Ey + b_r + U_r @ s + C_r @ c)
        s_tilde = torch.tanh(W @ Ey + b + U @ (r * s) + C @ c)
        s = (1 - z) * s + z * s_tilde
        for name, value in (
            ("energies", e),
            ("alpha", alpha),
            ("context", c),
            ("state", s),
            ("log_probs", log_probs),
        ):
            trace[name].append(value)
    return trace


def encode_step_by_step(rnn, embedded: torch.Tensor) -> torch.Tensor:
    """The states h_1..h_S of one direction of the encoder (A.2.1) over E x_1..E x_S (S x m), read
    in that order, from h_0 = 0, with the parameters of the torch.nn.GRU that holds them.

    The paper omits biases "to make the equations less cluttered"; nn.GRU has two per gate, added
    here. nn.GRU's update gate is the paper's 1 - z_i (it keeps h_{i-1} where the paper's takes
    h~_i), so z_i is computed as one minus it. The one difference in what is computed: nn.GRU's
    reset gate multiplies U h_{i-1} after the product, r_i * (U h_{i-1}), where the paper writes
    U [r_i * h_{i-1}] (README, "Two honest differences").
    """
    n = rnn.hidden_size
    W_r, W_z, W = rnn.weight_ih_l0.split(n)
    U_r, U_z, U = rnn.weight_hh_l0.split(n)
    b_ir, b_iz, b_i = rnn.bias_ih_l0.split(n)
    b_hr, b_hz, b_h = rnn.bias_hh_l0.split(n)
    h = embedded.new_zeros(n)
    states = []
    for Ex in embedded:
        z = 1 - torch.sigmoid(W_z @ Ex + b_iz + U_z @ h + b_hz)
        r = torch.sigmoid(W_r @ Ex + b_ir + U_r @ h + b_hr)
        h_tilde = torch.tanh(W @ Ex + b_i + r * (U @ h + b_h))
        h = (1 - z) * h + z * h_tilde
        states.append(h)
    return torch.stack(states)
