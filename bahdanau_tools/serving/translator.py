"""The model behind bahdanau-serve: raw sentences in; translations, scores and soft alignments out.

It touches the model only through fairseq's hub interface (from_pretrained, encode's steps,
generate, decode) with fairseq-interactive's tokenizer and BPE options, so a translation is the one
that fairseq-interactive prints for the same checkpoint, beam and sentence. The text steps (words,
pieces) run in the web layer's threads, so that a request is measured against the server's limits
before the model's thread sees it; generate runs in the model's thread alone.
"""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import torch
from fairseq.data import data_utils

from bahdanau_plugin.errors import ConfigurationError

from ..alignment import END_OF_SENTENCE, soft_alignment, symbols
from ..bpe_units import codes_mismatch
from ..hub import load_translator
from ..search_options import FAIRSEQS
from ..words import merge_subwords, readable_words


@dataclass(frozen=True)
class Sentence:
    """One sentence to translate, the beam to search it with and how many hypotheses to keep."""

    tokens: Tuple[str, ...]  # after tokenization and BPE, without the end of sentence
    beam: int
    nbest: int = 1

    @property
    def beam_tokens(self) -> int:
        """What translating it costs, as the server's limits count it: tokens x beam."""
        return len(self.tokens) * self.beam


@dataclass
class Hypothesis:
    translation: str  # detokenized, as fairseq-interactive's D- line
    # fairseq's length-normalized log-probability in base 2, as fairseq-interactive prints it
    score: float
    target_words: List[str]  # BPE pieces merged, Moses escapes undone, "<end>" last
    # alpha_ij by words: one row per target word, one column per source word, each row summing to 1;
    # None for a model without attention (RNNencdec)
    alignment: Optional[List[List[float]]]


@dataclass
class Translation:
    source_words: List[str]
    hypotheses: List[Hypothesis]  # best first


def text_options(
    data: Path, tokenizer=None, bpe=None, bpe_codes=None, source_lang=None, target_lang=None
) -> dict:
    """from_pretrained's overrides for fairseq-interactive's --tokenizer, --bpe, --bpe-codes,
    --source-lang and --target-lang; the languages default to those of the data directory's
    files."""
    if source_lang is None or target_lang is None:
        source_lang, target_lang = data_utils.infer_language_pair(str(data))
    options = {"source_lang": source_lang, "target_lang": target_lang}
    if tokenizer is not None:
        options["tokenizer"] = tokenizer
    if bpe is not None:
        options.update(bpe=bpe, bpe_codes=str(bpe_codes))
    return options


def check_segmentation(hub, data: Path, bpe_codes: Optional[Path]) -> None:
    """Text segmented as the data-bin's words are: otherwise most words would be read as <unk>,
    and the server would translate a sentence of <unk> without a word of warning."""
    dictionary = data / f"dict.{hub.cfg.task.source_lang}.txt"
    mismatch = codes_mismatch(
        hub.src_dict, dictionary, bpe_codes, give="--bpe subword_nmt --bpe-codes"
    )
    if mismatch is not None:
        raise ConfigurationError(mismatch)


class Translator:
    """fairseq's hub interface for one checkpoint: tokenize() and apply_bpe() from any thread,
    translate() from one thread only (batching.py says which)."""

    def __init__(self, hub, search: dict):
        self.hub = hub
        self.search = search  # max_len_b and lenpen, for every sentence (search_options.py)
        self.architecture = hub.cfg.model._name
        self.has_alignment = self._returns_attention()

    @classmethod
    def load(
        cls,
        checkpoint: Path,
        data: Path,
        max_source_tokens: int = 1024,
        max_batch_sentences: int = 64,
        cpu: bool = False,
        search: Optional[dict] = None,
        **text_option_values,
    ) -> "Translator":
        """The checkpoint on the GPU when there is one (unless cpu), in evaluation mode. search:
        max_len_b and lenpen for every sentence (search_options.py; default: fairseq's)."""
        hub = load_translator(
            checkpoint,
            data,
            **text_options(data, **text_option_values),
            batch_size=max_batch_sentences,
            max_tokens=None,
            # fairseq's translation task refuses longer sources (1,024 tokens by default)
            max_source_positions=max_source_tokens + 1,  # + the end of sentence
        )
        check_segmentation(hub, data, text_option_values.get("bpe_codes"))
        hub.eval()
        if torch.cuda.is_available() and not cpu:
            hub.cuda()
        return cls(hub, search or dict(FAIRSEQS))

    @property
    def device(self) -> str:
        return str(self.hub.device)

    def _returns_attention(self) -> bool:
        """Whether generate() gives alpha (RNNsearch does, RNNencdec does not); also a warm-up,
        in which the model's search step is compiled before the server answers (on a CPU as
        bahdanau-serve sets BAHDANAU_CPU_SEARCH_COMPILE_AFTER: 0 unless set). torch compiles a
        size of 1 apart: so for one sentence and for two (a batch of requests, or a request of
        several), each of two source tokens at beam 2 (one sentence at beam 1, one row, compiles
        at its first request)."""
        source = torch.LongTensor([self.hub.src_dict.unk(), self.hub.src_dict.eos()])
        self.hub.generate([source, source], beam=2, max_len_b=1)
        hypothesis = self.hub.generate([source], beam=2, max_len_b=1)[0][0]
        return soft_alignment(hypothesis, len(source)) is not None

    # hub.encode's steps, keeping the tokens: an unknown word is shown as itself, not <unk>
    def tokenize(self, text: str) -> str:
        """The text as fairseq-interactive's --tokenizer writes it."""
        return self.hub.tokenize(text)

    def apply_bpe(self, tokenized: str) -> List[str]:
        """The tokenized text as the model reads it (fairseq-interactive's --bpe), as tokens."""
        return self.hub.apply_bpe(tokenized).split()

    def translate(self, sentences: Sequence[Sentence]) -> List[Translation]:
        """Sentences of one beam size, translated as one batch."""
        hypotheses = self.hub.generate(
            [self.hub.binarize(" ".join(sentence.tokens)) for sentence in sentences],
            beam=sentences[0].beam,
            **self.search,
        )
        return [
            self._translation(list(sentence.tokens) + [END_OF_SENTENCE], found[: sentence.nbest])
            for sentence, found in zip(sentences, hypotheses)
        ]

    def _translation(self, source: List[str], hypotheses) -> Translation:
        return Translation(
            readable_words(source),
            [self._hypothesis(source, hypothesis) for hypothesis in hypotheses],
        )

    def _hypothesis(self, source: List[str], hypothesis) -> Hypothesis:
        target = symbols(self.hub.tgt_dict, hypothesis["tokens"])
        alpha = soft_alignment(hypothesis, len(source), self.hub.task.cfg.left_pad_source)
        words = readable_words(target)
        alignment = None if alpha is None else merge_subwords(source, target, alpha)[2].tolist()
        return Hypothesis(
            translation=self.hub.decode(hypothesis["tokens"]),
            score=hypothesis["score"].item() / math.log(2),
            target_words=words,
            alignment=alignment,
        )
