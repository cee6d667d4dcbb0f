"""--task translation_with_source_words owns --replace-unk: the option reaches the task, past
fairseq-generate's check for raw text, and fairseq's own generation option stays unset; it
translates an empty line, or one of format characters alone (U+200B), as empty, reads a control
symbol typed as a word (</s>, <pad>) as an unknown word, reads every line in NFC, as the training
text was written, and reads the attention of its own models alone."""

import re
import unicodedata

import pytest
import torch
from fairseq import options, tasks
from fairseq.dataclass.utils import convert_namespace_to_omegaconf
from fairseq.search import LexicallyConstrainedBeamSearch
from fairseq.sequence_generator import SequenceGenerator
from fairseq.sequence_scorer import SequenceScorer
from fairseq.token_generation_constraints import pack_constraints
from omegaconf import OmegaConf

import bahdanau_plugin  # noqa: F401  (registers the task, as --user-dir does)
from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.tasks.translation_with_source_words import (
    refuse_constraints_cut_at_a_begin_symbol,
    TranslationWithSourceWordsConfig,
    TranslationWithSourceWordsTask,
)
from bahdanau_plugin.unknown_words import NO_DICTIONARY
from bench.models import dictionary

from ...support.models import build_tiny_model
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


def built(data_bin, arch):
    """The task and a model of arch, built as fairseq-train builds them."""
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(
        parser, [str(data_bin), "--user-dir", str(PLUGIN), *TASK, "--arch", arch]
    )
    task = tasks.setup_task(args)
    return task, task.build_model(args)


@pytest.mark.parametrize("option", ["--print-alignment", "--replace-unk"])
def test_an_ensemble_with_a_model_not_of_the_plugin_is_refused_for_options_reading_attention(
    data_bin, option
):
    """fairseq averages the ensemble's attention, and its lstm attends at source positions
    shifted by the padding: the alignment would change with the batch."""
    task, rnnsearch = built(data_bin, "rnnsearch")
    _, lstm = built(data_bin, "lstm")
    task.check_attention([rnnsearch], option)
    with pytest.raises(ConfigurationError, match=f"{option} reads the attention of rnnsearch "):
        task.check_attention([rnnsearch, lstm], option)


def tiny_model_and_task():
    """A tiny RNNsearch and the task over its dictionaries."""
    model = build_tiny_model("rnnsearch").eval()
    config = OmegaConf.structured(TranslationWithSourceWordsConfig())
    return model, TranslationWithSourceWordsTask(
        config, model.encoder.dictionary, model.decoder.dictionary
    )


def test_the_reference_of_a_source_without_a_word_is_scored_not_translated_as_empty(
    fast_path_setting,
):
    """fairseq-generate --score-reference: the reference's H- line was empty, with score 0."""
    fast_path_setting("plain")
    model, task = tiny_model_and_task()
    target = model.decoder.dictionary
    reference = target.encode_line("w3 w4", add_if_not_exist=False)
    sample = {
        "id": torch.tensor([0]),
        "net_input": {
            "src_tokens": task.encode_source("")[None],
            "src_lengths": torch.tensor([1]),
            "prev_output_tokens": reference.roll(1)[None],
        },
        "target": reference[None],
    }
    [[scored]] = task.inference_step(SequenceScorer(target), [model], sample)
    assert scored["tokens"].tolist() == reference.tolist() and scored["score"] < 0


def test_a_constraint_holding_the_begin_symbol_is_refused_before_the_search(fast_path_setting):
    """fairseq-interactive reads <s> in a constraint as the begin symbol, whose id ends each packed
    constraint: its search wrote the words before it alone, without a word."""
    fast_path_setting("plain")
    model, task = tiny_model_and_task()
    target = model.decoder.dictionary
    constrained = LexicallyConstrainedBeamSearch(target, "ordered")
    search = SequenceGenerator(
        [model], target, beam_size=2, max_len_b=5, search_strategy=constrained
    )
    line = task.encode_source("w1 w2")
    sample = {"id": torch.tensor([0]), "net_input": {"src_tokens": line[None], "src_lengths": [2]}}
    asked = target.encode_line("w3 <s> w4", append_eos=False, add_if_not_exist=False)
    with pytest.raises(ConfigurationError, match="a --constraints word is <s>"):
        task.inference_step(search, [model], sample, constraints=pack_constraints([[asked]]))


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


def test_fairseq_interactive_translates_a_line_of_format_characters_alone_as_empty(
    data_bin, checkpoints
):
    """As an empty line (bahdanau-serve refuses both alike): not as a sentence of <unk>, which
    the model would make a sentence up from. A byte-order mark is one only at the input's start."""
    output = run(
        "fairseq-interactive",
        data_bin,
        *("--user-dir", PLUGIN, *TASK, "--path", checkpoints["rnnsearch_50"]),
        *("--source-lang", "en", "--target-lang", "fr", "--max-len-b", "20"),
        stdin="the dog sees a cat\n\u200b\n\ufeff \u200e\u2060\n",
    )
    hypotheses = dict(re.findall(r"^H-(\d+)\t\S+\t(.*)$", output, flags=re.M))
    assert sorted(hypotheses) == ["0", "1", "2"]
    assert hypotheses["1"] == hypotheses["2"] == "" and hypotheses["0"]
    assert re.search(r"^H-1\t0\.0\t$", output, flags=re.M)


def test_fairseq_interactive_reads_a_control_symbol_typed_as_a_word_as_an_unknown_word(
    data_bin, checkpoints
):
    """fairseq's Dictionary.encode_line reads the word </s> as the end of sentence (<pad>, <s>
    likewise), in the middle of the source, and its S- line showed no trace of it."""
    typed = ["the dog </s> sees a cat", "the dog <pad> sees a cat", "the <s> dog", "<unk> dog"]
    output = run(
        "fairseq-interactive",
        data_bin,
        *("--user-dir", PLUGIN, *TASK, "--path", checkpoints["rnnsearch_50"]),
        *("--source-lang", "en", "--target-lang", "fr", "--max-len-b", "5"),
        stdin="".join(line + "\n" for line in typed),
    )
    sources = dict(re.findall(r"^S-(\d+)\t(.*)$", output, flags=re.M))
    assert sources == {
        "0": "the dog <unk> sees a cat",
        "1": "the dog <unk> sees a cat",
        "2": "the <unk> dog",
        "3": "<unk> dog",
    }


def test_fairseq_interactive_reads_text_in_nfd_as_the_same_text_in_nfc(
    bpe_prepared, bpe_checkpoint
):
    """The training text is in NFC (bahdanau-prepare-data): è as one code point, not e + U+0300,
    which BPE would split off as a piece of its own."""
    composed = "the rivière sees a café"
    decomposed = unicodedata.normalize("NFD", composed)
    assert decomposed != composed
    output = run(
        "fairseq-interactive",
        bpe_prepared / "data-bin",
        *("--user-dir", PLUGIN, *TASK, "--path", bpe_checkpoint),
        *("--source-lang", "en", "--target-lang", "fr", "--max-len-b", "10"),
        *(
            "--tokenizer",
            "moses",
            "--bpe",
            "subword_nmt",
            "--bpe-codes",
            bpe_prepared / "bpe.codes",
        ),
        stdin=f"{composed}\n{decomposed}\n",
    )
    sources = dict(re.findall(r"^S-(\d+)\t(.*)$", output, flags=re.M))
    hypotheses = dict(re.findall(r"^H-(\d+)\t(.*)$", output, flags=re.M))
    assert "è" in sources["0"] and "<unk>" not in sources["0"]
    assert (sources["1"], hypotheses["1"]) == (sources["0"], hypotheses["0"])


def test_fairseq_interactive_with_bpe_alone_reads_a_tab_between_words_as_a_space(
    bpe_prepared, bpe_checkpoint
):
    """Text already tokenized, given without --tokenizer moses (which turns a tab into a space):
    subword-nmt segmented red<TAB>cat as one word, and the model read re@@ d@@ <unk> ca@@ t."""
    output = run(
        "fairseq-interactive",
        bpe_prepared / "data-bin",
        *("--user-dir", PLUGIN, *TASK, "--path", bpe_checkpoint),
        *("--source-lang", "en", "--target-lang", "fr", "--max-len-b", "10"),
        *("--bpe", "subword_nmt", "--bpe-codes", bpe_prepared / "bpe.codes"),
        stdin="the red cat\nthe red\tcat\n",
    )
    sources = dict(re.findall(r"^S-(\d+)\t(.*)$", output, flags=re.M))
    hypotheses = dict(re.findall(r"^H-(\d+)\t(.*)$", output, flags=re.M))
    assert "<unk>" not in sources["0"]
    assert (sources["1"], hypotheses["1"]) == (sources["0"], hypotheses["0"])


def constraints_as_fairseq_interactive_reads_them(*constraints):
    """A line's constraints (those after its tabs), packed as fairseq-interactive packs them."""
    symbols = dictionary(3)
    return pack_constraints(
        [
            [
                symbols.encode_line(words, append_eos=False, add_if_not_exist=False)
                for words in constraints
            ]
        ]
    )


@pytest.mark.parametrize(
    "constraints", [("w0 <s> w1",), ("w2", "<s> w1"), ("<s>",)], ids=["inside", "first", "alone"]
)
def test_a_constraint_holding_the_begin_symbol_is_refused(constraints):
    """fairseq ends each packed constraint with <s>'s id: its search read the words before it
    alone and dropped the rest."""
    with pytest.raises(ConfigurationError, match="a --constraints word is <s>, with which"):
        refuse_constraints_cut_at_a_begin_symbol(
            constraints_as_fairseq_interactive_reads_them(*constraints)
        )


def test_constraints_separated_by_a_tab_are_taken():
    refuse_constraints_cut_at_a_begin_symbol(
        constraints_as_fairseq_interactive_reads_them("w0 w1", "w2")
    )
