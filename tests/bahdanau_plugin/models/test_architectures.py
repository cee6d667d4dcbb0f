"""The four named architectures: the paper's sizes, their length limits, command-line overrides."""

import logging

import pytest
from fairseq import options
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY
from omegaconf import OmegaConf

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.speed import setting

from ...support.paths import REPO
from ...support.models import build_tiny_model, paper_sizes


def _parse(*flags):
    parser = options.get_training_parser()
    return options.parse_args_and_arch(
        parser, ["data", "--user-dir", str(REPO / "bahdanau_plugin"), *flags]
    )


@pytest.mark.parametrize(
    "arch, limit",
    [("rnnsearch_30", 30), ("rnnsearch_50", 50), ("rnnencdec_30", 30), ("rnnencdec_50", 50)],
)
def test_named_architectures_have_the_papers_sizes_and_length_limit(arch, limit):
    args = _parse("--arch", arch)
    sizes = paper_sizes(arch.split("_")[0])
    assert {name: getattr(args, name) for name in sizes} == sizes
    assert args.max_train_length == limit


@pytest.mark.parametrize("arch", ["rnnsearch_30", "rnnsearch_50", "rnnencdec_30", "rnnencdec_50"])
def test_each_named_architecture_is_a_function_of_that_name_beside_its_model(arch):
    _parse("--arch", arch)  # loads the plugin
    function = ARCH_CONFIG_REGISTRY[arch]
    assert function.__name__ == arch
    assert function.__module__ == ARCH_MODEL_REGISTRY[arch].__module__


def test_a_null_length_limit_in_a_hydra_configuration_means_none():
    """model.max_train_length=null over the rnnsearch_50 recipe: the user asks for no limit."""
    cfg = OmegaConf.create({"_name": "rnnsearch_50", "max_train_length": None})
    ARCH_CONFIG_REGISTRY["rnnsearch_50"](cfg)
    assert cfg.max_train_length is None


def test_a_length_limit_left_out_of_a_hydra_configuration_is_the_architecture_s():
    cfg = OmegaConf.create({"_name": "rnnsearch_50"})
    ARCH_CONFIG_REGISTRY["rnnsearch_50"](cfg)
    assert cfg.max_train_length == 50


def test_rnnsearch_alignment_model_has_1000_hidden_units():
    assert _parse("--arch", "rnnsearch_50").attention_dim == 1000


def test_every_size_can_be_overridden_from_the_command_line():
    args = _parse(
        "--arch",
        "rnnsearch_30",
        "--encoder-embed-dim",
        "7",
        "--decoder-embed-dim",
        "8",
        "--encoder-hidden-dim",
        "9",
        "--decoder-hidden-dim",
        "10",
        "--attention-dim",
        "11",
        "--maxout-dim",
        "12",
        "--max-train-length",
        "13",
        "--dropout",
        "0.2",
    )
    assert (
        args.encoder_embed_dim,
        args.decoder_embed_dim,
        args.encoder_hidden_dim,
        args.decoder_hidden_dim,
        args.attention_dim,
        args.maxout_dim,
        args.max_train_length,
        args.dropout,
    ) == (7, 8, 9, 10, 11, 12, 13, 0.2)


@pytest.mark.parametrize("size", [0, -3])
def test_a_non_positive_size_from_a_yaml_config_is_refused_naming_the_option(model_name, size):
    with pytest.raises(
        ConfigurationError, match=f"model.decoder_hidden_dim: {size} is not a positive integer"
    ):
        build_tiny_model(model_name, decoder_hidden_dim=size)


@pytest.mark.parametrize("dropout", [-0.5, 1.0, 1.5])
def test_a_dropout_outside_0_to_under_1_from_a_yaml_config_is_refused(model_name, dropout):
    """torch takes a negative one as none, zeroes everything at 1 and fails past it at the first
    update."""
    with pytest.raises(
        ConfigurationError, match=f"model.dropout: {dropout} is not a probability from 0 to under 1"
    ):
        build_tiny_model(model_name, dropout=dropout)


def test_a_bad_cpu_search_setting_is_refused_when_the_model_is_built(model_name, monkeypatch):
    """Not at the first validation with --eval-bleu, after the training before it, unsaved."""
    monkeypatch.setenv(setting.SEARCH_SETTING, "soon")
    setting.cpu_search_compile_after.cache_clear()
    try:
        with pytest.raises(ConfigurationError, match="BAHDANAU_CPU_SEARCH_COMPILE_AFTER=soon"):
            build_tiny_model(model_name)
    finally:
        setting.cpu_search_compile_after.cache_clear()


def test_the_length_limit_applies_to_training_and_not_to_translation(model_name):
    model = build_tiny_model(model_name, max_train_length=30)
    assert model.max_positions() == (31, 31)  # the end-of-sentence token counts in fairseq's sizes
    model.make_generation_fast_()
    assert min(model.max_positions()) >= 100_000


def _first_training_lines(model, caplog) -> list:
    with caplog.at_level(logging.INFO, logger="bahdanau_plugin"):
        model.train()
    return [r.getMessage() for r in caplog.records if r.name.startswith("bahdanau_plugin")]


def test_a_run_whose_limit_is_not_its_architecture_s_says_so_as_it_first_trains(caplog):
    """A recipe given another model._name keeps its own limit: rnnsearch_30 trained on pairs of
    50 tokens, whose checkpoints say rnnsearch_30."""
    model = build_tiny_model("rnnsearch", max_train_length=50)
    model.cfg._name = "rnnsearch_30"
    assert _first_training_lines(model, caplog) == [
        "rnnsearch_30 trains on pairs of at most 50 tokens a side (max_train_length), not the 30 "
        "of its name"
    ]
    model.train()  # once
    assert len(caplog.records) == 1


def test_a_run_without_the_limit_of_its_architecture_s_name_says_so_as_it_first_trains(caplog):
    model = build_tiny_model("rnnsearch", max_train_length=None)
    model.cfg._name = "rnnsearch_50"
    assert _first_training_lines(model, caplog) == [
        "rnnsearch_50 trains on pairs of any length (max_train_length), not the 50 of its name"
    ]


@pytest.mark.parametrize("arch, limit", [("rnnencdec_50", 50), ("rnnsearch", 80)])
def test_a_run_with_its_architecture_s_limit_or_of_an_unnamed_one_says_nothing_of_it(
    arch, limit, caplog
):
    model = build_tiny_model(arch.split("_")[0], max_train_length=limit)
    model.cfg._name = arch
    assert _first_training_lines(model, caplog) == []
