"""Figure 2 of the paper: BLEU by the length of the source sentence, one line per model.

Sentences are grouped by source length in words into buckets of equal width (0-10, 11-20, ...),
widened where they would hold too few sentences for a BLEU score that means something, the last
one open-ended ("51+"). Each bucket's BLEU is sacrebleu's corpus BLEU over its sentences.
"""

import csv
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..figures import pyplot, save_png
from .bleu import corpus_bleu, subset

CSV_COLUMNS = ["model", "bucket", "min_words", "max_words", "sentences", "bleu"]


@dataclass(frozen=True)
class Bucket:
    low: int
    high: Optional[int]  # None: every longer sentence

    @property
    def label(self) -> str:
        return f"{self.low}+" if self.high is None else f"{self.low}-{self.high}"

    def holds(self, length: int) -> bool:
        return self.low <= length and (self.high is None or length <= self.high)


def length_buckets(lengths: Sequence[int], width: int, min_sentences: int) -> List[Bucket]:
    """Buckets of `width` words (0-10, 11-20, ...) up to the longest sentence, each holding at
    least min_sentences sentences: a bucket with fewer takes in the next `width` words, and the
    last one is open-ended ("21+") once fewer than min_sentences would be left beyond it."""
    longest = max(lengths)
    buckets, low = [], 0
    for high in range(width, longest + width, width):
        if high >= longest:
            return buckets + [Bucket(low, high)]
        if sum(length > high for length in lengths) < min_sentences:
            return buckets + [Bucket(low, None)]
        if sum(low <= length <= high for length in lengths) >= min_sentences:
            buckets.append(Bucket(low, high))
            low = high + 1
    return buckets


@dataclass(frozen=True)
class BucketScore:
    model: str
    bucket: str
    min_words: int
    max_words: Optional[int]
    sentences: int
    bleu: Optional[float]


def bleu_by_length(
    hypotheses: Dict[str, Sequence[str]],
    references: Sequence[str],
    lengths: Sequence[int],
    buckets: Sequence[Bucket],
) -> List[BucketScore]:
    """hypotheses: model name -> its detokenized translations, in the order of the references."""
    rows = []
    for bucket in buckets:
        members = [index for index, length in enumerate(lengths) if bucket.holds(length)]
        for model, lines in hypotheses.items():
            score = corpus_bleu(subset(lines, members), subset(references, members))
            rows.append(
                BucketScore(model, bucket.label, bucket.low, bucket.high, len(members), score.bleu)
            )
    return rows


def write_csv(rows: Sequence[BucketScore], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(asdict(row) for row in rows)


def read_csv(path: Path) -> List[BucketScore]:
    def optional(text: str, kind):
        return kind(text) if text else None

    with path.open(encoding="utf-8", newline="") as lines:
        return [
            BucketScore(
                row["model"],
                row["bucket"],
                int(row["min_words"]),
                optional(row["max_words"], int),
                int(row["sentences"]),
                optional(row["bleu"], float),
            )
            for row in csv.DictReader(lines)
        ]


def draw_bleu_by_length(rows: Sequence[BucketScore], title: str = ""):
    """Length buckets along x (with their number of sentences), BLEU up y, one line per model."""
    plt = pyplot()
    labels = list(dict.fromkeys(f"{row.bucket}\n({row.sentences})" for row in rows))
    figure, axes = plt.subplots(figsize=(1.5 + 1.1 * len(labels), 4.5))
    for model in dict.fromkeys(row.model for row in rows):
        scores = [
            float("nan") if row.bleu is None else row.bleu for row in rows if row.model == model
        ]
        axes.plot(range(len(labels)), scores, marker="o", label=model)
    axes.set_xticks(range(len(labels)), labels=labels)
    axes.set_xlabel("source sentence length in words (sentences in the bucket)")
    axes.set_ylabel("BLEU")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend()
    axes.set_title(title)
    figure.tight_layout()
    return figure


def plot_bleu_by_length(rows: Sequence[BucketScore], path: Path, title: str = "") -> None:
    save_png(draw_bleu_by_length(rows, title), path)
