"""The model both architectures are: what RNNsearch and RNNencdec share as fairseq models.

A subclass names its configuration, encoder and decoder (``rnnsearch.py``, ``rnnencdec.py``);
this class builds them, checks fairseq's options when the model first trains
(``training_setup.py``) and when it is made ready to translate (``inference_setup.py``), loads
from a folder for the hub, and keeps the paper's training length limit out of translation. Its
checkpoints record the fingerprints of its dictionaries and of the parameters its training started
from (``fingerprints.py``), and it refuses to load a checkpoint of other dictionaries.
"""

import logging

from fairseq import hub_utils, utils
from fairseq.models import FairseqEncoderDecoderModel
from fairseq.modules import FairseqDropout
from torch import nn

from .. import checkpoint_safety, fairseq_errors, fingerprints
from ..errors import CheckpointError, ConfigurationError
from ..hub_interface import RecurrentTranslationHubInterface, check_loading_options
from ..speed import setting
from . import inference_setup, model_overrides, pretrained_paths, training_setup
from .config import (
    add_checked_options,
    check_options,
    options_differing,
    options_not_read,
    other_length_limit,
)
from .language_pair import check_language_pair
from .unregistered_model import unregistered_model

logger = logging.getLogger(__name__)
# from_pretrained's keyword arguments for the language pair
HUB_LANGUAGE_OPTIONS = ("source_lang=", "target_lang=")


def check_right_padded_targets(task) -> None:
    """The decoder reads each target sentence from its first token, as the paper's recurrence does:
    left padding would run the GRU over the padding before the sentence and change its states."""
    if getattr(getattr(task, "cfg", None), "left_pad_target", False):
        raise ConfigurationError(
            "--left-pad-target is not supported: the recurrent decoder needs right-padded targets "
            "(fairseq's default); drop the flag"
        )


def unregister_absent_parameters_(model: nn.Module) -> None:
    """A parameter a layer goes without (nn.Linear's bias, given ``bias=False``) becomes an
    attribute of value None, not a parameter registered as None: fairseq's trainer catalogs every
    registered parameter, None included, so it took the absent biases of all such layers for one
    parameter shared between them and logged a false "detected shared parameter" line for each
    (fairseq/trainer.py, ``_catalog_shared_params``). State dicts never held them."""
    for module in model.modules():
        for name in [name for name, parameter in module._parameters.items() if parameter is None]:
            del module._parameters[name]
            setattr(module, name, None)  # an attribute still: nn.Linear.forward reads it


class RecurrentTranslationModel(FairseqEncoderDecoderModel):
    """Subclasses name their configuration, encoder and decoder classes."""

    config_class = encoder_class = decoder_class = None

    def __init__(self, cfg, encoder, decoder):
        super().__init__(encoder, decoder)
        self.cfg = cfg
        self._training_setup_checked = False
        # the task's length limits (source, target), which fairseq-train's batches also keep to:
        # set by build_model, None for a model built without a task that has them
        self.task_max_positions = None
        # the fingerprint of the parameters its training started from: taken as it first trains,
        # or loaded with a checkpoint (fingerprints.py)
        self.initial_parameters = None

    @classmethod
    def add_args(cls, parser):
        add_checked_options(parser, cls.config_class)
        super().add_args(parser)  # the other options: fairseq skips those already on the parser

    @classmethod
    def build_model(cls, cfg, task):
        check_options(cfg, cls.config_class)
        saved = model_overrides.saved_model_block(checkpoint_safety.being_loaded().checkpoint)
        if unread := options_not_read(cfg if saved is None else saved, cls.config_class):
            logger.warning(unread)
        check_right_padded_targets(task)
        data = getattr(getattr(task, "cfg", None), "data", None)  # a task of a data-bin's
        pretrained_paths.check_not_split_into_shards(data or "")
        check_language_pair(task)
        # BAHDANAU_FAST_PATH and BAHDANAU_CPU_SEARCH_COMPILE_AFTER, refused here if they name no
        # setting: not at a validation with --eval-bleu, after the training before it
        setting.mode()
        setting.cpu_search_compile_after()
        # the translation task builds --eval-bleu's detokenizer once the model is built
        if detokenizer := training_setup.detokenize_validation_in_the_target_language(task):
            logger.info(detokenizer)
        encoder = cls.encoder_class(cfg, task.source_dictionary)
        decoder = cls.decoder_class(cfg, task.target_dictionary)
        model = cls(cfg, encoder, decoder)
        if hasattr(task, "max_positions"):
            model.task_max_positions = task.max_positions()
        unregister_absent_parameters_(model)
        return model

    def train(self, mode: bool = True):
        # fairseq's trainer sets training mode before each update, outside the update's own error
        # handling (which would save a crash checkpoint): checked once, at the first.
        if mode and not self._training_setup_checked:
            training_setup.check(self.cfg)
            if (limit := other_length_limit(self.cfg)) is not None:
                logger.info(limit)
            # the longest pair fairseq-train keeps, as it resolves them for its batches
            longest = utils.resolve_max_positions(self.task_max_positions, self.max_positions())
            if (idle := training_setup.max_tokens_never_binding(self.cfg, longest)) is not None:
                logger.warning(idle)
            if self.initial_parameters is None:  # neither resumed nor restored from a checkpoint
                self.initial_parameters = fingerprints.of_parameters(self)
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
        cannot be loaded is a CheckpointError of one line, as the commands print it; an option
        that nothing would read, a ConfigurationError (check_loading_options)."""
        model_folder = pretrained_paths.model_folder(model_name_or_path)
        data_folder = pretrained_paths.data_folder(data_name_or_path, model_folder)
        try:
            with checkpoint_safety.fairseqs_loading_weights_only():
                loaded = hub_utils.from_pretrained(
                    model_folder,
                    checkpoint_file,
                    data_folder,
                    archive_map=cls.hub_models(),
                    **kwargs,
                )
        except Exception as error:
            if pair := fairseq_errors.language_pair_not_inferred(error, HUB_LANGUAGE_OPTIONS):
                raise ConfigurationError(pair) from None  # a checkpoint recording no languages
            explanation = checkpoint_safety.checkpoint_problem(error) or unregistered_model(error)
            if explanation is None:
                raise
            raise CheckpointError(explanation) from None
        check_loading_options(loaded["args"], kwargs)
        return RecurrentTranslationHubInterface(loaded["args"], loaded["task"], loaded["models"])

    @property
    def has_attention(self) -> bool:
        """Whether the decoder aligns target words with source words (RNNsearch's does):
        unknown-word replacement and --print-alignment need it."""
        return self.decoder.attention is not None

    def prepare_for_inference_(self, cfg):
        """fairseq-generate, fairseq-interactive and the hub call this before they translate."""
        inference_setup.apply(cfg, self.has_attention, len(self.decoder.dictionary))
        inference_setup.refuse_retaining_a_dropout_of_none(cfg.generation, self.cfg.dropout)
        dropouts = (m.module_name for m in self.modules() if isinstance(m, FairseqDropout))
        inference_setup.warn_of_retained_modules_it_lacks(cfg.generation, dropouts)
        precision = inference_setup.precision_asked(cfg)
        if precision is not None:
            self.to(precision)  # as fairseq's model.half() for --fp16: the alignment model stays
        super().prepare_for_inference_(cfg)

    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        state = super().state_dict(
            *args, destination=destination, prefix=prefix, keep_vars=keep_vars
        )
        fingerprints.add_(state, prefix, self)
        return state

    def load_state_dict(self, state_dict, strict=True, model_cfg=None, args=None):
        recorded = fingerprints.take_(state_dict)
        for side, module in (("source", self.encoder), ("target", self.decoder)):
            _check_vocabulary(
                state_dict, side, module, recorded.get(fingerprints.DICTIONARIES[side])
            )
        checkpoint_safety.check_direction()
        loading = checkpoint_safety.being_loaded()
        overrides = model_overrides.as_given(loading.overrides)
        if (loading.state or {}).get("cfg") is not None:
            trained, others = loading.state["cfg"], loading.others
            model_overrides.refuse_options_no_block_holds(overrides, trained, others)
        model_overrides.refuse_model_options_not_saved(overrides, loading.checkpoint, self.cfg)
        self.initial_parameters = recorded.get(fingerprints.INITIAL_PARAMETERS)
        try:
            loaded = super().load_state_dict(
                state_dict, strict=strict, model_cfg=model_cfg, args=args
            )
        except RuntimeError:  # torch's list of parameters missing, unexpected or of other sizes
            explanation = model_overrides.parameters_not_fitting(overrides, self.cfg)
            if explanation is None:
                raise
            raise CheckpointError(explanation) from None
        self._say_options_changed_on_resuming()
        inference_setup.prepare_for_validation(self, loading.task, loading.overrides)
        return loaded

    def _say_options_changed_on_resuming(self) -> None:
        """fairseq-train resumes a checkpoint under the command's model options, where they fit its
        parameters: a dropout, a length limit or an architecture's name left out of the command
        that resumes a training (or given anew) would change it without a word."""
        loading = checkpoint_safety.being_loaded()
        if not loading.resuming or loading.trained is None:
            return
        differing = options_differing(loading.trained, self.cfg, self.config_class)
        if differing:
            logger.warning(
                f"{loading.checkpoint} was trained with other options than this run's "
                f"({', '.join(differing)}): this run trains under its own; to continue that "
                "training as it was, give the options it was trained with"
            )

    def max_positions(self):
        """The paper's length limit filters training (and validation) pairs only.

        fairseq-generate, fairseq-interactive and the hub interface call prepare_for_inference_,
        which sets _is_generation_fast: from then on sentences of any length are translated.
        """
        if self._is_generation_fast or self.cfg.max_train_length is None:
            return super().max_positions()
        limit = self.cfg.max_train_length + 1  # fairseq's sizes count the end-of-sentence token
        return (limit, limit)


def _check_vocabulary(state_dict, side: str, module, fingerprint) -> None:
    """A checkpoint used with another dictionary fails here with a sentence, not a shape dump or
    translations of other words: by the dictionary's fingerprint, or where the checkpoint has none
    (saved before them), by its size."""
    key = ("encoder" if side == "source" else "decoder") + ".embed_tokens.weight"
    if key not in state_dict:
        return
    trained, given = state_dict[key].size(0), len(module.dictionary)
    if fingerprints.differs(fingerprint, fingerprints.of_dictionary(module.dictionary)):
        raise CheckpointError(
            checkpoint_safety.other_dictionary(side, trained, fingerprint, module.dictionary)
        )
    if trained != given:
        raise CheckpointError(
            f"the checkpoint was trained with a {trained}-symbol {side} dictionary but the data "
            f"directory's has {given}: use the dictionaries (dict.*.txt) the model was trained with"
        )
