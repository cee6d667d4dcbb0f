"""The pipeline for any corpus: check, tokenize and clean, segment with BPE, binarize, summarize.

Each step is a stage (stages.py): a rerun, after a crash or an interruption, keeps the stages that
finished and resumes with the first one that did not.
"""

import functools
import re
from collections import Counter
from contextlib import ExitStack, suppress
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Collection, Dict, List, Pattern, Sequence, TextIO, Tuple

from bahdanau_plugin.output_folder import cause

from ..errors import DataError
from .binarize import Vocabulary, binarize, binarized_files
from .bpe import learn_joint_bpe, learned_merges, segment_file
from .cleaning import CleaningRules, check_dropped_share, check_kept, clean_chunk, moses_languages
from .parallel import chunked, ordered_map
from .progress import progress_bar
from .reading import ParallelFiles, check_aligned, read_pairs
from .stages import Stages, own_and_others, written_whole
from .summary import dictionary_sizes, format_cleaning, format_summary, split_summary, write_summary


@dataclass(frozen=True)
class Split:
    name: str  # fairseq's name for it: train, valid, test, test1, test2, ...
    origin: str  # where its pairs come from, for the summary
    parts: Tuple[ParallelFiles, ...]  # concatenated in this order

    def files(self) -> List[Path]:
        return [path for part in self.parts for path in (part.source, part.target)]


@dataclass(frozen=True)
class Settings:
    languages: Tuple[str, str]  # source, target: Moses language codes, and fairseq's
    vocabulary: Vocabulary
    max_len: int
    max_ratio: float
    workers: int
    encoding: str  # of every file of the corpus, as Python names it
    max_word_len: int  # characters of a word (a Moses token)
    max_dropped: float  # the largest share of a split's pairs that cleaning may drop


def cleaning_rules(split_name: str, settings: Settings) -> CleaningRules:
    """Training pairs are cleaned and kept to max_len words of at most max_word_len characters; dev
    pairs only cleaned, so that validation still sees long sentences; test lines are never
    dropped, since each one is scored."""
    if split_name == "train":
        return CleaningRules(
            drop_empty=True,
            max_ratio=settings.max_ratio,
            max_len=settings.max_len,
            max_word_len=settings.max_word_len,
        )
    if split_name == "valid":
        return CleaningRules(drop_empty=True, max_ratio=settings.max_ratio)
    return CleaningRules()


# In out, in BPE mode: the codes, and the text segmented with them.
BPE_CODES, BPE_DIR = "bpe.codes", "bpe"
# The folders of out that the text stages write their files into (tokenize: raw/ and tok/; BPE),
# and all those that prepare writes its files into.
TEXT_FOLDERS = ("raw", "tok", BPE_DIR)
WRITTEN = TEXT_FOLDERS + ("data-bin",)


def check_inputs_outside_written(files: Sequence[Path], out: Path) -> None:
    """An input in a folder that prepare writes would be overwritten by its own output, and lost:
    refused before any work."""
    written = [(out / folder).resolve() for folder in WRITTEN]
    for path in files:
        resolved = path.resolve()
        inside = next((folder for folder in written if resolved.is_relative_to(folder)), None)
        if inside is not None:
            raise DataError(
                f"{path} is in {inside}, a folder this command writes its own files into, "
                f"which would replace it: keep the inputs outside {', '.join(WRITTEN)} of --out"
            )


def prepare(corpus: str, splits: Sequence[Split], out: Path, settings: Settings) -> dict:
    """Turn the splits' raw text into fairseq binaries under out/data-bin; return the summary."""
    all_files = [path for split in splits for path in split.files()]
    check_inputs_outside_written(all_files, out)
    stages = Stages(out)
    # first, so that misaligned or undecodable input fails now, not after hours of work
    pairs = stages.run(
        "check",
        [[split.name for split in splits], settings.encoding],
        all_files,
        [],
        functools.partial(count_pairs, splits, settings.encoding),
    )
    tok_dir, raw_dir = out / "tok", out / "raw"
    cleaning, tokenized = {}, []
    for split in splits:
        rules = cleaning_rules(split.name, settings)
        outputs = tokenized_files(tok_dir, raw_dir, split.name, settings)
        tokenized += outputs
        cleaning[split.name] = stages.run(
            f"tokenize-{split.name}",
            [settings.languages, asdict(rules), settings.encoding],
            split.files(),
            outputs,
            functools.partial(
                tokenize_and_clean, split, pairs[split.name], tok_dir, raw_dir, settings
            ),
        )
        # after the stage, which keeps its work: a rerun that allows more starts from here
        check_dropped_share(split.name, Counter(cleaning[split.name]), rules, settings.max_dropped)
    text_dir = tok_dir
    if settings.vocabulary.mode == "bpe":
        text_dir = segment_with_joint_bpe(stages, splits, tok_dir, out, settings)
    names = [split.name for split in splits]
    texts = [path for name in names for path in text_files(text_dir, name, settings)]
    data_bin = out / "data-bin"
    binarized = binarized_files(data_bin, names, settings.languages)
    stages.run(
        "binarize",
        [settings.languages, asdict(settings.vocabulary), names],
        texts,
        binarized,
        functools.partial(
            binarize,
            text_dir,
            names,
            data_bin,
            settings.vocabulary,
            settings.languages,
            settings.workers,
        ),
    )
    codes = [out / BPE_CODES] if settings.vocabulary.mode == "bpe" else []
    remove_stale_text(out, tokenized + texts + codes)  # texts: bpe/'s, in BPE mode
    summary = stages.run(
        "summary",
        # what it reports besides the files' counts: its inputs are told apart by content, and
        # the same text can come from files in another folder (its origin) or from other rules
        [
            corpus,
            [split.origin for split in splits],
            cleaning,
            asdict(settings.vocabulary),
            settings.max_len,
            settings.max_ratio,
        ],
        texts + binarized,
        summary_files(out),
        functools.partial(
            summarize_and_write, corpus, splits, cleaning, text_dir, data_bin, settings, out
        ),
    )
    print(format_summary(summary), flush=True)
    return summary


def count_pairs(splits: Sequence[Split], encoding: str) -> Dict[str, int]:
    """Pairs per split, after checking that every line decodes, that both sides of every part have
    as many sentences and that no split is empty."""
    pairs = {
        split.name: sum(check_aligned(files, encoding) for files in split.parts) for split in splits
    }
    for split in splits:
        if pairs[split.name] == 0:
            raise DataError(
                f"the {split.name} split has no sentence pair: {_and_list(split.files())} are "
                "empty; give files that hold one sentence per line"
            )
    return pairs


def _and_list(items: Sequence[object]) -> str:
    *others, last = map(str, items)
    return f"{', '.join(others)} and {last}" if others else last


def text_files(directory: Path, split_name: str, settings: Settings) -> List[Path]:
    return [directory / f"{split_name}.{language}" for language in settings.languages]


def reference_files(raw_dir: Path, split_name: str, settings: Settings) -> List[Path]:
    """The untokenized text of every split but train: the references that detokenized output is
    scored against."""
    return [] if split_name == "train" else text_files(raw_dir, split_name, settings)


def tokenized_files(
    tok_dir: Path, raw_dir: Path, split_name: str, settings: Settings
) -> List[Path]:
    """What the tokenize stage of a split writes: its pairs tokenized, source then target, then
    for all but training untokenized."""
    return text_files(tok_dir, split_name, settings) + reference_files(
        raw_dir, split_name, settings
    )


def text_file_name() -> Pattern[str]:
    """The names the text stages give their files (text_files): SPLIT.LANG, of fairseq's split
    names and of the languages the Moses tokenizer has rules for, the only ones a run can have
    (check_moses_language), so that a file of the user's such as test.txt is not taken for one."""
    languages = "|".join(map(re.escape, moses_languages()))
    return re.compile(rf"(train|valid|test\d*)\.({languages})")


def remove_stale_text(out: Path, written: Collection[Path]) -> None:
    """The text files of an earlier run that this run has not written: those of a split or a
    language given no more, and BPE's codes and text where data-bin is in words now. Left beside
    data-bin they would pass for its text: bahdanau-evaluate reads OUT/raw and OUT/tok only for a
    split and languages that data-bin has, but a person or a script reads them by name
    (`sacrebleu OUT/raw/test1.fr`, `bahdanau-unk-dictionary --target OUT/tok/train.en`,
    `--bpe-codes OUT/bpe.codes`). Removed once data-bin is binarized anew, not before: until then
    they go with the binaries there. Only the stages' own files go, told apart by their names as
    the binarize stage tells its own (own_and_others): a file put there under another name stays.
    """
    current = set(written)
    name = text_file_name()
    stale = [
        path
        for folder in TEXT_FOLDERS
        for path in own_and_others(out / folder, name)[0]
        if path not in current
    ]
    if out / BPE_CODES not in current and (out / BPE_CODES).is_file():
        stale.append(out / BPE_CODES)
    for path in stale:
        try:
            path.unlink()
        except OSError as error:
            raise DataError(
                f"{path} is text of an earlier run that no longer goes with data-bin, and cannot "
                f"be removed ({cause(error)}): remove it, then run the same command again (the "
                "stages that finished are kept)"
            ) from None
    with suppress(OSError):  # still holding this run's text, or a file of the user's
        (out / BPE_DIR).rmdir()


def summary_files(out: Path) -> List[Path]:
    """summary.json, then summary.txt."""
    return [out / "summary.json", out / "summary.txt"]


def summarize_and_write(
    corpus: str,
    splits: Sequence[Split],
    cleaning: Dict[str, Counter],
    text_dir: Path,
    data_bin: Path,
    settings: Settings,
    out: Path,
) -> dict:
    summary = summarize(corpus, splits, cleaning, text_dir, data_bin, settings, out / BPE_CODES)
    with written_whole(summary_files(out)) as partial:
        write_summary(summary, *partial)
    return summary


def summarize(
    corpus: str,
    splits: Sequence[Split],
    cleaning: Dict[str, Counter],
    text_dir: Path,
    data_bin: Path,
    settings: Settings,
    codes: Path,
) -> dict:
    return {
        "corpus": corpus,
        "languages": list(settings.languages),
        "vocabulary": vocabulary_summary(settings.vocabulary, codes),
        "max_len": settings.max_len,
        "max_ratio": settings.max_ratio,
        "dictionary_size": dictionary_sizes(data_bin, settings.languages),
        "splits": {
            split.name: split_summary(
                split.origin,
                Counter(cleaning[split.name]),
                text_dir / split.name,
                data_bin,
                settings.languages,
                settings.workers,
            )
            for split in splits
        },
    }


def vocabulary_summary(vocabulary: Vocabulary, codes: Path) -> dict:
    """The vocabulary's mode and size, and in BPE mode the merges learned: fewer than --bpe asked
    for where subword-nmt ran out of pairs of symbols that occur twice."""
    summary = asdict(vocabulary)
    if vocabulary.mode == "bpe":
        summary["merges_learned"] = learned_merges(codes)
    return summary


def tokenize_and_clean(
    split: Split, pairs: int, tok_dir: Path, raw_dir: Path, settings: Settings
) -> Counter:
    """Write the kept pairs, tokenized, to tok_dir and, for all but training, untokenized to
    raw_dir; return what each cleaning step counted."""
    rules = cleaning_rules(split.name, settings)
    clean = functools.partial(
        clean_chunk, languages=settings.languages, rules=rules, encoding=settings.encoding
    )
    counts = Counter()
    outputs = tokenized_files(tok_dir, raw_dir, split.name, settings)
    for directory in (tok_dir, raw_dir):
        directory.mkdir(parents=True, exist_ok=True)
    with written_whole(outputs) as partial, ExitStack() as files, progress_bar(
        f"tokenizing {split.name}", pairs, " pairs"
    ) as progress:
        lines = [files.enter_context(_open_text(path)) for path in partial]
        for kept, chunk_counts in ordered_map(
            clean, chunked(read_pairs(split.parts)), settings.workers
        ):
            counts += chunk_counts
            for pair in kept:  # tokenized source, target, then untokenized source, target
                for out, line in zip(lines, pair):
                    out.write(line + "\n")
            progress.update(chunk_counts["read"])
        check_kept(split.name, counts, rules)  # before the outputs get their names
    print(format_cleaning(split.name, counts), flush=True)
    return counts


def segment_with_joint_bpe(
    stages: Stages, splits: Sequence[Split], tok_dir: Path, out: Path, settings: Settings
) -> Path:
    """Learn joint BPE codes on the tokenized training text (out/BPE_CODES); segment every split
    into out/BPE_DIR."""
    codes = out / BPE_CODES
    training_text = text_files(tok_dir, "train", settings)
    stages.run(
        "bpe-codes",
        settings.vocabulary.size,
        training_text,
        [codes],
        functools.partial(
            _learn_codes, training_text, codes, settings.vocabulary.size, settings.workers
        ),
    )
    bpe_dir = out / BPE_DIR
    bpe_dir.mkdir(exist_ok=True)
    for split in splits:
        tokenized, segmented = (
            text_files(tok_dir, split.name, settings),
            text_files(bpe_dir, split.name, settings),
        )
        stages.run(
            f"bpe-{split.name}",
            None,
            tokenized + [codes],
            segmented,
            functools.partial(_segment_files, tokenized, segmented, codes, settings.workers),
        )
    return bpe_dir


def _learn_codes(training_text: Sequence[Path], codes: Path, merges: int, workers: int) -> None:
    with written_whole([codes]) as [partial]:
        learn_joint_bpe(training_text, partial, merges, workers)


def _segment_files(
    sources: Sequence[Path], destinations: Sequence[Path], codes: Path, workers: int
) -> None:
    with written_whole(destinations) as partial:
        for source, destination in zip(sources, partial):
            segment_file(source, destination, codes, workers)


def _open_text(path: Path) -> TextIO:
    return path.open("w", encoding="utf-8", newline="\n")
