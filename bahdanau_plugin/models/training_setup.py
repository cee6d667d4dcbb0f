"""fairseq options under which these models would train wrongly, refused in one line; and one
that would do nothing, said in a warning (max_tokens_never_binding).

The alignment model keeps its parameters and gradients in float32 under half precision
(modules/full_precision.py): at the paper's start v_a's gradient is below float16's smallest number
(docs/precision.md). Three of fairseq's ways of handling gradients would round those float32
gradients anyway; each is refused with the option that works instead. The model reads fairseq's
options from the run's configuration (the interpolated fields of ``RecurrentTranslationConfig``,
as fairseq's wav2vec models read ``ddp_backend``) and checks them when it first trains, so a
checkpoint trained under any options still loads for translation.
"""

import ast
import dataclasses
import json
from collections.abc import Sequence
from typing import Any, Optional, Tuple

from fairseq import utils
from fairseq.dataclass.configs import GenerationConfig
from fairseq.optim.lr_scheduler.fixed_schedule import FixedLRScheduleConfig
from omegaconf import ListConfig, OmegaConf

from ..errors import ConfigurationError
from .unknown_options import nearest_first

HALF_PRECISION_OPTIONS = ("fp16", "bf16", "memory_efficient_fp16", "memory_efficient_bf16")
# Backends that all-reduce every gradient in one buffer typed like the model's first parameter.
ONE_BUFFER_BACKENDS = ("legacy_ddp", "no_c10d")
# Backends that need fairscale, never run with these models' mixed-precision parameters.
UNCHECKED_BACKENDS = ("fully_sharded", "slowmo")


def run_option(cfg, name: str) -> Optional[Any]:
    """The run's value of a fairseq option, or None where the configuration does not say: a model
    built outside fairseq's tools, or from a checkpoint saved before the models read it."""
    try:
        value = getattr(cfg, name, None)
    except Exception:  # an interpolation with nothing to resolve against
        return None
    if isinstance(value, str) and value.startswith("${"):
        return None
    return value


def task_option(cfg, name: str) -> Optional[Any]:
    """The value of the run's task option, None where it has none: the task block is a
    DictConfig for a task of a dataclass (translation), but fairseq keeps the options of its
    legacy tasks (translation_multi_simple_epoch) in the argparse Namespace they were read into,
    which has no .get."""
    return getattr(cfg.get("task"), name, None)


def check(cfg) -> None:
    """Raise a ConfigurationError that names what works, if the run's options would round the
    alignment model's float32 gradients."""
    half = [name for name in HALF_PRECISION_OPTIONS if run_option(cfg, name)]
    distributed = (run_option(cfg, "distributed_world_size") or 1) > 1
    backend = run_option(cfg, "ddp_backend")
    if distributed and half and backend in ONE_BUFFER_BACKENDS:
        raise ConfigurationError(
            f"--ddp-backend {backend} with --{_flag(half[0])} all-reduces every gradient through "
            "one half-precision buffer, which rounds the alignment model's float32 gradients "
            "(v_a's vanish at the paper's start): use --ddp-backend pytorch_ddp (fairseq's "
            "default), which reduces float32 gradients in float32"
        )
    if distributed and half and backend in UNCHECKED_BACKENDS:
        raise ConfigurationError(
            f"--ddp-backend {backend} with --{_flag(half[0])} has not been checked with the "
            "alignment model's float32 parameters: use --ddp-backend pytorch_ddp (fairseq's "
            "default)"
        )
    if distributed and run_option(cfg, "ddp_comm_hook") == "fp16":
        raise ConfigurationError(
            "--ddp-comm-hook fp16 sends every gradient as float16, which flushes the alignment "
            "model's small float32 gradients to 0 (v_a's are about 1e-10 at the paper's start): "
            "drop --ddp-comm-hook"
        )
    memory_efficient = [name for name in half if name.startswith("memory_efficient")]
    if memory_efficient and utils.multi_tensor_l2norm_available:
        raise ConfigurationError(
            f"--{_flag(memory_efficient[0])}: with NVIDIA apex installed, fairseq computes the "
            "gradient norm with apex's multi_tensor_l2norm, which reads every gradient as the "
            "first one's type and so misreads the alignment model's float32 gradients among the "
            f"half-precision ones: use --{_flag(memory_efficient[0]).split('-')[-1]}, which keeps "
            "float32 master weights"
        )


def per_epoch(cfg, option: str) -> list:
    """An optimization option that takes a value per epoch (--lr, --update-freq), as given; one
    value alone where it is no list (fairseq-hydra-train's optimizer.lr=0.1 interpolated into
    optimization.lr, which fairseq's own check then refuses as no list)."""
    optimization = cfg.get("optimization")
    value = optimization.get(option) if optimization is not None else None
    if value is None:
        return []
    return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else [value]


def refuse_an_update_freq_under_one(cfg) -> None:
    """fairseq-train sums the gradients of --update-freq batches into each update (a number per
    epoch, the last for the epochs after it); it never checks that number. At 0 it divided by zero
    in a traceback as the epoch began; under 0 it failed there too, or (--log-format none) went
    through the epoch without an update and failed after it. Checked as the options are read,
    before anything is loaded (fairseq_patches.read_the_options_as_given), for every epoch's
    number: a later epoch's would otherwise fail only once the epochs before it had trained."""
    counts = per_epoch(cfg, "update_freq")
    if any(count < 1 for count in counts):
        raise ConfigurationError(
            f"--update-freq {','.join(map(str, counts))}: each update sums the gradients of "
            "that many batches (a number per epoch), so give 1 or more (1, the default, updates "
            "after every batch; optimization.update_freq under fairseq-hydra-train)"
        )


# Validation metrics whose better value is known: (name, whether higher is better). BLEU is the
# translation task's under --eval-bleu; the others, fairseq's cross-entropy criteria's (accuracy,
# label_smoothed_cross_entropy's under --report-accuracy: the percentage of target tokens right).
METRIC_DIRECTIONS = {"bleu": True, "accuracy": True, "loss": False, "nll_loss": False, "ppl": False}
# What fairseq's trainer logs at every validation beside the criterion's metrics.
TRAINERS_VALIDATION_COUNTS = ["wps", "wpb", "bsz", "num_updates"]


def metrics_validation_logs(cfg) -> Optional[list]:
    """The metrics a run's validation logs, which --best-checkpoint-metric can name, where its
    criterion is one of fairseq's cross-entropy criteria (their reduce_metrics): cross_entropy
    logs nll_loss only where the loss is averaged over sentences (--sentence-avg), otherwise the
    loss is the NLL already; label_smoothed_cross_entropy logs it always, and accuracy under
    --report-accuracy; --eval-bleu adds bleu. None for any other criterion, whose metrics the
    plugin cannot know."""
    criterion, optimization = cfg.get("criterion"), cfg.get("optimization")
    name = criterion if isinstance(criterion, str) else getattr(criterion, "_name", None)
    if name == "cross_entropy":
        averaged_over_sentences = optimization is not None and optimization.get("sentence_avg")
        logged = ["loss", "nll_loss", "ppl"] if averaged_over_sentences else ["loss", "ppl"]
    elif name == "label_smoothed_cross_entropy":
        accuracy = ["accuracy"] if criterion.get("report_accuracy") else []
        logged = ["loss", "nll_loss", "ppl", *accuracy]
    else:
        return None
    bleu = ["bleu"] if task_option(cfg, "eval_bleu") else []
    return [*logged, *bleu, *TRAINERS_VALIDATION_COUNTS]


def refuse_a_best_checkpoint_metric_it_cannot_read(cfg) -> None:
    """fairseq-train keeps as checkpoint_best.pt, and counts --patience by, the validation's
    --best-checkpoint-metric, the lower the better unless --maximize-best-checkpoint-metric is
    given; it never checks either. --best-checkpoint-metric bleu alone kept the checkpoint of the
    lowest BLEU, and --patience counted each validation above the lowest as no better, without a
    word; without --eval-bleu, which computes it, the first validation failed in a KeyError, the
    epoch before it unsaved, and so did any metric the validation does not log (a typo, "los";
    nll_loss under cross_entropy without --sentence-avg). Checked as the options are read
    (fairseq_patches.read_the_options_as_given)."""
    checkpoint = cfg.get("checkpoint")
    metric = checkpoint.get("best_checkpoint_metric") if checkpoint is not None else None
    if metric == "bleu" and not task_option(cfg, "eval_bleu"):
        raise ConfigurationError(
            "--best-checkpoint-metric bleu: validation computes BLEU only with --eval-bleu: add "
            "it (task.eval_bleu=true under fairseq-hydra-train), with "
            "--maximize-best-checkpoint-metric"
        )
    logged = metrics_validation_logs(cfg)
    if metric is not None and logged is not None and metric not in logged:
        why = " (cross_entropy logs nll_loss only with --sentence-avg)" * (metric == "nll_loss")
        raise ConfigurationError(
            f"--best-checkpoint-metric {metric}: validation logs no {metric} here{why}, and "
            "fairseq-train would end in a KeyError at the first validation, its training "
            f"unsaved: give one it logs, {', '.join(nearest_first(metric, logged))} "
            "(checkpoint.best_checkpoint_metric under fairseq-hydra-train)"
        )
    if metric not in METRIC_DIRECTIONS:
        return
    higher_is_better = METRIC_DIRECTIONS[metric]
    if bool(checkpoint.get("maximize_best_checkpoint_metric")) != higher_is_better:
        kept, wanted = ("lowest", "add") if higher_is_better else ("highest", "drop")
        raise ConfigurationError(
            f"--best-checkpoint-metric {metric} with{'out' * higher_is_better} "
            f"--maximize-best-checkpoint-metric would keep the checkpoint of the {kept} "
            f"{metric} as checkpoint_best.pt (and --patience count the validations that "
            f"improve on it as no better{shrinking_as_it_improves(cfg)}): {wanted} "
            "--maximize-best-checkpoint-metric "
            "(checkpoint.maximize_best_checkpoint_metric under fairseq-hydra-train)"
        )


def shrinking_as_it_improves(cfg) -> str:
    """What --lr-scheduler reduce_lr_on_plateau would do with a --best-checkpoint-metric read the
    wrong way round, for the line that refuses it: the scheduler reads the metric in the same
    direction (fairseq's train.py gives it the validation's value), and so shrank the learning
    rate at every validation that improved on the best."""
    scheduler = cfg.get("lr_scheduler")
    name = scheduler if isinstance(scheduler, str) else getattr(scheduler, "_name", None)
    if name != "reduce_lr_on_plateau":
        return ""
    return ", and --lr-scheduler reduce_lr_on_plateau shrink the learning rate as it improves"


# What fairseq's generation takes: the options of --eval-bleu-args, which the translation task
# builds its validation search from.
GENERATION_OPTIONS = [field.name for field in dataclasses.fields(GenerationConfig)][1:]  # no _name


def refuse_eval_bleu_args_the_search_cannot_read(cfg) -> None:
    """--eval-bleu-args is JSON that fairseq's translation task reads as the options of the search
    that translates the validation split (beam, max_len_b, lenpen, ...), without a check: a key
    that no generation option has (a typo, {"beem": 12}) was never read, and the search ran with
    fairseq's default instead (a beam of 5), without a word; text that is not a JSON object ended
    the run in a traceback. Checked as the options are read
    (fairseq_patches.read_the_options_as_given)."""
    given = task_option(cfg, "eval_bleu_args") if task_option(cfg, "eval_bleu") else None
    if given is None:
        return
    try:
        options = json.loads(given)
    except json.JSONDecodeError:
        options = None
    if not isinstance(options, dict):
        raise ConfigurationError(
            f"--eval-bleu-args {given}: give the validation search's options as a JSON object, "
            """'{"beam": 5}' (task.eval_bleu_args under fairseq-hydra-train)"""
        )
    unknown = [key for key in options if key not in GENERATION_OPTIONS]
    if unknown:
        raise ConfigurationError(
            f"--eval-bleu-args {given}: {unknown[0]} is not an option of fairseq's generation, "
            "and the validation search would run without it: it takes "
            f"{', '.join(nearest_first(unknown[0], GENERATION_OPTIONS)[:5])}, ...; correct "
            "the key or drop it"
        )


def refuse_tokenized_bleu_of_detokenized_text(cfg) -> None:
    """--eval-tokenized-bleu scores the validation's text as it is, split at spaces; under
    --eval-bleu-detok moses fairseq's translation task detokenizes it first, so the BLEU that chose
    checkpoint_best.pt was of detokenized words ("chat." one word), neither the tokenized BLEU
    asked for nor sacreBLEU, without a word. Checked as the options are read
    (fairseq_patches.read_the_options_as_given)."""
    if not (task_option(cfg, "eval_bleu") and task_option(cfg, "eval_tokenized_bleu")):
        return
    if task_option(cfg, "eval_bleu_detok") == "moses":
        raise ConfigurationError(
            "--eval-tokenized-bleu scores the validation's Moses tokens as they are, and "
            "--eval-bleu-detok moses detokenizes them first: BLEU would be of detokenized words "
            'split at spaces ("chat." one word); drop one (--eval-bleu-detok moses alone gives '
            "sacreBLEU, --eval-tokenized-bleu alone BLEU of the Moses tokens)"
        )


def detokenize_validation_in_the_target_language(task) -> Optional[str]:
    """Under --eval-bleu-detok moses, fairseq's translation task detokenizes the validation's
    translations and references with the Moses detokenizer of --eval-bleu-detok-args' target_lang,
    English unless given, whatever the target language: French came out "d' hommes" where the
    text had "d'hommes" (407 of Multi30k's 1,014 validation references), and BLEU moved with it
    (49.4 against sacreBLEU's 47.9 for the references less a quarter of their words). Where
    the option names no language, it is given the task's target language (read from the data-bin
    by now), before the task builds the detokenizer; the line that says so, None where nothing
    changes."""
    cfg = getattr(task, "cfg", None)
    if not getattr(cfg, "eval_bleu", False) or cfg.eval_bleu_detok != "moses":
        return None
    detokenizer_options = json.loads(cfg.eval_bleu_detok_args or "{}")
    language = cfg.target_lang
    if "target_lang" in detokenizer_options or language in (None, "en"):
        return None
    cfg.eval_bleu_detok_args = json.dumps({**detokenizer_options, "target_lang": language})
    return (
        f"--eval-bleu-detok moses detokenizes the validation's translations and references as "
        f"{language}, the target language (fairseq's default is en): --eval-bleu-detok-args "
        f"{cfg.eval_bleu_detok_args}"
    )


def refuse_a_truncation_the_length_limit_undoes(cfg) -> None:
    """--truncate-source cuts every source at the translation task's --max-source-positions
    (1,024 unless given) before fairseq filters the pairs by the models' length limit
    (--max-train-length, the 30 or 50 of a named architecture): a source between the two was
    left out of training (fairseq's warning "N samples have invalid sizes", which names neither
    option), not cut, so the option cut nothing these models train on, and validation stopped at
    such a pair. Checked as the options are read, the architecture applied
    (fairseq_patches.read_the_options_as_given)."""
    if not task_option(cfg, "truncate_source"):
        return
    limit = cfg.get("model").get("max_train_length")
    cut_at = task_option(cfg, "max_source_positions")
    if limit is None or cut_at is None or cut_at <= limit + 1:
        return
    raise ConfigurationError(
        f"--truncate-source cuts sources at --max-source-positions {cut_at}, but these models "
        f"leave out every pair of more than {limit} tokens a side (--max-train-length), so it "
        f"would cut none of those they train on: give --max-source-positions {limit + 1} (the "
        "limit and the end of sentence) to train on long sources cut, or drop --truncate-source "
        "(task.max_source_positions under fairseq-hydra-train)"
    )


# fairseq's batch sizes: (the dataset option, its flag, what a batch holds that many of)
BATCH_SIZES = (
    ("batch_size", "sentences"),
    ("max_tokens", "tokens"),
    ("batch_size_valid", "validation sentences"),
    ("max_tokens_valid", "validation tokens"),
)


def refuse_a_batch_size_under_one(cfg) -> None:
    """fairseq batches a split by --batch-size sentences and --max-tokens tokens and never checks
    either: at 0 or under, it read the limit as none and trained on the whole split in one batch
    (bsz 300 of a split of 300), one update an epoch, without a word. Checked as the options are
    read (fairseq_patches.read_the_options_as_given), the validation's sizes too."""
    dataset = cfg.get("dataset")
    for option, held in BATCH_SIZES:
        size = dataset.get(option) if dataset is not None else None
        if size is not None and size < 1:
            raise ConfigurationError(
                f"--{_flag(option)} {size}: a batch holds up to that many {held}, so give 1 or "
                f"more (dataset.{option} under fairseq-hydra-train)"
            )


def refuse_patience_without_validation(cfg) -> None:
    """fairseq-train stops early after --patience validations that did not improve on the best,
    and counts none where there is no validation: --patience with --disable-validation trained
    to --max-epoch or --max-update without a word. Checked as the options are read
    (fairseq_patches.read_the_options_as_given)."""
    checkpoint, dataset = cfg.get("checkpoint"), cfg.get("dataset")
    patience = checkpoint.get("patience") if checkpoint is not None else None
    if patience is not None and patience > 0 and dataset is not None:
        if dataset.get("disable_validation"):
            raise ConfigurationError(
                f"--patience {patience} with --disable-validation: patience counts validations "
                "that did not improve, and there are none, so training would never stop early: "
                "drop one of them (checkpoint.patience, dataset.disable_validation under "
                "fairseq-hydra-train)"
            )


def refuse_a_plateau_schedule_without_validation(cfg) -> None:
    """--lr-scheduler reduce_lr_on_plateau shrinks the learning rate where the validation's metric
    stops improving, and with --disable-validation there is none: the rate never changed, without
    a word (fairseq's own, its lstm too). Checked as the options are read
    (fairseq_patches.read_the_options_as_given)."""
    scheduler, dataset = cfg.get("lr_scheduler"), cfg.get("dataset")
    name = scheduler if isinstance(scheduler, str) else getattr(scheduler, "_name", None)
    if name == "reduce_lr_on_plateau" and dataset is not None and dataset.get("disable_validation"):
        raise ConfigurationError(
            "--lr-scheduler reduce_lr_on_plateau with --disable-validation: the scheduler shrinks "
            "the learning rate where validation stops improving, and there is none, so the rate "
            "would never change: drop one of them (lr_scheduler._name, "
            "dataset.disable_validation under fairseq-hydra-train)"
        )


def refuse_a_negative_learning_rate(cfg) -> None:
    """fairseq's adam, nag and adafactor check no --lr, and stepped up the gradient under a
    negative one: the loss rose, without a word (fairseq's own, its lstm too; torch's adadelta,
    sgd and adagrad refuse it as they are built, fairseq_errors.optimizer_option_torch_refuses).
    Checked as the options are read (fairseq_patches.read_the_options_as_given), every epoch's
    rate."""
    rates = per_epoch(cfg, "lr")
    if any(rate < 0 for rate in rates):
        raise ConfigurationError(
            f"--lr {','.join(map(str, rates))}: a negative learning rate steps up the gradient, "
            "and the loss would rise: give rates of 0 or more (optimization.lr under "
            "fairseq-hydra-train)"
        )


def refuse_a_shrink_the_fixed_schedule_never_applies(cfg) -> None:
    """--lr-scheduler fixed (fairseq-train's default) shrinks the rate by --lr-shrink every epoch
    from --force-anneal N on, and without --force-anneal never: --lr-shrink 0.5 alone trained at
    the same rate throughout, without a word (fairseq's own, its lstm too). Checked as the options
    are read (fairseq_patches.read_the_options_as_given); fairseq-train fills in --lr-shrink's
    default before then, so a shrink given at that default (0.1) cannot be told from none."""
    scheduler = cfg.get("lr_scheduler")
    name = scheduler if isinstance(scheduler, str) else getattr(scheduler, "_name", None)
    if name != "fixed" or scheduler.get("force_anneal") is not None:
        return
    shrink = scheduler.get("lr_shrink")
    if shrink is not None and shrink != FixedLRScheduleConfig.lr_shrink:
        raise ConfigurationError(
            f"--lr-shrink {shrink} does nothing under --lr-scheduler fixed without --force-anneal "
            "N, the epoch from which the rate shrinks by it every epoch: give --force-anneal, or "
            "drop --lr-shrink (lr_scheduler.force_anneal under fairseq-hydra-train)"
        )


def two_decay_rates(betas) -> bool:
    """Whether betas is what Adam takes: two numbers, each at least 0 and under 1."""
    return (
        isinstance(betas, (tuple, list))
        and len(betas) == 2
        and all(isinstance(beta, (int, float)) and 0 <= beta < 1 for beta in betas)
    )


def adam_betas_refused(betas) -> str:
    return (
        f"--adam-betas {betas}: Adam takes two decay rates, each at least 0 and under 1, written "
        "as a Python tuple: --adam-betas '(0.9, 0.999)', fairseq's default "
        "(optimizer.adam_betas under fairseq-hydra-train)"
    )


def refuse_adam_betas_adam_cannot_take(cfg) -> None:
    """fairseq's Adam evaluates --adam-betas as it is built and checks nothing: a first rate of 1
    or more ('(1.5, 0.999)') trained, weighting old gradients above new ones, without a word
    (fairseq's own, its lstm too); one rate, three, or a second rate of 1 or more failed at the
    first update, data and model loaded, in a traceback that fairseq_errors explains. Checked as
    the options are read (fairseq_patches.read_the_options_as_given), where the text is a Python
    literal; other text is left to fairseq's evaluation and that explanation."""
    optimizer = cfg.get("optimizer")
    name = optimizer if isinstance(optimizer, str) else getattr(optimizer, "_name", None)
    given = optimizer.get("adam_betas") if name == "adam" else None
    if isinstance(given, ListConfig):  # a list in fairseq-hydra-train's configuration
        betas = OmegaConf.to_container(given)
    else:
        try:
            betas = ast.literal_eval(given) if isinstance(given, str) else None
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            return
    if betas is not None and not two_decay_rates(betas):
        raise ConfigurationError(adam_betas_refused(given if isinstance(given, str) else betas))


def refuse_training_on_a_split_it_validates(cfg) -> None:
    """fairseq reads a split through one epoch iterator however many roles it has: with
    --train-subset valid validated too (--valid-subset valid), each validation took the training's
    epoch, so that --max-epoch 1 trained nothing ("done training in 0.0 seconds") and 4 trained 2
    updates, without a word (fairseq's own, its lstm too). Checked as the options are read
    (fairseq_patches.read_the_options_as_given)."""
    dataset = cfg.get("dataset")
    if dataset is None or dataset.get("disable_validation"):
        return
    trained, validated = dataset.get("train_subset"), str(dataset.get("valid_subset") or "")
    if trained is not None and trained in validated.split(","):
        raise ConfigurationError(
            f"--train-subset {trained} is validated too (--valid-subset {validated}): fairseq "
            "reads a split through one epoch iterator, and each validation would use up a "
            "training epoch: validate on another split, or give --disable-validation "
            "(dataset.train_subset, dataset.valid_subset under fairseq-hydra-train)"
        )


def refuse_a_first_shard_repeated_no_times(cfg) -> None:
    """--upsample-primary N repeats the first shard of a split in shards (train beside train1) N
    times; at 0 fairseq trained on the other shards alone, the first (most often the main corpus)
    left out without a word (fairseq's own, its lstm too). Checked as the options are read
    (fairseq_patches.read_the_options_as_given)."""
    if task_option(cfg, "upsample_primary") == 0:
        raise ConfigurationError(
            "--upsample-primary 0 repeats the first shard of a split in shards 0 times, and "
            "fairseq would train on the others alone: give 1 (each shard once) or more "
            "(task.upsample_primary under fairseq-hydra-train)"
        )


def read_a_resumed_checkpoint_in_every_process(cfg) -> None:
    """With several processes, every process reads the checkpoint it resumes or fine-tunes from
    (fairseq's --load-checkpoint-on-all-dp-ranks). fairseq's default reads it in rank 0 alone and
    sends it to the others, where torch's weights-only loading (torch 2.6 on) refuses the
    omegaconf configuration fairseq has made of the checkpoint's: every distributed run that
    resumed ended in a traceback (fairseq_errors.checkpoint_sent_to_the_other_processes says so
    for other models). Each process needs the file, as fairseq's own check that it is there does
    (Trainer.load_checkpoint): on several machines, a --save-dir they share. One process reads it
    as before."""
    distributed, checkpoint = cfg.get("distributed_training"), cfg.get("checkpoint")
    if checkpoint is not None and (distributed or {}).get("distributed_world_size", 1) > 1:
        checkpoint.load_checkpoint_on_all_dp_ranks = True


def refuse_ranks_outside_the_world(distributed, gpus: int) -> None:
    """The ranks a fairseq-train process starts, once fairseq has read its distributed options
    (distributed: its distributed_training block, the init method inferred), checked before the
    rendezvous. With --distributed-no-spawn, the process is --distributed-rank; without, it
    starts a process for each of the machine's gpus (up to the world size), ranked from
    --distributed-rank on. A rank outside the world (ranks 1 and 2 of 2, a first node numbered 1)
    made torch wait, in the rendezvous, for a rank 0 no one starts or for more processes than the
    world holds, for its store timeout of 30 minutes, without a word; and with no GPU to spawn
    for, fairseq started no process and ended at once, trained nothing and said nothing."""
    world, first = distributed.distributed_world_size, distributed.distributed_rank
    on_its_own = distributed.distributed_no_spawn
    started = 1 if on_its_own else min(gpus, world)
    if started == 0:
        raise ConfigurationError(
            f"--distributed-init-method {distributed.distributed_init_method} without "
            "--distributed-no-spawn starts a process for each GPU, and this machine has none: "
            "nothing would train; on CPUs, start each process yourself with --distributed-no-spawn "
            "and its own --distributed-rank (and --distributed-backend gloo)"
        )
    last = first + started - 1
    if 0 <= first and last < world:
        return
    outside = (
        f"--distributed-rank {first} is"
        if on_its_own
        else f"--distributed-rank {first} starts ranks {first} to {last} here (a process for "
        f"each of {started} GPUs),"
    )
    raise ConfigurationError(
        f"{outside} outside --distributed-world-size {world}, whose ranks are 0 to {world - 1}: "
        "torch would wait 30 minutes, without a word, for ranks no process has; give each "
        "process its own rank among them, rank 0 where --distributed-init-method points"
    )


def max_tokens_never_binding(cfg, max_positions: Tuple[int, int]) -> Optional[str]:
    """A line for a run whose --max-tokens no batch can reach: fairseq closes a batch at
    --batch-size sentences, or before the sentences, padded to the longest among them, would pass
    --max-tokens; with --batch-size sentences of at most the longest pair the run trains on
    (max_positions: the length limit, end of sentence included, or the task's) under it, the
    batches are the batch size's alone. The paper's recipes batch 80 sentences of at most 50 tokens
    a side: --max-tokens 8000 beside them changed nothing, without a word."""
    max_tokens, batch_size = run_option(cfg, "max_tokens"), run_option(cfg, "batch_size")
    if max_tokens is None or batch_size is None:
        return None
    longest = max(max_positions)
    if batch_size * longest > max_tokens:
        return None
    return (
        f"--max-tokens {max_tokens} never limits a batch here: --batch-size {batch_size} "
        f"sentences of at most {longest} tokens (the longest pair this run trains on, end of "
        f"sentence included) hold at most {batch_size * longest}, so --batch-size alone makes "
        f"the batches; for batches of up to {max_tokens} tokens, drop --batch-size "
        "(dataset.batch_size=null)"
    )


def _flag(option: str) -> str:
    return option.replace("_", "-")
