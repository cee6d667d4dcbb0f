"""bahdanau-unk-dictionary: each source word's most frequent translation among the target words
the model cannot write (outside its dictionary), aligned by the model's own attention."""

import errno
import os
import shutil
from collections import Counter
from types import SimpleNamespace

import pytest
from fairseq.data import Dictionary

from bahdanau_plugin.errors import MissingPathError
from bahdanau_plugin import output_folder
from bahdanau_plugin.output_folder import TEMPORARY, OutputFolderError
from bahdanau_tools import unk_dictionary
from bahdanau_tools.errors import EvaluationError
from bahdanau_tools.unk_dictionary import (
    check_languages,
    check_segmentation,
    count_translations,
    dictionary_lines,
    load_model,
    main,
)

# (source, target) training pairs: "xylophonie" and "zorglub" are outside the demo dictionaries
PAIRS = [("the dog", "le chien xylophonie")] * 2 + [("a cat", "un chat zorglub")]


def write_sides(directory, pairs):
    for side, language in enumerate(("en", "fr")):
        (directory / f"train.{language}").write_text(
            "".join(pair[side] + "\n" for pair in pairs), encoding="utf-8"
        )
    return directory / "train.en", directory / "train.fr"


def build(checkpoint, data_bin, source, target, output, *more):
    return main(
        [
            "--checkpoint",
            str(checkpoint),
            "--data",
            str(data_bin),
            "--source",
            str(source),
            "--target",
            str(target),
            "--output",
            str(output),
            *more,
        ]
    )


def test_a_word_outside_the_target_dictionary_is_the_translation_of_a_source_word_it_attends_to(
    checkpoints, data_bin, tmp_path
):
    source, target = write_sides(tmp_path, PAIRS)
    lines = build(
        checkpoints["rnnsearch_50"], data_bin, source, target, tmp_path / "dictionary.txt"
    )
    [line] = lines
    word, translation = line.split()
    assert word in ("the", "dog") and translation == "xylophonie"
    assert (tmp_path / "dictionary.txt").read_text(encoding="utf-8").endswith("\n" + line + "\n")


def test_the_dictionary_records_the_languages_of_its_model_on_its_first_line(
    checkpoints, data_bin, tmp_path
):
    source, target = write_sides(tmp_path, PAIRS)
    build(checkpoints["rnnsearch_50"], data_bin, source, target, tmp_path / "dictionary.txt")
    first = (tmp_path / "dictionary.txt").read_text(encoding="utf-8").splitlines()[0]
    assert first == "#languages en->fr"


def test_a_translation_seen_once_is_kept_with_min_count_1_and_left_out_by_default(
    checkpoints, data_bin, tmp_path
):
    source, target = write_sides(tmp_path, PAIRS)
    by_default = build(
        checkpoints["rnnsearch_50"], data_bin, source, target, tmp_path / "default.txt"
    )
    at_least_once = build(
        checkpoints["rnnsearch_50"],
        data_bin,
        source,
        target,
        tmp_path / "once.txt",
        "--min-count",
        "1",
    )
    assert [line.split()[1] for line in by_default] == ["xylophonie"]
    assert sorted(line.split()[1] for line in at_least_once) == ["xylophonie", "zorglub"]


def test_pairs_after_a_chunk_boundary_keep_their_own_targets(
    checkpoints, data_bin, tmp_path, monkeypatch
):
    """The text is aligned a chunk of pairs at a time: a boundary after the second pair gives the
    dictionary of the text aligned whole."""
    source, target = write_sides(tmp_path, PAIRS)
    model = checkpoints["rnnsearch_50"]
    whole = build(model, data_bin, source, target, tmp_path / "whole.txt", "--min-count", "1")
    monkeypatch.setattr(unk_dictionary, "CHUNK_PAIRS", 2)
    chunked = build(model, data_bin, source, target, tmp_path / "chunked.txt", "--min-count", "1")
    assert chunked == whole
    assert sorted(line.split()[1] for line in chunked) == ["xylophonie", "zorglub"]


def test_the_first_chunk_is_aligned_before_the_pairs_after_it_are_read(
    checkpoints, data_bin, monkeypatch
):
    """The training text is never held whole: binarized at once, 2 million pairs took 4 GB."""
    monkeypatch.setattr(unk_dictionary, "CHUNK_PAIRS", 2)
    model, task = load_model(checkpoints["rnnsearch_50"], data_bin)
    read, read_at_each_batch = [], []

    def pairs():
        for pair in PAIRS * 2:
            read.append(pair)
            yield pair

    encode = model.encoder.forward

    def noting_encode(*arguments, **options):
        read_at_each_batch.append(len(read))
        return encode(*arguments, **options)

    monkeypatch.setattr(model.encoder, "forward", noting_encode)
    count_translations(model, task, pairs(), len(PAIRS) * 2, batch_size=64)
    assert read_at_each_batch == [2, 4, 6]


def test_of_translations_seen_as_often_the_first_by_code_points_is_kept_whatever_the_order_seen():
    """The pairs are aligned in a random order (fairseq's dataset shuffles them): the dictionary
    differed from run to run."""
    seen_first, seen_last = Counter(zorglub=2, minou=2), Counter(minou=2, zorglub=2)
    assert dictionary_lines({"chat": seen_first}, 2) == ["chat minou"]
    assert dictionary_lines({"chat": seen_last}, 2) == ["chat minou"]


def test_pairs_are_aligned_without_the_model_s_scores_of_every_target_word(
    checkpoints, data_bin, monkeypatch
):
    """Only the attention aligns: the output layer's scores over the target vocabulary (batch x
    length x 30,000 for the paper's shortlist) doubled the memory an alignment took."""
    model, task = load_model(checkpoints["rnnsearch_50"], data_bin)

    def not_wanted(features):
        raise AssertionError("the output layer was computed")

    monkeypatch.setattr(model.decoder, "output_layer", not_wanted)
    translations = count_translations(model, task, iter(PAIRS), len(PAIRS), batch_size=64)
    assert sorted(target for targets in translations.values() for target in targets) == [
        "xylophonie",
        "zorglub",
    ]


def test_sides_with_different_line_counts_are_an_error_naming_both(checkpoints, data_bin, tmp_path):
    source, target = write_sides(tmp_path, PAIRS)
    target.write_text("le chien\n", encoding="utf-8")
    with pytest.raises(EvaluationError, match=f"{source} has 3 lines but {target} has 1"):
        build(checkpoints["rnnsearch_50"], data_bin, source, target, tmp_path / "dictionary.txt")


def test_a_missing_data_folder_is_an_error_naming_it(checkpoints, tmp_path):
    source, target = write_sides(tmp_path, PAIRS)
    missing = tmp_path / "nowhere"
    with pytest.raises(MissingPathError, match=f"data folder {missing} not found"):
        build(checkpoints["rnnsearch_50"], missing, source, target, tmp_path / "dictionary.txt")


def test_a_missing_training_text_is_an_error_naming_its_option(checkpoints, data_bin, tmp_path):
    source, _ = write_sides(tmp_path, PAIRS)
    missing = tmp_path / "train.de"
    with pytest.raises(EvaluationError, match=f"--target {missing} not found"):
        build(checkpoints["rnnsearch_50"], data_bin, source, missing, tmp_path / "dictionary.txt")


def test_the_output_folder_is_made_when_it_does_not_exist(checkpoints, data_bin, tmp_path):
    output = tmp_path / "new" / "dictionary.txt"
    build(checkpoints["rnnsearch_50"], data_bin, *write_sides(tmp_path, PAIRS), output)
    assert output.is_file()


def test_a_training_text_not_in_utf8_is_an_error_naming_its_option_line_and_byte(
    checkpoints, data_bin, tmp_path
):
    source, target = write_sides(tmp_path, PAIRS)
    target.write_bytes("le chien\nle chien élégant\n".encode("latin-1"))
    with pytest.raises(EvaluationError) as raised:
        build(checkpoints["rnnsearch_50"], data_bin, source, target, tmp_path / "dictionary.txt")
    message = str(raised.value)
    assert "\n" not in message
    assert f"--target {target} is not UTF-8 text: line 2, byte 10 is 0xe9" in message
    assert "convert the file to UTF-8" in message


def test_a_training_text_with_a_byte_order_mark_and_in_nfd_gives_the_dictionary_of_plain_nfc(
    checkpoints, data_bin, tmp_path
):
    def dictionary(folder, word, mark):
        """The dictionary of PAIRS with xylophonie written as word, mark before each side."""
        folder.mkdir()
        pairs = [(source, target.replace("xylophonie", word)) for source, target in PAIRS]
        source, target = write_sides(folder, pairs)
        for side in (source, target):
            side.write_text(mark + side.read_text(encoding="utf-8"), encoding="utf-8")
        return build(
            checkpoints["rnnsearch_50"], data_bin, source, target, folder / "dictionary.txt"
        )

    nfc, nfd = "xylophoni\u00e9", "xylophonie\u0301"  # é as one code point, and as e + accent
    plain = dictionary(tmp_path / "plain", nfc, "")
    marked = dictionary(tmp_path / "marked", nfd, "\ufeff")
    assert [line.split()[1] for line in plain] == [nfc]
    assert marked == plain


def test_an_output_that_is_a_folder_is_refused_before_the_model_is_loaded(data_bin, tmp_path):
    """The checkpoint named does not exist: the output is refused first."""
    source, target = write_sides(tmp_path, PAIRS)
    with pytest.raises(
        OutputFolderError,
        match=f"--output {tmp_path} is a folder: name the file to write in it, such as "
        f"{tmp_path / 'unk-dictionary.txt'}",
    ):
        build(tmp_path / "missing.pt", data_bin, source, target, tmp_path)


def test_an_output_under_a_file_is_refused_naming_the_file(checkpoints, data_bin, tmp_path):
    source, target = write_sides(tmp_path, PAIRS)
    with pytest.raises(OutputFolderError, match=f"{source} is a file, not a folder"):
        build(checkpoints["rnnsearch_50"], data_bin, source, target, source / "dictionary.txt")


@pytest.mark.parametrize("option", ["--source", "--target", "--checkpoint"])
def test_an_output_that_is_one_of_the_inputs_is_refused_leaving_it_as_it_was(
    checkpoints, data_bin, tmp_path, option
):
    source, target = write_sides(tmp_path, PAIRS)
    checkpoint = tmp_path / "checkpoint.pt"
    checkpoint.write_bytes(checkpoints["rnnsearch_50"].read_bytes())
    inputs = {"--source": source, "--target": target, "--checkpoint": checkpoint}
    before = inputs[option].read_bytes()
    with pytest.raises(OutputFolderError) as raised:
        build(
            checkpoint,
            data_bin,
            source,
            target,
            tmp_path / ".." / tmp_path.name / inputs[option].name,
        )
    assert str(raised.value) == (
        f"--output {tmp_path / '..' / tmp_path.name / inputs[option].name} is the {option} file, "
        "which the dictionary would replace: name another file"
    )
    assert inputs[option].read_bytes() == before


def test_an_output_that_is_a_dictionary_of_the_data_folder_is_refused_leaving_it_as_it_was(
    checkpoints, data_bin, tmp_path
):
    """The model is loaded with it: written over, the data-bin would be read by no tool."""
    source, target = write_sides(tmp_path, PAIRS)
    data = shutil.copytree(data_bin, tmp_path / "data-bin")
    before = (data / "dict.fr.txt").read_bytes()
    with pytest.raises(OutputFolderError) as raised:
        build(checkpoints["rnnsearch_50"], data, source, target, data / "dict.fr.txt")
    assert str(raised.value) == (
        f"--output {data / 'dict.fr.txt'} is a dictionary of the --data folder, which the "
        "dictionary would replace: name another file"
    )
    assert (data / "dict.fr.txt").read_bytes() == before


def test_a_write_that_fails_keeps_the_dictionary_it_would_replace_and_says_why(
    checkpoints, data_bin, tmp_path, monkeypatch
):
    """A disk that is full only when the new dictionary is synced (the check of the output's
    folder before the work passes): the dictionary written before stays."""
    source, target = write_sides(tmp_path, PAIRS)
    output = tmp_path / "dictionary.txt"
    output.write_text("the chien\n", encoding="utf-8")

    sync = os.fsync

    def disk_full(descriptor):
        if os.readlink(f"/proc/self/fd/{descriptor}") == f"{output}{TEMPORARY}":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        sync(descriptor)

    monkeypatch.setattr(output_folder.os, "fsync", disk_full)
    with pytest.raises(
        OutputFolderError,
        match=f"writing under --output {tmp_path} failed: no space left on device; free some",
    ):
        build(checkpoints["rnnsearch_50"], data_bin, source, target, output)
    assert output.read_text(encoding="utf-8") == "the chien\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "dictionary.txt",
        "train.en",
        "train.fr",
    ]


def test_text_without_the_subword_pieces_of_the_model_s_dictionary_is_refused(tmp_path):
    """Tokenized text given for a model trained on BPE: most words would look unknown."""
    dictionary = Dictionary()
    for symbol in ("le", "chi@@", "en"):
        dictionary.add_symbol(symbol)
    target = tmp_path / "train.fr"
    with pytest.raises(EvaluationError, match=f"--target {target} holds no subword piece"):
        check_segmentation(dictionary, ["le chien"], target)
    check_segmentation(dictionary, ["le chi@@ en"], target)  # as binarized: accepted


def test_text_with_subword_pieces_the_model_s_dictionary_lacks_is_refused(
    checkpoints, data_bin, tmp_path
):
    pairs = [(source, target.replace("chien", "chi@@ en")) for source, target in PAIRS]
    source, target = write_sides(tmp_path, pairs)
    with pytest.raises(EvaluationError, match=f"--target {target} holds subword pieces"):
        build(checkpoints["rnnsearch_50"], data_bin, source, target, tmp_path / "out.txt")


def model_task(source_words, target_words, shared_words):
    """What check_languages reads of the model's task: an en dictionary and a fr one that both hold
    shared_words."""

    def dictionary(words):
        built = Dictionary()
        for word in [*words, *shared_words]:
            built.add_symbol(word)
        return built

    return SimpleNamespace(
        source_dictionary=dictionary(source_words),
        target_dictionary=dictionary(target_words),
        cfg=SimpleNamespace(source_lang="en", target_lang="fr"),
    )


# numbers, names and punctuation, which both languages write alike, and most words of these lines
SHARED = ["2014", "1,500", "Obama", "Paris", "Google", ".", ",", "(", ")"]
ENGLISH = ["the", "president", "visits", "in", "and", "bought", "for", "euros"]
FRENCH = ["le", "président", "visite", "en", "et", "a", "acheté", "pour", "euros", "restaurant"]
HEAVY_OVERLAP = [
    # English, with "restaurant" outside the English shortlist and inside the French one
    ("Obama visits Paris ( 2014 ) .", "Obama visite Paris ( 2014 ) ."),
    (
        "Google bought 1,500 restaurant for 1,500 euros , Paris , 2014 .",
        "Google a acheté 1,500 restaurant pour 1,500 euros , Paris , 2014 .",
    ),
    ("the president , Obama , in Paris .", "le président , Obama , en Paris ."),
]


def test_sides_of_languages_that_share_most_words_are_taken_as_given(tmp_path):
    """Only words one dictionary holds and the other lacks tell the languages apart, and nearly
    all of a side's are its own dictionary's, however many the languages share."""
    check_languages(
        model_task(ENGLISH, FRENCH, SHARED),
        HEAVY_OVERLAP,
        tmp_path / "train.en",
        tmp_path / "train.fr",
    )


def test_swapped_sides_are_refused_in_one_line_naming_both_options(tmp_path):
    """The command aligned French words with English ones, and wrote a dictionary from French
    (or none: "0 source words with a translation"), without a word."""
    source, target = tmp_path / "train.fr", tmp_path / "train.en"
    swapped = [(french, english) for english, french in HEAVY_OVERLAP]
    with pytest.raises(EvaluationError) as refused:
        check_languages(model_task(ENGLISH, FRENCH, SHARED), swapped, source, target)
    message = str(refused.value)
    assert "\n" not in message
    assert message.startswith(f"--source {source} and --target {target} look swapped: ")
    assert message.endswith(
        "give the en side of the training text as --source and the fr side as --target"
    )


def test_a_side_in_the_other_language_is_refused_naming_its_option(tmp_path):
    target = tmp_path / "train.en"
    english = [(english, english) for english, _ in HEAVY_OVERLAP]
    with pytest.raises(EvaluationError, match=f"--target {target} looks like en text"):
        check_languages(model_task(ENGLISH, FRENCH, SHARED), english, tmp_path / "x.en", target)


def test_one_dictionary_for_both_languages_tells_no_side_apart(tmp_path):
    """As BPE data has (bahdanau-prepare-data --bpe): nothing to check by."""
    task = model_task(ENGLISH + FRENCH, [], SHARED)
    task.target_dictionary = task.source_dictionary
    swapped = [(french, english) for english, french in HEAVY_OVERLAP]
    check_languages(task, swapped, tmp_path / "train.fr", tmp_path / "train.en")


def test_swapped_training_text_is_refused_before_it_is_aligned(
    shortlist_prepared, shortlist_checkpoint, tmp_path
):
    """A model of the paper's vocabulary, a dictionary per language: given train.fr as --source,
    the command wrote "ce this", "la the", ... (6 source words with a translation)."""
    tok, output = shortlist_prepared / "tok", tmp_path / "dictionary.txt"
    with pytest.raises(EvaluationError, match="look swapped: "):
        build(
            shortlist_checkpoint,
            shortlist_prepared / "data-bin",
            tok / "train.fr",
            tok / "train.en",
            output,
        )
    assert not output.exists()


def test_the_training_text_as_given_is_aligned(shortlist_prepared, shortlist_checkpoint, tmp_path):
    tok = shortlist_prepared / "tok"
    lines = build(
        shortlist_checkpoint,
        shortlist_prepared / "data-bin",
        tok / "train.en",
        tok / "train.fr",
        tmp_path / "dictionary.txt",
    )
    english = set((tok / "train.en").read_text(encoding="utf-8").split())
    assert lines and all(line.split()[0] in english for line in lines)
