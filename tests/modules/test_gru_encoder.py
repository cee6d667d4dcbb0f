"""The encoder reads each sentence's real tokens only, in both directions (Appendix A.2.1)."""

import pytest
import torch

from ..support.models import build_tiny_model, randomize_
from ..models.batches import SOURCES, source_batch


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
