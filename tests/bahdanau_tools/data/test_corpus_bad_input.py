"""Text that bahdanau-prepare-data cannot make training data of ends it with one line that names
the files or the split and says what to do; every pair is kept or dropped for a reason it counts,
test lines never; a byte-order mark is not taken for text."""

import codecs
import re
import shutil
import unicodedata

import pytest

from bahdanau_tools.data import digests
from bahdanau_tools.data.command_line import main
from bahdanau_tools.errors import DataError

from .corpora import EMPTY, EXTREME_RATIO, TOO_LONG, sentence_pairs, write_corpus
from .scripts import binarized_sentences, error_lines, read_summary, run_command, text_lines

pytestmark = pytest.mark.long  # run first: tests/conftest.py

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
    # the check did pass; the digests are those of the files it read
    assert sorted(written) == ["stages/check.json", "stages/digests.json"]


def test_a_byte_order_mark_at_the_start_of_a_file_is_not_text(tmp_path):
    def marked(pairs):
        return [tuple(codecs.BOM_UTF8 + side for side in pairs[0])] + pairs[1:]

    news = sentence_pairs(6, offset=12)
    # sentences of its own for each split: copies of one file are refused
    splits = {"train": sentence_pairs(6), "dev": sentence_pairs(6, offset=6), "news": news}
    corpus = write_corpus(
        tmp_path / "corpus", {prefix: marked(pairs) for prefix, pairs in splits.items()}, LANGUAGES
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
    assert text_lines(out / "raw" / "test.fr")[0] == news[0][1].decode()


def in_latin1(pairs):
    """The pairs with their French side in Latin-1, as `iconv -f utf-8 -t latin1` writes it."""
    return [(english, french.decode().encode("latin-1")) for english, french in pairs]


def test_a_corpus_that_is_not_utf8_is_a_one_line_error_naming_the_file_the_line_and_the_byte(
    tmp_path,
):
    """Not pairs dropped for the letters they hold: here every third French line has an è."""
    corpus = write_corpus(tmp_path / "corpus", {"train": in_latin1(sentence_pairs(30))}, LANGUAGES)
    completed = prepare(corpus, tmp_path / "out", "--bpe", 10)
    assert completed.returncode == 1
    assert error_lines(completed) == [
        f"error: {corpus / 'train.fr'} is not UTF-8 text: line 3, byte 9 is 0xe8; convert the "
        "file to UTF-8 (iconv -f ITS-ENCODING -t utf-8), or name its encoding with --encoding "
        "(--encoding latin-1, say)"
    ]
    assert not (tmp_path / "out" / "tok").exists()  # stopped before the work


def test_encoding_reads_a_corpus_in_that_encoding_as_its_utf8_copy_is_read(tmp_path):
    pairs = sentence_pairs(30)
    corpora = {
        "utf-8": write_corpus(tmp_path / "utf-8", {"train": pairs}, LANGUAGES),
        "latin-1": write_corpus(tmp_path / "latin-1", {"train": in_latin1(pairs)}, LANGUAGES),
    }
    for encoding, corpus in corpora.items():
        completed = prepare(
            corpus, tmp_path / f"out-{encoding}", "--bpe", 20, "--encoding", encoding
        )
        assert completed.returncode == 0, completed.stderr[-3000:]
    for name in ("tok/train.fr", "bpe.codes", "bpe/train.fr", "data-bin/dict.fr.txt"):
        assert (tmp_path / "out-latin-1" / name).read_bytes() == (
            tmp_path / "out-utf-8" / name
        ).read_bytes()


def test_an_encoding_python_does_not_know_is_refused_with_the_option(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", {"train": sentence_pairs(3)}, LANGUAGES)
    completed = prepare(corpus, tmp_path / "out", "--bpe", 10, "--encoding", "latin-9000")
    assert completed.returncode == 2
    assert error_lines(completed)[-1].endswith(
        "error: argument --encoding: latin-9000 is not a text encoding Python knows (latin-1, "
        "cp1252, utf-8, ... : https://docs.python.org/3/library/codecs.html#standard-encodings)"
    )


def test_cleaning_that_would_drop_more_than_the_share_allowed_stops_with_the_counts(tmp_path):
    pairs = sentence_pairs(4) + [TOO_LONG] * 5 + [EMPTY]
    corpus = write_corpus(tmp_path / "corpus", {"train": pairs}, LANGUAGES)
    completed = prepare(corpus, tmp_path / "out", "--shortlist", 10, "--max-len", 30)
    assert completed.returncode == 1
    assert error_lines(completed)[-1] == (
        "error: cleaning drops 6 of the train split's 10 pairs (60%), more than --max-dropped 0.5 "
        "allows: 1 with an empty side, 5 with a side over --max-len 30 words; check its files "
        "and options, or allow it with --max-dropped 0.6"
    )
    assert not (tmp_path / "out" / "data-bin").exists()


def test_max_dropped_allows_it_and_the_rerun_keeps_the_cleaning_done(tmp_path):
    pairs = sentence_pairs(4) + [TOO_LONG] * 5 + [EMPTY]
    corpus = write_corpus(tmp_path / "corpus", {"train": pairs}, LANGUAGES)
    prepare(corpus, tmp_path / "out", "--shortlist", 10, "--max-len", 30)
    completed = prepare(
        corpus, tmp_path / "out", "--shortlist", 10, "--max-len", 30, "--max-dropped", 0.6
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "tokenize-train: finished by an earlier run, kept" in completed.stderr
    assert read_summary(tmp_path / "out")["splits"]["train"]["cleaning"]["kept"] == 4


def test_a_training_pair_with_a_word_too_long_to_be_one_is_dropped_and_counted(tmp_path):
    """One 20,000-letter word would take over the joint BPE: its letters' pairs would outnumber
    those of every real word."""
    pairs = sentence_pairs(30)
    corpora = {
        "without": write_corpus(tmp_path / "without", {"train": pairs}, LANGUAGES),
        "with": write_corpus(
            tmp_path / "with", {"train": pairs + [(b"a" * 20_000, b"b" * 20_000)]}, LANGUAGES
        ),
    }
    for name, corpus in corpora.items():
        completed = prepare(corpus, tmp_path / name, "--bpe", 20)
        assert completed.returncode == 0, completed.stderr[-3000:]
    assert "train: read 31, empty 0, length ratio 0, too long 0, long word 1, kept 30" in (
        (tmp_path / "with" / "summary.txt").read_text(encoding="utf-8")
    )
    assert (tmp_path / "with" / "bpe.codes").read_bytes() == (
        tmp_path / "without" / "bpe.codes"
    ).read_bytes()


def test_no_line_of_a_test_set_is_dropped_and_every_line_is_in_nfc(tmp_path):
    decomposed = unicodedata.normalize("NFD", "Le café est ouvert.")
    odd = [
        EMPTY,
        EXTREME_RATIO,
        TOO_LONG,
        (b"a" * 500, b"b" * 500),  # a word over --max-word-len
        (b"The cafe is open.", decomposed.encode()),
    ]
    corpus = write_corpus(
        tmp_path / "corpus", {"train": sentence_pairs(12), "news": odd}, LANGUAGES
    )
    out = tmp_path / "out"
    completed = prepare(corpus, out, "--test", corpus / "news", "--bpe", 20)
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert [binarized_sentences(out, "test", language) for language in LANGUAGES] == [5, 5]
    for folder in ("raw", "tok", "bpe"):
        assert len(text_lines(out / folder / "test.fr")) == len(odd)
    assert text_lines(out / "raw" / "test.fr")[-1] == "Le café est ouvert."  # NFC


def test_inputs_in_a_folder_the_command_writes_are_refused_and_kept_as_they_were(tmp_path):
    """data/raw/train.en with --out data: the command's own raw/ would replace them."""
    out = tmp_path / "data"
    corpus = write_corpus(out / "raw", {"train": sentence_pairs(12)}, LANGUAGES)
    before = (corpus / "train.en").read_bytes()
    with pytest.raises(DataError, match=f"{corpus / 'train.en'} is in {corpus}, a folder"):
        main(arguments(corpus, out, "--bpe", 10))
    assert (corpus / "train.en").read_bytes() == before
    assert not (out / "stages").exists()


def test_one_language_given_as_both_sides_is_refused(tmp_path):
    corpus = write_corpus(tmp_path / "corpus", {"train": sentence_pairs(12)}, ("en", "en"))
    options = arguments(corpus, tmp_path / "out", "--bpe", 10)
    options[options.index("--target-lang") + 1] = "en"
    with pytest.raises(DataError, match="--source-lang and --target-lang are both en"):
        main(options)


def test_an_out_whose_path_has_a_comma_is_refused_before_any_work(tmp_path):
    """fairseq-preprocess splits its file prefixes at commas: binarizing would fail at the end."""
    corpus = write_corpus(tmp_path / "corpus", {"train": sentence_pairs(12)}, LANGUAGES)
    out = tmp_path / "en,fr"
    with pytest.raises(DataError, match="has a comma in its path"):
        main(arguments(corpus, out, "--bpe", 10))
    assert not out.exists()


@pytest.mark.parametrize(
    "content", [b"not gzip at all\n", None], ids=["plain text named .gz", "cut short"]
)
def test_a_gz_file_that_is_not_whole_gzip_is_a_one_line_error_naming_it(tmp_path, content):
    corpus = write_corpus(tmp_path / "corpus", {"train-gz": sentence_pairs(40)}, LANGUAGES)
    broken = corpus / "train-gz.en.gz"
    broken.write_bytes(content or broken.read_bytes()[:60])
    options = arguments(corpus, tmp_path / "out", "--bpe", 10)
    options[options.index("--train") + 1] = str(corpus / "train-gz")
    with pytest.raises(DataError, match=f"{broken} cannot be read as gzip"):
        main(options)


def test_a_file_whose_lines_end_in_carriage_returns_alone_is_refused(tmp_path):
    """Read at \\n only, its sentences would be one: a test set of one sentence, silently."""
    corpus = write_corpus(
        tmp_path / "corpus", {"train": sentence_pairs(12), "test": sentence_pairs(3)}, LANGUAGES
    )
    for language in LANGUAGES:
        test = corpus / f"test.{language}"
        test.write_bytes(test.read_bytes().replace(b"\n", b"\r"))
    options = arguments(corpus, tmp_path / "out", "--bpe", 10, "--test", corpus / "test")
    with pytest.raises(DataError, match="ends its lines with carriage returns alone"):
        main(options)


@pytest.mark.parametrize(
    "separator, named",
    [("\u2028", "U+2028 LINE SEPARATOR"), ("\u0085", "U+0085"), ("\v", "U+000B")],
    ids=["line separator", "next line (EBCDIC)", "vertical tab"],
)
def test_a_file_whose_lines_end_in_another_separator_alone_is_refused(tmp_path, separator, named):
    """Read at \\n only, its sentences were one: a test set of one sentence, silently."""
    corpus = write_corpus(
        tmp_path / "corpus", {"train": sentence_pairs(12), "test": sentence_pairs(3)}, LANGUAGES
    )
    for language in LANGUAGES:
        test = corpus / f"test.{language}"
        test.write_bytes(test.read_bytes().replace(b"\n", separator.encode()) + b"\n")
    options = arguments(corpus, tmp_path / "out", "--bpe", 10, "--test", corpus / "test")
    with pytest.raises(DataError, match=f"ends its lines with {re.escape(named)} alone"):
        main(options)


def test_the_training_text_given_as_a_test_set_is_refused_before_any_work(tmp_path):
    """Scored on the pairs it learned from, the model's BLEU would say nothing of translation."""
    corpus = write_corpus(tmp_path / "corpus", {"train": sentence_pairs(12)}, LANGUAGES)
    out = tmp_path / "out"
    with pytest.raises(DataError) as refused:
        main(arguments(corpus, out, "--bpe", 10, "--test", corpus / "train"))
    assert str(refused.value) == (
        f"{corpus / 'train.en'} is read as the train split's en side (--train {corpus / 'train'}) "
        f"and as the test split's en side (--test {corpus / 'train'}): give each split and each "
        "language a file of its own (a test split of training text would score the model on "
        "what it learned from)"
    )
    assert not (out / "stages").exists()


def test_a_test_set_given_twice_under_another_name_is_refused(tmp_path):
    """A link to it, or another spelling of its path, is the same file."""
    corpus = write_corpus(
        tmp_path / "corpus", {"train": sentence_pairs(12), "test": sentence_pairs(3)}, LANGUAGES
    )
    for language in LANGUAGES:
        (corpus / f"again.{language}").symlink_to(corpus / f"test.{language}")
    options = arguments(corpus, tmp_path / "out", "--bpe", 10, "--test")
    with pytest.raises(DataError, match=r"\(also named .*again.en\) is read as the test split's"):
        main(options + [str(corpus / "test"), str(corpus / "again")])


@pytest.fixture
def hashed(monkeypatch):
    """The files whose content is hashed, in order, once each time one is."""
    paths = []
    hash_content = digests.content_digest
    monkeypatch.setattr(
        digests, "content_digest", lambda path: paths.append(path) or hash_content(path)
    )
    return paths


def copy_prefix(corpus, prefix, copy):
    """`cp PREFIX.en COPY.en; cp PREFIX.fr COPY.fr`: other files, the same bytes."""
    for language in LANGUAGES:
        shutil.copyfile(corpus / f"{prefix}.{language}", corpus / f"{copy}.{language}")


def test_a_copy_of_the_training_text_given_as_a_test_set_is_refused_before_any_work(tmp_path):
    """Another file than the training text's, but scored on it the model's BLEU would say nothing
    of translation either."""
    corpus = write_corpus(tmp_path / "corpus", {"train": sentence_pairs(12)}, LANGUAGES)
    copy_prefix(corpus, "train", "test")
    out = tmp_path / "out"
    with pytest.raises(DataError) as refused:
        main(arguments(corpus, out, "--bpe", 10, "--test", corpus / "test"))
    assert str(refused.value) == (
        f"{corpus / 'train.en'} and its copy {corpus / 'test.en'} (the same bytes) are read as "
        f"the train split's en side (--train {corpus / 'train'}) and as the test split's en side "
        f"(--test {corpus / 'test'}): give each split and each language a file of its own (a test "
        "split of training text would score the model on what it learned from)"
    )
    assert not (out / "stages").exists()


def valid_set_and_its_copy_as_a_test_set(tmp_path):
    """A corpus with a dev set, and the options that give it as --valid and a copy of it, news,
    as --test."""
    corpus = write_corpus(
        tmp_path / "corpus",
        {"train": sentence_pairs(12), "dev": sentence_pairs(3, offset=12)},
        LANGUAGES,
    )
    copy_prefix(corpus, "dev", "news")
    options = arguments(corpus, tmp_path / "out", "--bpe", 10, "--valid", corpus / "dev")
    return corpus, options + ["--test", str(corpus / "news")]


def test_a_copy_of_the_valid_set_given_as_a_test_set_is_refused(tmp_path):
    corpus, options = valid_set_and_its_copy_as_a_test_set(tmp_path)
    with pytest.raises(DataError, match=re.escape(f"and its copy {corpus / 'news.en'} (the same")):
        main(options)


def test_a_copy_is_looked_for_among_the_files_of_the_same_size_only(tmp_path, hashed):
    """Hashing the training text for it would read gigabytes (WMT'14's): none of its files has
    the size of a test set's."""
    _, options = valid_set_and_its_copy_as_a_test_set(tmp_path)
    with pytest.raises(DataError, match="and its copy"):
        main(options)
    assert hashed and {path.stem for path in hashed} <= {"dev", "news"}


def test_a_test_set_of_the_valid_sentences_in_another_order_is_no_copy(tmp_path):
    """The same size and the same sentences, other bytes: sentences a test set shares with the
    other splits are the corpus's to answer for, not a slip of the command line."""
    dev = sentence_pairs(3, offset=12)
    corpus = write_corpus(
        tmp_path / "corpus",
        {"train": sentence_pairs(12), "dev": dev, "news": dev[::-1]},
        LANGUAGES,
    )
    assert (corpus / "news.en").stat().st_size == (corpus / "dev.en").stat().st_size
    options = arguments(corpus, tmp_path / "out", "--bpe", 10, "--valid", corpus / "dev")
    main(options + ["--test", str(corpus / "news")])
    assert text_lines(tmp_path / "out" / "raw" / "test.en") == [
        english.decode() for english, _ in dev[::-1]
    ]


def test_files_hashed_to_tell_them_from_copies_are_not_hashed_again_by_the_check_stage(
    tmp_path, hashed
):
    """The check keeps their digests for the check stage: each file of the corpus is read once."""
    dev = sentence_pairs(3, offset=12)
    corpus = write_corpus(
        tmp_path / "corpus",
        {"train": sentence_pairs(12), "dev": dev, "news": dev[::-1]},
        LANGUAGES,
    )
    options = arguments(corpus, tmp_path / "out", "--bpe", 10, "--valid", corpus / "dev")
    main(options + ["--test", str(corpus / "news")])
    inputs = [path for path in hashed if path.parent == corpus]
    assert sorted(inputs) == sorted(corpus.iterdir())
