"""--task translation_with_source_words owns --replace-unk: the option reaches the task, past
fairseq-generate's check for raw text, and fairseq's own generation option stays unset; it
translates an empty line as empty."""

import re

from fairseq import options
from fairseq.dataclass.utils import convert_namespace_to_omegaconf

import bahdanau_plugin  # noqa: F401  (registers the task, as --user-dir does)
from bahdanau_plugin.unknown_words import NO_DICTIONARY

from ...support.paths import PLUGIN
from ...support.tools import run

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


def test_fairseq_interactive_translates_an_empty_or_blank_line_as_empty(data_bin, checkpoints):
    """fairseq's translation task makes a sentence up from the end of sentence alone."""
    output = run(
        "fairseq-interactive",
        data_bin,
        "--user-dir",
        PLUGIN,
        *TASK,
        "--path",
        checkpoints["rnnsearch_50"],
        "--source-lang",
        "en",
        "--target-lang",
        "fr",
        "--max-len-b",
        "20",
        stdin="the dog sees a cat\n\n \t \n",
    )
    hypotheses = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", output, flags=re.M))
    assert sorted(hypotheses) == ["0", "1", "2"]
    assert hypotheses["1"] == hypotheses["2"] == ""
    assert re.search(r"^H-1\t0\.0\t$", output, flags=re.M)
