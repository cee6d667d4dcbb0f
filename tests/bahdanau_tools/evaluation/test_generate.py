"""fairseq-generate's detokenized hypotheses, read back in the order of the test set."""

import re
from dataclasses import replace
from pathlib import Path

import pytest

from bahdanau_tools.errors import EvaluationError
from bahdanau_tools.evaluation.generate import (
    PROGRESS_SECONDS,
    TOKENIZED,
    Generation,
    Progress,
    cut_at_the_length_limit,
    generate_command,
    max_positions,
    read_hypotheses,
    run_generate,
)
from bahdanau_tools.evaluation.binarized_split import load_split

from ...support.demo_data import text_data_bin
from .conftest import MODELS

GENERATION = Generation(
    "test", "en", "fr", beam=12, max_len_b=200, lenpen=1.0, batch_size=32, bpe_codes=None
)


@pytest.mark.parametrize("model", sorted(MODELS))
def test_hypotheses_file_holds_the_d_lines_of_fairseq_generate_in_sentence_order(evaluation, model):
    output = (evaluation / model / "generate-test.txt").read_text(encoding="utf-8")
    by_id = dict(re.findall(r"^D-(\d+)\t[^\t]*\t(.*)$", output, flags=re.M))
    expected = [by_id[str(index)] for index in range(len(by_id))]
    assert (evaluation / model / "test.hyp").read_text(encoding="utf-8").splitlines() == expected


def test_hypotheses_are_read_in_sentence_order_whatever_the_order_of_the_batches(tmp_path):
    output = tmp_path / "generate-test.txt"
    output.write_text(
        "S-1\tb\nH-1\t-0.5\tdeux\nD-1\t-0.5\tdeux\nD-0\t-0.1\tun\nD-2\t-0.2\t\n", encoding="utf-8"
    )
    assert read_hypotheses(output, 3) == ["un", "deux", ""]


def test_a_missing_hypothesis_is_an_error_that_names_it(tmp_path):
    output = tmp_path / "generate-test.txt"
    output.write_text("D-0\t-0.1\tun\n", encoding="utf-8")
    with pytest.raises(EvaluationError, match="no hypothesis for 1 of the 2 test sentences"):
        read_hypotheses(output, 2)


def test_tokenized_hypotheses_are_the_h_lines_with_bpe_pieces_joined(tmp_path):
    output = tmp_path / "generate-test.txt"
    output.write_text("H-1\t-0.5\tl&apos; ter@@ rier\nH-0\t-0.1\tun\n", encoding="utf-8")
    assert read_hypotheses(output, 2, TOKENIZED) == ["un", "l&apos; terrier"]


def test_translations_of_max_len_b_tokens_are_the_ones_cut_at_the_length_limit(tmp_path):
    """Counted in BPE pieces, as fairseq-generate counts the limit, of each sentence's best
    hypothesis (the first printed)."""
    output = tmp_path / "generate-test.txt"
    output.write_text(
        "H-0\t-0.1\tun ch@@ at noir\nH-0\t-0.9\tun\nH-1\t-0.2\tun chat\nH-2\t-0.3\t\n",
        encoding="utf-8",
    )
    assert cut_at_the_length_limit(output, 4) == [0]


def command(**settings):
    """fairseq-generate's command for the generation settings given."""
    return generate_command(Path("model.pt"), Path("data-bin"), replace(GENERATION, **settings))


def option(command, name):
    """What follows option name in command: its value."""
    return command[command.index(name) + 1]


def test_replace_unk_is_passed_to_fairseq_generate_with_its_dictionary_if_any():
    assert command(replace_unk="")[-1] == "--replace-unk"
    assert command(replace_unk="dict.txt")[-2:] == ["--replace-unk", "dict.txt"]
    assert "--replace-unk" not in command()


@pytest.mark.parametrize("replace_unk", [None, "", "dict.txt"])
def test_fairseq_generate_translates_with_the_plugins_task_whether_it_replaces_unk_or_not(
    replace_unk,
):
    assert option(command(replace_unk=replace_unk), "--task") == "translation_with_source_words"


def test_the_length_penalty_given_is_passed_to_fairseq_generate():
    assert option(command(lenpen=0.0), "--lenpen") == "0.0"
    assert option(command(), "--lenpen") == "1.0"


def test_unk_is_disallowed_by_an_infinite_unknown_word_penalty_only_when_asked():
    assert option(command(unk_disallowed=True), "--unkpen") == "inf"
    assert "--unkpen" not in command()


def test_fairseq_generate_is_told_to_batch_every_test_sentence():
    command = generate_command(Path("model.pt"), Path("data-bin"), GENERATION)
    option = command.index("--required-batch-size-multiple")
    assert command[option + 1] == "1"


def test_bpe_is_undone_by_fairseq_only_when_the_data_has_codes():
    plain = generate_command(Path("model.pt"), Path("data-bin"), GENERATION)
    with_bpe = generate_command(
        Path("model.pt"), Path("data-bin"), replace(GENERATION, bpe_codes=Path("bpe.codes"))
    )
    assert "--bpe" not in plain and "--tokenizer" in plain
    assert with_bpe[-4:] == ["--bpe", "subword_nmt", "--bpe-codes", "bpe.codes"]


def test_progress_is_a_line_at_most_every_few_seconds_as_sentences_are_translated(capsys):
    now = [0.0]
    progress = Progress("rnnsearch", 1000, clock=lambda: now[0])
    for seconds in (1, 2, PROGRESS_SECONDS + 1, PROGRESS_SECONDS + 2, 2 * PROGRESS_SECONDS + 1):
        now[0] = seconds
        progress.sentence_translated()
    now[0] = 3 * PROGRESS_SECONDS
    progress.sentence_translated()
    progress.finished()
    assert capsys.readouterr().err.splitlines() == [
        f"rnnsearch: 3 of 1,000 sentences translated, {PROGRESS_SECONDS + 1} s",
        f"rnnsearch: 5 of 1,000 sentences translated, {2 * PROGRESS_SECONDS + 1} s",
        f"rnnsearch: 6 of 1,000 sentences translated, {3 * PROGRESS_SECONDS} s",
    ]


def test_progress_ends_with_one_line_for_all_the_sentences(capsys):
    progress = Progress("rnnencdec", 2, clock=lambda: 0.0)
    progress.sentence_translated()
    progress.sentence_translated()
    progress.finished()
    assert capsys.readouterr().err.splitlines() == ["rnnencdec: 2 of 2 sentences translated, 0 s"]


def test_fairseq_generate_takes_sentences_as_long_as_the_splits_longest():
    positions = max_positions(1_201)
    assert option(command(max_positions=positions), "--max-source-positions") == "1201"
    assert option(command(max_positions=positions), "--max-target-positions") == "1201"


def test_fairseqs_own_limit_stays_where_no_sentence_is_over_it():
    assert max_positions(14) == 1024


def test_a_split_of_text_is_translated_where_fairseq_preprocess_dataset_impl_raw_left_it(
    checkpoints, data_bin, tmp_path
):
    """fairseq-generate finds a split of text only when told --dataset-impl raw: the evaluation's
    ended in "the data-bin ... has no 'test' split"."""
    folder = text_data_bin(data_bin, tmp_path)
    split = load_split(folder, "test", "en", "fr")
    generation = replace(
        GENERATION, beam=2, max_len_b=5, dataset_impl="raw" if split.as_text else None
    )
    output = tmp_path / "rnnsearch" / "generate-test.txt"
    run_generate(
        checkpoints["rnnsearch_50"], folder, generation, output, Progress("rnnsearch", len(split))
    )
    assert len(read_hypotheses(output, len(split))) == len(split) == 13
