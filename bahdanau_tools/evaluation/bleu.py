"""BLEU as the paper's Table 1 reports it, on All sentences and on the No UNK subset, with sacrebleu:
detokenized, cased hypotheses against untokenized references, and the signature that says how."""

from dataclasses import asdict, dataclass
from typing import List, Optional, Sequence

from sacrebleu.metrics import BLEU


@dataclass(frozen=True)
class Score:
    bleu: Optional[float]  # None for a subset without sentences
    sentences: int
    detail: str  # sacrebleu's line: n-gram precisions, brevity penalty, lengths
    signature: str  # sacrebleu's: references, case, tokenizer, smoothing, version


def subset(lines: Sequence[str], indices: Sequence[int]) -> List[str]:
    return [lines[index] for index in indices]


def corpus_bleu(hypotheses: Sequence[str], references: Sequence[str]) -> Score:
    metric = BLEU()  # sacrebleu's defaults: mixed case, its 13a tokenizer, exponential smoothing
    if not hypotheses:
        return Score(None, 0, "no sentence", "")
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return Score(score.score, len(hypotheses), str(score), str(metric.get_signature()))


def table1_scores(hypotheses: Sequence[str], references: Sequence[str], known: Sequence[int]) -> dict:
    """BLEU on all sentences and on the sentences without unknown words (known: their indices)."""
    return {
        "all": asdict(corpus_bleu(hypotheses, references)),
        "no_unk": {
            **asdict(corpus_bleu(subset(hypotheses, known), subset(references, known))),
            "sentence_ids": list(known),
        },
    }
