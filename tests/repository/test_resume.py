"""A training killed with SIGKILL mid-epoch and restarted with the same command ends exactly where
an
uninterrupted run ends: fairseq restores the epoch iterator's position and the optimizer state, and
reseeds every update (seed + update number), so on CPU the result is bitwise identical."""

import os
import re
import signal
import subprocess

import torch

from ..support.tools import fairseq_env, fairseq_tool, run
from ..support.training import train_command

# The demo's 2,000 pairs in batches of 16 make 125 updates an epoch: every event is mid-epoch.
FLAGS = [
    "--batch-size",
    "16",
    "--max-update",
    "40",
    "--save-interval-updates",
    "5",
    "--disable-validation",
    "--dropout",
    "0.2",
]


def _kill_after_first_checkpoint(command):
    """Start training, SIGKILL it as soon as it has saved its first mid-epoch checkpoint."""
    env = {**fairseq_env(), "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    try:
        for line in process.stdout:
            if "Saved checkpoint" in line:
                os.kill(process.pid, signal.SIGKILL)
                break
    finally:
        process.stdout.close()
        process.wait(timeout=60)
    return process.returncode


def test_a_training_killed_mid_epoch_resumes_to_the_same_parameters(data_bin, tmp_path):
    uninterrupted_dir, resumed_dir = tmp_path / "uninterrupted", tmp_path / "resumed"
    run("fairseq-train", *train_command(data_bin, uninterrupted_dir, "rnnsearch_50", *FLAGS))
    command = [
        fairseq_tool("fairseq-train"),
        *map(str, train_command(data_bin, resumed_dir, "rnnsearch_50", *FLAGS)),
    ]

    assert _kill_after_first_checkpoint(command) == -signal.SIGKILL
    log = run("fairseq-train", *command[1:])

    resumed_at = re.search(r"Loaded checkpoint \S+ \(epoch 1 @ (\d+) updates\)", log)
    assert resumed_at and 5 <= int(resumed_at.group(1)) < 40
    expected = torch.load(uninterrupted_dir / "checkpoint_last.pt")["model"]
    actual = torch.load(resumed_dir / "checkpoint_last.pt")["model"]
    assert expected.keys() == actual.keys()
    for name in expected:
        assert torch.equal(actual[name], expected[name]), name
