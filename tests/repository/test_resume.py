"""A training killed with SIGKILL mid-epoch and restarted with the same command ends exactly where
an uninterrupted run ends: fairseq restores the epoch iterator's position and the optimizer state,
and reseeds every update (seed + update number), and the resumed run batches the epoch as the run
it continues did (resuming.batches_made_as_in_the_first_epoch), so on CPU the result is bitwise
identical."""

import os
import re
import signal
import subprocess

import pytest
import torch

from bahdanau_plugin import provenance

from ..support.tools import fairseq_env, fairseq_tool, run
from ..support.training import train_command

# The demo's 2,000 pairs in batches of 80 make 25 updates an epoch: killed in epoch 2, after its
# 5th update, and resumed there.
FLAGS = [
    "--batch-size",
    "80",
    "--max-update",
    "35",
    "--save-interval-updates",
    "5",
    "--disable-validation",
    "--dropout",
    "0.2",
]


def _kill_after_first_checkpoint_of_epoch_2(command):
    """Start training, SIGKILL it as soon as it has saved its first checkpoint of epoch 2."""
    env = {**fairseq_env(), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        for line in process.stdout:
            if re.search(r"Saved checkpoint \S+ \(epoch 2 @", line):
                os.kill(process.pid, signal.SIGKILL)
                break
    finally:
        process.stdout.close()
        process.wait(timeout=60)
    return process.returncode


@pytest.fixture(scope="module")
def uninterrupted(data_bin, tmp_path_factory):
    """The --save-dir of the training run without a stop, and its command's arguments."""
    save_dir = tmp_path_factory.mktemp("uninterrupted")
    arguments = train_command(data_bin, save_dir, "rnnsearch_50", *FLAGS)
    run("fairseq-train", *arguments)
    return save_dir, arguments


def _run_of_these_tests():
    """The provenance of a training by the tools of the Python running the tests, as they run
    (fairseq_env: the fast path plain), on the CPU, in float32."""
    return {
        **provenance.of_the_code(),
        "fast_path": "plain",
        "device": "cpu",
        "precision": "float32 (no --fp16, --bf16 or --amp)",
    }


def _older_version(run: dict) -> dict:
    return {**run, "bahdanau_fairseq": "0.0.1", "torch": "2.5.1"}


def _as_saved_by(checkpoint, runs) -> None:
    """The checkpoint as if the code of those runs had trained it."""
    state = torch.load(checkpoint, weights_only=True)
    state["extra_state"][provenance.KEY] = runs
    torch.save(state, checkpoint)


@pytest.fixture(scope="module")
def killed_and_resumed(data_bin, tmp_path_factory):
    """A training killed mid-epoch in epoch 2, and the same command run again, by a newer version
    of the code (the checkpoint resumed is marked as saved by an older one): its --save-dir and
    the resumed run's log."""
    resumed_dir = tmp_path_factory.mktemp("resumed")
    command = [
        fairseq_tool("fairseq-train"),
        *map(str, train_command(data_bin, resumed_dir, "rnnsearch_50", *FLAGS)),
    ]
    assert _kill_after_first_checkpoint_of_epoch_2(command) == -signal.SIGKILL
    _as_saved_by(resumed_dir / "checkpoint_last.pt", [_older_version(_run_of_these_tests())])
    return resumed_dir, run("fairseq-train", *command[1:])


def test_a_training_killed_mid_epoch_in_epoch_2_resumes_to_the_same_parameters(
    uninterrupted, killed_and_resumed
):
    """fairseq made the resumed run's batches from --seed and the epoch it started in, 2, where the
    run it continued had made them in epoch 1: the rest of epoch 2 went through other batches."""
    (uninterrupted_dir, _), (resumed_dir, log) = uninterrupted, killed_and_resumed
    resumed_at = re.search(r"Loaded checkpoint \S+ \(epoch 2 @ (\d+) updates\)", log)
    assert resumed_at and 25 < int(resumed_at.group(1)) < 35
    expected = torch.load(uninterrupted_dir / "checkpoint_last.pt")["model"]
    actual = torch.load(resumed_dir / "checkpoint_last.pt")["model"]
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.equal(actual[name], expected[name]), name


def test_a_checkpoint_records_the_code_that_trained_it_and_loads_weights_only(uninterrupted):
    save_dir, _ = uninterrupted
    state = torch.load(save_dir / "checkpoint_last.pt", weights_only=True)
    assert state["extra_state"][provenance.KEY] == [_run_of_these_tests()]


def test_a_checkpoint_resumed_by_another_version_records_both_runs(killed_and_resumed):
    """A checkpoint trained by two versions of the code says so: the run before, then this one."""
    resumed_dir, _ = killed_and_resumed
    state = torch.load(resumed_dir / "checkpoint_last.pt", weights_only=True)
    this_run = _run_of_these_tests()
    assert state["extra_state"][provenance.KEY] == [_older_version(this_run), this_run]


def test_the_same_command_again_after_the_training_is_done_trains_nothing(uninterrupted):
    """fairseq checks --max-update after an update: a rerun trained one more and saved it over
    checkpoint_last.pt, and one more at each rerun."""
    save_dir, arguments = uninterrupted
    done = (save_dir / "checkpoint_last.pt").read_bytes()
    log = run("fairseq-train", *arguments)
    assert "this training is done (35 updates, --max-update 35): nothing is trained" in log
    assert (save_dir / "checkpoint_last.pt").read_bytes() == done
