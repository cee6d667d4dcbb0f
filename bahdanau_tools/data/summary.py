"""What a run produced: pairs per cleaning step, words, dictionary sizes, share of <unk> tokens."""

import functools
import json
from collections import Counter
from pathlib import Path
from typing import Dict, List, Tuple

from fairseq.data import Dictionary

from .cleaning import STEPS
from .digests import Version, file_version
from .parallel import map_line_chunks

STEP_LABELS = {
    "read": "read",
    "empty": "empty",
    "ratio": "length ratio",
    "too_long": "too long",
    "long_word": "long word",
    "kept": "kept",
}


@functools.lru_cache(maxsize=None)
def load_dictionary(path: str, version: Version) -> Dictionary:
    """Loaded once per process and per version of the file (digests.py)."""
    return Dictionary.load(path)


def count_unknown(lines: List[str], dictionary_path: str) -> Counter:
    """Tokens, and tokens the dictionary maps to <unk>, split as fairseq's binarizer splits them."""
    dictionary = load_dictionary(dictionary_path, file_version(Path(dictionary_path)))
    counts = Counter()
    for line in lines:
        for token in line.split():
            counts["tokens"] += 1
            counts["unknown"] += dictionary.index(token) == dictionary.unk_index
    return counts


def token_counts(text: Path, dictionary: Path, workers: int) -> Counter:
    count = functools.partial(count_unknown, dictionary_path=str(dictionary))
    return sum(map_line_chunks(text, count, workers), Counter())


def split_summary(
    origin: str,
    cleaning: Counter,
    text_prefix: Path,
    data_bin: Path,
    languages: Tuple[str, str],
    workers: int,
) -> dict:
    summary = {
        "origin": origin,
        "cleaning": {step: cleaning[step] for step in STEPS},
        "words": {},
        "tokens": {},
        "unk_percent": {},
    }
    for language in languages:
        text = Path(f"{text_prefix}.{language}")
        counts = token_counts(text, data_bin / f"dict.{language}.txt", workers)
        summary["words"][language] = cleaning[f"words.{language}"]
        summary["tokens"][language] = counts["tokens"]
        summary["unk_percent"][language] = round(
            100 * counts["unknown"] / max(counts["tokens"], 1), 3
        )
    return summary


def dictionary_sizes(data_bin: Path, languages: Tuple[str, str]) -> Dict[str, int]:
    """Entries of each dictionary, fairseq's 4 special symbols included."""
    return {
        language: len(Dictionary.load(str(data_bin / f"dict.{language}.txt")))
        for language in languages
    }


def write_summary(summary: dict, json_path: Path, text_path: Path) -> None:
    """The summary, machine-readable and as printed."""
    json_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    text_path.write_text(format_summary(summary), encoding="utf-8")


def format_cleaning(split: str, cleaning: Dict[str, int]) -> str:
    return f"{split}: " + ", ".join(f"{STEP_LABELS[step]} {cleaning[step]:,}" for step in STEPS)


def describe_vocabulary(vocabulary: dict) -> str:
    """The summary's vocabulary in words: in BPE mode, the merges learned, and the merges asked for
    where subword-nmt stopped short of them."""
    if vocabulary["mode"] == "shortlist":
        return f"shortlist of the {vocabulary['size']} most frequent words per language"
    learned = vocabulary["merges_learned"]
    if learned < vocabulary["size"]:
        return (
            f"joint BPE, {learned} merges (of the {vocabulary['size']} asked: no pair of symbols "
            "was left that occurs twice)"
        )
    return f"joint BPE, {learned} merges"


def format_summary(summary: dict) -> str:
    source, target = summary["languages"]
    sizes = summary["dictionary_size"]
    lines = [
        f"{summary['corpus']}, {source}->{target}: {describe_vocabulary(summary['vocabulary'])}",
        f"training pairs of at most {summary['max_len']} words, length ratio at most "
        f"{summary['max_ratio']}",
        f"dictionaries (with fairseq's 4 specials): {source} {sizes[source]:,}, {target} "
        f"{sizes[target]:,}",
        "",
        f"{'split':<7}{'pairs':>12}{'words ' + source:>14}{'words ' + target:>14}"
        f"{'tokens ' + source:>14}{'tokens ' + target:>14}"
        f"{'<unk> ' + source:>10}{'<unk> ' + target:>10}  origin",
    ]
    for name, split in summary["splits"].items():
        lines.append(
            f"{name:<7}{split['cleaning']['kept']:>12,}"
            f"{split['words'][source]:>14,}{split['words'][target]:>14,}"
            f"{split['tokens'][source]:>14,}{split['tokens'][target]:>14,}"
            f"{split['unk_percent'][source]:>9.2f}%{split['unk_percent'][target]:>9.2f}%  "
            f"{split['origin']}"
        )
    lines += ["", "pairs dropped by each cleaning step:"]
    lines += [format_cleaning(name, split["cleaning"]) for name, split in summary["splits"].items()]
    return "\n".join(lines) + "\n"
