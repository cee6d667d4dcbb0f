"""fairseq-train resuming under options that cannot take the checkpoint's state is one line that
says what to give (bahdanau_plugin/resuming.py), not a traceback; nothing is written."""

import contextlib
import re
import shutil
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from fairseq import checkpoint_utils
from fairseq.data import Dictionary, LanguagePairDataset
from fairseq.data.iterators import EpochBatchIterator
from fairseq.tasks import FairseqTask
from fairseq_cli import train
from omegaconf import OmegaConf

from bahdanau_plugin.resuming import (
    batches_made_as_in_the_first_epoch,
    train_nothing_where_the_training_is_done,
    RecordingTheEpochsBatches,
    epochs_batches,
    fingerprint_of_batches,
    keep_the_best_score,
    restore_the_patience,
)

from ..support.assertions import assert_one_line_error
from ..support.demo_data import preprocess
from ..support.tools import tool_on_bytes
from ..support.training import train_command

pytestmark = pytest.mark.long  # run first: tests/conftest.py


@pytest.fixture
def resume(data_bin, checkpoints, tmp_path):
    """fairseq-train, with options added (and some of its own left out), into a --save-dir whose
    checkpoint_last.pt is a tiny rnnsearch_50 stopped after 4 updates, mid-epoch; (return code,
    its output, fairseq's log then stderr, the checkpoint)."""
    save_dir = tmp_path / "save"
    save_dir.mkdir()
    checkpoint = save_dir / "checkpoint_last.pt"
    shutil.copy(checkpoints["rnnsearch_50"], checkpoint)

    def run(*options, leaving_out=(), data=data_bin):
        command = train_command(data, save_dir, "rnnsearch_50", "--max-update", "8", *options)
        for flag in leaving_out:  # with its value
            at = command.index(flag)
            del command[at : at + 2]
        returncode, stdout, stderr = tool_on_bytes("fairseq-train", *command)
        return returncode, stdout + stderr, checkpoint

    return run


def test_resuming_with_another_optimizer_is_one_line_naming_both_and_nothing_is_written(
    resume, checkpoints
):
    returncode, output, checkpoint = resume(
        "--optimizer", "adam", leaving_out=("--adadelta-rho", "--adadelta-eps")
    )
    assert_one_line_error(
        returncode,
        output,
        f"cannot resume from {checkpoint}: it was trained with --optimizer adadelta and this "
        "run with --optimizer adam",
        "resume it with --optimizer adadelta",
        f"a new --save-dir and --finetune-from-model {checkpoint}",
        "(--reset-optimizer would reset the optimizer, and the count of updates to 0, again",
    )
    assert checkpoint.read_bytes() == checkpoints["rnnsearch_50"].read_bytes()
    assert sorted(path.name for path in checkpoint.parent.iterdir()) == ["checkpoint_last.pt"]


def test_resuming_with_another_criterion_is_one_line_naming_both(resume):
    returncode, output, _ = resume("--criterion", "label_smoothed_cross_entropy")
    assert_one_line_error(
        returncode,
        output,
        "it was trained with --criterion cross_entropy and this run with --criterion "
        "label_smoothed_cross_entropy",
        "resume it with --criterion cross_entropy",
    )


def test_resuming_with_another_lr_scheduler_is_one_line_naming_both_and_nothing_is_written(
    resume, checkpoints
):
    """fairseq's default scheduler, fixed, keeps its learning rate alone, without the best loss
    that inverse_sqrt's reads (KeyError: 'best')."""
    returncode, output, checkpoint = resume("--lr-scheduler", "inverse_sqrt")
    assert_one_line_error(
        returncode,
        output,
        f"cannot resume from {checkpoint}: it was trained with --lr-scheduler fixed and this run "
        "with --lr-scheduler inverse_sqrt",
        "resume it with --lr-scheduler fixed",
        "add --reset-lr-scheduler",
    )
    assert checkpoint.read_bytes() == checkpoints["rnnsearch_50"].read_bytes()


def test_resuming_for_the_other_direction_of_a_joined_dictionary_is_one_line_naming_both(
    resume, checkpoints
):
    """The demo's data-bin has one dictionary for both languages; the checkpoint was trained
    without --source-lang, as en->fr, which its data-bin's files say."""
    returncode, output, checkpoint = resume("--source-lang", "fr", "--target-lang", "en")
    assert_one_line_error(
        returncode,
        output,
        f"cannot resume from {checkpoint}: it translates en->fr, and this run fr->en",
        "resume it with --source-lang en --target-lang fr",
        "give this run a new --save-dir",
    )
    assert checkpoint.read_bytes() == checkpoints["rnnsearch_50"].read_bytes()


def test_resuming_in_another_precision_is_one_line_naming_both(resume):
    """fairseq keeps the optimizer's state of a half-precision run in a wrapper of its own."""
    returncode, output, _ = resume("--bf16")
    assert_one_line_error(
        returncode,
        output,
        "it was trained with float32 (no --fp16, --bf16 or --amp) and this run with --bf16",
        "resume it with float32",
    )


def test_resuming_mid_epoch_into_an_epoch_of_fewer_batches_is_one_line_saying_why(resume):
    """The checkpoint stopped after batch 4 of its epoch; in batches of 1,000 the epoch has 2."""
    returncode, output, checkpoint = resume("--batch-size", "1000")
    assert_one_line_error(
        returncode,
        output,
        f"cannot resume from {checkpoint}: it was saved after batch 4 of epoch 1, and this "
        "run's epoch 1 has 2 batches",
        "--batch-size",
        "resume it with those it was trained with",
    )


def test_resuming_with_other_model_options_that_fit_says_which_in_a_warning(resume):
    """The checkpoint is an rnnsearch_50 without dropout; the sizes are the same."""
    returncode, output, checkpoint = resume("--arch", "rnnsearch_30", "--dropout", "0.1")
    assert returncode == 0, output[-2000:]
    warnings = [line for line in output.splitlines() if "trained with other options" in line]
    assert len(warnings) == 1
    assert f"{checkpoint} was trained with other options than this run's (--arch is " in warnings[0]
    for difference in (
        "--arch is rnnsearch_50 there and rnnsearch_30 here",
        "dropout is 0.0 there and 0.1 here",
        "max_train_length is 50 there and 30 here",
    ):
        assert difference in warnings[0]


def test_resuming_with_the_options_it_was_trained_with_says_nothing_of_them(resume):
    returncode, output, _ = resume()
    assert returncode == 0, output[-2000:]
    assert "Loaded checkpoint" in output
    assert "trained with other options" not in output
    assert "of other batches than this run's" not in output


def _warnings_of_other_batches(output):
    return [line for line in output.splitlines() if "of other batches than this run's" in line]


def test_resuming_mid_epoch_through_more_batches_of_another_size_says_so_in_a_warning(resume):
    """The checkpoint stopped after batch 4 of its 25 (of 80 pairs); in batches of 40 the epoch
    has 50, and fairseq goes on after the 4th of those, another order."""
    returncode, output, checkpoint = resume("--batch-size", "40")
    assert returncode == 0, output[-2000:]
    warnings = _warnings_of_other_batches(output)
    assert len(warnings) == 1
    assert f"{checkpoint} was saved after batch 4 of epoch 1, of other batches" in warnings[0]
    assert "another --batch-size" in warnings[0]
    assert "resume with the options and data it was trained with" in warnings[0]


@pytest.fixture
def binarized_anew(data_bin, tmp_path):
    """The demo data-bin with its training split binarized anew from the same sentences in
    reverse order (another sentence at each index), with the same dictionaries."""
    raw, text = data_bin.parent / "raw", tmp_path / "text"
    text.mkdir()
    for language in ("en", "fr"):
        lines = (raw / f"train.{language}").read_text(encoding="utf-8").splitlines()
        (text / f"train.{language}").write_text("\n".join(reversed(lines)) + "\n")
    preprocess(
        *("--trainpref", text / "train", "--validpref", raw / "valid"),
        *("--srcdict", data_bin / "dict.en.txt", "--tgtdict", data_bin / "dict.fr.txt"),
        *("--destdir", tmp_path / "data-bin"),
    )
    return tmp_path / "data-bin"


def test_resuming_mid_epoch_a_training_split_binarized_anew_says_so_in_a_warning(
    resume, binarized_anew
):
    returncode, output, _ = resume(data=binarized_anew)
    assert returncode == 0, output[-2000:]
    warnings = _warnings_of_other_batches(output)
    assert len(warnings) == 1
    assert "a training split binarized anew" in warnings[0]


def _validation_losses(output):
    return [float(loss) for loss in re.findall(r"valid on 'valid' subset \| loss ([\d.]+)", output)]


@pytest.mark.parametrize("reset", ["--reset-optimizer", "--reset-meters"])
def test_resuming_with_a_reset_keeps_checkpoint_best_pt_until_a_checkpoint_validates_better(
    resume, checkpoints, tmp_path, reset
):
    """fairseq forgets the best score with either option: the next validation replaced
    checkpoint_best.pt, however bad. A learning rate of 1000 makes it worse."""
    best = torch.load(checkpoints["rnnsearch_50"], weights_only=True)["extra_state"]["best"]
    trained_best = checkpoints["rnnsearch_50"].parent / "checkpoint_best.pt"
    checkpoint_best = tmp_path / "save" / "checkpoint_best.pt"
    shutil.copy(trained_best, checkpoint_best)
    returncode, output, _ = resume(reset, "--lr", "1000")
    assert returncode == 0, output[-2000:]
    assert _validation_losses(output)[-1] > best
    assert checkpoint_best.read_bytes() == trained_best.read_bytes()
    assert f"kept the best loss so far, {best}, which {reset} would forget" in output


class _Indices(torch.utils.data.Dataset):
    def __len__(self):
        return 10

    def __getitem__(self, index):
        return index


def test_the_fingerprint_of_an_epochs_batches_is_of_those_fairseq_goes_through():
    """Shuffled with the seed and the epoch, the second worker's shard of two."""
    batches = [np.arange(start, min(start + 3, 10)) for start in range(0, 10, 3)]
    iterator = EpochBatchIterator(
        _Indices(), list, batches, seed=7, num_shards=2, shard_id=1, epoch=2
    )
    gone_through = list(iterator.next_epoch_itr(shuffle=True))

    assert epochs_batches(iterator, shuffle=True) == fingerprint_of_batches(gone_through)
    assert epochs_batches(iterator, shuffle=False) != fingerprint_of_batches(gone_through)


SEED = 1


def _pairs_of_few_lengths() -> LanguagePairDataset:
    """Pairs of three lengths, so that the order fairseq sorts them in, and so their batches,
    depends on the numpy seed it shuffles them under first."""
    dictionary = Dictionary()
    sentences = [torch.full((2 + index % 3,), dictionary.eos()) for index in range(60)]
    sizes = [len(sentence) for sentence in sentences]
    return LanguagePairDataset(sentences, sizes, dictionary, sentences, sizes, dictionary)


def _batches_fairseq_train_makes(epoch, per_epoch_options=(), resuming=False):
    """The batches of the training iterator that fairseq-train makes as it starts in ``epoch``
    (Trainer.get_train_iterator: --seed, plus the epoch under --update-ordered-indices-seed),
    resuming a checkpoint through the plugin or not."""
    task, reseeded = FairseqTask(None), "update_ordered_indices_seed" in per_epoch_options
    made = contextlib.nullcontext()
    if resuming:
        made = batches_made_as_in_the_first_epoch(task, seeded_per_epoch=reseeded)
    with made:
        iterator = task.get_batch_iterator(
            dataset=_pairs_of_few_lengths(),
            max_sentences=4,
            seed=SEED + epoch if reseeded else SEED,
            epoch=epoch,
            update_epoch_batch_itr="update_epoch_batch_itr" in per_epoch_options,
        )
    return [list(batch) for batch in iterator.frozen_batches]


def test_a_resume_in_epoch_3_makes_the_batches_the_run_made_in_epoch_1():
    first = _batches_fairseq_train_makes(epoch=1)

    assert _batches_fairseq_train_makes(epoch=3, resuming=True) == first
    assert _batches_fairseq_train_makes(epoch=3) != first  # fairseq's own


def test_a_resume_under_update_ordered_indices_seed_makes_the_batches_of_epoch_1_too():
    seeded = ("update_ordered_indices_seed",)
    first = _batches_fairseq_train_makes(epoch=1, per_epoch_options=seeded)

    assert _batches_fairseq_train_makes(3, seeded, resuming=True) == first


def test_a_resume_under_update_epoch_batch_itr_makes_its_epochs_batches_as_fairseq_does():
    """fairseq then makes the batches again every epoch, for that epoch."""
    anew = ("update_epoch_batch_itr",)
    third = _batches_fairseq_train_makes(epoch=3, per_epoch_options=anew)

    assert _batches_fairseq_train_makes(3, anew, resuming=True) == third
    assert third != _batches_fairseq_train_makes(epoch=1, per_epoch_options=anew)


def _count_patience_from_scratch(monkeypatch):
    """fairseq-train's --patience count and best score as a process of its own finds them."""
    for attribute in ("best", "num_runs"):
        monkeypatch.delattr(train.should_stop_early, attribute, raising=False)
    monkeypatch.delattr(checkpoint_utils.save_checkpoint, "best", raising=False)


def _saved_after_validations(losses, patience):
    """The state of the epoch iterator that a checkpoint saved after validations of these losses
    keeps, --patience's count with it, and fairseq-train's checkpoint configuration."""
    cfg = OmegaConf.create(
        {"checkpoint": {"patience": patience, "maximize_best_checkpoint_metric": False}}
    )
    for loss in losses:
        assert not train.should_stop_early(cfg, loss)
    iterator = EpochBatchIterator(_Indices(), list, [np.arange(2), np.arange(2, 4)])
    list(iterator.next_epoch_itr())  # an epoch gone through, saved at its end
    saved = RecordingTheEpochsBatches(iterator).state_dict()
    del train.should_stop_early.best, train.should_stop_early.num_runs  # the resuming process
    return cfg, {"train_iterator": saved, "best": min(losses)}


def test_a_resumed_training_stops_at_the_patience_an_uninterrupted_one_stops_at(monkeypatch):
    """fairseq-train keeps --patience's count in its should_stop_early function alone: a run
    resumed after two validations that did not improve on the best counted afresh, and trained on
    past --patience 3."""
    _count_patience_from_scratch(monkeypatch)
    cfg, extra_state = _saved_after_validations((2.0, 2.5, 2.4), patience=3)
    checkpoint_utils.save_checkpoint.best = extra_state["best"]  # fairseq's resume keeps it

    restore_the_patience(extra_state)
    assert train.should_stop_early(cfg, 2.3)  # the third validation no better than 2.0


def test_a_training_started_from_anothers_checkpoint_counts_its_patience_afresh(monkeypatch):
    """--finetune-from-model (or --reset-meters into a --save-dir of no checkpoint_best.pt) makes
    fairseq forget the checkpoint's best score: the fine-tuning's --patience counted from the
    other training's best, 2.0, and stopped at its first validation (of other data), 3.0."""
    _count_patience_from_scratch(monkeypatch)
    cfg, extra_state = _saved_after_validations((2.0, 2.5), patience=2)

    restore_the_patience(extra_state)  # fairseq left save_checkpoint without a best
    assert not train.should_stop_early(cfg, 3.0)
    assert not train.should_stop_early(cfg, 3.1)
    assert train.should_stop_early(cfg, 3.2)


def test_a_resume_that_keeps_the_best_through_a_reset_counts_its_patience_on(monkeypatch, tmp_path):
    """With --reset-meters beside the --save-dir's checkpoint_best.pt, the run keeps the best score
    (keep_the_best_score, on the rank that saves): every rank counts on from it, the options read
    from fairseq-train's main."""
    _count_patience_from_scratch(monkeypatch)
    cfg, extra_state = _saved_after_validations((2.0, 2.5, 2.4), patience=3)
    (tmp_path / "checkpoint_best.pt").touch()
    run = OmegaConf.create(
        {"checkpoint": {"save_dir": str(tmp_path), "reset_meters": True, "reset_optimizer": False}}
    )

    def main(cfg, trainer):  # fairseq-train's, as it resumes
        restore_the_patience(extra_state)

    monkeypatch.setattr(train, "main", main)
    train.main(run, SimpleNamespace(checkpoint_suffix=""))
    assert train.should_stop_early(cfg, 2.3)


def _checkpoint_configuration(save_dir):
    return OmegaConf.create(
        {
            "save_dir": str(save_dir),
            "reset_optimizer": False,
            "reset_meters": False,
            "best_checkpoint_metric": "loss",
        }
    )


def test_a_training_that_resumes_no_best_score_forgets_one_left_in_the_process(
    monkeypatch, tmp_path
):
    """hydra's multirun trains its jobs in one process, and fairseq kept the best score of the
    first: the second, in a --save-dir of its own, compared its validations with it and wrote no
    checkpoint_best.pt until one beat it."""
    _count_patience_from_scratch(monkeypatch)  # restored after, whatever the test leaves
    checkpoint_utils.save_checkpoint.best = 6.308  # the first job's
    keep_the_best_score(_checkpoint_configuration(tmp_path), "", None)  # a start from scratch
    assert not hasattr(checkpoint_utils.save_checkpoint, "best")


def test_a_resume_keeps_the_best_score_fairseq_gave_it(monkeypatch, tmp_path):
    extra_state = {"best": 5.83}
    monkeypatch.setattr(
        checkpoint_utils.save_checkpoint, "best", extra_state["best"], raising=False
    )
    keep_the_best_score(_checkpoint_configuration(tmp_path), "", extra_state)
    assert checkpoint_utils.save_checkpoint.best == 5.83


@pytest.mark.parametrize(
    "option, start, then",
    [
        ("--restore-file", "resume", "to continue that training"),
        ("--finetune-from-model", "start", "to fine-tune from it"),
    ],
)
def test_an_option_naming_a_checkpoint_of_another_architecture_is_one_line_naming_the_option(
    data_bin, checkpoints, tmp_path, option, start, then
):
    """A new --save-dir would not help: the option names the checkpoint whatever the folder."""
    other = checkpoints["rnnencdec_50"]
    command = train_command(data_bin, tmp_path / "save", "rnnsearch_50", option, other)
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command)
    assert_one_line_error(
        returncode,
        stderr,
        f"cannot {start} from {option} {other}: its architecture is rnnencdec_50 and this run's "
        f"is rnnsearch_50; to train rnnsearch_50, give {option} a checkpoint of rnnsearch_50, or "
        f"leave it out to start without one; {then}, --arch rnnencdec_50",
    )
    assert "--save-dir" not in stderr.strip().splitlines()[-1]


def test_a_fine_tuning_counts_its_training_time_from_0_not_from_the_checkpoints(
    checkpoints, data_bin, tmp_path
):
    """fairseq's trainer took the training time of the checkpoint --finetune-from-model names as
    its own: --stop-time-hours 1 stopped the fine-tuning of one that had trained 10 hours after
    its first update."""
    state = torch.load(checkpoints["rnnsearch_50"])
    state["extra_state"]["previous_training_time"] = 10 * 3600.0
    torch.save(state, tmp_path / "ten_hours.pt")
    save_dir = tmp_path / "fine-tuned"
    command = train_command(data_bin, save_dir, "rnnsearch_50", "--max-update", "2")
    command += ["--finetune-from-model", tmp_path / "ten_hours.pt", "--stop-time-hours", "1"]
    returncode, stdout, stderr = tool_on_bytes("fairseq-train", *command, "--disable-validation")
    assert returncode == 0, stderr[-2000:]
    assert "Stopping training due to cumulative_training_time" not in stdout + stderr
    saved = torch.load(save_dir / "checkpoint_last.pt")
    assert saved["optimizer_history"][-1]["num_updates"] == 2
    assert saved["extra_state"]["previous_training_time"] < 3600


def _trainer_resumed_at(updates: int, hours: float, **limits):
    """What train_nothing_where_the_training_is_done reads of fairseq's trainer once it loaded."""
    optimization = {"max_update": 0, "stop_time_hours": 0, "max_epoch": 0, **limits}
    return SimpleNamespace(
        cfg=OmegaConf.create({"optimization": optimization}),
        get_num_updates=lambda: updates,
        cumulative_training_time=lambda: hours * 3600,
    )


def test_a_checkpoint_past_stop_time_hours_trains_no_epoch_and_says_so():
    """fairseq checks the time after an update: a rerun trained one more and saved it."""
    trainer = _trainer_resumed_at(10, 2.5, stop_time_hours=2)
    done = train_nothing_where_the_training_is_done(trainer)
    assert done.startswith("this training is done (2.50 hours of training, --stop-time-hours 2)")
    assert trainer.cfg.optimization.max_epoch < 0  # fairseq-train's loop runs no epoch


def test_a_checkpoint_within_its_limits_trains_on():
    trainer = _trainer_resumed_at(10, 1.5, max_update=20, stop_time_hours=2)
    assert train_nothing_where_the_training_is_done(trainer) is None
    assert trainer.cfg.optimization.max_epoch == 0
