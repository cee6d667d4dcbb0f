"""A training split of which fairseq skips every pair, explained in one line.

fairseq-train skips the pairs over the model's length limit (``--max-train-length``; 30 and 50
tokens as binarized for the ``*_30`` and ``*_50`` architectures, BPE units included) or over
``--max-tokens``, and logs how many in a WARNING. Where it skips every one, it then fails in a
traceback: an IndexError as it batches nothing, or "The dataset is empty" where the few left fill
no batch.
"""

import inspect
import traceback
from typing import Optional

from fairseq.tasks import FairseqTask

from .. import errors

# get_batch_iterator's make_batches, which batches the pairs left after the skipped ones
BATCHING = [
    code for code in FairseqTask.get_batch_iterator.__code__.co_consts if inspect.iscode(code)
]
REMEDY = (
    "raise --max-train-length (its limit counts tokens as binarized, BPE units included) or "
    "--max-tokens, or check that the data-bin holds the sentences you meant"
)
TASKS_OPTIONS = ("--max-source-positions", "--max-target-positions")


def every_pair_skipped(error: BaseException) -> Optional[str]:
    if str(error).startswith("The dataset is empty"):
        return (
            "fairseq has no batch to train on: it skipped the split's pairs as too long (the "
            f"WARNING above counts them) and the few left fill no batch: {REMEDY}"
        )
    for frame, _ in traceback.walk_tb(error.__traceback__):
        if frame.f_code in BATCHING and len(frame.f_locals.get("indices", (None,))) == 0:
            lengths, tokens = frame.f_locals.get("max_positions"), frame.f_locals.get("max_tokens")
            within = f"the lengths {lengths} (source, target; end of sentence included)"
            if tokens is not None:
                within += f" and --max-tokens {tokens}"
            remedy = tasks_limits_named(frame.f_locals.get("self"), lengths) + REMEDY
            return f"fairseq skipped every pair of the split: none is within {within}: {remedy}"
    return None


def tasks_limits_named(task, lengths) -> str:
    """The translation task's options to raise first, where its limit is the one a side's length
    is (--max-source-positions 5, say, under the models' 51): the length limit is the smaller of
    the task's and the models' (fairseq's resolve_max_positions), and raising --max-train-length
    alone would leave the task's in place."""
    task_limits = getattr(task, "max_positions", lambda: None)()
    if not isinstance(task_limits, tuple) or not isinstance(lengths, tuple):
        return ""
    options = [
        f"{option} (now {limit:,})"
        for option, length, limit in zip(TASKS_OPTIONS, lengths, task_limits)
        if limit is not None and length == limit
    ]
    return f"raise {' and '.join(options)}, the translation task's limit; or " if options else ""


errors.EXPLANATIONS.append(every_pair_skipped)
