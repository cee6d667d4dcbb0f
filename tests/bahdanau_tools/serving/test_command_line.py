"""bahdanau-serve's command line: its help, its paths read from where it is run, and its options
checked before anything loads, with argparse's one-line errors."""

import os
import socket
from typing import Tuple

import pytest

from bahdanau_tools.serving.command_line import main

from ...support.tools import DEFAULT, command_in_this_process
from .conftest import Server


def _argument_error(capsys, *argv) -> str:
    with pytest.raises(SystemExit) as exit:
        main([str(argument) for argument in argv])
    assert exit.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def _refused_with_the_port_taken(capsys, data_bin, tmp_path, *options) -> Tuple[str, int]:
    """The argument error for the options, with a checkpoint that is not one and a --port that
    another socket listens on: the server fails on the port, then on the model, after its checks
    of the options. The error, and the port."""
    (tmp_path / "checkpoint.pt").write_bytes(b"not loaded")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = [tmp_path / "checkpoint.pt", "--data", data_bin, "--port", port, *options]
        return _argument_error(capsys, *argv), port


def test_a_missing_checkpoint_is_named(capsys, data_bin, tmp_path):
    missing = tmp_path / "missing.pt"
    assert (
        _argument_error(capsys, missing, "--data", data_bin)
        == f"bahdanau-serve: error: {missing} does not exist"
    )


def test_bpe_without_its_codes_is_refused(capsys, data_bin, serving_checkpoint):
    error = _argument_error(capsys, serving_checkpoint, "--data", data_bin, "--bpe", "subword_nmt")
    assert "--bpe subword_nmt and --bpe-codes go together" in error


@pytest.mark.parametrize("given", ["--source-lang", "--target-lang"])
def test_one_language_without_the_other_is_refused_before_the_port(
    capsys, data_bin, tmp_path, given
):
    """It was ignored: both were taken from the data folder's file names."""
    error, _ = _refused_with_the_port_taken(capsys, data_bin, tmp_path, given, "fr")
    assert "--source-lang and --target-lang go together" in error


def test_a_default_beam_over_the_largest_the_server_searches_is_refused(
    capsys, data_bin, serving_checkpoint
):
    error = _argument_error(capsys, serving_checkpoint, "--data", data_bin, "--beam", 100)
    assert "--beam 100 is over 64" in error


def test_a_non_positive_batch_size_is_refused(capsys, data_bin, serving_checkpoint):
    error = _argument_error(
        capsys, serving_checkpoint, "--data", data_bin, "--max-batch-sentences", 0
    )
    assert "argument --max-batch-sentences: 0 is not a positive integer" in error


@pytest.mark.parametrize("wait", ["inf", "nan", "-1", "10001"])
def test_a_batch_wait_that_is_not_a_number_of_milliseconds_up_to_10_seconds_is_refused(
    capsys, wait
):
    """An infinite wait failed in the model's thread, and every request hung; a NaN waited until
    a batch filled."""
    assert _argument_error(capsys, "checkpoint.pt", "--data", "d", "--batch-wait-ms", wait) == (
        f"bahdanau-serve: error: argument --batch-wait-ms: {wait} is not a number of milliseconds "
        "from 0 to 10,000"
    )


def test_a_request_limit_under_the_beam_that_would_refuse_every_request_is_refused(
    capsys, data_bin, serving_checkpoint
):
    error = _argument_error(
        capsys, serving_checkpoint, "--data", data_bin, "--max-request-beam-tokens", 4
    )
    assert "--max-request-beam-tokens 4 is under --beam 5: every request would be refused" in error


@pytest.mark.parametrize("port", [80000, 0, -1])
def test_a_port_out_of_range_is_refused(capsys, port):
    assert _argument_error(capsys, "checkpoint.pt", "--data", "data-bin", "--port", port) == (
        f"bahdanau-serve: error: argument --port: {port} is not a port number (1 to 65535)"
    )


def test_a_port_in_use_is_refused_before_the_model_loads(capsys, data_bin, tmp_path):
    error, port = _refused_with_the_port_taken(capsys, data_bin, tmp_path)
    assert f"cannot listen on --host 127.0.0.1 --port {port}: address already in use" in error


def test_a_host_that_names_no_address_is_refused_before_the_model_loads(capsys, data_bin, tmp_path):
    (tmp_path / "checkpoint.pt").write_bytes(b"not loaded")
    error = _argument_error(
        capsys, tmp_path / "checkpoint.pt", "--data", data_bin, "--host", "no-such-host.invalid"
    )
    assert "--host no-such-host.invalid names no address" in error


def test_help_names_the_command_that_writes_the_bpe_codes():
    help_text = command_in_this_process(main, "--help").stdout
    unwrapped = "".join(help_text.split())  # argparse wraps at hyphens
    assert "OUT/bpe.codesofbahdanau-prepare-data" in unwrapped and "prepare_" not in unwrapped


def test_relative_paths_are_read_from_the_folder_it_is_run_in(
    data_bin, serving_checkpoint, tmp_path
):
    """--data ../x, as typed from a subfolder: fairseq's hub would read it beside the checkpoint."""
    subfolder = tmp_path / "sub"
    subfolder.mkdir()
    relative_data = os.path.relpath(data_bin, subfolder)
    assert relative_data.startswith("..")
    served = Server(
        os.path.relpath(serving_checkpoint, subfolder),
        relative_data,
        tmp_path / "server.log",
        cwd=subfolder,
    )
    try:
        (translation,) = served.translate({"text": "the dog sees a cat"})
        assert translation["hypotheses"][0]["translation"]
    finally:
        served.stop()


def test_on_a_cpu_the_server_compiles_the_search_before_it_answers(
    data_bin, serving_checkpoint, tmp_path
):
    """A server runs long: its warm-up compiles the search, where a short decoding on a CPU stays
    eager by default, for one sentence and for several; a line says so for each, and neither a
    request of one sentence nor one of several waits for it."""
    served = Server(serving_checkpoint, data_bin, tmp_path / "server.log", env=DEFAULT)
    try:
        compiled = [line for line in served.output().splitlines() if "compiled" in line]
        (translation,) = served.translate({"text": "the dog sees a cat"})
        assert translation["hypotheses"][0]["translation"]
        assert len(served.translate({"text": ["a cat sees the dog", "the dog runs"]})) == 2
        later = [line for line in served.output().splitlines() if "compiled" in line]
    finally:
        served.stop()
    assert len(compiled) == 2, compiled
    assert all("next_words (without gradients, weights as constants" in line for line in compiled)
    assert later == compiled


def test_a_length_penalty_that_is_not_a_finite_number_is_refused(capsys, data_bin, tmp_path):
    """fairseq takes nan and ranks every translation by it (bahdanau_plugin/options.py)."""
    refusal, _ = _refused_with_the_port_taken(capsys, data_bin, tmp_path, "--lenpen", "nan")
    assert refusal == "bahdanau-serve: error: argument --lenpen: nan is not a finite number"


@pytest.fixture(scope="module")
def summing_server(checkpoint_preferring_one_more_word, data_bin, tmp_path_factory):
    """bahdanau-serve ranking by the summed log-probability, a translation 6 tokens at most, with a
    model whose every step prefers one more word (so that the sum keeps the shortest)."""
    log = tmp_path_factory.mktemp("summing-server") / "server.log"
    started = Server(
        checkpoint_preferring_one_more_word, data_bin, log, "--lenpen", "0", "--max-len-b", "6"
    )
    yield started
    started.stop()


def test_every_request_is_ranked_with_the_length_penalty_given(summing_server):
    """--lenpen 0 keeps the shortest of the translations that the search finishes: one word, where
    fairseq's default (the log-probability per token) keeps a longer one
    (tests/bahdanau_tools/evaluation/test_length_penalty.py)."""
    (translation,) = summing_server.translate({"text": "the dog sees a cat", "beam": 3})
    assert len(translation["hypotheses"][0]["target_words"]) == 2  # one word and <end>


def test_health_says_the_length_limit_and_penalty_every_request_is_searched_with(summing_server):
    health = summing_server.get("/health").json()
    assert (health["max_len_b"], health["lenpen"]) == (6, 0.0)
