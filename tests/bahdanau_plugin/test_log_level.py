"""LOGLEVEL, read as fairseq's tools read it, whatever its case; a value that names no level is
said in one line and logging goes on at INFO. In a Python program the plugin's loggers take that
level (bahdanau_plugin/__init__.py), never more verbose than the program's own."""

import logging
import subprocess

from bahdanau_plugin.log_level import fairseqs_log_level

from ..support.tools import fairseq_env, fairseq_tool, python_program


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


def plugin_log_level_in_a_python_program(before_import: str = "") -> int:
    """The level of the plugin's loggers in a fresh Python program that runs before_import, then
    imports the plugin (LOGLEVEL unset)."""
    program = (
        f"import logging\n{before_import}\nimport bahdanau_plugin\n"
        "print(logging.getLogger('bahdanau_plugin.speed.compiling').getEffectiveLevel())"
    )
    environment = {key: value for key, value in fairseq_env().items() if key != "LOGLEVEL"}
    return int(python_program(program, env=environment).stdout.split()[-1])


def test_in_a_python_program_the_plugin_logs_at_info_though_fairseq_set_debug():
    assert plugin_log_level_in_a_python_program() == logging.INFO


def test_in_a_python_program_that_logs_warnings_only_the_plugin_does_too():
    before = "logging.basicConfig(level=logging.WARNING)"
    assert plugin_log_level_in_a_python_program(before) == logging.WARNING
