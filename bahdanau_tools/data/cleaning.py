"""Tokenize raw pairs with fairseq's own Moses tokenizer, and drop the pairs the cleaning rules
reject."""

import functools
from collections import Counter
from dataclasses import dataclass
from typing import List, NamedTuple, Optional, Sequence, Tuple

from fairseq.data.encoders.moses_tokenizer import MosesTokenizer, MosesTokenizerConfig
from sacremoses.corpus import NonbreakingPrefixes

from ..errors import DataError

# Every pair is counted as read and under exactly one of the other steps, in this order.
STEPS = ("read", "invalid_utf8", "empty", "ratio", "too_long", "kept")


@dataclass(frozen=True)
class CleaningRules:
    """Which pairs to drop; the defaults drop none (but a line that is not UTF-8 is never kept)."""

    drop_empty: bool = False
    max_ratio: Optional[float] = None  # longer side / shorter side, in words
    max_len: Optional[int] = None  # words, on each side


class CleanPair(NamedTuple):
    source_tokens: str
    target_tokens: str
    source_text: str
    target_text: str


def moses_languages() -> List[str]:
    """The language codes the Moses tokenizer has rules for (its nonbreaking prefixes)."""
    return sorted(set(NonbreakingPrefixes().available_langs.values()))


def check_moses_language(language: str, option: str) -> None:
    """sacremoses tokenizes a language it does not know with the English rules, without a word."""
    if language not in moses_languages():
        raise DataError(
            f"{option} {language}: the Moses tokenizer has no rules for {language!r} (it would "
            "use the English ones without a word); give one of its language codes: "
            f"{', '.join(moses_languages())}"
        )


@functools.lru_cache(maxsize=None)
def moses_tokenizer(language: str) -> MosesTokenizer:
    """fairseq's `--tokenizer moses` with its defaults, so training text is tokenized exactly like
    the input of fairseq-interactive, and decoded output is detokenized by the same class."""
    return MosesTokenizer(MosesTokenizerConfig(source_lang=language, target_lang=language))


def tokenize(text: str, language: str) -> List[str]:
    # split(), as fairseq's binarizer does, so no Unicode space survives inside a token
    return moses_tokenizer(language).encode(text).split()


def clean_chunk(
    raw_pairs: Sequence[Tuple[bytes, bytes]], languages: Tuple[str, str], rules: CleaningRules
) -> Tuple[List[CleanPair], Counter]:
    """Tokenize and clean a chunk of pairs; count each pair under the step that dropped or kept it,
    and count the words of the kept pairs under `words.<language>`."""
    kept, counts = [], Counter(read=len(raw_pairs))
    for raw_pair in raw_pairs:
        step, pair = clean_pair(raw_pair, languages, rules)
        counts[step] += 1
        if pair is not None:
            kept.append(pair)
            for language, tokens in zip(languages, pair[:2]):
                counts[f"words.{language}"] += len(tokens.split())
    return kept, counts


def clean_pair(
    raw_pair: Tuple[bytes, bytes], languages: Tuple[str, str], rules: CleaningRules
) -> Tuple[str, Optional[CleanPair]]:
    """Return ("kept", the tokenized pair) or (the step that drops the pair, None)."""
    try:
        texts = [" ".join(raw.decode("utf-8").split()) for raw in raw_pair]
    except UnicodeDecodeError:
        return "invalid_utf8", None
    tokens = [tokenize(text, language) for text, language in zip(texts, languages)]
    shorter, longer = sorted(map(len, tokens))
    if rules.drop_empty and shorter == 0:
        return "empty", None
    if rules.max_ratio is not None and longer > rules.max_ratio * shorter:
        return "ratio", None
    if rules.max_len is not None and longer > rules.max_len:
        return "too_long", None
    return "kept", CleanPair(" ".join(tokens[0]), " ".join(tokens[1]), *texts)


def check_kept(split_name: str, counts: Counter, rules: CleaningRules) -> None:
    """A split that keeps no pair cannot be trained or validated on, or scored: say which steps
    dropped its pairs, and what would keep them."""
    if counts["kept"]:
        return
    dropped = {
        "invalid_utf8": ("not in UTF-8", "convert the files to UTF-8"),
        "empty": ("with an empty side", "give each pair words on both sides"),
        "ratio": (
            f"with one side over --max-ratio {rules.max_ratio} times as long as the other",
            "raise --max-ratio",
        ),
        "too_long": (f"with a side over --max-len {rules.max_len} words", "raise --max-len"),
    }
    steps = [step for step in dropped if counts[step]]
    raise DataError(
        f"the {split_name} split keeps no sentence pair after cleaning: of its "
        f"{counts['read']:,} pairs, "
        + ", ".join(f"{counts[step]:,} {dropped[step][0]}" for step in steps)
        + "; "
        + " or ".join(dropped[step][1] for step in steps)
    )
