"""How the GPU kit's sections judge what they measure (bench/gpu), and how it starts processes side
by side; the sections themselves run end to end in test_gpu_kit.py."""

import pytest
import torch

from bench.gpu import distributed, equivalence, precision_training
from bench.gpu.kit import Kit

# float32's validation losses on the demo corpus, every 20 updates (a CPU, docs/gpu-kit.md)
FLOAT32 = {20: 4.798, 40: 3.947, 60: 3.582, 80: 3.394, 100: 3.283, 120: 2.798, 140: 2.457,
           160: 1.565, 180: 0.702, 200: 0.224, 220: 0.107, 240: 0.014}  # fmt: skip


def test_a_gpu_gradient_is_held_to_the_cpu_s_relative_to_the_largest_gradient():
    """The H100's rnnencdec of 2026-11-25: 1.2e-5 off on a largest gradient of 3.0."""
    difference = equivalence.difference(torch.tensor([1.2e-5]), torch.tensor([0.0]), 3.0)
    assert difference["relative"] == pytest.approx(1.2e-5 / 3.0)
    assert difference["relative"] <= equivalence.TOLERANCE


def test_a_difference_among_values_under_1_is_held_absolutely():
    difference = equivalence.difference(torch.tensor([0.25]), torch.tensor([0.25 - 2e-5]), 0.5)
    assert difference["relative"] == difference["absolute"] > equivalence.TOLERANCE


def test_the_precisions_are_compared_where_float32_last_falls_before_its_steep_fall():
    assert precision_training.comparison_point(FLOAT32) == 140


def test_a_validation_that_rose_is_not_a_comparison_point():
    rose = {**{u: FLOAT32[u] for u in (20, 40, 60, 80, 100, 120)}, 130: 3.008}
    assert precision_training.comparison_point(rose) == 120


def test_losses_near_the_floor_are_never_compared():
    near_floor = {250: 0.007, 260: 0.0069, 270: 0.005}
    assert precision_training.comparison_point(near_floor) is None


def _curves(**others):
    return {"float32": {u: FLOAT32[u] for u in (20, 40, 60, 80, 100, 120)}, **others}


def test_a_precision_that_learns_like_float32_holds():
    compared = precision_training.compare(
        _curves(**{"--bf16": {20: 4.813, 40: 3.891, 60: 3.617, 80: 3.394, 100: 3.213, 120: 2.865}})
    )
    assert (compared["point"], compared["learned"], compared["passed"]) == (120, True, True)


def test_a_precision_that_does_not_learn_fails():
    stuck = dict.fromkeys((20, 40, 60, 80, 100, 120), 4.8)
    compared = precision_training.compare(_curves(**{"--fp16": stuck}))
    assert not compared["losses"]["--fp16"]["within"]
    assert not compared["passed"]


def test_float32_that_did_not_learn_fails_the_comparison():
    flat = {20: 4.8, 40: 4.7, 60: 4.6}
    compared = precision_training.compare({"float32": flat, "--bf16": flat})
    assert not compared["learned"]
    assert not compared["passed"]


def _state(value):
    return {"weight": torch.tensor([value, 0.5])}


def test_a_float32_worker_off_by_more_than_rounding_fails():
    agreement = distributed.agreement(([6.5], _state(1.0)), ([6.5], _state(1.0 + 1e-4)), "float32")
    assert not agreement["passed"]


def test_a_float16_worker_a_few_rounding_steps_off_holds():
    off_by_three_steps = 1.0 + 3 * 2**-10  # as a GPU run measured
    agreement = distributed.agreement(
        ([6.5], _state(1.0)), ([6.5], _state(off_by_three_steps)), "--fp16"
    )
    assert agreement["passed"], agreement


def test_a_float16_worker_off_by_a_wrong_gradient_s_size_fails():
    agreement = distributed.agreement(([6.5], _state(1.0)), ([6.5], _state(1.05)), "--fp16")
    assert not agreement["passed"]


def test_workers_that_logged_fewer_updates_fail():
    agreement = distributed.agreement(([6.5, 6.4], _state(1.0)), ([6.5], _state(1.0)), "float32")
    assert not agreement["passed"]


def test_processes_started_side_by_side_share_the_cores_between_their_threads(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    env = Kit(device="cpu", work=None).env(side_by_side=5)
    assert env["OMP_NUM_THREADS"] == "3"


def test_a_thread_count_set_in_the_environment_wins(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert Kit(device="cpu", work=None).env(side_by_side=2)["OMP_NUM_THREADS"] == "1"


def test_the_tf32_settings_are_torch_s_and_nvidia_s_variables():
    kit = Kit(device="cuda", work=None)
    assert kit.env("off")["NVIDIA_TF32_OVERRIDE"] == "0"
    assert kit.env("on")["TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"] == "1"
    cudnn_only = kit.env("cuDNN only")
    assert "NVIDIA_TF32_OVERRIDE" not in cudnn_only
    assert "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE" not in cudnn_only
