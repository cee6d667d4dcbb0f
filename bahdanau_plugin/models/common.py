"""Configuration and behaviour common to RNNsearch and RNNencdec."""

import dataclasses
from dataclasses import dataclass, field
from typing import Optional

from fairseq import hub_utils
from fairseq.dataclass import FairseqDataclass
from fairseq.models import FairseqEncoderDecoderModel
from omegaconf import II

from .. import checkpoint_safety
from ..errors import CheckpointError, ConfigurationError
from ..hub_interface import RecurrentTranslationHubInterface
from ..options import positive_int
from ..tasks.translation_with_source_words import NAME as SOURCE_WORDS_TASK
from . import pretrained_paths, training_setup


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
    # would train wrongly (training_setup.py), as fairseq's wav2vec models read ddp_backend
    ddp_backend: str = II("distributed_training.ddp_backend")
    ddp_comm_hook: str = II("distributed_training.ddp_comm_hook")
    distributed_world_size: int = II("distributed_training.distributed_world_size")
    fp16: bool = II("common.fp16")
    bf16: bool = II("common.bf16")
    memory_efficient_fp16: bool = II("common.memory_efficient_fp16")
    memory_efficient_bf16: bool = II("common.memory_efficient_bf16")


def is_run_option(option: dataclasses.Field) -> bool:
    """Whether the field reads one of fairseq's own options (interpolated from its config)."""
    return isinstance(option.default, str) and option.default.startswith("${")


def size_fields(config_class):
    return [f for f in dataclasses.fields(config_class) if f.name.endswith(("_dim", "_length"))]


def apply_architecture(cfg, config_class, **architecture):
    """Fill every option left unset with the architecture's value, else the paper's default.

    Each named architecture (rnnsearch_30, rnnsearch_50, rnnencdec_30, rnnencdec_50) is a function
    beside its model that calls this with its length limit. fairseq-train leaves options the user
    did not give unset; fairseq-hydra-train has already filled them from the dataclass, which is
    why an architecture's own values default to None.
    """
    for option in dataclasses.fields(config_class):
        if option.name.startswith("_") or is_run_option(option):
            continue
        if getattr(cfg, option.name, None) is not None:
            continue
        setattr(cfg, option.name, architecture.get(option.name, option.default))


def add_size_options(parser, config_class) -> None:
    """The sizes as positive integers: fairseq-train then refuses 0 or a negative size with
    argparse's usual error (usage line, exit code 2) while parsing, before any data is read."""
    for size in size_fields(config_class):
        parser.add_argument(
            "--" + size.name.replace("_", "-"), type=positive_int, help=size.metadata["help"]
        )


def check_sizes(cfg, config_class):
    """fairseq-hydra-train has no argparse: its sizes are checked when the model is built."""
    for size in size_fields(config_class):
        value = getattr(cfg, size.name)
        if value is not None and value <= 0:
            raise ConfigurationError(f"model.{size.name} must be a positive integer, got {value}")


def check_right_padded_targets(task) -> None:
    """The decoder reads each target sentence from its first token, as the paper's recurrence does:
    left padding would run the GRU over the padding before the sentence and change its states."""
    if getattr(getattr(task, "cfg", None), "left_pad_target", False):
        raise ConfigurationError(
            "--left-pad-target is not supported: the recurrent decoder needs right-padded targets "
            "(fairseq's default); drop the flag"
        )


class RecurrentTranslationModel(FairseqEncoderDecoderModel):
    """Subclasses name their configuration, encoder and decoder classes."""

    config_class = encoder_class = decoder_class = None

    def __init__(self, cfg, encoder, decoder):
        super().__init__(encoder, decoder)
        self.cfg = cfg
        self._training_setup_checked = False

    @classmethod
    def add_args(cls, parser):
        add_size_options(parser, cls.config_class)
        super().add_args(parser)  # the other options: fairseq skips those already on the parser

    @classmethod
    def build_model(cls, cfg, task):
        check_sizes(cfg, cls.config_class)
        check_right_padded_targets(task)
        encoder = cls.encoder_class(cfg, task.source_dictionary)
        decoder = cls.decoder_class(cfg, task.target_dictionary)
        return cls(cfg, encoder, decoder)

    def train(self, mode: bool = True):
        # fairseq's trainer sets training mode before each update, outside the update's own error
        # handling (which would save a crash checkpoint): checked once, at the first.
        if mode and not self._training_setup_checked:
            training_setup.check(self.cfg)
            self._training_setup_checked = True
        return super().train(mode)

    @classmethod
    def from_pretrained(
        cls, model_name_or_path, checkpoint_file="model.pt", data_name_or_path=None, **kwargs
    ):
        """fairseq's loading for the hub (as BARTModel's), returning the plugin's hub interface:
        fairseq's, whose translate() also replaces unknown words when given replace_unk=.

        Both folders are read from the current directory (pretrained_paths.py); without
        data_name_or_path, the dictionaries are those beside the checkpoint. A checkpoint that
        cannot be loaded is a CheckpointError of one line, as the commands print it."""
        model_folder = pretrained_paths.model_folder(model_name_or_path)
        data_folder = pretrained_paths.data_folder(data_name_or_path, model_folder)
        try:
            loaded = hub_utils.from_pretrained(
                model_folder,
                checkpoint_file,
                data_folder,
                archive_map=cls.hub_models(),
                **kwargs,
            )
        except Exception as error:
            explanation = checkpoint_safety.checkpoint_problem(error)
            if explanation is None:
                raise
            raise CheckpointError(explanation) from None
        return RecurrentTranslationHubInterface(loaded["args"], loaded["task"], loaded["models"])

    def prepare_for_inference_(self, cfg):
        """fairseq-generate, fairseq-interactive and the hub call this before they translate."""
        refuse_fairseqs_own_unk_replacement(cfg)
        batch_every_sentence(cfg)
        super().prepare_for_inference_(cfg)

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        for side, module in (("source", self.encoder), ("target", self.decoder)):
            _check_vocabulary(state_dict, side, module)
        return super().load_state_dict(state_dict, strict=strict, model_cfg=model_cfg, args=args)

    def max_positions(self):
        """The paper's length limit filters training (and validation) pairs only.

        fairseq-generate, fairseq-interactive and the hub interface call prepare_for_inference_,
        which sets _is_generation_fast: from then on sentences of any length are translated.
        """
        if self._is_generation_fast or self.cfg.max_train_length is None:
            return super().max_positions()
        limit = self.cfg.max_train_length + 1  # fairseq's sizes count the end-of-sentence token
        return (limit, limit)


def refuse_fairseqs_own_unk_replacement(cfg) -> None:
    """fairseq's own --replace-unk misreads these models' alignment (fairseq issue #3533) and
    fairseq-interactive's source words (#1033); the plugin's task replaces instead."""
    if getattr(cfg.generation, "replace_unk", None) is not None:
        raise ConfigurationError(
            f"--replace-unk needs --task {SOURCE_WORDS_TASK}, which replaces unknown words from "
            "these models' attention: add that option (in Python, load the model with "
            "RNNsearchModel.from_pretrained)"
        )


def batch_every_sentence(cfg) -> None:
    """fairseq-generate leaves out the last batch of the test set when its size is not a multiple
    of --required-batch-size-multiple (8 by default; fairseq issue #5036): up to 7 sentences
    missing from the output and from BLEU, without a word. Translating with these models, it
    batches with a multiple of 1, as fairseq-interactive and the hub always do; only the sizes of
    the batches change, not a translation. (fairseq-train never calls this: its batches stay
    fairseq's own.)"""
    dataset = getattr(cfg, "dataset", None)
    if dataset is not None:
        dataset.required_batch_size_multiple = 1


def _check_vocabulary(state_dict, side: str, module) -> None:
    """A checkpoint used with another dictionary fails here with a sentence, not a shape dump."""
    key = ("encoder" if side == "source" else "decoder") + ".embed_tokens.weight"
    if key not in state_dict:
        return
    trained, given = state_dict[key].size(0), len(module.dictionary)
    if trained != given:
        raise CheckpointError(
            f"the checkpoint was trained with a {trained}-symbol {side} dictionary but the data "
            f"directory's has {given}: use the dictionaries (dict.*.txt) the model was trained with"
        )
