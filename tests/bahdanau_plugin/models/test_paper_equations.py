"""The decoders compute exactly the equations of Appendix A.2.2 (and Cho et al. for RNNencdec)."""

import copy

import pytest
import torch


from ...support.models import build_tiny_model, randomize_
from ...support.speed import compiled_calls
from .batches import SOURCES, TARGETS, prev_output_batch, source_batch
from .paper_equations import decode_step_by_step, encode_step_by_step

TOLERANCE = 1e-5


def _model_trace(model):
    """Run the model's teacher-forced forward pass and record its per-step internals: s_{i-1} and
    c_i at every position, as its recurrence (``recur``, the step compiled as by default) gives
    them to the deep output, alpha_i as it returns them, and e_ij as its alignment model computes
    them from its own states, before masking the padding."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    decoder = model.decoder
    encoder_out = model.encoder(src_tokens, src_lengths)
    logits, extra = decoder(prev_tokens, encoder_out)
    input_drives = decoder.gru.project_inputs(decoder.embed_tokens(prev_tokens))
    prev_states, contexts, _, _ = decoder.recur(
        input_drives, encoder_out, decoder.initial_cache(encoder_out)
    )
    energies = None
    if decoder.attention is not None:
        attention = decoder.attention
        annotations = attention.own_precision(encoder_out["annotations"])
        projected_annotations = attention.project_annotations(annotations)
        energies = torch.stack(
            [
                attention.energies(
                    attention.state_projection(state).unsqueeze(1), projected_annotations
                ).squeeze(1)
                for state in prev_states.unbind(1)
            ],
            1,
        )
    log_probs = model.get_normalized_probs((logits, extra), log_probs=True)
    return {
        "encoder_out": encoder_out,
        "prev_tokens": prev_tokens,
        "energies": energies,
        "context": contexts,
        "alpha": extra["attn"][0],
        "state": prev_states[:, 1:],  # s_1, s_2, ...
        "log_probs": log_probs,
    }


def _expected_and_actual(model_name, quantity, dtype):
    """The model's quantity at every step, in ``dtype`` through the path that dtype takes on CPU
    (float32: the production fast path), against the transcription in float64."""
    model = randomize_(build_tiny_model(model_name)).to(dtype).eval()
    trace = _model_trace(model)
    reference = copy.deepcopy(model).double()
    src_tokens, _ = source_batch(model.encoder.dictionary, SOURCES)
    pairs = []
    for b, (source, target) in enumerate(zip(SOURCES, TARGETS)):
        real = src_tokens[b].ne(model.encoder.dictionary.pad())
        annotations = trace["encoder_out"]["annotations"][b][real].double()
        summary = trace["encoder_out"]["summary"][b].double()
        steps = len(target) + 1
        expected = decode_step_by_step(
            reference.decoder,
            trace["prev_tokens"][b, :steps].tolist(),
            summary,
            annotations if model_name == "rnnsearch" else None,
        )
        if quantity == "state":
            # s_i is needed at position i + 1: teacher forcing skips the one after the last word.
            steps -= 1
        for i in range(steps):
            actual = trace[quantity][b, i]
            if quantity in ("energies", "alpha"):
                actual = actual[real]
            pairs.append((expected[quantity][i], actual.to(expected[quantity][i].dtype)))
    return pairs


DTYPES = pytest.mark.parametrize(
    "dtype", [torch.float64, torch.float32], ids=["float64", "float32"]
)


@DTYPES
@pytest.mark.parametrize("quantity", ["energies", "alpha", "context", "state", "log_probs"])
def test_rnnsearch_decoder_matches_the_papers_equations(quantity, dtype):
    for expected, actual in _expected_and_actual("rnnsearch", quantity, dtype):
        torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=0)


@DTYPES
@pytest.mark.parametrize("quantity", ["state", "log_probs"])
def test_rnnencdec_decoder_matches_the_papers_equations_with_a_fixed_context(quantity, dtype):
    for expected, actual in _expected_and_actual("rnnencdec", quantity, dtype):
        torch.testing.assert_close(actual, expected, atol=TOLERANCE, rtol=0)


def test_the_runs_above_compute_with_the_compiled_step(monkeypatch):
    with compiled_calls(monkeypatch) as calls:
        _model_trace(randomize_(build_tiny_model("rnnsearch")))
    assert calls == ["step"] * 2 * (max(map(len, TARGETS)) + 1)  # the model's, then recur's


def test_rnnsearch_initial_state_comes_from_the_backward_annotation_of_the_first_word():
    model = randomize_(build_tiny_model("rnnsearch")).double().eval()
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    encoder_out = model.encoder(src_tokens, src_lengths)
    n = model.cfg.encoder_hidden_dim
    for b, source in enumerate(SOURCES):
        first_word = src_tokens.size(1) - (len(source) + 1)  # left padding comes first
        backward_first = encoder_out["annotations"][b, first_word, n:]
        torch.testing.assert_close(encoder_out["summary"][b], backward_first)


@DTYPES
@pytest.mark.parametrize("left_pad", [True, False], ids=["left-padded", "right-padded"])
def test_rnnsearch_annotations_match_the_papers_bidirectional_encoder(dtype, left_pad):
    """h_j = [->h_j ; <-h_j] (A.2.1): the forward GRU reads x_1..x_S, the backward one x_S..x_1."""
    model = randomize_(build_tiny_model("rnnsearch")).to(dtype).eval()
    encoder = model.encoder
    src_tokens, _ = source_batch(encoder.dictionary, SOURCES, left_pad)
    annotations = encoder(src_tokens)["annotations"]
    reference = copy.deepcopy(encoder).double()
    for b in range(len(SOURCES)):
        real = src_tokens[b].ne(encoder.dictionary.pad())
        embedded = reference.embed_tokens(src_tokens[b][real])
        forward = encode_step_by_step(reference.forward_rnn, embedded)
        backward = encode_step_by_step(reference.backward_rnn, embedded.flip(0)).flip(0)
        expected = torch.cat([forward, backward], dim=1)
        torch.testing.assert_close(annotations[b][real].double(), expected, atol=TOLERANCE, rtol=0)
