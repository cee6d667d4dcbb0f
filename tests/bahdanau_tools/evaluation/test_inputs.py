"""What bahdanau-evaluate makes of the references, model names, checkpoints and BPE codes it is
given: references read as the data preparation reads text, model names that are folders of their
own, checkpoint paths that fairseq-generate takes, and BPE codes for data in BPE units only."""

import argparse
import codecs
import unicodedata

import pytest
from fairseq.data import Dictionary

from bahdanau_plugin.errors import ConfigurationError
from bahdanau_plugin.unknown_words import source_text_path
from bahdanau_tools.errors import EvaluationError
from bahdanau_tools.evaluation import command_line
from bahdanau_tools.evaluation.binarized_split import BinarizedSplit, Side
from bahdanau_tools.evaluation.bleu import TOKENIZED, corpus_bleu
from bahdanau_tools.evaluation.command_line import (
    SCORES,
    check_inputs,
    evaluate,
    evaluation_parser,
    fill_defaults,
    named_checkpoint,
    read_references,
)

# detokenized as the models' translations are, and in NFC as all the project's text
TRANSLATIONS = ["Un café élégant près de la fenêtre.", "Deux garçons à vélo."]
TOKENIZED_TRANSLATIONS = ["Un café élégant près de la fenêtre .", "Deux garçons à vélo ."]
OPTIONS = {  # option -> the translations it is scored against, and how BLEU tokenizes them
    "--references": (TRANSLATIONS, "13a"),
    "--tokenized-references": (TOKENIZED_TRANSLATIONS, TOKENIZED),
}
NO_SENTENCES = BinarizedSplit(Side(Dictionary(), []), Side(Dictionary(), []))


def write_references(path, lines, form="NFC", prefix=b""):
    text = unicodedata.normalize(form, "".join(line + "\n" for line in lines))
    path.write_bytes(prefix + text.encode("utf-8"))
    return path


def bleu_against(path, option):
    translations, tokenize = OPTIONS[option]
    references = read_references(path, len(translations), option)
    return corpus_bleu(translations, references, tokenize).bleu


@pytest.mark.parametrize("option", OPTIONS)
def test_references_with_a_byte_order_mark_score_as_without_it(tmp_path, option):
    translations, _ = OPTIONS[option]
    plain = write_references(tmp_path / "plain.fr", translations)
    marked = write_references(tmp_path / "marked.fr", translations, prefix=codecs.BOM_UTF8)
    assert bleu_against(marked, option) == bleu_against(plain, option) == pytest.approx(100)


@pytest.mark.parametrize("option", OPTIONS)
def test_references_in_nfd_score_as_in_nfc(tmp_path, option):
    translations, _ = OPTIONS[option]
    nfd = write_references(tmp_path / "nfd.fr", translations, form="NFD")
    assert bleu_against(nfd, option) == pytest.approx(100)


@pytest.mark.parametrize(
    "option, folder", [("--references", "raw"), ("--tokenized-references", "tok")]
)
def test_references_in_bpe_pieces_are_an_error_saying_to_give_them_before_bpe(
    tmp_path, option, folder
):
    """The translations are scored with their pieces joined: pieces left in the references would
    make BLEU silently low."""
    pieces = write_references(tmp_path / "bpe.fr", ["un chien .", "deux ch@@ ats ."])
    with pytest.raises(EvaluationError) as raised:
        read_references(pieces, 2, option)
    assert str(raised.value) == (
        f"line 2 of {option} {pieces} holds BPE pieces (word@@), which the translations are "
        f"scored without: give the references before BPE (bahdanau-prepare-data writes them to "
        f"OUT/{folder}/)"
    )


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize(
    "encoding, found",
    [
        ("latin-1", "is not UTF-8 text: line 1, byte 7 is 0xe9"),
        # its ASCII letters, each beside a NUL, decode as UTF-8: it was said to be not UTF-8 at
        # its first letter past ASCII, or to have a line more than the test set (its last NUL)
        ("utf-16-le", "is UTF-16 or UTF-32 text"),
    ],
    ids=["latin-1", "utf-16-without-its-mark"],
)
def test_references_not_in_utf8_are_a_one_line_error_naming_the_file_and_what_they_are(
    tmp_path, option, encoding, found
):
    references = tmp_path / "references.fr"
    references.write_bytes("".join(line + "\n" for line in TRANSLATIONS).encode(encoding))
    with pytest.raises(EvaluationError) as raised:
        read_references(references, len(TRANSLATIONS), option)
    message = str(raised.value)
    assert "\n" not in message
    assert f"{option} {references} {found}" in message
    assert "convert the file to UTF-8" in message


def check_models(tmp_path, *models):
    """check_inputs on these models, (name, checkpoint) each, their checkpoints there."""
    arguments = ["--data", str(tmp_path), "--out-dir", str(tmp_path / "out")]
    for name, checkpoint in models:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
        checkpoint.touch()
        arguments += ["--model", f"{name}={checkpoint}"]
    check_inputs(evaluation_parser().parse_args(arguments), NO_SENTENCES)


def check_names(tmp_path, *names):
    """check_inputs on models of these names, whose checkpoints are there."""
    check_models(
        tmp_path, *[(name, tmp_path / f"{number}.pt") for number, name in enumerate(names)]
    )


def names_refused(tmp_path, *names) -> str:
    """The one line that refuses models of these names."""
    with pytest.raises(EvaluationError) as raised:
        check_names(tmp_path, *names)
    assert "\n" not in str(raised.value)
    return str(raised.value)


def test_models_with_plain_names_of_their_own_are_accepted(tmp_path):
    check_names(tmp_path, "rnnsearch", "rnnencdec", "rnnsearch-50.v2")


@pytest.mark.parametrize("name", ["m/", "a/b", "/m", "m\\", ".", ".."])
def test_a_model_name_that_is_not_a_plain_folder_name_is_an_error_naming_it(tmp_path, name):
    message = names_refused(tmp_path, "m", name)
    assert f"model name {name!r} is not a folder name" in message
    assert "give --model a NAME without / or \\" in message


def test_the_same_model_name_twice_is_an_error_naming_it(tmp_path):
    with pytest.raises(EvaluationError, match="model names 'm' and 'm' are the same name"):
        check_names(tmp_path, "m", "m")


def test_model_names_that_differ_only_in_case_are_an_error_naming_both(tmp_path):
    with pytest.raises(
        EvaluationError, match="model names 'rnnsearch' and 'RNNsearch' differ only"
    ):
        check_names(tmp_path, "rnnsearch", "RNNsearch")


def test_model_names_that_differ_only_in_unicode_form_are_an_error(tmp_path):
    nfc, nfd = (unicodedata.normalize(form, "modèle") for form in ("NFC", "NFD"))
    with pytest.raises(EvaluationError, match="differ only in case or Unicode form"):
        check_names(tmp_path, nfc, nfd)


@pytest.mark.parametrize("name", [*SCORES, "heatmaps", "BLEU.TXT", "Heatmaps"])
def test_a_model_name_of_one_of_the_tools_own_outputs_is_an_error_naming_it(tmp_path, name):
    message = names_refused(tmp_path, "m", name)
    assert f"model name {name!r} is that of bahdanau-evaluate's own output OUT/" in message
    assert "give --model another NAME" in message


def test_a_checkpoint_with_a_colon_in_its_path_is_an_error_saying_to_rename_or_link_it(tmp_path):
    checkpoint = tmp_path / "de:mo" / "checkpoint_best.pt"
    with pytest.raises(EvaluationError) as raised:
        check_models(tmp_path, ("m", tmp_path / "0.pt"), ("demo", checkpoint))
    message = str(raised.value)
    assert f"checkpoint {checkpoint} of model demo has ':' in its path" in message
    assert "rename it, or link it (ln -s) under a path without ':'" in message


@pytest.mark.parametrize("model", ["rnn-search=~/best.pt", "ensemble=a.pt:~/best.pt"])
def test_a_checkpoint_starting_with_a_tilde_the_shell_left_is_an_error_saying_what_to_write(
    tmp_path, monkeypatch, model
):
    """bash leaves that '~' as it is after a NAME that is no variable's name, or after --model=."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    with pytest.raises(argparse.ArgumentTypeError) as raised:
        named_checkpoint(model)
    assert str(raised.value).startswith("~/best.pt starts with a folder named '~' in the current")
    assert str(raised.value).endswith(f"; write {tmp_path / 'home' / 'best.pt'}")


def test_a_folder_where_the_tool_writes_its_scores_is_an_error_saying_to_move_it(tmp_path):
    (tmp_path / "out" / "bleu.txt").mkdir(parents=True)
    with pytest.raises(EvaluationError) as raised:
        check_names(tmp_path, "m")
    message = str(raised.value)
    assert f"{tmp_path / 'out' / 'bleu.txt'} is a folder, where bahdanau-evaluate writes" in message
    assert "move it aside, or give another --out-dir" in message


def test_a_data_bin_given_through_a_link_takes_the_references_beside_the_one_it_links_to(
    tmp_path,
):
    """A link such as troubleshooting.md says to make for a data-bin with ':' in its path: its
    DATA/../raw and DATA/../tok, as the system reads those paths, are beside the data-bin it leads
    to, where bahdanau-prepare-data wrote them."""
    prepared = tmp_path / "run:2" / "prepared"
    (tmp_path / "data").symlink_to(prepared / "data-bin")
    arguments = evaluation_parser().parse_args(
        ["--data", str(tmp_path / "data"), "--out-dir", str(tmp_path / "out")]
        + ["--model", f"m={tmp_path / 'm.pt'}"]
    )
    fill_defaults(arguments, NO_SENTENCES)
    assert arguments.references == prepared / "raw" / "test.fr"
    assert arguments.tokenized_references == prepared / "tok" / "test.fr"


def split_of(*target_symbols) -> BinarizedSplit:
    """A split whose target dictionary holds these symbols."""
    target = Dictionary()
    for symbol in target_symbols:
        target.add_symbol(symbol)
    return BinarizedSplit(Side(Dictionary(), []), Side(target, []))


BPE_UNITS, WORDS = split_of("ter@@", "rier", "runs"), split_of("terrier", "runs")


def checked_bpe_codes(tmp_path, split, *options, data="prepared/data-bin"):
    """The BPE codes bahdanau-evaluate takes, for DATA tmp_path/data, once its defaults are filled
    in and its inputs checked."""
    checkpoint = tmp_path / "m.pt"
    checkpoint.touch()
    arguments = evaluation_parser().parse_args(
        ["--data", str(tmp_path / data), "--out-dir", str(tmp_path / "out")]
        + ["--model", f"m={checkpoint}", *options]
    )
    fill_defaults(arguments, split)
    check_inputs(arguments, split)
    return arguments.bpe_codes


def bpe_codes_at(path):
    """Codes whose merges make BPE_UNITS' units (ter@@ rier runs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    merges = ("t e", "te r", "r i", "ri e", "rie r</w>", "r u", "ru n", "run s</w>")
    path.write_text("#version: 0.2\n" + "".join(f"{m}\n" for m in merges), encoding="utf-8")
    return path


def test_data_in_bpe_units_takes_the_codes_beside_its_data_bin(tmp_path):
    codes = bpe_codes_at(tmp_path / "prepared" / "bpe.codes")
    assert checked_bpe_codes(tmp_path, BPE_UNITS) == codes


def test_data_in_bpe_units_through_a_link_takes_the_codes_beside_the_data_bin_it_links_to(
    tmp_path,
):
    """A link such as troubleshooting.md says to make for a data-bin with ':' in its path: its
    DATA/../bpe.codes, as the system reads that path, is beside the data-bin it leads to."""
    codes = bpe_codes_at(tmp_path / "run:2" / "prepared" / "bpe.codes")
    (tmp_path / "data").symlink_to(tmp_path / "run:2" / "prepared" / "data-bin")
    assert checked_bpe_codes(tmp_path, BPE_UNITS, data="data") == codes


def test_data_in_bpe_units_without_codes_is_an_error_saying_to_give_bpe_codes(tmp_path):
    with pytest.raises(EvaluationError) as raised:
        checked_bpe_codes(tmp_path, BPE_UNITS)
    data = tmp_path / "prepared" / "data-bin"
    assert str(raised.value) == (
        f"the data-bin {data} holds BPE units (entries of {data / 'dict.fr.txt'} end in @@), and "
        f"no BPE codes were found at {tmp_path / 'prepared' / 'bpe.codes'}: give the codes it was "
        "segmented with, --bpe-codes (bahdanau-prepare-data writes OUT/bpe.codes)"
    )


def test_data_in_words_takes_no_bpe_codes_even_beside_its_data_bin(tmp_path):
    bpe_codes_at(tmp_path / "prepared" / "bpe.codes")
    assert checked_bpe_codes(tmp_path, WORDS) is None


def test_bpe_codes_given_for_data_in_words_are_an_error_saying_to_drop_them(tmp_path):
    codes = bpe_codes_at(tmp_path / "bpe.codes")
    with pytest.raises(EvaluationError) as raised:
        checked_bpe_codes(tmp_path, WORDS, "--bpe-codes", str(codes))
    data = tmp_path / "prepared" / "data-bin"
    assert str(raised.value) == (
        f"--bpe-codes {codes} given, but the data-bin {data} holds no BPE units (no entry of "
        f"{data / 'dict.fr.txt'} ends in @@): give the --data segmented with those codes, or no "
        "--bpe-codes"
    )


@pytest.fixture
def translated(monkeypatch) -> list:
    """The checkpoints bahdanau-evaluate has fairseq-generate translate, which translates none."""
    checkpoints = []
    monkeypatch.setattr(command_line, "run_generate", lambda path, *_: checkpoints.append(path))
    return checkpoints


def evaluate_replacing_unk(data, out, dictionary, **models) -> None:
    """bahdanau-evaluate --replace-unk [dictionary] on models name=checkpoint."""
    arguments = ["--data", str(data), "--out-dir", str(out), "--replace-unk", *dictionary]
    arguments += [f"--model={name}={checkpoint}" for name, checkpoint in models.items()]
    evaluate(evaluation_parser().parse_args(arguments))


def test_with_replace_unk_a_model_without_attention_is_refused_before_any_is_translated(
    prepared_test_set, checkpoints, tmp_path, translated
):
    """fairseq-generate refuses it, after the models before it were translated, twice each."""
    rnnencdec = checkpoints["rnnencdec_30"]
    with pytest.raises(EvaluationError) as raised:
        evaluate_replacing_unk(
            prepared_test_set / "data-bin",
            tmp_path / "out",
            [],
            rnnsearch=checkpoints["rnnsearch_50"],
            rnnencdec=rnnencdec,
        )
    assert str(raised.value) == (
        f"model rnnencdec ({rnnencdec}): --replace-unk reads the source word a translation "
        "attends to, and rnnencdec has no attention: drop the option, or translate with "
        "rnnsearch checkpoints only"
    )
    assert translated == []


@pytest.mark.parametrize(
    "lines, refusal",
    [
        ("chat cat\nchien\n", r"unk-dictionary.txt, line 2: expected a source word"),
        ("#languages fr->en\nchat cat\n", "the reverse of this run's en->fr"),
    ],
    ids=["a line that cannot be read", "made for the reverse direction"],
)
def test_a_replace_unk_dictionary_that_cannot_serve_is_refused_before_anything_is_translated(
    lines, refusal, prepared_test_set, checkpoints, tmp_path, translated
):
    dictionary = tmp_path / "unk-dictionary.txt"
    dictionary.write_text(lines, encoding="utf-8")
    with pytest.raises(ConfigurationError, match=refusal):
        evaluate_replacing_unk(
            prepared_test_set / "data-bin",
            tmp_path / "out",
            [str(dictionary)],
            m=checkpoints["rnnsearch_50"],
        )
    assert translated == []


def test_a_model_of_the_other_direction_than_the_evaluation_s_is_refused_before_any_is_translated(
    prepared_test_set, checkpoints, tmp_path, translated
):
    """fairseq-generate read the split binarized en-fr for fr->en, and the demo's dictionaries are
    one for both languages: the en->fr model, trained on the data-bin without --source-lang, would
    have translated the French sources without a word."""
    checkpoint = checkpoints["rnnsearch_50"]
    arguments = ["--data", str(prepared_test_set / "data-bin"), "--out-dir", str(tmp_path / "out")]
    arguments += ["--source-lang", "fr", "--target-lang", "en", f"--model=rnnsearch={checkpoint}"]
    with pytest.raises(EvaluationError) as raised:
        evaluate(evaluation_parser().parse_args(arguments))
    assert str(raised.value) == (
        f"model rnnsearch ({checkpoint}) translates en->fr, and the evaluation is of fr->en "
        "(--source-lang fr --target-lang en): give --source-lang en --target-lang fr, or evaluate "
        "it in a run of its own"
    )
    assert translated == []


def test_with_replace_unk_a_split_without_its_source_text_is_refused_before_anything_is_translated(
    data_bin, checkpoints, tmp_path, translated
):
    """fairseq-generate reads the source words from it: it said it was missing only once it
    translated with the first model, followed by its own failure."""
    with pytest.raises(ConfigurationError) as raised:
        evaluate_replacing_unk(data_bin, tmp_path / "out", [], m=checkpoints["rnnsearch_50"])
    assert str(raised.value) == (
        "--replace-unk: fairseq-generate reads the real source words from "
        f"{source_text_path(data_bin, 'test', 'en', 'fr')}, the text the binaries were made from "
        "(tokens as binarized, one sentence per line), and it is missing: write it there "
        "(bahdanau-prepare-data does for the direction it prepared; for the other, copy there its "
        "tok/ text of that side)"
    )
    assert translated == []
