"""speed/compiling.py: the decoder's step compiled by torch.compile computes what the step
computes, and a search's step compiled whole searches as the plain modules do (with the weights as
constants once the model only translates, compiled anew when a weight changes, once for each
model of an ensemble, dropped with a freed model), and with weights that change never frozen,
whatever torch's own setting; each compilation is logged once with its time (one row singular);
edits to the modules' classes are compiled as edited (their code replaced in place, a buffer
changed in place too), and each set of frozen parameters apart; a hook on the decoder, a mode or a
transform of torch.func makes the step run eagerly while it is there; where nothing can compile,
or compiling fails (an edit that breaks the graph, or that torch compiles anew at every call), the
step runs eagerly after one warning; a bug in an edit raises its own error alone."""

import functools
import gc
import logging
import re
import weakref

import pytest
import torch
from fairseq.sequence_generator import SequenceGenerator

from bahdanau_plugin.modules.attention import BahdanauAttention
from bahdanau_plugin.modules.conditional_decoder import ConditionalGRUDecoder
from bahdanau_plugin.speed import compiling

from ...support.models import build_tiny_model, randomize_
from ...support.speed import MODES, compiled_calls, messages, plain_modules
from ..models.batches import SOURCES, TARGETS, prev_output_batch, source_batch

LOGGER = "bahdanau_plugin.speed"


def _relative_difference(ours, theirs) -> float:
    return max(
        ((a - b).abs().max() / max(1.0, b.abs().max().item())).item() for a, b in zip(ours, theirs)
    )


def _results(model):
    """The log-probabilities and every parameter's gradient, in training."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    output = model(src_tokens, src_lengths, prev_tokens)
    log_probs = model.get_normalized_probs(output, log_probs=True)
    gradients = torch.autograd.grad(log_probs.exp().mul(log_probs).sum(), list(model.parameters()))
    return [log_probs.detach(), *gradients]


def _accumulated(model):
    """The log-probabilities, and each parameter's .grad after backward() as fairseq-train runs
    it (None for a frozen one)."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    log_probs = model.get_normalized_probs(model(src_tokens, src_lengths, prev_tokens), True)
    model.zero_grad(set_to_none=True)
    log_probs.exp().mul(log_probs).sum().backward()
    gradients = [parameter.grad for parameter in model.parameters()]
    model.zero_grad(set_to_none=True)
    return [log_probs.detach(), *gradients]


def _loss_in(model):
    """The training loss of ``_results`` as a function of the model's weights by name, for
    torch.func (its transforms take the weights as inputs: functional_call)."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)

    def loss(weights):
        output = torch.func.functional_call(model, weights, (src_tokens, src_lengths, prev_tokens))
        log_probs = model.get_normalized_probs(output, log_probs=True)
        return log_probs.exp().mul(log_probs).sum()

    return loss


def test_the_compiled_step_computes_what_the_step_computes(model_name, monkeypatch):
    model = randomize_(build_tiny_model(model_name))
    with compiled_calls(monkeypatch) as calls:
        ours = _results(model)
    with plain_modules(monkeypatch):
        plain = _results(model)
    assert calls == ["step"] * (max(map(len, TARGETS)) + 1)  # every target position
    assert _relative_difference(ours, plain) < 1e-5


def test_each_compilation_is_logged_once_with_what_it_compiled_and_its_time(monkeypatch, caplog):
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model("rnnsearch"))
    with caplog.at_level(logging.INFO, logger=LOGGER):
        _results(model)
        _results(model)
    lines = messages(caplog, logging.INFO)
    assert len(lines) == 1, lines
    assert re.fullmatch(
        r"compiled RNNsearchDecoder\.step \(with gradients, first for 2 rows\) in \d+\.\d s",
        lines[0],
    )


def test_a_compilation_for_one_row_is_logged_in_the_singular(monkeypatch, caplog):
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model("rnnsearch"))
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES[:1])
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS[:1])
    with caplog.at_level(logging.INFO, logger=LOGGER):
        model(src_tokens, src_lengths, prev_tokens)
    assert re.fullmatch(
        r"compiled RNNsearchDecoder\.step \(with gradients, first for 1 row\) in \d+\.\d s",
        " ".join(messages(caplog, logging.INFO)),
    )


def test_freezing_set_for_torch_s_compiler_does_not_freeze_weights_that_change(monkeypatch):
    from torch._inductor import config

    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    # what TORCHINDUCTOR_FREEZING=1 sets
    with config.patch(freezing=True), compiled_calls(monkeypatch) as calls, torch.no_grad():
        model(src_tokens, src_lengths, prev_tokens)  # a validation, its step compiled
        for parameter in model.parameters():  # an update, in place as fairseq's optimizers do
            parameter.mul_(1.5)
        ours = model(src_tokens, src_lengths, prev_tokens)[0]
    with plain_modules(monkeypatch), torch.no_grad():
        plain = model(src_tokens, src_lengths, prev_tokens)[0]
    assert set(calls) == {"step"}
    assert _relative_difference([ours], [plain]) < 1e-5


def test_an_edit_after_compiling_is_compiled_as_edited(monkeypatch):
    model = randomize_(build_tiny_model("rnnsearch"))
    _results(model)
    energies = BahdanauAttention.energies
    monkeypatch.setattr(
        BahdanauAttention, "energies", lambda self, *inputs: 0.5 * energies(self, *inputs)
    )
    with compiled_calls(monkeypatch) as calls:
        ours = _results(model)
    with plain_modules(monkeypatch):
        edited = _results(model)
    monkeypatch.undo()
    with plain_modules(monkeypatch):
        unedited = _results(model)
    assert calls
    assert _relative_difference(ours, edited) < 1e-5
    assert _relative_difference(ours, unedited) > 1e-3


def _energies_halved(self, projected_state, projected_annotations):
    hidden = torch.tanh(projected_state.unsqueeze(2) + projected_annotations.unsqueeze(1))
    return 0.5 * self.energy(hidden).squeeze(3)


def _step_to_half_the_state(self, input_drive, state, encoder_out, cache):
    context, context_drive, alpha = self.context(state, encoder_out, cache)
    return context, alpha, 0.5 * self.gru(input_drive + context_drive, state)


@pytest.mark.parametrize(
    "function, edited",
    [
        (BahdanauAttention.energies, _energies_halved),
        (ConditionalGRUDecoder.step, _step_to_half_the_state),
    ],
    ids=["a function the step calls", "the step"],
)
def test_a_function_s_code_replaced_in_place_after_compiling_is_compiled_as_edited(
    function, edited, monkeypatch
):
    """As IPython's autoreload edits a class: the function kept, its code replaced."""
    model = randomize_(build_tiny_model("rnnsearch"))
    _results(model)
    monkeypatch.setattr(function, "__code__", edited.__code__)
    with compiled_calls(monkeypatch) as calls:
        ours = _results(model)
    with plain_modules(monkeypatch):
        plain = _results(model)
    assert calls
    assert _relative_difference(ours, plain) < 1e-5


def test_the_code_of_a_module_changes_with_any_class_it_holds(monkeypatch):
    decoder = build_tiny_model("rnnsearch").decoder
    before = compiling.code_of(decoder)
    monkeypatch.setattr(BahdanauAttention, "energies", lambda self, *inputs: None)
    assert compiling.code_of(decoder) != before
    monkeypatch.undo()
    assert compiling.code_of(decoder) == before


def test_while_a_forward_hook_is_on_the_decoder_the_step_runs_eagerly_with_one_warning(
    monkeypatch, caplog
):
    model = randomize_(build_tiny_model("rnnsearch"))
    recorded = []
    hook = model.decoder.attention.register_forward_hook(
        lambda _module, _inputs, output: recorded.append(output[1])
    )
    with compiled_calls(monkeypatch) as calls, caplog.at_level(logging.WARNING, logger=LOGGER):
        _results(model)
        _results(model)
        assert calls == []
        hook.remove()
        _results(model)
    assert len(recorded) == 2 * (max(map(len, TARGETS)) + 1)  # every position, twice
    assert messages(caplog, logging.WARNING) == [
        "RNNsearchDecoder.step runs eagerly: a hook is on attention (while it is there)"
    ]
    assert calls  # compiled again once the hook is gone


@pytest.mark.parametrize(
    "set_on_the_decoder, name",
    [
        (lambda decoder: lambda *inputs: _step_to_half_the_state(decoder, *inputs), "<lambda>"),
        (lambda decoder: functools.partial(_step_to_half_the_state, decoder), "partial"),
    ],
    ids=["a lambda", "a partial"],
)
def test_a_function_set_on_the_decoder_for_its_step_runs_eagerly_with_one_warning(
    set_on_the_decoder, name, monkeypatch, caplog
):
    """Not a method of the module's: it ran eagerly as plain PyTorch, and compiled it failed in
    an AttributeError traceback (no __self__); types.MethodType makes one, which compiles."""
    model = randomize_(build_tiny_model("rnnsearch"))
    model.decoder.step = set_on_the_decoder(model.decoder)
    with compiled_calls(monkeypatch) as calls, caplog.at_level(logging.WARNING, logger=LOGGER):
        ours = _results(model)
        _results(model)
    with plain_modules(monkeypatch):
        plain = _results(model)
    assert calls == []
    assert _relative_difference(ours, plain) < 1e-5
    [warning] = messages(caplog, logging.WARNING)
    assert warning.startswith(name) and "runs eagerly" in warning and "types.MethodType" in warning
    assert "\n" not in warning


def test_freezing_a_part_after_compiling_compiles_the_step_apart_within_torch_s_limit(
    monkeypatch, caplog
):
    """Each set of frozen parameters (requires_grad_(False): gradual unfreezing, say) has a
    compilation of its own, as each precision has: torch would compile each set anew as the same
    code, and past its limit of recompilations (8; 1 here) run the step eagerly from then on,
    every set, after a warning that compiling failed."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model("rnnsearch"))
    with torch._dynamo.config.patch(recompile_limit=1), compiled_calls(monkeypatch) as calls:
        with caplog.at_level(logging.WARNING, logger=LOGGER):
            _accumulated(model)
            model.decoder.attention.requires_grad_(False)
            del calls[:]
            ours = _accumulated(model)
    with plain_modules(monkeypatch):
        plain = _accumulated(model)
    assert calls == ["step"] * (max(map(len, TARGETS)) + 1)
    assert messages(caplog, logging.WARNING) == []
    assert [r is None for r in ours] == [r is None for r in plain]  # the attention's
    present = [i for i, r in enumerate(plain) if r is not None]
    assert _relative_difference([ours[i] for i in present], [plain[i] for i in present]) < 1e-5


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_while_a_mode_is_on_the_step_runs_eagerly_with_one_warning(mode, monkeypatch, caplog):
    """Compiled code would not call the mode, and compiling under it fails (under a dispatch mode,
    torch finds nothing to compile): a failure that must not keep the step eager once it is gone."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model("rnnsearch"))
    with compiled_calls(monkeypatch) as calls, caplog.at_level(logging.WARNING, logger=LOGGER):
        with mode() as tanhs:
            _results(model)
        assert calls == []
        _results(model)
    assert tanhs.count >= max(map(len, TARGETS)) + 1  # e_ij's tanh at every position
    assert messages(caplog, logging.WARNING) == [
        f"RNNsearchDecoder.step runs eagerly: a mode is on ({mode.__name__}; while it is, as for "
        "a hook)"
    ]
    assert calls  # compiled once the mode is gone


def test_under_a_torch_func_transform_the_step_runs_eagerly_with_one_warning(monkeypatch, caplog):
    """torch.func.grad of the loss in the weights: torch does not compile under a transform, and
    a compilation tried there would fail, which would keep the step eager once it is over."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model("rnnsearch"))
    weights = {name: parameter.detach() for name, parameter in model.named_parameters()}
    with compiled_calls(monkeypatch) as calls, caplog.at_level(logging.WARNING, logger=LOGGER):
        ours = list(torch.func.grad(_loss_in(model))(weights).values())
        assert calls == []
        _results(model)
    with plain_modules(monkeypatch):
        plain = list(torch.func.grad(_loss_in(model))(weights).values())
    assert messages(caplog, logging.WARNING) == [
        "RNNsearchDecoder.step runs eagerly: a mode is on (torch.func.grad; while it is, as for a "
        "hook)"
    ]
    assert calls  # compiled once the transform is over
    assert _relative_difference(ours, plain) < 1e-5


@pytest.mark.cpu_only
def test_without_a_c_compiler_the_step_runs_eagerly_after_one_warning(monkeypatch, caplog):
    from torch._inductor import config

    compiling.missing_compiler.cache_clear()
    model = randomize_(build_tiny_model("rnnsearch"))
    try:
        with config.patch({"cpp.cxx": (None, "no-such-compiler-g++")}), compiled_calls(
            monkeypatch
        ) as calls, caplog.at_level(logging.WARNING, logger=LOGGER):
            ours = _results(model)
            _results(model)
    finally:
        compiling.missing_compiler.cache_clear()
    with plain_modules(monkeypatch):
        plain = _results(model)
    assert calls == []
    assert messages(caplog, logging.WARNING) == [
        "RNNsearchDecoder.step runs eagerly: no C++ compiler (no-such-compiler-g++) is installed"
    ]
    assert _relative_difference(ours, plain) == 0


def test_where_compiling_fails_the_step_runs_eagerly_after_one_warning(monkeypatch, caplog):
    def failing_compiler(graph, example_inputs):
        raise RuntimeError("the compiler refused")

    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    monkeypatch.setattr(
        compiling.torch,
        "compile",
        lambda function, **options: torch._dynamo.optimize(failing_compiler)(function),
    )
    model = randomize_(build_tiny_model("rnnsearch"))
    with compiled_calls(monkeypatch), caplog.at_level(logging.WARNING, logger=LOGGER):
        ours = _results(model)
        _results(model)
    with plain_modules(monkeypatch):
        plain = _results(model)
    warnings = messages(caplog, logging.WARNING)
    assert warnings == [
        "RNNsearchDecoder.step runs eagerly: compiling it failed (RuntimeError: the compiler "
        "refused)"
    ]
    assert _relative_difference(ours, plain) == 0


def printing(energies):
    """e_ij as they are, and a line printed: Python that torch cannot trace into its graph."""

    def edited(self, *inputs):
        print("energies computed")
        return energies(self, *inputs)

    return edited


def counting_calls(energies):
    """e_ij as they are, and the calls counted on the module: a Python value that the step reads
    and changes, which torch would compile anew at every call."""

    def edited(self, *inputs):
        self.calls = getattr(self, "calls", 0) + 1
        return energies(self, *inputs)

    return edited


# an edit, and the reason the warning gives
NOT_COMPILABLE_WHOLE = {
    "a graph break": (printing, "Unsupported"),
    "compiled anew at every call": (counting_calls, "Unsupported: Dynamo recompile limit exceeded"),
}


@pytest.mark.parametrize(
    "edit, reason", NOT_COMPILABLE_WHOLE.values(), ids=NOT_COMPILABLE_WHOLE.keys()
)
def test_an_edit_torch_cannot_compile_whole_runs_eagerly_after_one_warning(
    edit, reason, monkeypatch, caplog
):
    """Not run in pieces around a graph break, nor compiled at every call up to torch's limit and
    eagerly past it, each without a word."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    monkeypatch.setattr(BahdanauAttention, "energies", edit(BahdanauAttention.energies))
    model = randomize_(build_tiny_model("rnnsearch"))
    with compiled_calls(monkeypatch), caplog.at_level(logging.WARNING, logger=LOGGER):
        for _ in range(20):  # torch's limit is 8 compilations
            ours = _results(model)
            if messages(caplog, logging.WARNING):
                break
    with plain_modules(monkeypatch):
        plain = _results(model)
    [warning] = messages(caplog, logging.WARNING)
    assert warning.startswith(f"RNNsearchDecoder.step runs eagerly: compiling it failed ({reason}")
    assert _relative_difference(ours, plain) < 1e-5


def test_an_edit_compiled_anew_at_every_call_shows_nothing_of_torch_s_but_the_warning(
    monkeypatch, caplog, capfd
):
    """torch printed its own warning of some 15 lines as it hit its recompile limit (the limit,
    the guard that failed, the edit's stack, where to read about recompiling) before the plugin's
    one line said the step runs eagerly."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    monkeypatch.setattr(BahdanauAttention, "energies", counting_calls(BahdanauAttention.energies))
    model = randomize_(build_tiny_model("rnnsearch"))
    with torch._dynamo.config.patch(recompile_limit=2), compiled_calls(monkeypatch):
        with caplog.at_level(logging.WARNING):
            _results(model)
    [warning] = [record.getMessage() for record in caplog.records]
    assert "runs eagerly: compiling it failed (Unsupported: Dynamo recompile limit" in warning
    assert "recompile_limit" not in capfd.readouterr().err


def with_a_bug(energies):
    """e_ij multiplied by a matrix of the wrong shape: a researcher's mistake in an edit."""

    def edited(self, *inputs):
        return energies(self, *inputs) @ torch.ones(3, 3)

    return edited


def test_a_bug_in_an_edit_raises_its_own_error_alone_as_it_would_eagerly(
    monkeypatch, caplog, capfd
):
    """Not after torch's traceback of its fake tensors, a warning that compiling failed, and torch's
    compile error chained before it."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    monkeypatch.setattr(BahdanauAttention, "energies", with_a_bug(BahdanauAttention.energies))
    model = randomize_(build_tiny_model("rnnsearch"))
    with compiled_calls(monkeypatch), caplog.at_level(logging.WARNING):
        with pytest.raises(RuntimeError, match="shapes cannot be multiplied") as raised:
            _results(model)
    assert raised.value.__context__ is None and raised.value.__cause__ is None
    assert [record.getMessage() for record in caplog.records] == []
    assert capfd.readouterr().err == ""


def test_where_compiling_a_search_fails_it_is_not_tried_again_at_every_step(monkeypatch):
    """The step a failed search runs eagerly compiles apart, with the weights as inputs: its
    compilation must not take the place of the search's, which would try again at every step."""
    tried = []

    def failing_compiler(graph, example_inputs):
        raise RuntimeError("the compiler refused")

    def compile_failing(function, **options):
        tried.append(function.__name__)
        return torch._dynamo.optimize(failing_compiler)(function)

    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    monkeypatch.setattr(compiling.torch, "compile", compile_failing)
    model = randomize_(build_tiny_model("rnnsearch"))
    model.make_generation_fast_()
    with compiled_calls(monkeypatch):
        ours = _search(model)
    with plain_modules(monkeypatch):
        plain = _search(model)
    assert sorted(tried) == ["next_words", "step"]
    assert ours == plain


def test_set_to_plain_the_method_itself_runs(fast_path_setting):
    fast_path_setting("plain")
    decoder = build_tiny_model("rnnsearch").decoder
    assert compiling.compiled(decoder.step) == decoder.step


def _search(model):
    """A beam search's best translation of each source sentence, and its score."""
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    generator = SequenceGenerator([model], model.decoder.dictionary, beam_size=3, max_len_b=6)
    with torch.no_grad():
        hypotheses = generator.forward(
            {"net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths}}
        )
    return [(beams[0]["tokens"].tolist(), beams[0]["score"].item()) for beams in hypotheses]


def test_a_search_s_step_is_compiled_whole_and_searches_as_the_plain_modules_do(
    model_name, monkeypatch
):
    model = randomize_(build_tiny_model(model_name)).eval()
    with compiled_calls(monkeypatch) as calls:
        ours = _search(model)
    with plain_modules(monkeypatch):
        plain = _search(model)
    assert set(calls) == {"next_words"}
    assert [tokens for tokens, _ in ours] == [tokens for tokens, _ in plain]
    assert [score for _, score in ours] == pytest.approx([score for _, score in plain], abs=1e-5)


def test_a_model_that_only_translates_compiles_its_search_with_the_weights_as_constants(
    monkeypatch, caplog
):
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model("rnnsearch"))
    model.make_generation_fast_()
    with compiled_calls(monkeypatch), caplog.at_level(logging.INFO, logger=LOGGER):
        ours = _search(model)
    with plain_modules(monkeypatch):
        plain = _search(model)
    assert [tokens for tokens, _ in ours] == [tokens for tokens, _ in plain]
    lines = messages(caplog, logging.INFO)
    assert lines and all("weights as constants" in line for line in lines)


def test_a_weight_changed_after_compiling_with_constants_is_compiled_anew(monkeypatch):
    model = randomize_(build_tiny_model("rnnsearch"))
    model.make_generation_fast_()
    with compiled_calls(monkeypatch) as calls:
        _search(model)
        randomize_(model, seed=1)  # in place, as load_state_dict changes weights
        del calls[:]
        ours = _search(model)
    assert calls
    with plain_modules(monkeypatch):
        plain = _search(model)
    assert [tokens for tokens, _ in ours] == [tokens for tokens, _ in plain]
    assert [score for _, score in ours] == pytest.approx([score for _, score in plain], abs=1e-5)


def test_a_buffer_changed_after_compiling_with_constants_is_compiled_anew(monkeypatch):
    energies = BahdanauAttention.energies
    monkeypatch.setattr(
        BahdanauAttention, "energies", lambda self, *inputs: self.scale * energies(self, *inputs)
    )
    model = randomize_(build_tiny_model("rnnsearch"))
    model.decoder.attention.register_buffer("scale", torch.tensor(1.0))
    model.make_generation_fast_()
    with compiled_calls(monkeypatch) as calls:
        _search(model)
        model.decoder.attention.scale.fill_(1000.0)  # in place
        del calls[:]
        ours = _search(model)
    assert calls
    with plain_modules(monkeypatch):
        plain = _search(model)
    assert [score for _, score in ours] == pytest.approx([score for _, score in plain], abs=1e-5)


def test_a_model_that_only_translates_steps_under_a_torch_func_transform_as_plain_modules_do(
    monkeypatch,
):
    """A search's step differentiated in the decoder's weights by torch.func.grad (a translation's
    saliency, say): those weights, wrapped by the transform, are no constants to compile with;
    the step runs eagerly while the transform is on."""
    model = randomize_(build_tiny_model("rnnsearch"))
    model.make_generation_fast_()
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    weights = {name: parameter.detach() for name, parameter in model.decoder.named_parameters()}
    with torch.no_grad():
        encoder_out = model.encoder(src_tokens, src_lengths=src_lengths)

    def best_first_word(weights):
        inputs, state = (prev_tokens[:, :1], encoder_out), {"incremental_state": {}}
        logits = torch.func.functional_call(model.decoder, weights, inputs, state)[0]
        return torch.log_softmax(logits, dim=-1).max(dim=-1)[0].sum()

    with compiled_calls(monkeypatch):
        _search(model)  # compiled with the weights as constants
        ours = list(torch.func.grad(best_first_word)(weights).values())
    with plain_modules(monkeypatch):
        plain = list(torch.func.grad(best_first_word)(weights).values())
    assert _relative_difference(ours, plain) < 1e-5


def test_an_ensemble_s_models_each_compile_their_search_once(monkeypatch, caplog):
    """Two models of one class, each with its weights as constants (fairseq-generate --path
    a.pt:b.pt): the search calls them in turn at every step, and neither's compilation may take
    the other's place."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    models = [randomize_(build_tiny_model("rnnsearch"), seed=seed) for seed in (0, 1)]
    for model in models:
        model.make_generation_fast_()
    src_tokens, src_lengths = source_batch(models[0].encoder.dictionary, SOURCES)
    generator = SequenceGenerator(models, models[0].decoder.dictionary, beam_size=3, max_len_b=6)
    with compiled_calls(monkeypatch) as calls, caplog.at_level(logging.INFO, logger=LOGGER):
        with torch.no_grad():
            generator.forward({"net_input": {"src_tokens": src_tokens, "src_lengths": src_lengths}})
    assert len(calls) > 2 * 2  # steps of both models
    assert len(messages(caplog, logging.INFO)) == 2, messages(caplog, logging.INFO)


def test_a_freed_model_s_search_compiled_with_its_weights_is_dropped_by_the_next_model_s(
    monkeypatch,
):
    """Models loaded one after another in a process (a notebook, the hub): a freed model's
    weights, held as constants, must not stay behind in its compilation."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    first, second = (randomize_(build_tiny_model("rnnsearch"), seed=seed) for seed in (0, 1))
    first.make_generation_fast_()
    second.make_generation_fast_()
    with compiled_calls(monkeypatch):
        _search(first)
        freed = weakref.ref(first.decoder)
        del first
        gc.collect()
        _search(second)
    assert freed() is None
    assert len(compiling._COMPILATIONS) == 1


def test_a_freed_model_s_weights_compiled_as_constants_are_freed_with_its_compilation(
    monkeypatch,
):
    """torch keeps what it compiled as long as the process (dynamo's cache of a code, inductor's
    modules, which hold the constants): a hub, a server or a notebook loading checkpoint after
    checkpoint must not keep each one's weights in it."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    first = randomize_(build_tiny_model("rnnsearch", vocabulary=23, maxout_dim=9))
    second = randomize_(build_tiny_model("rnnsearch"), seed=1)
    own_shapes = {p.shape for p in first.parameters()} - {p.shape for p in second.parameters()}
    first.make_generation_fast_()
    second.make_generation_fast_()
    with compiled_calls(monkeypatch) as calls:
        _search(first)
        del first
        gc.collect()
        _search(second)
    gc.collect()
    tensors = (o for o in gc.get_objects() if type(o) in (torch.Tensor, torch.nn.Parameter))
    assert calls and [tuple(t.shape) for t in tensors if t.shape in own_shapes] == []


@pytest.mark.cpu_only
def test_on_a_cpu_a_search_runs_eagerly_until_it_has_run_the_set_seconds(monkeypatch):
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    with compiled_calls(monkeypatch, search_compile_after=3600.0) as calls:
        ours = _search(model)
    with plain_modules(monkeypatch):
        plain = _search(model)
    assert calls == []
    assert ours == plain


@pytest.mark.cpu_only
def test_on_a_cpu_a_search_is_compiled_from_the_step_after_it_has_run_the_set_seconds(
    monkeypatch,
):
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    with compiled_calls(monkeypatch, search_compile_after=0.0) as at_once:
        _search(model)
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    with compiled_calls(monkeypatch, search_compile_after=1e-9) as calls:
        _search(model)
    assert len(calls) == len(at_once) - 1 > 0


def test_a_search_s_step_compiles_once_whichever_target_position_it_starts_at(monkeypatch, caplog):
    """y_{i-1} is the last column of the target so far: where it lies in that tensor (torch
    specializes offsets 0 and 1) must not key the compilation, or a search compiled at a later
    step, as on a CPU, compiles again at the first steps of its next batch."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, SOURCES)
    prev_tokens = prev_output_batch(model.decoder.dictionary, TARGETS)
    with compiled_calls(monkeypatch) as calls, caplog.at_level(logging.INFO, logger=LOGGER):
        with torch.no_grad():
            encoder_out = model.encoder(src_tokens, src_lengths=src_lengths)
            for length in (3, 1, 2):  # y_{i-1} the third, first and second column
                model.decoder(prev_tokens[:, :length], encoder_out, incremental_state={})
    assert calls == ["next_words"] * 3
    assert len(messages(caplog, logging.INFO)) == 1, messages(caplog, logging.INFO)


def test_a_search_s_step_compiles_once_as_the_sentences_of_its_batch_finish(
    model_name, monkeypatch, caplog
):
    """fairseq drops a batch's finished sentences from the rows it reorders: what the steps read
    is then selected afresh (U_a h_j among it), and must key the compiled step as at the first
    step did."""
    monkeypatch.setattr(compiling, "_COMPILATIONS", {})
    model = randomize_(build_tiny_model(model_name)).eval()
    sentences, beam = SOURCES + [[6, 7, 8, 9]], 2
    src_tokens, src_lengths = source_batch(model.encoder.dictionary, sentences)
    beams = torch.arange(len(sentences)).repeat_interleave(beam)  # rows as fairseq lays them out
    unfinished = torch.arange(beam, beam * len(sentences))  # the first sentence's beams left out
    eos, state = model.decoder.dictionary.eos(), {}
    with compiled_calls(monkeypatch) as calls, caplog.at_level(logging.INFO, logger=LOGGER):
        with torch.no_grad():
            encoder_out = model.encoder(src_tokens, src_lengths=src_lengths)
            encoder_out = model.encoder.reorder_encoder_out(encoder_out, beams)
            model.decoder(torch.full((beams.numel(), 1), eos), encoder_out, incremental_state=state)
            encoder_out = model.encoder.reorder_encoder_out(encoder_out, unfinished)
            model.decoder.reorder_incremental_state(state, unfinished)
            tokens = torch.full((unfinished.numel(), 2), eos)
            model.decoder(tokens, encoder_out, incremental_state=state)
    assert calls == ["next_words"] * 2
    assert len(messages(caplog, logging.INFO)) == 1, messages(caplog, logging.INFO)


@pytest.mark.cpu_only
def test_on_a_cpu_training_compiles_its_step_at_once_whatever_the_search_s_setting(monkeypatch):
    model = randomize_(build_tiny_model("rnnsearch"))
    with compiled_calls(monkeypatch, search_compile_after=3600.0) as calls:
        _results(model)
    assert calls == ["step"] * (max(map(len, TARGETS)) + 1)


def test_a_compilation_s_key_holds_the_functions_it_names_so_no_later_one_takes_their_id(
    monkeypatch,
):
    """A function edited into a class and then undone is freed; a later edit's function could
    take its id and find the compilation of the first."""
    decoder = build_tiny_model("rnnsearch").decoder

    def edit(self, *inputs):
        return None

    monkeypatch.setattr(BahdanauAttention, "energies", edit)
    key = compiling.code_of(decoder)
    monkeypatch.undo()
    edit_is_alive = weakref.ref(edit)
    del edit
    gc.collect()
    assert edit_is_alive() is not None
    del key
    gc.collect()
    assert edit_is_alive() is None


def test_under_autocast_the_step_runs_eagerly_after_one_warning(device, monkeypatch, caplog):
    """Compiled, the backward pass would keep autocast where the alignment model turns it off, and
    its float32 gradients would be computed in half precision (docs/precision.md)."""
    model = randomize_(build_tiny_model("rnnsearch"))
    with compiled_calls(monkeypatch) as calls, caplog.at_level(logging.WARNING, logger=LOGGER):
        with torch.autocast(device.type, dtype=torch.bfloat16):
            _results(model)
            _results(model)
    assert calls == []
    assert messages(caplog, logging.WARNING) == [
        "RNNsearchDecoder.step runs eagerly: under autocast (--amp) the alignment model's "
        "gradients would lose float32"
    ]
