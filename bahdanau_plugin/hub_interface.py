"""The hub interface of RNNsearch and RNNencdec: what their ``from_pretrained`` returns.

fairseq's GeneratorHubInterface (``translate``, ``encode``, ``generate``, ``decode``), which loads
fairseq's ``replace_unk=`` dictionary and never uses it. Made with ``replace_unk=`` ("" to copy
source words, or a dictionary file), this one translates through
``--task translation_with_source_words``, whose generator replaces each ``<unk>`` by the source
word it attends to most: ``translate()`` returns the replaced text and ``generate()`` hypotheses
whose tokens hold the replacing words.

Raw text is read as bahdanau-prepare-data wrote the training text, whatever the locale: in one
Unicode form, NFC (``tokenize``, the first step of ``encode`` and ``translate``: unicode_form.py),
and segmented with ``--bpe subword_nmt``'s codes read as UTF-8 (subword_nmt_codes.py).
"""

from fairseq.hub_utils import GeneratorHubInterface

from . import subword_nmt_codes
from .tasks import TranslationWithSourceWordsTask
from .unicode_form import normalized


class RecurrentTranslationHubInterface(GeneratorHubInterface):
    def __init__(self, cfg, task, models):
        replace_unk = cfg.generation.replace_unk
        if replace_unk is not None:
            task = TranslationWithSourceWordsTask.replacing_for(task, replace_unk)
            task.check_attention(models)
            cfg.generation.replace_unk = None  # the task's option now, not fairseq's
        bpe = cfg.bpe
        cfg.bpe = None  # fairseq's own would read the codes in the locale's encoding
        super().__init__(cfg, task, models)
        cfg.bpe = bpe
        self.bpe = subword_nmt_codes.build_bpe(bpe)

    def tokenize(self, sentence: str) -> str:
        return super().tokenize(normalized(sentence))

    def sample(self, sentences, beam: int = 1, verbose: bool = False, **kwargs):
        if getattr(self.task, "replaces_unknown_words", False):
            batch = [sentences] if isinstance(sentences, str) else list(sentences)
            self.task.keep_source_words([self.apply_bpe(self.tokenize(text)) for text in batch])
            sentences = sentences if isinstance(sentences, str) else batch  # a generator reads once
        return super().sample(sentences, beam, verbose, **kwargs)
