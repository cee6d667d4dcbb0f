"""LOGLEVEL, read as fairseq's tools read it, whatever its case; a value that names no level is
said in one line and logging goes on at INFO."""

import logging
import subprocess

from bahdanau_plugin.log_level import fairseqs_log_level

from ..support.tools import fairseq_env, fairseq_tool


def test_loglevel_is_read_whatever_its_case(monkeypatch):
    monkeypatch.setenv("LOGLEVEL", "debug")
    assert fairseqs_log_level() == logging.DEBUG


def test_without_loglevel_the_level_is_info(monkeypatch):
    monkeypatch.delenv("LOGLEVEL", raising=False)
    assert fairseqs_log_level() == logging.INFO


def test_a_loglevel_that_is_no_level_is_one_warning_and_the_command_runs():
    completed = subprocess.run(
        [fairseq_tool("bahdanau-evaluate"), "--help"],
        capture_output=True,
        text=True,
        env={**fairseq_env(), "LOGLEVEL": "verbose"},
        timeout=300,
    )
    assert completed.returncode == 0 and completed.stdout.startswith("usage: bahdanau-evaluate")
    warnings = [line for line in completed.stderr.splitlines() if "LOGLEVEL" in line]
    assert warnings == [
        "WARNING:bahdanau_plugin.log_level:LOGLEVEL=VERBOSE is not a logging level "
        "(DEBUG, INFO, WARNING, ERROR or CRITICAL): logging at INFO"
    ]
