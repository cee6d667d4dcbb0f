"""The demo corpus (scripts/make_demo_corpus.py) binarized, and its test set with unknown words."""

import shutil
import subprocess
import sys
from pathlib import Path

from bahdanau_plugin.unknown_words import source_text_path

from .paths import REPO
from .tools import run

TEST_SENTENCES = 13  # not a multiple of fairseq's --required-batch-size-multiple (8)
# test sentence -> a word the demo dictionaries lack, added to its source and to its reference
UNKNOWN_WORDS = {1: ("zyzzyva", ""), 4: ("", "xylophonie"), 7: ("zyzzyva", "xylophonie")}
SHORTLIST = 20  # words of each language in prepare_demo_with_shortlist's dictionaries


def preprocess(*options) -> None:
    """fairseq-preprocess from English to French."""
    run("fairseq-preprocess", "--source-lang", "en", "--target-lang", "fr", *options)


def binarize_test_split(prefix: Path, data_bin: Path, destination: Path) -> Path:
    """PREFIX.en and PREFIX.fr as the test split of destination, binarized with data_bin's
    dictionaries, the source text beside the binaries as bahdanau-prepare-data writes it."""
    preprocess(
        "--testpref",
        prefix,
        "--srcdict",
        data_bin / "dict.en.txt",
        "--tgtdict",
        data_bin / "dict.fr.txt",
        "--destdir",
        destination,
    )
    shutil.copyfile(f"{prefix}.en", source_text_path(destination, "test", "en", "fr"))
    return destination


def text_data_bin(data_bin: Path, destination: Path) -> Path:
    """data_bin's test split as fairseq-preprocess --dataset-impl raw leaves it in destination:
    each side's text (test.en-fr.en, test.en-fr.fr) beside the dictionaries."""
    for language in ("en", "fr"):
        shutil.copyfile(data_bin / f"dict.{language}.txt", destination / f"dict.{language}.txt")
        shutil.copyfile(
            data_bin.parent / "raw" / f"test.{language}", destination / f"test.en-fr.{language}"
        )
    return destination


def make_demo_data_bin(root: Path, train_pairs: int = 2000) -> Path:
    subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "make_demo_corpus.py"),
            "--out",
            str(root / "raw"),
            "--train",
            str(train_pairs),
            "--valid",
            "40",
            "--test",
            str(TEST_SENTENCES),
        ],
        check=True,
        capture_output=True,
    )
    preprocess(
        "--trainpref",
        root / "raw/train",
        "--validpref",
        root / "raw/valid",
        "--testpref",
        root / "raw/test",
        "--destdir",
        root / "data-bin",
        "--joined-dictionary",
    )
    return root / "data-bin"


def prepare_demo_with_bpe(raw: Path, out: Path, merges: int = 30) -> Path:
    """The demo corpus in raw/ prepared as users prepare theirs, by bahdanau-prepare-data with joint
    BPE: so few merges that most words are split into pieces. Its output folder: data-bin/,
    bpe.codes, tok/ (the references as tokenized), raw/."""
    run(
        "bahdanau-prepare-data",
        "corpus",
        *("--train", raw / "train", "--valid", raw / "valid", "--test", raw / "test"),
        *("--source-lang", "en", "--target-lang", "fr", "--out", out),
        *("--bpe", merges, "--workers", 1),
    )
    return out


def prepare_demo_with_shortlist(raw: Path, out: Path, size: int = SHORTLIST) -> Path:
    """The demo corpus in raw/ prepared by bahdanau-prepare-data with the paper's vocabulary: the
    size most frequent words of each language, a dictionary for each (the demo data-bin has one
    for both). Its output folder: data-bin/, tok/ (the text as binarized), raw/."""
    run(
        "bahdanau-prepare-data",
        "corpus",
        *("--train", raw / "train", "--valid", raw / "valid", "--test", raw / "test"),
        *("--source-lang", "en", "--target-lang", "fr", "--out", out),
        *("--shortlist", size, "--workers", 1),
    )
    return out


def with_unknown_words(lines, side):
    return [
        f"{line} {UNKNOWN_WORDS[index][side]}".rstrip() if index in UNKNOWN_WORDS else line
        for index, line in enumerate(lines)
    ]


def make_test_set_with_unknown_words(data_bin: Path, root: Path) -> Path:
    """The demo test set with UNKNOWN_WORDS, laid out as bahdanau-prepare-data does: raw/ and tok/
    (the references, untokenized and tokenized: the demo text is both) beside data-bin/, binarized
    with the dictionaries the models were trained with, and the source text beside the binaries."""
    for folder in ("raw", "tok"):
        (root / folder).mkdir()
        for side, language in enumerate(("en", "fr")):
            lines = (
                (data_bin.parent / "raw" / f"test.{language}")
                .read_text(encoding="utf-8")
                .splitlines()
            )
            (root / folder / f"test.{language}").write_text(
                "\n".join(with_unknown_words(lines, side)) + "\n", encoding="utf-8"
            )
    binarize_test_split(root / "tok/test", data_bin, root / "data-bin")
    return root
