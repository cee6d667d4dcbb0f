"""bahdanau-unk-dictionary: each source word's most frequent translation among the target words
the model cannot write (outside its dictionary), aligned by the model's own attention."""

import pytest

from bahdanau_plugin.errors import MissingPathError
from bahdanau_tools.errors import EvaluationError
from bahdanau_tools.unk_dictionary import main

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
    assert (tmp_path / "dictionary.txt").read_text(encoding="utf-8") == line + "\n"


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
