"""The model behind bahdanau-serve: raw sentences in; translations, scores and soft alignments out.

It touches the model only through fairseq's hub interface (from_pretrained, encode, generate,
decode) with fairseq-interactive's tokenizer and BPE options, so a translation is the one that
fairseq-interactive prints for the same checkpoint, beam and sentence.
"""

import math
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Union

import torch
from fairseq.data import data_utils

from bahdanau_plugin.errors import PluginError

from ..alignment import END_OF_SENTENCE, soft_alignment, symbols
from ..hub import load_translator
from ..words import merge_subwords, readable_words


class SentenceTooLong(PluginError):
    """A sentence over the server's --max-source-tokens."""


@dataclass(frozen=True)
class Sentence:
    """One sentence to translate, the beam to search it with and how many hypotheses to keep."""

    text: str
    beam: int
    nbest: int = 1


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


class Translator:
    """fairseq's hub interface for one checkpoint; translate() is to be called from one thread."""

    def __init__(self, hub, max_source_tokens: int):
        self.hub = hub
        self.max_source_tokens = max_source_tokens
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
        **text_option_values,
    ) -> "Translator":
        """The checkpoint on the GPU when there is one (unless cpu), in evaluation mode."""
        hub = load_translator(
            checkpoint,
            data,
            **text_options(data, **text_option_values),
            batch_size=max_batch_sentences,
            max_tokens=None,
            # fairseq's translation task refuses longer sources (1,024 tokens by default)
            max_source_positions=max_source_tokens + 1,  # + the end of sentence
        )
        hub.eval()
        if torch.cuda.is_available() and not cpu:
            hub.cuda()
        return cls(hub, max_source_tokens)

    @property
    def device(self) -> str:
        return str(self.hub.device)

    def _returns_attention(self) -> bool:
        """Whether generate() gives alpha (RNNsearch does, RNNencdec does not); also a warm-up."""
        end_of_sentence_only = torch.LongTensor([self.hub.src_dict.eos()])
        hypothesis = self.hub.generate([end_of_sentence_only], beam=1, max_len_b=1)[0][0]
        return soft_alignment(hypothesis, 1) is not None

    def translate(self, sentences: Sequence[Sentence]) -> List[Union[Translation, PluginError]]:
        """Sentences of one beam size, translated as one batch: for each its Translation, or the
        error that refused it."""
        results: List[Union[Translation, PluginError, None]] = [None] * len(sentences)
        accepted = {}  # index -> (source tokens, their ids)
        for index, sentence in enumerate(sentences):
            # hub.encode's steps, keeping the tokens: an unknown word is shown as itself, not <unk>
            pieces = self.hub.apply_bpe(self.hub.tokenize(sentence.text))
            source_ids = self.hub.binarize(pieces)
            if len(source_ids) - 1 > self.max_source_tokens:
                results[index] = self._too_long(len(source_ids) - 1)
            else:
                accepted[index] = (pieces.split() + [END_OF_SENTENCE], source_ids)
        if accepted:
            beam = sentences[next(iter(accepted))].beam
            hypotheses = self.hub.generate(
                [source_ids for _, source_ids in accepted.values()], beam=beam
            )
            for (index, (source, _)), found in zip(accepted.items(), hypotheses):
                results[index] = self._translation(source, found[: sentences[index].nbest])
        return results

    def _too_long(self, tokens: int) -> SentenceTooLong:
        return SentenceTooLong(
            f"the text has {tokens:,} tokens after tokenization, over this server's limit of "
            f"{self.max_source_tokens:,} (bahdanau-serve --max-source-tokens): send it in shorter "
            "sentences"
        )

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
