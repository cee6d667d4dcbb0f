"""Every process of a distributed fairseq-train checked, before the first update, to train one model
on one data set with the others.

fairseq starts each process of a distributed training from a command of its own and never checks
that the commands agree. Under its own all-reduce (--ddp-backend legacy_ddp or no_c10d, the CPUs'),
the processes share their gradients and nothing else: started with another --seed, each built other
parameters (fairseq never sends rank 0's to the others) and trained a model of its own to the end,
without a word, and resumed, the seed still shuffled each one's epoch otherwise, so that their
shares of it overlapped and left pairs out; another data folder, or another batching of the same
one (--max-tokens, --batch-size), gave them other numbers of batches, and the process with more
waited at the epoch's end for the others, forever; another model size ended in gloo's traceback.
fairseq's lstm does the same.

Once fairseq-train has loaded its checkpoint (fairseq_patches' load wrapper, in every process),
each process gathers every process's record of what they must share (``record``): the options
that shape the model, its optimization, batches and validations (``shared_options``), the
fingerprints of its dictionaries, where its training starts, the fingerprint of its epoch's
batches before each process takes its share, and that of its model's parameters. The first that
differs (``first_difference``) stops every process with the same line, so that none waits for the
others. What may differ is not recorded: --distributed-rank, --device-id, --save-dir (rank 0
alone saves), the logs, the number of data workers, and the data folder's path (a copy on each
machine). One process records nothing.
"""

from typing import Dict, Iterable, List, Optional

import torch.distributed

from . import fingerprints
from .errors import ConfigurationError
from .models.unknown_options import NAME, options_taken
from .resuming import PRECISIONS, fingerprint_of_batches

# The blocks of fairseq's configuration whose component every process must share, by the option
# that names it; each shares the options its component takes too.
COMPONENTS = {
    "model": "--arch",
    "optimizer": "--optimizer",
    "lr_scheduler": "--lr-scheduler",
    "criterion": "--criterion",
}
# The options of fairseq's other blocks that every process must share: the seed, which draws the
# first parameters and shuffles each epoch; the precision, the type of the gradients they sum;
# every option of the optimization (--update-freq, --lr, --max-update: each process steps its own
# optimizer, and stops at its own limits); those that make the batches and the validations, which
# the processes go through together; and those that decide when they validate and stop early
# (fairseq-train validates at every save, in every process, and each process counts --patience
# on its own). None: all.
BLOCKS = {
    "common": ["seed", *PRECISIONS],
    "checkpoint": [
        "save_interval",
        "save_interval_updates",
        "patience",
        "best_checkpoint_metric",
        "maximize_best_checkpoint_metric",
    ],
    "optimization": None,
    "dataset": [
        "max_tokens",
        "batch_size",
        "required_batch_size_multiple",
        "train_subset",
        "valid_subset",
        "disable_validation",
        "validate_interval",
        "validate_interval_updates",
        "validate_after_updates",
        "max_tokens_valid",
        "batch_size_valid",
    ],
}

# What a process records beside its options, in the order they are compared (a cause before what
# it changes: the data before where the epoch starts, the parameters last), each with what to do.
DICTIONARIES = "the dictionaries"
START = "where the training starts"
BATCHES = "the epoch's batches (before each process takes its share)"
PARAMETERS = "the model's parameters as the training starts"
SAME_DATA = (
    "give every process the same data folder (one binarization, copied whole to each machine)"
)
SAME_CHECKPOINT = (
    "every process must start from the same checkpoint: give them one --save-dir they share (or "
    "the same --restore-file)"
)
TO_DO = {
    DICTIONARIES: SAME_DATA,
    START: SAME_CHECKPOINT,
    BATCHES: SAME_DATA,
    PARAMETERS: SAME_CHECKPOINT,
}
SAME_OPTIONS = (
    "give every process the same options (only --distributed-rank, --device-id, --save-dir, the "
    "logs, --num-workers and the data folder's path may differ)"
)
# Fingerprints are compared whole and shown by their first digits.
DIGESTS = (DICTIONARIES, BATCHES, PARAMETERS)
SHOWN_DIGITS = 8


def _option(key: str) -> str:
    return "--" + key.replace("_", "-")


def _value(block, key: str) -> str:
    """A block's option as the user wrote it; a legacy component's block is a Namespace."""
    return str(block.get(key) if hasattr(block, "get") else getattr(block, key, None))


def shared_options(cfg) -> Dict[str, str]:
    """The options of fairseq-train's configuration that every process must share, by flag."""
    shared = {}
    for name, keys in BLOCKS.items():
        block = cfg.get(name)
        for key in [key for key in block.keys() if key != NAME] if keys is None else keys:
            shared.setdefault(_option(key), _value(block, key))
    for name, flag in COMPONENTS.items():
        block = cfg.get(name)
        component = _value(block, NAME)
        shared[flag] = component
        given, _ = options_taken(name, component) or ([], [])
        for key in given:
            shared.setdefault(_option(key), _value(block, key))
    return shared


def record(trainer, epoch_itr) -> Dict[str, str]:
    """What this process must share with the others, each as text: its options, then the facts of
    DIGESTS and START."""
    task, model = trainer.task, trainer.get_model()
    dictionaries = [task.source_dictionary, task.target_dictionary]
    facts = {
        DICTIONARIES: "".join(_hex(fingerprints.of_dictionary(d)) for d in dictionaries),
        START: f"epoch {epoch_itr.epoch} batch {epoch_itr.iterations_in_epoch} "
        f"({trainer.get_num_updates()} updates)",
    }
    batches = getattr(epoch_itr, "frozen_batches", None)  # fairseq's EpochBatchIterator's
    if batches is not None:
        facts[BATCHES] = fingerprint_of_batches(batches)
    facts[PARAMETERS] = _hex(fingerprints.of_parameters(model))
    return {**shared_options(trainer.cfg), **facts}


def _hex(fingerprint) -> str:
    return bytes(fingerprint.tolist()).hex()


def _shown(key: str, value: str) -> str:
    return value[:SHOWN_DIGITS] if key in DIGESTS else value


def _ranks(held: List[str]) -> str:
    """'rank 0', 'ranks 0 and 2', 'ranks 0, 2 and 3'."""
    if len(held) == 1:
        return f"rank {held[0]}"
    return f"ranks {', '.join(held[:-1])} and {held[-1]}"


def _by_value(key: str, values: List[str]) -> str:
    """Which ranks hold which value: '3 in ranks 0 and 2, 4 in rank 1'."""
    held_by: Dict[str, List[str]] = {}
    for rank, value in enumerate(values):
        held_by.setdefault(_shown(key, value), []).append(str(rank))
    return ", ".join(f"{value} in {_ranks(held)}" for value, held in held_by.items())


def first_difference(records: List[Dict[str, str]]) -> Optional[str]:
    """The line for the first thing the processes' records (one a rank, in rank order) do not
    agree on, in the order of rank 0's record; None where they agree."""
    keys: Iterable[str] = dict.fromkeys(key for each in records for key in each)
    for key in keys:
        values = [each.get(key, "none") for each in records]
        if len(set(values)) > 1:
            return (
                f"the {len(records)} processes of this distributed training differ in {key}: "
                f"{_by_value(key, values)}, and would not train one model together (each its own, "
                f"or waiting for the others forever); {TO_DO.get(key, SAME_OPTIONS)}"
            )
    return None


def refuse_processes_that_differ(trainer, epoch_itr) -> None:
    """Every process of a distributed training stops with the same ConfigurationError where their
    records differ; one process checks nothing."""
    if trainer.data_parallel_world_size == 1:
        return
    gathered: List[Optional[Dict[str, str]]] = [None] * trainer.data_parallel_world_size
    mine = record(trainer, epoch_itr)
    torch.distributed.all_gather_object(gathered, mine, group=trainer.data_parallel_process_group)
    difference = first_difference(gathered)
    if difference is not None:
        raise ConfigurationError(difference)
