"""The GPU kit (bench/gpu) runs every one of its sections end to end: on the CPU at tiny sizes,
its dry run, so that what only a lent GPU machine runs cannot rot."""

import json
import subprocess
import sys

import pytest

from bench.gpu.report import TITLES

from ..support.paths import REPO
from ..support.tools import fairseq_env


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("gpu-kit")
    completed = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.gpu",
            "--dry-run",
            "--results",
            root / "results",
            "--report",
            root / "gpu.md",
            "--work",
            root / "work",
        ],
        cwd=REPO,
        env=fairseq_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    results = {name: json.loads((root / "results" / f"{name}.json").read_text()) for name in TITLES}
    return results, (root / "gpu.md").read_text()


def test_every_section_runs_without_error(dry_run):
    results, _ = dry_run
    assert {name: run.get("error") for name, run in results.items()} == dict.fromkeys(TITLES)


def test_the_report_has_a_part_for_every_section_and_says_it_is_a_dry_run(dry_run):
    _, report = dry_run
    assert all(f"## {title}" in report for title in TITLES.values())
    assert report.count("not GPU numbers") == len(TITLES)


def test_the_unit_tests_pass_on_the_dry_run_s_device(dry_run):
    assert dry_run[0]["unit_tests"]["result"]["passed"]


def test_every_precision_trains_the_demo_model(dry_run):
    losses = dry_run[0]["precision_training"]["result"]["losses"]
    assert set(losses) == {"float32", "--fp16", "--bf16", "--amp", "--memory-efficient-fp16"}
    assert all("loss" in row for row in losses.values()), losses


def test_the_cpu_compared_with_itself_differs_in_nothing(dry_run):
    result = dry_run[0]["equivalence"]["result"]
    for models in result["values_and_gradients"].values():
        assert all(m["log_probs"] == m["gradients"] == 0 for m in models.values())
    assert result["passed"]


def test_both_models_train_and_decode_in_both_precisions(dry_run):
    results = dry_run[0]["paper_size"]["result"]["results"]
    for precision in ("float32", "bfloat16"):
        for model in ("rnnsearch", "lstm"):
            row = results[precision][model]
            assert row["training"]["words_per_second"] > 0, row
            assert row["decoding"]["tokens_per_second"] > 0, row


def test_the_profile_counts_operations_per_target_position(dry_run):
    result = dry_run[0]["step_profile"]["result"]
    assert result["training_step"]["per_target_position"] > 0
    assert result["beam_search"]["per_target_position"] > 0


def test_the_profile_reports_the_operator_counts_of_both_models(dry_run):
    counts = dry_run[0]["step_profile"]["result"]["operator_counts"]
    assert set(counts) == {"rnnsearch", "rnnencdec"}
    for phases in counts.values():
        assert set(phases) == {"training forward", "training backward", "beam step"}
        assert all(measured["operators"] > 0 for measured in phases.values())
