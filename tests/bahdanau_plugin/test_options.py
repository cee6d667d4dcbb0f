"""The argument types of bahdanau_plugin/options.py that the tools' path options take: a path that
starts with a '~' the shell left as it is (--out=~/x) is refused, naming the path to write instead;
tests/bahdanau_tools/test_output_folders.py gives it to each command."""

import argparse
from pathlib import Path

import pytest

from bahdanau_plugin.options import path_argument


@pytest.fixture
def home(tmp_path, monkeypatch):
    """The current folder tmp_path/work, and the home folder tmp_path/home."""
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def test_a_path_starting_with_a_tilde_the_shell_left_is_refused_saying_what_to_write(home):
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        path_argument("~/results")
    assert str(raised.value) == (
        "~/results starts with a folder named '~' in the current folder, not a home folder: the "
        "shell expands '~' only at the start of a word, not after '=' nor in quotes; write "
        f"{home / 'results'}"
    )


def test_a_path_in_a_folder_named_tilde_that_is_there_is_taken(home):
    (home.parent / "work" / "~").mkdir()
    assert str(path_argument("~/results")) == "~/results"


@pytest.mark.parametrize("text", ["./~/results", "results/~", "~no-such-user/results"])
def test_a_path_whose_tilde_the_shell_would_not_expand_either_is_taken(home, text):
    assert path_argument(text) == Path(text)
