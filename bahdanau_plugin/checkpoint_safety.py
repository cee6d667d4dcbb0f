"""Safe, explained checkpoint loading.

Since torch 2.6, ``torch.load`` defaults to ``weights_only=True``: only tensors, containers and
primitive types may be unpickled. fairseq 0.12 checkpoints also hold ``argparse.Namespace``
objects (the configuration of legacy-argument components, such as the ``adadelta`` optimizer or
the ``args`` of older checkpoints), so fairseq-train --restore-file, fairseq-generate and
fairseq-interactive would refuse them; so do the checkpoints of a training with --eval-bleu,
whose metrics hold numpy arrays. Allow-listing exactly those types keeps safe loading on: a
pickle that calls any other global (``os.system``, say) is still refused by torch
(fairseq_patches.allow_fairseq_checkpoint_types). torch's default gives way to an environment
variable, TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD, wherever the caller does not pass ``weights_only``, as
fairseq does not. Where the plugin loads (its hub's ``from_pretrained``, its commands, fairseq's
tools run with ``--user-dir``), fairseq's checkpoint loading is given a torch whose ``load`` always
passes it (``TorchLoadingWeightsOnly``, ``fairseqs_loading_weights_only``), and the plugin's own
loads pass it, so that a pickle that would run code is refused whatever the environment says.
A program that only imports the plugin keeps fairseq's loading as it is for other models.

fairseq's own errors for a checkpoint it cannot use are torch internals ("PytorchStreamReader
failed reading zip archive"), a page of unpickler advice, or two chained tracebacks ending in
"please ensure that the architectures match"; a command that ends with one prints a line that
names the file and says what to do instead (``checkpoint_problem``, ``unresumable_checkpoint``:
errors.py's explanations; from_pretrained raises it as a CheckpointError). A truncated checkpoint
that fairseq-train would resume from is named with the newest intact one of its folder.

A checkpoint used with a data-bin whose dictionaries are not those it was trained with is refused
by the models' ``load_state_dict`` (fingerprints.py), in a line that names both
(``other_dictionary``): the checkpoint and the data-bin that fairseq is loading, read from the
frames of its loading functions, as ``checkpoint_problem`` reads them from a traceback. Where one
dictionary serves both languages, a checkpoint of the reverse direction passes that check, and is
refused by the direction it was trained for (``check_direction``).
"""

import argparse
import contextlib
import dataclasses
import inspect
import os
import re
import reprlib
import sys
import traceback
import types
import zipfile
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import torch
from fairseq import checkpoint_utils, utils
from fairseq.data import data_utils
from omegaconf import DictConfig, OmegaConf

from . import errors, fingerprints


def _numpy_array_globals() -> tuple:
    """What a numpy array of numbers is pickled with: the function that rebuilds it (numpy.core's
    or numpy._core's, by numpy's version), its class, np.dtype and the class of each number
    type's dtype (integers, or floats where distributed workers summed the counts)."""
    rebuild, (array_class, _, _) = np.zeros(1).__reduce__()[:2]
    codes = np.typecodes["AllInteger"] + np.typecodes["AllFloat"]
    return (rebuild, array_class, np.dtype, *{type(np.dtype(code)) for code in codes})


# argparse.Namespace: the configuration of fairseq's legacy-argument components. numpy arrays: the
# BLEU n-gram counts that fairseq's translation task logs under --eval-bleu, which the trainer's
# metrics keep in every checkpoint of such a run (extra_state["metrics"]). Neither runs code.
FAIRSEQ_CHECKPOINT_TYPES = (argparse.Namespace, *_numpy_array_globals())
UNSAFE_LOADING = "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"
DEFAULT_RESTORE_FILE = "checkpoint_last.pt"  # fairseq's: --save-dir's, where there is one


class TorchLoadingWeightsOnly(types.ModuleType):
    """torch as fairseq's checkpoint_utils calls it: itself, but for a load() that always passes
    weights_only=True, so that torch never lets the environment turn safe loading off."""

    def __init__(self):
        super().__init__(torch.__name__, torch.__doc__)

    def __getattr__(self, name):
        return getattr(torch, name)

    @staticmethod
    def load(*args, **kwargs):
        return torch.load(*args, **{**kwargs, "weights_only": True})


@contextlib.contextmanager
def fairseqs_loading_weights_only():
    """fairseq's checkpoint loading through ``TorchLoadingWeightsOnly`` while the block runs."""
    previous = checkpoint_utils.torch
    checkpoint_utils.torch = TorchLoadingWeightsOnly()
    try:
        yield
    finally:
        checkpoint_utils.torch = previous


INCOMPLETE = (
    "the file is incomplete or not a torch checkpoint (was it truncated while copying or saving?)"
)


def _incomplete(path, error: Exception) -> bool:
    # torch has saved checkpoints as zip archives since 1.6; a cut one loses its directory.
    return not isinstance(error, FileNotFoundError) and not zipfile.is_zipfile(path)


def explain_load_error(path, error: Exception):
    """One line for a checkpoint torch could not load, or None for errors of another kind."""
    if os.path.isdir(path):
        return (
            f"{path} is a folder, not a checkpoint: give a checkpoint file, such as "
            f"{_example(path)}"
        )
    refused = re.search(
        r"unsupported (?:global: )?GLOBAL ([\w.]+)", str(error), flags=re.IGNORECASE
    )
    if refused:
        ignored = (
            f" ({UNSAFE_LOADING} does not change that)" if os.environ.get(UNSAFE_LOADING) else ""
        )
        return (
            f"refused to load {path}: its pickle calls {refused.group(1)}, which no fairseq "
            f"checkpoint holds, so it could run code{ignored}; load only checkpoints you trust"
        )
    if _incomplete(path, error):
        return f"cannot read checkpoint {path}: {INCOMPLETE}; use an intact copy"
    return None


def not_a_fairseq_checkpoint(path, state) -> Optional[str]:
    """One line for a torch file that loaded but is no checkpoint of fairseq's (a model's
    state_dict saved alone): fairseq looked in it for what fairseq-train saves beside the
    parameters and failed in a traceback (KeyError: 'best_loss'). None for a checkpoint of
    fairseq's, which failed for another reason."""
    if isinstance(state, dict) and "model" in state and ("cfg" in state or "args" in state):
        return None
    held = (
        f"the keys {reprlib.repr(list(state))}"
        if isinstance(state, dict)
        else f"a {type(state).__name__}"
    )
    return (
        f"cannot load {path}: it is a torch file but not a fairseq checkpoint: it holds {held}, "
        "where fairseq-train saves the parameters under 'model' beside the configuration they "
        "were built with under 'cfg' (a state_dict saved alone cannot be loaded); give a "
        "checkpoint that fairseq-train or bahdanau-average-checkpoints wrote, such as "
        "SAVE_DIR/checkpoint_best.pt"
    )


def newest_intact_checkpoint(folder, other_than) -> Optional[str]:
    """The checkpoint of the folder written last that is whole (a zip archive with its
    directory), other than the one named; None where there is none."""
    intact = [
        path
        for path in (os.path.join(folder, name) for name in os.listdir(folder))
        if path.endswith(".pt")
        and os.path.abspath(path) != os.path.abspath(other_than)
        and zipfile.is_zipfile(path)
    ]
    return max(intact, key=os.path.getmtime, default=None)


def unresumable_incomplete_checkpoint(path) -> str:
    """fairseq-train's checkpoint to resume from is cut short: the newest intact one beside it.
    In place of checkpoint_last.pt, not as --restore-file: fairseq reads --restore-file at every
    launch, so that each rerun of the command would go back to it."""
    newest = newest_intact_checkpoint(os.path.dirname(path) or ".", path)
    if newest is None:
        fix = "no other checkpoint beside it is intact: move it aside to train afresh"
    elif os.path.basename(path).startswith("checkpoint_last"):
        fix = (
            f"the newest intact checkpoint beside it is {newest}: put that in its place "
            f"(mv {path} {path}.incomplete; cp {newest} {path}), then run the same command"
        )
    else:
        fix = f"the newest intact checkpoint beside it is {newest}: give --restore-file {newest}"
    return f"cannot resume from {path}: {INCOMPLETE}; {fix}"


def restore_file_path(restore_file: str, suffix: str) -> str:
    """The file fairseq-train reads for a --restore-file: its checkpoint_suffix (a model-parallel
    rank's) before .pt."""
    return restore_file.replace(".pt", suffix + ".pt") if suffix else restore_file


def check_restore_file(restore_file: str, suffix: str, option: str = "--restore-file") -> None:
    """A --restore-file (or --continue-once) that names no checkpoint file: fairseq would log that
    it found none and train from scratch, saving over the --save-dir's checkpoints (or, from
    --continue-once, starting the training that later launches resume)."""
    path = restore_file_path(restore_file, suffix)
    if not os.path.isfile(path):
        what = "is a folder" if os.path.isdir(path) else "not found"
        raise errors.CheckpointError(
            f"{option} {path} {what}: give a checkpoint file, such as "
            f"{_example(path) if os.path.isdir(path) else 'SAVE_DIR/checkpoint_last.pt'} (without "
            "the option, fairseq-train resumes from --save-dir's checkpoint_last.pt)"
        )


def _example(folder) -> str:
    """A checkpoint of the folder, to name in a message: the best one when there."""
    found = sorted(name for name in os.listdir(folder) if name.endswith(".pt"))
    name = "checkpoint_best.pt" if "checkpoint_best.pt" in found or not found else found[0]
    return os.path.join(folder, name)


def checkpoint_problem(error: BaseException) -> Optional[str]:
    """One line for an error raised while fairseq was loading a checkpoint that is missing, a
    folder, unreadable or refused; the path is the failed call's argument, read from the error's
    traceback. None for errors of any other kind."""
    if not isinstance(error, Exception):
        return None
    ensemble, reading, resuming = (
        checkpoint_utils.load_model_ensemble_and_task.__code__,
        checkpoint_utils.load_checkpoint_to_cpu.__code__,
        trainers_loading(),
    )
    frames = [frame for frame, _ in traceback.walk_tb(error.__traceback__)]
    for frame in frames:
        if frame.f_code is reading:
            path = frame.f_locals["path"]
            resumed = any(outer.f_code is resuming for outer in frames)
            if resumed and os.path.isfile(path) and _incomplete(path, error):
                return unresumable_incomplete_checkpoint(path)
            if "state" in frame.f_locals:  # torch read the file: fairseq failed on what it holds
                return not_a_fairseq_checkpoint(path, frame.f_locals["state"])
            return explain_load_error(path, error)
        if frame.f_code is ensemble and str(error).startswith("Model file not found"):
            missing = frame.f_locals["filename"]
            whole = _file_split_at_colons(frame.f_locals["filenames"], missing)
            if whole is not None:
                return (
                    f"checkpoint {missing} not found: fairseq reads ':' in --path as the "
                    f"separator of an ensemble's checkpoints, and {whole} has ':' in its name: "
                    "rename it, or link it under a name without ':'"
                )
            members = _an_ensembles_checkpoints(missing)
            if members is not None:
                return (
                    f"checkpoint {missing} not found: fairseq-validate reads --path whole, as "
                    f"one checkpoint, and {' and '.join(members)} are an ensemble's, which only "
                    "fairseq-generate and fairseq-interactive load: validate each on its own"
                )
            return (
                f"checkpoint {missing} not found: give the path of a checkpoint file "
                "(fairseq-train's --save-dir holds checkpoint_best.pt and checkpoint_last.pt)"
            )
    return None


def _an_ensembles_checkpoints(path: str) -> Optional[List[str]]:
    """The checkpoints path names as an ensemble's (A.pt:B.pt, each a file), where a tool read it
    as one path (fairseq-validate: fairseq's other tools split it at ':'); None for a path that
    names no such files."""
    members = path.split(":")
    if len(members) > 1 and all(os.path.isfile(member) for member in members):
        return members
    return None


def _file_split_at_colons(filenames: List[str], missing: str) -> Optional[str]:
    """The file that missing and its neighbours in fairseq's split of --path name when joined
    again with ':', if there is one. The hub joined its model folder onto each part: a part after
    the first is also tried relative to that folder."""
    at = filenames.index(missing)
    for start in range(at + 1):
        folder = os.path.dirname(filenames[start])
        for end in range(max(at + 1, start + 2), len(filenames) + 1):
            parts = filenames[start:end]
            for joined in (parts, parts[:1] + [os.path.relpath(p, folder) for p in parts[1:]]):
                if os.path.isfile(":".join(joined)):
                    return ":".join(joined)
    return None


def unresumable_checkpoint(error: BaseException) -> Optional[str]:
    """One line for fairseq-train's "Cannot load model parameters from checkpoint F; please ensure
    that the architectures match": F (the --save-dir's checkpoint_last.pt, or --restore-file) is
    of another architecture or sizes, read from the checkpoint and the run that the trainer's
    load_checkpoint held. None for errors of any other kind."""
    loading = trainers_loading()
    if loading is None or not str(error).startswith("Cannot load model parameters"):
        return None
    given = errors.locals_where(error, loading)
    if given is None:
        return None
    resuming = errors.locals_where(error, fairseqs_load_checkpoint())
    option = option_naming(resuming["cfg"] if resuming else None, given["filename"])
    return _why_not_resumable(
        given["filename"],
        option,
        given["state"]["cfg"]["model"],
        given["self"].cfg.model,
        error.__context__,
    )


def trainers_loading() -> Optional[types.CodeType]:
    """The code of fairseq's Trainer.load_checkpoint, where fairseq-train resumes; None where
    fairseq's trainer is not imported."""
    trainer = sys.modules.get("fairseq.trainer")
    return trainer.Trainer.load_checkpoint.__code__ if trainer is not None else None


def fairseqs_load_checkpoint() -> types.CodeType:
    """The code of fairseq's checkpoint_utils.load_checkpoint, where fairseq-train resumes: its
    own, under the wrapper that holds the --save-dir (fairseq_patches.py)."""
    return inspect.unwrap(checkpoint_utils.load_checkpoint).__code__


def option_naming(cfg, checkpoint: str) -> Optional[str]:
    """The option of fairseq-train (its checkpoint configuration, cfg) that named the checkpoint
    it loads: --finetune-from-model, --continue-once or --restore-file; None for --save-dir's
    checkpoint_last.pt, which fairseq loads where none does."""
    if cfg is None:
        return None
    if cfg.finetune_from_model and checkpoint == cfg.finetune_from_model:
        return "--finetune-from-model"
    if getattr(cfg, "continue_once", None) and checkpoint == cfg.continue_once:
        return "--continue-once"
    if cfg.restore_file != DEFAULT_RESTORE_FILE:
        return "--restore-file"
    return None


def started_from(option: Optional[str], checkpoint: str) -> str:
    """fairseq-train's checkpoint as the lines name it, with the option that gave it."""
    return f"{option} {checkpoint}" if option else checkpoint


def train_otherwise(option: Optional[str], fitting: str, model: Optional[str] = None) -> str:
    """What a run gives to train rather than from the checkpoint it was given: a new --save-dir
    rather than one whose checkpoint_last.pt it resumes (or a --restore-file of model); another
    checkpoint (fitting, as "of rnnsearch_50"), or none, rather than one that an option names at
    every launch (--restore-file) or the first (the others), whatever the --save-dir."""
    if option is None:
        restore = f" (or --restore-file with a checkpoint of {model})" if model else ""
        return f"give this run a new --save-dir{restore}"
    return f"give {option} a checkpoint {fitting}, or leave it out to start without one"


class Loading(NamedTuple):
    """A checkpoint that fairseq is loading, the task whose data-bin it is loaded with, whether
    fairseq-train resumes from it, and then the model's configuration the checkpoint holds and
    the option that named it (option_naming), and what it holds."""

    checkpoint: Optional[str]
    task: object
    resuming: bool
    trained: object = None
    option: Optional[str] = None
    state: Optional[dict] = None  # all that the checkpoint holds, as fairseq loaded it
    overrides: Optional[dict] = None  # what fairseq wrote over its configuration as it loaded it
    others: Tuple[str, ...] = ()  # the ensemble's other checkpoints (--path A.pt:B.pt)


def being_loaded() -> Loading:
    """The checkpoint that fairseq's loading is at: read from the frames of
    load_model_ensemble_and_task (fairseq-generate, fairseq-interactive, the hub, the plugin's
    tools) or of the trainer's load_checkpoint (fairseq-train resuming) that called this;
    nothing known where neither did (a program calling load_state_dict itself)."""
    ensemble, resuming = checkpoint_utils.load_model_ensemble_and_task.__code__, trainers_loading()
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code is ensemble:
            given = frame.f_locals
            checkpoint, task, state = given.get("filename"), given.get("task"), given.get("state")
            ensemble, this = given.get("filenames") or (), given.get("orig_filename", checkpoint)
            others = tuple(other for other in ensemble if other != this)
            overrides = given.get("arg_overrides")
            return Loading(checkpoint, task, False, state=state, overrides=overrides, others=others)
        if frame.f_code is resuming:
            state = frame.f_locals.get("state")
            trained = ((state or {}).get("cfg") or {}).get("model")
            checkpoint = frame.f_locals.get("filename")
            option = option_naming(_resuming_configuration(frame), checkpoint)
            task = frame.f_locals["self"].task
            return Loading(checkpoint, task, True, trained, option, state)
        frame = frame.f_back
    return Loading(None, None, False)


def _resuming_configuration(frame):
    """The checkpoint configuration of fairseq's load_checkpoint, read from the frames that called
    frame; None where it was not called so (a program calling the trainer's own)."""
    code = fairseqs_load_checkpoint()
    while frame is not None and frame.f_code is not code:
        frame = frame.f_back
    return frame.f_locals.get("cfg") if frame is not None else None


def _dictionary_file(task, side: str) -> Optional[str]:
    """The data-bin's dictionary file of a side, as fairseq's translation task reads it."""
    cfg = getattr(task, "cfg", None)
    data, language = getattr(cfg, "data", None), getattr(cfg, f"{side}_lang", None)
    if not data or not language:
        return None
    return os.path.join(utils.split_paths(data)[0], f"dict.{language}.txt")


def other_dictionary(side: str, trained_symbols: int, trained, dictionary) -> str:
    """The line for a checkpoint whose side's dictionary was another than the one it is being
    loaded with: the checkpoint, the data-bin's file, and each dictionary's size and fingerprint
    (fingerprints.py)."""
    loading = being_loaded()
    checkpoint = loading.checkpoint or "the checkpoint"
    file = _dictionary_file(loading.task, side)
    data = os.path.dirname(file) if file else "this data-bin"
    difference = (
        f"trained with other dictionaries than {data}: its {side} dictionary "
        f"had {trained_symbols} symbols (fingerprint {fingerprints.short(trained)}), "
        f"{file or f'the {side} dictionary here'} has {len(dictionary)} (fingerprint "
        f"{fingerprints.short(fingerprints.of_dictionary(dictionary))})"
    )
    if loading.option == "--finetune-from-model":  # to fine-tune is to train on other data
        return (
            f"cannot start from --finetune-from-model {checkpoint}: it was {difference}; binarize "
            "this run's data with its dictionaries (fairseq-preprocess --srcdict and --tgtdict, "
            "the dict.*.txt of the data-bin it was trained with), or leave the option out to "
            "train from scratch"
        )
    if loading.resuming:
        return (
            f"cannot resume from {started_from(loading.option, checkpoint)}: it was "
            f"{difference}; continue it with the data-bin it was trained with, or "
            f"{train_otherwise(loading.option, f'trained on {data}')}"
        )
    reverse = reverse_direction(loading.task, side, trained)
    if reverse is not None:
        source, target = reverse
        own = source if side == "source" else target
        return (
            f"{checkpoint} translates {source}->{target}, the reverse of this run's "
            f"{target}->{source} (its {side} dictionary is {data}/dict.{own}.txt): give "
            f"--source-lang {source} --target-lang {target}, or a model trained for "
            f"{target}->{source}"
        )
    return (
        f"{checkpoint} was {difference}, so it would translate other words than it learned; give "
        f"the data-bin it was trained with (its dict.*.txt), or a checkpoint trained on {data}"
    )


def reverse_direction(task, side: str, trained) -> Optional[Tuple[str, str]]:
    """The (source, target) languages of a checkpoint whose side's dictionary is the other side's
    of the data-bin it is being loaded with: a model of the other direction (fr->en, loaded for
    en->fr, the languages fairseq infers from a data-bin binarized en-fr), which these
    dictionaries serve once the languages are given the other way round. None otherwise."""
    cfg, other = getattr(task, "cfg", None), "target" if side == "source" else "source"
    dictionary = getattr(task, f"{other}_dictionary", None)
    if dictionary is None or trained is None:
        return None
    languages = getattr(cfg, "target_lang", None), getattr(cfg, "source_lang", None)
    if None in languages or fingerprints.differs(trained, fingerprints.of_dictionary(dictionary)):
        return None
    return languages


def _task_option(state: dict, name: str):
    """An option of the task a checkpoint was trained for (its --source-lang, say), None where it
    records none."""
    if state.get("cfg") is None:  # a checkpoint from before hydra: its argparse.Namespace only
        return getattr(state.get("args"), name, None)
    task = state["cfg"].get("task") or {}
    return task.get(name) if isinstance(task, dict) else getattr(task, name, None)


def trained_direction(state: dict) -> Optional[Tuple[str, str]]:
    """The (source, target) languages a checkpoint translates: those its training was given, else
    those fairseq inferred from the file names of its data-bin (infer_language_pair), read again
    where that data-bin is still there; None where neither tells."""
    given = (_task_option(state, "source_lang"), _task_option(state, "target_lang"))
    if None not in given:
        return given
    data = _task_option(state, "data")
    if not data or not os.path.isdir(utils.split_paths(data)[0]):
        return None
    inferred = tuple(data_utils.infer_language_pair(utils.split_paths(data)[0]))
    return None if None in inferred else inferred


def as_trained(loading: Loading) -> dict:
    """What the checkpoint holds, its languages as trained: the hub's from_pretrained(source_lang=,
    target_lang=) has fairseq write them over the checkpoint's own as it loads it, and then only
    the file still tells (read again memory-mapped: its weights stay on disk)."""
    if not {"source_lang", "target_lang"} & set(loading.overrides or {}):
        return loading.state
    return saved_state(loading.checkpoint)


def saved_state(path: str) -> dict:
    """What a checkpoint file holds as saved, read memory-mapped (its weights stay on disk), or
    whole where torch cannot map it (a file saved in its format before 1.6)."""
    try:
        return torch.load(path, map_location="cpu", mmap=True, weights_only=True)
    except RuntimeError:
        return torch.load(path, map_location="cpu", weights_only=True)


def check_direction() -> None:
    """A CheckpointError where the checkpoint being loaded (being_loaded) was trained for the
    reverse of the direction that the task it is loaded for takes: where one dictionary serves both
    languages (joined, or joint BPE), the dictionaries' fingerprints agree, and an en->fr model
    would translate, or go on training on, fr->en pairs. --finetune-from-model, which starts a
    training of this run's own from the parameters, is left to choose."""
    loading = being_loaded()
    if loading.state is None or loading.task is None or loading.option == "--finetune-from-model":
        return
    trained = trained_direction(as_trained(loading))
    cfg = getattr(loading.task, "cfg", None)
    run = (getattr(cfg, "source_lang", None), getattr(cfg, "target_lang", None))
    if trained is None or trained != run[::-1]:  # a guess from another data-bin names others
        return
    there, here = "->".join(trained), "->".join(run)
    give = f"--source-lang {trained[0]} --target-lang {trained[1]}"
    if loading.resuming:
        raise errors.CheckpointError(
            f"cannot resume from {started_from(loading.option, loading.checkpoint)}: it "
            f"translates {there}, and this run {here}: resume it with {give}; to train {here}, "
            f"{train_otherwise(loading.option, f'trained {here}')}"
        )
    raise errors.CheckpointError(
        f"{loading.checkpoint} translates {there}, and this run {here} (one dictionary serves "
        f"both languages, so nothing else tells them apart): give {give}, or a model trained "
        f"for {here}"
    )


def _why_not_resumable(filename, option, saved, run, cause) -> str:
    """The line for a checkpoint (named by option, None for --save-dir's checkpoint_last.pt) whose
    parameters this run's model cannot take."""
    saved_architecture, run_architecture = _architecture(saved), _architecture(run)
    finetuning = option == "--finetune-from-model"
    start = f"cannot {'start' if finetuning else 'resume'} from {started_from(option, filename)}"
    if saved_architecture != run_architecture:
        return (
            f"{start}: its architecture is {saved_architecture} and this run's is "
            f"{run_architecture}; to train {run_architecture}, "
            f"{train_otherwise(option, f'of {run_architecture}', run_architecture)}; "
            f"{'to fine-tune from it' if finetuning else 'to continue that training'}, --arch "
            f"{saved_architecture}"
        )
    if isinstance(cause, errors.PluginError):  # the models' own explanation, as a dictionary's
        return str(cause)
    differences = ", ".join(_size_differences(_options(saved), _options(run)))
    return (
        f"{start}: its {saved_architecture} model does not fit this run's "
        f"({differences or 'its parameters differ'}); "
        f"{'fine-tune' if finetuning else 'continue'} it with the options it was trained with, or "
        f"{train_otherwise(option, 'of these sizes')}"
    )


def _architecture(model_cfg) -> Optional[str]:
    """--arch of a model's configuration: fairseq's _name (arch in checkpoints before hydra)."""
    return getattr(model_cfg, "_name", None) or getattr(model_cfg, "arch", None)


def _options(model_cfg) -> Dict:
    if isinstance(model_cfg, DictConfig):
        return OmegaConf.to_container(model_cfg, resolve=False)
    return vars(model_cfg)


def _size_differences(saved: Dict, run: Dict) -> List[str]:
    """The whole-number options of the model (the sizes) whose values differ, as "NAME is SAVED
    there and RUN here". Under fairseq-train a model's configuration also holds the run's own
    options (--batch-size, --seed, --log-interval), which size no parameter: left out."""
    run_options = _fairseqs_run_options()
    return [
        f"{name} is {saved[name]} there and {value} here"
        for name, value in run.items()
        if isinstance(value, int)
        and not isinstance(value, bool)
        and name not in run_options
        and saved.get(name, value) != value
    ]


def _fairseqs_run_options() -> frozenset:
    """The names of the options of fairseq's configuration groups that are not a component's
    (common, dataset, optimization, checkpoint, distributed training, generation, ...)."""
    from fairseq.dataclass.configs import FairseqConfig

    groups = [f.type for f in dataclasses.fields(FairseqConfig) if dataclasses.is_dataclass(f.type)]
    return frozenset(option.name for group in groups for option in dataclasses.fields(group))


errors.EXPLANATIONS.extend([checkpoint_problem, unresumable_checkpoint])
