"""Errors the plugin explains end a command with one line (bahdanau_plugin/errors.py)."""

import sys
import traceback

import pytest
from fairseq import checkpoint_utils
from hydra.core.utils import JobReturn, JobStatus
from torch.multiprocessing.spawn import ProcessRaisedException

from bahdanau_plugin import errors
from bahdanau_plugin.errors import ConfigurationError


def test_a_plugin_error_is_its_message():
    assert errors.one_line(ConfigurationError("--x 0: give a positive size")) == (
        "--x 0: give a positive size"
    )


def test_an_error_of_another_kind_is_left_to_the_traceback():
    assert errors.one_line(KeyError("model")) is None


def test_a_truncated_checkpoint_is_explained_with_the_path_fairseq_was_reading(tmp_path):
    path = tmp_path / "cut.pt"
    path.write_bytes(b"PK\x03\x04 not a whole zip archive")
    with pytest.raises(Exception) as failure:
        checkpoint_utils.load_checkpoint_to_cpu(str(path))
    explanation = errors.one_line(failure.value)
    assert explanation.startswith(f"cannot read checkpoint {path}: the file is incomplete")


def test_the_hook_prints_an_explained_error_as_one_line_and_hands_on_the_others(capsys):
    handed_on = []
    hook = errors.printing_errors_as_one_line(lambda *error: handed_on.append(error[1]))
    other = KeyError("model")
    hook(ConfigurationError, ConfigurationError("say what to do"), None)
    hook(KeyError, other, None)
    assert capsys.readouterr().err == "error: say what to do\n"
    assert handed_on == [other]


def test_installing_the_hook_twice_wraps_the_previous_hook_once(monkeypatch):
    monkeypatch.setattr(sys, "excepthook", sys.__excepthook__)
    errors.print_errors_as_one_line()
    installed = sys.excepthook
    errors.print_errors_as_one_line()
    assert sys.excepthook is installed


@pytest.fixture
def hydra_jobs_errors_as_one_line(monkeypatch):
    """The hook on hydra's jobs installed, and taken off after the test."""
    monkeypatch.setattr(JobReturn, "return_value", JobReturn.return_value)
    errors.print_hydra_jobs_errors_as_one_line()


def failed_job(error: Exception) -> JobReturn:
    """What hydra's run_job returns for a job (fairseq-hydra-train's training) that raised error."""
    job = JobReturn(overrides=["task.data=DATA"], status=JobStatus.FAILED)
    job.return_value = error
    return job


def test_a_hydra_job_that_failed_with_an_explained_error_ends_the_command_with_its_line(
    hydra_jobs_errors_as_one_line, capsys
):
    """hydra raises a job's error again where its result is read, into its own handler, which
    prints a traceback: sys.excepthook never sees it."""
    with pytest.raises(SystemExit) as ended:
        failed_job(ConfigurationError("model.dropout: 2.0 is not a probability")).return_value
    assert ended.value.code == 1
    assert capsys.readouterr().err == "error: model.dropout: 2.0 is not a probability\n"


def test_a_hydra_job_that_failed_with_another_error_is_left_to_hydra(
    hydra_jobs_errors_as_one_line, capsys
):
    other = KeyError("model")
    with pytest.raises(KeyError) as raised:
        failed_job(other).return_value
    assert raised.value is other
    assert "Error executing job with overrides: ['task.data=DATA']" in capsys.readouterr().err


def test_a_hydra_job_that_completed_returns_its_result(hydra_jobs_errors_as_one_line):
    job = JobReturn(status=JobStatus.COMPLETED)
    job.return_value = 0.5
    assert job.return_value == 0.5


def test_installing_the_hook_on_hydra_s_jobs_twice_wraps_hydra_s_result_once(
    hydra_jobs_errors_as_one_line,
):
    installed = JobReturn.return_value
    errors.print_hydra_jobs_errors_as_one_line()
    assert JobReturn.return_value is installed


def _as_raised_in_a_worker(error: Exception) -> ProcessRaisedException:
    """What torch.multiprocessing.spawn (fairseq-train on several GPUs) raises in the parent."""
    try:
        raise error
    except Exception:
        trace = traceback.format_exc()
    return ProcessRaisedException(
        f"\n\n-- Process 1 terminated with the following error:\n{trace}", 1, 42
    )


def test_a_plugin_error_of_a_worker_process_is_its_message():
    error = _as_raised_in_a_worker(ConfigurationError("--x 0: use --x 1"))
    assert errors.one_line(error) == "--x 0: use --x 1"


def test_another_error_of_a_worker_process_is_left_to_the_traceback():
    assert errors.one_line(_as_raised_in_a_worker(ValueError("Unsupported optimizer"))) is None
