"""The plugin's errors end a command with one line, also when raised in a worker process."""

import traceback

from torch.multiprocessing.spawn import ProcessRaisedException

from bahdanau_plugin.errors import ConfigurationError, printing_plugin_errors_as_one_line


def _as_raised_in_a_worker(error: Exception) -> ProcessRaisedException:
    """What torch.multiprocessing.spawn (fairseq-train on several GPUs) raises in the parent."""
    try:
        raise error
    except Exception:
        trace = traceback.format_exc()
    return ProcessRaisedException(
        f"\n\n-- Process 1 terminated with the following error:\n{trace}", 1, 4242
    )


def _printed(error: BaseException, capsys):
    passed_on = []
    hook = printing_plugin_errors_as_one_line(lambda *exception: passed_on.append(exception[1]))
    hook(type(error), error, None)
    return capsys.readouterr().err, passed_on


def test_a_plugin_error_prints_as_one_line(capsys):
    printed, passed_on = _printed(ConfigurationError("--x 0: use --x 1"), capsys)
    assert (printed, passed_on) == ("error: --x 0: use --x 1\n", [])


def test_a_plugin_error_of_a_worker_process_prints_as_one_line(capsys):
    printed, passed_on = _printed(
        _as_raised_in_a_worker(ConfigurationError("--x 0: use --x 1")), capsys
    )
    assert (printed, passed_on) == ("error: --x 0: use --x 1\n", [])


def test_another_error_of_a_worker_process_keeps_its_traceback(capsys):
    error = _as_raised_in_a_worker(ValueError("Unsupported optimizer: adadelta"))
    printed, passed_on = _printed(error, capsys)
    assert (printed, passed_on) == ("", [error])
