"""Two CPU processes over gloo train exactly like one process accumulating the same two batches."""

import re
import socket
import subprocess

import pytest
import torch

from .support.tools import fairseq_env, fairseq_tool, run
from .support.training import train_command

UPDATES = 4
# Summation order differs between an all-reduce over two workers and accumulation in one process;
# float32 rounding is all that may differ.
TOLERANCE = 1e-5


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _losses(log: str):
    return [float(loss) for loss in re.findall(r"train_inner \| .*?loss=([\d.]+)", log)]


def _parameters(save_dir):
    return torch.load(save_dir / "checkpoint_last.pt")["model"]


@pytest.fixture(scope="module")
def runs(data_bin, tmp_path_factory):
    # No dropout: each worker draws its masks from the same per-update seed, which one process
    # accumulating two batches cannot reproduce.
    common = ["--batch-size", "16", "--max-update", str(UPDATES), "--disable-validation"]
    single_dir = tmp_path_factory.mktemp("single")
    single = run(
        "fairseq-train",
        *train_command(data_bin, single_dir, "rnnsearch_50", *common, "--update-freq", "2"),
    )
    distributed_dir = tmp_path_factory.mktemp("distributed")
    init = f"tcp://127.0.0.1:{_free_port()}"
    workers = [
        subprocess.Popen(
            [
                fairseq_tool("fairseq-train"),
                *map(
                    str,
                    train_command(
                        data_bin,
                        distributed_dir,
                        "rnnsearch_50",
                        *common,
                        "--distributed-world-size",
                        "2",
                        "--distributed-rank",
                        str(rank),
                        "--distributed-init-method",
                        init,
                        "--distributed-no-spawn",
                        "--ddp-backend",
                        "legacy_ddp",
                        "--distributed-backend",
                        "gloo",
                    ),
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=fairseq_env(),
        )
        for rank in range(2)
    ]
    logs = [worker.communicate(timeout=300)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], logs[0][-2000:] + logs[1][-2000:]
    return {"single": (single, single_dir), "distributed": (logs[0], distributed_dir)}


def test_two_gloo_workers_log_the_training_loss_of_one_process_with_update_freq_2(runs):
    single, distributed = _losses(runs["single"][0]), _losses(runs["distributed"][0])
    assert len(single) == UPDATES
    assert distributed == pytest.approx(single, abs=2e-3)  # logged with 3 decimals


def test_two_gloo_workers_end_with_the_parameters_of_one_process_with_update_freq_2(runs):
    single, distributed = _parameters(runs["single"][1]), _parameters(runs["distributed"][1])
    assert single.keys() == distributed.keys()
    for name in single:
        difference = (distributed[name] - single[name]).abs().max().item()
        assert difference <= TOLERANCE, f"{name} differs by {difference}"
