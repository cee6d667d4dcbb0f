"""--replace-unk: each <unk> of a translation becomes the real source word it attends to most,
translated by the dictionary file if given, in fairseq-generate on binarized data,
fairseq-interactive (--task translation_with_source_words) and the hub interface
(bahdanau_plugin/unknown_words.py)."""

import re
import shutil

import pytest
import torch
from fairseq.data import Dictionary
from fairseq.models import FairseqEncoderDecoderModel
from fairseq.search import LexicallyConstrainedBeamSearch
from fairseq.sequence_generator import SequenceGenerator
from fairseq.sequence_scorer import SequenceScorer
from fairseq.token_generation_constraints import pack_constraints

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.models import RNNsearchModel
from bahdanau_plugin.unknown_words import (
    DictionaryWords,
    ReplacingGenerator,
    SourceText,
    WordsPastVocabulary,
    load_word_dictionary,
    replaced_tokens,
    source_text_path,
)
from bench.models import dictionary

from ..support.assertions import assert_one_line_error
from ..support.demo_data import binarize_test_split
from ..support.models import build_tiny_model, randomize_
from ..support.paths import PLUGIN
from ..support.tools import tool_on_bytes

UNKNOWN = "zyzzyva"  # no dictionary of the demo corpus has it
TRANSLATION = "xylophonie"
# source, target: sentence 0 is the unknown word alone, so that every target word attends to it
SENTENCES = [
    (UNKNOWN, "le chien"),
    (f"the dog sees {UNKNOWN}", "le chien voit"),
    ("the big dog", "le grand chien"),
]
TASK = ["--task", "translation_with_source_words"]
# every token <unk> (fairseq's unknown-word penalty, negative), three of them
THREE_UNKNOWN = dict(unkpen=-100, min_len=3, max_len_a=0, max_len_b=3, beam=2)
ALL_UNKNOWN = [
    *(f"--{key.replace('_', '-')}={value}" for key, value in THREE_UNKNOWN.items()),
    "--cpu",
]


@pytest.fixture(scope="module")
def unknown_data_bin(data_bin, tmp_path_factory):
    """SENTENCES as a test split, binarized with the demo dictionaries, the source text beside."""
    root = tmp_path_factory.mktemp("replace-unk")
    for side, language in enumerate(("en", "fr")):
        (root / f"test.{language}").write_text(
            "".join(pair[side] + "\n" for pair in SENTENCES), encoding="utf-8"
        )
    return binarize_test_split(root / "test", data_bin, root / "data-bin")


@pytest.fixture
def word_dictionary(tmp_path):
    path = tmp_path / "dictionary.txt"
    path.write_text(f"{UNKNOWN} {TRANSLATION}\n", encoding="utf-8")
    return path


def lines_of(output, kind):
    return dict(re.findall(rf"^{kind}-(\d+)\t(?:[^\t\n]*\t)?(.*)$", output, flags=re.M))


def replacing_unknown_words(tool, data, checkpoint, *options, task=TASK, stdin=""):
    """A fairseq tool translating data with checkpoint and --replace-unk, followed by options (a
    dictionary file first, if any): (return code, stdout, stderr)."""
    return tool_on_bytes(
        tool,
        data,
        "--user-dir",
        PLUGIN,
        *task,
        "--path",
        checkpoint,
        "--replace-unk",
        *options,
        stdin=stdin.encode(),
    )


def translations(returncode, stdout, stderr):
    """The output of a tool that succeeded."""
    assert returncode == 0, stderr[-3000:]
    return stdout


def hub(checkpoint, data, load=RNNsearchModel.from_pretrained):
    return load(
        str(checkpoint.parent),
        checkpoint_file=checkpoint.name,
        data_name_or_path=str(data),
        replace_unk="",
    )


def test_fairseq_generate_replaces_each_unk_by_the_real_source_word_it_is_aligned_to(
    unknown_data_bin, checkpoints
):
    output = translations(
        *replacing_unknown_words(
            "fairseq-generate",
            unknown_data_bin,
            checkpoints["rnnsearch_50"],
            "--print-alignment",
            *ALL_UNKNOWN,
        )
    )
    hypotheses, alignments = lines_of(output, "H"), lines_of(output, "A")
    assert hypotheses["0"] == " ".join([UNKNOWN] * 3)
    for index, (source, _) in enumerate(SENTENCES):
        words = source.split()
        aligned = [words[int(pair.split("-")[0])] for pair in alignments[str(index)].split()]
        assert hypotheses[str(index)].split() == aligned


def test_fairseq_generate_with_truncate_source_replaces_from_the_words_it_kept(
    unknown_data_bin, checkpoints
):
    """--truncate-source keeps a sentence's first --max-source-positions - 1 tokens; the text
    beside the binaries holds them all."""
    output = translations(
        *replacing_unknown_words(
            "fairseq-generate",
            unknown_data_bin,
            checkpoints["rnnsearch_50"],
            "--print-alignment",
            "--truncate-source",
            "--max-source-positions=4",
            *ALL_UNKNOWN,
        )
    )
    hypotheses, alignments, sources = (lines_of(output, kind) for kind in "HAS")
    assert sources["1"] == "the dog sees"  # cut to 3 tokens, the end of sentence the 4th
    for index, (source, _) in enumerate(SENTENCES):
        words = source.split()[:3]
        aligned = [words[int(pair.split("-")[0])] for pair in alignments[str(index)].split()]
        assert hypotheses[str(index)].split() == aligned


def test_fairseq_interactive_shows_and_copies_the_input_words_through_the_dictionary(
    unknown_data_bin, checkpoints, word_dictionary
):
    output = translations(
        *replacing_unknown_words(
            "fairseq-interactive",
            unknown_data_bin,
            checkpoints["rnnsearch_50"],
            word_dictionary,
            "--source-lang=en",
            "--target-lang=fr",
            *ALL_UNKNOWN,
            stdin=f"{UNKNOWN}\nthe {UNKNOWN} dog\n",
        )
    )
    assert lines_of(output, "S") == {"0": UNKNOWN, "1": f"the {UNKNOWN} dog"}
    assert lines_of(output, "H")["0"] == " ".join([TRANSLATION] * 3)


def test_the_hub_interface_translates_with_replacement_when_made_with_replace_unk(
    unknown_data_bin, checkpoints
):
    translator = hub(checkpoints["rnnsearch_50"], unknown_data_bin)
    translation = translator.translate(UNKNOWN, **THREE_UNKNOWN)
    assert translation == " ".join([UNKNOWN] * 3)


def test_rnnencdec_refuses_replace_unk_in_one_line(unknown_data_bin, checkpoints):
    returncode, _, stderr = replacing_unknown_words(
        "fairseq-generate", unknown_data_bin, checkpoints["rnnencdec_50"], "--cpu"
    )
    assert_one_line_error(
        returncode, stderr, "--replace-unk", "rnnencdec has no attention", "rnnsearch checkpoints"
    )


def test_a_malformed_dictionary_line_is_a_one_line_error_naming_the_file_and_the_line(
    unknown_data_bin, checkpoints, tmp_path
):
    malformed = tmp_path / "malformed.txt"
    malformed.write_text("chat cat\nchien\n", encoding="utf-8")
    returncode, _, stderr = replacing_unknown_words(
        "fairseq-generate", unknown_data_bin, checkpoints["rnnsearch_50"], malformed, "--cpu"
    )
    assert_one_line_error(
        returncode, stderr, f"{malformed}, line 2", "'chien'", "fix or delete that line"
    )


def test_a_dictionary_made_for_the_reverse_direction_is_a_one_line_error_naming_both(
    unknown_data_bin, checkpoints, tmp_path
):
    """A fr->en dictionary maps French words to English ones: with an en->fr model, the English
    source words spelt as French ones were replaced by English words without a word."""
    reverse = tmp_path / "fr-en.txt"
    reverse.write_text(f"#languages fr->en\n{UNKNOWN} {TRANSLATION}\n", encoding="utf-8")
    returncode, _, stderr = replacing_unknown_words(
        "fairseq-generate", unknown_data_bin, checkpoints["rnnsearch_50"], reverse, *ALL_UNKNOWN
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"--replace-unk {reverse} is a dictionary for fr->en (its first line, #languages fr->en), "
        "the reverse of this run's en->fr (--source-lang en --target-lang fr): give one made for "
        "en->fr (bahdanau-unk-dictionary with such a model), or the languages the other way "
        "round if the model translates fr->en, or --replace-unk alone to copy the source words",
    )


def test_a_dictionary_made_for_the_model_s_direction_reads_its_first_line_as_no_entry(tmp_path):
    path = tmp_path / "en-fr.txt"
    path.write_text("#languages en->fr\nchat cat\n", encoding="utf-8")
    assert load_word_dictionary(str(path), ("en", "fr")) == {"chat": "cat"}


def test_a_dictionary_without_its_languages_is_read_for_either_direction(tmp_path):
    """as written by hand, or by bahdanau-unk-dictionary before it recorded them"""
    path = tmp_path / "unrecorded.txt"
    path.write_text("chat cat\n", encoding="utf-8")
    assert load_word_dictionary(str(path), ("fr", "en")) == {"chat": "cat"}


def test_binarized_data_without_its_source_text_is_a_one_line_error_naming_the_file(
    data_bin, checkpoints
):
    returncode, _, stderr = replacing_unknown_words(
        "fairseq-generate", data_bin, checkpoints["rnnsearch_50"], "--cpu"
    )
    assert_one_line_error(
        returncode,
        stderr,
        str(source_text_path(data_bin, "test", "en", "fr")),
        "bahdanau-prepare-data",
    )


def test_a_source_text_of_other_words_than_the_binaries_is_a_one_line_error_naming_its_line(
    unknown_data_bin, checkpoints, tmp_path
):
    """A text of as many words a line, as a cased text left beside a split binarized anew
    lowercased: its words were copied into the translations without a word."""
    data = shutil.copytree(unknown_data_bin, tmp_path / "data-bin")
    text = source_text_path(data, "test", "en", "fr")
    cased = [
        source.capitalize() if index == 2 else source for index, (source, _) in enumerate(SENTENCES)
    ]
    text.write_text("".join(line + "\n" for line in cased), encoding="utf-8")
    returncode, _, stderr = replacing_unknown_words(
        "fairseq-generate", data, checkpoints["rnnsearch_50"], *ALL_UNKNOWN
    )
    assert_one_line_error(
        returncode,
        stderr,
        f"--replace-unk: line 3 of {text} holds other words than sentence 2 of the binarized split",
        "write it again from the text you binarized",
    )


def test_the_flag_without_a_file_copies_source_words():
    assert (
        load_word_dictionary("@@ ") == {}
    )  # what fairseq's parser stores for a bare --replace-unk


def test_a_word_with_two_translations_is_an_error_naming_both_lines(tmp_path):
    path = tmp_path / "twice.txt"
    path.write_text("chat cat\n\nchat kitten\n", encoding="utf-8")
    with pytest.raises(
        ConfigurationError, match=r"line 3: 'chat' already has a translation on line 1"
    ):
        load_word_dictionary(str(path))


def test_a_dictionary_with_a_byte_order_mark_and_in_nfd_reads_as_plain_nfc(tmp_path):
    path = tmp_path / "marked.txt"
    path.write_text("\ufeffze\u0301phyr ZEPH\nchat cat\n", encoding="utf-8")
    assert load_word_dictionary(str(path)) == {"z\u00e9phyr": "ZEPH", "chat": "cat"}


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda path: path.write_bytes("chat ch\u00e9ri\n".encode("latin-1")), "is not UTF-8 text"),
        (lambda path: path.mkdir(), "is a folder"),
    ],
    ids=["latin-1", "a folder"],
)
def test_a_dictionary_that_cannot_be_read_is_a_one_line_error_naming_it(tmp_path, make, words):
    path = tmp_path / "dictionary"
    make(path)
    with pytest.raises(ConfigurationError, match=f"--replace-unk {path} {words}"):
        load_word_dictionary(str(path))


def test_the_source_text_splits_sentences_at_line_ends_only_as_fairseq_does(tmp_path):
    path = tmp_path / "test.en-fr.en.txt"
    path.write_text("a dog\nthe\u2028cat sleeps\r\nbirds\n", encoding="utf-8")
    assert SourceText(path).lines == ["a dog", "the\u2028cat sleeps", "birds"]


def test_each_unk_is_the_translation_of_the_word_with_the_largest_alpha_or_the_word_itself():
    target = dictionary(5)
    unk, eos, pad = target.unk(), target.eos(), target.pad()
    # source left-padded as fairseq batches it: <pad> le chat noir </s>; alpha: source x target
    source = torch.tensor([pad, 10, 11, 12, eos])
    tokens = torch.tensor([unk, target.index("w1"), unk, eos])
    alpha = torch.tensor(
        [
            [0.0, 0.0, 0.0, 0.0],
            [0.1, 0.6, 0.2, 0.1],
            [0.7, 0.2, 0.1, 0.1],
            [0.1, 0.1, 0.6, 0.1],
            [0.1, 0.1, 0.1, 0.7],
        ]
    )
    hypothesis = {"tokens": tokens, "attention": alpha}
    replaced = replaced_tokens(
        hypothesis, source, ["le", "chat", "noir"], WordsPastVocabulary(target), {"chat": "cat"}
    )
    assert target.string(replaced).split() == ["cat", "w1", "noir"]


def test_scoring_references_replaces_each_unk_by_the_source_word_the_scorer_aligns_it_to(
    fast_path_setting,
):
    """fairseq-generate --score-reference: fairseq's scorer gives the attention target x source,
    where its search gives it source x target."""
    fast_path_setting("plain")  # the step as written: a forward pass, nothing to compile
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    source_dictionary, target_dictionary = model.encoder.dictionary, model.decoder.dictionary
    words = [f"w{index}" for index in range(6)]
    source = torch.tensor([[*map(source_dictionary.index, words), source_dictionary.eos()]])
    unk, eos = target_dictionary.unk(), target_dictionary.eos()
    reference = [unk, target_dictionary.index("w7"), unk, unk, target_dictionary.index("w8"), unk]
    target = torch.tensor([[*reference, eos]])
    sample = {
        "id": torch.tensor([0]),
        "net_input": {
            "src_tokens": source,
            "src_lengths": torch.tensor([source.numel()]),
            "prev_output_tokens": torch.tensor([[eos, *reference]]),
        },
        "target": target,
    }
    scorer = ReplacingGenerator(
        SequenceScorer(target_dictionary, compute_alignment=True),  # as --print-alignment asks
        DictionaryWords(source_dictionary),
        WordsPastVocabulary(source_dictionary),
        WordsPastVocabulary(target_dictionary),
        {},
    )
    [[scored]] = scorer.generate([model], sample)
    aligned = {
        target_position: source_position for source_position, target_position in scored["alignment"]
    }
    written = target_dictionary.string(scored["tokens"]).split()
    unknown = [position for position, token in enumerate(reference) if token == unk]
    assert [written[position] for position in unknown] == [
        words[aligned[position]] for position in unknown
    ]


def constrained_replacing_search(model):
    """fairseq-interactive's search with --constraints, through the replacement."""
    source_dictionary, target_dictionary = model.encoder.dictionary, model.decoder.dictionary
    constrained = LexicallyConstrainedBeamSearch(target_dictionary, "unordered")
    return ReplacingGenerator(
        SequenceGenerator(
            [model], target_dictionary, beam_size=2, max_len_b=5, search_strategy=constrained
        ),
        DictionaryWords(source_dictionary),
        WordsPastVocabulary(source_dictionary),
        WordsPastVocabulary(target_dictionary),
        {},
    )


def a_sentence_to_translate(model):
    source_dictionary = model.encoder.dictionary
    source = torch.tensor([[source_dictionary.index("w1"), source_dictionary.eos()]])
    return {"id": torch.tensor([0]), "net_input": {"src_tokens": source, "src_lengths": [2]}}


def test_a_constraint_word_outside_the_target_dictionary_is_refused_with_replace_unk(
    fast_path_setting,
):
    """fairseq-interactive reads it as <unk>, which the translation writes where it is asked for:
    replaced by a source word, the word asked for was gone without a word."""
    fast_path_setting("plain")
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    constraints = pack_constraints([[torch.tensor([model.decoder.dictionary.unk()])]])
    with pytest.raises(ConfigurationError, match="a --constraints word is outside the target"):
        constrained_replacing_search(model).generate(
            [model], a_sentence_to_translate(model), constraints=constraints
        )


def test_a_constraint_word_of_the_target_dictionary_is_written_with_replace_unk(
    fast_path_setting,
):
    fast_path_setting("plain")
    model = randomize_(build_tiny_model("rnnsearch")).eval()
    asked = model.decoder.dictionary.index("w12")
    [[best, *_]] = constrained_replacing_search(model).generate(
        [model],
        a_sentence_to_translate(model),
        constraints=pack_constraints([[torch.tensor([asked])]]),
    )
    assert asked in best["tokens"].tolist()


def test_input_words_outside_the_dictionary_get_ids_past_it_until_the_next_input():
    dictionary = Dictionary()
    dictionary.add_symbol("known")
    vocabulary = len(dictionary)
    words = WordsPastVocabulary(dictionary)
    words.learn(["known new", "other"])
    assert [dictionary.index(word) for word in ("new", "other")] == [vocabulary, vocabulary + 1]
    words.learn(["third"])
    assert dictionary.index("new") == dictionary.unk() and dictionary.index("third") == vocabulary
    assert len(dictionary) == vocabulary + 1


@pytest.mark.parametrize("word", ["</s>", "<pad>", "<s>", "<unk>"])
def test_a_word_spelt_as_a_control_symbol_is_read_as_unk_not_as_the_symbol(word):
    """fairseq's Dictionary reads it as the symbol: an end of sentence, or padding, in the middle
    of the source."""
    dictionary = Dictionary()
    assert WordsPastVocabulary(dictionary).index(word) == dictionary.unk()


def test_a_control_symbol_typed_as_a_word_gets_an_id_of_its_own_until_the_next_input():
    """So that a translation can copy it; the symbol itself keeps its index."""
    dictionary = Dictionary()
    vocabulary = len(dictionary)
    words = WordsPastVocabulary(dictionary)
    words.learn(["a </s> b </s>"])
    typed = words.index("</s>")
    assert typed == words.id("</s>") >= vocabulary and dictionary[typed] == "</s>"
    assert dictionary.index("</s>") == dictionary.eos()
    words.learn(["c"])
    assert words.index("</s>") == dictionary.unk() and dictionary.index("</s>") == dictionary.eos()
    assert len(dictionary) == vocabulary + 1


def test_fairseq_interactive_copies_a_control_symbol_typed_as_a_word(unknown_data_bin, checkpoints):
    """fairseq read the word </s> as the end of sentence: the line was translated as empty."""
    output = translations(
        *replacing_unknown_words(
            "fairseq-interactive",
            unknown_data_bin,
            checkpoints["rnnsearch_50"],
            "--source-lang=en",
            "--target-lang=fr",
            *ALL_UNKNOWN,
            stdin="</s>\nthe <pad> dog\n",
        )
    )
    assert lines_of(output, "S") == {"0": "</s>", "1": "the <pad> dog"}
    assert lines_of(output, "H")["0"] == "</s> </s> </s>"


def test_the_hub_copies_a_control_symbol_typed_as_a_word(unknown_data_bin, checkpoints):
    translator = hub(checkpoints["rnnsearch_50"], unknown_data_bin)
    assert translator.translate("<pad>", **THREE_UNKNOWN) == "<pad> <pad> <pad>"


def test_an_ensemble_replaces_from_the_mean_attention_of_its_members(unknown_data_bin, checkpoints):
    ensemble = f"{checkpoints['rnnsearch_30']}:{checkpoints['rnnsearch_50']}"
    output = translations(
        *replacing_unknown_words("fairseq-generate", unknown_data_bin, ensemble, *ALL_UNKNOWN)
    )
    assert lines_of(output, "H")["0"] == " ".join([UNKNOWN] * 3)


def test_without_the_task_fairseq_generate_says_in_one_line_to_add_it(
    unknown_data_bin, checkpoints
):
    returncode, _, stderr = replacing_unknown_words(
        "fairseq-generate", unknown_data_bin, checkpoints["rnnsearch_50"], "--cpu", task=()
    )
    assert_one_line_error(
        returncode, stderr, "--replace-unk", "--task translation_with_source_words"
    )


def test_without_the_task_fairseq_interactive_says_in_one_line_to_add_it(
    unknown_data_bin, checkpoints
):
    returncode, _, stderr = replacing_unknown_words(
        "fairseq-interactive",
        unknown_data_bin,
        checkpoints["rnnsearch_50"],
        "--cpu",
        task=(),
        stdin=UNKNOWN,
    )
    assert_one_line_error(
        returncode, stderr, "--replace-unk", "--task translation_with_source_words"
    )


def test_fairseqs_own_hub_interface_refuses_replace_unk_naming_the_models_own(
    unknown_data_bin, checkpoints
):
    with pytest.raises(ConfigurationError, match=r"RNNsearchModel\.from_pretrained"):
        hub(
            checkpoints["rnnsearch_50"],
            unknown_data_bin,
            FairseqEncoderDecoderModel.from_pretrained,
        )


def test_the_hub_keeps_only_the_replacing_words_of_its_latest_translation(
    unknown_data_bin, checkpoints
):
    """Each generation sizes its beam search by the target dictionary: the words that replaced
    <unk> in the translation before are forgotten, and translating again gives the same."""
    translator = hub(checkpoints["rnnsearch_50"], unknown_data_bin)
    vocabulary = len(translator.tgt_dict)
    first = translator.translate([UNKNOWN, "the dog"], **THREE_UNKNOWN)
    assert translator.translate([UNKNOWN, "the dog"], **THREE_UNKNOWN) == first
    assert len(translator.tgt_dict) == vocabulary + 1 and first[0] == " ".join([UNKNOWN] * 3)


def test_ids_past_the_vocabulary_reach_the_models_as_unk():
    dictionary = Dictionary()
    words = WordsPastVocabulary(dictionary)
    words.learn(["zyzzyva"])
    tokens = torch.tensor([dictionary.index("zyzzyva"), dictionary.eos()])
    assert words.as_models_read_it(tokens).tolist() == [dictionary.unk(), dictionary.eos()]
