"""The pipeline for any corpus: check, tokenize and clean, segment with BPE, binarize, summarize."""

import functools
from collections import Counter
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Sequence, TextIO, Tuple

from .binarize import Vocabulary, binarize
from .bpe import learn_joint_bpe, segment_file
from .cleaning import CleaningRules, clean_chunk
from .parallel import chunked, ordered_map
from .reading import ParallelFiles, check_aligned, read_pairs
from .summary import dictionary_sizes, format_cleaning, split_summary, write_summary

LANGUAGES = ("en", "fr")
PROGRESS_CHUNKS = 250  # a progress line every 250 chunks: half a million pairs


@dataclass(frozen=True)
class Split:
    name: str  # fairseq's name for it: train, valid, test, test1, test2, ...
    origin: str  # where its pairs come from, for the summary
    parts: Tuple[ParallelFiles, ...]  # concatenated in this order


@dataclass(frozen=True)
class Settings:
    vocabulary: Vocabulary
    max_len: int
    max_ratio: float
    workers: int


def cleaning_rules(split_name: str, settings: Settings) -> CleaningRules:
    """Training pairs are cleaned and kept to max_len words; dev pairs only cleaned, so that
    validation still sees long sentences; test lines are never dropped, since each one is scored."""
    if split_name == "train":
        return CleaningRules(drop_empty=True, max_ratio=settings.max_ratio, max_len=settings.max_len)
    if split_name == "valid":
        return CleaningRules(drop_empty=True, max_ratio=settings.max_ratio)
    return CleaningRules()


def prepare(corpus: str, splits: Sequence[Split], out: Path, settings: Settings) -> dict:
    """Turn the splits' raw text into fairseq binaries under out/data-bin; return the summary."""
    for split in splits:
        for files in split.parts:
            check_aligned(files)  # so that misaligned input fails now, not after hours of work
    tok_dir, raw_dir = out / "tok", out / "raw"
    for directory in (tok_dir, raw_dir):
        directory.mkdir(parents=True, exist_ok=True)
    cleaning = {split.name: tokenize_and_clean(split, tok_dir, raw_dir, settings) for split in splits}
    text_dir = tok_dir
    if settings.vocabulary.mode == "bpe":
        text_dir = segment_with_joint_bpe(splits, tok_dir, out, settings)
    data_bin = out / "data-bin"
    test_names = [split.name for split in splits if split.name.startswith("test")]
    binarize(text_dir, test_names, data_bin, settings.vocabulary, LANGUAGES, settings.workers)
    summary = summarize(corpus, splits, cleaning, text_dir, data_bin, settings)
    print(write_summary(summary, out), flush=True)
    return summary


def summarize(
    corpus: str, splits: Sequence[Split], cleaning: Dict[str, Counter], text_dir: Path, data_bin: Path,
    settings: Settings,
) -> dict:
    return {
        "corpus": corpus,
        "languages": list(LANGUAGES),
        "vocabulary": asdict(settings.vocabulary),
        "max_len": settings.max_len,
        "max_ratio": settings.max_ratio,
        "dictionary_size": dictionary_sizes(data_bin, LANGUAGES),
        "splits": {
            split.name: split_summary(
                split.origin, cleaning[split.name], text_dir / split.name, data_bin, LANGUAGES, settings.workers
            )
            for split in splits
        },
    }


def tokenize_and_clean(split: Split, tok_dir: Path, raw_dir: Path, settings: Settings) -> Counter:
    """Write the kept pairs, tokenized, to tok_dir and, for all but training, untokenized to
    raw_dir: the references that detokenized output is scored against."""
    clean = functools.partial(clean_chunk, languages=LANGUAGES, rules=cleaning_rules(split.name, settings))
    counts = Counter()
    with ExitStack() as files:
        tokenized = _open_outputs(files, tok_dir, split.name)
        untokenized = _open_outputs(files, raw_dir, split.name) if split.name != "train" else []
        for index, (kept, chunk_counts) in enumerate(
            ordered_map(clean, chunked(read_pairs(split.parts)), settings.workers), start=1
        ):
            counts += chunk_counts
            for pair in kept:  # tokenized source, target, then untokenized source, target
                for out, line in zip(tokenized + untokenized, pair):
                    out.write(line + "\n")
            if index % PROGRESS_CHUNKS == 0:
                print(f"{split.name}: {counts['read']:,} pairs read", flush=True)
    print(format_cleaning(split.name, counts), flush=True)
    return counts


def segment_with_joint_bpe(splits: Sequence[Split], tok_dir: Path, out: Path, settings: Settings) -> Path:
    """Learn joint BPE codes on the tokenized training text (out/bpe.codes); segment every split into out/bpe."""
    codes = out / "bpe.codes"
    learn_joint_bpe([tok_dir / f"train.{language}" for language in LANGUAGES], codes,
                    settings.vocabulary.size, settings.workers)
    bpe_dir = out / "bpe"
    bpe_dir.mkdir(exist_ok=True)
    for split in splits:
        for language in LANGUAGES:
            name = f"{split.name}.{language}"
            segment_file(tok_dir / name, bpe_dir / name, codes, settings.workers)
    return bpe_dir


def _open_outputs(files: ExitStack, directory: Path, name: str) -> List[TextIO]:
    return [
        files.enter_context((directory / f"{name}.{language}").open("w", encoding="utf-8", newline="\n"))
        for language in LANGUAGES
    ]
