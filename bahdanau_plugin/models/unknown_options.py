"""An option a run of these models gives that its component does not take, refused in one line.

fairseq builds a legacy optimizer (adadelta, adafactor, adagrad, adamax, lamb, sgd) or learning-rate
scheduler (manual) from its block of the configuration as it finds it, reading the options it knows
by name: with fairseq-hydra-train, a key it does not know (``+optimizer.adadelta_rhoo=0.9``, a typo
of adadelta_rho) is never read, and the run trains with the value the user meant to change. The
model's block, and a component with a dataclass (adam, the fixed scheduler, cross_entropy), refuse
one in omegaconf's traceback (``Key 'foo' not in 'RNNsearchConfig'``). The keys of the four blocks
are checked here, before fairseq fills in its defaults (fairseq_patches.read_the_options_as_given),
against those the component takes. fairseq-train's flags need no check: argparse refuses an unknown
one.
"""

import argparse
import dataclasses
import difflib
from typing import List, Optional, Tuple

from fairseq.models import ARCH_MODEL_NAME_REGISTRY, MODEL_DATACLASS_REGISTRY
from fairseq.registry import REGISTRIES
from omegaconf import DictConfig

from ..errors import ConfigurationError
from .config import is_run_option

# the blocks checked, and what their _name names
COMPONENTS = {
    "model": "the architecture",
    "criterion": "the criterion",
    "optimizer": "the optimizer",
    "lr_scheduler": "the learning-rate scheduler",
}
# What a legacy component reads of its block beside the options its add_args declares: its name,
# and its learning rate (every legacy optimizer and scheduler of fairseq reads lr there).
LEGACY_OPTIONS = ["lr"]
NAME = "_name"


def options_taken(block: str, name: str) -> Optional[Tuple[List[str], List[str]]]:
    """The keys the component of that name (rnnsearch_50 for the model, adadelta for the
    optimizer) takes in its block: the options a user gives, and the others (_name, and those
    fairseq fills in from its other options, the model's ddp_backend, say); None for a name fairseq
    does not know (it says so itself)."""
    if block == "model":
        config = MODEL_DATACLASS_REGISTRY.get(ARCH_MODEL_NAME_REGISTRY.get(name, name))
    else:
        config = REGISTRIES[block]["dataclass_registry"].get(name)
        legacy = REGISTRIES[block]["registry"].get(name)
        if config is None and legacy is not None:
            parser = argparse.ArgumentParser(add_help=False)
            legacy.add_args(parser)
            return LEGACY_OPTIONS + [action.dest for action in parser._actions], [NAME]
    if config is None:
        return None
    fields = [field for field in dataclasses.fields(config) if field.name != NAME]
    return (
        [field.name for field in fields if not is_run_option(field)],
        [NAME] + [field.name for field in fields if is_run_option(field)],
    )


def check(cfg) -> None:
    """Raise a ConfigurationError naming the first key of the model's, the criterion's, the
    optimizer's or the learning-rate scheduler's block that its component does not take."""
    for block, component in COMPONENTS.items():
        options = cfg.get(block)
        if not isinstance(options, DictConfig):  # a name alone, or fairseq-train's Namespace
            continue
        name = options.get(NAME)
        taken = options_taken(block, name)
        if taken is None:
            continue
        given, others = taken
        unknown = [key for key in options if key not in given and key not in others]
        if unknown:
            raise ConfigurationError(
                f"{block}.{unknown[0]} is not an option of {component} {name}: it takes "
                f"{', '.join(nearest_first(unknown[0], given))}; correct the key or drop it"
            )


def nearest_first(key: str, options: List[str]) -> List[str]:
    """The options, those nearest key first (by difflib's likeness), for a message to name."""
    near = difflib.get_close_matches(key, options, n=len(options))
    return near + [option for option in options if option not in near]
