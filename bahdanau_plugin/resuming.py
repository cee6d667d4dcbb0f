"""fairseq-train resuming a checkpoint under other options than it was trained with.

fairseq resumes a training under the options of the command that resumes it. Some cannot take the
checkpoint's state: another --optimizer or --criterion, whose state fairseq refuses in an
assertion, and a batching of the epoch (--batch-size, --max-tokens, the data) that has fewer
batches than the checkpoint had gone through, which fairseq asks to be reported to its developers:
each is explained in one line here. The models' own options load under any value that fits the
parameters (the dropout, the length limit, an architecture's name of the same sizes): the models
say which differ in a warning line as they resume (models/recurrent_translation.py).

fairseq's advice for the first two, --reset-optimizer and --reset-dataloader, is read at every
launch of the command, as --restore-file is: each rerun after a stop would reset them again (the
dataloader to epoch 1). The lines say what does not.
"""

from typing import Optional

from fairseq.data.iterators import EpochBatchIterator

from . import errors
from .checkpoint_safety import trainers_loading
from .fairseq_errors import fairseqs_load_checkpoint

# fairseq's assertions in Trainer.load_checkpoint: their start, and the group of the configuration
# whose choice differs, with the option that sets it.
MISMATCHES = {
    "Optimizer does not match": ("optimizer", "--optimizer"),
    "Criterion does not match": ("criterion", "--criterion"),
}


def _name(node) -> Optional[str]:
    """The choice a configuration group names (``adam``), where it names one."""
    return getattr(node, "_name", None) if node is not None else None


def other_optimizer(error: BaseException) -> Optional[str]:
    """One line for fairseq-train's "Optimizer does not match; please reset the optimizer" (or
    "Criterion"): the checkpoint was trained with another --optimizer (--criterion) than this
    run's, or in another precision, whose optimizer keeps its state otherwise, and its state
    cannot continue it."""
    mismatch = next((m for m in MISMATCHES if str(error).startswith(m)), None)
    loading = trainers_loading()
    if not isinstance(error, AssertionError) or mismatch is None or loading is None:
        return None
    given = errors.locals_where(error, loading)
    if given is None:
        return None
    group, option = MISMATCHES[mismatch]
    trained, run_cfg = given["state"]["cfg"], given["self"].cfg
    saved = _name(trained.get(group)) or "another"
    run = _name(getattr(run_cfg, group, None)) or "another"
    there, here = f"{option} {saved}", f"{option} {run}"
    if saved == run:  # the same optimizer, wrapped for another precision (FP16Optimizer, say)
        there, here = _precision(trained.get("common")), _precision(run_cfg.common)
    filename = given["filename"]
    return (
        f"cannot resume from {filename}: it was trained with {there} and this run with {here}, "
        f"whose state cannot continue it; to continue that training, resume it with {there}; to "
        f"train with {here} from its parameters, give this run a new --save-dir and "
        f"--finetune-from-model {filename} (--reset-optimizer would reset the optimizer again at "
        "every launch)"
    )


# fairseq's half precisions, whose optimizer fairseq wraps in one of its own (FP16Optimizer, ...)
PRECISIONS = ("memory_efficient_fp16", "memory_efficient_bf16", "fp16", "bf16", "amp")


def _precision(common) -> str:
    """A run's precision, as the flag that asks for it (float32: none)."""
    flag = next((f for f in PRECISIONS if common is not None and common.get(f)), None)
    return "--" + flag.replace("_", "-") if flag else "float32 (no --fp16, --bf16 or --amp)"


def fewer_batches_in_the_epoch(error: BaseException) -> Optional[str]:
    """One line for fairseq-train's "Cannot resume training due to dataloader mismatch": the
    checkpoint was saved after batch N of its epoch, and this run's epoch has no batch after N
    (another batch size, length limit, number of workers or training data)."""
    if not isinstance(error, RuntimeError) or "dataloader mismatch" not in str(error):
        return None
    iterator = errors.locals_where(error, EpochBatchIterator.load_state_dict.__code__)
    resuming = errors.locals_where(error, fairseqs_load_checkpoint())
    if iterator is None or resuming is None:
        return None
    epoch, done = iterator["self"].epoch, iterator["itr_pos"]
    return (
        f"cannot resume from {resuming['checkpoint_path']}: it was saved after batch {done} of "
        f"epoch {epoch}, and this run's epoch {epoch} has {len(iterator['self'])} batches: it "
        "batches the training data otherwise (another --batch-size, --max-tokens, "
        "--max-train-length, number of workers, or other data); resume it with those it was "
        "trained with (--reset-dataloader would start again from epoch 1 at every launch)"
    )


errors.EXPLANATIONS.extend([other_optimizer, fewer_batches_in_the_epoch])
