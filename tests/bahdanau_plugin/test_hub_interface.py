"""The models' from_pretrained returns fairseq's hub interface, subclassed to translate through
--task translation_with_source_words, which replaces unknown words with replace_unk=
(bahdanau_plugin/hub_interface.py); it reads
its folders from where the user stands, says in one line what it cannot load, and reads text in NFC
and BPE codes in UTF-8, as bahdanau-prepare-data wrote them."""

import os
import shutil
import unicodedata

import pytest
import torch
from fairseq.hub_utils import GeneratorHubInterface
from fairseq.token_generation_constraints import pack_constraints

from bahdanau_plugin.errors import CheckpointError, ConfigurationError, MissingPathError
from bahdanau_plugin.models import RNNencdecModel, RNNsearchModel
from bahdanau_plugin.tasks import TranslationWithSourceWordsTask

from ..support.malicious import malicious_copy
from ..support.tools import COMPILED, python_program


def load(model_class, checkpoint, data_bin, **options):
    return model_class.from_pretrained(
        str(checkpoint.parent),
        checkpoint_file=checkpoint.name,
        data_name_or_path=str(data_bin),
        **options,
    )


def test_without_replace_unk_the_hub_is_fairseqs_through_the_plugins_task_not_replacing(
    checkpoints, data_bin
):
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    assert isinstance(hub, GeneratorHubInterface)
    assert isinstance(hub.task, TranslationWithSourceWordsTask)
    assert not hub.task.replaces_unknown_words


@pytest.mark.parametrize("replace_unk", [None, ""], ids=["", "replacing"])
def test_an_empty_or_blank_sentence_is_translated_as_empty(checkpoints, data_bin, replace_unk):
    """Not as a sentence the model makes up from the end of sentence alone."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, replace_unk=replace_unk)
    translations = hub.translate(["", "the dog sees a cat", "  "])
    assert translations[0] == translations[2] == "" and translations[1]


@pytest.mark.parametrize("replace_unk", [None, ""], ids=["", "replacing"])
def test_a_sentence_of_format_characters_alone_is_translated_as_empty(
    checkpoints, data_bin, replace_unk
):
    """As an empty sentence (bahdanau-serve refuses both alike), not as a sentence of <unk>."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, replace_unk=replace_unk)
    translations = hub.translate(["\u200b", "the dog sees a cat", "\ufeff \u200e"])
    assert translations[0] == translations[2] == "" and translations[1]


@pytest.mark.parametrize("replace_unk", [None, ""], ids=["", "replacing"])
def test_a_control_symbol_typed_as_a_word_is_binarized_as_an_unknown_word(
    checkpoints, data_bin, replace_unk
):
    """fairseq's binarize reads the word </s> as the end of sentence (<pad>, <s> likewise), in
    the middle of the source; bahdanau-serve binarizes through the hub."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, replace_unk=replace_unk)
    expected = hub.encode("the dog zyzzyva sees a zyzzyva zyzzyva cat zyzzyva").tolist()
    assert hub.encode("the dog </s> sees a <pad> <s> cat <unk>").tolist() == expected
    assert expected.count(hub.src_dict.unk()) == 4


@pytest.mark.parametrize(
    "sentences, message",
    [
        (
            b"the dog sees a cat",
            r"the sentences given are bytes, not text: give a sentence as a str",
        ),
        ([b"the dog sees a cat"], r"a sentence given as bytes, b'the dog sees a cat', not text"),
    ],
    ids=["alone", "in-a-list"],
)
def test_bytes_given_for_sentences_are_refused_in_one_line_saying_to_decode_them(
    checkpoints, data_bin, sentences, message
):
    """fairseq read bytes as a list of numbers, each a sentence, and failed in a TypeError
    traceback: 'normalize() argument 2 must be str, not int'."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    with pytest.raises(
        ConfigurationError, match=rf"^{message}.* \(decode bytes first: data\.decode\('utf-8'\)\)$"
    ):
        hub.translate(sentences)


def test_a_sentence_that_is_not_text_is_refused_in_one_line_naming_it(checkpoints, data_bin):
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    with pytest.raises(
        ConfigurationError,
        match=r"^a sentence given as NoneType, None, not text: give each sentence as a str$",
    ):
        hub.translate(["the dog sees a cat", None])


@pytest.mark.parametrize("replace_unk", [None, ""], ids=["loaded-without", "loaded-with"])
def test_replace_unk_given_per_call_is_refused_saying_to_give_it_when_loading(
    checkpoints, data_bin, replace_unk
):
    """fairseq sets it on the generation's options, where nothing reads it."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, replace_unk=replace_unk)
    with pytest.raises(ConfigurationError, match="replace_unk is chosen when the model is loaded"):
        hub.translate("the dog sees a cat", replace_unk="" if replace_unk is None else None)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(beams=1), "beams is not one of fairseq's generation options"),
        (dict(beam="3"), "beam='3': give a whole number, 1 or more"),
        (dict(beam=0), "beam=0: give a whole number, 1 or more"),
        (dict(beam=2, nbest=3), "--nbest 3 is over --beam 2"),
        (dict(print_alignment=True), "print_alignment=True: give 'hard' or 'soft'"),
        (dict(sampling=True, seed=7), r"seed=7: the hub has no seed option; call torch.manual_se"),
    ],
    ids=["misspelt", "beam-as-text", "beam-0", "nbest-over-beam", "print-alignment-true", "seed"],
)
def test_a_generation_option_fairseq_would_ignore_or_fail_on_is_refused_in_one_line(
    checkpoints, data_bin, options, message
):
    """fairseq sets a misspelt option where nothing reads it, and fails on the others in a
    traceback."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    with pytest.raises(ConfigurationError, match=message):
        hub.generate([hub.encode("the dog sees a cat")], **options)
    assert hub.generate([hub.encode("the dog sees a cat")], beam=2, nbest=2, lenpen=0.5)


def test_more_than_one_best_translation_from_translate_is_refused_naming_generate(
    checkpoints, data_bin
):
    """fairseq's translate() and sample() return each sentence's best hypothesis alone, whatever
    nbest asks: nbest=3 gave one translation without a word."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    with pytest.raises(ConfigurationError, match=r"nbest=3: translate\(\) and sample\(\) return"):
        hub.translate("the dog sees a cat", beam=3, nbest=3)
    hypotheses = hub.generate([hub.encode("the dog sees a cat")], beam=3, nbest=3)[0]
    assert len(hypotheses) == 3


def test_score_is_refused_in_one_line_naming_fairseq_generates_score_reference(
    checkpoints, data_bin
):
    """fairseq's hub scores a sentence as a language model's own target: for a translation model
    it failed in a TypeError traceback."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    with pytest.raises(ConfigurationError, match=r"score\(\) .* --score-reference"):
        hub.score(["the dog sees a cat", ""])
    assert hub.translate("the dog sees a cat", beam=2)


def test_a_language_model_given_to_a_call_is_refused_since_the_hub_never_reads_it(
    checkpoints, data_bin
):
    """fairseq's hub translated without the language model of lm_path= (fairseq-generate alone
    reads it), without a word."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    with pytest.raises(ConfigurationError, match="and the hub would translate without it"):
        hub.translate("the dog sees a cat", lm_path=str(data_bin / "lm.pt"), lm_weight=0.2)


def asked_constraints(hub, words):
    """One sentence's constraint, packed as fairseq's search reads it."""
    encoded = hub.tgt_dict.encode_line(words, append_eos=False, add_if_not_exist=False)
    return {"constraints": pack_constraints([[encoded]])}


@pytest.mark.parametrize(
    "search, given, message",
    [
        ("ordered", False, "constraints='ordered' chooses fairseq's constrained search, and no"),
        (None, True, "inference_step_args gives constraints, which fairseq's constrained search"),
    ],
    ids=["search-without-constraints", "constraints-without-their-search"],
)
def test_constraints_without_their_search_or_the_reverse_are_refused_in_one_line(
    checkpoints, data_bin, search, given, message
):
    """fairseq failed in a traceback (TypeError: 'NoneType' object is not iterable, or
    NotImplementedError)."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    options = {"constraints": search} if search else {}
    step = {"inference_step_args": asked_constraints(hub, "chien")} if given else {}
    with pytest.raises(ConfigurationError, match=message):
        hub.translate("the dog sees a cat", **options, **step)


def test_constraints_given_with_their_search_are_written(checkpoints, data_bin):
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    step = {"inference_step_args": asked_constraints(hub, "chien")}
    assert "chien" in hub.translate("the cat", beam=2, max_len_b=5, constraints="ordered", **step)


def test_a_prefix_given_to_a_call_is_refused_since_the_hub_has_no_reference(checkpoints, data_bin):
    """fairseq's hub translated as without prefix_size= (fairseq-generate alone reads each
    translation's prefix, from its reference), without a word."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin)
    with pytest.raises(ConfigurationError, match="--prefix-size 2: .* the hub has no reference"):
        hub.translate("the dog sees a cat", prefix_size=2)


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(beamm=3), r"from_pretrained\(beamm=\.\.\.\): beamm is none of this model's options"),
        (dict(moses_no_escape=True), "moses_no_escape is none of this model's options"),
        (dict(beam=1), r"from_pretrained\(beam=1\): the beam is chosen per call"),
        (dict(generation_args={"beam": 1}), r"from_pretrained\(beam=1\): the beam is chosen"),
    ],
    ids=["misspelt", "a-tokenizers-option-without-it", "beam", "beam-in-generation-args"],
)
def test_an_option_given_when_loading_that_nothing_would_read_is_refused_in_one_line(
    checkpoints, data_bin, options, message
):
    """fairseq drops an option its configuration lacks, and each call searches with a beam of its
    own: from_pretrained(beam=1) translated with beam 5."""
    with pytest.raises(ConfigurationError, match=message):
        load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, **options)


@pytest.mark.parametrize(
    "options, message",
    [
        (
            dict(tokenizer="mosess"),
            r"from_pretrained\(tokenizer='mosess'\): fairseq has no tokenizer 'mosess': did you "
            "mean 'moses'\\? give one of moses, nltk, space$",
        ),
        (
            dict(bpe="subword-nmt", bpe_codes="bpe.codes"),
            r"from_pretrained\(bpe='subword-nmt'\): fairseq has no bpe 'subword-nmt': did you mean "
            "'subword_nmt'\\? give one of ",
        ),
    ],
    ids=["tokenizer", "bpe-with-its-codes"],
)
def test_a_misspelt_tokenizer_or_bpe_is_refused_naming_the_nearest_one(
    checkpoints, data_bin, options, message
):
    """fairseq failed in a KeyError traceback naming the value alone ('mosess'), and a BPE's
    codes beside a misspelt BPE were refused as an option of no block, not the BPE's name."""
    with pytest.raises(ConfigurationError, match=message):
        load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, **options)


def test_the_options_of_a_tokenizer_given_when_loading_are_taken_with_it(checkpoints, data_bin):
    hub = load(
        RNNsearchModel,
        checkpoints["rnnsearch_50"],
        data_bin,
        tokenizer="moses",
        moses_no_escape=True,
        lenpen=0.5,
    )
    assert hub.cfg.tokenizer.moses_no_escape and hub.cfg.generation.lenpen == 0.5


@pytest.mark.parametrize("given_when", ["loaded", "called"])
def test_a_soft_alignment_logged_verbose_is_refused_before_any_sentence_is_translated(
    checkpoints, data_bin, given_when
):
    """fairseq's verbose log writes an alignment as source-target pairs, and failed to unpack a
    soft one in a traceback after the translation; a hard one it logs, a soft one it returns."""
    soft = dict(print_alignment="soft")
    loaded, call = (soft, {}) if given_when == "loaded" else ({}, soft)
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, **loaded)
    sentence = hub.encode("the dog sees a cat")
    with pytest.raises(
        ConfigurationError, match="print_alignment='soft' with verbose=True: fairseq's log writes"
    ):
        hub.generate([sentence], verbose=True, **call)
    assert hub.generate([sentence], verbose=True, print_alignment="hard")[0][0]["alignment"]
    assert len(hub.generate([sentence], **call)[0][0]["alignment"][0]) == len(sentence)


@pytest.mark.parametrize("skip", [False, True], ids=["", "skip_invalid_size_inputs"])
def test_a_sentence_over_max_source_positions_is_refused_before_any_is_translated(
    checkpoints, data_bin, skip
):
    """Skipped, it would be left out of the results: the translations after it would answer the
    sentences before them."""
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, max_source_positions=6)
    with pytest.raises(
        ConfigurationError,
        match=r"sentence 1 has 8 tokens \(end of sentence included\), over max_source_positions 6",
    ):
        hub.translate(["the dog", "the dog sees a cat and a"], skip_invalid_size_inputs=skip)


def test_with_replace_unk_the_hub_translates_through_the_plugins_task(checkpoints, data_bin):
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, replace_unk="")
    assert isinstance(hub.task, TranslationWithSourceWordsTask) and hub.task.replaces_unknown_words
    assert hub.cfg.generation.replace_unk is None  # not fairseq's own replacement as well


def test_with_replace_unk_sentences_given_by_a_generator_are_all_translated(checkpoints, data_bin):
    hub = load(RNNsearchModel, checkpoints["rnnsearch_50"], data_bin, replace_unk="")
    sentences = ["the dog sees a cat", "a small red car"]
    translations = hub.translate(sentence for sentence in sentences)
    assert translations == hub.translate(sentences) and len(translations) == 2


def test_an_rnnencdec_hub_with_replace_unk_is_refused_when_loaded(checkpoints, data_bin):
    with pytest.raises(ConfigurationError, match="rnnencdec has no attention"):
        load(RNNencdecModel, checkpoints["rnnencdec_50"], data_bin, replace_unk="")


def test_a_folder_of_dictionaries_alone_without_the_languages_is_one_line_naming_them(
    checkpoints, data_bin, tmp_path
):
    """fairseq takes the pair from the binaries' names where the checkpoint records none (one
    trained without --source-lang, as the tests' are), and failed in a traceback without them."""
    for dictionary in ("dict.en.txt", "dict.fr.txt"):
        shutil.copy(data_bin / dictionary, tmp_path / dictionary)
    with pytest.raises(ConfigurationError) as refused:
        load(RNNsearchModel, checkpoints["rnnsearch_50"], tmp_path)
    assert str(refused.value) == (
        f"the data folder {tmp_path} holds no binaries (SPLIT.SRC-TGT.LANG.bin), from whose names "
        "fairseq takes the language pair where source_lang= or target_lang= is left out: give "
        "both, languages of its dictionaries (en and fr)"
    )


def test_a_folder_of_dictionaries_alone_translates_given_the_languages(
    checkpoints, data_bin, tmp_path
):
    for dictionary in ("dict.en.txt", "dict.fr.txt"):
        shutil.copy(data_bin / dictionary, tmp_path / dictionary)
    hub = load(
        RNNsearchModel, checkpoints["rnnsearch_50"], tmp_path, source_lang="en", target_lang="fr"
    )
    assert isinstance(hub.translate("the dog", max_len_b=3), str)


@pytest.fixture
def standing_beside_checkpoints(checkpoints, tmp_path, monkeypatch):
    """The current directory: a folder with checkpoints/checkpoint_last.pt, the tiny rnnsearch."""
    work = tmp_path / "work"
    (work / "checkpoints").mkdir(parents=True)
    shutil.copy(checkpoints["rnnsearch_50"], work / "checkpoints" / "checkpoint_last.pt")
    monkeypatch.chdir(work)
    return work


def test_a_data_folder_given_as_dot_dot_is_read_from_the_current_directory(
    standing_beside_checkpoints, data_bin
):
    """fairseq itself would join a path that starts with "." onto the checkpoints' folder."""
    relative = os.path.relpath(data_bin)
    assert relative.startswith("..")
    hub = RNNsearchModel.from_pretrained(
        "checkpoints", checkpoint_file="checkpoint_last.pt", data_name_or_path=relative
    )
    assert os.path.samefile(hub.cfg.task.data, data_bin)
    assert isinstance(hub.translate("the dog sees a cat", beam=1), str)


def test_without_a_data_folder_the_dictionaries_beside_the_checkpoint_are_read(
    standing_beside_checkpoints, data_bin
):
    for dictionary in data_bin.glob("dict.*.txt"):
        shutil.copy(dictionary, standing_beside_checkpoints / "checkpoints")
    hub = RNNsearchModel.from_pretrained(
        "checkpoints", checkpoint_file="checkpoint_last.pt", source_lang="en", target_lang="fr"
    )
    assert os.path.samefile(hub.cfg.task.data, standing_beside_checkpoints / "checkpoints")


@pytest.mark.parametrize(
    "data, expected",
    [("../nowhere", "data folder ../nowhere not found"), (".", ". is not a data-bin folder")],
    ids=["missing", "without-dictionaries"],
)
def test_a_data_folder_that_is_not_one_is_a_one_line_error_naming_it(
    standing_beside_checkpoints, data, expected
):
    with pytest.raises(MissingPathError) as refused:
        RNNsearchModel.from_pretrained(
            "checkpoints", checkpoint_file="checkpoint_last.pt", data_name_or_path=data
        )
    assert str(refused.value).startswith(expected) and "\n" not in str(refused.value)


def test_a_data_folder_with_a_colon_in_its_path_is_a_one_line_error_saying_to_link_it(
    standing_beside_checkpoints, data_bin
):
    """fairseq split the path at ':' into shards, and ended in a FileNotFoundError traceback of the
    folder before it."""
    os.symlink(data_bin, "run:2")
    with pytest.raises(MissingPathError) as refused:
        RNNsearchModel.from_pretrained(
            "checkpoints", checkpoint_file="checkpoint_last.pt", data_name_or_path="run:2"
        )
    assert str(refused.value).startswith("data folder run:2 has ':' in its path")
    assert "\n" not in str(refused.value)


def test_a_checkpoint_given_as_the_model_folder_is_an_error_saying_how_to_name_it(
    standing_beside_checkpoints, data_bin
):
    with pytest.raises(MissingPathError, match='"checkpoints", checkpoint_file="checkpoint_last'):
        RNNsearchModel.from_pretrained("checkpoints/checkpoint_last.pt", data_name_or_path=data_bin)


def test_a_missing_checkpoint_is_a_one_line_error_naming_it(standing_beside_checkpoints, data_bin):
    with pytest.raises(CheckpointError, match=r"checkpoint \S+/checkpoints/best\.pt not found"):
        RNNsearchModel.from_pretrained(
            "checkpoints", checkpoint_file="best.pt", data_name_or_path=data_bin
        )


def test_a_models_state_dict_saved_alone_is_an_error_saying_it_is_not_a_fairseq_checkpoint(
    standing_beside_checkpoints, data_bin
):
    """fairseq looked in it for what fairseq-train saves beside the parameters: KeyError:
    'best_loss', in a traceback."""
    hub = RNNsearchModel.from_pretrained(
        "checkpoints", checkpoint_file="checkpoint_last.pt", data_name_or_path=data_bin
    )
    torch.save(hub.models[0].state_dict(), "checkpoints/weights.pt")
    with pytest.raises(
        CheckpointError,
        match=r"cannot load \S+/checkpoints/weights\.pt: it is a torch file but not a fairseq "
        r"checkpoint: it holds the keys \['encoder\.embed_tokens\.weight', .*give a checkpoint "
        "that fairseq-train or bahdanau-average-checkpoints wrote",
    ):
        RNNsearchModel.from_pretrained(
            "checkpoints", checkpoint_file="weights.pt", data_name_or_path=data_bin
        )


def test_a_checkpoint_whose_name_holds_a_colon_is_an_error_saying_fairseq_splits_it_there(
    standing_beside_checkpoints, data_bin
):
    """fairseq reads ':' as the separator of an ensemble's checkpoints, in --path too."""
    os.rename("checkpoints/checkpoint_last.pt", "checkpoints/run:1.pt")
    with pytest.raises(
        CheckpointError,
        match=r"checkpoint \S+/checkpoints/run not found: fairseq reads ':' in --path as the "
        r"separator of an ensemble's checkpoints, and \S+/checkpoints/run:1\.pt has ':' in its "
        "name: rename it",
    ):
        RNNsearchModel.from_pretrained(
            "checkpoints", checkpoint_file="run:1.pt", data_name_or_path=data_bin
        )


def test_a_pickle_that_would_run_code_is_refused_in_one_line_whatever_the_environment_says(
    standing_beside_checkpoints, data_bin, monkeypatch
):
    monkeypatch.setenv("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
    marker = standing_beside_checkpoints / "pwned"
    malicious_copy(
        standing_beside_checkpoints / "checkpoints" / "checkpoint_last.pt",
        standing_beside_checkpoints / "checkpoints" / "malicious.pt",
        marker,
    )
    with pytest.raises(CheckpointError) as refused:
        RNNsearchModel.from_pretrained(
            "checkpoints", checkpoint_file="malicious.pt", data_name_or_path=data_bin
        )
    assert "its pickle calls posix.system" in str(refused.value)
    assert "\n" not in str(refused.value)
    assert not marker.exists()


def translate_in_a_python_program(checkpoint, data_bin, **environment) -> str:
    """What a fresh Python program that translates through the hub prints (stderr), its decoder's
    step compiled as by default."""
    program = (
        "from bahdanau_plugin.models import RNNsearchModel\n"
        f"hub = RNNsearchModel.from_pretrained({str(checkpoint.parent)!r}, "
        f"checkpoint_file={checkpoint.name!r}, data_name_or_path={str(data_bin)!r})\n"
        "print(hub.translate('the dog sees a cat', beam=2))\n"
    )
    environment = {**os.environ, **COMPILED, **environment}
    return python_program(program, env=environment).stderr


@pytest.fixture(scope="module")
def printed_by_a_python_program(checkpoints, data_bin):
    return translate_in_a_python_program(checkpoints["rnnsearch_50"], data_bin)


def test_a_python_program_translating_through_the_hub_prints_no_debug_line(
    printed_by_a_python_program,
):
    """fairseq's import sets the root logger to DEBUG; the plugin's loggers and filelock's (which
    torch's compiler calls) stay at INFO."""
    assert "DEBUG" not in printed_by_a_python_program


def test_a_python_program_translating_through_the_hub_on_a_cpu_prints_no_warning_of_torch_s(
    printed_by_a_python_program,
):
    """fairseq's data loader asks for pinned memory whatever the device, and torch warned of it at
    the first search of every program without a GPU."""
    assert "Warning" not in printed_by_a_python_program


def test_a_python_program_translating_through_the_hub_says_in_one_line_what_it_compiled(
    printed_by_a_python_program,
):
    """One sentence, at beam 2: one compilation of the search's step."""
    printed = printed_by_a_python_program
    compiled = [line for line in printed.splitlines() if "compil" in line.lower()]
    assert len(compiled) == 1 and compiled[0].startswith(
        "INFO:bahdanau_plugin.speed.compiling:compiled RNNsearchDecoder.next_words (without "
        "gradients, weights as constants, first for 2 rows) in "
    ), compiled


def test_the_hub_reads_text_in_nfd_as_the_same_text_in_nfc(bpe_checkpoint, bpe_prepared):
    hub = load(
        RNNsearchModel,
        bpe_checkpoint,
        bpe_prepared / "data-bin",
        tokenizer="moses",
        bpe="subword_nmt",
        bpe_codes=str(bpe_prepared / "bpe.codes"),
    )
    composed = "the rivière sees a café"
    decomposed = unicodedata.normalize("NFD", composed)
    assert hub.encode(decomposed).tolist() == hub.encode(composed).tolist()
    assert hub.src_dict.unk() not in hub.encode(composed).tolist()
    assert hub.translate(decomposed, max_len_b=10) == hub.translate(composed, max_len_b=10)


def test_bpe_subword_nmt_without_codes_is_refused_in_one_line_saying_to_give_them(
    bpe_checkpoint, bpe_prepared
):
    """fairseq failed on it in omegaconf's 'Missing mandatory value: bpe_codes', of several lines
    (fairseq-interactive with the task likewise)."""
    with pytest.raises(
        ConfigurationError,
        match=r"^--bpe subword_nmt without --bpe-codes \(from_pretrained's bpe_codes=\): give the "
        "codes the data was segmented with",
    ):
        load(RNNsearchModel, bpe_checkpoint, bpe_prepared / "data-bin", bpe="subword_nmt")
