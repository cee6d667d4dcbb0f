"""bahdanau-prepare-data: parallel text to fairseq binaries, for your own corpus or a preset.

  bahdanau-prepare-data corpus --train data/train --valid data/dev --test data/test \\
      --source-lang de --target-lang en --out prepared --bpe 10000
  bahdanau-prepare-data multi30k --from-dir ../shared/data/multi30k --out prepared --shortlist 30000
  bahdanau-prepare-data wmt14 --out prepared --shortlist 30000 --max-len 50

Every corpus goes through the same stages (docs/data.md): check that both sides have as many lines,
tokenize with fairseq's Moses tokenizer and clean, learn and apply joint BPE (--bpe), binarize with
fairseq-preprocess, summarize. A rerun with the same --out resumes after the last stage that
finished (after Ctrl+C or SIGTERM too); stages whose options or inputs changed run again. One run at
a time writes into an --out: a second one is refused while the first works.
"""

import argparse
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ContextManager, List, Optional, Sequence, Tuple

from bahdanau_plugin.errors import print_errors_as_one_line
from bahdanau_plugin.options import path_argument, positive_int
from bahdanau_plugin.output_folder import output_folder, write_failures_explained
from bahdanau_plugin.folder_hold import HoldWords, holding

from ..errors import DataError
from .binarize import Vocabulary
from .cleaning import check_moses_language
from .corpus import corpus_splits
from .multi30k import LANGUAGES as MULTI30K_LANGUAGES
from .multi30k import REPOSITORY_URL, download_multi30k, multi30k_splits
from .pipeline import Settings, Split, prepare
from .stages import digest_cache
from .wmt14 import LANGUAGES as WMT14_LANGUAGES
from .wmt14 import extract_release, fetch_archives, wmt14_splits

Corpus = Tuple[str, Tuple[str, str], List[Split]]  # name, (source, target language), splits

INTERRUPTED = "interrupted: run the same command again to resume; the stages that finished are kept"
KEPT = "; a rerun keeps the stages that finished"
EXIT_INTERRUPTED = 128 + signal.SIGINT  # what shells report for a command that Ctrl+C stopped
EXIT_TERMINATED = 128 + signal.SIGTERM  # and for one that SIGTERM stopped
# In --out while a run works there, naming its process (bahdanau_plugin/folder_hold.py).
HOLD = ".prepare-data-run.json"


class Terminated(KeyboardInterrupt):
    """SIGTERM (kill, a batch system's time limit), which stops a run as Ctrl+C does: the stage it
    stops removes its half-written files and ends fairseq-preprocess, which runs in a session of
    its own that no signal to this process reaches (binarize.py)."""


def stop_as_on_ctrl_c(signal_number: int, frame) -> None:
    raise Terminated


def positive_float(text: str) -> float:
    """Above 0, and a number: float() takes 'nan', which compares false with everything, so that
    --max-ratio nan dropped no pair for its ratio (the summary: 'length ratio at most nan')."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def length_ratio(text: str) -> float:
    """At least 1, a number: a pair's longer side is never shorter than its other side, so that
    under 1 (0.5, read as "the shorter side at least half the longer") every pair with words was
    dropped, said only once the whole training text was tokenized (some 40 minutes of WMT'14)."""
    value = positive_float(text)
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"{text} is under 1, which drops every pair: it is how many times the words of the "
            "shorter side the longer may have (Moses: 9; 1 keeps sides of equal length alone)"
        )
    return value


def share(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a share between 0 and 1")
    return value


def line_encoding(text: str) -> str:
    """A text encoding that Python knows, whose lines end with the byte \\n as the reader splits
    them (UTF-16 and UTF-32 do not)."""
    try:
        line = "a\n".encode(text, errors="replace")
    except LookupError:  # no such codec, or one that is not for text (base64, say)
        raise argparse.ArgumentTypeError(
            f"{text} is not a text encoding Python knows (latin-1, cp1252, utf-8, ... : "
            "https://docs.python.org/3/library/codecs.html#standard-encodings)"
        ) from None
    if line != b"a\n":
        raise argparse.ArgumentTypeError(
            f"{text} does not write ASCII letters and line ends as single bytes; convert the "
            f"files to UTF-8 first (iconv -f {text} -t utf-8)"
        )
    return text


def own_corpus(arguments: argparse.Namespace) -> Corpus:
    check_moses_language(arguments.source_lang, "--source-lang")
    check_moses_language(arguments.target_lang, "--target-lang")
    if arguments.source_lang == arguments.target_lang:
        raise DataError(
            f"--source-lang and --target-lang are both {arguments.source_lang}: give the two "
            "languages of the corpus, whose files TRAIN.SRC and TRAIN.TGT translate each other"
        )
    languages = (arguments.source_lang, arguments.target_lang)
    return (
        f"corpus {arguments.train.name}",
        languages,
        corpus_splits(
            arguments.train,
            arguments.valid,
            arguments.test,
            languages,
            digest_cache(arguments.out),
        ),
    )


def multi30k_corpus(arguments: argparse.Namespace) -> Corpus:
    source = arguments.from_dir or download_multi30k(arguments.out / "download")
    return "Multi30k task 1", MULTI30K_LANGUAGES, multi30k_splits(source)


def wmt14_corpus(arguments: argparse.Namespace) -> Corpus:
    archives = fetch_archives(arguments.from_dir, arguments.out / "download")
    return (
        "WMT'14",
        WMT14_LANGUAGES,
        wmt14_splits(extract_release(archives, arguments.out, arguments.from_dir is not None)),
    )


@dataclass(frozen=True)
class Preset:
    """A published corpus: its subcommand, how to describe it, and how to read (or fetch) it."""

    name: str
    summary: str
    description: str
    from_dir_help: str
    read: Callable[[argparse.Namespace], Corpus]


PRESETS = (
    Preset(
        "multi30k",
        "Multi30k task 1, English-French",
        "Multi30k task 1, English->French: train, valid (val), test (test_2016_flickr), then "
        "test1, test2, ... for every other test_*.en.gz/.fr.gz beside them, in the order of their "
        "names.",
        "folder holding train, val and test_2016_flickr .en.gz/.fr.gz (e.g. "
        f"../shared/data/multi30k); without it they are downloaded from {REPOSITORY_URL} into "
        "OUT/download",
        multi30k_corpus,
    ),
    Preset(
        "wmt14",
        "WMT'14 English-French, as in the paper",
        "WMT'14 English->French as in Bahdanau et al. (2015): Europarl v7, Common Crawl, UN, News "
        "Commentary v9, 10^9 French-English; valid: newstest2012+2013; test: newstest2014 (full).",
        "folder holding the release archives under their published names "
        "(training-parallel-europarl-v7.tgz, ..., dev.tgz, test-full.tgz); without it they are "
        "downloaded into OUT/download, resumably, and checked against their MD5 sums",
        wmt14_corpus,
    ),
)


def common_options() -> argparse.ArgumentParser:
    """The options of every corpus: output, vocabulary, length filter, processes."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(
        "--out",
        type=path_argument,
        required=True,
        help="output folder: tok/, raw/, bpe.codes, bpe/, data-bin/, summary.json, summary.txt, "
        "stages/; a rerun with the same folder resumes",
    )
    vocabulary = parser.add_mutually_exclusive_group(required=True)
    vocabulary.add_argument(
        "--shortlist",
        type=positive_int,
        metavar="N",
        help="the paper's vocabulary: the N most frequent words of each language "
        "(30000 in the paper), every other word becomes <unk>",
    )
    vocabulary.add_argument(
        "--bpe",
        type=positive_int,
        metavar="N",
        help="recommended: joint subword-nmt BPE with N merges, which removes unknown words",
    )
    parser.add_argument(
        "--max-len",
        type=positive_int,
        default=50,
        help="keep training pairs of at most this many words per side, after tokenization "
        "(the paper's two runs: 30 and 50; default: %(default)s); dev and test are never "
        "length-filtered",
    )
    parser.add_argument(
        "--max-ratio",
        type=length_ratio,
        default=9.0,
        help="drop training and dev pairs whose longer side has more than this many times the "
        "words of the shorter (default: %(default)s, as Moses' clean-corpus-n)",
    )
    parser.add_argument(
        "--max-word-len",
        type=positive_int,
        default=100,
        help="drop training pairs with a word (a Moses token) of more than this many characters, "
        "which is no word (a run of letters, a URL, base64): counted as `long word` "
        "(default: %(default)s); dev and test are never dropped for it",
    )
    parser.add_argument(
        "--max-dropped",
        type=share,
        default=0.5,
        metavar="SHARE",
        help="stop when cleaning would drop more than this share of a split's pairs, saying how "
        "many each step dropped; 1 allows any (default: %(default)s)",
    )
    parser.add_argument(
        "--encoding",
        type=line_encoding,
        default="utf-8",
        help="the encoding of every file of the corpus, as Python names it (latin-1, cp1252, ...); "
        "a line that does not decode stops the run, naming the file, the line and the byte "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--workers",
        type=positive_int,
        default=os.cpu_count(),
        help="processes for tokenization, BPE and fairseq-preprocess (default: all cores, "
        "%(default)s)",
    )
    return parser


def pipeline_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bahdanau-prepare-data",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    corpora = parser.add_subparsers(dest="corpus", required=True, metavar="{corpus,multi30k,wmt14}")
    common = common_options()
    own = corpora.add_parser(
        "corpus",
        parents=[common],
        help="your own parallel text",
        description="Your own parallel text: one file per language and split, PREFIX.LANG (or "
        "PREFIX.LANG.gz), line N of one translating line N of the other.",
    )
    own.add_argument(
        "--train", type=path_argument, required=True, metavar="PREFIX", help="training text"
    )
    own.add_argument(
        "--valid",
        type=path_argument,
        metavar="PREFIX",
        help="development text (fairseq's valid split)",
    )
    own.add_argument(
        "--test",
        type=path_argument,
        nargs="+",
        action="extend",  # --test a --test b is both, as --test a b: stored, b alone was kept
        default=[],
        metavar="PREFIX",
        help="test sets: they become test, test1, test2, ... in this order (--test A B, or "
        "--test A --test B)",
    )
    own.add_argument(
        "--source-lang",
        required=True,
        help="source language code, for the Moses tokenizer and the file names "
        "(PREFIX.SOURCE_LANG)",
    )
    own.add_argument("--target-lang", required=True, help="target language code, likewise")
    own.set_defaults(read=own_corpus)
    for preset in PRESETS:
        parser_of_preset = corpora.add_parser(
            preset.name, parents=[common], help=preset.summary, description=preset.description
        )
        parser_of_preset.add_argument("--from-dir", type=path_argument, help=preset.from_dir_help)
        parser_of_preset.set_defaults(read=preset.read)
    return parser


def settings_from(arguments: argparse.Namespace, languages: Tuple[str, str]) -> Settings:
    vocabulary = (
        Vocabulary("bpe", arguments.bpe)
        if arguments.bpe
        else Vocabulary("shortlist", arguments.shortlist)
    )
    return Settings(
        languages,
        vocabulary,
        arguments.max_len,
        arguments.max_ratio,
        arguments.workers,
        arguments.encoding,
        arguments.max_word_len,
        arguments.max_dropped,
    )


def out_held(out: Path) -> ContextManager[None]:
    """out held for this run while the block runs: two runs writing one folder would mix their
    outputs (one's BPE codes beside the other's binaries), or fail in fairseq-preprocess."""
    words = HoldWords(
        f"--out {out}", "another bahdanau-prepare-data", "give another --out", DataError
    )
    return holding(str(out), HOLD, words)


def main(argv: Optional[Sequence[str]] = None) -> dict:
    """Prepare the corpus the arguments name; return the summary."""
    arguments = pipeline_parser().parse_args(argv)
    if "," in str(arguments.out.resolve()):  # fairseq-preprocess splits its file prefixes there
        raise DataError(
            f"--out {arguments.out} has a comma in its path ({arguments.out.resolve()}), at which "
            "fairseq-preprocess splits its files' names: give a folder whose path has none"
        )
    with output_folder(arguments.out, "--out"), out_held(arguments.out):
        with write_failures_explained(arguments.out, "--out", KEPT):
            name, languages, splits = arguments.read(arguments)
            return prepare(name, splits, arguments.out, settings_from(arguments, languages))


def cli_main() -> None:
    print_errors_as_one_line()  # bad input ends the command with one line, not a traceback
    signal.signal(signal.SIGTERM, stop_as_on_ctrl_c)
    try:
        main()
    except KeyboardInterrupt as stop:
        # Every stage writes under temporary names and records itself only once it has finished
        # (stages.py), so whatever Ctrl+C stopped is redone by the next run, and nothing else is.
        print(INTERRUPTED, file=sys.stderr)
        sys.exit(EXIT_TERMINATED if isinstance(stop, Terminated) else EXIT_INTERRUPTED)
