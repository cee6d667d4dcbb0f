"""Text that bahdanau-prepare-data cannot make training data of ends it with one line that names
the files or the split and says what to do; a byte-order mark is not taken for text."""

import codecs

import pytest

from bahdanau_tools.data.command_line import main
from bahdanau_tools.errors import DataError

from .corpora import EMPTY, TOO_LONG, sentence_pairs, write_corpus
from .scripts import error_lines, run_command, text_lines

LANGUAGES = ("en", "fr")


def arguments(corpus, out, *options):
    return [
        "corpus",
        "--train",
        str(corpus / "train"),
        "--source-lang",
        LANGUAGES[0],
        "--target-lang",
        LANGUAGES[1],
        "--out",
        str(out),
        "--workers",
        "1",
        *map(str, options),
    ]


def prepare(corpus, out, *options):
    """The command as a user types it."""
    return run_command("bahdanau-prepare-data", *arguments(corpus, out, *options))


@pytest.mark.parametrize("vocabulary", ["--bpe", "--shortlist"])
def test_an_empty_corpus_is_a_one_line_error_naming_its_files(tmp_path, vocabulary):
    corpus = write_corpus(tmp_path / "corpus", {"train": []}, LANGUAGES)
    completed = prepare(corpus, tmp_path / "out", vocabulary, 10)
    assert error_lines(completed) == [
        f"error: the train split has no sentence pair: {corpus / 'train.en'} and "
        f"{corpus / 'train.fr'} are empty; give files that hold one sentence per line"
    ]


def test_a_corpus_that_cleaning_leaves_no_training_pair_is_a_one_line_error_saying_why(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", {"train": [EMPTY, EMPTY, TOO_LONG]}, LANGUAGES)
    completed = prepare(corpus, tmp_path / "out", "--shortlist", 10, "--max-len", 30)
    assert error_lines(completed) == [
        "error: the train split keeps no sentence pair after cleaning: of its 3 pairs, 2 with an "
        "empty side, 1 with a side over --max-len 30 words; give each pair words on both sides or "
        "raise --max-len"
    ]


def test_a_split_that_keeps_no_pair_leaves_no_output_of_its_own(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", {"train": [EMPTY]}, LANGUAGES)
    out = tmp_path / "out"
    with pytest.raises(DataError, match="keeps no sentence pair"):
        main(arguments(corpus, out, "--bpe", 10))
    written = [str(path.relative_to(out)) for path in out.rglob("*") if path.is_file()]
    assert written == ["stages/check.json"]  # the check did pass


def test_a_byte_order_mark_at_the_start_of_a_file_is_not_text(tmp_path):
    pairs = sentence_pairs(6)
    marked = [tuple(codecs.BOM_UTF8 + side for side in pairs[0])] + pairs[1:]
    corpus = write_corpus(
        tmp_path / "corpus", {"train": marked, "dev": marked, "news": marked}, LANGUAGES
    )
    out = tmp_path / "out"
    completed = prepare(
        corpus, out, "--valid", corpus / "dev", "--test", corpus / "news", "--shortlist", 100
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    texts = list((out / "tok").iterdir()) + list((out / "raw").iterdir())
    texts += list((out / "data-bin").glob("*.txt"))  # the dictionaries, the source texts
    assert len(texts) == 6 + 4 + 4
    assert [path.name for path in texts if "\ufeff" in path.read_text(encoding="utf-8")] == []
    assert text_lines(out / "raw" / "test.fr")[0] == pairs[0][1].decode()
