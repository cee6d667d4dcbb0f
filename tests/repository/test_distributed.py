"""Two CPU processes over gloo train exactly like one process accumulating the same two batches."""

import re
import socket
import subprocess
import sys

import pytest
import torch

from ..support.paths import REPO
from ..support.tools import fairseq_env, fairseq_tool, run
from ..support.training import train_command

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


def _two_gloo_workers(data_bin, save_dir, *flags, own=((), ()), timeout=300):
    """fairseq-train as two CPU processes over gloo, fairseq's legacy all-reduce between them,
    each given its own flags too (own); each worker's (return code, output), both killed where
    they run past timeout seconds."""
    init = f"tcp://127.0.0.1:{_free_port()}"
    distributed = [
        "--distributed-world-size",
        "2",
        "--distributed-init-method",
        init,
        "--distributed-no-spawn",
        "--ddp-backend",
        "legacy_ddp",
        "--distributed-backend",
        "gloo",
    ]
    workers = [
        subprocess.Popen(
            [
                fairseq_tool("fairseq-train"),
                *map(
                    str,
                    train_command(
                        data_bin,
                        save_dir,
                        "rnnsearch_50",
                        *flags,
                        *distributed,
                        "--distributed-rank",
                        str(rank),
                        *own[rank],
                    ),
                ),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=fairseq_env(),
        )
        for rank in range(2)
    ]
    try:
        outputs = [worker.communicate(timeout=timeout) for worker in workers]
    except subprocess.TimeoutExpired:
        for worker in workers:
            worker.kill()
        pytest.fail(f"the two workers ran past {timeout} s")
    return [(worker.returncode, out + err) for worker, (out, err) in zip(workers, outputs)]


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
    workers = _two_gloo_workers(data_bin, distributed_dir, *common)
    assert [code for code, _ in workers] == [0, 0], workers[0][1][-2000:] + workers[1][1][-2000:]
    logs = [log for _, log in workers]
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


@pytest.mark.parametrize("model_name", ["rnnsearch", "rnnencdec"])
def test_pytorch_ddp_trains_through_a_batch_of_one_token_targets(model_name, tmp_path):
    """fairseq's default DDP backend does not search for unused parameters: a parameter without a
    gradient makes the next batch fail ("Expected to have finished reduction...")."""
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.repository.pytorch_ddp_worker",
                model_name,
                str(rank),
                str(tmp_path / "init"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=REPO,
            env=fairseq_env(),
        )
        for rank in range(2)
    ]
    logs = [worker.communicate(timeout=180)[0] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], logs[0][-2000:]
    assert all("trained 3 batches" in log for log in logs)


def test_legacy_all_reduce_in_float16_is_refused_in_one_line_before_training(data_bin, tmp_path):
    on_cpu = ["--fp16-no-flatten-grads", "--fp16-init-scale", "1", "--fp16-scale-window", "1000000"]
    workers = _two_gloo_workers(data_bin, tmp_path, "--fp16", *on_cpu, "--max-update", "2")
    for returncode, output in workers:
        assert returncode != 0
        assert "Traceback" not in output
        last = output.strip().splitlines()[-1]
        assert "error: --ddp-backend legacy_ddp with --fp16" in last
        assert "use --ddp-backend pytorch_ddp" in last
    assert not (tmp_path / "crash.pt").exists()


def test_two_workers_resume_a_checkpoint_and_train_on_from_its_updates(runs, data_bin, tmp_path):
    """fairseq sends the checkpoint from rank 0 to the others, where torch's weights-only loading
    refused it in a traceback, and rank 0 ended in gloo's, over the other's end: every process
    reads it now."""
    checkpoint = runs["single"][1] / "checkpoint_last.pt"
    more = ["--max-update", str(UPDATES + 2), "--disable-validation", "--restore-file", checkpoint]
    workers = _two_gloo_workers(data_bin, tmp_path, *more)
    assert [code for code, _ in workers] == [0, 0], workers[0][1][-2000:] + workers[1][1][-2000:]
    resumed = torch.load(tmp_path / "checkpoint_last.pt")["optimizer_history"][-1]
    assert resumed["num_updates"] == UPDATES + 2


def test_workers_given_another_seed_each_stop_before_training_in_one_line(data_bin, tmp_path):
    """Under fairseq's own all-reduce, each process built its first parameters from its own --seed
    and trained a model of its own, without a word: every process stops, within seconds, with the
    line that names what differs (bahdanau_plugin/ranks.py)."""
    flags = ["--max-update", "2", "--disable-validation"]
    workers = _two_gloo_workers(data_bin, tmp_path, *flags, own=([], ["--seed", "4"]), timeout=120)
    for returncode, output in workers:
        assert returncode != 0
        assert "Traceback" not in output
        last = output.strip().splitlines()[-1]
        differs = "differ in --seed: 3 in rank 0, 4 in rank 1, and would not train one model"
        assert "error: the 2 processes of this distributed training " + differs in last
    assert not (tmp_path / "checkpoint_last.pt").exists()
