"""--task translation_with_source_words owns --replace-unk: the option reaches the task, past
fairseq-generate's check for raw text, and fairseq's own generation option stays unset."""

from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import bahdanau_plugin  # noqa: F401  (registers the task, as --user-dir does)
from bahdanau_plugin.unknown_words import NO_DICTIONARY

TASK = ["--task", "translation_with_source_words"]


def generation_configuration(*arguments):
    """What fairseq-generate's parser makes of arguments."""
    parser = options.get_generation_parser()
    return convert_namespace_to_omegaconf(options.parse_args_and_arch(parser, ["DATA", *arguments]))


def test_the_task_takes_replace_unk_with_its_dictionary_from_fairseqs_generation_options():
    cfg = generation_configuration(*TASK, "--replace-unk", "dictionary.txt")
    assert cfg.task.unk_replacement == "dictionary.txt"
    assert cfg.generation.replace_unk is None


def test_a_bare_replace_unk_is_stored_as_fairseq_stores_it_to_copy_source_words():
    assert generation_configuration(*TASK, "--replace-unk").task.unk_replacement == NO_DICTIONARY


def test_without_the_task_replace_unk_stays_fairseqs_option():
    cfg = generation_configuration("--replace-unk", "dictionary.txt")
    assert cfg.generation.replace_unk == "dictionary.txt"
    assert "unk_replacement" not in cfg.task
