"""bahdanau-prepare-data corpus: a user's own parallel text, any Moses language pair; and what
every corpus gets, progress on stderr and a rerun that resumes after the last finished stage."""

import errno
import os
import re
import shutil
from pathlib import Path

import pytest
from fairseq.data import Dictionary

from bahdanau_tools.data import pipeline
from bahdanau_tools.data.command_line import main
from bahdanau_tools.errors import DataError

from .copying import overwrite_keeping_size_and_times
from .corpora import sentence_pairs, write_corpus
from .scripts import binarized_sentences, read_summary, run_command

LANGUAGES = (
    "de",
    "en",
)  # the corpora's English and French stand in: file names and Moses rules are all that count
STAGES = (
    "check",
    "tokenize-train",
    "tokenize-valid",
    "tokenize-test",
    "tokenize-test1",
    "binarize",
    "summary",
)
MERGES_ASKED = 100_000  # far more than the corpus's few words have pairs of symbols for


def corpus_arguments(corpus, out, *more, vocabulary=("--shortlist", "20")):
    return [
        "corpus",
        "--train",
        str(corpus / "train"),
        "--valid",
        str(corpus / "dev"),
        "--test",
        str(corpus / "news"),
        str(corpus / "web-gz"),
        "--source-lang",
        LANGUAGES[0],
        "--target-lang",
        LANGUAGES[1],
        "--out",
        str(out),
        *vocabulary,
        "--workers",
        "1",
        *more,
    ]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(
        tmp_path_factory.mktemp("own"),
        {
            "train": sentence_pairs(40),
            "dev": sentence_pairs(6, offset=40),
            "news": sentence_pairs(5, offset=50),
            "web-gz": sentence_pairs(4, offset=60),
        },
        LANGUAGES,
    )


@pytest.fixture(scope="module")
def prepared(corpus, tmp_path_factory):
    """The command run as a user runs it: (its output folder, what it printed on stderr)."""
    out = tmp_path_factory.mktemp("prepared")
    completed = run_command("bahdanau-prepare-data", *corpus_arguments(corpus, out))
    assert completed.returncode == 0, completed.stderr[-3000:]
    return out, completed.stderr


@pytest.fixture(scope="module")
def prepared_with_bpe(corpus, tmp_path_factory):
    """The command run with --bpe MERGES_ASKED: its output folder."""
    out = tmp_path_factory.mktemp("prepared-with-bpe")
    main(corpus_arguments(corpus, out, vocabulary=("--bpe", str(MERGES_ASKED))))
    return out


def stage_messages(stderr):
    return re.findall(r"^([\w-]+): finished by an earlier run, kept$", stderr, flags=re.M)


def test_every_split_of_an_own_corpus_is_binarized_under_fairseqs_names(prepared, corpus):
    out, _ = prepared
    summary = read_summary(out)
    assert {name: split["origin"] for name, split in summary["splits"].items()} == {
        "train": str(corpus / "train"),
        "valid": str(corpus / "dev"),
        "test": str(corpus / "news"),
        "test1": str(corpus / "web-gz"),
    }
    for split, pairs in (("train", 40), ("valid", 6), ("test", 5), ("test1", 4)):
        assert [binarized_sentences(out, split, language, "de-en") for language in LANGUAGES] == [
            pairs,
            pairs,
        ]


def test_long_stages_show_their_progress_on_stderr(prepared):
    _, stderr = prepared
    assert re.search(r"tokenizing train: 100%.*40/40 \[", stderr)


def test_a_rerun_keeps_every_stage_that_finished(prepared, corpus, capsys):
    out, _ = prepared
    tokenized = (out / "tok" / "train.de").stat().st_mtime_ns
    main(corpus_arguments(corpus, out))
    assert stage_messages(capsys.readouterr().err) == list(STAGES)
    assert (out / "tok" / "train.de").stat().st_mtime_ns == tokenized


def test_a_rerun_with_the_output_folder_and_the_corpus_spelled_otherwise_keeps_every_stage(
    corpus, tmp_path, capsys, monkeypatch
):
    """Relative paths from another folder for the absolute ones of the first run: the same files,
    whose stages are not redone (WMT'14's take hours) and are not said to have changed. The
    summary, which names each split's origin as given, is made again."""
    out = tmp_path / "out"
    main(corpus_arguments(corpus, out))
    monkeypatch.chdir(out)
    main(corpus_arguments(Path(os.path.relpath(corpus)), Path("..") / "out"))
    stderr = capsys.readouterr().err
    assert stage_messages(stderr) == [stage for stage in STAGES if stage != "summary"]
    assert "changed since the earlier run" not in stderr


def test_a_file_put_in_data_bin_is_kept_and_keeps_every_stage(corpus, tmp_path, capsys):
    """Only the files the binarize stage writes are its outputs: notes beside them change
    nothing."""
    main(corpus_arguments(corpus, tmp_path))
    (tmp_path / "data-bin" / "notes.txt").write_text("mine\n", encoding="utf-8")
    capsys.readouterr()
    main(corpus_arguments(corpus, tmp_path))
    assert stage_messages(capsys.readouterr().err) == list(STAGES)
    assert (tmp_path / "data-bin" / "notes.txt").read_text(encoding="utf-8") == "mine\n"


def test_binarizing_anew_over_a_file_put_in_data_bin_is_refused_and_keeps_it(corpus, tmp_path):
    """The stage replaces the whole folder, and the file with it."""
    main(corpus_arguments(corpus, tmp_path))
    notes = tmp_path / "data-bin" / "notes.txt"
    notes.write_text("mine\n", encoding="utf-8")
    with pytest.raises(DataError) as refused:
        main(corpus_arguments(corpus, tmp_path, vocabulary=("--shortlist", "30")))
    assert str(refused.value) == (
        f"{notes} is in {notes.parent}, which this command replaces as it binarizes anew: move it "
        "out of data-bin, then run the same command again"
    )
    assert notes.read_text(encoding="utf-8") == "mine\n"


def test_a_rerun_after_a_crash_resumes_after_the_last_finished_stage(
    corpus, tmp_path, monkeypatch, capsys
):
    def crash(*arguments):
        raise KeyboardInterrupt

    with monkeypatch.context() as crashing:
        crashing.setattr(pipeline, "binarize", crash)
        with pytest.raises(KeyboardInterrupt):
            main(corpus_arguments(corpus, tmp_path))
    capsys.readouterr()
    main(corpus_arguments(corpus, tmp_path))
    assert stage_messages(capsys.readouterr().err) == list(STAGES[:5])
    assert read_summary(tmp_path)["splits"]["test1"]["cleaning"]["kept"] == 4


def test_a_stage_that_crashed_midway_leaves_no_output_and_runs_again_whole(
    corpus, tmp_path, monkeypatch, capsys
):
    def crash(*arguments, **options):
        raise KeyboardInterrupt

    with monkeypatch.context() as crashing:
        crashing.setattr(pipeline, "clean_chunk", crash)  # with the outputs open
        with pytest.raises(KeyboardInterrupt):
            main(corpus_arguments(corpus, tmp_path))
    assert not (tmp_path / "tok" / "train.de").exists()
    capsys.readouterr()
    main(corpus_arguments(corpus, tmp_path))
    assert stage_messages(capsys.readouterr().err) == ["check"]
    assert len((tmp_path / "tok" / "train.de").read_text(encoding="utf-8").splitlines()) == 40


def test_a_rerun_with_another_option_redoes_the_stages_it_changes(
    prepared, corpus, tmp_path, capsys
):
    main(corpus_arguments(corpus, tmp_path))
    capsys.readouterr()
    main(corpus_arguments(corpus, tmp_path, "--max-len", "7"))
    assert stage_messages(capsys.readouterr().err) == [
        "check",
        "tokenize-valid",
        "tokenize-test",
        "tokenize-test1",
    ]
    assert read_summary(tmp_path)["splits"]["train"]["cleaning"]["too_long"] == 12


def test_a_corpus_file_overwritten_with_the_same_size_and_times_is_prepared_again(corpus, tmp_path):
    """`cp -p` of another file of the same size: its modification time is the old file's, and the
    data-bin stayed that of the old file."""
    files = shutil.copytree(corpus, tmp_path / "corpus")
    out = tmp_path / "out"
    main(corpus_arguments(files, out))
    train = files / f"train.{LANGUAGES[0]}"
    overwrite_keeping_size_and_times(train, train.read_bytes().replace(b"The ", b"Our "))
    main(corpus_arguments(files, out))
    assert "Our" in Dictionary.load(str(out / "data-bin" / f"dict.{LANGUAGES[0]}.txt"))


def test_a_rerun_on_the_same_files_in_another_folder_names_that_folder_in_the_summary(
    corpus, tmp_path
):
    """Its files have the same content (the same digests) as before, so every stage is kept but
    the summary, whose key holds the origins too."""
    main(corpus_arguments(corpus, tmp_path))
    moved = shutil.copytree(corpus, tmp_path / "moved")
    main(corpus_arguments(moved, tmp_path))
    assert read_summary(tmp_path)["splits"]["train"]["origin"] == str(moved / "train")


def test_sides_with_different_line_counts_are_a_one_line_error_naming_both_files(corpus, tmp_path):
    broken = write_corpus(
        tmp_path / "broken",
        {
            "train": sentence_pairs(40),
            "dev": sentence_pairs(6),
            "news": sentence_pairs(5),
            "web-gz": sentence_pairs(4),
        },
        LANGUAGES,
    )
    (broken / "dev.en").write_text("one line\n", encoding="utf-8")
    completed = run_command("bahdanau-prepare-data", *corpus_arguments(broken, tmp_path / "out"))
    [line] = [line for line in completed.stderr.splitlines() if not line.startswith("INFO:")]
    assert (
        line
        == f"error: {broken / 'dev.de'} has 6 lines but {broken / 'dev.en'} has 1; line N of one "
        "side must translate line N of the other"
    )


def test_a_language_the_moses_tokenizer_does_not_know_is_a_one_line_error_naming_the_option(
    corpus, tmp_path
):
    arguments = corpus_arguments(corpus, tmp_path)
    arguments[arguments.index("--target-lang") + 1] = "eng"
    completed = run_command("bahdanau-prepare-data", *arguments)
    [line] = [line for line in completed.stderr.splitlines() if not line.startswith("INFO:")]
    assert line.startswith("error: --target-lang eng: the Moses tokenizer has no rules for 'eng'")
    assert "de, el, en, es" in line


def test_a_missing_side_is_an_error_naming_the_file_it_looked_for(corpus, tmp_path):
    arguments = corpus_arguments(corpus, tmp_path)
    arguments[arguments.index("--valid") + 1] = str(corpus / "nowhere")
    missing = corpus / "nowhere.de"
    with pytest.raises(DataError, match=re.escape(f"missing file {missing} (or {missing}.gz)")):
        main(arguments)


def test_a_side_there_both_plain_and_gzipped_is_an_error_naming_both_files(tmp_path):
    """The plain file was read without a word, the .gz beside it another version of the text."""
    corpus = write_corpus(
        tmp_path / "corpus",
        {
            "train": sentence_pairs(40),
            "dev": sentence_pairs(6, offset=40),
            "dev-gz": sentence_pairs(9, offset=40),
            "news": sentence_pairs(5, offset=50),
            "web-gz": sentence_pairs(4, offset=60),
        },
        LANGUAGES,
    )
    (corpus / "dev-gz.de.gz").rename(corpus / "dev.de.gz")
    arguments = corpus_arguments(corpus, tmp_path / "out")
    plain = corpus / "dev.de"
    with pytest.raises(DataError) as raised:
        main(arguments)
    assert str(raised.value) == (
        f"{plain} and {plain}.gz are both there, and either would be read as the de side of "
        f"{corpus / 'dev'}: move the one that is not the corpus out of its folder"
    )
    assert not (tmp_path / "out" / "tok").exists()  # stopped before any work


def test_the_summary_gives_the_merges_learned_where_subword_nmt_stops_short_of_those_asked(
    prepared_with_bpe,
):
    """It said `joint BPE, 100000 merges` where subword-nmt had learned a few hundred."""
    learned = len((prepared_with_bpe / "bpe.codes").read_text(encoding="utf-8").splitlines()) - 1
    assert learned < MERGES_ASKED
    summary = read_summary(prepared_with_bpe)
    assert summary["vocabulary"] == {"mode": "bpe", "size": MERGES_ASKED, "merges_learned": learned}
    assert f"joint BPE, {learned} merges (of the {MERGES_ASKED} asked: " in (
        prepared_with_bpe / "summary.txt"
    ).read_text(encoding="utf-8")


def test_a_rerun_with_shortlist_over_a_bpe_run_removes_its_bpe_codes_and_text(
    prepared_with_bpe, corpus, tmp_path
):
    """bahdanau-evaluate would find the codes beside data-bin and segment the input of a
    word-level model with them."""
    out = shutil.copytree(prepared_with_bpe, tmp_path / "out")
    main(corpus_arguments(corpus, out))
    assert not (out / "bpe.codes").exists()
    assert not (out / "bpe").exists()


def text_files_in(out):
    """folder -> the names of the files in it, for the folders of OUT that hold text (that are
    there)."""
    return {
        folder: sorted(path.name for path in (out / folder).iterdir())
        for folder in ("raw", "tok", "bpe")
        if (out / folder).is_dir()
    }


def test_a_rerun_without_a_test_set_removes_its_text_from_tok_raw_and_bpe(
    prepared_with_bpe, corpus, tmp_path
):
    """data-bin has no test1 any more: OUT/raw/test1.en, say, would be scored as the references
    of a test set that is not there."""
    out = shutil.copytree(prepared_with_bpe, tmp_path / "out")
    arguments = corpus_arguments(corpus, out, vocabulary=("--bpe", str(MERGES_ASKED)))
    arguments.remove(str(corpus / "web-gz"))
    main(arguments)
    splits = ["test", "train", "valid"]
    assert text_files_in(out) == {
        "raw": [f"{split}.{language}" for split in ["test", "valid"] for language in LANGUAGES],
        "tok": [f"{split}.{language}" for split in splits for language in LANGUAGES],
        "bpe": [f"{split}.{language}" for split in splits for language in LANGUAGES],
    }


def test_a_rerun_with_another_target_language_removes_the_text_of_the_one_given_no_more(
    corpus, tmp_path
):
    """OUT/tok/train.en would pass for the training text of a model trained from German into
    French (bahdanau-unk-dictionary --target)."""
    other = shutil.copytree(corpus, tmp_path / "corpus")
    for english in list(other.glob(f"*.{LANGUAGES[1]}*")):
        shutil.copyfile(english, english.with_name(english.name.replace(".en", ".fr")))
    out = tmp_path / "out"
    main(corpus_arguments(other, out))
    arguments = corpus_arguments(other, out)
    arguments[arguments.index("--target-lang") + 1] = "fr"
    main(arguments)
    assert {
        folder: {name.split(".")[1] for name in names}
        for folder, names in text_files_in(out).items()
    } == {
        "raw": {"de", "fr"},
        "tok": {"de", "fr"},
    }


def test_files_put_into_tok_raw_and_bpe_by_hand_are_kept_by_a_rerun_that_removes_stale_text(
    prepared_with_bpe, corpus, tmp_path
):
    """Only the files named as the text stages name theirs are theirs: bpe/ stays, with the file
    in it, where a run in words removes BPE's text."""
    out = shutil.copytree(prepared_with_bpe, tmp_path / "out")
    mine = [out / "tok" / "notes.txt", out / "raw" / "test.txt", out / "bpe" / "mine.codes"]
    for path in mine:
        path.write_text("mine\n", encoding="utf-8")
    arguments = corpus_arguments(corpus, out)
    arguments.remove(str(corpus / "web-gz"))
    main(arguments)
    assert [path.read_text(encoding="utf-8") for path in mine] == ["mine\n"] * 3
    assert text_files_in(out)["bpe"] == ["mine.codes"]


def test_a_stale_text_file_that_cannot_be_removed_is_a_one_line_error_naming_it(
    prepared, corpus, tmp_path, monkeypatch
):
    out = shutil.copytree(prepared[0], tmp_path / "out")
    stale = out / "raw" / f"test1.{LANGUAGES[1]}"
    unlink = Path.unlink

    def refused_for_stale(path, missing_ok=False):
        if path == stale:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        unlink(path, missing_ok)

    monkeypatch.setattr(Path, "unlink", refused_for_stale)
    arguments = corpus_arguments(corpus, out)
    arguments.remove(str(corpus / "web-gz"))
    with pytest.raises(DataError) as refused:
        main(arguments)
    assert str(refused.value) == (
        f"{stale} is text of an earlier run that no longer goes with data-bin, and cannot be "
        "removed (permission denied): remove it, then run the same command again (the stages "
        "that finished are kept)"
    )
