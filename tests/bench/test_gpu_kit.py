"""The GPU kit (bench/gpu) runs every one of its sections end to end: on the CPU at tiny sizes,
its dry run, so that what only a GPU machine runs cannot rot; and what would lose a real run's
results there (a test that assumes the CPU, a leftover reused, a command stopped at its time
limit, a profiler that records nothing) is held here. How the sections judge their numbers:
test_gpu_kit_judgements.py."""

import ast
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest
import torch

from bench.gpu import unit_tests
from bench.gpu.__main__ import SECTIONS, errors_in
from bench.gpu.report import TITLES
from bench.operator_counts import NoKernelsRecorded, device_kernels

from ..support.paths import REPO
from ..support.tools import fairseq_env

pytestmark = pytest.mark.long  # run first: tests/conftest.py


def kit(*arguments, env=None, **kwargs):
    """python -m bench.gpu with these arguments, as a user starts it, the models run eagerly
    (``recurrence`` compiles the step whatever the setting: what compiling does to the sections is
    measured on the GPU, and on the CPU by tests/bahdanau_plugin/speed)."""
    return subprocess.Popen(
        [sys.executable, "-m", "bench.gpu", *map(str, arguments)],
        cwd=REPO,
        env={**fairseq_env(), **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


def finished(process, timeout=900):
    stdout, stderr = process.communicate(timeout=timeout)
    return process.returncode, stdout, stderr


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory):
    """The kit's dry run, its copy-to folder given by the kit's variable (root/copied): the
    results, the report and the root folder."""
    root = tmp_path_factory.mktemp("gpu-kit")
    (root / "copied").mkdir()
    arguments = ["--dry-run", "--results", root / "results", "--report", root / "gpu.md"]
    copy_to = {"BAHDANAU_GPU_KIT_COPY_TO": str(root / "copied")}
    returncode, _, stderr = finished(kit(*arguments, "--work", root / "work", env=copy_to))
    assert returncode == 0, stderr[-3000:]
    results = {name: json.loads((root / "results" / f"{name}.json").read_text()) for name in TITLES}
    return results, (root / "gpu.md").read_text(), root


def test_every_section_runs_without_error(dry_run):
    results, _, _ = dry_run
    assert {name: run.get("error") for name, run in results.items()} == dict.fromkeys(TITLES)


def test_the_kit_runs_every_section_in_one_command_by_default(dry_run):
    results, _, _ = dry_run
    assert list(results) == list(SECTIONS)


def test_the_report_has_a_part_for_every_section_and_says_it_is_a_dry_run(dry_run):
    _, report, _ = dry_run
    titles = [f"## {number}. {title}\n" for number, title in enumerate(TITLES.values(), start=1)]
    assert all(title in report for title in titles)
    assert report.count("not GPU numbers") == len(TITLES)


def test_the_unit_tests_pass_on_the_dry_run_s_device(dry_run):
    assert dry_run[0]["unit_tests"]["result"]["passed"]


def test_every_precision_trains_the_demo_model_and_is_validated_at_every_point(dry_run):
    losses = dry_run[0]["precision_training"]["result"]["losses"]
    assert set(losses) == {"float32", "--fp16", "--bf16", "--amp", "--memory-efficient-fp16"}
    assert all(list(row["curve"]) == ["2", "4"] for row in losses.values()), losses


def test_fairseq_s_lstm_is_trained_in_float32_and_with_amp_beside_them(dry_run):
    losses = dry_run[0]["precision_training"]["result"]["lstm"]["losses"]
    assert set(losses) == {"float32", "--amp"}
    assert all(list(row["curve"]) == ["2", "4"] for row in losses.values()), losses


def test_the_cpu_compared_with_itself_differs_in_nothing_in_either_mode(dry_run):
    result = dry_run[0]["equivalence"]["result"]
    for modes in result["values_and_gradients"].values():
        assert set(modes) == {"training", "eval"}
        for models in modes.values():
            for m in models.values():
                assert m["log_probs"]["absolute"] == m["gradients"]["absolute"] == 0, m
    assert result["passed"]


def test_two_gloo_workers_train_as_one_process_with_update_freq_2(dry_run):
    result = dry_run[0]["distributed"]["result"]
    assert list(result["cases"]) == ["float32, legacy_ddp"]  # the one a CPU runs
    assert result["cases"]["float32, legacy_ddp"]["updates"] == 2
    assert result["passed"], result


def test_both_models_train_at_both_batches_and_decode_in_every_precision(dry_run):
    results = dry_run[0]["paper_size"]["result"]["results"]
    assert list(results) == ["float32, TF32 off", "float32, TF32 on", "bfloat16"]
    for row in results.values():
        for model in ("rnnsearch", "lstm"):
            trained = row[model]["training"]
            assert list(trained) == ["8 sentences", "60 tokens"]
            assert all(t["words_per_second"] > 0 for t in trained.values()), trained
            assert row[model]["decoding"]["tokens_per_second"] > 0, row[model]


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


def test_each_section_computes_in_a_work_folder_of_its_own_per_device(dry_run):
    _, _, root = dry_run
    assert sorted(path.name for path in (root / "work").iterdir()) == ["cpu"]
    assert sorted(path.name for path in (root / "work" / "cpu").iterdir()) == sorted(TITLES)


def git_status() -> str:
    git = ["git", "status", "--porcelain", "--untracked-files=all"]
    return subprocess.run(git, cwd=REPO, capture_output=True, text=True, check=True).stdout


@pytest.fixture(scope="module")
def rerun(tmp_path_factory):
    """The kit's quickest section, ``unit_tests``, run with the default paths of its results and
    report, into a work folder where an earlier run left a file in the section's folder: one run
    for the two tests that follow. The leftover, the work folder and git's status before and
    after the run."""
    work = tmp_path_factory.mktemp("rerun") / "work"
    leftover = work / "cpu" / "unit_tests" / "checkpoint_last.pt"
    leftover.parent.mkdir(parents=True)
    leftover.write_text("left by an earlier run")
    before = git_status()
    returncode, _, stderr = finished(kit("--dry-run", "--sections", "unit_tests", "--work", work))
    assert returncode == 0, stderr[-3000:]
    return SimpleNamespace(leftover=leftover, work=work, status=(before, git_status()))


def test_a_second_run_in_the_same_work_folder_computes_afresh(rerun):
    """Each section's work folder is emptied as the section starts: ``distributed``, for one,
    trains into checkpoint folders from which fairseq-train would resume."""
    assert not rerun.leftover.exists()
    result = json.loads((rerun.work / "cpu" / "results" / "unit_tests.json").read_text())
    assert result["result"]["passed"]


def test_a_dry_run_with_the_default_paths_writes_nothing_git_tracks(rerun):
    before, after = rerun.status
    assert after == before
    assert (rerun.work / "cpu" / "results" / "unit_tests.json").exists()


def test_a_run_stopped_after_a_section_has_its_result_and_report_in_the_copy_to_folder(tmp_path):
    copy_to = tmp_path / "copied"
    copy_to.mkdir()
    process = kit(
        "--dry-run",
        "--sections",
        "unit_tests",
        "equivalence",
        "--work",
        tmp_path / "work",
        "--copy-to",
        copy_to,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while not (copy_to / "unit_tests.json").exists() and process.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)  # as a command is stopped at its time limit
    process.communicate()
    assert sorted(path.name for path in copy_to.iterdir()) == ["latest.md", "unit_tests.json"]
    assert TITLES["unit_tests"] in (copy_to / "latest.md").read_text()


def test_the_copy_to_folder_may_be_given_by_the_kit_s_variable(dry_run):
    _, report, root = dry_run
    copied = sorted(path.name for path in (root / "copied").iterdir())
    assert copied == sorted(["gpu.md", *(f"{name}.json" for name in TITLES)])  # its --report
    assert (root / "copied" / "gpu.md").read_text() == report


def test_a_copy_to_folder_that_does_not_exist_is_refused_in_one_line(tmp_path):
    returncode, _, stderr = finished(kit("--dry-run", "--copy-to", tmp_path / "missing"))
    assert returncode == 2
    assert (
        stderr.strip()
        .splitlines()[-1]
        .endswith(f"--copy-to {tmp_path / 'missing'}: no such folder")
    )


def test_an_error_recorded_in_a_measurement_fails_the_kit():
    run = {"result": {"results": {"float32": {"lstm": {"error": "division by zero"}}}}}
    assert errors_in(run) == ["division by zero"]
    assert errors_in({"error": "RuntimeError: no GPU"}) == ["RuntimeError: no GPU"]


def test_a_profile_that_records_no_gpu_kernel_is_an_error_not_a_count_of_0():
    operator = SimpleNamespace(name="aten::mm", device_type=torch.autograd.DeviceType.CPU)
    with pytest.raises(NoKernelsRecorded, match="no GPU kernel"):
        device_kernels([operator])
    kernel = SimpleNamespace(name="gemm", device_type=torch.autograd.DeviceType.CUDA)
    assert device_kernels([operator, kernel]) == [kernel]


def _files_run_on_the_gpu():
    """The test files the kit's first section runs with --device cuda, and the modules of tests/
    they import."""
    files = []
    for test in unit_tests.TESTS:
        path = REPO / test
        files += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    for path in files:  # grows as imports are found
        package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                module = importlib.util.resolve_name(
                    "." * node.level + (node.module or ""), package
                )
                found = REPO.joinpath(*module.split(".")).with_suffix(".py")
                if found.exists() and found not in files:
                    files.append(found)
    return files


def _calls_naming_no_device(matches) -> list:
    """Where the tests run on the GPU call something that ``matches`` (an ast.Call) without a
    ``device`` keyword: file:line."""
    return [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for path in _files_run_on_the_gpu()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and matches(node)
        and not any(keyword.arg == "device" for keyword in node.keywords)
    ]


def test_the_tests_run_on_the_gpu_make_every_random_generator_on_a_device_they_name():
    """torch.Generator() is the CPU's: with --device cuda a draw from it onto the default device
    fails (Expected a 'cuda' device type for generator), which a CPU run never shows."""
    assert _calls_naming_no_device(lambda call: ast.unparse(call.func) == "torch.Generator") == []


def test_the_tests_run_on_the_gpu_draw_from_a_generator_on_the_device_they_name():
    """A draw with a CPU generator onto the default device fails the same way on a GPU: every
    draw given a ``generator`` names its ``device`` too."""
    drawing = lambda call: any(keyword.arg == "generator" for keyword in call.keywords)  # noqa: E731
    assert _calls_naming_no_device(drawing) == []


def test_a_failed_unit_test_run_keeps_its_first_failure_s_traceback_not_the_list_of_names(tmp_path):
    failing = tmp_path / "test_failing.py"
    count = unit_tests.OUTPUT_KEPT // 50  # the failed tests' names alone fill what is kept
    names = "".join(f"def test_{n}():\n    assert {n} == -1, 'cause {n}'\n" for n in range(count))
    failing.write_text(names)
    output = subprocess.run(
        [sys.executable, "-m", "pytest", *unit_tests.PYTEST_OPTIONS, failing],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    ).stdout
    kept = unit_tests.first_failures(output)
    assert "cause 0" in kept and len(kept) <= unit_tests.OUTPUT_KEPT
    assert "cause 0" not in output[-unit_tests.OUTPUT_KEPT :]
