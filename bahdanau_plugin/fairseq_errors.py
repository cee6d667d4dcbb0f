"""fairseq's own errors for the commonest mistakes in a run's data and options, explained in one
line (errors.EXPLANATIONS) where fairseq prints a traceback: a data folder that is not there or is
no data-bin, a split or a language the data-bin does not hold, a folder of dictionaries alone
without the languages, an empty split, a split in shards without --upsample-primary, validation
splits in shards (which fairseq refuses, named or not), a --finetune-from-model that names no file
or comes with another start (--restore-file, --reset-*), half precision on a CPU, --fp16 beside
--bf16, no batch size, a world of more processes than GPUs, fairseq-validate without --task,
--sampling without as many --nbest as --beam, --constraints a search cannot write, a --min-len over
a batch's length limit, gradients that are not finite (the loss diverged), a sentence over the
length limit of validation or translation, a pair over --max-tokens (--max-tokens-valid), a
fairseq-hydra-train value of another type than its option's, --tokenizer moses without both
languages, alignments to train the attention of a model without attention, --num-batch-buckets that
numpy no longer computes, a learning-rate scheduler without its number of updates or given a
learning rate per epoch, a memory-efficient half precision with an optimizer that cannot step in it,
--adam-betas that are not two decay rates, an option value torch's optimizers refuse, a
checkpoint that a distributed run's rank 0 sends to the others, which torch's weights-only loading
refuses there, the end of another process of a distributed run, and torch's DistributedDataParallel
(--ddp-backend pytorch_ddp, fairseq's default) on a CPU."""

import dataclasses
import inspect
import os
import pickle
import re
import typing
from typing import List, Optional, Tuple

import numpy as np
import torch
from fairseq import models, optim, options
from fairseq.criterions.label_smoothed_cross_entropy_with_alignment import (
    LabelSmoothedCrossEntropyCriterionWithAlignment,
)
from fairseq.data import Dictionary, data_utils, indexed_dataset
from fairseq.data.indexed_dataset import MMapIndexedDataset
from fairseq.optim import MemoryEfficientFP16Optimizer, lr_scheduler
from fairseq.optim.adam import Adam, FairseqAdam
from fairseq.dataclass.utils import merge_with_parent
from fairseq.distributed import utils as distributed_utils
from fairseq.sequence_generator import SequenceGenerator
from fairseq.tasks import FairseqTask, translation
from fairseq.trainer import Trainer
from hydra.errors import ConfigCompositionException
from omegaconf import DictConfig
from omegaconf.errors import ValidationError

from . import errors
from .checkpoint_safety import DEFAULT_RESTORE_FILE, fairseqs_load_checkpoint, trainers_loading
from .models.pretrained_paths import data_bin_folder
from .models.training_setup import adam_betas_refused, two_decay_rates


def splits_held(data_bin: str) -> List[str]:
    """The names of the splits binarized in data_bin (train, valid, test, ...)."""
    names = os.listdir(data_bin) if os.path.isdir(data_bin) else []
    return sorted({name.split(".")[0] for name in names if name.endswith(".bin")})


def missing_split(error: BaseException) -> Optional[str]:
    """fairseq's "Dataset not found: valid (DATA)", of a split that is not there, or is there as
    text, which fairseq reads only under --dataset-impl raw."""
    if not isinstance(error, FileNotFoundError) or "Dataset not found" not in str(error):
        return None
    given = errors.locals_where(error, translation.load_langpair_dataset.__code__)
    if given is None:
        return None
    split, data, pair = given["split"], given["data_path"], f"{given['src']}-{given['tgt']}"
    as_text = os.path.join(data, f"{split}.{pair}.{given['src']}")
    if indexed_dataset.infer_dataset_impl(as_text) == "raw":
        return (
            f"the data-bin {data} holds the '{split}' split of {pair} as text ({as_text}, as "
            "fairseq-preprocess --dataset-impl raw leaves it), which fairseq reads only when "
            "told: give --dataset-impl raw (dataset.dataset_impl=raw under fairseq-hydra-train)"
        )
    held = ", ".join(splits_held(data)) or "none"
    return (
        f"the data-bin {data} has no '{split}' split of {pair} (splits there: {held}): "
        "name one it holds (fairseq-train's --valid-subset, fairseq-generate's "
        "--gen-subset), or train with --disable-validation"
    )


def data_folder_that_is_no_data_bin(error: BaseException) -> Optional[str]:
    """fairseq's translation task given a data folder that is not there (a typo), or that holds no
    dictionary (bahdanau-prepare-data's OUT for OUT/data-bin): it failed in a traceback, in
    listing the folder for the language pair's file names (FileNotFoundError), in finding none
    there ("Could not infer language pair") or in reading dict.LANG.txt."""
    setup_task = inspect.unwrap(translation.TranslationTask.setup_task.__func__)
    given = errors.locals_where(error, setup_task.__code__)
    if given is None or "paths" not in given:
        return None
    whole = os.pathsep.join(given["paths"])  # a folder with ':' in its path, split into shards
    try:
        data_bin_folder(whole if os.path.isdir(whole) else given["paths"][0])
    except errors.MissingPathError as missing:
        return str(missing)
    return None


DICTIONARY = re.compile(r"dict\.(.+)\.txt")  # a data-bin's dictionary of a language


def dictionary_languages(data: str) -> List[str]:
    """The languages of a data-bin's dictionaries (dict.LANG.txt)."""
    names = os.listdir(data) if os.path.isdir(data) else []
    return sorted(found.group(1) for found in map(DICTIONARY.fullmatch, names) if found)


def missing_dictionary(error: BaseException) -> Optional[str]:
    """A --source-lang or --target-lang whose dict.LANG.txt the data-bin lacks."""
    name = getattr(error, "filename", None)
    found = DICTIONARY.fullmatch(os.path.basename(name or ""))
    if not isinstance(error, FileNotFoundError) or found is None:
        return None
    if errors.locals_where(error, Dictionary.add_from_file.__code__) is None:
        return None
    data = os.path.dirname(name) or "."
    languages = ", ".join(dictionary_languages(data)) or "none"
    return (
        f"the data-bin {data} has no dictionary for the language {found.group(1)} ({name}): its "
        f"languages are {languages}: give --source-lang and --target-lang among them"
    )


NO_PAIR = "Could not infer language pair, please provide it explicitly"


def language_pair_not_inferred(
    error: BaseException, options: Tuple[str, str] = ("--source-lang", "--target-lang")
) -> Optional[str]:
    """fairseq's translation task, with --source-lang or --target-lang left out, takes the pair
    from the names of the data folder's binaries (SPLIT.SRC-TGT.LANG.bin): a folder of
    dictionaries alone, such as one kept beside a checkpoint to translate with, has none, and
    fairseq-interactive (fairseq-generate too) failed in a traceback, "Could not infer language
    pair, please provide it explicitly". The task is set up from the command's options before
    any checkpoint is read: the languages a checkpoint records are not read there. The hub, from a
    checkpoint that records none, the same (options: the two, as the line names them)."""
    if str(error) != NO_PAIR:
        return None
    setup_task = inspect.unwrap(translation.TranslationTask.setup_task.__func__)
    given = errors.locals_where(error, setup_task.__code__)
    if given is None or "paths" not in given:
        return None
    data = given["paths"][0]
    languages = " and ".join(dictionary_languages(data))
    source, target = options
    return (
        f"the data folder {data} holds no binaries (SPLIT.SRC-TGT.LANG.bin), from whose names "
        f"fairseq takes the language pair where {source} or {target} is left out: give "
        f"both, languages of its dictionaries ({languages})"
    )


def empty_split(error: BaseException) -> Optional[str]:
    """A split binarized from empty text files, as fairseq-preprocess does without a word: fairseq
    reads a split by mapping its .bin file into memory, and an empty file cannot be mapped."""
    if not isinstance(error, ValueError) or str(error) != "cannot mmap an empty file":
        return None
    given = errors.locals_where(error, MMapIndexedDataset._do_init.__code__)
    if given is None:
        return None
    prefix = given["path"]
    return (
        f"the split {prefix} holds no sentence ({prefix}.bin is empty: it was binarized from an "
        "empty text file), and fairseq cannot read an empty split: binarize it from text with "
        "sentences, or name a split that has some (--train-subset, --valid-subset or "
        "--disable-validation, --gen-subset)"
    )


def shards_repeated_a_negative_number_of_times(error: BaseException) -> Optional[str]:
    """A split in shards (train and train1, a second corpus binarized beside the first; valid and
    valid1 under --combine-valid-subsets), which fairseq concatenates with the first repeated
    --upsample-primary times: its default, -1, is no number of times, and numpy failed in a
    traceback as fairseq read the shards' sizes ("negative dimensions are not allowed")."""
    if not isinstance(error, ValueError) or "negative dimensions" not in str(error):
        return None
    given = errors.locals_where(error, translation.load_langpair_dataset.__code__)
    if given is None or given["upsample_primary"] >= 0:
        return None
    split, shards = given["split"], len(given["src_datasets"])
    names = ", ".join(split + (str(k) if k > 0 else "") for k in range(shards))
    return (
        f"the data-bin {given['data_path']} holds {shards} shards of '{split}' ({names}), which "
        f"fairseq concatenates, {split} repeated --upsample-primary times, and its default, -1, "
        "is no number of times: give --upsample-primary 1 (each shard once) or more "
        "(task.upsample_primary under fairseq-hydra-train)"
    )


def validation_splits_taken_as_left_out(error: BaseException) -> Optional[str]:
    """fairseq-train refuses a data-bin with validation splits in shards (valid1, valid2, ...: two
    --validpref of fairseq-preprocess) that --valid-subset leaves out, but it compares the names
    of their files less one suffix (valid1.en-fr.en) with the splits named (valid1), so it refused
    them named too, in a traceback: "Valid paths [...] will be ignored", which --valid-subset
    valid,valid1 would not have."""
    check = data_utils.raise_if_valid_subsets_unintentionally_ignored
    given = errors.locals_where(error, check.__code__)
    if not isinstance(error, ValueError) or given is None:
        return None
    named = given["specified_subsets"]
    held = sorted({path.split(".")[0] for path in given["ignored_paths"]})
    left_out = [split for split in held if split not in named]
    if not left_out:
        return (
            f"--valid-subset {','.join(named)} names every validation split of the data-bin, but "
            f"fairseq-train's check for splits left out takes the files of {', '.join(held)} for "
            "other splits and refuses them: add --ignore-unused-valid-subsets, and it validates "
            "on each split named, keeping checkpoint_best.pt by the first "
            "(dataset.ignore_unused_valid_subsets under fairseq-hydra-train)"
        )
    return (
        f"the data-bin holds validation splits that --valid-subset {','.join(named)} leaves out "
        f"({', '.join(left_out)}): validate on each with --valid-subset "
        f"{','.join([*named, *left_out])} --ignore-unused-valid-subsets (fairseq's check takes "
        "named ones for others too), on all as one with --combine-valid-subsets "
        "--upsample-primary 1, or leave them out with --ignore-unused-valid-subsets"
    )


def alignment_training_without_attention(error: BaseException) -> Optional[str]:
    """--criterion label_smoothed_cross_entropy_with_alignment adds to the loss the attention's
    distance from the alignments of --load-alignments, and read the attention of a model that has
    none (rnnencdec) as None: an AttributeError traceback at the first batch."""
    criterion = LabelSmoothedCrossEntropyCriterionWithAlignment.compute_alignment_loss
    given = errors.locals_where(error, criterion.__code__)
    if not isinstance(error, AttributeError) or given is None or given.get("attn_prob") is not None:
        return None
    return (
        "--criterion label_smoothed_cross_entropy_with_alignment trains the model's attention "
        "toward the alignments of --load-alignments, and this model gives none (rnnencdec has no "
        "attention): train rnnsearch, or give another --criterion (label_smoothed_cross_entropy)"
    )


def batch_buckets_numpy_cannot_compute(error: BaseException) -> Optional[str]:
    """--num-batch-buckets N pads each batch to one of N lengths, percentiles of the split's
    sentence lengths that fairseq 0.12 computes with numpy's percentile(interpolation=...), an
    argument deprecated since numpy 1.22 that numpy 2.4 (make setup's) no longer takes: a
    TypeError traceback as the split was loaded, for any model."""
    given = errors.locals_where(error, data_utils.get_buckets.__code__)
    if not isinstance(error, TypeError) or given is None:
        return None
    return (
        f"--num-batch-buckets {given['num_buckets']}: fairseq computes the buckets' lengths with "
        f"numpy's percentile(interpolation=...), which numpy {np.__version__} no longer takes: "
        "drop --num-batch-buckets (each batch is then padded to its longest sentence)"
    )


def missing_finetune_checkpoint(error: BaseException) -> Optional[str]:
    if isinstance(error, ValueError) and re.fullmatch(
        r"--finetune-from-model .* does not exist", str(error)
    ):
        return f"{error}: give the checkpoint file to start from"
    return None


RESETS = ("reset_optimizer", "reset_lr_scheduler", "reset_meters", "reset_dataloader")


def finetuning_with_another_start(error: BaseException) -> Optional[str]:
    """fairseq-train's refusal of --finetune-from-model beside a --restore-file or a --reset-*
    flag, a traceback that prints the whole checkpoint configuration: --finetune-from-model
    already starts from the checkpoint's parameters alone, at the first launch only."""
    message = str(error)
    if not isinstance(error, ValueError) or not message.startswith("--finetune-from-model "):
        return None
    if "together" not in message:  # not these refusals
        return None
    given = errors.locals_where(error, fairseqs_load_checkpoint())
    if given is None:
        return None
    cfg, start = given["cfg"], f"--finetune-from-model {given['cfg'].finetune_from_model}"
    if cfg.restore_file != DEFAULT_RESTORE_FILE:
        return (
            f"{start} and --restore-file {cfg.restore_file} both name the checkpoint to start "
            "from: give one (--finetune-from-model takes its parameters alone, at the first "
            "launch; --restore-file its optimizer and position too, at every launch)"
        )
    resets = " ".join("--" + flag.replace("_", "-") for flag in RESETS if getattr(cfg, flag))
    return (
        f"{start} starts from its parameters alone, resetting the optimizer, the learning-rate "
        f"schedule, the meters and the data position already, and fairseq refuses {resets} "
        "beside it: drop them"
    )


# fairseq's assertions whose message alone tells the mistake, each with its line: half precision
# on a CPU, no batch size (fairseq-train, fairseq-validate: neither has a default), --sampling
# without --nbest equal to --beam (its default --beam 5 --nbest 1 among them)
ASSERTIONS = {
    "Torch not compiled with CUDA enabled": (
        "this torch has no CUDA, and --fp16 (also --memory-efficient-fp16) needs a GPU: on a "
        "CPU, train in float32 or with --bf16 (docs/precision.md)"
    ),
    "Must specify batch size either with --max-tokens or --batch-size": (
        "no batch size given: give --batch-size N (sentences a batch; the paper trains with 80) "
        "or --max-tokens N (tokens a batch); dataset.batch_size in a fairseq-hydra-train "
        "configuration"
    ),
    "--sampling requires --nbest to be equal to --beam": (
        "--sampling draws --beam translations of each sentence, and fairseq prints them all: give "
        "--nbest equal to --beam (--beam 1 --nbest 1 for one sample a sentence)"
    ),
}


def told_by_its_message(error: BaseException) -> Optional[str]:
    """One of fairseq's ASSERTIONS, a traceback, as its line."""
    return ASSERTIONS.get(str(error)) if isinstance(error, AssertionError) else None


def more_processes_than_gpus(error: BaseException) -> Optional[str]:
    """fairseq-train --distributed-world-size N without --distributed-init-method starts N
    processes on this machine, one a GPU, and asserts in a traceback that it has as many."""
    found = re.fullmatch(r"world size is (\d+) but have (\d+) available devices", str(error))
    if not isinstance(error, AssertionError) or found is None:
        return None
    world, gpus = map(int, found.groups())
    fewer = f"give a world size of at most {gpus}" if gpus else "leave it out for one process"
    return (
        f"--distributed-world-size {world} without --distributed-init-method starts that many "
        f"processes on this machine, one a GPU, and it has {gpus or 'none'}: {fewer}, or start "
        "each process yourself with --distributed-init-method tcp://HOST:PORT "
        "--distributed-no-spawn --distributed-rank R (--distributed-backend gloo on CPUs)"
    )


def checkpoint_sent_to_the_other_processes(error: BaseException) -> Optional[str]:
    """fairseq-train with several processes resumes a checkpoint on rank 0 alone and sends it to
    the others (Trainer.load_checkpoint's broadcast_object), which read it with torch.load: since
    torch 2.6 that loads weights only, and refuses the omegaconf configuration fairseq has made of
    the checkpoint's. Every distributed run that resumed ended there in a traceback, its lstm's too:
    in the processes started by hand (--distributed-no-spawn) and rank 0 in the loss of the others
    (another_process_ended), or, where fairseq-train starts one process a GPU, in the worker's
    traceback that torch.multiprocessing hands the command (ProcessRaisedException)."""
    if type(error).__name__ == "ProcessRaisedException":
        sent_to_a_worker = _worker_refused_the_checkpoint_sent(str(error))
        return _cannot_resume_as_sent("the checkpoint") if sent_to_a_worker else None
    if not isinstance(error, pickle.UnpicklingError):
        return None
    if errors.locals_where(error, distributed_utils._broadcast_object_slow.__code__) is None:
        return None
    loading = trainers_loading()
    given = errors.locals_where(error, loading) if loading is not None else None
    return _cannot_resume_as_sent(given["filename"] if given is not None else "the checkpoint")


def _worker_refused_the_checkpoint_sent(worker_traceback: str) -> bool:
    """Whether a worker's traceback ends in torch's UnpicklingError (whose message runs over
    several lines) where fairseq reads the object sent by rank 0."""
    sending = f"in {distributed_utils._broadcast_object_slow.__name__}\n"
    _, sent, after = worker_traceback.rpartition(sending)
    return bool(sent) and "\n_pickle.UnpicklingError: " in after


def _cannot_resume_as_sent(checkpoint: str) -> str:
    return (
        f"cannot resume from {checkpoint} with several processes as fairseq does by default: rank "
        "0 reads it and sends it to the others, and torch's weights-only loading (torch 2.6 or "
        "later) refuses the training configuration it holds there; add "
        "--load-checkpoint-on-all-dp-ranks, with which every process reads it from the file, "
        "safely (on several machines, each needs the --save-dir, a folder they share)"
    )


# gloo's words for a connection to another process of the run that closed: that process ended
# (a failure, a kill) or its machine went away.
PEER_LOST = re.compile(r"gloo/transport/tcp/.*(Connection closed by peer|Connection reset by peer)")


def another_process_ended(error: BaseException) -> Optional[str]:
    """gloo's RuntimeError in every other process of a distributed fairseq-train (--distributed-
    backend gloo, the CPUs') once one process ended: a traceback that hid the first process's own
    error, which is what to read."""
    found = PEER_LOST.search(str(error)) if isinstance(error, RuntimeError) else None
    if found is None:
        return None
    return (
        f"another process of this distributed run ended ({found.group(1).lower()}), and this one "
        "cannot train without it: that process's output says why; once it is put right, start "
        "every process again (each resumes from the --save-dir's checkpoint_last.pt)"
    )


def torchs_data_parallel_on_a_cpu(error: BaseException) -> Optional[str]:
    """fairseq-train --ddp-backend pytorch_ddp (its default, or c10d) on CPUs: fairseq gives
    torch's DistributedDataParallel the process's GPU (device_ids=[--device-id]) whatever the
    device, and torch refused the model on the CPU in a traceback (a ValueError about device_ids),
    in every process, fairseq's lstm too."""
    if not isinstance(error, ValueError) or "device_ids" not in str(error):
        return None
    given = errors.locals_where(error, models.DistributedFairseqModel.__code__)
    if given is None or given["device"].type != "cpu":
        return None
    backend = given["args"].ddp_backend
    default = " (fairseq's default)" if backend == "pytorch_ddp" else ""
    refused = (
        f"--ddp-backend {backend}{default} wraps the model in torch's DistributedDataParallel for "
        "the process's GPU, which torch refuses for a model on the CPU"
    )
    if not _in_half_precision(given["model"]):
        return (
            f"{refused}: on CPUs, give --ddp-backend legacy_ddp (or no_c10d), fairseq's own "
            "all-reduce"
        )
    # legacy_ddp and no_c10d are refused in half precision (models/training_setup.py)
    return (
        f"{refused}, and fairseq's own all-reduce (legacy_ddp, no_c10d) would round the alignment "
        "model's float32 gradients in half precision: on CPUs, train several processes in float32, "
        "or one process in half precision"
    )


def _in_half_precision(model: torch.nn.Module) -> bool:
    return any(p.dtype in (torch.float16, torch.bfloat16) for p in model.parameters())


# How fairseq's trainer ends at gradients that are not finite: its own check (float32, --bf16),
# its loss scaler's floor (--fp16 on a GPU), or, with --amp on a CPU, the GradScaler torch disabled
# for want of CUDA, whose backoff factor fairseq reads to lower the scale.
DIVERGED = (
    (FloatingPointError, re.compile(r"gradients are Nan/Inf|(AMP: )?Minimum loss scale reached")),
    (AttributeError, re.compile(r"'GradScaler' object has no attribute '_backoff_factor'")),
)


def gradients_not_finite(error: BaseException) -> Optional[str]:
    """fairseq-train stops at an update whose gradients are NaN or infinite in a traceback, after
    its NanDetector's dump of every parameter's norms; with --amp on a CPU in an AttributeError
    that names neither. The loss diverged: at any precision, a learning rate too large for it."""
    if not any(isinstance(error, kind) and message.match(str(error)) for kind, message in DIVERGED):
        return None
    given = errors.locals_where(error, inspect.unwrap(Trainer.train_step).__code__)
    if given is None:
        return None
    trainer = given["self"]
    crash = os.path.join(trainer.cfg.checkpoint.save_dir, "crash.pt")
    saved = (
        f" (fairseq saved the parameters that gave them as {crash})"
        if isinstance(error, FloatingPointError)
        else ""
    )
    clipping = (
        ", and --clip-norm 1.0 (the paper's; this run clips no gradient)"
        if not trainer.cfg.optimization.clip_norm
        else ""
    )
    return (
        f"the gradients of update {trainer.get_num_updates() + 1:,} are NaN or infinite: the loss "
        f"diverged, and training stopped{saved}; train again with a lower --lr{clipping}, from "
        "the last checkpoint saved before it"
    )


def min_len_over_the_length_limit(error: BaseException) -> Optional[str]:
    """fairseq's search asserts, in a traceback, that --min-len is within a batch's length limit:
    with --max-len-a, that limit grows with the batch's longest source, so a batch of short
    sentences can end a run that translated longer ones (inference_setup refuses --max-len-a 0,
    and --match-source-len beside --min-len, before any translation)."""
    if not isinstance(error, AssertionError) or str(error) != (
        "min_len cannot be larger than max_len, please adjust these!"
    ):
        return None
    given = errors.locals_where(error, SequenceGenerator._generate.__code__)
    if given is None:
        return None
    return (
        f"--min-len {given['self'].min_len} is over the length limit of a batch: "
        f"{length_limit(given)}; give a smaller --min-len, or a larger --max-len-b"
    )


def length_limit(given: dict) -> str:
    """What set a batch's length limit, from the locals of fairseq's search (``_generate``)."""
    generator = given["self"]
    return (
        f"--max-len-a {generator.max_len_a:g} --max-len-b {generator.max_len_b} allow "
        f"{given['max_len']} tokens, from the batch's longest source of {given['src_len']} tokens"
    )


def constraint_never_written(error: BaseException) -> Optional[str]:
    """fairseq-interactive's --constraints search forbids a translation's end until it has written
    every constraint of its line: where it cannot, it runs to the length limit and fairseq asserts
    (``step < max_len``) in a traceback. A constraint typed as </s> or <pad> is never written:
    fairseq-interactive reads it with the target dictionary, as the symbol, which a search never
    writes inside a translation; any other is one longer than the limit leaves room for."""
    if not isinstance(error, AssertionError) or not re.fullmatch(r"(\d+) < \1", str(error)):
        return None
    given = errors.locals_where(error, SequenceGenerator._generate.__code__)
    if given is None or given.get("constraints") is None:
        return None
    symbols = given["self"].tgt_dict
    control = {symbols.eos(): symbols.eos_word, symbols.pad(): symbols.pad_word}
    # a row: the line's number of constraints, then their tokens (end of sentence and padding
    # never stand for anything else there)
    tokens = given["constraints"][:, 1:].flatten().tolist()
    typed = sorted({control[token] for token in tokens if token in control})
    if typed:
        return (
            f"a --constraints word is {' or '.join(typed)}, which fairseq-interactive reads as the "
            "target dictionary's control symbol, and no translation holds one: the search ran to "
            f"its length limit ({given['max_len']} tokens) without writing it; drop it from the "
            "constraints"
        )
    return (
        "the search reached its length limit before it wrote every --constraints word of a line "
        f"({length_limit(given)}): give a larger --max-len-b, or fewer or shorter constraints"
    )


def no_task(error: BaseException) -> Optional[str]:
    """fairseq-validate's parser, alone among fairseq's tools, has no default task: without
    --task, fairseq looks the options of task None up and fails in a KeyError's traceback."""
    if not isinstance(error, KeyError) or error.args != (None,):
        return None
    given = errors.locals_where(error, options.parse_args_and_arch.__code__)
    if given is None or getattr(given.get("args"), "task", "") is not None:
        return None
    return (
        "no --task given, and fairseq-validate has no default one: give the task the checkpoint "
        "was trained with, --task translation (or translation_with_source_words)"
    )


def two_half_precisions(error: BaseException) -> Optional[str]:
    """fairseq's argument parsing turns --bf16 into --tpu, then refuses --tpu beside --fp16 in a
    traceback about a TPU ('Cannot combine --fp16 and --tpu, use --bf16 on TPUs') where --fp16 and
    --bf16 were given, and no TPU (fairseq-train, fairseq-generate, any of its tools)."""
    if not isinstance(error, ValueError) or not str(error).startswith("Cannot combine --fp16 and"):
        return None
    given = errors.locals_where(error, options.parse_args_and_arch.__code__)
    args = given.get("args") if given is not None else None
    if not getattr(args, "bf16", False):
        return None  # --tpu itself beside --fp16: fairseq's line says it
    float16 = "--memory-efficient-fp16" if args.memory_efficient_fp16 else "--fp16"
    bfloat16 = (
        "--memory-efficient-bf16" if getattr(args, "memory_efficient_bf16", False) else "--bf16"
    )
    return (
        f"{float16} and {bfloat16} each choose the precision to compute in, float16 and "
        "bfloat16: give one of them (on a CPU, --bf16: docs/precision.md)"
    )


def option_of_another_type(error: BaseException) -> Optional[str]:
    """omegaconf's ValidationError, a traceback, where fairseq merges a block of a configuration
    (fairseq-hydra-train's ``model.dropout=abc``) with the dataclass of its component, which
    types it: the line names the option, its value and the type taken there. Its value is as
    fairseq-hydra-train resolved it: the paper's recipes read lr_scheduler.lr from optimizer.lr."""
    if not isinstance(error, ValidationError):
        return None
    given = errors.locals_where(error, merge_with_parent.__code__)
    if given is None or not isinstance(given["cfg"], DictConfig):
        return None
    options, key = given["cfg"], error.key
    taken = {field.name: field.type for field in dataclasses.fields(given["dc"])}.get(key)
    if options._key() is None or taken is None:
        return None
    option, value = f"{options._key()}.{key}", options.get(key)
    takes = f"{options._key()} {options.get('_name')} takes {_type_name(taken)} there"
    if typing.get_origin(taken) is list:
        return (
            f"{option}={value} is not a list: {takes}: give it as one, [{value}], where it is set"
        )
    reason = str(error.msg).splitlines()[0]
    return f"{option}={value}: {reason}; {takes}: correct the value"


def tokenizer_without_its_languages(error: BaseException) -> Optional[str]:
    """fairseq-interactive and fairseq-generate with --tokenizer moses, and --source-lang or
    --target-lang left out: the tokenizer's configuration takes both from the task's options, where
    a language left out is null (the translation task infers it from the data-bin's file names only
    later), and hydra refuses the null in a traceback: 'Error merging override
    tokenizer.source_lang=null', after a logged line of every override."""
    refused = error.__cause__
    if not isinstance(error, ConfigCompositionException) or not isinstance(
        refused, ValidationError
    ):
        return None
    if refused.full_key not in ("tokenizer.source_lang", "tokenizer.target_lang"):
        return None
    return (
        "--tokenizer moses tokenizes by the rules of --source-lang and --target-lang, and fairseq "
        f"reads its {refused.full_key.split('.')[1]} before it takes a language left out from the "
        "data-bin's file names: give both, the data-bin's languages (--source-lang en "
        "--target-lang fr, say)"
    )


def memory_efficient_half_precision_of_another_optimizer(error: BaseException) -> Optional[str]:
    """--memory-efficient-fp16 and --memory-efficient-bf16 step the half-precision parameters in
    place, through an optimizer that reads their gradients in float32 itself, which few of
    fairseq's do (adam's does; adadelta's, the paper's, does not): fairseq refused any other as it
    built the optimizer before the first update, model and data loaded, in a traceback
    (ValueError: Unsupported optimizer: Adadelta)."""
    if not isinstance(error, ValueError) or not str(error).startswith("Unsupported optimizer"):
        return None
    given = errors.locals_where(error, MemoryEfficientFP16Optimizer.__init__.__code__)
    if given is None:
        return None
    common, name = given["cfg"].common, given["cfg"].optimizer._name
    precision = "bf16" if common.memory_efficient_bf16 else "fp16"
    return (
        f"--memory-efficient-{precision} steps the half-precision parameters in place, which "
        f"fairseq's --optimizer {name} cannot: use --{precision}, which keeps float32 master "
        "weights for any optimizer (docs/precision.md), or an optimizer that can, adam"
    )


# torch's optimizers check their options as they are built: "Invalid rho value: 1.5".
TORCH_REFUSES = re.compile(r"Invalid [\w ]+: .+")


def optimizer_option_torch_refuses(error: BaseException) -> Optional[str]:
    """fairseq's adadelta (the paper's), adagrad and sgd are torch's optimizers, which refuse a
    value out of range as fairseq builds them before the first update, model and data loaded, in
    a traceback that names neither option nor optimizer (ValueError: Invalid rho value: 95.0, for
    --adadelta-rho 95 where 0.95 was meant; a learning rate or weight decay under 0)."""
    if not isinstance(error, ValueError) or not TORCH_REFUSES.fullmatch(str(error)):
        return None
    # fairseq's registry's build function, which names the optimizer it builds (choice)
    given = errors.locals_where(error, optim._build_optimizer.__code__)
    if given is None:
        return None
    return (
        f"--optimizer {given['choice']} cannot start: torch's optimizer refuses one of its "
        f"options, '{error}': correct the one it names (the learning rate is --lr; the others "
        f"are listed by fairseq-train --optimizer {given['choice']} --help; optimizer.* under "
        "fairseq-hydra-train)"
    )


def adam_betas_adam_cannot_take(error: BaseException) -> Optional[str]:
    """fairseq's Adam reads --adam-betas as Python (eval) and never checks what it gets: text that
    is no Python ('0.9 0.98') failed in a SyntaxError as the optimizer was built; one number
    ('(0.9)'), three, or a rate of 1 or more ('(0.9, 1.5)', '(1.0, 0.999)') failed at the first
    update, model and data loaded, in a TypeError, a ValueError ('math domain error') or a
    ZeroDivisionError, each in a traceback that names no option."""
    built = errors.locals_where(error, FairseqAdam.optimizer_config.fget.__code__)
    stepped = errors.locals_where(error, inspect.unwrap(Adam.step).__code__)  # torch wraps it
    if built is not None and isinstance(error, (SyntaxError, NameError)):
        betas = built["self"].cfg.adam_betas
    elif stepped is not None and not two_decay_rates(stepped.get("group", {}).get("betas")):
        betas = stepped["group"]["betas"]
    else:
        return None
    return adam_betas_refused(betas)


# What each of fairseq's learning-rate schedulers asserts it is given as it is built, and the line
# that says what to give: cosine anneals over --lr-period-updates (or --max-update less the
# warmup), tri_stage's stages are its steps or --phase-ratio of --max-update, polynomial_decay
# decays over --total-num-update; each asserted in a traceback, the first without its options'
# names, the others without a message where --max-update is left out.
SCHEDULES_NEED = {
    "cosine": (
        "anneals the learning rate over --lr-period-updates updates, or over --max-update less "
        "its --warmup-updates, and neither is given: give --max-update N (or "
        "--lr-period-updates N)"
    ),
    "tri_stage": (
        "warms the learning rate up, holds it and decays it over the updates of its three "
        "stages, which it needs: give --warmup-steps, --hold-steps and --decay-steps, or "
        "--phase-ratio '(0.1, 0.4, 0.5)' (fractions adding up to 1) with --max-update N"
    ),
    "polynomial_decay": (
        "decays the learning rate over --total-num-update updates, and has none: give "
        "--total-num-update N, the run's --max-update, which fairseq-train does not read for it "
        "(lr_scheduler.total_num_update, or optimization.max_update, under fairseq-hydra-train)"
    ),
}


def learning_rate_schedule_that_cannot_start(error: BaseException) -> Optional[str]:
    """fairseq builds the learning-rate scheduler as the first update comes (its trainer's
    _build_optimizer), model and data loaded, and each scheduler checks its options there in a
    traceback: a schedule without its number of updates (SCHEDULES_NEED), and, for every one but
    fixed, a learning rate per epoch (--lr 1e-3,5e-4), which fixed alone reads."""
    if not isinstance(error, (AssertionError, ValueError)):
        return None
    given = errors.locals_where(error, lr_scheduler.build_lr_scheduler.__code__)
    if given is None:
        return None
    name = given["cfg"].get("_name")
    if isinstance(error, ValueError) and "Cannot use a fixed learning rate schedule" in str(error):
        rates = ",".join(f"{rate:g}" for rate in given["cfg"].lr)
        return (
            f"--lr {rates} gives a learning rate per epoch, which --lr-scheduler fixed alone "
            f"reads: --lr-scheduler {name} computes each update's from one --lr; give one"
        )
    if isinstance(error, AssertionError) and name in SCHEDULES_NEED:
        return f"--lr-scheduler {name} {SCHEDULES_NEED[name]}"
    return None


def polynomial_decay_without_its_updates(error: BaseException) -> Optional[str]:
    """fairseq-train --lr-scheduler polynomial_decay without --total-num-update: fairseq's
    conversion of the parsed arguments overrides the option's interpolation of max_update with
    the flag's default, None, which hydra refuses in a traceback ('Error merging override
    lr_scheduler.total_num_update=null'), whatever --max-update is."""
    refused = error.__cause__
    if not isinstance(error, ConfigCompositionException) or not isinstance(
        refused, ValidationError
    ):
        return None
    if refused.full_key != "lr_scheduler.total_num_update":
        return None
    return f"--lr-scheduler polynomial_decay {SCHEDULES_NEED['polynomial_decay']}"


def _type_name(annotation) -> str:
    """float for float, List[float] for typing.List[float]."""
    if isinstance(annotation, type):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


SIDES = (("source", "--max-source-positions"), ("target", "--max-target-positions"))
SKIP_INVALID = (
    "add --skip-invalid-size-inputs-valid-test to leave such sentences out "
    "(dataset.skip_invalid_size_inputs_valid_test=true under fairseq-hydra-train)"
)


def sentence_over_the_length_limit(error: BaseException) -> Optional[str]:
    """fairseq's "Size of sample #N is invalid (=(S, T)) since max_positions=(A, B), skip this
    example with --skip-invalid-size-inputs-valid-test", a traceback, where a sentence of what it
    batches is over the length limit: a validation sentence over the training limit
    (fairseq-train, fairseq-validate), a test sentence over the task's --max-source-positions
    (fairseq-generate), a line of fairseq-interactive's input. The limit of each side is the
    smaller of the task's and the models' (fairseq's resolve_max_positions): only the task's is an
    option to raise; these models' own is their training length limit (--max-train-length), which
    validation keeps to as training does."""
    if not str(error).startswith("Size of sample #"):
        return None
    given = errors.locals_where(error, FairseqTask.filter_indices_by_size.__code__)
    if given is None:
        return None
    task, dataset, index = given["self"], given["dataset"], given["ignored"][0]
    sizes, limits = dataset.size(index), given["max_positions"]
    if not (isinstance(sizes, tuple) and isinstance(limits, tuple)):  # not a translation pair's
        return None
    over = [  # the sides over their limit: (side, its option, its tokens, its limit, the task's)
        (side, option, int(size), limit, limit == task_limit)
        for (side, option), size, limit, task_limit in zip(
            SIDES, sizes, limits, task.max_positions()
        )
        if limit is not None and size > limit
    ]
    if not over:
        return None
    tokens = " and ".join(f"{size:,} {side}" for side, _, size, _, _ in over)
    sentence = (
        f"{sentence_named(task, dataset, index)} has {tokens} tokens (end of sentence included)"
    )
    if all(the_tasks for *_, the_tasks in over):
        limits = " and ".join(f"{option} {limit:,}" for _, option, _, limit, _ in over)
        raised = " and ".join(f"{option} to {size:,}" for _, option, size, _, _ in over)
        return f"{sentence}, over {limits}: raise {raised}, or {SKIP_INVALID}"
    limits = " and ".join(f"{limit:,} {side}" for side, _, _, limit, _ in over)
    return (
        f"{sentence}, over the {limits} tokens the models take (these models' training length "
        f"limit, --max-train-length, which validation keeps to): {SKIP_INVALID}"
    )


def pair_over_max_tokens(error: BaseException) -> Optional[str]:
    """fairseq's "Sentences lengths should not exceed max_tokens=N", an AssertionError in a
    traceback, where a pair of what it batches has more tokens than a batch may hold: a
    validation pair over --max-tokens-valid (--max-tokens unless given; fairseq-train leaves out
    the training pairs over --max-tokens with a warning, but validates every pair, and
    --skip-invalid-size-inputs-valid-test skips only those over the length limit), or a test pair
    of fairseq-generate or fairseq-validate over --max-tokens. The run ended at its first
    validation, after the epoch before it, unsaved."""
    if not isinstance(error, AssertionError) or not str(error).startswith(
        "Sentences lengths should not exceed max_tokens="
    ):
        return None
    batching = errors.locals_where(error, data_utils.batch_by_size.__code__)
    batched = errors.locals_where(error, FairseqTask.get_batch_iterator.__code__)
    if batching is None or batched is None:
        return None
    indices, tokens = batching["indices"], batching["num_tokens_vec"]
    if tokens is None:
        tokens = [batching["num_tokens_fn"](index) for index in indices]
    longest = int(np.argmax(tokens))
    validating = errors.locals_where(error, inspect.unwrap(Trainer.get_valid_iterator).__code__)
    option = "--max-tokens-valid" if validating is not None else "--max-tokens"
    given = f"{option} {batching['max_tokens']}" + (
        " (--max-tokens, unless given)" if validating is not None else ""
    )
    sentence = sentence_named(batched["self"], batched["dataset"], int(indices[longest]))
    return (
        f"{given} is under the {int(tokens[longest]):,} tokens of {sentence} (its longer side, "
        f"end of sentence included), and a batch holds whole pairs: give {option} "
        f"{int(tokens[longest]):,} or more"
    )


def sentence_named(task, dataset, index: int) -> str:
    """A sentence fairseq filters by size: of a split the task loaded (fairseq's ids, from 0), or
    of fairseq-interactive's input (numbered as its S- lines where the task counts the lines read,
    as translation_with_source_words does)."""
    split = next((name for name, held in task.datasets.items() if held is dataset), None)
    if split is not None:
        return f"sentence {index} of the '{split}' split"
    first_line = getattr(task, "first_line", None)
    return (
        "a sentence of the input" if first_line is None else f"input sentence {first_line + index}"
    )


errors.EXPLANATIONS.extend(
    [
        sentence_over_the_length_limit,
        pair_over_max_tokens,
        missing_split,
        data_folder_that_is_no_data_bin,  # before missing_dictionary, which lists the folder
        missing_dictionary,
        language_pair_not_inferred,
        empty_split,
        shards_repeated_a_negative_number_of_times,
        validation_splits_taken_as_left_out,
        alignment_training_without_attention,
        batch_buckets_numpy_cannot_compute,
        missing_finetune_checkpoint,
        finetuning_with_another_start,
        told_by_its_message,
        more_processes_than_gpus,
        gradients_not_finite,
        two_half_precisions,
        no_task,
        constraint_never_written,
        min_len_over_the_length_limit,
        option_of_another_type,
        tokenizer_without_its_languages,
        memory_efficient_half_precision_of_another_optimizer,
        adam_betas_adam_cannot_take,
        optimizer_option_torch_refuses,
        learning_rate_schedule_that_cannot_start,
        polynomial_decay_without_its_updates,
        checkpoint_sent_to_the_other_processes,
        another_process_ended,
        torchs_data_parallel_on_a_cpu,
    ]
)
