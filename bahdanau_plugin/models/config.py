"""The models' options: one dataclass with the paper's sizes as defaults, and the way each named
architecture (``rnnsearch_30`` ... ``rnnencdec_50``, beside its model) fills those left unset."""

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import List, Optional

from fairseq.dataclass import FairseqDataclass
from fairseq.models import ARCH_CONFIG_REGISTRY
from omegaconf import II, DictConfig

from ..errors import ConfigurationError
from ..options import positive_int, probability


@dataclass
class RecurrentTranslationConfig(FairseqDataclass):
    dropout: float = field(
        default=0.0,
        metadata={"help": "dropout on embeddings, annotations and the maxout layer (paper: none)"},
    )
    encoder_embed_dim: int = field(
        default=620, metadata={"help": "source word embedding size m (paper: 620)"}
    )
    encoder_hidden_dim: int = field(
        default=1000,
        metadata={"help": "encoder GRU units n, per direction when bidirectional (paper: 1000)"},
    )
    decoder_embed_dim: int = field(
        default=620, metadata={"help": "target word embedding size m (paper: 620)"}
    )
    decoder_hidden_dim: int = field(
        default=1000, metadata={"help": "decoder GRU units n (paper: 1000)"}
    )
    maxout_dim: int = field(
        default=500, metadata={"help": "maxout units l of the deep output (paper: 500)"}
    )
    max_train_length: Optional[int] = field(
        default=None,
        metadata={
            "help": "training pairs with more tokens than this on either side (end of sentence "
            "not counted) are skipped; translation is never limited. Default: the architecture's "
            "(30 for *_30, 50 for *_50, no limit for plain rnnsearch/rnnencdec)"
        },
    )
    # fairseq's own options for the run, read (never set) to refuse those under which the models
    # would train wrongly and warn of those that would do nothing (training_setup.py), as
    # fairseq's wav2vec models read ddp_backend
    ddp_backend: str = II("distributed_training.ddp_backend")
    ddp_comm_hook: str = II("distributed_training.ddp_comm_hook")
    distributed_world_size: int = II("distributed_training.distributed_world_size")
    fp16: bool = II("common.fp16")
    bf16: bool = II("common.bf16")
    memory_efficient_fp16: bool = II("common.memory_efficient_fp16")
    memory_efficient_bf16: bool = II("common.memory_efficient_bf16")
    max_tokens: Optional[int] = II("dataset.max_tokens")
    batch_size: Optional[int] = II("dataset.batch_size")


def is_run_option(option: dataclasses.Field) -> bool:
    """Whether the field reads one of fairseq's own options (interpolated from its config)."""
    return isinstance(option.default, str) and option.default.startswith("${")


def size_fields(config_class):
    return [f for f in dataclasses.fields(config_class) if f.name.endswith(("_dim", "_length"))]


def apply_architecture(cfg, config_class, **architecture):
    """Fill every option the configuration does not give with the architecture's value, else the
    paper's default.

    Each named architecture (rnnsearch_30, rnnsearch_50, rnnencdec_30, rnnencdec_50) is a function
    beside its model that calls this with its length limit. A hydra configuration gives the keys it
    holds, a null included: ``model.max_train_length=null`` over rnnsearch_50 asks for no length
    limit. fairseq fills the keys it lacks with the dataclass's defaults (None for the limit) before
    it builds the model, and a null written then reads as one left out, so fairseq-train and
    fairseq-hydra-train apply the architecture before that (fairseq_patches.read_the_options_as_
    given); when fairseq calls this again as it builds the model, every option is given.
    fairseq-train's parsed arguments give every option, None where the command did not (argparse
    has no null), and are filled there.
    """
    for option in dataclasses.fields(config_class):
        if option.name.startswith("_") or is_run_option(option):
            continue
        if _given(cfg, option.name):
            continue
        setattr(cfg, option.name, architecture.get(option.name, option.default))


def _given(cfg, name: str) -> bool:
    if isinstance(cfg, DictConfig):
        return name in cfg  # False for a missing value (???)
    return getattr(cfg, name, None) is not None


def other_length_limit(cfg) -> Optional[str]:
    """A line for a run whose length limit is not the one its architecture's name says (a recipe
    with another ``model._name``, a limit set to suit BPE units, or none: null), whose checkpoints
    keep that name: rnnsearch_30 trained on pairs of 50 tokens is not the paper's RNNsearch-30."""
    name = getattr(cfg, "_name", None) or getattr(cfg, "arch", None)
    named = argparse.Namespace()
    ARCH_CONFIG_REGISTRY.get(name, lambda _: None)(named)
    limit = getattr(named, "max_train_length", None)
    if limit is None or cfg.max_train_length == limit:
        return None
    pairs = (
        "pairs of any length"
        if cfg.max_train_length is None
        else f"pairs of at most {cfg.max_train_length} tokens a side"
    )
    return f"{name} trains on {pairs} (max_train_length), not the {limit} of its name"


def options_differing(trained, run, config_class) -> List[str]:
    """The model's options whose value in this run is not the one a checkpoint was trained with
    (its configuration, trained), the architecture's name first, as "NAME is TRAINED there and RUN
    here". An option the checkpoint does not record (saved before it) is left out, and so are
    fairseq's own options that the models read: a run may change those."""
    names = ["_name"] + [
        option.name
        for option in dataclasses.fields(config_class)
        if not option.name.startswith("_") and not is_run_option(option)
    ]
    return [
        f"{'--arch' if name == '_name' else name} is {_value(getattr(trained, name))} there and "
        f"{_value(getattr(run, name, None))} here"
        for name in names
        if hasattr(trained, name) and getattr(trained, name) != getattr(run, name, None)
    ]


def options_not_read(cfg, config_class) -> Optional[str]:
    """A line for a configuration that gives options config_class has no field for: a
    checkpoint's model block as saved, of an option the model's code has dropped or renamed since
    it was trained (a model of one's own, say). fairseq builds the model without them, without a
    word (under a model's own name, --arch rnnsearch_mine, it deletes them first). Only a
    configuration (a DictConfig, or a block as saved) is read: the options a command gives are
    checked as they are parsed."""
    if not isinstance(cfg, (DictConfig, dict)):
        return None
    taken = {option.name for option in dataclasses.fields(config_class)}
    unread = [f"{name}={_value(cfg.get(name))}" for name in cfg if name not in taken]
    if not unread:
        return None
    return (
        f"{', '.join(unread)}: the checkpoint's configuration gives options that "
        f"{config_class.__name__} has no field for, and the model is built without them (one "
        "renamed since has its default): to read one, give the configuration its field again"
    )


def _value(value) -> str:
    return "none" if value is None else str(value)


def checked_fields(config_class):
    """The options checked while parsing, each with its argument type: the sizes, positive
    integers, and the dropout, a probability."""
    sizes = [(size, positive_int) for size in size_fields(config_class)]
    dropout = next(f for f in dataclasses.fields(config_class) if f.name == "dropout")
    return sizes + [(dropout, probability)]


def add_checked_options(parser, config_class) -> None:
    """fairseq-train then refuses 0 or a negative size, or a dropout outside [0, 1), with
    argparse's usual error (usage line, exit code 2) while parsing, before any data is read."""
    for option, argument_type in checked_fields(config_class):
        parser.add_argument(
            "--" + option.name.replace("_", "-"), type=argument_type, help=option.metadata["help"]
        )


def check_options(cfg, config_class):
    """fairseq-hydra-train has no argparse: its options are checked when the model is built, by
    the same argument types."""
    for option, argument_type in checked_fields(config_class):
        value = getattr(cfg, option.name)
        if value is None:
            continue
        try:
            argument_type(str(value))
        except argparse.ArgumentTypeError as error:
            raise ConfigurationError(f"model.{option.name}: {error}") from None
