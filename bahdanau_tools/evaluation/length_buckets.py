"""Figure 2 of the paper: BLEU by the length of the source sentence, one line per model.

Sentences are grouped by source length in words into buckets of equal width (0-10, 11-20, ...),
widened where they would hold too few sentences for a BLEU score that means something; the last
one reaches the longest sentence (41-50), or is open-ended ("51+") where the sentences past it
would be too few for a bucket of their own. Each bucket's score is sacrebleu's corpus BLEU over its
sentences, detokenized (13a, bleu.py), with its signature: the paper's Figure 2 is tokenized BLEU.
"""

import csv
import itertools
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..figures import pyplot, save_png
from .bleu import corpus_bleu, subset

CSV_COLUMNS = [
    "model",
    "bucket",
    "min_words",
    "max_words",
    "sentences",
    "detokenized_sacrebleu",
    "signature",
]


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
    # up to the first bucket that reaches the longest sentence, which holds it even where every
    # sentence is empty (longest 0)
    for high in itertools.count(width, width):
        if high >= longest:
            return buckets + [Bucket(low, high)]
        if sum(length > high for length in lengths) < min_sentences:
            return buckets + [Bucket(low, None)]
        if sum(low <= length <= high for length in lengths) >= min_sentences:
            buckets.append(Bucket(low, high))
            low = high + 1


@dataclass(frozen=True)
class BucketScore:
    model: str
    bucket: str
    min_words: int
    max_words: Optional[int]
    sentences: int
    detokenized_sacrebleu: Optional[float]
    signature: str  # sacrebleu's, of the score


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
                BucketScore(
                    model,
                    bucket.label,
                    bucket.low,
                    bucket.high,
                    len(members),
                    score.bleu,
                    score.signature,
                )
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
                optional(row["detokenized_sacrebleu"], float),
                row["signature"],
            )
            for row in csv.DictReader(lines)
        ]


def draw_bleu_by_length(rows: Sequence[BucketScore], title: str = ""):
    """Length buckets along x (with their number of sentences), BLEU up y, one line per model;
    under the title, the signature of the scores."""
    plt = pyplot()
    labels = list(dict.fromkeys(f"{row.bucket}\n({row.sentences})" for row in rows))
    figure, axes = plt.subplots(figsize=(1.5 + 1.1 * len(labels), 4.5))
    for model in dict.fromkeys(row.model for row in rows):
        scores = [
            float("nan") if row.detokenized_sacrebleu is None else row.detokenized_sacrebleu
            for row in rows
            if row.model == model
        ]
        axes.plot(range(len(labels)), scores, marker="o", label=model)
    axes.set_xticks(range(len(labels)), labels=labels)
    axes.set_xlabel("source sentence length in words (sentences in the bucket)")
    axes.set_ylabel("detokenized sacreBLEU")
    axes.set_ylim(bottom=0)
    axes.grid(alpha=0.3)
    axes.legend()
    lines = [title, *dict.fromkeys(row.signature for row in rows)]
    axes.set_title("\n".join(line for line in lines if line), fontsize="small")
    figure.tight_layout()
    return figure


def plot_bleu_by_length(rows: Sequence[BucketScore], path: Path, title: str = "") -> None:
    save_png(draw_bleu_by_length(rows, title), path)
