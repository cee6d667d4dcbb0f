"""fairseq-train resuming a checkpoint under other options than it was trained with.

fairseq resumes a training under the options of the command that resumes it. Some cannot take the
checkpoint's state: another --optimizer or --criterion, whose state fairseq refuses in an
assertion, explained in one line here.

fairseq's advice, --reset-optimizer, is read at every launch of the command, as --restore-file is:
each rerun after a stop would reset the optimizer again. The line says what does not.
"""

from typing import Optional

from . import errors
from .checkpoint_safety import _trainers_loading

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
    run's, whose state cannot continue it."""
    mismatch = next((m for m in MISMATCHES if str(error).startswith(m)), None)
    loading = _trainers_loading()
    if not isinstance(error, AssertionError) or mismatch is None or loading is None:
        return None
    given = errors.locals_where(error, loading)
    if given is None:
        return None
    group, option = MISMATCHES[mismatch]
    saved = _name(given["state"]["cfg"].get(group)) or "another"
    run = _name(getattr(given["self"].cfg, group, None)) or "another"
    filename = given["filename"]
    return (
        f"cannot resume from {filename}: it was trained with {option} {saved} and this run's is "
        f"{run}; to continue that training, give {option} {saved}; to train with {run} from its "
        f"parameters, give this run a new --save-dir and --finetune-from-model {filename} "
        "(--reset-optimizer would reset the optimizer again at every launch)"
    )


errors.EXPLANATIONS.append(other_optimizer)
