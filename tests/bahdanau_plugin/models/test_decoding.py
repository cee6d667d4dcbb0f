"""Incremental decoding and padding never change a model's scores."""

import torch
from fairseq.sequence_generator import SequenceGenerator

from bahdanau_plugin.modules import beam_rows

from ...support.models import build_tiny_model, randomize_
from .batches import SOURCES, TARGETS, prev_output_batch, source_batch
from .host_reads import HostReads

BEAM = 3


def _teacher_forced_log_probs(model, src_tokens, src_lengths, prev_tokens):
    encoder_out = model.encoder(src_tokens, src_lengths)
    return model.get_normalized_probs(model.decoder(prev_tokens, encoder_out), log_probs=True)


def _incremental_log_probs(model, src_tokens, src_lengths, prev_tokens):
    encoder_out = model.encoder(src_tokens, src_lengths)
    incremental_state = {}
    steps = []
    for i in range(prev_tokens.size(1)):
        output = model.decoder(
            prev_tokens[:, : i + 1], encoder_out, incremental_state=incremental_state
        )
        steps.append(model.get_normalized_probs(output, log_probs=True))
    return torch.cat(steps, dim=1)


def _eval_model(model_name):
    return randomize_(build_tiny_model(model_name)).eval()


def test_incremental_decoding_gives_the_teacher_forced_scores(model_name):
    model = _eval_model(model_name)
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    torch.testing.assert_close(
        _incremental_log_probs(model, src_tokens, src_lengths, prev_tokens),
        _teacher_forced_log_probs(model, src_tokens, src_lengths, prev_tokens),
    )


def test_reordering_the_incremental_state_follows_the_beams(model_name):
    model = _eval_model(model_name)
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    new_order = torch.tensor([1, 0])
    encoder_out = model.encoder(src_tokens, src_lengths)
    incremental_state = {}
    model.decoder(prev_tokens[:, :1], encoder_out, incremental_state=incremental_state)
    model.decoder.reorder_incremental_state_scripting(incremental_state, new_order)
    encoder_out = model.encoder.reorder_encoder_out(encoder_out, new_order)
    logits, _ = model.decoder(
        prev_tokens[new_order, :2], encoder_out, incremental_state=incremental_state
    )
    expected = _teacher_forced_log_probs(
        model, src_tokens[new_order], src_lengths[new_order], prev_tokens[new_order, :2]
    )
    torch.testing.assert_close(
        model.get_normalized_probs((logits, None), log_probs=True), expected[:, 1:]
    )


def _beams(model):
    """encoder_out and incremental state after one step, with BEAM rows per sentence, as fairseq's
    beam search lays them out."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    rows = torch.arange(len(SOURCES)).repeat_interleave(BEAM)
    encoder_out = model.encoder.reorder_encoder_out(model.encoder(src_tokens, src_lengths), rows)
    incremental_state = {}
    first_tokens = torch.full((len(rows), 1), model.decoder.dictionary.eos())
    model.decoder(first_tokens, encoder_out, incremental_state=incremental_state)
    return encoder_out, incremental_state


def test_reordering_beams_within_their_sentences_copies_no_encoder_output(model_name):
    model = _eval_model(model_name)
    encoder_out, _ = _beams(model)
    within_sentences = torch.tensor([2, 2, 0, 4, 3, 3])
    reordered = model.encoder.reorder_encoder_out(encoder_out, within_sentences)
    assert all(reordered[key] is value for key, value in _tensors(encoder_out).items())


def test_reordering_beams_within_their_sentences_reorders_only_the_decoder_state(model_name):
    model = _eval_model(model_name)
    encoder_out, incremental_state = _beams(model)
    before = model.decoder.get_incremental_state(incremental_state, "cache")
    within_sentences = torch.tensor([2, 2, 0, 4, 3, 3])
    model.decoder.reorder_incremental_state_scripting(incremental_state, within_sentences)
    after = model.decoder.get_incremental_state(incremental_state, "cache")
    assert torch.equal(after["state"], before["state"][within_sentences])
    assert all(after[key] is value for key, value in _tensors(before).items() if key != "state")


def test_dropping_a_finished_sentence_keeps_the_rows_of_the_others(model_name):
    model = _eval_model(model_name)
    encoder_out, _ = _beams(model)
    second_sentence = torch.tensor([4, 3, 5])
    reordered = model.encoder.reorder_encoder_out(encoder_out, second_sentence)
    for key, value in _tensors(encoder_out).items():
        assert torch.equal(_by_row(reordered[key], 3), _by_row(value, 6)[second_sentence])


def _tensors(rows: dict) -> dict:
    """The tensors of a dict of rows (the encoder output, the decoder's cache), not the flags of
    their layout (beam_rows.CHECKED)."""
    return {key: value for key, value in rows.items() if torch.is_tensor(value)}


def _by_row(tensor, rows):
    """A tensor of the encoder output or the cache as one row for each of ``rows`` rows (those of
    source length keep one row per sentence in a beam search)."""
    return tensor.repeat_interleave(rows // tensor.size(0), dim=0)


def test_a_beam_search_keeps_one_row_per_sentence_of_the_tensors_of_source_length(model_name):
    model = _eval_model(model_name)
    encoder_out, incremental_state = _beams(model)
    cache = model.decoder.get_incremental_state(incremental_state, "cache")
    assert encoder_out["annotations"].size(0) == encoder_out["padding_mask"].size(0) == len(SOURCES)
    assert encoder_out["summary"].size(0) == cache["state"].size(0) == len(SOURCES) * BEAM
    for key in model.decoder.per_sentence:
        assert cache[key].size(0) == len(SOURCES)


def test_a_reorder_that_does_not_keep_whole_sentences_gives_every_row_its_own_tensors(model_name):
    model = _eval_model(model_name)
    encoder_out, incremental_state = _beams(model)
    cache = model.decoder.get_incremental_state(incremental_state, "cache")
    interleaved = torch.tensor([0, 3, 1, 4, 2, 5])  # rows of both sentences, alternating
    reordered = _reorder_both(model, encoder_out, incremental_state, interleaved)
    reordered_cache = model.decoder.get_incremental_state(incremental_state, "cache")
    for key, value in _tensors(encoder_out).items():
        assert torch.equal(reordered[key], _by_row(value, 6)[interleaved])
    for key in model.decoder.per_sentence:
        assert torch.equal(reordered_cache[key], _by_row(cache[key], 6)[interleaved])


def _translations(model):
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    generator = SequenceGenerator([model], model.decoder.dictionary, beam_size=BEAM, max_len_b=8)
    hypotheses = generator.forward(
        {"net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths}}
    )
    return [
        [(h["tokens"].tolist(), round(h["score"].item(), 5)) for h in beams] for beams in hypotheses
    ]


def _use_fairseqs_layout(monkeypatch):
    """fairseq's layout of a beam search's rows: every tensor copied for every beam, at every
    step."""
    monkeypatch.setattr(beam_rows, "keeps_sentences", lambda rows, new_order: False)
    monkeypatch.setattr(beam_rows, "sentence_order", lambda rows, source_rows, k: None)


def test_beam_search_translates_as_if_every_step_copied_the_encoder_output(model_name, monkeypatch):
    model = _eval_model(model_name)
    shared = _translations(model)
    _use_fairseqs_layout(monkeypatch)
    assert shared == _translations(model)


def test_in_half_precision_beam_search_translates_as_if_every_step_copied_the_encoder_output(
    monkeypatch, fast_path_setting
):
    """The float32 alignment model of a bfloat16 model (its own energies) broadcasts too. Run
    eagerly: compiled, each layout's step is a kernel of its own, whose bfloat16 roundings differ
    (inductor computes a fused kernel's intermediate values in float32)."""
    fast_path_setting("plain")
    model = _eval_model("rnnsearch").to(torch.bfloat16)
    shared = _translations(model)
    _use_fairseqs_layout(monkeypatch)
    assert shared == _translations(model)


def _reorder_both(model, encoder_out, incremental_state, new_order):
    """One step's reorder, as fairseq's beam search makes it: the decoder's cache, then the
    encoder output."""
    model.decoder.reorder_incremental_state_scripting(incremental_state, new_order)
    return model.encoder.reorder_encoder_out(encoder_out, new_order)


def test_beams_are_checked_once_then_reordered_without_reading_the_order_on_the_host(model_name):
    model = _eval_model(model_name)
    encoder_out, incremental_state = _beams(model)
    encoder_out = _reorder_both(
        model, encoder_out, incremental_state, torch.tensor([2, 2, 0, 4, 3, 3])
    )
    with HostReads() as host_reads:
        for new_order in ([0, 1, 1, 5, 3, 4], [1, 1, 2, 3, 3, 3], [2, 0, 1, 4, 5, 3]):
            encoder_out = _reorder_both(
                model, encoder_out, incremental_state, torch.tensor(new_order)
            )
        finished_first = torch.tensor([3, 4, 4])
        encoder_out = _reorder_both(model, encoder_out, incremental_state, finished_first)
        encoder_out = _reorder_both(model, encoder_out, incremental_state, torch.tensor([2, 0, 0]))
    assert host_reads.calls == []


def test_a_reorder_across_sentences_of_a_new_encoder_output_moves_its_rows():
    model = _eval_model("rnnsearch")
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    encoder_out = model.encoder(src_tokens, src_lengths)
    swapped = model.encoder.reorder_encoder_out(encoder_out, torch.tensor([1, 0]))
    assert torch.equal(swapped["annotations"], encoder_out["annotations"][[1, 0]])


def test_the_encoder_reads_no_value_on_the_host_on_a_device_other_than_the_cpu(model_name):
    """On a GPU such a read would wait for every queued kernel; the meta device has no values at
    all, so any read fails there."""
    model = build_tiny_model(model_name).to("meta")
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    with HostReads() as host_reads:
        encoder_out = model.encoder(src_tokens.to("meta"), src_lengths.to("meta"))
    assert host_reads.calls == []
    assert encoder_out["annotations"].shape[:2] == src_tokens.shape


def _alone_and_in_batch(model, left_pad: bool):
    """Scores of the shorter sentence pair alone, and batched with a longer one."""
    src_dict, tgt_dict = model.encoder.dictionary, model.decoder.dictionary
    alone = _teacher_forced_log_probs(
        model,
        *source_batch(src_dict, SOURCES[1:], left_pad),
        prev_output_batch(tgt_dict, TARGETS[1:]),
    )
    batched = _teacher_forced_log_probs(
        model, *source_batch(src_dict, SOURCES, left_pad), prev_output_batch(tgt_dict, TARGETS)
    )
    return alone[0], batched[1, : alone.size(1)]


def test_left_padding_the_source_does_not_change_scores(model_name):
    alone, batched = _alone_and_in_batch(_eval_model(model_name), left_pad=True)
    torch.testing.assert_close(batched, alone)


def test_right_padding_the_source_does_not_change_scores(model_name):
    alone, batched = _alone_and_in_batch(_eval_model(model_name), left_pad=False)
    torch.testing.assert_close(batched, alone)


def test_attention_rows_sum_to_one_and_are_exactly_zero_on_padding():
    model = _eval_model("rnnsearch")
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    _, extra = model.decoder(prev_tokens, model.encoder(src_tokens, src_lengths))
    alpha = extra["attn"][0]
    padding = src_tokens.eq(model.encoder.dictionary.pad()).unsqueeze(1).expand_as(alpha)
    torch.testing.assert_close(alpha.sum(dim=2), torch.ones(alpha.shape[:2]))
    assert padding.any()
    assert torch.all(alpha[padding] == 0)


def test_rnnencdec_returns_no_attention():
    model = _eval_model("rnnencdec")
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    _, extra = model.decoder(prev_tokens, model.encoder(src_tokens, src_lengths))
    assert extra["attn"] == [None]


def _parameters_without_gradient(model, targets):
    model.train()
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, targets)
    _teacher_forced_log_probs(model, src_tokens, src_lengths, prev_tokens).sum().backward()
    return [name for name, parameter in model.named_parameters() if parameter.grad is None]


def test_every_parameter_gets_a_gradient_so_pytorch_ddp_needs_no_unused_parameter_search(
    model_name,
):
    assert _parameters_without_gradient(_eval_model(model_name), TARGETS) == []


def test_every_parameter_gets_a_gradient_from_a_batch_of_one_token_targets(model_name):
    """Targets of end of sentence only (fairseq-preprocess keeps empty target lines) never need
    s_1; the decoder's GRU still gets its gradient, 0."""
    model = _eval_model(model_name)
    assert _parameters_without_gradient(model, [[], []]) == []
    gru_gradients = [p.grad for p in model.decoder.gru.parameters()]
    assert all(torch.count_nonzero(gradient) == 0 for gradient in gru_gradients)
