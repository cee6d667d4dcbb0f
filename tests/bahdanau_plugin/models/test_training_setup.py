"""The models refuse, when they first train, the fairseq options that would round the alignment
model's float32 gradients, in one line that names what works; a model built under any options
still translates. A --max-tokens that no batch can reach is one warning."""

import logging
import re

import pytest
import torch
import torch.distributed as dist
from fairseq import options, tasks, utils
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import LegacyDistributedDataParallel
from omegaconf import OmegaConf

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.models.training_setup import (
    refuse_a_batch_size_under_one,
    refuse_a_best_checkpoint_metric_it_cannot_read,
    refuse_eval_bleu_args_the_search_cannot_read,
    refuse_tokenized_bleu_of_detokenized_text,
    refuse_a_truncation_the_length_limit_undoes,
    refuse_an_update_freq_under_one,
    refuse_a_first_shard_repeated_no_times,
    refuse_a_negative_learning_rate,
    refuse_a_plateau_schedule_without_validation,
    refuse_adam_betas_adam_cannot_take,
    refuse_a_shrink_the_fixed_schedule_never_applies,
    refuse_patience_without_validation,
    refuse_training_on_a_split_it_validates,
    refuse_ranks_outside_the_world,
)

from ...support.assertions import assert_one_line_error
from ...support.paths import PLUGIN
from ...support.tools import tool_on_bytes
from ...support.training import train_command

SIZES = [
    "--encoder-embed-dim",
    "4",
    "--decoder-embed-dim",
    "4",
    "--encoder-hidden-dim",
    "4",
    "--decoder-hidden-dim",
    "4",
    "--attention-dim",
    "4",
    "--maxout-dim",
    "2",
]
TWO_WORKERS = ["--distributed-world-size", "2"]


def _task_and_model(data_bin, *flags):
    """The task and model as fairseq-train builds them, from fairseq's own parsing of options."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [str(data_bin), "--user-dir", PLUGIN, "--arch", "rnnsearch", *SIZES, *flags]
    )
    cfg = convert_namespace_to_omegaconf(args)
    task = tasks.setup_task(cfg.task)
    return task, task.build_model(cfg.model)


def _model(data_bin, *flags):
    return _task_and_model(data_bin, *flags)[1]


def _refusal(data_bin, *flags):
    model = _model(data_bin, *flags)
    with pytest.raises(ConfigurationError) as refused:
        model.train()
    return str(refused.value)


@pytest.mark.parametrize("backend", ["legacy_ddp", "no_c10d"])
@pytest.mark.parametrize("precision", ["--fp16", "--memory-efficient-fp16"])
def test_one_buffer_all_reduce_in_half_precision_is_refused(data_bin, backend, precision):
    message = _refusal(data_bin, precision, "--ddp-backend", backend, *TWO_WORKERS)
    assert f"--ddp-backend {backend}" in message
    assert "use --ddp-backend pytorch_ddp" in message


def test_the_fp16_communication_hook_is_refused(data_bin):
    message = _refusal(data_bin, "--ddp-comm-hook", "fp16", *TWO_WORKERS)
    assert "drop --ddp-comm-hook" in message


@pytest.mark.parametrize(
    "flags",
    [
        ["--fp16", *TWO_WORKERS],  # pytorch_ddp reduces float32 buckets in float32
        ["--fp16", "--ddp-backend", "legacy_ddp"],  # one worker: nothing is all-reduced
        ["--ddp-backend", "legacy_ddp", *TWO_WORKERS],  # float32 throughout
        ["--ddp-comm-hook", "fp16"],  # one worker: the hook never runs
    ],
    ids=["pytorch_ddp-fp16", "legacy_ddp-one-worker", "legacy_ddp-float32", "hook-one-worker"],
)
def test_options_that_keep_float32_gradients_train(data_bin, flags):
    assert _model(data_bin, *flags).train().training


def test_memory_efficient_half_precision_is_refused_where_apex_computes_the_norm(
    data_bin, monkeypatch
):
    monkeypatch.setattr(utils, "multi_tensor_l2norm_available", True)
    message = _refusal(data_bin, "--memory-efficient-fp16")
    assert "apex" in message and "use --fp16" in message


def test_memory_efficient_half_precision_trains_without_apex(data_bin, monkeypatch):
    monkeypatch.setattr(utils, "multi_tensor_l2norm_available", False)
    assert _model(data_bin, "--memory-efficient-fp16").train().training


def test_a_model_built_from_a_saved_configuration_translates_whatever_it_was_trained_with(
    data_bin,
):
    """A checkpoint saves its configuration resolved; translation never trains the model."""
    task, trained = _task_and_model(data_bin, "--fp16", "--ddp-backend", "legacy_ddp", *TWO_WORKERS)
    saved = OmegaConf.create(OmegaConf.to_container(trained.cfg, resolve=True))
    model = task.build_model(saved)
    assert not model.eval().training


def test_fairseq_s_one_buffer_all_reduce_rounds_a_float32_gradient_of_a_half_model(tmp_path):
    """Why the refusal: fairseq types its buffer like the model's first parameter (one CPU worker
    over gloo, as the distributed tests run)."""
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'init'}", rank=0, world_size=1)
    try:
        model = torch.nn.Sequential(torch.nn.Linear(2, 2).half(), torch.nn.Linear(2, 2))
        for parameter in model.parameters():
            parameter.grad = torch.full_like(parameter, 1e-9)
        LegacyDistributedDataParallel(model, dist.group.WORLD).all_reduce_grads()
    finally:
        dist.destroy_process_group()
    assert model[1].weight.dtype == torch.float32
    assert torch.count_nonzero(model[1].weight.grad) == 0  # 1e-9 is below float16's range


def _warnings_as_training_starts(model, caplog) -> list:
    with caplog.at_level(logging.WARNING, logger="bahdanau_plugin"):
        model.train()
        model.train()  # once
    return [r.getMessage() for r in caplog.records if r.name.startswith("bahdanau_plugin")]


def test_max_tokens_no_batch_of_the_batch_size_can_reach_is_one_warning(data_bin, caplog):
    """The paper's recipe (80 sentences, pairs of at most 50 tokens a side) with --max-tokens 8000:
    fairseq's batches are the batch size's alone."""
    model = _model(
        data_bin, "--max-train-length", "50", "--batch-size", "80", "--max-tokens", "8000"
    )
    assert _warnings_as_training_starts(model, caplog) == [
        "--max-tokens 8000 never limits a batch here: --batch-size 80 sentences of at most 51 "
        "tokens (the longest pair this run trains on, end of sentence included) hold at most "
        "4080, so --batch-size alone makes the batches; for batches of up to 8000 tokens, drop "
        "--batch-size (dataset.batch_size=null)"
    ]


def test_the_task_s_length_limits_count_as_the_longest_pair_too(data_bin, caplog):
    flags = ["--max-source-positions", "20", "--max-target-positions", "30"]
    model = _model(data_bin, *flags, "--batch-size", "80", "--max-tokens", "8000")
    assert "sentences of at most 30 tokens" in _warnings_as_training_starts(model, caplog)[0]


@pytest.mark.parametrize(
    "flags",
    [
        ["--max-train-length", "50", "--batch-size", "80", "--max-tokens", "4000"],
        ["--batch-size", "80", "--max-tokens", "8000"],  # no length limit but the task's 1,024
        ["--max-train-length", "50", "--max-tokens", "8000"],
    ],
    ids=["reachable", "long-pairs", "token-batches"],
)
def test_max_tokens_that_can_limit_a_batch_is_not_warned(data_bin, caplog, flags):
    assert _warnings_as_training_starts(_model(data_bin, *flags), caplog) == []


def test_fairseq_train_with_an_update_freq_of_0_is_one_line_before_anything_is_loaded(
    data_bin, tmp_path
):
    """fairseq divided by zero in a traceback as the first epoch began."""
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        *train_command(data_bin, tmp_path / "save", "rnnsearch_50", "--update-freq", "0"),
    )
    assert_one_line_error(returncode, stderr, "--update-freq 0: each update sums the gradients")
    assert not (tmp_path / "save").exists()


def test_an_update_freq_under_1_for_a_later_epoch_is_refused_too():
    cfg = OmegaConf.create({"optimization": {"update_freq": [2, 0]}})
    with pytest.raises(ConfigurationError, match="--update-freq 2,0: "):
        refuse_an_update_freq_under_one(cfg)


def test_an_update_freq_of_1_or_more_each_epoch_is_taken():
    refuse_an_update_freq_under_one(OmegaConf.create({"optimization": {"update_freq": [1, 4]}}))


def test_fairseq_train_with_a_batch_size_of_0_is_one_line_before_anything_is_loaded(
    data_bin, tmp_path
):
    """fairseq read it as no limit and trained on the whole split in one batch, without a word."""
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        *train_command(
            data_bin, tmp_path / "save", "rnnsearch_50", "--batch-size", "0", "--max-update", "1"
        ),
    )
    assert_one_line_error(
        returncode, stderr, "--batch-size 0: a batch holds up to that many sentences"
    )
    assert not (tmp_path / "save").exists()


@pytest.mark.parametrize(
    "dataset, refused",
    [
        ({"max_tokens": -5}, "--max-tokens -5: a batch holds up to that many tokens"),
        ({"batch_size": 80, "max_tokens_valid": 0}, "--max-tokens-valid 0: "),
        # fairseq-hydra-train's validation batch size is the training's unless given
        ({"batch_size": -1, "batch_size_valid": "${dataset.batch_size}"}, "--batch-size -1: "),
    ],
    ids=["max-tokens", "validation", "hydra-interpolation"],
)
def test_a_batch_size_under_1_is_refused_in_every_limit(dataset, refused):
    with pytest.raises(ConfigurationError, match=refused):
        refuse_a_batch_size_under_one(OmegaConf.create({"dataset": dataset}))


def test_batch_sizes_of_1_or_more_or_none_are_taken():
    refuse_a_batch_size_under_one(
        OmegaConf.create({"dataset": {"batch_size": 1, "max_tokens": None, "max_tokens_valid": 1}})
    )


def test_patience_with_validation_disabled_is_refused():
    """fairseq counts no validation there, and trained to its end without a word."""
    cfg = OmegaConf.create({"checkpoint": {"patience": 3}, "dataset": {"disable_validation": True}})
    with pytest.raises(ConfigurationError, match="^--patience 3 with --disable-validation: "):
        refuse_patience_without_validation(cfg)


@pytest.mark.parametrize("patience, disabled", [(3, False), (-1, True)], ids=["validated", "none"])
def test_patience_with_validation_or_validation_disabled_without_it_is_taken(patience, disabled):
    refuse_patience_without_validation(
        OmegaConf.create(
            {"checkpoint": {"patience": patience}, "dataset": {"disable_validation": disabled}}
        )
    )


def test_training_on_a_split_that_is_validated_too_is_refused():
    """fairseq read it through one epoch iterator: each validation used up a training epoch."""
    cfg = OmegaConf.create({"dataset": {"train_subset": "valid", "valid_subset": "valid1,valid"}})
    with pytest.raises(ConfigurationError, match="^--train-subset valid is validated too "):
        refuse_training_on_a_split_it_validates(cfg)


@pytest.mark.parametrize(
    "dataset",
    [
        {"train_subset": "train", "valid_subset": "valid"},
        {"train_subset": "valid", "valid_subset": "valid", "disable_validation": True},
    ],
    ids=["other-split", "no-validation"],
)
def test_training_on_a_split_not_validated_is_taken(dataset):
    refuse_training_on_a_split_it_validates(OmegaConf.create({"dataset": dataset}))


def test_a_first_shard_repeated_no_times_is_refused():
    """fairseq trained on the other shards alone, the first left out."""
    with pytest.raises(ConfigurationError, match="^--upsample-primary 0 repeats the first shard"):
        refuse_a_first_shard_repeated_no_times(OmegaConf.create({"task": {"upsample_primary": 0}}))


@pytest.mark.parametrize("upsample", [1, 2, -1], ids=["once", "twice", "fairseq-default"])
def test_a_first_shard_repeated_or_left_to_fairseq_is_taken(upsample):
    refuse_a_first_shard_repeated_no_times(
        OmegaConf.create({"task": {"upsample_primary": upsample}})
    )


@pytest.mark.parametrize(
    "blocks",
    [
        {"lr_scheduler": {"_name": "reduce_lr_on_plateau"}, "dataset": {}},
        {"lr_scheduler": {"_name": "fixed"}, "dataset": {"disable_validation": True}},
        {"lr_scheduler": "reduce_lr_on_plateau", "dataset": {"disable_validation": False}},
    ],
    ids=["validated", "fixed-schedule", "named-alone"],
)
def test_a_plateau_schedule_with_validation_or_another_without_is_taken(blocks):
    refuse_a_plateau_schedule_without_validation(OmegaConf.create(blocks))


def test_a_plateau_schedule_without_validation_is_refused():
    """It shrinks the rate where validation stops improving: without, the rate never changed."""
    cfg = OmegaConf.create(
        {"lr_scheduler": "reduce_lr_on_plateau", "dataset": {"disable_validation": True}}
    )
    with pytest.raises(ConfigurationError, match="^--lr-scheduler reduce_lr_on_plateau with "):
        refuse_a_plateau_schedule_without_validation(cfg)


def test_a_negative_learning_rate_of_any_epoch_is_refused():
    """fairseq's adam stepped up the gradient, and the loss rose, without a word."""
    with pytest.raises(ConfigurationError, match=r"^--lr 1.0,-0.5: a negative learning rate"):
        refuse_a_negative_learning_rate(OmegaConf.create({"optimization": {"lr": [1.0, -0.5]}}))


@pytest.mark.parametrize("rates", [[1.0, 0.0], 0.1], ids=["per-epoch", "hydra-interpolated"])
def test_learning_rates_of_0_or_more_are_taken(rates):
    """fairseq-hydra-train's optimizer.lr=0.1 reaches optimization.lr as no list, which fairseq's
    own check refuses after: a TypeError traceback came first."""
    refuse_a_negative_learning_rate(OmegaConf.create({"optimization": {"lr": rates}}))


@pytest.mark.parametrize(
    "betas, shown",
    [
        ("(1.5, 0.999)", "(1.5, 0.999)"),
        ("(0.9)", "(0.9)"),
        ("(0.9, 0.98, 0.9)", "(0.9, 0.98, 0.9)"),
        ([0.9, 1.0], "[0.9, 1.0]"),
    ],
    ids=["a-first-rate-over-1", "one-rate", "three-rates", "a-hydra-list-with-a-rate-of-1"],
)
def test_adam_betas_adam_cannot_take_are_refused_as_the_options_are_read(betas, shown):
    """A first rate over 1 trained, old gradients weighted above new ones, without a word; the
    others failed at the first update, data and model loaded, in a traceback."""
    cfg = OmegaConf.create({"optimizer": {"_name": "adam", "adam_betas": betas}})
    with pytest.raises(ConfigurationError, match=f"^--adam-betas {re.escape(shown)}: Adam takes"):
        refuse_adam_betas_adam_cannot_take(cfg)


@pytest.mark.parametrize(
    "betas",
    ["(0.9, 0.98)", "[0, 0.999]", "0.9 0.98", "(0.9, 1 - 1e-3)"],
    ids=["fairseq-s-default-form", "a-list", "no-python-left-to-fairseq", "an-expression"],
)
def test_adam_betas_adam_takes_or_that_are_no_literal_pass_as_the_options_are_read(betas):
    """Text that is no Python literal is fairseq's to evaluate (fairseq_errors explains it)."""
    cfg = OmegaConf.create({"optimizer": {"_name": "adam", "adam_betas": betas}})
    refuse_adam_betas_adam_cannot_take(cfg)


def test_an_lr_shrink_the_fixed_schedule_never_applies_is_refused():
    """Without --force-anneal the fixed schedule never shrinks: the rate stayed, without a word."""
    cfg = _fairseq_train_options("--lr-shrink", "0.5")
    with pytest.raises(ConfigurationError, match=r"^--lr-shrink 0.5 does nothing under "):
        refuse_a_shrink_the_fixed_schedule_never_applies(cfg)


@pytest.mark.parametrize(
    "flags",
    [
        ["--lr-shrink", "0.5", "--force-anneal", "3"],
        [],
        ["--lr-scheduler", "reduce_lr_on_plateau", "--lr-shrink", "0.5"],
    ],
    ids=["with-force-anneal", "fairseq-s-default", "another-schedule"],
)
def test_an_lr_shrink_a_schedule_applies_passes(flags):
    refuse_a_shrink_the_fixed_schedule_never_applies(_fairseq_train_options(*flags))


def _fairseq_train_options(*flags):
    """fairseq-train's configuration as add_defaults gets it: every option of the fixed schedule
    filled in by argparse, given or not."""
    parser = options.get_training_parser()
    given = ["data-bin", "--user-dir", PLUGIN, "--arch", "rnnsearch_50", *flags]
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, given))


def test_fairseq_train_choosing_by_bleu_without_eval_bleu_is_one_line_before_anything_is_loaded(
    data_bin, tmp_path
):
    """fairseq failed in a KeyError at the first validation, after an epoch's training, unsaved."""
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        *train_command(
            data_bin, tmp_path / "save", "rnnsearch_50", "--best-checkpoint-metric", "bleu"
        ),
    )
    assert_one_line_error(
        returncode, stderr, "--best-checkpoint-metric bleu: validation computes BLEU only with"
    )
    assert not (tmp_path / "save").exists()


def _checkpoint_options(metric, maximize, eval_bleu=True):
    return OmegaConf.create(
        {
            "checkpoint": {
                "best_checkpoint_metric": metric,
                "maximize_best_checkpoint_metric": maximize,
            },
            "task": {"_name": "translation", "eval_bleu": eval_bleu},
        }
    )


@pytest.mark.parametrize(
    "metric, maximize, refused",
    [
        (
            "bleu",
            False,
            "bleu without --maximize-best-checkpoint-metric would keep the "
            "checkpoint of the lowest bleu",
        ),
        (
            "loss",
            True,
            "loss with --maximize-best-checkpoint-metric would keep the checkpoint "
            "of the highest loss",
        ),
        ("ppl", True, "drop --maximize-best-checkpoint-metric"),
        (
            "accuracy",
            False,
            "accuracy without --maximize-best-checkpoint-metric would keep the "
            "checkpoint of the lowest accuracy",
        ),
    ],
)
def test_a_best_checkpoint_metric_chosen_the_wrong_way_round_is_refused(metric, maximize, refused):
    """fairseq kept the worst checkpoint as checkpoint_best.pt, without a word."""
    with pytest.raises(ConfigurationError, match=refused):
        refuse_a_best_checkpoint_metric_it_cannot_read(_checkpoint_options(metric, maximize))


def test_a_metric_read_the_wrong_way_round_names_the_plateau_scheduler_shrinking_as_it_improves():
    """reduce_lr_on_plateau reads the metric in the same direction: on the demo, accuracy 8.9
    after 3.3 halved the learning rate."""
    options = _checkpoint_options("accuracy", False)
    options.lr_scheduler = {"_name": "reduce_lr_on_plateau"}
    with pytest.raises(ConfigurationError, match="reduce_lr_on_plateau shrink the learning rate"):
        refuse_a_best_checkpoint_metric_it_cannot_read(options)


@pytest.mark.parametrize(
    "metric, maximize", [("bleu", True), ("loss", False), ("nll_loss", False), ("accuracy", True)]
)
def test_a_best_checkpoint_metric_chosen_the_right_way_round_is_taken(metric, maximize):
    refuse_a_best_checkpoint_metric_it_cannot_read(_checkpoint_options(metric, maximize))


def test_a_metric_of_another_criterion_whose_direction_is_unknown_is_the_user_s():
    refuse_a_best_checkpoint_metric_it_cannot_read(_checkpoint_options("wer", False))


def _criterion_options(metric, criterion, sentence_avg=False, **criterion_options):
    return OmegaConf.create(
        {
            "checkpoint": {
                "best_checkpoint_metric": metric,
                "maximize_best_checkpoint_metric": metric == "accuracy",
            },
            "criterion": {"_name": criterion, **criterion_options},
            "optimization": {"sentence_avg": sentence_avg},
            "task": {"_name": "translation", "eval_bleu": False},
        }
    )


@pytest.mark.parametrize(
    "metric, refused",
    [
        ("los", "--best-checkpoint-metric los: validation logs no los here, .* loss, ppl"),
        ("nll_loss", r"no nll_loss here \(cross_entropy logs nll_loss only with --sentence-avg\)"),
    ],
)
def test_a_best_checkpoint_metric_validation_does_not_log_is_refused(metric, refused):
    """fairseq-train trained an epoch, then ended in a KeyError at its validation, unsaved."""
    with pytest.raises(ConfigurationError, match=refused):
        refuse_a_best_checkpoint_metric_it_cannot_read(_criterion_options(metric, "cross_entropy"))


@pytest.mark.parametrize(
    "options",
    [
        _criterion_options("nll_loss", "cross_entropy", sentence_avg=True),
        _criterion_options("nll_loss", "label_smoothed_cross_entropy"),
        _criterion_options("accuracy", "label_smoothed_cross_entropy", report_accuracy=True),
        _criterion_options("wps", "cross_entropy"),
    ],
)
def test_a_best_checkpoint_metric_validation_logs_is_taken(options):
    refuse_a_best_checkpoint_metric_it_cannot_read(options)


def _validation_search(options: str, eval_bleu=True):
    return OmegaConf.create({"task": {"eval_bleu": eval_bleu, "eval_bleu_args": options}})


@pytest.mark.parametrize(
    "options, refused",
    [
        ('{"beem": 12}', "beem is not an option of fairseq's generation.*it takes beam, "),
        ("{beam: 5}", "give the validation search's options as a JSON object"),
        ("[5]", "give the validation search's options as a JSON object"),
    ],
    ids=["typo", "not-json", "not-an-object"],
)
def test_eval_bleu_args_the_validation_search_cannot_read_are_refused(options, refused):
    """fairseq's search ran with its default instead of a key it does not know, without a word,
    and failed in a traceback on text that is not a JSON object."""
    with pytest.raises(ConfigurationError, match=refused):
        refuse_eval_bleu_args_the_search_cannot_read(_validation_search(options))


@pytest.mark.parametrize(
    "options, eval_bleu",
    [('{"beam": 5, "max_len_b": 60, "lenpen": 0.6}', True), ('{"beem": 12}', False)],
    ids=["generation-options", "without-eval-bleu"],
)
def test_eval_bleu_args_of_generation_options_or_unread_are_taken(options, eval_bleu):
    refuse_eval_bleu_args_the_search_cannot_read(_validation_search(options, eval_bleu))


def _validation_bleu(detokenizer: str):
    task = {"eval_bleu": True, "eval_tokenized_bleu": True, "eval_bleu_detok": detokenizer}
    return OmegaConf.create({"task": task})


def test_tokenized_bleu_of_detokenized_text_is_refused():
    """fairseq scored the detokenized words split at spaces, neither BLEU asked for."""
    with pytest.raises(ConfigurationError, match="drop one"):
        refuse_tokenized_bleu_of_detokenized_text(_validation_bleu("moses"))


def test_tokenized_bleu_of_the_text_as_tokenized_is_taken():
    refuse_tokenized_bleu_of_detokenized_text(_validation_bleu("space"))  # fairseq's default


def _validation_detokenized(data_bin, *flags) -> str:
    """A Moses-tokenized French text as --eval-bleu's detokenizer gives it, set up for a model."""
    task, _ = _task_and_model(data_bin, "--eval-bleu", "--eval-bleu-detok", "moses", *flags)
    return task.tokenizer.decode("un groupe d&apos; hommes")


def test_validation_bleu_detokenizes_the_target_language_where_no_language_is_given(data_bin):
    """fairseq's detokenizer read the demo's French as English: d' hommes."""
    assert _validation_detokenized(data_bin) == "un groupe d'hommes"


def test_validation_bleu_detokenizes_the_language_given(data_bin):
    flags = ["--eval-bleu-detok-args", '{"target_lang": "en"}']
    assert _validation_detokenized(data_bin, *flags) == "un groupe d' hommes"


def _distributed(rank, world=2, no_spawn=True):
    return OmegaConf.create(
        {
            "distributed_world_size": world,
            "distributed_rank": rank,
            "distributed_no_spawn": no_spawn,
            "distributed_init_method": "tcp://127.0.0.1:29500",
        }
    )


def test_fairseq_train_with_a_rank_outside_the_world_is_one_line_before_the_rendezvous(
    data_bin, tmp_path
):
    """torch waited 30 minutes for a rank 0 that no process has, without a word."""
    distributed = [
        *("--distributed-world-size", "2", "--distributed-rank", "2"),
        *("--distributed-init-method", "tcp://127.0.0.1:1", "--distributed-no-spawn"),
        *("--distributed-backend", "gloo"),
    ]
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        *train_command(data_bin, tmp_path / "save", "rnnsearch_50", *distributed),
        timeout=120,
    )
    assert_one_line_error(
        returncode,
        stderr,
        "--distributed-rank 2 is outside --distributed-world-size 2, whose ranks are 0 to 1",
    )


@pytest.mark.parametrize(
    "distributed, gpus, refused",
    [
        (_distributed(-1), 0, "--distributed-rank -1 is outside"),
        (_distributed(1, no_spawn=False), 2, "--distributed-rank 1 starts ranks 1 to 2 here"),
        (_distributed(0, no_spawn=False), 0, "starts a process for each GPU, and this machine "),
    ],
    ids=["negative", "spawned-past-the-world", "spawned-for-no-gpu"],
)
def test_ranks_no_process_of_the_world_has_are_refused(distributed, gpus, refused):
    with pytest.raises(ConfigurationError, match=refused):
        refuse_ranks_outside_the_world(distributed, gpus)


@pytest.mark.parametrize(
    "distributed, gpus",
    [
        (_distributed(0), 0),
        (_distributed(1), 0),
        (_distributed(2, world=4, no_spawn=False), 2),  # a second machine's 2 GPUs of 4
    ],
    ids=["rank-0", "rank-1", "second-machine"],
)
def test_ranks_within_the_world_are_taken(distributed, gpus):
    refuse_ranks_outside_the_world(distributed, gpus)


def test_fairseq_train_truncating_sources_past_the_length_limit_is_one_line_before_loading(
    data_bin, tmp_path
):
    """--truncate-source cut sources at --max-source-positions, 1,024, and rnnsearch_50 then left
    out every pair over 50 tokens a side: the option cut nothing it trained on."""
    returncode, _, stderr = tool_on_bytes(
        "fairseq-train",
        *train_command(data_bin, tmp_path / "save", "rnnsearch_50", "--truncate-source"),
    )
    assert_one_line_error(
        returncode,
        stderr,
        "--truncate-source cuts sources at --max-source-positions 1024, but these models leave "
        "out every pair of more than 50 tokens a side (--max-train-length)",
        "give --max-source-positions 51 (the limit and the end of sentence)",
    )
    assert not (tmp_path / "save").exists()


@pytest.mark.parametrize(
    "max_train_length, max_source_positions", [(50, 51), (50, 20), (None, 1024)]
)
def test_truncating_sources_within_the_length_limit_is_taken(
    max_train_length, max_source_positions
):
    refuse_a_truncation_the_length_limit_undoes(
        OmegaConf.create(
            {
                "task": {"truncate_source": True, "max_source_positions": max_source_positions},
                "model": {"max_train_length": max_train_length},
            }
        )
    )


# The checks of the task's options that fairseq-train makes before anything is loaded
# (fairseq_patches.read_the_options_as_given).
TASK_OPTION_CHECKS = [
    refuse_a_best_checkpoint_metric_it_cannot_read,
    refuse_eval_bleu_args_the_search_cannot_read,
    refuse_tokenized_bleu_of_detokenized_text,
    refuse_a_truncation_the_length_limit_undoes,
]


@pytest.fixture(scope="module")
def legacy_task_options(data_bin):
    """fairseq-train's options for translation_multi_simple_epoch, one of fairseq's legacy tasks,
    whose options fairseq keeps in the argparse Namespace they were read into."""
    args = options.parse_args_and_arch(
        options.get_training_parser(),
        [
            *(str(data_bin), "--user-dir", PLUGIN, "--arch", "rnnsearch_50"),
            *("--task", "translation_multi_simple_epoch", "--lang-pairs", "en-fr"),
        ],
    )
    return convert_namespace_to_omegaconf(args)


@pytest.mark.parametrize("check", TASK_OPTION_CHECKS, ids=lambda check: check.__name__)
def test_the_options_of_a_legacy_task_are_checked(legacy_task_options, check):
    """A Namespace has no .get: the checks failed in an AttributeError traceback before training,
    where fairseq's lstm trained."""
    check(legacy_task_options)
