"""A key of a run's model, optimizer or learning-rate scheduler block that its component does not
take is refused in one line that names it and the options taken, the nearest first."""

import pytest
from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from omegaconf import OmegaConf

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.models import unknown_options
from bahdanau_plugin.models.rnnsearch import RNNsearchConfig

from ...support.paths import PLUGIN

# configs/paper_training.yaml's optimizer block: fairseq's legacy adadelta
PAPER_OPTIMIZER = {
    "_name": "adadelta",
    "adadelta_rho": 0.95,
    "adadelta_eps": 1e-6,
    "lr": [1.0],
    "weight_decay": 0.0,
}


def _refusal(**blocks) -> str:
    with pytest.raises(ConfigurationError) as refused:
        unknown_options.check(OmegaConf.create(blocks))
    return str(refused.value)


def test_a_key_a_legacy_optimizer_does_not_take_is_refused_naming_the_nearest_option_first():
    """fairseq's adadelta would never read it, and train with rho 0.9."""
    assert _refusal(optimizer={**PAPER_OPTIMIZER, "adadelta_rhoo": 0.9}) == (
        "optimizer.adadelta_rhoo is not an option of the optimizer adadelta: it takes "
        "adadelta_rho, adadelta_eps, lr, weight_decay, anneal_eps; correct the key or drop it"
    )


def test_every_key_a_legacy_optimizer_reads_is_taken():
    unknown_options.check(OmegaConf.create({"optimizer": PAPER_OPTIMIZER}))


def test_a_key_a_legacy_scheduler_does_not_take_is_refused():
    message = _refusal(lr_scheduler={"_name": "manual", "epoch2lrr": "{1: 0.5}", "lr": [1.0]})
    assert message.startswith(
        "lr_scheduler.epoch2lrr is not an option of the learning-rate scheduler manual: it takes "
        "epoch2lr, "
    )


def test_a_key_the_model_does_not_take_is_refused_naming_the_nearest_option_first():
    """fairseq refused it too, in omegaconf's traceback (Key 'max_train_lenght' not in
    'RNNsearchConfig')."""
    message = _refusal(model={"_name": "rnnsearch_50", "max_train_lenght": 30})
    assert message.startswith(
        "model.max_train_lenght is not an option of the architecture rnnsearch_50: it takes "
        "max_train_length, "
    )


def test_fairseq_s_own_options_that_the_model_reads_are_taken_and_not_listed():
    """A model block fairseq has completed holds them (ddp_backend, fp16, ...); a user gives them
    in their own blocks."""
    completed = OmegaConf.structured(RNNsearchConfig(_name="rnnsearch_50"))
    unknown_options.check(OmegaConf.create({"model": completed}))
    message = _refusal(model={"_name": "rnnsearch_50", "foo": 1})
    assert "ddp_backend" not in message and "fp16" not in message


@pytest.mark.parametrize("optimizer", ["adadelta", "adam"])
def test_the_configuration_fairseq_train_makes_of_its_flags_is_taken(optimizer):
    """A legacy optimizer's block is then fairseq-train's whole Namespace, every option of the run
    a key of it; argparse has refused any flag it does not know."""
    flags = ["DATA", "--user-dir", PLUGIN, "--arch", "rnnsearch_50", "--optimizer", optimizer]
    parsed = options.parse_args_and_arch(options.get_training_parser(), flags)
    unknown_options.check(convert_namespace_to_omegaconf(parsed))
