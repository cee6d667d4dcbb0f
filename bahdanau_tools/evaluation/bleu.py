"""BLEU as the paper's Table 1 reports it, on All sentences and on the No UNK subset, the latter
from translations made with <unk> disallowed (the table's footnote), with sacrebleu, two ways, each
with the signature that says how:

- detokenized sacreBLEU (tokenize="13a"): detokenized, cased hypotheses against untokenized
  references, tokenized by sacrebleu itself; the number to compare with today's papers;
- tokenized BLEU (tokenize="none", smooth_method="none"): Moses-tokenized, cased hypotheses
  against the Moses-tokenized references, taken as they are and unsmoothed, which is what
  multi-bleu.perl computed and what the paper's Table 1 (2014) reports. The two are not
  comparable with each other."""

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


DETOKENIZED = "13a"  # sacrebleu's default tokenizer
TOKENIZED = "none"  # the text is already tokenized (Moses), as multi-bleu.perl expects it


def corpus_bleu(
    hypotheses: Sequence[str], references: Sequence[str], tokenize: str = DETOKENIZED
) -> Score:
    # otherwise sacrebleu's defaults: mixed case, and for sacreBLEU exponential smoothing.
    # Tokenized BLEU is multi-bleu.perl's, which does not smooth: an n-gram order without a match
    # makes it 0, where sacrebleu's smoothing would give it a precision of its own. It is given
    # tokenized text on purpose: force=True keeps sacrebleu from warning that it looks tokenized
    # ("It looks like you forgot to detokenize"), and changes nothing else.
    tokenized = tokenize == TOKENIZED
    metric = BLEU(tokenize=tokenize, smooth_method="none" if tokenized else "exp", force=tokenized)
    if not hypotheses:
        return Score(None, 0, "no sentence", "")
    score = metric.corpus_score(list(hypotheses), [list(references)])
    return Score(score.score, len(hypotheses), str(score), str(metric.get_signature()))


def table1_scores(
    hypotheses: Sequence[str],
    hypotheses_without_unk: Sequence[str],
    references: Sequence[str],
    known: Sequence[int],
    tokenize: str = DETOKENIZED,
) -> dict:
    """BLEU on all sentences, and on the sentences without unknown words (known: their indices)
    as the paper's Table 1 scores them: from translations decoded with <unk> disallowed,
    hypotheses_without_unk, of which only those at known are read (none where known is empty)."""
    no_unk = corpus_bleu(subset(hypotheses_without_unk, known), subset(references, known), tokenize)
    return {
        "all": asdict(corpus_bleu(hypotheses, references, tokenize)),
        "no_unk": {**asdict(no_unk), "sentence_ids": list(known)},
    }
