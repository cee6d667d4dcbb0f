"""fairseq's own errors for common mistakes in a run's data and options are one line that says what
the data-bin holds or what to give (bahdanau_plugin/fairseq_errors.py), not a traceback."""

import os
import re
import shutil

import numpy as np
import pytest
import torch
from fairseq import models, optim, options
from fairseq.criterions.label_smoothed_cross_entropy_with_alignment import (
    LabelSmoothedCrossEntropyCriterionWithAlignment,
)
from fairseq.data import data_utils, indexed_dataset
from fairseq.dataclass import initialize
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.distributed import utils as distributed_utils
from fairseq.optim import lr_scheduler
from fairseq.tasks.translation import TranslationConfig, TranslationTask
from hydra.errors import ConfigCompositionException
from omegaconf import OmegaConf
from omegaconf.errors import ValidationError

from bahdanau_plugin.errors import one_line

from ..support.assertions import assert_one_line_error, assert_one_line_explanation
from ..support.demo_data import preprocess, text_data_bin
from ..support.models import build_tiny_model
from ..support.paths import PLUGIN
from ..support.tools import tool_on_bytes
from ..support.training import train_command


def training(data_bin, tmp_path, *options):
    command = train_command(data_bin, tmp_path, "rnnsearch", "--max-update", "1", "--no-save")
    return tool_on_bytes("fairseq-train", *command, *options)


def validation(data_bin, checkpoint, *options):
    """fairseq-validate of a checkpoint on data_bin's valid split."""
    return tool_on_bytes(
        "fairseq-validate", data_bin, "--user-dir", PLUGIN, "--path", checkpoint, "--cpu", *options
    )


def test_a_split_the_data_bin_lacks_is_one_line_naming_those_it_holds(data_bin, tmp_path):
    returncode, _, stderr = training(data_bin, tmp_path, "--valid-subset", "dev")
    assert_one_line_error(
        returncode,
        stderr,
        f"the data-bin {data_bin} has no 'dev' split of en-fr (splits there: test, train, valid)",
        "--disable-validation",
    )


def test_a_split_there_as_text_is_one_line_saying_to_give_dataset_impl_raw(data_bin, tmp_path):
    """fairseq-preprocess --dataset-impl raw copies the text, which fairseq reads only when told:
    the line said the split was not there, and the data-bin held none."""
    folder = text_data_bin(data_bin, tmp_path)
    given = TranslationConfig(
        data=str(folder), train_subset="train", dataset_impl=None, required_seq_len_multiple=1
    )  # fairseq's tools fill the last three from their dataset options
    task = TranslationTask.setup_task(OmegaConf.structured(given))
    with pytest.raises(FileNotFoundError) as failed:
        task.load_dataset("test")
    assert_one_line_explanation(
        failed.value,
        f"the data-bin {folder} holds the 'test' split of en-fr as text",
        "give --dataset-impl raw",
    )


def test_a_language_the_data_bin_lacks_is_one_line_naming_its_languages(data_bin, tmp_path):
    returncode, _, stderr = training(
        data_bin, tmp_path, "--source-lang", "de", "--target-lang", "fr"
    )
    assert_one_line_error(
        returncode,
        stderr,
        "has no dictionary for the language de",
        "its languages are en, fr: give --source-lang and --target-lang among them",
    )


LANGUAGES = {"inferred": (), "given": ("--source-lang", "en", "--target-lang", "fr")}


@pytest.mark.parametrize("languages", LANGUAGES.values(), ids=LANGUAGES)
def test_the_folder_above_the_data_bin_is_one_line_saying_to_give_the_data_bin(tmp_path, languages):
    """bahdanau-prepare-data's OUT given for OUT/data-bin, the README's commands' DATA: fairseq
    failed in "Could not infer language pair" (a traceback), or, the languages given, the data-bin
    "has no dictionary for the language en: its languages are none"."""
    out = tmp_path / "prepared"
    (out / "data-bin").mkdir(parents=True)
    returncode, _, stderr = training(out, tmp_path, *languages)
    assert_one_line_error(
        returncode,
        stderr,
        f"{out} is not a data-bin folder: it holds no dict.*.txt",
        "OUT/data-bin",
    )


def test_a_folder_of_dictionaries_alone_without_the_languages_is_one_line_saying_to_give_them(
    data_bin, tmp_path
):
    """A folder of the dictionaries alone, kept beside a checkpoint to translate with: fairseq takes
    the pair from the names of binaries it lacks, and failed in a traceback ("Could not infer
    language pair")."""
    for dictionary in data_bin.glob("dict.*.txt"):
        shutil.copy(dictionary, tmp_path)
    with pytest.raises(Exception) as failed:
        TranslationTask.setup_task(OmegaConf.structured(TranslationConfig(data=str(tmp_path))))
    assert_one_line_explanation(
        failed.value,
        f"the data folder {tmp_path} holds no binaries",
        "give both, languages of its dictionaries (en and fr)",
    )


@pytest.mark.parametrize("languages", LANGUAGES.values(), ids=LANGUAGES)
def test_a_data_folder_that_does_not_exist_is_one_line_naming_it(tmp_path, languages):
    """A typo: fairseq failed in a FileNotFoundError traceback, listing the folder or reading its
    dict.en.txt."""
    missing = tmp_path / "prepard" / "data-bin"
    returncode, _, stderr = training(missing, tmp_path, *languages)
    assert_one_line_error(returncode, stderr, f"data folder {missing} not found")


@pytest.mark.parametrize("languages", LANGUAGES.values(), ids=LANGUAGES)
def test_a_data_bin_with_a_colon_in_its_path_is_one_line_saying_to_link_it(
    data_bin, tmp_path, languages
):
    """fairseq splits its data path at ':' into shards: it named the folder before the ':' as not
    found, a folder the user never gave."""
    linked = tmp_path / "run:2" / "data-bin"
    linked.parent.mkdir()
    linked.symlink_to(data_bin)
    returncode, _, stderr = training(linked, tmp_path, *languages)
    assert_one_line_error(
        returncode, stderr, f"data folder {linked} has ':' in its path", "link it (ln -s)"
    )


def test_a_data_bin_named_as_another_and_a_colon_is_one_line_not_the_other_read(data_bin, tmp_path):
    """data:old beside data: fairseq split the path at ':' and read data, the other data-bin,
    without a word."""
    for name in ("data", "data:old"):
        (tmp_path / name).symlink_to(data_bin)
    returncode, _, stderr = training(tmp_path / "data:old", tmp_path, *LANGUAGES["given"])
    assert_one_line_error(
        returncode, stderr, f"data folder {tmp_path / 'data:old'} has ':' in its path"
    )


def with_an_empty_training_split(data_bin, folder):
    """data_bin, its training split binarized from empty text files, as fairseq-preprocess does."""
    folder.mkdir()
    for name in os.listdir(data_bin):
        if not name.startswith("train."):
            (folder / name).symlink_to(data_bin / name)
    for language in ("en", "fr"):
        prefix = folder / f"train.en-fr.{language}"
        indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap").finalize(f"{prefix}.idx")
    return folder


def test_an_empty_split_is_one_line_naming_it(data_bin, tmp_path):
    empty = with_an_empty_training_split(data_bin, tmp_path / "data-bin")
    returncode, _, stderr = training(empty, tmp_path)
    assert_one_line_error(
        returncode,
        stderr,
        f"the split {empty}/train.en-fr.en holds no sentence",
        "binarize it from text with sentences",
    )


def with_a_second_shard(data_bin, folder, shard, of):
    """data_bin's dictionaries and splits, and its split of as the shard (train1: a second shard of
    train) too."""
    folder.mkdir()
    for path in data_bin.iterdir():
        os.symlink(path, folder / path.name)
        if path.name.startswith(f"{of}."):
            os.symlink(path, folder / path.name.replace(of, shard, 1))
    return folder


def test_a_split_in_shards_without_upsample_primary_is_one_line_saying_to_give_it(
    data_bin, tmp_path
):
    """fairseq concatenates train and train1 with train repeated --upsample-primary times, -1 by
    default: numpy failed in a traceback ("negative dimensions are not allowed")."""
    sharded = with_a_second_shard(data_bin, tmp_path / "data-bin", "train1", of="valid")
    given = TranslationConfig(
        data=str(sharded), train_subset="train", dataset_impl=None, required_seq_len_multiple=1
    )  # fairseq-train fills the last three from its dataset options
    task = TranslationTask.setup_task(OmegaConf.structured(given))
    with pytest.raises(ValueError) as failed:
        task.load_dataset("train", combine=True)
    assert_one_line_explanation(
        failed.value,
        f"the data-bin {sharded} holds 2 shards of 'train' (train, train1)",
        "give --upsample-primary 1 (each shard once) or more",
    )


def validation_splits_refused(data_bin, tmp_path, valid_subset):
    """fairseq-train's check of the validation splits (train.py, before anything is loaded) on
    data_bin with its test split as a second validation split, valid1."""
    sharded = with_a_second_shard(data_bin, tmp_path / "data-bin", "valid1", of="test")
    dataset = {
        "valid_subset": valid_subset,
        **dict.fromkeys(["ignore_unused_valid_subsets", "combine_valid_subsets"], False),
        "disable_validation": False,
    }
    with pytest.raises(ValueError) as failed:
        data_utils.raise_if_valid_subsets_unintentionally_ignored(
            OmegaConf.create({"dataset": dataset, "task": {"data": str(sharded)}})
        )
    return failed.value


def test_validation_splits_all_named_that_fairseq_refuses_are_one_line_giving_the_flag(
    data_bin, tmp_path
):
    """fairseq took valid1's files for another split than valid1, and refused in a traceback that
    they "will be ignored", which they would not have been."""
    assert_one_line_explanation(
        validation_splits_refused(data_bin, tmp_path, "valid,valid1"),
        "--valid-subset valid,valid1 names every validation split of the data-bin",
        "add --ignore-unused-valid-subsets, and it validates on each split named",
    )


def test_validation_splits_left_out_are_one_line_naming_them_and_the_ways_to_validate(
    data_bin, tmp_path
):
    assert_one_line_explanation(
        validation_splits_refused(data_bin, tmp_path, "valid"),
        "the data-bin holds validation splits that --valid-subset valid leaves out (valid1)",
        "--valid-subset valid,valid1 --ignore-unused-valid-subsets",
        "--combine-valid-subsets --upsample-primary 1",
    )


def test_training_rnnencdec_s_attention_toward_alignments_is_one_line_saying_it_has_none(
    fast_path_setting,
):
    """fairseq's criterion read the attention rnnencdec does not have as None, and failed in an
    AttributeError traceback at the first batch."""
    fast_path_setting("plain")  # the model's step run eagerly: compiling it takes seconds
    model = build_tiny_model("rnnencdec")
    output = model(torch.tensor([[4, 5, 2]]), torch.tensor([3]), torch.tensor([[2, 4, 5]]))
    criterion = LabelSmoothedCrossEntropyCriterionWithAlignment(None, False, 0.1, 0.05)
    with pytest.raises(AttributeError) as failed:
        criterion.compute_alignment_loss({}, output)
    assert_one_line_explanation(
        failed.value,
        "this model gives none (rnnencdec has no attention): train rnnsearch, or give another "
        "--criterion",
    )


def test_batch_buckets_numpy_no_longer_computes_are_one_line_saying_to_drop_them():
    """fairseq computed the buckets' lengths with an argument the project's numpy no longer takes,
    in a TypeError traceback as the split was loaded."""
    with pytest.raises(TypeError) as failed:
        data_utils.get_buckets(np.array([3, 5, 8, 13]), 2)
    assert_one_line_explanation(
        failed.value, "--num-batch-buckets 2: fairseq computes", "drop --num-batch-buckets"
    )


@pytest.mark.parametrize(
    "error, words",
    [
        (ValueError("--finetune-from-model ck/nope.pt does not exist"), "give the checkpoint file"),
        (AssertionError("Torch not compiled with CUDA enabled"), "with --bf16"),
        (
            AssertionError("Must specify batch size either with --max-tokens or --batch-size"),
            "give --batch-size N",
        ),
        (
            AssertionError("--sampling requires --nbest to be equal to --beam"),
            "give --nbest equal to --beam",
        ),
    ],
    ids=["finetune-from-model", "fp16-on-a-cpu", "no-batch-size", "sampling-nbest"],
)
def test_fairseqs_one_line_errors_say_what_to_give(error, words):
    assert words in one_line(error)


def _filling_in_defaults(**blocks):
    """The line for omegaconf's error as fairseq fills in the defaults of a configuration as
    fairseq-hydra-train composed it (its blocks, each with its _name)."""
    with pytest.raises(ValidationError) as refused:
        initialize.add_defaults(OmegaConf.create(blocks))
    return one_line(refused.value)


def test_a_model_option_of_another_type_is_one_line_naming_it_and_the_type():
    """omegaconf's ValidationError printed a traceback after hydra's 'Error executing job'."""
    assert _filling_in_defaults(model={"_name": "rnnsearch_50", "dropout": "abc"}) == (
        "model.dropout=abc: Value 'abc' of type 'str' could not be converted to Float; model "
        "rnnsearch_50 takes float there: correct the value"
    )


def test_a_learning_rate_that_is_no_list_is_one_line_saying_to_give_one():
    """The paper's recipes read lr_scheduler.lr from optimizer.lr: optimizer.lr=0.1 is this."""
    assert _filling_in_defaults(
        model={"_name": "rnnsearch_50"}, lr_scheduler={"_name": "fixed", "lr": 0.1}
    ) == (
        "lr_scheduler.lr=0.1 is not a list: lr_scheduler fixed takes List[float] there: give it "
        "as one, [0.1], where it is set"
    )


@pytest.mark.parametrize(
    "languages, read_first",
    [([], "source_lang"), (["--source-lang", "en"], "target_lang")],
    ids=["neither-language", "source-language-alone"],
)
def test_the_moses_tokenizer_without_both_languages_is_one_line_saying_to_give_them(
    languages, read_first
):
    """hydra refused the null language in a traceback: 'ConfigCompositionException: Error merging
    override tokenizer.source_lang=null', as fairseq-interactive and fairseq-generate read their
    options."""
    parser = options.get_generation_parser(interactive=True)
    given = options.parse_args_and_arch(parser, ["data-bin", "--tokenizer", "moses", *languages])
    with pytest.raises(ConfigCompositionException) as refused:
        convert_namespace_to_omegaconf(given)
    assert one_line(refused.value) == (
        "--tokenizer moses tokenizes by the rules of --source-lang and --target-lang, and fairseq "
        f"reads its {read_first} before it takes a language left out from the data-bin's file "
        "names: give both, the data-bin's languages (--source-lang en --target-lang fr, say)"
    )


def _training_options(*flags):
    """fairseq-train's options as its main reads them, for rnnsearch_50."""
    parser = options.get_training_parser()
    given = ["data-bin", "--arch", "rnnsearch_50", *flags]
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, given))


def _parameters():
    return [torch.nn.Parameter(torch.zeros(1))]


@pytest.mark.parametrize(
    "flags, words",
    [
        (["--lr-scheduler", "cosine"], "cosine anneals the learning rate over --lr-period-updates"),
        (["--lr-scheduler", "tri_stage"], "tri_stage warms the learning rate up"),
        (
            ["--lr-scheduler", "tri_stage", "--phase-ratio", "(0.1, 0.4, 0.5)"],
            "with --max-update N",
        ),
        (
            ["--lr-scheduler", "inverse_sqrt", "--lr", "1e-3,5e-4"],
            "--lr 0.001,0.0005 gives a learning rate per epoch, which --lr-scheduler fixed alone "
            "reads: --lr-scheduler inverse_sqrt computes each update's from one --lr; give one",
        ),
    ],
    ids=["cosine", "tri-stage", "tri-stage-phase-ratio", "a-rate-per-epoch"],
)
def test_a_learning_rate_schedule_that_cannot_start_is_one_line_saying_what_to_give(flags, words):
    """fairseq's trainer builds the scheduler before the first update, which asserted in a
    traceback ('Either --max_update or --lr-period-updates must be set', a bare assert for
    --phase-ratio without --max-update) or raised a ValueError for a rate per epoch."""
    cfg = _training_options("--optimizer", "adam", *flags)
    optimizer = optim.build_optimizer(cfg.optimizer, _parameters())
    with pytest.raises((AssertionError, ValueError)) as refused:
        lr_scheduler.build_lr_scheduler(cfg.lr_scheduler, optimizer)
    assert_one_line_explanation(refused.value, words)


def test_polynomial_decay_without_total_num_update_is_one_line_saying_to_give_it():
    """hydra refused it in a traceback, whatever --max-update: 'Error merging override
    lr_scheduler.total_num_update=null'."""
    with pytest.raises(ConfigCompositionException) as refused:
        _training_options("--lr-scheduler", "polynomial_decay", "--max-update", "100")
    assert_one_line_explanation(refused.value, "give --total-num-update N, the run's --max-update")


def test_memory_efficient_half_precision_of_the_paper_s_adadelta_is_one_line_naming_what_works():
    """fairseq's trainer refused it as it built the optimizer, before the first update, in a
    traceback: 'ValueError: Unsupported optimizer: Adadelta'."""
    cfg = _training_options("--optimizer", "adadelta", "--memory-efficient-fp16")
    with pytest.raises(ValueError) as refused:
        optim.MemoryEfficientFP16Optimizer.build_optimizer(cfg, _parameters())
    assert_one_line_explanation(
        refused.value, "--optimizer adadelta cannot: use --fp16, which keeps float32 master weights"
    )


@pytest.mark.parametrize(
    "betas, shown",
    [("0.9 0.98", "0.9 0.98"), ("(0.9)", "0.9"), ("(0.9, 1.5)", "(0.9, 1.5)")],
    ids=["no-python", "one-rate", "a-rate-over-1"],
)
def test_adam_betas_adam_cannot_take_are_one_line_giving_the_default(betas, shown):
    """fairseq's Adam evaluates the text and checks nothing: a SyntaxError as it was built, a
    TypeError or 'ValueError: math domain error' at the first update, each a traceback."""
    cfg = _training_options("--optimizer", "adam", "--adam-betas", betas)
    parameter = torch.nn.Parameter(torch.ones(2))
    with pytest.raises((SyntaxError, TypeError, ValueError)) as refused:
        optimizer = optim.build_optimizer(cfg.optimizer, [parameter])
        parameter.grad = torch.ones(2)
        optimizer.step()
    assert_one_line_explanation(
        refused.value, f"--adam-betas {shown}: Adam takes two decay rates", "'(0.9, 0.999)'"
    )


def test_a_value_torch_s_optimizer_refuses_is_one_line_naming_the_optimizer_and_the_value():
    """fairseq builds the paper's adadelta from torch's, which refused --adadelta-rho 95 (for
    0.95) in a traceback naming neither: 'ValueError: Invalid rho value: 95.0'."""
    cfg = _training_options("--optimizer", "adadelta", "--adadelta-rho", "95")
    with pytest.raises(ValueError) as refused:
        optim.build_optimizer(cfg.optimizer, _parameters())
    assert_one_line_explanation(
        refused.value, "--optimizer adadelta cannot start", "'Invalid rho value: 95.0'"
    )


def test_a_world_larger_than_the_machine_s_gpus_is_one_line_naming_both(data_bin, tmp_path):
    """fairseq asserted in a traceback: 'world size is 2 but have 0 available devices'."""
    gpus = torch.cuda.device_count()
    world = str(gpus + 2)  # a world of 2 at least, as one process has no other
    returncode, _, stderr = training(data_bin, tmp_path, "--distributed-world-size", world)
    assert_one_line_error(
        returncode,
        stderr,
        f"--distributed-world-size {world} without --distributed-init-method starts that many "
        f"processes on this machine, one a GPU, and it has {gpus or 'none'}: ",
        "or start each process yourself with --distributed-init-method",
    )


def _send_a_checkpoints_configuration(rank: int, init: str) -> None:
    """A worker of torch.multiprocessing.spawn, as fairseq-train starts one a GPU: rank 0 sends
    the other a checkpoint's state as fairseq's Trainer.load_checkpoint does (broadcast_object),
    its configuration made omegaconf's by fairseq's load_checkpoint_to_cpu."""
    torch.distributed.init_process_group("gloo", init_method=init, rank=rank, world_size=2)
    state = {"cfg": OmegaConf.create({"common": {"seed": 1}})} if rank == 0 else None
    try:
        distributed_utils.broadcast_object(state, src_rank=0, group=None)
    except RuntimeError:  # rank 0, once the other has ended
        # at once: gloo, torn down as Python ends after the other's end, now and then aborted the
        # process (SIGABRT), which spawn then reported instead of the other's error
        os._exit(0)


def test_a_checkpoint_a_gpu_worker_is_sent_and_refuses_is_one_line_naming_what_works(tmp_path):
    """torch.multiprocessing hands fairseq-train the worker's traceback, which ends in torch's
    'UnpicklingError: Weights only load failed ... omegaconf.dictconfig.DictConfig'."""
    init = f"file://{tmp_path / 'rendezvous'}"
    with pytest.raises(torch.multiprocessing.ProcessRaisedException) as ended:
        torch.multiprocessing.spawn(_send_a_checkpoints_configuration, args=(init,), nprocs=2)
    assert_one_line_explanation(
        ended.value, "cannot resume from the checkpoint", "add --load-checkpoint-on-all-dp-ranks"
    )


def _wrapped_for_data_parallel_on_a_cpu(tmp_path, model, *flags):
    """fairseq's DistributedDataParallel wrapping of model on the CPU, in a gloo group of one: the
    ValueError torch raises."""
    cfg = _training_options("--cpu", *flags)
    cfg.distributed_training.tpu = False  # fairseq takes --bf16 for --tpu; with the plugin, not
    init = f"file://{tmp_path / 'rendezvous'}"
    torch.distributed.init_process_group("gloo", init_method=init, rank=0, world_size=1)
    try:
        with pytest.raises(ValueError) as refused:
            models.DistributedFairseqModel(
                cfg.distributed_training, model, None, torch.device("cpu")
            )
    finally:
        torch.distributed.destroy_process_group()
    return refused.value


@pytest.mark.parametrize("backend", ["pytorch_ddp", "c10d"])
def test_torch_s_data_parallel_on_a_cpu_is_one_line_saying_to_give_legacy_ddp(backend, tmp_path):
    """fairseq wraps the model for the process's GPU (device_ids=[0]), and torch refused it on
    the CPU in a traceback: 'DistributedDataParallel device_ids and output_device arguments only
    work with single-device/multiple-device GPU modules or CPU modules, ...'."""
    model = build_tiny_model("rnnsearch")
    refused = _wrapped_for_data_parallel_on_a_cpu(tmp_path, model, "--ddp-backend", backend)
    assert_one_line_explanation(
        refused, f"--ddp-backend {backend}", "on CPUs, give --ddp-backend legacy_ddp"
    )


def test_torch_s_data_parallel_on_a_cpu_in_bf16_is_one_line_saying_to_train_in_float32(tmp_path):
    """legacy_ddp, which the line would name, is refused in half precision for rounding the
    alignment model's gradients: each line sent to the other."""
    model = build_tiny_model("rnnsearch").bfloat16()
    refused = _wrapped_for_data_parallel_on_a_cpu(tmp_path, model, "--bf16")
    assert_one_line_explanation(
        refused,
        "--ddp-backend pytorch_ddp (fairseq's default)",
        "train several processes in float32, or one process in half precision",
    )


@pytest.mark.parametrize("precision", [[], ["--bf16"], ["--amp"]], ids=["float32", "bf16", "amp"])
def test_gradients_that_are_not_finite_end_training_in_one_line_naming_the_update(
    data_bin, tmp_path, precision
):
    """The loss diverged: fairseq stopped in a traceback, 'FloatingPointError: gradients are
    Nan/Inf' after a dump of every parameter's norms (with --amp on a CPU, 'AttributeError:
    'GradScaler' object has no attribute '_backoff_factor'')."""
    returncode, _, stderr = training(
        data_bin, tmp_path, "--max-update", "4", "--lr", "1e37", *precision
    )
    assert_one_line_error(
        returncode, stderr, "the gradients of update 2 are NaN or infinite", "a lower --lr"
    )


@pytest.mark.parametrize("tool", ["fairseq-train", "fairseq-generate"])
@pytest.mark.parametrize(
    "precisions",
    [["--fp16", "--bf16"], ["--memory-efficient-fp16", "--memory-efficient-bf16"]],
    ids=["fp16-bf16", "memory-efficient"],
)
def test_two_half_precisions_are_one_line_asking_for_one(tmp_path, tool, precisions):
    """fairseq turns --bf16 into --tpu, then refused it in a traceback about a TPU: 'ValueError:
    Cannot combine --fp16 and --tpu, use --bf16 on TPUs'."""
    missing_data = tmp_path / "no-data-here"  # refused as the options are read, before any data
    command = {
        "fairseq-train": train_command(missing_data, tmp_path, "rnnsearch", *precisions),
        "fairseq-generate": [missing_data, "--user-dir", PLUGIN, "--path", tmp_path / "x.pt"],
    }[tool]
    returncode, _, stderr = tool_on_bytes(tool, *command, *precisions)
    assert_one_line_error(
        returncode,
        stderr,
        f"{precisions[0]} and {precisions[1]} each choose the precision to compute in",
        "give one of them",
    )
    assert "TPU" not in stderr


def test_finetune_from_model_with_a_reset_flag_is_one_line_naming_the_flags_to_drop(
    data_bin, checkpoints, tmp_path
):
    start = checkpoints["rnnsearch_50"]
    returncode, _, stderr = training(
        data_bin, tmp_path, "--finetune-from-model", start, "--reset-optimizer", "--reset-meters"
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"--finetune-from-model {start} starts from its parameters alone",
        "refuses --reset-optimizer --reset-meters beside it: drop them",
    )


def test_finetune_from_model_with_a_restore_file_is_one_line_asking_for_one(
    data_bin, checkpoints, tmp_path
):
    start, restore = checkpoints["rnnsearch_50"], checkpoints["rnnsearch_30"]
    returncode, _, stderr = training(
        data_bin, tmp_path, "--finetune-from-model", start, "--restore-file", restore
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"--finetune-from-model {start} and --restore-file {restore} both name the checkpoint "
        "to start from: give one",
    )


def test_fairseq_validate_without_a_task_is_one_line_naming_the_task_to_give(data_bin, checkpoints):
    """fairseq-validate, alone among fairseq's tools, has no default task."""
    returncode, _, stderr = validation(data_bin, checkpoints["rnnsearch_50"], "--batch-size", "16")
    assert_one_line_error(returncode, stderr, "no --task given", "give", "--task translation")


def test_fairseq_validate_with_the_task_reports_the_checkpoints_loss(data_bin, checkpoints):
    returncode, stdout, stderr = validation(
        data_bin, checkpoints["rnnsearch_50"], "--task", "translation", "--batch-size", "16"
    )
    assert returncode == 0, stderr[-2000:]
    assert re.search(r"valid on 'valid' subset \| loss \d+\.\d+", stdout + stderr)


def test_fairseq_validate_without_a_batch_size_is_one_line_naming_the_options(
    data_bin, checkpoints
):
    returncode, _, stderr = validation(
        data_bin, checkpoints["rnnsearch_50"], "--task", "translation"
    )
    assert_one_line_error(
        returncode, stderr, "no batch size given: give --batch-size N", "or --max-tokens N"
    )


def constrained_translation(data_bin, checkpoint, line, *options):
    """fairseq-interactive translating one line with its tab-separated --constraints."""
    return tool_on_bytes(
        "fairseq-interactive", data_bin, "--user-dir", PLUGIN, "--path", checkpoint,
        "--source-lang", "en", "--target-lang", "fr", "--constraints", "--beam", "3", "--cpu",
        *options, stdin=f"{line}\n".encode(),
    )  # fmt: skip


@pytest.mark.parametrize("symbol", ["</s>", "<pad>"])
def test_a_constraint_typed_as_a_control_symbol_is_one_line_naming_it(
    data_bin, checkpoints, symbol
):
    """fairseq-interactive reads it as the symbol, which the search never writes."""
    returncode, _, stderr = constrained_translation(
        data_bin,
        checkpoints["rnnsearch_50"],
        f"the dog sees a cat\tle {symbol}",
        "--max-len-b",
        "8",
    )
    assert_one_line_error(
        returncode, stderr, f"a --constraints word is {symbol}", "drop it from the constraints"
    )


def test_constraints_longer_than_the_length_limit_are_one_line_naming_the_limit(
    data_bin, checkpoints
):
    returncode, _, stderr = constrained_translation(
        data_bin,
        checkpoints["rnnsearch_50"],
        "the dog sees a cat\tle chien voit un chat",
        "--max-len-a", "0", "--max-len-b", "3",
    )  # fmt: skip
    assert_one_line_error(
        returncode,
        stderr,
        "the search reached its length limit before it wrote every --constraints word of a line "
        "(--max-len-a 0 --max-len-b 3 allow 3 tokens",
        "give a larger --max-len-b, or fewer or shorter constraints",
    )


def test_constraints_within_the_length_limit_are_written(data_bin, checkpoints):
    returncode, stdout, stderr = constrained_translation(
        data_bin, checkpoints["rnnsearch_50"], "the dog sees a cat\tchien", "--max-len-b", "8"
    )
    assert returncode == 0, stderr[-2000:]
    assert re.search(r"^H-0\t\S+\t.*\bchien\b", stdout, flags=re.M)


def test_a_min_len_over_a_batchs_length_limit_is_one_line_naming_the_limit(data_bin, checkpoints):
    """The limit grows with a batch's longest source: the first batch of four, the shortest test
    sentences (of at most 8 words), is too short for it."""
    returncode, _, stderr = tool_on_bytes(
        "fairseq-generate", data_bin, "--user-dir", PLUGIN, "--path", checkpoints["rnnsearch_50"],
        "--cpu", "--batch-size", "4", "--min-len", "9", "--max-len-a", "0.5", "--max-len-b", "0",
    )  # fmt: skip
    assert_one_line_error(
        returncode,
        stderr,
        "--min-len 9 is over the length limit",
        "--max-len-a 0.5 --max-len-b 0 allow 4 tokens",
    )


LONG = 3  # the valid sentence made longer than rnnsearch_50 trains on, 51 tokens a side


@pytest.fixture(scope="module")
def long_validation_sentence(data_bin, tmp_path_factory):
    """data_bin, valid sentence LONG (source and reference) repeated 6 times: (the data-bin, the
    sentence's tokens on each side, end of sentence included)."""
    root = tmp_path_factory.mktemp("long-valid")
    data = root / "data-bin"
    data.mkdir()
    for name in os.listdir(data_bin):
        if name.startswith("train."):
            (data / name).symlink_to(data_bin / name)
    tokens = []
    for language in ("en", "fr"):
        lines = (
            (data_bin.parent / "raw" / f"valid.{language}").read_text(encoding="utf-8").splitlines()
        )
        lines[LONG] = " ".join([lines[LONG]] * 6)
        tokens.append(len(lines[LONG].split()) + 1)
        (root / f"valid.{language}").write_text(
            "".join(line + "\n" for line in lines), encoding="utf-8"
        )
    preprocess(
        *("--validpref", root / "valid", "--destdir", data),
        *("--srcdict", data_bin / "dict.en.txt", "--tgtdict", data_bin / "dict.fr.txt"),
    )
    assert min(tokens) > 51
    return data, tokens


def test_a_validation_sentence_over_the_training_limit_is_one_line_saying_to_skip_it(
    long_validation_sentence, tmp_path
):
    """fairseq-train validates with the limit it trains with, and stopped in a traceback."""
    data, (source, target) = long_validation_sentence
    command = train_command(data, tmp_path, "rnnsearch_50", "--max-update", "1", "--no-save")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command)
    assert_one_line_error(
        returncode,
        stderr,
        f"sentence {LONG} of the 'valid' split has {source} source and {target} target tokens "
        "(end of sentence included), over the 51 source and 51 target tokens the models take",
        "--max-train-length",
        ": add --skip-invalid-size-inputs-valid-test to leave such sentences out",
    )


def test_a_validation_pair_over_max_tokens_is_one_line_naming_it_and_the_tokens_to_give(
    long_validation_sentence, tmp_path
):
    """fairseq-train leaves out the training pairs over --max-tokens, but batches every validation
    pair by it (--skip-invalid-size-inputs-valid-test skips those over the length limit only), and
    stopped at the first validation in a traceback of an AssertionError."""
    data, (source, target) = long_validation_sentence
    returncode, _, stderr = training(
        data, tmp_path, "--max-tokens", "51", "--skip-invalid-size-inputs-valid-test"
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"--max-tokens-valid 51 (--max-tokens, unless given) is under the {max(source, target)} "
        f"tokens of sentence {LONG} of the 'valid' split",
        f"give --max-tokens-valid {max(source, target)} or more",
    )


def test_fairseq_validate_of_a_sentence_over_the_models_limit_is_the_same_one_line(
    long_validation_sentence, checkpoints
):
    data, (source, _) = long_validation_sentence
    returncode, _, stderr = validation(
        data, checkpoints["rnnsearch_50"], "--task", "translation", "--batch-size", "16"
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"sentence {LONG} of the 'valid' split has {source} source and",
        "add --skip-invalid-size-inputs-valid-test",
    )


def test_a_sentence_over_max_source_positions_is_one_line_saying_to_raise_it(
    long_validation_sentence, checkpoints
):
    """fairseq-generate's limit is the task's option: these models translate any length."""
    data, (source, _) = long_validation_sentence
    returncode, _, stderr = tool_on_bytes(
        "fairseq-generate",
        data,
        *("--user-dir", PLUGIN, "--path", checkpoints["rnnsearch_50"], "--cpu"),
        *("--gen-subset", "valid", "--max-source-positions", "20", "--max-len-b", "2"),
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"sentence {LONG} of the 'valid' split has {source} source tokens (end of sentence "
        f"included), over --max-source-positions 20: raise --max-source-positions to {source}, "
        "or add --skip-invalid-size-inputs-valid-test",
    )


def test_a_line_over_max_source_positions_in_fairseq_interactive_is_named_as_its_s_line(
    data_bin, checkpoints
):
    """fairseq numbered it within the --buffer-size lines read with it ("Size of sample #1")."""
    returncode, stdout, stderr = tool_on_bytes(
        "fairseq-interactive",
        data_bin,
        *("--user-dir", PLUGIN, "--path", checkpoints["rnnsearch_50"], "--cpu"),
        *("--task", "translation_with_source_words", "--source-lang", "en", "--target-lang", "fr"),
        *("--max-len-b", "5", "--max-source-positions", "4", "--buffer-size", "2"),
        stdin=b"a cat\nthe dog\nthe cat\nthe dog sees a cat\nthe red cat\n",
    )
    assert_one_line_error(
        returncode,
        stderr,
        "input sentence 3 has 6 source tokens (end of sentence included), over "
        "--max-source-positions 4: raise --max-source-positions to 6, or add "
        "--skip-invalid-size-inputs-valid-test",
    )
    assert re.findall(r"^S-(\d+)\t", stdout, flags=re.M) == ["0", "1"]
