"""The package as `pip install .` installs it (not editable): every user-facing step is a console
command that works from any directory, and fairseq's tools load the installed plugin with
`--user-dir bahdanau_plugin` from outside the clone (fairseq also looks for a user folder beside
its own package, where pip puts the plugin).

The fresh environment gets the package's own wheel; its dependencies (torch, ...) are the tests'
environment's, read through a .pth file, with fairseq's package copied in beside the plugin as pip
would install it."""

import configparser
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from ..support.paths import REPO

COMMANDS = [
    "bahdanau-prepare-data",
    "bahdanau-average-checkpoints",
    "bahdanau-unk-dictionary",
    "bahdanau-serve",
    "bahdanau-evaluate",
    "bahdanau-plot-alignment",
]
# What a build of the package reads from the clone.
SOURCES = ["bahdanau_plugin", "bahdanau_tools", "setup.cfg", "pyproject.toml", "README.md"]


def _run(command, cwd, **kwargs):
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [str(part) for part in command],
        cwd=cwd,
        env={**env, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the fresh environment's Python, a working directory outside the clone)."""
    root = tmp_path_factory.mktemp("installed")
    source = root / "source"
    source.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy(REPO / name, source / name)
    wheels = root / "wheels"
    built = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            wheels,
            source,
        ],
        root,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    venv = root / "venv"
    assert _run([sys.executable, "-m", "venv", venv], root).returncode == 0
    python = venv / "bin" / "python"
    site = Path(
        _run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], root
        ).stdout.strip()
    )
    tests_site = Path(sysconfig.get_path("purelib"))
    (site / "dependencies.pth").write_text(f"{tests_site}\n")
    shutil.copytree(tests_site / "fairseq", site / "fairseq")  # not a link: fairseq reads its ..
    wheel = next(wheels.glob("bahdanau_fairseq-*.whl"))
    pip = _run([python, "-m", "pip", "install", "--no-deps", "--no-index", "-q", wheel], root)
    assert pip.returncode == 0, pip.stderr[-3000:]
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    return python, elsewhere


def test_the_commands_installed_are_the_user_s_steps():
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    entry_points = setup["options.entry_points"]["console_scripts"].strip().splitlines()
    assert [line.split("=")[0].strip() for line in entry_points] == COMMANDS


def test_the_installed_package_is_imported_not_the_clone(installed):
    python, elsewhere = installed
    completed = _run(
        [
            python,
            "-c",
            "import bahdanau_plugin, bahdanau_tools; "
            "print(bahdanau_plugin.__file__, bahdanau_tools.__file__)",
        ],
        elsewhere,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    paths = [Path(path) for path in completed.stdout.split()]
    assert all(python.parents[1] in path.parents for path in paths), paths


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_answers_help_from_any_directory(installed, command):
    python, elsewhere = installed
    completed = _run([python.parent / command, "--help"], elsewhere)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.startswith(f"usage: {command}")


def test_fairseq_generate_loads_the_installed_plugin_by_its_name(installed, data_bin, checkpoints):
    python, elsewhere = installed
    completed = _run(
        [
            python,
            "-m",
            "fairseq_cli.generate",
            data_bin,
            "--user-dir",
            "bahdanau_plugin",
            "--path",
            checkpoints["rnnsearch_30"],
            "--beam",
            "2",
            "--max-len-b",
            "5",
            "--cpu",
        ],
        elsewhere,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "H-0\t" in completed.stdout
