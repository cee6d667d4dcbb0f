"""Every change that importing the plugin makes to fairseq, torch and Python, and why: CHANGES.

The plugin extends fairseq the way fairseq extends itself: it registers its models, a task
(``--task translation_with_source_words``, tasks/) and a hub interface (hub_interface.py), and
the project's commands pass fairseq's own options (``--required-batch-size-multiple 1``,
``--skip-invalid-size-inputs-valid-test``, ``--data-buffer-size 0``: docs/fairseq_changes.md says
why). What no registration or option can do is below, made by ``apply_all`` (which
bahdanau_plugin/__init__.py calls) the same however often the plugin is imported. Those that serve
fairseq's command-line tools are made only when one of them runs (``running_fairseq_tool``), or
the plugin's own (``running_plugin_command``): a notebook or a script that imports the plugin
keeps its own excepthook, standard input, malloc, logging level and warning filters.
None of them changes what fairseq computes, for these models or any other, but the length
--match-source-len gives these models' translations, which fairseq made one word too long
(match_the_source_length_in_words).
"""

import atexit
import codecs
import functools
import importlib.util
import io
import itertools
import logging
import os
import pickle
import sys
import warnings
from typing import Dict, Optional, Tuple

import torch
from fairseq import checkpoint_utils, utils
from fairseq.distributed import utils as distributed_utils
from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_REGISTRY
from fairseq.search import LengthConstrainedBeamSearch
from fairseq.tasks import FairseqTask
from fairseq.tasks.translation import TranslationTask
from omegaconf import DictConfig, open_dict

from . import provenance, ranks, resuming, save_dir
from .checkpoint_safety import (
    DEFAULT_RESTORE_FILE,
    FAIRSEQ_CHECKPOINT_TYPES,
    TorchLoadingWeightsOnly,
    check_restore_file,
    restore_file_path,
    saved_state,
)
from .checkpoint_writing import checkpoints_written_whole
from .freed_memory import keep_freed_memory_for_reuse
from .hub_interface import PINNED_MEMORY_WITHOUT_A_GPU
from .errors import (
    ConfigurationError,
    MissingPathError,
    print_errors_as_one_line,
    print_hydra_jobs_errors_as_one_line,
)
from .log_level import fairseqs_log_level
from .options import home_left_unexpanded
from .models import training_setup, unknown_options
from .models.language_pair import LANGUAGES_GIVEN
from .models.recurrent_translation import RecurrentTranslationModel
from .read_ahead import stop_reading_ahead
from .running_program import running_fairseq_tool, running_plugin_command

TRAINING_TOOLS = ("fairseq-train", "fairseq-hydra-train")
# oneDNN compiles a kernel for each shape and caches up to 1024 of them; ideep, torch's layer over
# it, keeps another 1024 of its own objects around them. A search's row count changes from batch
# to batch and step to step (finished sentences leave), and a search compiled with the weights as
# constants multiplies through oneDNN (speed/compiling.py), so with those defaults memory grows
# with every new row count. oneDNN's cache of 16 keeps the speed; ideep's adds none (the
# measurements: docs/performance-log.md, 2026-11-21 to 2026-11-23).
ONEDNN_CACHE_SIZES = {"ONEDNN_PRIMITIVE_CACHE_CAPACITY": "16", "LRU_CACHE_CAPACITY": "1"}

logger = logging.getLogger(__name__)


def limit_onednn_caches() -> None:
    """Read when oneDNN first runs, so this must come before; a value the user set is kept."""
    for variable, size in ONEDNN_CACHE_SIZES.items():
        os.environ.setdefault(variable, size)


# torch's compiler keeps its cache in TORCHINDUCTOR_CACHE_DIR, and takes an empty one (a script's
# unset variable: TORCHINDUCTOR_CACHE_DIR=$CACHE) for the working folder, which it fills with its
# folders (fxgraph, aotautograd, locks, ...) as the models' step compiles, without a word.
TORCH_CACHE_FOLDER = "TORCHINDUCTOR_CACHE_DIR"


def read_an_empty_torch_cache_folder_as_unset() -> None:
    """torch reads it as its compiler first runs, so this must come before: torch's default folder,
    as the plugin reads its own empty settings (speed/setting.py)."""
    if os.environ.get(TORCH_CACHE_FOLDER) == "":
        del os.environ[TORCH_CACHE_FOLDER]


def print_fairseq_tools_errors_as_one_line() -> None:
    """A fairseq command that ends with an error the plugin explains (errors.py) prints one line
    instead of a traceback; the project's own commands install the same hook themselves.
    fairseq-hydra-train trains in a hydra job, whose errors hydra prints itself."""
    if running_fairseq_tool() is not None:
        print_errors_as_one_line()
        print_hydra_jobs_errors_as_one_line()


def stop_reading_ahead_as_commands_end() -> None:
    """Where a fairseq tool or the plugin's own command runs, fairseq's read-ahead threads are
    stopped as Python begins to end (atexit runs before it ends daemon threads): one left in
    torch's code aborted the command after its last line now and then, an error's or 'done
    training' (read_ahead.py)."""
    if running_fairseq_tool() is not None or running_plugin_command():
        atexit.unregister(stop_reading_ahead)  # registered once, however often this runs
        atexit.register(stop_reading_ahead)


def allow_fairseq_checkpoint_types() -> None:
    """torch >= 2.6 loads with weights_only=True, which refuses the argparse.Namespace that fairseq
    checkpoints hold (and --eval-bleu's numpy arrays); allow-listing those types keeps safe loading
    on (checkpoint_safety.py).
    torch's own registration: there is no per-call option, since fairseq calls torch.load."""
    add_safe_globals = getattr(torch.serialization, "add_safe_globals", None)
    if add_safe_globals is not None:  # torch < 2.4 has no weights-only default to satisfy
        add_safe_globals(list(FAIRSEQ_CHECKPOINT_TYPES))


def load_checkpoints_weights_only_in_commands() -> None:
    """Where a fairseq tool (run with the plugin) or the plugin's own command runs, fairseq's
    checkpoint loading is given a torch whose load() passes weights_only=True
    (checkpoint_safety.TorchLoadingWeightsOnly): torch honours TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD
    only where the caller passes nothing, as fairseq does, and with it a checkpoint's pickle would
    run its code. A program that only imports the plugin keeps fairseq's loading; the hub's
    from_pretrained loads weights-only itself (checkpoint_safety.fairseqs_loading_weights_only)."""
    running = running_fairseq_tool() is not None or running_plugin_command()
    if running and not isinstance(checkpoint_utils.torch, TorchLoadingWeightsOnly):
        checkpoint_utils.torch = TorchLoadingWeightsOnly()


def decode_standard_input_leniently() -> None:
    """fairseq-interactive reads sys.stdin as it finds it: in the locale's encoding, so that under
    a Latin-1 locale ``rivière`` reads ``riviÃ¨re`` (and BPE makes ``<unk>`` pieces of it), and
    under a strict decoder (PYTHONIOENCODING=utf-8, say) one line of invalid bytes ends the whole
    session; and UTF-8 keeps the byte-order mark that Windows editors write, glued to the first
    word, which then reads <unk>. Where fairseq-interactive runs, standard input is read as
    utf-8-sig instead, whatever the locale, which drops that mark, with undecodable bytes becoming
    U+FFFD (<unk>): the line is translated like any other. fairseq has no option for the input's
    decoding, and no task sees the lines before they are decoded."""
    if running_fairseq_tool() != "fairseq-interactive":
        return
    stdin = sys.stdin
    if not isinstance(stdin, io.TextIOWrapper):
        return
    try:
        stdin.reconfigure(encoding="utf-8-sig", errors="replace")
    except io.UnsupportedOperation:  # something has read from it already: too late for the mark
        if codecs.lookup(stdin.encoding).name == "utf-8":
            stdin.reconfigure(errors="replace")


INTERACTIVE = "fairseq_cli.interactive"
INPUT_WRAPPER = "__bahdanau_reads_input_as_standard_input__"


def read_an_input_file_as_standard_input() -> None:
    """fairseq-interactive --input FILE reads FILE through fileinput, as strict UTF-8 with universal
    newlines: a stray carriage return inside a line (corpora hold them) ends a line there, so the
    line is translated as two and every translation after it has the number of the line before
    it; one invalid byte ends the session in a traceback, losing the lines before it in the same
    8 KB block too; and a byte-order mark is kept, glued to the first word, which then reads
    <unk>. Where fairseq-interactive runs, a file given with --input is read as its standard input
    is (decode_standard_input_leniently), and as bahdanau-prepare-data read the training text:
    lines end at \n only, UTF-8 with the mark dropped, undecodable bytes U+FFFD, for these models
    (fairseq's own reading for any other, told by the models fairseq-interactive loaded before it
    reads). fairseq opens it in fairseq_cli.interactive.buffered_read, which no option or task
    reaches (the task sees lines already split); standard input ("-", the default) is still read
    there."""
    if running_fairseq_tool() != "fairseq-interactive":
        return
    for module in _loaded_copies(INTERACTIVE):
        if not getattr(module.buffered_read, INPUT_WRAPPER, False):
            module.buffered_read = _reading_a_file_as_standard_input(module.buffered_read)


def _reading_a_file_as_standard_input(buffered_read):
    @functools.wraps(buffered_read)
    def wrapper(input, buffer_size):
        models = sys._getframe(1).f_locals.get("models") or ()  # fairseq-interactive's main's
        ours = bool(models) and all(isinstance(m, RecurrentTranslationModel) for m in models)
        if input == "-" or not ours:
            yield from buffered_read(input, buffer_size)
            return
        with open(input, encoding="utf-8-sig", errors="replace", newline="\n") as text:
            lines = (line.strip() for line in text)  # stripped as fairseq strips them
            while buffer := list(itertools.islice(lines, buffer_size)):
                yield buffer

    setattr(wrapper, INPUT_WRAPPER, True)
    return wrapper


def write_standard_output_in_utf8() -> None:
    """fairseq-interactive and fairseq-generate print their translations (and the sources) to
    sys.stdout as they find it: in the locale's encoding, so Latin-1 under a Latin-1 locale, and
    under ``LC_ALL=C`` without Python's UTF-8 mode the first ``é`` ends the command with a
    UnicodeEncodeError. Where they run, standard output is written in UTF-8, the encoding of the
    text they translate, whatever the locale. fairseq has no option for its output's encoding."""
    if running_fairseq_tool() not in ("fairseq-interactive", "fairseq-generate"):
        return
    if isinstance(sys.stdout, io.TextIOWrapper):
        sys.stdout.reconfigure(encoding="utf-8")


def keep_freed_memory_for_reuse_in_training() -> None:
    """Where fairseq-train runs: glibc's malloc keeps the large blocks a training step frees for
    the next step, instead of mapping and zeroing them afresh at every step, a third of a CPU
    step's time (freed_memory.py says which thresholds, and when not: a user's own
    malloc tuning, the fast path set to plain). glibc reads them from its environment only at
    start, and only mallopt sets them in a running process; fairseq has no hook before training."""
    if running_fairseq_tool() not in TRAINING_TOOLS:
        return
    try:
        keep_freed_memory_for_reuse()
    except ConfigurationError:  # a setting the fast path refuses: said when the model is built
        pass


def log_at_the_level_of_fairseqs_tools() -> None:
    """Where a fairseq tool or the plugin's own command runs: the root logger at the level fairseq's
    tools set, LOGLEVEL (INFO unless set). Importing fairseq sets it to DEBUG
    (fairseq/models/wav2vec/wav2vec2_classification.py calls logging.basicConfig(level=DEBUG)),
    which fairseq-generate's own basicConfig, called after that import, leaves as it is: every
    library's debug lines then print, hydra's, matplotlib's font search (in bahdanau-plot-alignment:
    docs/fairseq_changes.md), the fast path's choices. fairseq has no option for it."""
    if running_fairseq_tool() is not None or running_plugin_command():
        logging.getLogger().setLevel(fairseqs_log_level())


# Warnings that hydra 1.3 and torch 2 print about how fairseq 0.12 calls them, about 20 lines on
# every run of fairseq-train, fairseq-generate or fairseq-interactive, that no one running the
# command can act on: (category, the start of the message).
DEPENDENCY_WARNINGS = (
    (UserWarning, r"hydra\.experimental\.(initialize|compose)\(\) is no longer experimental"),
    (UserWarning, r"\s*The version_base parameter is not specified"),
    (UserWarning, r"In 'config': Usage of deprecated keyword in package header"),
    (UserWarning, r"\s*'config' is validated against ConfigStore schema with the same name"),
    (UserWarning, r"\s*The strict flag in the compose API is deprecated"),
    (FutureWarning, r"`torch\.cuda\.amp\.autocast\(args\.\.\.\)` is deprecated"),
    (UserWarning, PINNED_MEMORY_WITHOUT_A_GPU),
)


def hide_dependency_warnings() -> None:
    """Where a fairseq tool or the plugin's own command runs: DEPENDENCY_WARNINGS are not shown.
    Each filter matches one message, so fairseq's own warnings and every other still show. They
    come from fairseq's code (its configuration's conversion, its data loader, its training step):
    no option or hook reaches them."""
    if running_fairseq_tool() is not None or running_plugin_command():
        for category, message in DEPENDENCY_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=category)


# fairseq-train's module: the plugin is imported while fairseq-train parses its arguments.
TRAIN = "fairseq_cli.train"
# Set on the wrapper, so that importing the plugin again wraps nothing twice.
BFLOAT16_WRAPPER = "__bahdanau_training_in_bfloat16_here__"


def train_in_bfloat16_on_gpus_and_cpus() -> None:
    """fairseq 0.12's argument parsing turns --bf16 into --tpu (options.parse_args_and_arch), so
    fairseq-train --bf16 fails without torch_xla on every GPU and CPU, although its trainer trains
    in bfloat16 on any device once --tpu is off (fairseq-hydra-train, which parses no arguments,
    shows it: common.bf16=true). No option or hook turns it off between the parsing and the
    training: fairseq-train imports the plugin in the middle of that parsing and converts its
    result right after. So fairseq-train's conversion of its parsed arguments
    (fairseq_cli.train.convert_namespace_to_omegaconf, also when run as ``python -m``) first turns
    --tpu off again for this plugin's architectures, where torch_xla is not installed and --tpu
    was not given; for any other model it returns fairseq's own result."""
    _run_before_the_conversion(TRAIN, BFLOAT16_WRAPPER, _turn_off_tpu_taken_for_bfloat16)


def _turn_off_tpu_taken_for_bfloat16(args) -> None:
    if _bfloat16_taken_for_tpu(args):
        args.tpu = False


def _run_before_the_conversion(module_name: str, marker: str, before) -> None:
    """before(args) run first by the conversion of a fairseq tool's parsed arguments
    (module_name's convert_namespace_to_omegaconf, in each loaded copy), which then returns
    fairseq's own result; the wrapper marked, so that importing the plugin again wraps nothing
    twice."""
    for module in _loaded_copies(module_name):
        convert = module.convert_namespace_to_omegaconf
        if getattr(convert, marker, False):
            continue

        @functools.wraps(convert)
        def wrapper(args, convert=convert):
            before(args)
            return convert(args)

        setattr(wrapper, marker, True)
        module.convert_namespace_to_omegaconf = wrapper


def _one_of_these_architectures(name) -> bool:
    model = ARCH_MODEL_REGISTRY.get(name) if isinstance(name, str) else None
    return model is not None and issubclass(model, RecurrentTranslationModel)


def _bfloat16_taken_for_tpu(args) -> bool:
    """Whether fairseq turned --bf16 into --tpu for one of this plugin's architectures, on a
    machine that has no TPU support and where the user did not ask for --tpu."""
    return (
        _one_of_these_architectures(getattr(args, "arch", None))
        and getattr(args, "bf16", False)
        and getattr(args, "tpu", False)
        and "--tpu" not in sys.argv[1:]
        and importlib.util.find_spec("torch_xla") is None
    )


# Set on the wrapper, so that importing the plugin again wraps nothing twice.
RANKS_WRAPPER = "__bahdanau_refuses_ranks_outside_the_world__"


def refuse_ranks_outside_the_world_in_training() -> None:
    """Where fairseq-train runs, for these models: before fairseq starts the run's processes and
    their rendezvous, a --distributed-rank outside --distributed-world-size, and processes to start
    for GPUs where there is none, are one line (models/training_setup.py): torch waited 30 minutes
    without a word for ranks no one starts, and fairseq, with no GPU to spawn a process for, ended
    having trained nothing. fairseq-train's distributed_utils.call_main starts them right after
    converting the options; it first infers the init method, from torchrun's or Slurm's
    variables, which set the rank and the world too, so the check first does fairseq's own
    inference, which call_main then finds done. No option, task or model hook runs before the
    rendezvous. fairseq-hydra-train imports the plugin only once its processes have started (a
    multirun's later jobs are checked). For any other model, fairseq's own alone."""
    if running_fairseq_tool() not in TRAINING_TOOLS:
        return
    if not getattr(distributed_utils.call_main, RANKS_WRAPPER, False):
        distributed_utils.call_main = _refusing_ranks_outside_the_world(distributed_utils.call_main)


def _refusing_ranks_outside_the_world(call_main):
    @functools.wraps(call_main)
    def wrapper(cfg, main, **kwargs):
        model = cfg.get("model")
        name = getattr(model, "_name", None) or getattr(model, "arch", None)
        distributed = cfg.distributed_training
        if _one_of_these_architectures(name) and distributed.distributed_init_method is None:
            distributed_utils.infer_init_method(distributed)
        if _one_of_these_architectures(name) and distributed.distributed_init_method is not None:
            training_setup.refuse_ranks_outside_the_world(distributed, torch.cuda.device_count())
        return call_main(cfg, main, **kwargs)

    setattr(wrapper, RANKS_WRAPPER, True)
    return wrapper


# Where fairseq's add_defaults is, and the modules that name it as their own: fairseq-hydra-train's
# fills the configuration's defaults in before fairseq-train's main, which imports the plugin, fills
# them in again.
ADD_DEFAULTS = ("fairseq.dataclass.initialize", "fairseq_cli.train", "fairseq_cli.hydra_train")
# Set on the wrapper, so that importing the plugin again wraps nothing twice.
OPTIONS_GIVEN_WRAPPER = "__bahdanau_reads_the_options_as_given__"


def read_the_options_as_given() -> None:
    """fairseq's add_defaults fills every key of a configuration's model block that it lacks with
    its dataclass's default, as fairseq-train's main calls it right after importing the plugin (no
    option or hook runs in between); from then on what the user wrote can no longer be told apart:
    - ``model.max_train_length=null`` over the rnnsearch_50 recipe asks for no length limit; filled
      in, the null written and the limit left out are one None, and the architecture, which fairseq
      applies as it then builds the model, gave both its 50;
    - a legacy optimizer (adadelta) or scheduler reads the keys it knows from its block and never
      the others (``+optimizer.adadelta_rhoo=0.9``, a typo of adadelta_rho, trained with rho 0.9
      unset), and a key the model does not take failed in omegaconf's traceback.
    For these models, add_defaults now first refuses a path the shell left a '~' at the start of
    (refuse_a_home_folder_the_shell_left_unexpanded) and a key of those blocks that nothing takes,
    in one line (models/unknown_options.py), and an --update-freq or a batch size under 1, Adam's
    --adam-betas other than two rates in [0, 1), an --lr-shrink that the fixed schedule never
    applies, a --best-checkpoint-metric read the wrong way round or never computed,
    --eval-bleu-args that the validation's search cannot read, and tokenized BLEU of detokenized
    text, which fairseq never checks (models/training_setup.py), and applies the architecture
    (models/config.py: apply_architecture) to the options as written, then refuses a
    --truncate-source that its length limit undoes, and has every process of a distributed run
    read the checkpoint it resumes (training_setup.read_a_resumed_checkpoint_in_every_process),
    then does fairseq's own;
    for other models, fairseq's own alone. In any process, and in the copies fairseq-train's and
    fairseq-hydra-train's modules hold where loaded: fairseq-hydra-train's matters in a hydra
    multirun, whose later jobs find the plugin loaded, and the function's own module in a program
    that imports fairseq's training after the plugin."""
    for module in [copy for name in ADD_DEFAULTS for copy in _loaded_copies(name)]:
        if not getattr(module.add_defaults, OPTIONS_GIVEN_WRAPPER, False):
            module.add_defaults = _reading_the_options_as_given(module.add_defaults)


def _reading_the_options_as_given(add_defaults):
    @functools.wraps(add_defaults)
    def wrapper(cfg):
        model = cfg.get("model")
        name = model if isinstance(model, str) else getattr(model, "_name", None)
        if _one_of_these_architectures(name) and isinstance(model, (str, DictConfig)):
            refuse_a_home_folder_the_shell_left_unexpanded(cfg)
            unknown_options.check(cfg)
            training_setup.refuse_an_update_freq_under_one(cfg)
            training_setup.refuse_a_batch_size_under_one(cfg)
            training_setup.refuse_patience_without_validation(cfg)
            training_setup.refuse_training_on_a_split_it_validates(cfg)
            training_setup.refuse_a_first_shard_repeated_no_times(cfg)
            training_setup.refuse_a_plateau_schedule_without_validation(cfg)
            training_setup.refuse_a_negative_learning_rate(cfg)
            training_setup.refuse_adam_betas_adam_cannot_take(cfg)
            training_setup.refuse_a_shrink_the_fixed_schedule_never_applies(cfg)
            training_setup.refuse_a_best_checkpoint_metric_it_cannot_read(cfg)
            training_setup.refuse_eval_bleu_args_the_search_cannot_read(cfg)
            training_setup.refuse_tokenized_bleu_of_detokenized_text(cfg)
            with open_dict(cfg):
                if isinstance(model, str):  # model: rnnsearch_50, read as fairseq reads it
                    cfg.model = {"_name": model}
                model = cfg.model
                with open_dict(model):
                    ARCH_CONFIG_REGISTRY[name](model)
                training_setup.read_a_resumed_checkpoint_in_every_process(cfg)
            training_setup.refuse_a_truncation_the_length_limit_undoes(cfg)
        return add_defaults(cfg)

    setattr(wrapper, OPTIONS_GIVEN_WRAPPER, True)
    return wrapper


# fairseq-train's paths, by option: (block, key, whether it holds paths joined by ':', which
# fairseq splits). fairseq reads each as written, so that one that starts with a '~' the shell left
# (--save-dir=~/x: bash expands '~' at the start of a word only) is a folder named '~' in the
# current folder: fairseq made the save dir there (checkpoint_utils.verify_checkpoint_directory)
# and trained into it without a word, and the tensorboard logs likewise; the others were "not
# found" (the log file's a traceback), without saying why.
TRAINING_PATHS = {
    "--save-dir": ("checkpoint", "save_dir", False),
    "--restore-file": ("checkpoint", "restore_file", False),
    "--finetune-from-model": ("checkpoint", "finetune_from_model", False),
    "the data folder": ("task", "data", True),
    "--tensorboard-logdir": ("common", "tensorboard_logdir", False),
    "--log-file": ("common", "log_file", False),
}


def refuse_a_home_folder_the_shell_left_unexpanded(cfg) -> None:
    """Each of TRAINING_PATHS in cfg that starts with a '~' the shell left is one line
    (refuse_homes_left_unexpanded), before fairseq makes the save dir."""
    refuse_homes_left_unexpanded(
        {
            option: (getattr(cfg.get(group), key, None), joined)  # a legacy task: a Namespace
            for option, (group, key, joined) in TRAINING_PATHS.items()
        }
    )


def refuse_homes_left_unexpanded(given: Dict[str, Tuple[Optional[str], bool]]) -> None:
    """Each path given, by option (its value, and whether it holds paths joined as fairseq joins
    them), that starts with a '~' the shell left is one line that gives the path the home folder
    would make (options.home_left_unexpanded); a '~' folder that is there is taken, as the tools
    take it."""
    for option, (value, joined) in given.items():
        if not value:
            continue
        for path in utils.split_paths(str(value)) if joined else [str(value)]:
            unexpanded = home_left_unexpanded(path)
            if unexpanded is not None:
                raise ConfigurationError(f"{option} {unexpanded}")


# fairseq-generate's module: the plugin is imported while fairseq-generate parses its arguments.
GENERATE = "fairseq_cli.generate"
TRANSLATION_PATHS_WRAPPER = "__bahdanau_refuses_homes_left_unexpanded__"
# fairseq-generate's and fairseq-interactive's paths, by option: (argument, whether it holds paths
# joined by ':'). fairseq-generate --results-path=~/x made a folder named '~' in the current folder
# and wrote the translations there, without a word; fairseq-interactive --input=~/x ended in a
# traceback once the model was loaded; the others were "not found", without saying why.
TRANSLATION_PATHS = {
    "--results-path": ("results_path", False),
    "--input": ("input", False),
    "--path": ("path", True),
    "the data folder": ("data", True),
}


def refuse_bad_paths_in_translation() -> None:
    """fairseq-generate's and fairseq-interactive's conversion of their parsed arguments
    (convert_namespace_to_omegaconf of fairseq_cli.generate and fairseq_cli.interactive, also when
    run as ``python -m``), which their main calls first, before it makes --results-path or loads a
    model, first refuses each of TRANSLATION_PATHS that starts with a '~' the shell left
    (refuse_homes_left_unexpanded) and an --input file that is not there, where a checkpoint of
    --path is one of these models' (its saved architecture, read memory-mapped: none is loaded
    yet); for any other model, fairseq's own. No option or hook runs in between: the plugin is
    imported in the middle of the parsing."""
    for module_name in (GENERATE, INTERACTIVE):
        _run_before_the_conversion(module_name, TRANSLATION_PATHS_WRAPPER, _check_translation_paths)


def _check_translation_paths(args) -> None:
    if not _translates_with_these_models(args):
        return
    refuse_homes_left_unexpanded(
        {
            option: (getattr(args, name, None), joined)
            for option, (name, joined) in TRANSLATION_PATHS.items()
        }
    )
    refuse_a_missing_input(getattr(args, "input", None))


def _translates_with_these_models(args) -> bool:
    """Whether a checkpoint of --path was saved by one of these models; one that is not there or
    does not load is fairseq's to report, as it loads it."""
    for path in utils.split_paths(getattr(args, "path", None) or ""):
        try:
            state = saved_state(path)
        except (OSError, RuntimeError, EOFError, pickle.UnpicklingError):
            continue
        saved = (state.get("cfg") or {}).get("model")
        name = saved.get("_name") if isinstance(saved, dict) else None
        if _one_of_these_architectures(name or getattr(state.get("args"), "arch", None)):
            return True
    return False


def refuse_a_missing_input(input: Optional[str]) -> None:
    """fairseq-interactive --input F of a file that is not there (or a folder) ended in a traceback
    of FileNotFoundError once the model was loaded; "-" is standard input."""
    if input not in (None, "-") and not os.path.isfile(input):
        raise MissingPathError(
            f"--input {input} not found (not a file): give the file of sentences to translate, or "
            "leave --input out to read standard input"
        )


def _loaded_copies(module_name: str):
    """The module of that name where it is loaded, and __main__ too when that is the module run as
    ``python -m module_name``: its cli_main then calls the functions of __main__, a copy."""
    main_module = sys.modules["__main__"]
    copies = [sys.modules[module_name]] if module_name in sys.modules else []
    if getattr(getattr(main_module, "__spec__", None), "name", None) == module_name:
        copies.append(main_module)
    return copies


# Set on the wrappers, so that importing the plugin again wraps nothing twice.
SAVE_DIR_WRAPPER = "__bahdanau_the_run_owns_its_save_dir__"
LANGUAGES_WRAPPER = "__bahdanau_records_the_languages_given__"
VALIDATION_WRAPPER = "__bahdanau_validates_every_sentence__"
SOURCE_LENGTH_WRAPPER = "__bahdanau_matches_the_source_length_in_words__"


def own_the_save_dir_in_training() -> None:
    """Where fairseq-train runs, for these models: the run holds its --save-dir, which is checked
    to have room for a checkpoint, and a --restore-file must name a checkpoint file, before it
    resumes or trains, and be of no point before a numbered checkpoint there, once loaded
    (save_dir.py, checkpoint_safety.py); a resume mid-epoch through other batches than the
    checkpoint's is said in a warning (resuming.py), --patience counts on from the checkpoint's
    count, the batches are made as the run it continues made them, and a training already at its
    limit trains nothing; the processes of a distributed run stop in one line where their options,
    data, start or parameters differ (ranks.py); and its checkpoints are written whole, a full
    disk one line (checkpoint_writing.py), those saved mid-epoch with the fingerprint of the
    epoch's batches, all with --patience's count and the provenance of the runs that trained them
    (provenance.py). fairseq-train calls
    checkpoint_utils.load_checkpoint once before training, with the trainer, and save_checkpoint
    at every save: the wrappers do their part there for these models and call fairseq's own, which
    is all they do for any other model. No option, task or hook runs before fairseq-train resumes,
    and none chooses how fairseq writes the checkpoints."""
    if running_fairseq_tool() not in TRAINING_TOOLS:
        return
    if getattr(checkpoint_utils.load_checkpoint, SAVE_DIR_WRAPPER, False):
        return
    checkpoint_utils.load_checkpoint = _holding_the_save_dir(checkpoint_utils.load_checkpoint)
    checkpoint_utils.save_checkpoint = _saving_these_models(checkpoint_utils.save_checkpoint)


def _trains_these_models(trainer) -> bool:
    return isinstance(trainer.get_model(), RecurrentTranslationModel)


def _holding_the_save_dir(load_checkpoint):
    @functools.wraps(load_checkpoint)
    def wrapper(cfg, trainer, **passthrough_args):
        if not _trains_these_models(trainer):
            return load_checkpoint(cfg, trainer, **passthrough_args)
        # the process that saves (rank 0), where the run saves at all
        saves, suffix = trainer.is_data_parallel_master, trainer.checkpoint_suffix
        if saves:
            if not cfg.no_save:
                save_dir.hold(cfg.save_dir)
                save_dir.check_room(cfg.save_dir, trainer.get_model())
            if cfg.restore_file != DEFAULT_RESTORE_FILE:  # the one rank that reads it
                check_restore_file(cfg.restore_file, suffix)
            elif _continues_once(cfg, suffix):  # fairseq reads it as it is, without the suffix
                check_restore_file(cfg.continue_once, "", "--continue-once")
        seeded_per_epoch = trainer.cfg.dataset.update_ordered_indices_seed
        with resuming.batches_made_as_in_the_first_epoch(trainer.task, seeded_per_epoch):
            extra_state, epoch_itr = load_checkpoint(cfg, trainer, **passthrough_args)
        ranks.refuse_processes_that_differ(trainer, epoch_itr)  # every rank, before any update
        resuming.restore_the_patience(extra_state)  # every rank counts it
        provenance.carry_on(trainer, extra_state)  # the runs its checkpoints record
        if cfg.finetune_from_model and _first_launch(cfg, suffix):  # another training begins
            resuming.count_the_training_time_afresh(trainer)
        if done := resuming.train_nothing_where_the_training_is_done(trainer):
            logger.info(done)  # every rank trains nothing
        # where the run starts is known once it is loaded
        again = cfg.reset_dataloader and extra_state is not None  # epoch 1 after the checkpoint
        afresh = extra_state is None  # nothing to resume: fairseq trains from scratch
        elsewhere = _starts_from_another_checkpoint(cfg, suffix)
        if saves and not cfg.no_save and (again or afresh or elsewhere):
            why = save_dir.STARTING_AGAIN if again else ""
            why = save_dir.STARTING_FROM_SCRATCH if afresh else why
            save_dir.check_no_later_checkpoints(
                cfg.save_dir, suffix, epoch_itr.epoch, trainer.get_num_updates(), why
            )
        if saves:
            checkpoint = _resumed_checkpoint(cfg, suffix)
            if other := resuming.other_batches_than_saved(checkpoint, extra_state, epoch_itr):
                logger.warning(other)
            if kept := resuming.keep_the_best_score(cfg, suffix, extra_state):
                logger.info(kept)
        return extra_state, epoch_itr

    setattr(wrapper, SAVE_DIR_WRAPPER, True)
    return wrapper


def _first_launch(cfg, suffix: str) -> bool:
    """Whether --save-dir has no checkpoint_last.pt yet: fairseq reads --continue-once and
    --finetune-from-model then only."""
    return not os.path.exists(os.path.join(cfg.save_dir, f"checkpoint_last{suffix}.pt"))


def _continues_once(cfg, suffix: str) -> bool:
    return getattr(cfg, "continue_once", None) is not None and _first_launch(cfg, suffix)


def _starts_from_another_checkpoint(cfg, suffix: str) -> bool:
    """Whether fairseq-train starts from a checkpoint other than its --save-dir's
    checkpoint_last.pt: --restore-file, or --finetune-from-model or --continue-once where there is
    no checkpoint_last.pt. Its own, older than a numbered checkpoint beside it where a run was
    stopped while copying a save to it, continues the training that wrote them."""
    if cfg.restore_file != DEFAULT_RESTORE_FILE:
        return True
    given = cfg.finetune_from_model or getattr(cfg, "continue_once", None)
    return bool(given) and _first_launch(cfg, suffix)


def _resumed_checkpoint(cfg, suffix: str) -> str:
    """The checkpoint whose position in its epoch fairseq-train resumed from, as its
    load_checkpoint chooses it: --restore-file, else --continue-once at the first launch, else
    --save-dir's checkpoint_last.pt (--finetune-from-model starts at no position)."""
    if cfg.restore_file != DEFAULT_RESTORE_FILE:
        return restore_file_path(cfg.restore_file, suffix)
    if _continues_once(cfg, suffix):
        return cfg.continue_once
    return os.path.join(cfg.save_dir, f"checkpoint_last{suffix}.pt")


def _saving_these_models(save_checkpoint):
    # fairseq's save_checkpoint keeps the best loss as an attribute of the function that its
    # module names save_checkpoint, this wrapper from now on, as fairseq-train reads it too.
    @functools.wraps(save_checkpoint)
    def wrapper(cfg, trainer, epoch_itr, val_loss):
        if not _trains_these_models(trainer):
            return save_checkpoint(cfg, trainer, epoch_itr, val_loss)
        # every file written whole; the iterator's state, mid-epoch, with its batches' fingerprint;
        # the provenance of the runs that trained it
        with checkpoints_written_whole():
            recording = resuming.RecordingTheEpochsBatches(epoch_itr)
            trainer = provenance.RecordingProvenance(trainer)
            return save_checkpoint(cfg, trainer, recording, val_loss)

    setattr(wrapper, SAVE_DIR_WRAPPER, True)
    return wrapper


def validate_every_sentence_in_training() -> None:
    """Where fairseq-train runs, for these models: validation batches every sentence of a split.
    fairseq 0.12 leaves out a last batch smaller than --required-batch-size-multiple (8 by
    default; fairseq issue #5036), so the validation loss, and with it checkpoint_best.pt, would
    miss up to 7 sentences of each split (its longest: fairseq batches them sorted by length),
    without a word. fairseq's Trainer reads the option from its configuration for its training and
    validation batches alike; no option or hook sets it for validation alone. Training keeps
    fairseq's batches."""
    if running_fairseq_tool() not in TRAINING_TOOLS:
        return
    from fairseq.trainer import Trainer  # loaded by fairseq-train already

    if getattr(Trainer.get_valid_iterator, VALIDATION_WRAPPER, False):
        return
    Trainer.get_valid_iterator = _batching_every_sentence(Trainer.get_valid_iterator)


def _batching_every_sentence(get_valid_iterator):
    @functools.wraps(get_valid_iterator)
    def wrapper(trainer, *args, **kwargs):
        if not _trains_these_models(trainer):
            return get_valid_iterator(trainer, *args, **kwargs)
        dataset = trainer.cfg.dataset
        multiple, dataset.required_batch_size_multiple = dataset.required_batch_size_multiple, 1
        try:
            return get_valid_iterator(trainer, *args, **kwargs)
        finally:
            dataset.required_batch_size_multiple = multiple

    setattr(wrapper, VALIDATION_WRAPPER, True)
    return wrapper


def remember_the_languages_given() -> None:
    """fairseq's translation task, where a fairseq tool sets it up, records on itself the
    languages the command gave, before it infers a pair for the one left out and overwrites both
    (models/language_pair.py): these models check them when they are built, in training and in
    translation. TranslationTask.setup_task is where fairseq infers them, from the configuration
    it then changes in place, so nothing after it can know what the command said; no option or
    hook runs before it. Tasks set up for other models get the record and nothing else."""
    if running_fairseq_tool() is None:
        return
    setup_task = TranslationTask.__dict__["setup_task"].__func__
    if getattr(setup_task, LANGUAGES_WRAPPER, False):
        return
    TranslationTask.setup_task = classmethod(_recording_the_languages_given(setup_task))


def _recording_the_languages_given(setup_task):
    @functools.wraps(setup_task)
    def wrapper(cls, cfg, **kwargs):
        given = (cfg.source_lang, cfg.target_lang)
        task = setup_task(cls, cfg, **kwargs)
        setattr(task, LANGUAGES_GIVEN, given)
        return task

    setattr(wrapper, LANGUAGES_WRAPPER, True)
    return wrapper


def match_the_source_length_in_words() -> None:
    """fairseq's --match-source-len ("generations should match the source length") gave these
    models' translations one word more than their sources had: the search fairseq's task builds for
    the option (LengthConstrainedBeamSearch, its lengths hard-coded there) ends a translation at
    the source's length as the translation task batches it, the source's end of sentence counted,
    so a source of 6 words was translated in 7, in fairseq-generate, fairseq-interactive and the
    hub alike. For these models, that search now ends each translation after as many tokens as
    its source has words; for other models, fairseq's own. In any process: the hub builds its
    generator with the task too. No option reaches the search's lengths, and the task builds the
    search inside build_generator, after every hook the models have (prepare_for_inference_)."""
    if not getattr(FairseqTask.build_generator, SOURCE_LENGTH_WRAPPER, False):
        FairseqTask.build_generator = _matching_the_source_length_in_words(
            FairseqTask.build_generator
        )


def _matching_the_source_length_in_words(build_generator):
    @functools.wraps(build_generator)
    def wrapper(task, models, *args, **kwargs):
        generator = build_generator(task, models, *args, **kwargs)
        search = getattr(generator, "search", None)  # fairseq-generate's scorer has none
        these_models = all(isinstance(model, RecurrentTranslationModel) for model in models)
        if isinstance(search, LengthConstrainedBeamSearch) and these_models:
            # fairseq's lengths are 1 x the source's tokens + 0: its end of sentence not counted
            search.min_len_b = search.max_len_b = -1
        return generator

    setattr(wrapper, SOURCE_LENGTH_WRAPPER, True)
    return wrapper


CHANGES = (
    # os.environ, in any process: ONEDNN_PRIMITIVE_CACHE_CAPACITY=16 and LRU_CACHE_CAPACITY=1
    # unless set: torch's defaults (1,024 kernels each) cost memory for no speed
    # (ONEDNN_CACHE_SIZES says why).
    # They must be set before oneDNN starts, so at import: no option or hook comes early enough.
    limit_onednn_caches,
    # os.environ, in any process: an empty TORCHINDUCTOR_CACHE_DIR removed, which torch's compiler
    # would read as the working folder and fill with its cache. torch reads it as the models' step
    # first compiles: no option or hook is read before.
    read_an_empty_torch_cache_folder_as_unset,
    # sys.excepthook, where a fairseq tool runs: a command that ends with an error the plugin
    # explains (errors.py) prints one line instead of a traceback; and hydra's
    # JobReturn.return_value there, which raises a failed job's error into hydra's handler
    # (fairseq-hydra-train), for the same errors. fairseq has no hook for how its commands print
    # errors.
    print_fairseq_tools_errors_as_one_line,
    # atexit, where a fairseq tool or the plugin's own command runs: fairseq's read-ahead threads
    # (its BackgroundConsumer) stop after the batch each is making before Python ends them, which
    # aborted the command where one was in torch's code. fairseq has no call to stop them.
    stop_reading_ahead_as_commands_end,
    # torch.serialization.add_safe_globals([argparse.Namespace] and --eval-bleu's numpy arrays),
    # in any process: fairseq's own loading of a checkpoint (its tools, the hub) calls torch.load.
    allow_fairseq_checkpoint_types,
    # fairseq.checkpoint_utils.torch (torch, its load always weights-only), where a fairseq tool or
    # the plugin's own command runs: fairseq calls torch.load without weights_only, so the
    # environment could turn safe loading off.
    load_checkpoints_weights_only_in_commands,
    # sys.stdin's decoding, where fairseq-interactive runs: utf-8-sig, errors="replace".
    decode_standard_input_leniently,
    # fairseq_cli.interactive.buffered_read, where fairseq-interactive runs: for these models, a
    # file given with --input is read as standard input is (lines at \n only, utf-8-sig,
    # errors="replace"); for other models, fairseq's own.
    read_an_input_file_as_standard_input,
    # sys.stdout's encoding, where fairseq-interactive or fairseq-generate runs: UTF-8.
    write_standard_output_in_utf8,
    # glibc's mmap and trim thresholds (mallopt), where fairseq-train runs.
    keep_freed_memory_for_reuse_in_training,
    # fairseq_cli.train.convert_namespace_to_omegaconf, where fairseq-train's module is loaded:
    # --bf16 is not taken for --tpu for these models. The function runs between fairseq-train's
    # parsing and its training, for every model, and returns fairseq's own result for others.
    train_in_bfloat16_on_gpus_and_cpus,
    # fairseq.distributed.utils.call_main, where fairseq-train runs: for these models, a
    # --distributed-rank outside --distributed-world-size, or processes to spawn for GPUs where
    # there is none, is one line before the rendezvous (torch waited 30 minutes for those ranks;
    # fairseq spawned no process and trained nothing); for other models, fairseq's own.
    refuse_ranks_outside_the_world_in_training,
    # fairseq.dataclass.initialize.add_defaults, in any process, and the copies fairseq_cli.train
    # and fairseq_cli.hydra_train hold, where loaded: for these models, before fairseq fills in its
    # defaults, a path that starts with a '~' the shell left (--save-dir=~/x) and a key of the
    # model's, optimizer's or scheduler's block that nothing takes are refused, and the
    # architecture fills the options not given, so that a null given (no length limit) stays. For
    # other models, fairseq's own.
    read_the_options_as_given,
    # convert_namespace_to_omegaconf of fairseq_cli.generate and fairseq_cli.interactive, where
    # loaded: a --results-path, --input, --path or data folder that starts with a '~' the shell
    # left (--results-path=~/x), and an --input file that is not there, are refused before fairseq
    # makes that folder or loads a model, where a checkpoint of --path is one of these models'
    # (read memory-mapped: none is loaded yet); the function runs between the tool's parsing and
    # its main's first step. For other models, fairseq's own.
    refuse_bad_paths_in_translation,
    # the root logger's level, where a fairseq tool or the plugin's own command runs: LOGLEVEL
    # (INFO unless set), as fairseq's tools set it; importing fairseq set it to DEBUG.
    log_at_the_level_of_fairseqs_tools,
    # warnings.filters, where a fairseq tool or the plugin's own command runs: hydra's and torch's
    # warnings about how fairseq calls them (DEPENDENCY_WARNINGS), one filter per message.
    hide_dependency_warnings,
    # fairseq.checkpoint_utils.load_checkpoint and save_checkpoint, where fairseq-train runs: for
    # these models, the run holds its --save-dir and checks its room before training (and, from a
    # --restore-file, that no checkpoint there is of a later point), writes every checkpoint
    # whole, records the batches of the epoch a checkpoint stops in and warns of a resume through
    # others; for other models, fairseq's own.
    own_the_save_dir_in_training,
    # fairseq.trainer.Trainer.get_valid_iterator, where fairseq-train runs: for these models,
    # validation batches with --required-batch-size-multiple 1, so that it reads every sentence
    # (fairseq 0.12 leaves out a last batch under its multiple); for other models, fairseq's own.
    validate_every_sentence_in_training,
    # fairseq.tasks.translation.TranslationTask.setup_task, where a fairseq tool runs: the task
    # records the languages the command gave, which fairseq overwrites where one is left out;
    # these models check them (models/language_pair.py). For other models, a record no one reads.
    remember_the_languages_given,
    # fairseq.tasks.FairseqTask.build_generator, in any process: for these models,
    # --match-source-len gives each translation as many words as its source, not one more
    # (fairseq counted the source's end of sentence); for other models, fairseq's own.
    match_the_source_length_in_words,
)


def apply_all() -> None:
    for change in CHANGES:
        change()
