"""fairseq-train resuming a checkpoint under other options than it was trained with.

fairseq resumes a training under the options of the command that resumes it. Some cannot take the
checkpoint's state: another --optimizer or --criterion, whose state fairseq refuses in an
assertion, another --lr-scheduler, whose state fairseq fails to read (KeyError: 'best'), and a
batching of the epoch (--batch-size, --max-tokens, the data) that has fewer batches than the
checkpoint had gone through, which fairseq asks to be reported to its developers: each is
explained in one line here. The models' own options load under any value that fits the
parameters (the dropout, the length limit, an architecture's name of the same sizes): the models
say which differ in a warning line as they resume (models/recurrent_translation.py).

fairseq's advice for the first two, --reset-optimizer and --reset-dataloader, is read at every
launch of the command, as --restore-file is: each rerun after a stop would reset them again (the
dataloader to epoch 1). The lines say what does not.

An epoch that the resuming command batches into as many batches or more goes on without an error,
after the checkpoint's number of batches of this run's order: where that order is another (another
--batch-size, --max-tokens, length limit, --seed, number of workers, or a training split
binarized anew), the rest of the epoch leaves out pairs the checkpoint had not reached and trains
on others twice. A checkpoint saved mid-epoch records the fingerprint of its epoch's batches
beside fairseq's state of its epoch iterator (``RecordingTheEpochsBatches``), and a run resuming
it through other batches says so in one warning line (``other_batches_than_saved``): a new
batching may be meant (a batch size that no longer fits the GPU), and it costs that epoch only.

fairseq forgets the best validation score of the checkpoint it resumes where --reset-optimizer or
--reset-meters is given (the first, its own advice for another optimizer, at every launch), so
that the next validation, however bad, is saved over checkpoint_best.pt. Where the --save-dir holds
a checkpoint_best.pt, the score is kept (``keep_the_best_score``), as without those options:
checkpoint_best.pt is replaced only by a checkpoint that validates better. A run that keeps no
score of its checkpoint forgets one left in the process by an earlier training (a hydra
multirun's job), which fairseq kept.

fairseq counts --patience (the validations since the best that did not improve on it) in its
should_stop_early function alone, so a resumed run counted afresh: every checkpoint now keeps the
count beside the epoch iterator's state (``PATIENCE``), and the resumed run goes on from it
(``restore_the_patience``) where it keeps the checkpoint's best score; a run that forgets that
score (--finetune-from-model, a reset without a checkpoint_best.pt to keep it by) counts afresh.
"""

import contextlib
import hashlib
import os
import sys
import time
import traceback
from typing import Iterable, Optional

import numpy as np
from fairseq import checkpoint_utils
from fairseq.data.iterators import EpochBatchIterator
from fairseq.optim.lr_scheduler import FairseqLRScheduler

from . import errors
from .checkpoint_safety import fairseqs_load_checkpoint, trainers_loading

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
        there, here = precision_flag(trained.get("common")), precision_flag(run_cfg.common)
    filename = given["filename"]
    return (
        f"{_trained_otherwise(filename, there, here)}; to train with {here} from its parameters, "
        f"give this run a new --save-dir and --finetune-from-model {filename} (--reset-optimizer "
        "would reset the optimizer, and the count of updates to 0, again at every launch)"
    )


def _trained_otherwise(checkpoint: str, there: str, here: str) -> str:
    """The start of a line for a checkpoint trained with an option (there) whose state this run's
    (here) cannot take."""
    return (
        f"cannot resume from {checkpoint}: it was trained with {there} and this run with {here}, "
        f"whose state cannot continue it; to continue that training, resume it with {there}"
    )


def other_lr_scheduler(error: BaseException) -> Optional[str]:
    """One line for fairseq-train's KeyError (KeyError: 'best') from its learning-rate scheduler's
    load_state_dict: the checkpoint was trained with another --lr-scheduler (fairseq's default,
    fixed, keeps its learning rate only), whose state this run's cannot read."""
    loading = trainers_loading()
    if not isinstance(error, KeyError) or loading is None or not _in_a_schedulers_loading(error):
        return None
    given = errors.locals_where(error, loading)
    if given is None:
        return None
    saved = _name(given["state"]["cfg"].get("lr_scheduler"))
    run = _name(given["self"].cfg.lr_scheduler)
    if saved is None or saved == run:
        return None
    there, here = f"--lr-scheduler {saved}", f"--lr-scheduler {run}"
    return (
        f"{_trained_otherwise(given['filename'], there, here)}; to schedule it with {run} from "
        "here, add --reset-lr-scheduler (fairseq reads it at every launch, so each rerun starts "
        f"{run}'s state afresh; the learning rate of most schedulers follows the number of "
        "updates, which is kept)"
    )


def _in_a_schedulers_loading(error: BaseException) -> bool:
    """Whether error was raised in the load_state_dict of a learning-rate scheduler of fairseq's."""
    return any(
        frame.f_code.co_name == "load_state_dict"
        and isinstance(frame.f_locals.get("self"), FairseqLRScheduler)
        for frame, _ in traceback.walk_tb(error.__traceback__)
    )


# fairseq's half precisions, whose optimizer fairseq wraps in one of its own (FP16Optimizer, ...)
PRECISIONS = ("memory_efficient_fp16", "memory_efficient_bf16", "fp16", "bf16", "amp")


def precision_flag(common) -> str:
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


# The key of the fingerprint of an epoch's batches in the state of fairseq's epoch iterator that a
# checkpoint keeps (extra_state["train_iterator"]): fairseq's load_state_dict reads its own only.
EPOCHS_BATCHES = "bahdanau_epochs_batches"


def fingerprint_of_batches(batches: Iterable) -> str:
    """The SHA-256 digest of batches in order, each a sequence of the indices of its pairs."""
    digest = hashlib.sha256()
    for batch in batches:
        indices = np.asarray(batch, dtype=np.int64)
        digest.update(len(indices).to_bytes(8, "little"))
        digest.update(indices.tobytes())
    return digest.hexdigest()


def epochs_batches(epoch_itr, shuffle: bool) -> Optional[str]:
    """The fingerprint of the batches of epoch_itr's epoch in the order this worker goes through
    them: fairseq's own (ordered_batches: shuffled with --seed and the epoch, then this worker's
    shard). None for an iterator of another kind, or over a dataset that fairseq prefetches, which
    ordering the batches would prefetch."""
    if type(epoch_itr) is not EpochBatchIterator or epoch_itr._supports_prefetch:
        return None
    # fix_batches_to_gpus orders prefetched datasets only; load_state_dict leaves it False too
    return fingerprint_of_batches(epoch_itr.ordered_batches(epoch_itr.epoch, False, shuffle))


# The key of --patience's count in the state of fairseq's epoch iterator that a checkpoint keeps:
# fairseq-train keeps the best validation score that count starts from, and the validations since
# it that did not improve on it, as attributes of its should_stop_early function alone, so a
# resumed run counted afresh from its first validation, however far below the best: killed and
# resumed, a training ran on past the --patience it would have stopped at.
PATIENCE = "bahdanau_patience"


@contextlib.contextmanager
def batches_made_as_in_the_first_epoch(task, seeded_per_epoch: bool):
    """While fairseq-train loads its checkpoint and makes its training iterator: where fairseq keeps
    that iterator for every epoch after (its batches made once, then shuffled per epoch), it makes
    the batches as a run started in epoch 1 made them. fairseq orders the pairs under the numpy
    seed --seed + the epoch the run starts in (FairseqTask.get_batch_iterator), so a run resumed in
    epoch 2 or later batched the pairs otherwise than the run it continues, and went on, after the
    checkpoint's number of batches, through other batches than an uninterrupted run, for every
    epoch after. Under --update-ordered-indices-seed (``seeded_per_epoch``) fairseq-train also
    adds that epoch to the seed it passes (Trainer.get_train_iterator): the seed is then made as in
    epoch 1 too. The checkpoint's state of the iterator then puts it in its epoch and batch. An
    iterator made again each epoch (sharded data, --update-epoch-batch-itr) is made for its epoch,
    as fairseq makes it."""
    get_batch_iterator = task.get_batch_iterator

    def as_in_the_first_epoch(*args, **kwargs):
        dataset = kwargs["dataset"] if "dataset" in kwargs else args[0]
        made_again = kwargs.get("disable_iterator_cache") or kwargs.get("update_epoch_batch_itr")
        if not made_again and task.can_reuse_epoch_itr(dataset):  # fairseq's reuse
            if seeded_per_epoch:  # fairseq-train passes both by keyword
                kwargs["seed"] -= kwargs["epoch"] - 1
            kwargs["epoch"] = 1
        return get_batch_iterator(*args, **kwargs)

    task.get_batch_iterator = as_in_the_first_epoch
    try:
        yield
    finally:
        task.get_batch_iterator = get_batch_iterator


def patience_so_far() -> Optional[dict]:
    """--patience's count as fairseq-train holds it (after the validation being saved), None
    before any validation or where fairseq-train's module is not loaded."""
    train = sys.modules.get("fairseq_cli.train")
    stop = getattr(train, "should_stop_early", None)
    if getattr(stop, "best", None) is None:
        return None
    return {"best": stop.best, "num_runs": stop.num_runs}


def count_the_training_time_afresh(trainer) -> None:
    """--finetune-from-model starts another training from a checkpoint's parameters (its
    optimizer, scheduler, meters and epochs afresh), but fairseq's trainer took the checkpoint's
    training time as its own (extra_state's previous_training_time): --stop-time-hours counted
    the other training's hours too, and a fine-tuning stopped after its first update where that
    one had trained longer. Its clock starts at 0, as fairseq starts it at loading."""
    trainer._previous_training_time = 0
    trainer._start_time = time.time()


def train_nothing_where_the_training_is_done(trainer) -> Optional[str]:
    """Where the checkpoint resumed has reached --max-update, or trained past --stop-time-hours: no
    epoch is trained, and the line that says so, None where the run trains on. fairseq checks its
    limits after an update, not before the first, so the same command run again after it stopped
    trained one update more and saved it over checkpoint_last.pt, and one more at each run (a
    script that reruns every stage changed its finished model without a word). fairseq-train
    reads --max-epoch after the load (``cfg.optimization.max_epoch or math.inf``), and trains no
    epoch under a negative one."""
    optimization = trainer.cfg.optimization
    updates, hours = trainer.get_num_updates(), trainer.cumulative_training_time() / 3600
    if 0 < optimization.max_update <= updates:
        reached = f"{updates} updates, --max-update {optimization.max_update}"
    elif 0 < optimization.stop_time_hours < hours:
        reached = f"{hours:.2f} hours of training, --stop-time-hours {optimization.stop_time_hours}"
    else:
        return None
    optimization.max_epoch = -1
    return (
        f"this training is done ({reached}): nothing is trained and its checkpoints stay as "
        "they are; to train on, give a larger limit"
    )


def restore_the_patience(extra_state) -> None:
    """--patience's count from the checkpoint fairseq-train resumed (extra_state), where it holds
    one and the run keeps the checkpoint's best score, so that the run stops where an
    uninterrupted one would. Where the run forgets that score (--finetune-from-model, or
    --reset-optimizer or --reset-meters without a checkpoint_best.pt to keep it by), it starts
    another training from the checkpoint's parameters, and its count starts afresh, as its
    checkpoint_best.pt does: counted from another training's best, on another validation set
    perhaps, it stopped as soon as --patience validations fell short of that."""
    train = sys.modules.get("fairseq_cli.train")
    if train is None:
        return
    saved = ((extra_state or {}).get("train_iterator") or {}).get(PATIENCE)
    if saved is not None and _keeps_the_best_score(extra_state):
        train.should_stop_early.best = saved["best"]
        train.should_stop_early.num_runs = saved["num_runs"]
    else:  # fairseq's should_stop_early reads a best of None as none yet
        train.should_stop_early.best = None


def _keeps_the_best_score(extra_state) -> bool:
    """Whether the run that resumed extra_state keeps its best validation score: fairseq's
    load_checkpoint gave it to save_checkpoint (the checkpoint's own value, without
    --reset-optimizer, --reset-meters or --finetune-from-model), or keep_the_best_score will,
    on the rank that saves; every rank must count --patience alike, so this is decided on every
    rank from the run's options, read from the frame of fairseq-train's main that resumes."""
    if _given_by_fairseq(extra_state):
        return True
    run = _fairseq_trains()
    return run is not None and _checkpoint_best_kept_through(*run, extra_state) is not None


def _given_by_fairseq(extra_state) -> bool:
    """Whether fairseq's load_checkpoint gave save_checkpoint the best score of the checkpoint it
    resumed (extra_state): it does without --reset-optimizer, --reset-meters or
    --finetune-from-model, and gives the checkpoint's own value, not one left by a training before
    this one in the process (a hydra multirun's job), which may be equal."""
    best = (extra_state or {}).get("best")
    return best is not None and getattr(checkpoint_utils.save_checkpoint, "best", None) is best


def _fairseq_trains() -> Optional[tuple]:
    """The checkpoint configuration and the checkpoints' suffix of the fairseq-train run whose
    main called this, None where none did."""
    main = getattr(sys.modules.get("fairseq_cli.train"), "main", None)
    frame = sys._getframe(1)
    while frame is not None and (main is None or frame.f_code is not main.__code__):
        frame = frame.f_back
    if frame is None or "trainer" not in frame.f_locals:
        return None
    return frame.f_locals["cfg"].checkpoint, frame.f_locals["trainer"].checkpoint_suffix


class RecordingTheEpochsBatches:
    """fairseq's epoch iterator as save_checkpoint reads it, whose state, saved mid-epoch, also
    holds the fingerprint of the epoch's batches (EPOCHS_BATCHES), and at every save --patience's
    count (PATIENCE). Saved at an epoch's end, the state names the next epoch from its start,
    whatever its batches."""

    def __init__(self, epoch_itr):
        self._epoch_itr = epoch_itr

    def __getattr__(self, name):
        return getattr(self._epoch_itr, name)

    def state_dict(self) -> dict:
        state = self._epoch_itr.state_dict()
        if (patience := patience_so_far()) is not None:
            state[PATIENCE] = patience
        if state.get("iterations_in_epoch", 0) > 0:
            batches = epochs_batches(self._epoch_itr, state.get("shuffle", True))
            if batches is not None:
                state[EPOCHS_BATCHES] = batches
        return state


def other_batches_than_saved(checkpoint: str, extra_state, epoch_itr) -> Optional[str]:
    """A line for a run that resumed checkpoint mid-epoch (epoch_itr, as fairseq's load_checkpoint
    returned it, after the batches the checkpoint had gone through) through other batches than
    those the checkpoint recorded; None where they are the same, where it resumed at an epoch's
    start (also after --reset-dataloader), or where the checkpoint recorded none (saved before)."""
    state = (extra_state or {}).get("train_iterator") or {}
    recorded, done = state.get(EPOCHS_BATCHES), epoch_itr.iterations_in_epoch
    if recorded is None or done == 0:
        return None
    if epochs_batches(epoch_itr, state.get("shuffle", True)) in (recorded, None):
        return None
    epoch = epoch_itr.epoch
    return (
        f"{checkpoint} was saved after batch {done} of epoch {epoch}, of other batches than this "
        "run's (another --batch-size, --max-tokens, --max-train-length, --seed, number of "
        "workers, or a training split binarized anew): this run goes on after its own batch "
        f"{done}, so epoch {epoch} leaves out pairs that the checkpoint had not reached and trains "
        "on others twice; to continue the epoch as it was, resume with the options and data it "
        "was trained with (the epochs after it are whole either way)"
    )


def _resets_forgetting_the_best(cfg) -> list:
    """The options of fairseq-train (its checkpoint configuration, cfg) that make fairseq forget
    the best validation score of the checkpoint it resumes."""
    given = (("--reset-optimizer", cfg.reset_optimizer), ("--reset-meters", cfg.reset_meters))
    return [option for option, reset in given if reset]


def _checkpoint_best_kept_through(cfg, suffix: str, extra_state) -> Optional[str]:
    """The checkpoint_best.pt by which a run resuming extra_state with a reset that forgets its
    best score keeps that score (the --save-dir holds it); None elsewhere."""
    best = (extra_state or {}).get("best")
    checkpoint_best = os.path.join(cfg.save_dir, f"checkpoint_best{suffix}.pt")
    if not _resets_forgetting_the_best(cfg) or best is None or not os.path.exists(checkpoint_best):
        return None
    return checkpoint_best


def keep_the_best_score(cfg, suffix: str, extra_state) -> Optional[str]:
    """Where fairseq-train (its checkpoint configuration, cfg) resumed a checkpoint with
    --reset-optimizer or --reset-meters, which make fairseq forget its best validation score, into
    a --save-dir holding checkpoint_best.pt: the score kept for fairseq's save_checkpoint, and the
    line that says so; None elsewhere. Where the run keeps no score of its checkpoint (none
    resumed, or forgotten), save_checkpoint forgets any left by a training before this one in the
    process: fairseq keeps the best score on that function alone and sets it only as it resumes
    one, so that the second job of a hydra multirun, in a --save-dir of its own, compared its
    validations with the first job's best and wrote no checkpoint_best.pt until one beat it."""
    checkpoint_best = _checkpoint_best_kept_through(cfg, suffix, extra_state)
    if checkpoint_best is None:
        if not _given_by_fairseq(extra_state):
            vars(checkpoint_utils.save_checkpoint).pop("best", None)
        return None
    best = extra_state["best"]
    checkpoint_utils.save_checkpoint.best = best
    return (
        f"kept the best {cfg.best_checkpoint_metric} so far, {best}, which "
        f"{' and '.join(_resets_forgetting_the_best(cfg))} would forget: {checkpoint_best} is "
        "replaced only by a checkpoint that validates better (move it aside to start the best "
        "afresh)"
    )


errors.EXPLANATIONS.extend([other_optimizer, other_lr_scheduler, fewer_batches_in_the_epoch])
