"""The hub interface of RNNsearch and RNNencdec: what their ``from_pretrained`` returns.

fairseq's GeneratorHubInterface (``translate``, ``encode``, ``generate``, ``decode``), which loads
fairseq's ``replace_unk=`` dictionary and never uses it. Made with ``replace_unk=`` ("" to copy
source words, or a dictionary file), this one translates through
``--task translation_with_source_words``, whose generator replaces each ``<unk>`` by the source
word it attends to most: ``translate()`` returns the replaced text and ``generate()`` hypotheses
whose tokens hold the replacing words.
"""

from fairseq.hub_utils import GeneratorHubInterface

from .tasks import TranslationWithSourceWordsTask


class RecurrentTranslationHubInterface(GeneratorHubInterface):
    def __init__(self, cfg, task, models):
        replace_unk = cfg.generation.replace_unk
        if replace_unk is not None:
            task = TranslationWithSourceWordsTask.replacing_for(task, replace_unk)
            task.check_attention(models)
            cfg.generation.replace_unk = None  # the task's option now, not fairseq's
        super().__init__(cfg, task, models)

    def sample(self, sentences, beam: int = 1, verbose: bool = False, **kwargs):
        if getattr(self.task, "replaces_unknown_words", False):
            batch = [sentences] if isinstance(sentences, str) else sentences
            self.task.keep_source_words([self.apply_bpe(self.tokenize(text)) for text in batch])
        return super().sample(sentences, beam, verbose, **kwargs)
