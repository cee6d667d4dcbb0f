"""Decode raw pairs into one Unicode form, tokenize them with fairseq's own Moses tokenizer, and
drop the pairs the cleaning rules reject."""

import functools
import math
from collections import Counter
from dataclasses import dataclass
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from fairseq.data.encoders.moses_tokenizer import MosesTokenizer, MosesTokenizerConfig
from sacremoses.corpus import NonbreakingPrefixes

from bahdanau_plugin.unicode_form import holds_a_word, normalized

from ..errors import DataError

# Every pair is counted as read and under exactly one of the other steps, in this order.
STEPS = ("read", "empty", "ratio", "too_long", "long_word", "kept")


@dataclass(frozen=True)
class CleaningRules:
    """Which pairs to drop; the defaults drop none."""

    drop_empty: bool = False
    max_ratio: Optional[float] = None  # longer side / shorter side, in words
    max_len: Optional[int] = None  # words, on each side
    max_word_len: Optional[int] = None  # characters of a word (a Moses token), on each side


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
    raw_pairs: Sequence[Tuple[bytes, bytes]],
    languages: Tuple[str, str],
    rules: CleaningRules,
    encoding: str = "utf-8",
) -> Tuple[List[CleanPair], Counter]:
    """Tokenize and clean a chunk of pairs; count each pair under the step that dropped or kept it,
    and count the words of the kept pairs under `words.<language>`."""
    kept, counts = [], Counter(read=len(raw_pairs))
    for raw_pair in raw_pairs:
        step, pair = clean_pair(raw_pair, languages, rules, encoding)
        counts[step] += 1
        if pair is not None:
            kept.append(pair)
            for language, tokens in zip(languages, pair[:2]):
                counts[f"words.{language}"] += len(tokens.split())
    return kept, counts


def clean_pair(
    raw_pair: Tuple[bytes, bytes],
    languages: Tuple[str, str],
    rules: CleaningRules,
    encoding: str = "utf-8",
) -> Tuple[str, Optional[CleanPair]]:
    """Return ("kept", the tokenized pair) or (the step that drops the pair, None). The lines
    decode: the check stage read every line of the files in this encoding."""
    texts = [" ".join(normalized(raw.decode(encoding)).split()) for raw in raw_pair]
    tokens = [tokenize(text, language) for text, language in zip(texts, languages)]
    shorter, longer = sorted(map(len, tokens))
    # a side of format characters alone (U+200B, U+FEFF) shows nothing, and is translated as an
    # empty line (unicode_form): kept, it taught the model the other side for nothing
    if rules.drop_empty and not all(map(holds_a_word, tokens)):
        return "empty", None
    if rules.max_ratio is not None and longer > rules.max_ratio * shorter:
        return "ratio", None
    if rules.max_len is not None and longer > rules.max_len:
        return "too_long", None
    if rules.max_word_len is not None and longest_word(tokens) > rules.max_word_len:
        return "long_word", None
    return "kept", CleanPair(" ".join(tokens[0]), " ".join(tokens[1]), *texts)


def longest_word(sides: Sequence[List[str]]) -> int:
    return max((len(word) for words in sides for word in words), default=0)


def dropped_by(rules: CleaningRules) -> Dict[str, Tuple[str, str]]:
    """step -> (the pairs it drops, as the end of "N pairs ..."; what would keep them)."""
    return {
        "empty": ("with an empty side", "give each pair words on both sides"),
        "ratio": (
            f"with one side over --max-ratio {rules.max_ratio} times as long as the other",
            "raise --max-ratio",
        ),
        "too_long": (f"with a side over --max-len {rules.max_len} words", "raise --max-len"),
        "long_word": (
            f"with a word over --max-word-len {rules.max_word_len} characters",
            "raise --max-word-len",
        ),
    }


def drops(counts: Counter, rules: CleaningRules) -> str:
    """How many pairs each step that dropped some dropped: "2 with an empty side, 1 with ..."."""
    return ", ".join(
        f"{counts[step]:,} {reason}"
        for step, (reason, _) in dropped_by(rules).items()
        if counts[step]
    )


def check_kept(split_name: str, counts: Counter, rules: CleaningRules) -> None:
    """A split that keeps no pair cannot be trained or validated on, or scored: say which steps
    dropped its pairs, and what would keep them."""
    if counts["kept"]:
        return
    fixes = [fix for step, (_, fix) in dropped_by(rules).items() if counts[step]]
    raise DataError(
        f"the {split_name} split keeps no sentence pair after cleaning: of its "
        f"{counts['read']:,} pairs, {drops(counts, rules)}; {' or '.join(fixes)}"
    )


def check_dropped_share(
    split_name: str, counts: Counter, rules: CleaningRules, max_dropped: float
) -> None:
    """More than max_dropped of a split's pairs dropped is a corpus that is not what its user
    thinks (misaligned files, text that is not sentences, a --max-len meant for another corpus):
    say how many each step dropped, and the option that allows it."""
    dropped = counts["read"] - counts["kept"]
    share = dropped / max(counts["read"], 1)
    if share <= max_dropped:
        return
    allowing = math.ceil(share * 100) / 100
    raise DataError(
        f"cleaning drops {dropped:,} of the {split_name} split's {counts['read']:,} pairs "
        f"({share:.0%}), more than --max-dropped {max_dropped} allows: {drops(counts, rules)}; "
        f"check its files and options, or allow it with --max-dropped {allowing}"
    )
