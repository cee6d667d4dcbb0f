"""The encoder reads each sentence's real tokens only, in both directions (Appendix A.2.1), and
gives gradients in eval mode too, on any device."""

from types import SimpleNamespace

import pytest
import torch

from bahdanau_plugin.modules import gru_encoder
from bahdanau_plugin.modules.gru_encoder import cudnn_refuses_backward

from ...support.models import build_tiny_model, randomize_
from ..models.batches import SOURCES, TARGETS, prev_output_batch, source_batch


def _run_alone(rnn, embedded):
    """A GRU over one unpadded sentence: its outputs and final state."""
    outputs, final = rnn(embedded.unsqueeze(0))
    return outputs.squeeze(0), final.view(-1)


@pytest.fixture
def rnnsearch():
    return randomize_(build_tiny_model("rnnsearch")).eval()


BATCHES = pytest.mark.parametrize(
    "sources, left_pad",
    [(SOURCES, True), (SOURCES, False), (SOURCES[:1], True)],
    ids=["left-padded", "right-padded", "unpadded"],
)


@BATCHES
def test_annotations_are_forward_and_backward_states_of_the_real_tokens(
    rnnsearch, sources, left_pad
):
    encoder = rnnsearch.encoder
    src_tokens, _ = source_batch(encoder.dictionary, sources, left_pad)
    annotations = encoder(src_tokens)["annotations"]
    for b in range(len(sources)):
        real = src_tokens[b].ne(encoder.dictionary.pad())
        embedded = encoder.embed_tokens(src_tokens[b][real])
        forward_states, _ = _run_alone(encoder.forward_rnn, embedded)
        backward_states, _ = _run_alone(encoder.backward_rnn, embedded.flip(0))
        expected = torch.cat(
            [forward_states, backward_states.flip(0)], dim=1
        )  # h_j = [->h_j ; <-h_j]
        torch.testing.assert_close(annotations[b][real], expected)


def test_annotations_are_zero_on_padding(rnnsearch):
    src_tokens, _ = source_batch(rnnsearch.encoder.dictionary, SOURCES)
    encoder_out = rnnsearch.encoder(src_tokens)
    assert torch.all(encoder_out["annotations"][encoder_out["padding_mask"]] == 0)


@BATCHES
def test_rnnencdec_summary_comes_from_the_state_after_the_last_real_token(sources, left_pad):
    model = randomize_(build_tiny_model("rnnencdec")).eval()
    encoder = model.encoder
    src_tokens, _ = source_batch(encoder.dictionary, sources, left_pad)
    summary = encoder(src_tokens)["summary"]
    for b in range(len(sources)):
        real = src_tokens[b].ne(encoder.dictionary.pad())
        _, last_state = _run_alone(encoder.forward_rnn, encoder.embed_tokens(src_tokens[b][real]))
        torch.testing.assert_close(
            summary[b], torch.tanh(encoder.summary_projection(last_state))
        )  # c = tanh(V h_T)


def _as_earlier_checkpoint(state_dict):
    """The layout of earlier versions: one bidirectional nn.GRU named rnn."""
    renamed = {}
    for key, value in state_dict.items():
        for direction, suffix in (("forward_rnn.", ""), ("backward_rnn.", "_reverse")):
            if key.startswith("encoder." + direction):
                key = "encoder.rnn." + key[len("encoder." + direction) :] + suffix
        renamed[key] = value
    return renamed


def test_checkpoints_with_one_bidirectional_gru_still_load(rnnsearch):
    fresh = build_tiny_model("rnnsearch").eval()
    fresh.load_state_dict(_as_earlier_checkpoint(rnnsearch.state_dict()))
    src_tokens, _ = source_batch(rnnsearch.encoder.dictionary, SOURCES)
    torch.testing.assert_close(
        fresh.encoder(src_tokens)["annotations"], rnnsearch.encoder(src_tokens)["annotations"]
    )


def _on_a_gpu(requires_grad=True):
    """What cudnn_refuses_backward reads of a GPU tensor, for a machine without one."""
    return SimpleNamespace(is_cuda=True, requires_grad=requires_grad)


def test_on_a_gpu_a_gru_in_eval_mode_whose_gradients_are_wanted_runs_without_cudnn(rnnsearch):
    assert cudnn_refuses_backward(rnnsearch.encoder.forward_rnn, _on_a_gpu())


def test_on_a_gpu_a_training_gru_runs_with_cudnn(rnnsearch):
    assert not cudnn_refuses_backward(rnnsearch.train().encoder.forward_rnn, _on_a_gpu())


def test_on_a_gpu_a_gru_in_eval_mode_without_gradients_runs_with_cudnn(rnnsearch):
    with torch.no_grad():
        assert not cudnn_refuses_backward(rnnsearch.encoder.forward_rnn, _on_a_gpu())


def test_on_a_gpu_a_frozen_gru_over_inputs_without_gradients_runs_with_cudnn(rnnsearch):
    rnn = rnnsearch.encoder.forward_rnn.requires_grad_(False)
    assert not cudnn_refuses_backward(rnn, _on_a_gpu(requires_grad=False))


def test_where_cudnn_would_refuse_the_backward_pass_the_grus_run_with_cudnn_off(
    rnnsearch, monkeypatch
):
    monkeypatch.setattr(gru_encoder, "cudnn_refuses_backward", lambda rnn, inputs: True)
    enabled = []
    for rnn in rnnsearch.encoder.rnns():
        rnn.register_forward_pre_hook(lambda *_: enabled.append(torch.backends.cudnn.enabled))
    rnnsearch.encoder(source_batch(rnnsearch.encoder.dictionary, SOURCES)[0])
    assert enabled == [False, False]


def _gradients(model):
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    model.zero_grad()
    logits, _ = model(src_tokens, src_lengths, prev_tokens)
    torch.log_softmax(logits, dim=-1).sum().backward()
    return {name: parameter.grad.clone() for name, parameter in model.named_parameters()}


def test_a_model_in_eval_mode_has_the_gradients_it_has_in_training_mode(rnnsearch):
    """What saliency and alignment analyses take; on a GPU, eval mode runs torch's own CUDA GRU
    and training mode cuDNN's (dropout is 0, so both compute one function)."""
    in_eval_mode = _gradients(rnnsearch)
    for name, gradient in _gradients(rnnsearch.train()).items():
        # within float32 rounding of the gradient's scale: two GRU implementations sum in
        # different orders, and these gradients reach the hundreds
        scale = max(1.0, gradient.abs().max().item())
        torch.testing.assert_close(in_eval_mode[name], gradient, rtol=0, atol=1e-4 * scale)
