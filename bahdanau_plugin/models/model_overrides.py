"""Options written over a checkpoint's configuration as fairseq loads it: --model-overrides of
fairseq-generate, fairseq-interactive and fairseq-validate, and the options of the hub's
from_pretrained.

fairseq writes each over the option of that name in the checkpoint's configuration, wherever it is
(``overwrite_args_by_name``), builds the model from the result and loads the parameters into it.
A name that no option has (``{'dropuot': 0.3}``, ``{'arch': 'rnnencdec'}``) it drops without a word
(the hub refuses those itself: ``hub_interface.check_loading_options``); a size or an architecture
builds a model that the checkpoint's parameters do not fit, and torch's traceback of size
mismatches followed.
"""

import argparse
import ast
from typing import Optional, Sequence

from ..checkpoint_safety import saved_state
from ..errors import ConfigurationError
from ..hub_interface import option_names, unknown_option
from ..running_program import running_fairseq_tool

# The tools whose --model-overrides fairseq loads the checkpoints with.
TOOLS = ("fairseq-generate", "fairseq-interactive", "fairseq-validate")
# Whose options an override names, of one checkpoint or of an ensemble's (--path A.pt:B.pt).
ONE_CHECKPOINTS = "the checkpoint's options (its configuration's"
ENSEMBLES = "the ensemble's checkpoints' options (their configurations'"


def as_given(overrides: Optional[dict]) -> dict:
    """What the user gave of the overrides fairseq loads a checkpoint with: fairseq-validate's
    hold every option of its command, --model-overrides among them as text (which it reads with
    eval, and so any expression: those that are no literal are left unchecked); the other tools'
    are that text's dictionary alone."""
    overrides = overrides or {}
    if running_fairseq_tool() == "fairseq-validate" and "model_overrides" in overrides:
        try:
            return ast.literal_eval(overrides["model_overrides"])
        except (ValueError, SyntaxError):
            return {}
    return overrides


def given_as(overrides: dict, names: list) -> str:
    """The overrides as the user gave them: the tool's option whole, or the hub's call with those
    of names (fairseq adds the data folder and BPE codes to its options)."""
    if running_fairseq_tool() in TOOLS:
        return f'--model-overrides "{overrides!r}"'
    shown = {**overrides.get("model", {}), **overrides}
    return f"from_pretrained({', '.join(f'{name}={shown[name]!r}' for name in names)})"


def refuse_options_no_block_holds(
    overrides: Optional[dict], trained_cfg, others: Sequence[str] = ()
) -> None:
    """A ConfigurationError for --model-overrides naming an option that the checkpoint's
    configuration (trained_cfg, as fairseq loaded it) holds in no block, nor does that of any
    other checkpoint of its ensemble (others: fairseq writes the overrides over every one's, and
    one may be meant for another model, fairseq's lstm's decoder_dropout_out say)."""
    if not overrides or running_fairseq_tool() not in TOOLS:
        return
    names = option_names(trained_cfg)
    if unknown_option(names, overrides) is not None and others:
        try:
            names = names.union(*map(checkpoint_option_names, others))
        except Exception:  # one that does not load: fairseq says why when it reaches it
            return
    unknown = unknown_option(names, overrides)
    if unknown is None:
        return
    name, near = unknown
    held = ONE_CHECKPOINTS if not others else ENSEMBLES
    raise ConfigurationError(
        f"{given_as(overrides, [name])}: {name} is none of {held}, fairseq's in snake_case), "
        "and fairseq would drop it without a word: "
        f"{f'did you mean {near}? ' if near else ''}correct it or drop it"
    )


def refuse_model_options_not_saved(overrides: Optional[dict], checkpoint, model_cfg) -> None:
    """A ConfigurationError for overrides of the model's options (model_cfg: its block, as built)
    that the checkpoint's saved configuration does not hold: saved before its model had them (an
    option added to a model of one's own since). fairseq writes an override only over an option
    the configuration holds; the model was built with the option's default, without a word."""
    overridden = model_options_overridden(overrides, model_cfg)
    saved = saved_model_block(checkpoint) if overridden else None
    missing = [name for name in overridden if saved is not None and name not in saved]
    if missing:
        defaults = ", ".join(f"{name}={model_cfg[name]!r}" for name in missing)
        raise ConfigurationError(
            f"{given_as(overrides, missing)}: the configuration that {checkpoint} was saved with "
            f"has no {', '.join(missing)} (saved before its model had it), and fairseq would drop "
            f"the override and build the model with the default, {defaults}: give the option "
            "that default in the model's configuration, or add it to the checkpoint's "
            "cfg['model']"
        )


def saved_model_block(checkpoint: Optional[str]) -> Optional[dict]:
    """The model's block of the configuration a checkpoint was saved with, as saved: fairseq's
    loading merges it with the model's configuration (defaults added, unknown options dropped);
    None where there is no checkpoint or no such block (a legacy Namespace)."""
    saved = (saved_state(checkpoint).get("cfg") or {}).get("model") if checkpoint else None
    return saved if isinstance(saved, dict) else None


def checkpoint_option_names(path: str) -> set:
    """The options of a checkpoint's configuration as saved: its blocks', at any depth, and those
    of a legacy model's Namespace (fairseq's lstm), over which fairseq writes an override too, and
    which holds every option of its architecture."""
    state = saved_state(path)
    return _names(state.get("cfg") or state.get("args"))


def _names(block) -> set:
    block = vars(block) if isinstance(block, argparse.Namespace) else block
    if not isinstance(block, dict):
        return set()
    return set(block).union(*map(_names, block.values()))


def model_options_overridden(overrides: Optional[dict], model_cfg) -> list:
    """The options of the model's block that overrides names, at its top or under 'model'."""
    names = set(overrides or {}) | set((overrides or {}).get("model") or {})
    return sorted(name for name in names if name in model_cfg)


def parameters_not_fitting(overrides: Optional[dict], model_cfg) -> Optional[str]:
    """The line for a checkpoint whose parameters failed to load into the model built under
    overrides that change its options (model_cfg: the model's block, overridden); None where the
    overrides change none of them, and the failure is another's."""
    changed = model_options_overridden(overrides, model_cfg)
    if not changed:
        return None
    return (
        f"{given_as(overrides, changed)} changes the model's {', '.join(changed)}, and the "
        "checkpoint's parameters do not fit the model so built: a trained model keeps the "
        f"architecture and sizes it was trained with; drop {', '.join(changed)} from the overrides"
    )
