"""A language the command gave that fairseq's translation task ignored, having taken the pair from
the data-bin's file names, is one line when these models are built; so is a data-bin of more than
one pair where a language is left out (bahdanau_plugin/models/language_pair.py)."""

import os
from types import SimpleNamespace

import pytest

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.models.language_pair import LANGUAGES_GIVEN, check_language_pair

from ...support.assertions import assert_one_line_error
from ...support.tools import tool_on_bytes
from ...support.training import train_command


def task_set_up(data, given, taken=("en", "fr")):
    """A translation task as a fairseq tool sets it up: the languages the command gave recorded,
    those taken in its configuration."""
    cfg = SimpleNamespace(data=str(data), source_lang=taken[0], target_lang=taken[1])
    return SimpleNamespace(cfg=cfg, **{LANGUAGES_GIVEN: given})


def data_bin_of(folder, *pairs):
    folder.mkdir()
    for pair in pairs:
        for language in pair.split("-"):
            (folder / f"train.{pair}.{language}.bin").touch()
    return folder


def test_a_lone_source_language_the_task_overrode_says_to_give_both(tmp_path):
    data = data_bin_of(tmp_path / "data-bin", "en-fr")
    with pytest.raises(ConfigurationError) as raised:
        check_language_pair(task_set_up(data, ("fr", None)))
    assert "the model would translate en into fr: give --source-lang fr --target-lang en" in str(
        raised.value
    )


def test_a_lone_target_language_the_task_overrode_says_to_give_both(tmp_path):
    data = data_bin_of(tmp_path / "data-bin", "en-fr")
    with pytest.raises(ConfigurationError, match="give --target-lang en --source-lang fr"):
        check_language_pair(task_set_up(data, (None, "en")))


def test_a_lone_language_the_data_bin_lacks_names_its_languages(tmp_path):
    data = data_bin_of(tmp_path / "data-bin", "en-fr")
    with pytest.raises(ConfigurationError, match=r"languages of the data-bin \(en and fr\)"):
        check_language_pair(task_set_up(data, ("de", None)))


def test_a_lone_language_the_task_took_as_given_is_accepted(tmp_path):
    check_language_pair(task_set_up(data_bin_of(tmp_path / "data-bin", "en-fr"), ("en", None)))


def test_both_languages_given_are_accepted_on_a_data_bin_of_two_pairs(tmp_path):
    data = data_bin_of(tmp_path / "data-bin", "en-fr", "fr-en")
    check_language_pair(task_set_up(data, ("fr", "en"), taken=("fr", "en")))


def test_a_language_left_out_on_a_data_bin_of_two_pairs_names_them(tmp_path):
    data = data_bin_of(tmp_path / "data-bin", "en-fr", "fr-en")
    with pytest.raises(ConfigurationError, match="holds the language pairs en-fr, fr-en"):
        check_language_pair(task_set_up(data, (None, None)))


def test_a_task_set_up_outside_a_fairseq_tool_is_not_checked(tmp_path):
    task = task_set_up(data_bin_of(tmp_path / "data-bin", "en-fr"), None)
    delattr(task, LANGUAGES_GIVEN)
    check_language_pair(task)


def test_fairseq_train_with_a_lone_source_language_it_would_ignore_is_one_line(data_bin, tmp_path):
    command = train_command(data_bin, tmp_path, "rnnsearch", "--max-update", "1", "--no-save")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command, "--source-lang", "fr")
    assert_one_line_error(
        returncode,
        stderr,
        "--source-lang fr was given without --target-lang",
        "give --source-lang fr --target-lang en",
    )


def test_fairseq_train_on_a_data_bin_of_two_pairs_without_languages_is_one_line(data_bin, tmp_path):
    both_ways = tmp_path / "both-ways"
    both_ways.mkdir()
    for name in os.listdir(data_bin):
        (both_ways / name).symlink_to(data_bin / name)
        if ".en-fr." in name:
            (both_ways / name.replace(".en-fr.", ".fr-en.")).symlink_to(data_bin / name)
    command = train_command(both_ways, tmp_path, "rnnsearch", "--max-update", "1", "--no-save")
    returncode, _, stderr = tool_on_bytes("fairseq-train", *command)
    assert_one_line_error(returncode, stderr, "holds the language pairs en-fr, fr-en")
