"""models/recurrent_translation.py: what a model's build gives both architectures, what its
checkpoints record (bahdanau_plugin/fingerprints.py), and the precision it translates in."""

import logging

import pytest
import torch
from fairseq.data import Dictionary
from fairseq.dataclass.configs import CommonConfig, FairseqConfig, GenerationConfig
from omegaconf import OmegaConf

from bahdanau_plugin import fingerprints
from bahdanau_plugin.errors import CheckpointError, ConfigurationError
from bahdanau_plugin.models import RNNsearchModel, inference_setup
from bench.models import build_model, task

from ...support.models import build_tiny_model, randomize_, tiny_sizes
from ...support.speed import messages


def test_a_built_model_registers_no_absent_parameter(model_name):
    """fairseq's trainer would take the absent biases for one parameter shared between layers."""
    model = build_tiny_model(model_name)
    absent = [
        (type(module).__name__, name)
        for module in model.modules()
        for name, parameter in module._parameters.items()
        if parameter is None
    ]
    assert absent == []
    assert model.decoder.gru.gate_weights.bias is None  # still readable, as nn.Linear reads it


def _reordered(dictionary):
    """A dictionary of the same symbols as dictionary, its words in the reverse order."""
    reordered = Dictionary()
    for word in reversed(dictionary.symbols[dictionary.nspecial :]):
        reordered.add_symbol(word)
    return reordered


def test_a_state_dict_holds_the_fingerprints_of_both_dictionaries(model_name):
    model = build_tiny_model(model_name)
    state = model.state_dict()
    assert torch.equal(
        state[fingerprints.SOURCE_DICTIONARY], fingerprints.of_dictionary(model.encoder.dictionary)
    )
    assert torch.equal(
        state[fingerprints.TARGET_DICTIONARY], fingerprints.of_dictionary(model.decoder.dictionary)
    )


def test_a_model_records_the_parameters_it_started_training_from(model_name):
    model = build_tiny_model(model_name)
    assert fingerprints.INITIAL_PARAMETERS not in model.state_dict()
    start = fingerprints.of_parameters(model)
    model.train()
    randomize_(model)  # as training moves them
    model.train()
    assert torch.equal(model.state_dict()[fingerprints.INITIAL_PARAMETERS], start)


def test_a_model_loaded_from_a_checkpoint_keeps_the_start_that_the_checkpoint_records(model_name):
    trained = build_tiny_model(model_name)
    start = fingerprints.of_parameters(trained)
    randomize_(trained.train())  # as training moves them
    resumed = build_tiny_model(model_name)
    resumed.load_state_dict(trained.state_dict())
    resumed.train()
    assert torch.equal(resumed.state_dict()[fingerprints.INITIAL_PARAMETERS], start)


def test_a_checkpoint_of_other_dictionaries_of_the_same_size_is_refused(model_name):
    trained = build_tiny_model(model_name)
    given = task(11, 13)
    given.source_dictionary = _reordered(given.source_dictionary)
    other = build_model(model_name, given, **tiny_sizes(model_name))
    with pytest.raises(
        CheckpointError, match="trained with other dictionaries.* source dictionary"
    ):
        other.load_state_dict(trained.state_dict())


def test_a_checkpoint_without_fingerprints_loads_as_before_them(model_name):
    trained = randomize_(build_tiny_model(model_name))
    state = trained.state_dict()
    fingerprints.take_(state)
    loaded = build_tiny_model(model_name)
    loaded.load_state_dict(state)
    assert all(
        torch.equal(parameter, dict(trained.named_parameters())[name])
        for name, parameter in loaded.named_parameters()
    )
    assert loaded.initial_parameters is None


def _configuration(**common):
    """A configuration as fairseq's tools read it, fairseq's defaults but the common options."""
    return OmegaConf.structured(FairseqConfig(common=CommonConfig(**common)))


@pytest.mark.parametrize("tool", ["fairseq-generate", "fairseq-interactive"])
def test_a_translating_tool_given_bf16_translates_in_bfloat16_the_alignment_model_in_float32(
    tool, monkeypatch
):
    """fairseq 0.12 converts the models for --fp16 alone (model.half()), reading --bf16 for TPUs:
    they translated in float32 without a word."""
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: tool)
    model = build_tiny_model("rnnsearch")
    model.prepare_for_inference_(_configuration(bf16=True))
    assert model.decoder.embed_tokens.weight.dtype == torch.bfloat16
    assert model.encoder.forward_rnn.weight_ih_l0.dtype == torch.bfloat16
    assert {parameter.dtype for parameter in model.decoder.attention.parameters()} == {
        torch.float32
    }


def test_the_hub_translates_in_the_precision_its_models_are_given_whatever_they_trained_in(
    model_name, monkeypatch
):
    """The hub's configuration is the checkpoint's, whose --bf16 was its training's."""
    monkeypatch.setattr(inference_setup, "running_fairseq_tool", lambda: None)
    model = build_tiny_model(model_name)
    model.prepare_for_inference_(_configuration(bf16=True))
    assert {parameter.dtype for parameter in model.parameters()} == {torch.float32}


def test_more_hypotheses_than_a_search_keeps_with_the_models_target_dictionary_are_refused(
    model_name,
):
    """fairseq's search keeps one hypothesis per target symbol but padding at most, whatever
    --beam says: it printed 119 of --nbest 150 with a 120-symbol dictionary, without a word."""
    model = build_tiny_model(model_name)
    symbols = len(model.decoder.dictionary)
    asked = GenerationConfig(beam=symbols, nbest=symbols)
    with pytest.raises(ConfigurationError, match=f"--nbest {symbols} is over the {symbols - 1} "):
        model.prepare_for_inference_(OmegaConf.structured(FairseqConfig(generation=asked)))


def test_retaining_the_dropout_of_a_model_trained_without_is_refused(model_name):
    """fairseq translated as without --retain-dropout, the same hypotheses at every seed."""
    model = build_tiny_model(model_name)
    asked = GenerationConfig(retain_dropout=True)
    with pytest.raises(ConfigurationError, match="--retain-dropout keeps the model's dropout"):
        model.prepare_for_inference_(OmegaConf.structured(FairseqConfig(generation=asked)))


def test_retaining_the_dropout_of_a_model_given_a_rate_keeps_it_while_translating(model_name):
    model = build_tiny_model(model_name, dropout=0.2)
    asked = GenerationConfig(retain_dropout=True)
    model.prepare_for_inference_(OmegaConf.structured(FairseqConfig(generation=asked)))
    assert model.decoder.dropout_module.apply_during_inference


def test_retaining_the_dropout_of_modules_the_model_lacks_is_a_warning_naming_its_own(
    model_name, caplog
):
    """fairseq turned the model's dropout off, said only in its INFO lines; not refused, since in
    an ensemble the name may be another model's."""
    model = build_tiny_model(model_name, dropout=0.2)
    asked = GenerationConfig(retain_dropout=True, retain_dropout_modules=["TransformerDecoder"])
    model.prepare_for_inference_(OmegaConf.structured(FairseqConfig(generation=asked)))
    assert not model.decoder.dropout_module.apply_during_inference
    decoder, encoder = type(model.decoder).__name__, type(model.encoder).__name__
    assert [record.getMessage() for record in caplog.records if record.levelname == "WARNING"] == [
        "--retain-dropout-modules TransformerDecoder names none of this model's modules with "
        f"dropout ({decoder}, {encoder}): it translates without dropout; name {decoder} or "
        f"{encoder} to keep its dropout"
    ]


def test_retaining_the_dropout_of_a_module_the_model_has_keeps_it_alone(model_name, caplog):
    model = build_tiny_model(model_name, dropout=0.2)
    decoder = type(model.decoder).__name__
    asked = GenerationConfig(retain_dropout=True, retain_dropout_modules=[decoder])
    model.prepare_for_inference_(OmegaConf.structured(FairseqConfig(generation=asked)))
    assert model.decoder.dropout_module.apply_during_inference
    assert not model.encoder.dropout_module.apply_during_inference
    assert not [record for record in caplog.records if record.levelname == "WARNING"]


def _loading_warnings(checkpoint, data_bin, caplog) -> list:
    """The plugin's warnings as the hub loads checkpoint with data_bin's dictionaries."""
    with caplog.at_level(logging.WARNING, logger="bahdanau_plugin"):
        RNNsearchModel.from_pretrained(str(checkpoint.parent), checkpoint.name, str(data_bin))
    return messages(caplog, logging.WARNING)


@pytest.mark.parametrize("name", ["rnnsearch_30", "rnnsearch"], ids=["architecture", "model"])
def test_a_checkpoint_option_its_model_has_no_field_for_is_warned_of_as_it_loads(
    data_bin, checkpoints, tmp_path, caplog, name
):
    """An option since renamed or dropped from a model's configuration (a model of one's own):
    fairseq built the architecture without it, and translated as if it had never been set,
    without a word."""
    state = torch.load(checkpoints["rnnsearch_30"], weights_only=False)
    state["cfg"]["model"]["attention_temperature"] = 3.0
    state["cfg"]["model"]["_name"] = name  # a model's own name: fairseq drops the option first
    checkpoint = tmp_path / "checkpoint_last.pt"
    torch.save(state, checkpoint)
    assert _loading_warnings(checkpoint, data_bin, caplog) == [
        "attention_temperature=3.0: the checkpoint's configuration gives options that "
        "RNNsearchConfig has no field for, and the model is built without them (one renamed "
        "since has its default): to read one, give the configuration its field again"
    ]


def test_a_checkpoint_of_the_models_own_options_loads_without_a_warning(
    data_bin, checkpoints, caplog
):
    assert _loading_warnings(checkpoints["rnnsearch_30"], data_bin, caplog) == []
